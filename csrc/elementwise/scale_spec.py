"""Harness spec for elementwise/scale: dst = src * factor (vectorized, PDL variants)."""

from kernel_check.harness.spec import TAILS, Instantiation, KernelSpec, Role, Scalar, Tensor

SPEC = KernelSpec(
    name="scale",
    source="scale.cuh",
    export="scale",
    symbol="scale",
    args=(
        Tensor("dst", ("n",), role=Role.OUT, vector_bytes=16),
        Tensor("src", ("n",), vector_bytes=16),
        Scalar("factor", 3.0),
    ),
    reference=lambda src, factor: (src.float() * factor).to(src.dtype),
    instantiations=tuple(
        Instantiation((dtype, pdl), dtypes={"T": dtype}, pdl=pdl)
        for dtype in ("float16", "bfloat16", "float32")
        for pdl in (True, False)
    ),
    grid={"n": TAILS + (1000, 1 << 20)},
    memory_bound=True,
    bandwidth_sizes={"n": 1 << 27},
)
