"""Harness specs for rope/rotary_embedding: RoPE of q and k in place, neox and interleaved.

Head size ``d`` and rotary dims ``r`` are template arguments (fixed per instantiation); the
layout is one too, and the reference differs by layout, so there is one spec per layout.
q and k accept any token and head stride (views of a fused qkv); the fp32 cos|sin cache
must be contiguous.
"""

import dataclasses
from math import gcd

from kernel_check.harness.spec import TAILS, Instantiation, KernelSpec, Role, Tensor

ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2}


def pairs_per_vec(dtype: str, rotary_dim: int, neox: bool) -> int:
    """``rope_pairs_per_vec``: a power of two <= 4 dividing r/2 (interleaved: pairs in 8 bytes)."""
    cap = 4 if neox else min(8 // ITEMSIZE[dtype], 4)
    return gcd(rotary_dim // 2, cap)


def instantiation(dtype: str, head_dim: int, rotary_dim: int, neox: bool, pdl: bool) -> Instantiation:
    pairs = pairs_per_vec(dtype, rotary_dim, neox)
    qk = pairs * (1 if neox else 2) * ITEMSIZE[dtype]
    return Instantiation(
        (dtype, head_dim, rotary_dim, neox, pdl),
        dtypes={"T": dtype},
        pdl=pdl,
        sizes={"d": head_dim, "r": rotary_dim},
        vector_bytes={"q": qk, "k": qk, "cos_sin_cache": pairs * 4},
    )


def _rotate(x, cos, sin, neox: bool):
    rotary = 2 * cos.shape[-1]
    y = x.float().clone()
    c, s = cos[:, None, :], sin[:, None, :]
    if neox:
        first, second = slice(0, rotary // 2), slice(rotary // 2, rotary)
    else:
        first, second = slice(0, rotary, 2), slice(1, rotary, 2)
    a, b = y[..., first].clone(), y[..., second].clone()
    y[..., first] = a * c - b * s
    y[..., second] = b * c + a * s
    return y.to(x.dtype)  # the dims past the rotary ones round-trip exactly


def rope_reference(positions, q, k, cos_sin_cache, neox: bool):
    half = cos_sin_cache.shape[-1] // 2
    rows = cos_sin_cache[positions.long()]
    cos, sin = rows[:, :half], rows[:, half:]
    return {"q": _rotate(q, cos, sin, neox), "k": _rotate(k, cos, sin, neox)}


def bandwidth_shape(fixed):
    """Timed only where every dim rotates (otherwise most of q and k is never touched)."""
    return {"n": 16384, "hq": 32, "hk": 8, "p": 4096} if fixed["r"] == fixed["d"] else None


NEOX = KernelSpec(
    name="rotary_embedding_neox",
    source="rotary_embedding.cuh",
    export="rotary_embedding",
    symbol="rotary_embedding",
    args=(
        Tensor("positions", ("n",), "int64", init="randint:p"),
        Tensor("q", ("n", "hq", "d"), role=Role.INPLACE, strided_rows=True),
        Tensor("k", ("n", "hk", "d"), role=Role.INPLACE, strided_rows=True),
        Tensor("cos_sin_cache", ("p", "r"), "float32", init="uniform"),
    ),
    reference=lambda positions, q, k, cos_sin_cache: rope_reference(positions, q, k, cos_sin_cache, True),
    # (dtype, head_dim, rotary_dim, neox, PDL): the wrapper's INSTANTIATIONS with neox
    instantiations=(
        instantiation("float16", 128, 128, True, True),
        instantiation("float32", 64, 64, True, False),
        instantiation("bfloat16", 256, 64, True, False),
    ),
    grid={"n": TAILS, "hq": (4,), "hk": (1, 2), "p": (97,)},
    tolerance={"float16": (2e-3, 1e-4), "bfloat16": (1.6e-2, 1e-3), "float32": (1.3e-6, 1e-5)},
    memory_bound=True,
    bandwidth_sizes=bandwidth_shape,
)

INTERLEAVED = dataclasses.replace(
    NEOX,
    name="rotary_embedding_interleaved",
    reference=lambda positions, q, k, cos_sin_cache: rope_reference(positions, q, k, cos_sin_cache, False),
    instantiations=(
        instantiation("bfloat16", 128, 128, False, True),
        instantiation("float32", 64, 32, False, False),
        instantiation("float16", 80, 18, False, True),
    ),
)

SPECS = [NEOX, INTERLEAVED]
