"""sglang jit/csrc/elementwise/kvcache.cuh: k_cache[indices] = k, v_cache[indices] = v
(rows of fixed byte sizes; one build takes int32 and int64 indices)."""

from kernel_check.harness.spec import TAILS, Instantiation, KernelSpec, Role, Scalar, Tensor, tree_path

TREE = tree_path("SGLANG_TREE")  # the kernel tree: set $SGLANG_TREE
JIT = TREE / "python/sglang/kernels/jit"
SLOTS = 4200  # cache rows: more than the largest batch, so the ids can be distinct


def store_cache(k, v, k_cache, v_cache, indices, num_split, size_limit, reserved_skip_index):
    k_cache[indices.long()] = k
    v_cache[indices.long()] = v
    return {"k_cache": k_cache, "v_cache": v_cache}


SPEC = KernelSpec(
    name="sgl_store_kvcache",
    source=str(JIT / "csrc/elementwise/kvcache.cuh"),
    export="store_cache",
    symbol="StoreKVCacheKernel<>::run",
    args=(
        Tensor("k", ("b", 128), dtype="bfloat16", strided_rows=True, accepts=("float16",)),
        Tensor("v", ("b", 128), dtype="bfloat16", strided_rows=True, accepts=("float16",)),
        Tensor("k_cache", ("r", 128), dtype="bfloat16", role=Role.INPLACE, strided_rows=True, accepts=("float16",)),
        Tensor("v_cache", ("r", 128), dtype="bfloat16", role=Role.INPLACE, strided_rows=True, accepts=("float16",)),
        # ids outside [0, size_limit) hit the kernel's device-side assert, by design ("fail fast
        # at the culprit"): a trap, not a host error, so the oob profile is off
        Tensor("indices", ("b",), dtype="I", init="perm:r", strided_dims=(0,), profiles={"oob": "off"}),
        Scalar("num_split", 1),
        Scalar("size_limit", lambda sizes: sizes["r"]),
        Scalar("reserved_skip_index", -1),
    ),
    reference=store_cache,
    # 128 bf16 elements: 256-byte rows for k and v; PDL on
    instantiations=(Instantiation((256, 256, True), dtypes={"I": ("int32", "int64")}, pdl=True),),
    grid={"b": TAILS, "r": (SLOTS,)},
    include_dirs=(str(JIT / "include"),),
)
