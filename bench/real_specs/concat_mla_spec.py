"""sglang jit/csrc/elementwise/concat_mla.cuh: k = [k_nope | k_rope broadcast over 128 heads];
out = [a | b] for the absorbed q (512 + 64). Both launchers check 16-byte alignment."""

from kernel_check.harness.spec import TAILS, Instantiation, KernelSpec, Role, Tensor, tree_path

TREE = tree_path("SGLANG_TREE")  # the kernel tree: set $SGLANG_TREE
JIT = TREE / "python/sglang/kernels/jit"


def concat_k(k_nope, k_rope):
    import torch

    return torch.cat([k_nope, k_rope.expand(-1, k_nope.shape[1], -1)], dim=-1)


def concat_q(a, b):
    import torch

    return torch.cat([a, b], dim=-1)


SPECS = [
    KernelSpec(
        name="sgl_concat_mla_k",
        source=str(JIT / "csrc/elementwise/concat_mla.cuh"),
        export="concat_mla_k",
        symbol="ConcatMlaKKernel::run",
        args=(
            # the kernel moves rows as int2 (nope) and int (rope); the launcher checks 16-byte bases
            Tensor("k", ("n", 128, 192), dtype="bfloat16", role=Role.OUT, strided_dims=(0, 1), vector_bytes=8),
            Tensor("k_nope", ("n", 128, 128), dtype="bfloat16", strided_dims=(0, 1), vector_bytes=8),
            Tensor("k_rope", ("n", 1, 64), dtype="bfloat16", strided_dims=(0, 1), vector_bytes=4),
        ),
        reference=concat_k,
        instantiations=(Instantiation(()),),
        grid={"n": TAILS},
        include_dirs=(str(JIT / "include"),),
    ),
    KernelSpec(
        name="sgl_concat_mla_absorb_q",
        source=str(JIT / "csrc/elementwise/concat_mla.cuh"),
        export="concat_mla_absorb_q",
        symbol="ConcatMlaAbsorbQKernel<>::run",
        args=(
            Tensor("a", ("n", "h", 512), dtype="bfloat16", strided_dims=(0, 1), vector_bytes=16),
            Tensor("b", ("n", "h", 64), dtype="bfloat16", strided_dims=(0, 1), vector_bytes=16),
            Tensor("out", ("n", "h", 576), dtype="bfloat16", role=Role.OUT, strided_dims=(0, 1), vector_bytes=16),
        ),
        reference=concat_q,
        instantiations=(Instantiation((True,), pdl=True),),
        grid={"n": TAILS, "h": (1, 16)},
        include_dirs=(str(JIT / "include"),),
    ),
]
