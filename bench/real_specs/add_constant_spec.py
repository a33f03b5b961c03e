"""sglang jit/csrc/add_constant.cuh: dst = src + kConstant (int32); vectorized from 2^20 elements."""

from kernel_check.harness.spec import TAILS, Instantiation, KernelSpec, Role, Tensor, tree_path

TREE = tree_path("SGLANG_TREE")  # the kernel tree: set $SGLANG_TREE
JIT = TREE / "python/sglang/kernels/jit"

SPEC = KernelSpec(
    name="sgl_add_constant",
    source=str(JIT / "csrc/add_constant.cuh"),
    export="add_constant",
    symbol="add_constant<>",
    args=(
        Tensor("dst", ("n",), dtype="int32", role=Role.OUT),
        Tensor("src", ("n",), dtype="int32"),
    ),
    reference=lambda src: src + 7,
    instantiations=(Instantiation((7,)),),
    # the launcher rejects n == 0; from 2^20 elements the vectorized kernel runs, with a tail
    grid={"n": TAILS + (1 << 20, (1 << 20) + 3)},
    include_dirs=(str(JIT / "include"),),
)
