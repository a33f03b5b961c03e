"""sglang jit/csrc/elementwise/activation.cuh: act(x[:, :d]) * x[:, d:] (``run_activation``,
silu and gelu_tanh) and relu(x)^2 (``run_unary_activation``); both vectorized by 16 bytes."""

from kernel_check.harness.spec import TAILS, Instantiation, KernelSpec, Role, Scalar, Tensor, tree_path

TREE = tree_path("SGLANG_TREE")  # the kernel tree: set $SGLANG_TREE
JIT = TREE / "python/sglang/kernels/jit"
TOLERANCE = {"float16": (2e-3, 2e-3), "bfloat16": (2e-2, 2e-2), "float32": (1e-5, 1e-5)}
INSTANTIATIONS = (
    Instantiation(("bfloat16", True), dtypes={"T": "bfloat16"}, pdl=True),
    Instantiation(("float16", False), dtypes={"T": "float16"}),
)


def act_and_mul(input, type):
    import torch.nn.functional as F

    x = input.float()
    d = x.shape[-1] // 2
    gate = F.silu(x[:, :d]) if type == "silu" else F.gelu(x[:, :d], approximate="tanh")
    return (gate * x[:, d:]).to(input.dtype)


def relu2(input, type):
    return input.float().relu().square().to(input.dtype)


def act_spec(kind: str) -> KernelSpec:
    return KernelSpec(
        name=f"sgl_act_and_mul_{kind}",
        source=str(JIT / "csrc/elementwise/activation.cuh"),
        export="run_activation",
        symbol="ActivationKernel<>::run_activation",
        args=(
            Tensor("input", ("n", "2*d")),
            Tensor("out", ("n", "d"), role=Role.OUT),
            Scalar("type", kind),
        ),
        reference=act_and_mul,
        instantiations=INSTANTIATIONS,
        # the launcher requires d to be a multiple of the 16-byte vector (8 halves)
        grid={"n": TAILS, "d": (8, 4096)},
        tolerance=TOLERANCE,
        include_dirs=(str(JIT / "include"),),
    )


SPECS = [
    act_spec("silu"),
    act_spec("gelu_tanh"),
    KernelSpec(
        name="sgl_relu2",
        source=str(JIT / "csrc/elementwise/activation.cuh"),
        export="run_unary_activation",
        symbol="ActivationKernel<>::run_unary_activation",
        args=(
            Tensor("input", ("n", "d")),
            Tensor("out", ("n", "d"), role=Role.OUT),
            Scalar("type", "relu2"),
        ),
        reference=relu2,
        instantiations=INSTANTIATIONS,
        grid={"n": TAILS, "d": (8, 4096)},
        tolerance=TOLERANCE,
        include_dirs=(str(JIT / "include"),),
    ),
]
