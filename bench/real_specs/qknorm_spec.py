"""sglang jit/csrc/elementwise/qknorm.cuh: per-head RMSNorm of q and k in place (strided heads)."""

from kernel_check.harness.spec import TAILS, Instantiation, KernelSpec, Role, Scalar, Tensor, tree_path

TREE = tree_path("SGLANG_TREE")  # the kernel tree: set $SGLANG_TREE
JIT = TREE / "python/sglang/kernels/jit"


def _norm(x, w, eps):
    xf = x.float()
    return (xf * (xf.pow(2).mean(-1, keepdim=True) + eps).rsqrt() * w.float()).to(x.dtype)


def qknorm(q, k, q_weight, k_weight, eps):
    return {"q": _norm(q, q_weight, eps), "k": _norm(k, k_weight, eps)}


def qknorm_spec(klass: str, head_dim: int, dtype: str, pdl: bool) -> KernelSpec:
    return KernelSpec(
        name=f"sgl_{klass.lower()}",
        source=str(JIT / "csrc/elementwise/qknorm.cuh"),
        export="run",
        symbol=f"{klass}<>::run",
        args=(
            Tensor("q", ("n", "hq", "d"), dtype="DType", role=Role.INPLACE, strided_dims=(0,)),
            Tensor("k", ("n", "hk", "d"), dtype="DType", role=Role.INPLACE, strided_dims=(0,)),
            Tensor("q_weight", ("d",), dtype="DType"),
            Tensor("k_weight", ("d",), dtype="DType"),
            Scalar("eps", 1e-6),
        ),
        reference=qknorm,
        instantiations=(Instantiation((head_dim, pdl, dtype), dtypes={"DType": dtype}, pdl=pdl,
                                      sizes={"d": head_dim}),),
        grid={"n": TAILS, "hq": (8,), "hk": (1, 2)},
        tolerance={"float16": (2e-3, 2e-3), "bfloat16": (2e-2, 2e-2)},
        include_dirs=(str(JIT / "include"),),
    )


SPECS = [qknorm_spec("QKNormKernelWarp", 128, "bfloat16", True), qknorm_spec("QKNormKernelCTA", 512, "float16", False)]
