"""sglang jit/csrc/elementwise/clamp_position.cuh: positions = max(seq_lens - 1, 0)."""

from kernel_check.harness.spec import TAILS, Instantiation, KernelSpec, Role, Tensor, tree_path

TREE = tree_path("SGLANG_TREE")  # the kernel tree: set $SGLANG_TREE
JIT = TREE / "python/sglang/kernels/jit"

SPEC = KernelSpec(
    name="sgl_clamp_position",
    source=str(JIT / "csrc/elementwise/clamp_position.cuh"),
    export="clamp_position",
    symbol="ClampPosition<>::run",
    args=(Tensor("dst", ("n",), role=Role.OUT), Tensor("seq_lens", ("n",))),
    reference=lambda seq_lens: (seq_lens - 1).clamp(min=0),
    instantiations=(
        Instantiation(("int32",), dtypes={"T": "int32"}),
        Instantiation(("int64",), dtypes={"T": "int64"}),
    ),
    grid={"n": TAILS + (4096,)},
    include_dirs=(str(JIT / "include"),),
)
