"""sglang jit/csrc/elementwise/qknorm_across_heads.cuh: RMSNorm of q and k over the whole hidden row."""

from kernel_check.harness.spec import TAILS, Instantiation, KernelSpec, Role, Scalar, Tensor, tree_path

TREE = tree_path("SGLANG_TREE")  # the kernel tree: set $SGLANG_TREE
JIT = TREE / "python/sglang/kernels/jit"


def _norm(x, w, eps):
    xf = x.float()
    return (xf * (xf.pow(2).mean(-1, keepdim=True) + eps).rsqrt() * w.float()).to(x.dtype)


def qknorm_across_heads(q, k, q_weight, k_weight, eps):
    return {"q": _norm(q, q_weight, eps), "k": _norm(k, k_weight, eps)}


SPEC = KernelSpec(
    name="sgl_qknorm_across_heads",
    source=str(JIT / "csrc/elementwise/qknorm_across_heads.cuh"),
    export="qknorm_across_heads",
    symbol="QKNormAcrossHeadsKernel<>::run",
    args=(
        Tensor("q", ("n", "d"), dtype="DType", role=Role.INPLACE),
        Tensor("k", ("n", "d"), dtype="DType", role=Role.INPLACE),
        Tensor("q_weight", ("d",), dtype="DType"),
        Tensor("k_weight", ("d",), dtype="DType"),
        Scalar("eps", 1e-6),
    ),
    reference=qknorm_across_heads,
    instantiations=(Instantiation(("bfloat16",), dtypes={"DType": "bfloat16"}),),
    grid={"n": TAILS, "d": (8, 2048)},
    tolerance={"bfloat16": (2e-2, 2e-2)},
    include_dirs=(str(JIT / "include"),),
)
