"""The inputs that show the defects the real specs found, outside the harness: each kernel is
built from $SGLANG_TREE (its own headers), called directly with torch tensors, and compared with
a few lines of PyTorch. One line per defect: what was passed, what came back.

    SGLANG_TREE=/path/to/sglang python bench/real_specs/reproduce.py   # needs a CUDA GPU

The faulting inputs (a misaligned ``add3`` view, a padded ``concat_mla_absorb_q`` row, ids out
of range for ``set_mla_kv_buffer``, ``fixup_zero_kv_rows`` past 2^31 elements) are left to the
specs: a fault ends the process's CUDA context.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch
import tvm_ffi

from kernel_check import runtime

JIT = Path(os.environ.get("SGLANG_TREE", "")) / "python/sglang/kernels/jit"


def load(name: str, source: str, symbol: str):
    """One launcher of the tree, built against the tree's own include/."""
    built = runtime.build_jit(
        "reproduce",
        name,
        cuda_files=[source],
        cuda_wrappers=[(name, symbol)],
        csrc_root=str(JIT / "csrc"),
        extra_include_paths=[str(JIT / "include")],
    )
    return getattr(tvm_ffi.load_module(str(built.library)), name)


def set_mla_kv_buffer_ignores_the_loc_stride() -> str:
    kernel = load(
        "set_mla_kv_buffer", "elementwise/set_mla_kv_buffer.cuh", "SetMlaKVBufferKernel<1024, 128, false>::run"
    )
    rows, batch = 64, 8
    ids = torch.arange(0, 2 * batch, 2, device="cuda", dtype=torch.int64)  # rows 0, 2, 4, ...
    loc = torch.stack([ids, ids + 1], dim=1)[:, 0]  # the same ids as a stride-2 view
    nope = torch.randn(batch, 512, device="cuda", dtype=torch.bfloat16)
    rope = torch.randn(batch, 64, device="cuda", dtype=torch.bfloat16)
    buffer = torch.zeros(rows, 576, device="cuda", dtype=torch.bfloat16)
    kernel(buffer, loc, nope, rope, 1)
    expected = torch.zeros_like(buffer)
    expected[ids, :512], expected[ids, 512:] = nope, rope
    written = sorted(set(buffer.abs().sum(-1).nonzero().flatten().tolist()))
    return (
        f"loc = ids {ids.tolist()} as a stride-{loc.stride(0)} view: rows written {written}, "
        f"expected {ids.tolist()}; equal: {torch.equal(buffer, expected)}"
    )


def concat_mla_k_truncates_the_head_stride() -> str:
    kernel = load("concat_mla_k", "elementwise/concat_mla.cuh", "ConcatMlaKKernel::run")
    n = 4
    k_nope = torch.randn(n, 128, 129, device="cuda", dtype=torch.bfloat16)[..., :128]  # head stride 129
    k_rope = torch.randn(n, 1, 64, device="cuda", dtype=torch.bfloat16)
    k = torch.empty(n, 128, 192, device="cuda", dtype=torch.bfloat16)
    kernel(k, k_nope, k_rope)
    expected = torch.cat([k_nope, k_rope.expand(-1, 128, -1)], dim=-1)
    wrong = (k != expected).any(-1).sum().item()
    return f"k_nope [{n}, 128, 128] with head stride {k_nope.stride(1)}: accepted, {wrong} of {n * 128} heads wrong"


def quant_fp8_of_zeros() -> str:
    per_token = load("per_token_quant_fp8", "gemm/per_token_quant_fp8.cuh", "per_token_quant_fp8<bf16_t>")
    per_tensor = load("per_tensor_quant_fp8", "gemm/per_tensor_quant_fp8.cuh", "per_tensor_quant_fp8<false, bf16_t>")
    found = []
    for tokens in (4, 16384):  # few rows: the CTA kernel; many: the warp kernel
        x = torch.zeros(tokens, 16, device="cuda", dtype=torch.bfloat16)
        q = torch.empty(tokens, 16, device="cuda", dtype=torch.float8_e4m3fn)
        s = torch.empty(tokens, 1, device="cuda", dtype=torch.float32)
        per_token(x, q, s)
        found.append(f"per_token {tokens}x16 zeros -> q={q.float().unique().tolist()} s={s.unique().tolist()}")
    x = torch.zeros(64, device="cuda", dtype=torch.bfloat16)
    q = torch.empty(64, device="cuda", dtype=torch.float8_e4m3fn)
    s = torch.zeros(1, device="cuda", dtype=torch.float32)
    per_tensor(x, q, s)
    found.append(f"per_tensor 64 zeros -> q={q.float().unique().tolist()} s={s.tolist()}")
    return "; ".join(found)


def main() -> int:
    if not JIT.is_dir():
        print(f"reproduce.py: set SGLANG_TREE to an sglang checkout (no {JIT})", file=sys.stderr)
        return 2
    for check in (set_mla_kv_buffer_ignores_the_loc_stride, concat_mla_k_truncates_the_head_stride, quant_fp8_of_zeros):
        print(f"{check.__name__}: {check()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
