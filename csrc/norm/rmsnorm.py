"""rmsnorm / fused_add_rmsnorm (see add_constant.py for the manifest format).

The hidden size is a template argument, and the module factory picks the variant:
one warp per row when a row is at most 2048 bytes, else one CTA per row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from kernel_check.runtime import cache_once, is_arch_support_pdl, load_jit, make_cpp_args

if TYPE_CHECKING:
    from tvm_ffi.module import Module

CUDA_FILES = ["norm/rmsnorm.cuh"]
INSTANTIATIONS = [
    ("rmsnorm", "rmsnorm<fp16_t, 128, false, true>"),
    ("rmsnorm", "rmsnorm<bf16_t, 127, false, true>"),
    ("rmsnorm", "rmsnorm<fp32_t, 512, false, false>"),
    ("rmsnorm", "rmsnorm<fp16_t, 4096, true, true>"),
    ("rmsnorm", "rmsnorm<bf16_t, 4097, true, false>"),
    ("rmsnorm", "rmsnorm<fp32_t, 8192, true, true>"),
    ("fused_add_rmsnorm", "fused_add_rmsnorm<fp16_t, 128, false, true>"),
    ("fused_add_rmsnorm", "fused_add_rmsnorm<bf16_t, 1, false, false>"),
    ("fused_add_rmsnorm", "fused_add_rmsnorm<fp32_t, 127, false, true>"),
    ("fused_add_rmsnorm", "fused_add_rmsnorm<fp16_t, 4097, true, false>"),
    ("fused_add_rmsnorm", "fused_add_rmsnorm<bf16_t, 4096, true, true>"),
    ("fused_add_rmsnorm", "fused_add_rmsnorm<fp32_t, 2048, true, true>"),
]
EXTRA_CUDA_CFLAGS: list[str] = []

WARP_MAX_ROW_BYTES = 2048
_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


@cache_once
def _jit_rmsnorm_module(name: str, dtype: torch.dtype, hidden_size: int) -> Module:
    if dtype not in _DTYPES:
        raise RuntimeError(f"{name}: unsupported dtype {dtype} (float16, bfloat16, float32)")
    if hidden_size <= 0:
        raise RuntimeError(f"{name}: hidden size must be positive, got {hidden_size}")
    row_bytes = hidden_size * torch.empty((), dtype=dtype).element_size()
    use_cta = row_bytes > WARP_MAX_ROW_BYTES
    args = make_cpp_args(dtype, hidden_size, use_cta, is_arch_support_pdl())
    return load_jit(name, *args, cuda_files=CUDA_FILES, cuda_wrappers=[(name, f"{name}<{args}>")])


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6, out: torch.Tensor | None = None) -> torch.Tensor:
    """RMSNorm over the last dim of a 2-D CUDA tensor (rows may be strided)."""
    if out is None:
        out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    _jit_rmsnorm_module("rmsnorm", x.dtype, x.shape[-1]).rmsnorm(out, x, weight, eps)
    return out


def fused_add_rmsnorm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> None:
    """In place: ``residual += x``; ``x = rmsnorm(residual) * weight``."""
    _jit_rmsnorm_module("fused_add_rmsnorm", x.dtype, x.shape[-1]).fused_add_rmsnorm(x, residual, weight, eps)
