"""Harness spec for norm/qknorm: per-head RMSNorm of q and k in place.

The head size is a template argument (axis ``d``, fixed per instantiation); q and k may be
strided views of a fused qkv (any token and head stride), so the strided case pads every head.
"""

from math import gcd

from kernel_check.harness.spec import TAILS, Instantiation, KernelSpec, Role, Scalar, Tensor

ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2}
TOLERANCE = {"float16": (2e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2), "float32": (1e-5, 1e-5)}


def vec_bytes(row_bytes: int) -> int:
    """``QKNormWarpLayout::kVecBytes``: 16-byte accesses where the head row allows."""
    return gcd(row_bytes, 16)


def _normalize(x, weight, eps: float):
    xf = x.float()
    rstd = (xf.pow(2).mean(-1, keepdim=True) + eps).rsqrt()
    return (xf * rstd * weight.float()).to(x.dtype)


def qknorm_reference(q, k, q_weight, k_weight, eps):
    return {"q": _normalize(q, q_weight, eps), "k": _normalize(k, k_weight, eps)}


def instantiation(dtype: str, head_dim: int, pdl: bool) -> Instantiation:
    width = vec_bytes(head_dim * ITEMSIZE[dtype])
    return Instantiation(
        (dtype, head_dim, pdl),
        dtypes={"T": dtype},
        pdl=pdl,
        sizes={"d": head_dim},
        vector_bytes=dict.fromkeys(("q", "k", "q_weight", "k_weight"), width),
    )


SPEC = KernelSpec(
    name="qknorm",
    source="qknorm.cuh",
    export="qknorm",
    symbol="qknorm",
    args=(
        Tensor("q", ("n", "hq", "d"), role=Role.INPLACE, strided_rows=True),
        Tensor("k", ("n", "hk", "d"), role=Role.INPLACE, strided_rows=True),
        Tensor("q_weight", ("d",)),
        Tensor("k_weight", ("d",)),
        Scalar("eps", 1e-6),
    ),
    reference=qknorm_reference,
    # (dtype, head_dim, PDL): the wrapper's INSTANTIATIONS
    instantiations=tuple(
        instantiation(dtype, head_dim, pdl)
        for dtype, head_dim, pdl in (
            ("float16", 64, True),
            ("bfloat16", 128, True),
            ("float32", 128, False),
            ("bfloat16", 256, False),
            ("float16", 127, False),
        )
    ),
    grid={"n": TAILS, "hq": (8,), "hk": (1, 2)},
    tolerance=TOLERANCE,
    memory_bound=True,
    bandwidth_sizes={"n": 8192, "hq": 32, "hk": 8},
)
