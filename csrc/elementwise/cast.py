"""cast: dtype conversion to fp8 e4m3 (saturating at +-448) and back (see add_constant.py for the manifest)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from kernel_check.runtime import cache_once, is_arch_support_pdl, load_jit, make_cpp_args

if TYPE_CHECKING:
    from tvm_ffi.module import Module

CUDA_FILES = ["elementwise/cast.cuh"]
INSTANTIATIONS = [
    ("cast", "cast<fp32_t, fp8_e4m3_t, true>"),
    ("cast", "cast<fp16_t, fp8_e4m3_t, true>"),
    ("cast", "cast<bf16_t, fp8_e4m3_t, true>"),
    ("cast", "cast<fp8_e4m3_t, fp32_t, true>"),
    ("cast", "cast<fp8_e4m3_t, fp16_t, true>"),
    ("cast", "cast<fp8_e4m3_t, bf16_t, true>"),
    ("cast", "cast<fp32_t, fp8_e4m3_t, false>"),
    ("cast", "cast<fp16_t, fp8_e4m3_t, false>"),
    ("cast", "cast<bf16_t, fp8_e4m3_t, false>"),
    ("cast", "cast<fp8_e4m3_t, fp32_t, false>"),
    ("cast", "cast<fp8_e4m3_t, fp16_t, false>"),
    ("cast", "cast<fp8_e4m3_t, bf16_t, false>"),
]
EXTRA_CUDA_CFLAGS: list[str] = []

_FLOATS = (torch.float32, torch.float16, torch.bfloat16)


@cache_once
def _jit_cast_module(src_dtype: torch.dtype, dst_dtype: torch.dtype) -> Module:
    fp8 = torch.float8_e4m3fn
    if not ((src_dtype in _FLOATS and dst_dtype == fp8) or (src_dtype == fp8 and dst_dtype in _FLOATS)):
        raise RuntimeError(f"cast: unsupported conversion {src_dtype} -> {dst_dtype}")
    args = make_cpp_args(src_dtype, dst_dtype, is_arch_support_pdl())
    return load_jit("cast", *args, cuda_files=CUDA_FILES, cuda_wrappers=[("cast", f"cast<{args}>")])


def cast(src: torch.Tensor, dtype: torch.dtype = torch.float8_e4m3fn) -> torch.Tensor:
    """Convert a 1-D CUDA tensor to ``dtype`` (float -> float8_e4m3fn saturating, or back)."""
    out = torch.empty(src.shape, dtype=dtype, device=src.device)
    _jit_cast_module(src.dtype, dtype).cast(out, src)
    return out
