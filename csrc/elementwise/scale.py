"""scale: dst = src * factor (see add_constant.py for the manifest format)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from kernel_check.runtime import cache_once, is_arch_support_pdl, load_jit, make_cpp_args

if TYPE_CHECKING:
    from tvm_ffi.module import Module

CUDA_FILES = ["elementwise/scale.cuh"]
INSTANTIATIONS = [
    ("scale", "scale<fp16_t, true>"),
    ("scale", "scale<fp16_t, false>"),
    ("scale", "scale<bf16_t, true>"),
    ("scale", "scale<bf16_t, false>"),
    ("scale", "scale<fp32_t, true>"),
    ("scale", "scale<fp32_t, false>"),
]
EXTRA_CUDA_CFLAGS: list[str] = []


@cache_once
def _jit_scale_module(dtype: torch.dtype) -> Module:
    if dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise RuntimeError(f"scale: unsupported dtype {dtype} (float16, bfloat16, float32)")
    args = make_cpp_args(dtype, is_arch_support_pdl())
    return load_jit("scale", *args, cuda_files=CUDA_FILES, cuda_wrappers=[("scale", f"scale<{args}>")])


def scale(src: torch.Tensor, factor: float, out: torch.Tensor | None = None) -> torch.Tensor:
    """Return ``src * factor`` for a 1-D CUDA tensor (float16, bfloat16, float32)."""
    if out is None:
        out = torch.empty_like(src)
    _jit_scale_module(src.dtype).scale(out, src, factor)
    return out
