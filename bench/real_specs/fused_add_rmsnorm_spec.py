"""sglang jit/csrc/elementwise/fused_add_rmsnorm.cuh: residual += input; input = rmsnorm(residual) * w."""

from kernel_check.harness.spec import TAILS, Instantiation, KernelSpec, Role, Scalar, Tensor, tree_path

TREE = tree_path("SGLANG_TREE")  # the kernel tree: set $SGLANG_TREE
JIT = TREE / "python/sglang/kernels/jit"


def fused_add_rmsnorm(input, residual, weight, eps):
    total = input.float() + residual.float()
    rstd = (total.pow(2).mean(-1, keepdim=True) + eps).rsqrt()
    summed = total.to(input.dtype)
    return {"input": (summed.float() * rstd * weight.float()).to(input.dtype), "residual": summed}


SPEC = KernelSpec(
    name="sgl_fused_add_rmsnorm",
    source=str(JIT / "csrc/elementwise/fused_add_rmsnorm.cuh"),
    export="fused_add_rmsnorm",
    symbol="FusedAddRMSNormKernel<>::run",
    args=(
        Tensor("input", ("n", "d"), dtype="DType", role=Role.INPLACE),
        Tensor("residual", ("n", "d"), dtype="DType", role=Role.INPLACE),
        Tensor("weight", ("d",), dtype="DType"),
        Scalar("eps", 1e-6),
    ),
    reference=fused_add_rmsnorm,
    instantiations=(
        Instantiation((False, "bfloat16"), dtypes={"DType": "bfloat16"}),
        Instantiation((False, "float16"), dtypes={"DType": "float16"}),
    ),
    # whole 16-byte vectors per row, at most 8192 (the wrapper's bound)
    grid={"n": TAILS, "d": (8, 4096)},
    tolerance={"float16": (2e-3, 2e-3), "bfloat16": (2e-2, 2e-2)},
    include_dirs=(str(JIT / "include"),),
)
