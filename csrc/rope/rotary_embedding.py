"""rotary_embedding: RoPE of q and k in place, neox or interleaved (see add_constant.py for the manifest)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from kernel_check.runtime import cache_once, is_arch_support_pdl, load_jit, make_cpp_args

if TYPE_CHECKING:
    from tvm_ffi.module import Module

CUDA_FILES = ["rope/rotary_embedding.cuh"]
INSTANTIATIONS = [
    ("rotary_embedding", "rotary_embedding<fp16_t, 128, 128, true, true>"),
    ("rotary_embedding", "rotary_embedding<bf16_t, 128, 128, false, true>"),
    ("rotary_embedding", "rotary_embedding<fp32_t, 64, 64, true, false>"),
    ("rotary_embedding", "rotary_embedding<fp32_t, 64, 32, false, false>"),
    ("rotary_embedding", "rotary_embedding<bf16_t, 256, 64, true, false>"),
    ("rotary_embedding", "rotary_embedding<fp16_t, 80, 18, false, true>"),
]
EXTRA_CUDA_CFLAGS: list[str] = []

_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


@cache_once
def _jit_rope_module(dtype: torch.dtype, head_dim: int, rotary_dim: int, is_neox: bool) -> Module:
    if dtype not in _DTYPES:
        raise RuntimeError(f"rotary_embedding: unsupported dtype {dtype} (float16, bfloat16, float32)")
    if rotary_dim <= 0 or rotary_dim % 2 or rotary_dim > head_dim:
        raise RuntimeError(f"rotary_embedding: rotary_dim {rotary_dim} must be even and <= head_dim {head_dim}")
    args = make_cpp_args(dtype, head_dim, rotary_dim, bool(is_neox), is_arch_support_pdl())
    return load_jit(
        "rotary_embedding",
        *args,
        cuda_files=CUDA_FILES,
        cuda_wrappers=[("rotary_embedding", f"rotary_embedding<{args}>")],
    )


def rotary_embedding(
    positions: torch.Tensor,
    q: torch.Tensor,
    k: torch.Tensor,
    cos_sin_cache: torch.Tensor,
    is_neox: bool = True,
) -> None:
    """Rotate ``q [tokens, q_heads, d]`` and ``k [tokens, k_heads, d]`` in place.

    ``cos_sin_cache`` is ``[max_position, rotary_dim]`` float32 (cos half, then sin half).
    """
    module = _jit_rope_module(q.dtype, q.shape[-1], cos_sin_cache.shape[-1], is_neox)
    module.rotary_embedding(positions, q, k, cos_sin_cache)
