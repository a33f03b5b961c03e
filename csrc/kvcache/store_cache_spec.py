"""Harness spec for kvcache/store_cache: ``k_cache[indices[t]] = k[t]``, ``v_cache[indices[t]] = v[t]``.

The row size is a template argument (axis ``row``, fixed per instantiation), and so is the
number of warps per row. Some tokens get an out-of-range slot (-1 or ``slots``): the kernel
skips them. The caches are updated in place; the copy is exact.
"""

from math import gcd

from kernel_check.harness.spec import TAILS, Instantiation, KernelSpec, Role, Tensor

ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "float8_e4m3fn": 1}
ROW_TENSORS = ("k", "v", "k_cache", "v_cache")


def warp_vec_bytes(row_bytes: int, cap: int = 16) -> int:
    """``LoadStorePattern::get_vec_bytes<row_bytes, WARP_UNIFORM_16B>()`` (one warp per split)."""
    width = gcd(row_bytes, cap)
    while width > 4 and row_bytes // width < 32:
        width //= 2
    return gcd(row_bytes, 4) if width < 4 else width


def instantiation(dtype: str, row: int, num_split: int, index: str, pdl: bool) -> Instantiation:
    width = warp_vec_bytes(row * ITEMSIZE[dtype] // num_split)
    return Instantiation(
        (dtype, row, num_split, index, pdl),
        dtypes={"T": dtype, "I": index},
        pdl=pdl,
        sizes={"row": row},
        vector_bytes=dict.fromkeys(ROW_TENSORS, width),
    )


def slot_indices(shape, dtype, device, gen, sizes):
    """Distinct slots below ``s``; every fifth token -1 and every seventh ``s`` (both skipped)."""
    import torch

    count = shape[0]
    slots = torch.randperm(sizes["s"], generator=gen, device=device)[:count]
    if count > 2:
        slots[::5] = -1
        slots[3::7] = sizes["s"]
    return slots.to(dtype)


def _bits(t):
    import torch

    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def store_cache_reference(k, v, k_cache, v_cache, indices):
    slots = indices.long()
    valid = (slots >= 0) & (slots < k_cache.shape[0])
    out = {}
    for name, rows, cache in (("k_cache", k, k_cache), ("v_cache", v, v_cache)):
        updated = cache.clone()
        _bits(updated)[slots[valid]] = _bits(rows)[valid]  # bitwise: index_put has no fp8 kernel
        out[name] = updated
    return out


def bytes_moved(args):
    """The stored tokens' k and v rows read and written to the caches, and the indices read
    (skipped tokens and the rest of the cache are never touched)."""
    slots = args["indices"].long()
    stored = int(((slots >= 0) & (slots < args["k_cache"].shape[0])).sum())
    row_bytes = args["k"].shape[-1] * args["k"].element_size()
    return 4 * stored * row_bytes + args["indices"].nbytes


def bandwidth_tokens(fixed):
    """About 32M elements per k/v tensor (a 1-element row moves too little to be worth timing)."""
    if fixed["row"] < 64:
        return None
    tokens = max(16384, (1 << 25) // fixed["row"])
    return {"n": tokens, "s": tokens}


SPEC = KernelSpec(
    name="store_cache",
    source="store_cache.cuh",
    export="store_cache",
    symbol="store_cache",
    args=(
        Tensor("k", ("n", "row"), strided_rows=True),
        Tensor("v", ("n", "row"), strided_rows=True),
        Tensor("k_cache", ("s", "row"), role=Role.INPLACE, strided_rows=True),
        Tensor("v_cache", ("s", "row"), role=Role.INPLACE, strided_rows=True),
        Tensor("indices", ("n",), "I", init=slot_indices),
    ),
    reference=store_cache_reference,
    # (dtype, row, warps per row, index type, PDL): the wrapper's INSTANTIATIONS
    instantiations=(
        instantiation("bfloat16", 1024, 1, "int64", True),
        instantiation("float16", 4096, 4, "int64", True),
        instantiation("float32", 1024, 2, "int32", False),
        instantiation("float8_e4m3fn", 576, 1, "int64", False),
        instantiation("bfloat16", 127, 1, "int32", True),
        instantiation("float16", 1, 1, "int64", False),
    ),
    grid={"n": TAILS + (1000,), "s": (130, 5000)},
    constraint=lambda sizes: sizes["s"] >= sizes["n"],
    tolerance=dict.fromkeys(ITEMSIZE, (0.0, 0.0)),
    sanitize_sizes=({"n": 1, "s": 130}, {"n": 127, "s": 130}),
    memory_bound=True,
    bandwidth_sizes=bandwidth_tokens,
    bytes_moved=bytes_moved,
)
