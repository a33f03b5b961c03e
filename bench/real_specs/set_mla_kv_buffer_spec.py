"""sglang jit/csrc/elementwise/set_mla_kv_buffer.cuh: kv_buffer[loc] = [k_nope | k_rope] (TMA store)."""

from kernel_check.harness.spec import TAILS, Instantiation, KernelSpec, Role, Scalar, Tensor, tree_path

TREE = tree_path("SGLANG_TREE")  # the kernel tree: set $SGLANG_TREE
JIT = TREE / "python/sglang/kernels/jit"
SLOTS = 4200


def set_mla_kv_buffer(kv_buffer, loc, k_nope, k_rope, num_warps_per_block):
    rows = loc.long()
    kv_buffer[rows, :512] = k_nope
    kv_buffer[rows, 512:576] = k_rope
    return kv_buffer


SPEC = KernelSpec(
    name="sgl_set_mla_kv_buffer",
    source=str(JIT / "csrc/elementwise/set_mla_kv_buffer.cuh"),
    export="set_mla_kv_buffer",
    symbol="SetMlaKVBufferKernel<>::run",
    args=(
        Tensor("kv_buffer", ("r", 576), dtype="bfloat16", role=Role.INPLACE, accepts=("float16",)),
        Tensor("loc", ("b",), dtype="I", init="perm:r", strided_dims=(0,)),
        Tensor("k_nope", ("b", 512), dtype="bfloat16", strided_rows=True, accepts=("float16",)),
        Tensor("k_rope", ("b", 64), dtype="bfloat16", strided_rows=True, accepts=("float16",)),
        Scalar("num_warps_per_block", 4),
    ),
    reference=set_mla_kv_buffer,
    # 512 + 64 bf16 elements: 1024 and 128 bytes
    instantiations=(Instantiation((1024, 128, True), dtypes={"I": ("int32", "int64")}, pdl=True),),
    grid={"b": TAILS, "r": (SLOTS,)},
    include_dirs=(str(JIT / "include"),),
)
