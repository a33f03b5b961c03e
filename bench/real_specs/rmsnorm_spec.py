"""sglang jit/csrc/elementwise/rmsnorm.cuh and rmsnorm_hf.cuh, one launcher class per hidden-size
range (the wrapper's choice). rmsnorm: x * rsqrt(mean(x^2) + eps) * w, warp (<= 256), CTA, and
half-block (% 512) kernels; HF: w * dtype(x * rsqrt(mean(x^2) + eps)), a warp kernel below 512
and a 512-thread one for multiples of 512."""

from kernel_check.harness.spec import TAILS, Instantiation, KernelSpec, Role, Scalar, Tensor, tree_path

TREE = tree_path("SGLANG_TREE")  # the kernel tree: set $SGLANG_TREE
JIT = TREE / "python/sglang/kernels/jit"


def _normalized(x, eps):
    xf = x.float()
    return xf * (xf.pow(2).mean(-1, keepdim=True) + eps).rsqrt()


def rmsnorm(input, weight, eps):
    return (_normalized(input, eps) * weight.float()).to(input.dtype)


def rmsnorm_hf(input, weight, eps):
    return (_normalized(input, eps).to(input.dtype).float() * weight.float()).to(input.dtype)


def norm_spec(source: str, klass: str, dim: int, dtype: str, pdl: bool, reference) -> KernelSpec:
    return KernelSpec(
        name=f"sgl_{klass.lower()}",
        source=str(JIT / "csrc/elementwise" / source),
        export="run",
        symbol=f"{klass}<>::run",
        args=(
            Tensor("input", ("n", "d"), dtype="DType", strided_rows=True),
            Tensor("weight", ("d",), dtype="DType"),
            Tensor("output", ("n", "d"), dtype="DType", role=Role.OUT, strided_rows=True),
            Scalar("eps", 1e-6),
        ),
        reference=reference,
        instantiations=(Instantiation((dim, pdl, dtype), dtypes={"DType": dtype}, pdl=pdl, sizes={"d": dim}),),
        grid={"n": TAILS},
        tolerance={"float16": (2e-3, 2e-3), "bfloat16": (2e-2, 2e-2)},
        include_dirs=(str(JIT / "include"),),
    )


SPECS = [
    norm_spec("rmsnorm.cuh", "RMSNormWarpKernel", 128, "bfloat16", True, rmsnorm),
    norm_spec("rmsnorm.cuh", "RMSNormKernel", 1536, "float16", False, rmsnorm),
    norm_spec("rmsnorm.cuh", "RMSNormHalfKernel", 4096, "bfloat16", True, rmsnorm),
    norm_spec("rmsnorm_hf.cuh", "HFRMSNormWarpKernel", 128, "bfloat16", True, rmsnorm_hf),
    norm_spec("rmsnorm_hf.cuh", "HFRMSNormKernel", 4096, "float16", False, rmsnorm_hf),
]
