"""per_tensor_quant_fp8: fp8 e4m3 quantization with one scale per tensor (see add_constant.py for the manifest).

Dynamic: ``scale = absmax(x) / 448``; static: a given scale. ``out = saturate(x / scale)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from kernel_check.runtime import cache_once, is_arch_support_pdl, load_jit, make_cpp_args

if TYPE_CHECKING:
    from tvm_ffi.module import Module

CUDA_FILES = ["quant/per_tensor_quant_fp8.cuh"]
INSTANTIATIONS = [
    ("per_tensor_quant_fp8", "per_tensor_quant_fp8<fp16_t, 16, false, true>"),
    ("per_tensor_quant_fp8", "per_tensor_quant_fp8<bf16_t, 16, false, true>"),
    ("per_tensor_quant_fp8", "per_tensor_quant_fp8<fp32_t, 16, false, true>"),
    ("per_tensor_quant_fp8", "per_tensor_quant_fp8<fp16_t, 2, true, false>"),
    ("per_tensor_quant_fp8", "per_tensor_quant_fp8<bf16_t, 8, true, false>"),
    ("per_tensor_quant_fp8", "per_tensor_quant_fp8<fp32_t, 4, false, false>"),
]
EXTRA_CUDA_CFLAGS: list[str] = []

_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


@cache_once
def _load(dtype: torch.dtype, vec_bytes: int, is_static: bool) -> Module:
    args = make_cpp_args(dtype, vec_bytes, is_static, is_arch_support_pdl())
    return load_jit(
        "per_tensor_quant_fp8",
        *args,
        cuda_files=CUDA_FILES,
        cuda_wrappers=[("per_tensor_quant_fp8", f"per_tensor_quant_fp8<{args}>")],
    )


@cache_once
def _jit_quant_module(dtype: torch.dtype, is_static: bool, cols: int) -> Module:
    """Module for rows of ``cols`` elements: the vector width is the largest of 16/8/4/2 bytes dividing a row."""
    if dtype not in _DTYPES:
        raise RuntimeError(f"per_tensor_quant_fp8: unsupported dtype {dtype} (float16, bfloat16, float32)")
    row_bytes = cols * torch.empty((), dtype=dtype).element_size()
    vec_bytes = next((w for w in (16, 8, 4, 2) if row_bytes % w == 0), 16)
    return _load(dtype, vec_bytes, is_static)


def per_tensor_quant_fp8(x: torch.Tensor, scale: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Quantize a 2-D CUDA tensor to float8_e4m3fn; returns ``(out, scale)`` (scale: ``[1]`` float32).

    With ``scale`` given the quantization is static (the scale is only read).
    """
    out = torch.empty(x.shape, dtype=torch.float8_e4m3fn, device=x.device)
    is_static = scale is not None
    if scale is None:
        scale = torch.zeros(1, dtype=torch.float32, device=x.device)
    _jit_quant_module(x.dtype, is_static, x.shape[-1]).per_tensor_quant_fp8(out, x, scale)
    return out, scale
