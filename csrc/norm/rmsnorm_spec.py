"""Harness specs for norm/rmsnorm: rmsnorm and fused_add_rmsnorm.

The hidden size is a template argument, so each instantiation fixes the axis ``h``; rows of
at most 2048 bytes use the warp variant, larger ones the CTA variant (the wrapper's choice).
Access widths follow the kernels: ``LoadStorePattern::get_vec_bytes<row, WARP_UNIFORM_16B>``
(warp) or ``gcd(row, 16)`` (CTA) bytes, and the launchers must reject what breaks them.
"""

from math import gcd

from kernel_check.harness.spec import TAILS, Instantiation, KernelSpec, Role, Scalar, Tensor

ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2}
WARP_MAX_ROW_BYTES = 2048
WARP_THREADS = 32


def warp_vec_bytes(row_bytes: int, cap: int = 16) -> int:
    """``LoadStorePattern::get_vec_bytes<row_bytes, -cap>()``: the warp splits the row."""
    width = gcd(row_bytes, cap)
    while width > 4 and row_bytes // width < WARP_THREADS:
        width //= 2
    return gcd(row_bytes, 4) if width < 4 else width


def rmsnorm_vec_bytes(dtype: str, hidden: int, use_cta: bool) -> int:
    row = hidden * ITEMSIZE[dtype]
    return gcd(row, 16) if use_cta else warp_vec_bytes(row)


def instantiation(dtype: str, hidden: int, use_cta: bool, pdl: bool, tensors: tuple[str, ...]) -> Instantiation:
    width = rmsnorm_vec_bytes(dtype, hidden, use_cta)
    return Instantiation(
        (dtype, hidden, use_cta, pdl),
        dtypes={"T": dtype},
        pdl=pdl,
        sizes={"h": hidden},
        vector_bytes=dict.fromkeys(tensors, width),
    )


def _normalize(x, weight, eps: float, dtype):
    rstd = (x.pow(2).mean(-1, keepdim=True) + eps).rsqrt()
    return (x * rstd * weight.float()).to(dtype)


def rmsnorm_reference(input, weight, eps):
    return _normalize(input.float(), weight, eps, input.dtype)


def fused_add_rmsnorm_reference(input, residual, weight, eps):
    total = (input.float() + residual.float()).to(input.dtype)  # the kernel rounds the sum to T
    return {"input": _normalize(total.float(), weight, eps, input.dtype), "residual": total}


def bandwidth_rows(fixed):
    """About 32M elements per tensor; rows of fewer than 64 elements are not worth timing."""
    return None if fixed["h"] < 64 else {"m": max(1, (1 << 25) // fixed["h"])}


TOLERANCE = {"float16": (2e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2), "float32": (1e-5, 1e-5)}

RMSNORM = KernelSpec(
    name="rmsnorm",
    source="rmsnorm.cuh",
    export="rmsnorm",
    symbol="rmsnorm",
    args=(
        Tensor("out", ("m", "h"), role=Role.OUT, strided_rows=True),
        Tensor("input", ("m", "h"), strided_rows=True),
        Tensor("weight", ("h",)),
        Scalar("eps", 1e-6),
    ),
    reference=rmsnorm_reference,
    # (dtype, hidden, CTA variant, PDL): the wrapper's INSTANTIATIONS
    instantiations=tuple(
        instantiation(dtype, hidden, cta, pdl, ("out", "input", "weight"))
        for dtype, hidden, cta, pdl in (
            ("float16", 128, False, True),
            ("bfloat16", 127, False, True),
            ("float32", 512, False, False),
            ("float16", 4096, True, True),
            ("bfloat16", 4097, True, False),
            ("float32", 8192, True, True),
        )
    ),
    grid={"m": TAILS + (1024,)},
    tolerance=TOLERANCE,
    memory_bound=True,
    bandwidth_sizes=bandwidth_rows,
)

FUSED_ADD_RMSNORM = KernelSpec(
    name="fused_add_rmsnorm",
    source="rmsnorm.cuh",
    export="fused_add_rmsnorm",
    symbol="fused_add_rmsnorm",
    args=(
        Tensor("input", ("m", "h"), role=Role.INPLACE, strided_rows=True),
        Tensor("residual", ("m", "h"), role=Role.INPLACE, strided_rows=True),
        Tensor("weight", ("h",)),
        Scalar("eps", 1e-6),
    ),
    reference=fused_add_rmsnorm_reference,
    instantiations=tuple(
        instantiation(dtype, hidden, cta, pdl, ("input", "residual", "weight"))
        for dtype, hidden, cta, pdl in (
            ("float16", 128, False, True),
            ("bfloat16", 1, False, False),
            ("float32", 127, False, True),
            ("float16", 4097, True, False),
            ("bfloat16", 4096, True, True),
            ("float32", 2048, True, True),
        )
    ),
    grid={"m": TAILS + (1024,)},
    tolerance=TOLERANCE,
    memory_bound=True,
    bandwidth_sizes=bandwidth_rows,
)

SPECS = [RMSNORM, FUSED_ADD_RMSNORM]
