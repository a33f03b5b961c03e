"""sglang jit/csrc/elementwise/add3.cuh: out = bf16(bf16(a + b) + c) over contiguous bf16 vectors."""

import dataclasses

from kernel_check.harness.spec import TAILS, Instantiation, KernelSpec, Role, Scalar, Tensor, tree_path

TREE = tree_path("SGLANG_TREE")  # the kernel tree: set $SGLANG_TREE
JIT = TREE / "python/sglang/kernels/jit"

PLAIN = KernelSpec(
    name="sgl_add3",
    source=str(JIT / "csrc/elementwise/add3.cuh"),
    export="run",
    symbol="Add3Kernel<>::launch",
    args=(
        Tensor("a", ("n",), dtype="bfloat16"),
        Tensor("b", ("n",), dtype="bfloat16"),
        Tensor("c", ("n",), dtype="bfloat16"),
        Tensor("out", ("n",), dtype="bfloat16", role=Role.OUT),
        Scalar("prefetch_bc", False),
    ),
    reference=lambda a, b, c, prefetch_bc: (a + b) + c,
    instantiations=(Instantiation((True,), pdl=True), Instantiation((False,))),
    grid={"n": TAILS + (16, 4096, 1 << 20)},
    # the launcher requires whole 16-byte vectors (8 elements; the wrapper asks for 16)
    constraint=lambda sizes: sizes["n"] % 16 == 0,
    tolerance={"bfloat16": (0.0, 0.0)},
    include_dirs=(str(JIT / "include"),),
)

# The kernel reads and writes 16-byte vectors, but the launcher checks no alignment: the
# same spec with ``vector_bytes`` asks the harness for views one element off (KD301).
ALIGNED = dataclasses.replace(
    PLAIN,
    name="sgl_add3_alignment",
    instantiations=PLAIN.instantiations[1:],
    args=tuple(dataclasses.replace(a, vector_bytes=16) if isinstance(a, Tensor) else a for a in PLAIN.args),
)

SPECS = [PLAIN, ALIGNED]
