"""sglang jit/csrc/elementwise/rmsnorm.cuh: out = x * rsqrt(mean(x^2) + eps) * w, one launcher
class per hidden-size range (the wrapper's choice): warp (<= 256), CTA, half-block (% 512)."""

from kernel_check.harness.spec import TAILS, Instantiation, KernelSpec, Role, Scalar, Tensor, tree_path

TREE = tree_path("SGLANG_TREE")  # the kernel tree: set $SGLANG_TREE
JIT = TREE / "python/sglang/kernels/jit"


def rmsnorm(input, weight, eps):
    x = input.float()
    return (x * (x.pow(2).mean(-1, keepdim=True) + eps).rsqrt() * weight.float()).to(input.dtype)


def rmsnorm_spec(klass: str, dim: int, dtype: str, pdl: bool) -> KernelSpec:
    return KernelSpec(
        name=f"sgl_rmsnorm_{klass.lower()}",
        source=str(JIT / "csrc/elementwise/rmsnorm.cuh"),
        export="run",
        symbol=f"{klass}<>::run",
        args=(
            Tensor("input", ("n", "d"), dtype="DType", strided_rows=True),
            Tensor("weight", ("d",), dtype="DType"),
            Tensor("output", ("n", "d"), dtype="DType", role=Role.OUT, strided_rows=True),
            Scalar("eps", 1e-6),
        ),
        reference=rmsnorm,
        instantiations=(Instantiation((dim, pdl, dtype), dtypes={"DType": dtype}, pdl=pdl, sizes={"d": dim}),),
        grid={"n": TAILS},
        tolerance={"float16": (2e-3, 2e-3), "bfloat16": (2e-2, 2e-2)},
        include_dirs=(str(JIT / "include"),),
    )


SPECS = [
    rmsnorm_spec("RMSNormWarpKernel", 128, "bfloat16", True),
    rmsnorm_spec("RMSNormKernel", 1536, "float16", False),
    rmsnorm_spec("RMSNormHalfKernel", 4096, "bfloat16", True),
]
