"""sglang jit/csrc/attention/fixup_zero_kv.cuh: for each sequence with no KV (kv_lens == 0), its
tokens' rows of ``out`` become 0 and of ``lse`` -inf; ``cum_seq_lens`` holds the token
boundaries. The second spec is one huge sequence: offsets past 2^31 elements."""

import os

from kernel_check.harness.spec import TAILS, Instantiation, KernelSpec, Role, Scalar, Tensor, tree_path

TREE = tree_path("SGLANG_TREE")  # the kernel tree: set $SGLANG_TREE
JIT = TREE / "python/sglang/kernels/jit"


def kv_lengths(shape, dtype, device, gen, sizes):
    """0, 1 or 2 per sequence: about a third of them have no KV."""
    import torch

    return torch.randint(0, 3, shape, generator=gen, device=device).to(dtype)


def no_kv(shape, dtype, device, gen, sizes):
    import torch

    return torch.zeros(shape, dtype=dtype, device=device)


def boundaries(shape, dtype, device, gen, sizes):
    """Equal shares of the tokens: 0 .. t in b + 1 steps."""
    import torch

    return torch.linspace(0, sizes["t"], sizes["b"] + 1, device=device).round().to(dtype)


def fixup(out, lse, kv_lens, cum_seq_lens, max_seq_len):
    for seq in (kv_lens == 0).nonzero().flatten().tolist():
        start, end = int(cum_seq_lens[seq]), int(cum_seq_lens[seq + 1])
        out[start:end] = 0
        lse[start:end] = float("-inf")
    return {"out": out, "lse": lse}


def fixup_spec(name: str, kv_init, grid, constraint=None, sanitize_sizes=()) -> KernelSpec:
    return KernelSpec(
        name=name,
        source=str(JIT / "csrc/attention/fixup_zero_kv.cuh"),
        export="fixup_zero_kv_rows",
        symbol="fixup_zero_kv_rows<>",
        args=(
            Tensor("out", ("t", "h", "d"), dtype="OutT", role=Role.INPLACE),
            Tensor("lse", ("t", "h"), dtype="float32", role=Role.INPLACE),
            Tensor("kv_lens", ("b",), dtype="int32", init=kv_init),
            Tensor("cum_seq_lens", ("b+1",), dtype="int32", init=boundaries),
            # the longest sequence: the grid's x extent
            Scalar("max_seq_len", lambda sizes: -(-sizes["t"] // sizes["b"]) + 1),
        ),
        reference=fixup,
        instantiations=(Instantiation(("bfloat16",), dtypes={"OutT": "bfloat16"}),),
        grid=grid,
        constraint=constraint,
        sanitize_sizes=sanitize_sizes,
        include_dirs=(str(JIT / "include"),),
    )


SPECS = [
    fixup_spec(
        "sgl_fixup_zero_kv_rows",
        kv_lengths,
        {"t": TAILS, "h": (1, 16), "d": (128,), "b": (1, 3, 32)},
        constraint=lambda sizes: sizes["b"] <= sizes["t"],
    ),
]
# Past 2^31 elements (4.3 GB a tensor; a child holds up to 120 GB of copies and starves the
# specs beside it): only with REAL_SPECS_LARGE=1, and best alone:
#   REAL_SPECS_LARGE=1 kernel-check test bench/real_specs -k sgl_fixup_zero_kv_rows_
LARGE = [
    # 16400 tokens x 128 heads x 1024: row offsets tok * 131072 pass 2^31 from token 16384
    fixup_spec(
        "sgl_fixup_zero_kv_rows_2g",
        no_kv,
        {"t": (16400,), "h": (128,), "d": (1024,), "b": TAILS},
        sanitize_sizes=({"t": 127, "h": 2, "d": 64, "b": 3},),
    ),
    # the control: 16383 tokens, every row offset below 2^31
    fixup_spec(
        "sgl_fixup_zero_kv_rows_below_2g",
        no_kv,
        {"t": (16383,), "h": (128,), "d": (1024,), "b": TAILS},
        sanitize_sizes=({"t": 127, "h": 2, "d": 64, "b": 3},),
    ),
]
if os.environ.get("REAL_SPECS_LARGE") == "1":
    SPECS += LARGE
