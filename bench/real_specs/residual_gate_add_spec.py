"""sglang jit/csrc/diffusion/residual_gate_add.cuh: out = residual + update * gate, the gate
broadcast over rows of ``hidden_size`` (flat tensors, as the wrapper passes them)."""

from kernel_check.harness.spec import TAILS, Instantiation, KernelSpec, Role, Scalar, Tensor, tree_path

TREE = tree_path("SGLANG_TREE")  # the kernel tree: set $SGLANG_TREE
JIT = TREE / "python/sglang/kernels/jit"


def residual_gate_add(residual, update, gate, hidden_size, broadcast_gate):
    rows = residual.numel() // hidden_size
    return residual + update * gate.repeat(rows)


SPEC = KernelSpec(
    name="sgl_residual_gate_add",
    source=str(JIT / "csrc/diffusion/residual_gate_add.cuh"),
    export="residual_gate_add",
    symbol="residual_gate_add::ResidualGateAddKernel<>::run",
    args=(
        Tensor("out", ("r*h",), role=Role.OUT),
        Tensor("residual", ("r*h",)),
        Tensor("update", ("r*h",)),
        Tensor("gate", ("h",)),
        Scalar("hidden_size", lambda sizes: sizes["h"]),
        Scalar("broadcast_gate", True),
    ),
    reference=residual_gate_add,
    instantiations=(
        Instantiation(("bfloat16",), dtypes={"T": "bfloat16"}),
        Instantiation(("float32",), dtypes={"T": "float32"}),
    ),
    grid={"r": TAILS, "h": (3, 1024)},
    tolerance={"bfloat16": (1.6e-2, 1e-2)},
    include_dirs=(str(JIT / "include"),),
)
