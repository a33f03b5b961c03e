"""sglang jit/csrc/elementwise/qknorm.cuh (per-head RMSNorm of q and k in place, strided heads)
and qknorm_across_heads.cuh (RMSNorm of q and k over the whole hidden row)."""

from kernel_check.harness.spec import TAILS, Instantiation, KernelSpec, Role, Scalar, Tensor, tree_path

TREE = tree_path("SGLANG_TREE")  # the kernel tree: set $SGLANG_TREE
JIT = TREE / "python/sglang/kernels/jit"
TOLERANCE = {"float16": (2e-3, 2e-3), "bfloat16": (2e-2, 2e-2)}


def _norm(x, w, eps):
    xf = x.float()
    return (xf * (xf.pow(2).mean(-1, keepdim=True) + eps).rsqrt() * w.float()).to(x.dtype)


def qknorm(q, k, q_weight, k_weight, eps):
    return {"q": _norm(q, q_weight, eps), "k": _norm(k, k_weight, eps)}


def qk_args(q_shape: tuple, k_shape: tuple, weight_shape: tuple, strided: tuple) -> tuple:
    return (
        Tensor("q", q_shape, dtype="DType", role=Role.INPLACE, strided_dims=strided),
        Tensor("k", k_shape, dtype="DType", role=Role.INPLACE, strided_dims=strided),
        Tensor("q_weight", weight_shape, dtype="DType"),
        Tensor("k_weight", weight_shape, dtype="DType"),
        Scalar("eps", 1e-6),
    )


def per_head(klass: str, head_dim: int, dtype: str, pdl: bool) -> KernelSpec:
    return KernelSpec(
        name=f"sgl_{klass.lower()}",
        source=str(JIT / "csrc/elementwise/qknorm.cuh"),
        export="run",
        symbol=f"{klass}<>::run",
        # [N, H, D] with strides {S, D, 1}: any token stride
        args=qk_args(("n", "hq", "d"), ("n", "hk", "d"), ("d",), (0,)),
        reference=qknorm,
        instantiations=(
            Instantiation((head_dim, pdl, dtype), dtypes={"DType": dtype}, pdl=pdl, sizes={"d": head_dim}),
        ),
        grid={"n": TAILS, "hq": (8,), "hk": (1, 2)},
        tolerance=TOLERANCE,
        include_dirs=(str(JIT / "include"),),
    )


SPECS = [
    per_head("QKNormKernelWarp", 128, "bfloat16", True),
    per_head("QKNormKernelCTA", 512, "float16", False),
    KernelSpec(
        name="sgl_qknorm_across_heads",
        source=str(JIT / "csrc/elementwise/qknorm_across_heads.cuh"),
        export="qknorm_across_heads",
        symbol="QKNormAcrossHeadsKernel<>::run",
        args=qk_args(("n", "d"), ("n", "d"), ("d",), ()),
        reference=qknorm,
        instantiations=(Instantiation(("bfloat16",), dtypes={"DType": "bfloat16"}),),
        grid={"n": TAILS, "d": (8, 2048)},
        tolerance=TOLERANCE,
        include_dirs=(str(JIT / "include"),),
    ),
]
