"""sglang jit/csrc/elementwise/rmsnorm_hf.cuh: HF RMSNorm, w * dtype(x * rsqrt(mean(x^2) + eps));
a warp kernel below 512 and a 512-thread kernel for multiples of 512."""

from kernel_check.harness.spec import TAILS, Instantiation, KernelSpec, Role, Scalar, Tensor, tree_path

TREE = tree_path("SGLANG_TREE")  # the kernel tree: set $SGLANG_TREE
JIT = TREE / "python/sglang/kernels/jit"


def rmsnorm_hf(input, weight, eps):
    x = input.float()
    normed = (x * (x.pow(2).mean(-1, keepdim=True) + eps).rsqrt()).to(input.dtype)
    return (normed.float() * weight.float()).to(input.dtype)


def hf_spec(klass: str, dim: int, dtype: str, pdl: bool) -> KernelSpec:
    return KernelSpec(
        name=f"sgl_{klass.lower()}",
        source=str(JIT / "csrc/elementwise/rmsnorm_hf.cuh"),
        export="run",
        symbol=f"{klass}<>::run",
        args=(
            Tensor("input", ("n", "d"), dtype="DType", strided_rows=True),
            Tensor("weight", ("d",), dtype="DType"),
            Tensor("output", ("n", "d"), dtype="DType", role=Role.OUT, strided_rows=True),
            Scalar("eps", 1e-6),
        ),
        reference=rmsnorm_hf,
        instantiations=(Instantiation((dim, pdl, dtype), dtypes={"DType": dtype}, pdl=pdl, sizes={"d": dim}),),
        grid={"n": TAILS},
        tolerance={"float16": (2e-3, 2e-3), "bfloat16": (2e-2, 2e-2)},
        include_dirs=(str(JIT / "include"),),
    )


SPECS = [hf_spec("HFRMSNormWarpKernel", 128, "bfloat16", True), hf_spec("HFRMSNormKernel", 4096, "float16", False)]
