"""Harness spec for add_constant: dst = src + kConstant."""

from kernel_check.harness.spec import TAILS, Instantiation, KernelSpec, Role, Tensor

SPEC = KernelSpec(
    name="add_constant",
    source="add_constant.cuh",
    export="add_constant",
    symbol="add_constant",
    args=(Tensor("dst", ("n",), role=Role.OUT), Tensor("src", ("n",))),
    reference=lambda src: src + 1,
    instantiations=(
        Instantiation(("int32", 1), dtypes={"T": "int32"}),
        Instantiation(("float32", 1), dtypes={"T": "float32"}),
    ),
    grid={"n": TAILS + (1 << 16,)},
)
