"""qknorm: per-head RMSNorm of q and k, in place (see add_constant.py for the manifest format)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from kernel_check.runtime import cache_once, is_arch_support_pdl, load_jit, make_cpp_args

if TYPE_CHECKING:
    from tvm_ffi.module import Module

CUDA_FILES = ["norm/qknorm.cuh"]
INSTANTIATIONS = [
    ("qknorm", "qknorm<fp16_t, 64, true>"),
    ("qknorm", "qknorm<bf16_t, 128, true>"),
    ("qknorm", "qknorm<fp32_t, 128, false>"),
    ("qknorm", "qknorm<bf16_t, 256, false>"),
    ("qknorm", "qknorm<fp16_t, 127, false>"),
]
EXTRA_CUDA_CFLAGS: list[str] = []

_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


@cache_once
def _jit_qknorm_module(dtype: torch.dtype, head_dim: int) -> Module:
    if dtype not in _DTYPES:
        raise RuntimeError(f"qknorm: unsupported dtype {dtype} (float16, bfloat16, float32)")
    if head_dim <= 0 or head_dim * torch.empty((), dtype=dtype).element_size() > 2048:
        raise RuntimeError(f"qknorm: head_dim {head_dim} out of range (a head row must fit 2048 bytes)")
    args = make_cpp_args(dtype, head_dim, is_arch_support_pdl())
    return load_jit("qknorm", *args, cuda_files=CUDA_FILES, cuda_wrappers=[("qknorm", f"qknorm<{args}>")])


def qknorm(q: torch.Tensor, k: torch.Tensor, q_weight: torch.Tensor, k_weight: torch.Tensor, eps: float = 1e-6) -> None:
    """In place RMSNorm of every head of ``q [tokens, q_heads, d]`` and ``k [tokens, k_heads, d]``."""
    _jit_qknorm_module(q.dtype, q.shape[-1]).qknorm(q, k, q_weight, k_weight, eps)
