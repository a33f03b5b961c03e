"""silu_and_mul / gelu_and_mul: out = act(x[..., :d]) * x[..., d:] (see add_constant.py for the manifest).

The vector width is a template argument the module factory picks from ``d``: the
largest of 16/8/4/2 bytes that divides a half row, so every ``d`` works and at
most four specialisations per dtype are ever built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from kernel_check.runtime import cache_once, is_arch_support_pdl, load_jit, make_cpp_args

if TYPE_CHECKING:
    from tvm_ffi.module import Module

CUDA_FILES = ["activation/act_and_mul.cuh"]
INSTANTIATIONS = [
    ("silu_and_mul", "silu_and_mul<fp16_t, 16, true>"),
    ("silu_and_mul", "silu_and_mul<bf16_t, 16, true>"),
    ("silu_and_mul", "silu_and_mul<fp32_t, 16, true>"),
    ("silu_and_mul", "silu_and_mul<fp16_t, 2, false>"),
    ("silu_and_mul", "silu_and_mul<bf16_t, 8, false>"),
    ("silu_and_mul", "silu_and_mul<fp32_t, 4, false>"),
    ("gelu_and_mul", "gelu_and_mul<fp16_t, 16, true>"),
    ("gelu_and_mul", "gelu_and_mul<bf16_t, 16, true>"),
    ("gelu_and_mul", "gelu_and_mul<fp32_t, 16, true>"),
    ("gelu_and_mul", "gelu_and_mul<fp16_t, 4, false>"),
    ("gelu_and_mul", "gelu_and_mul<bf16_t, 2, false>"),
    ("gelu_and_mul", "gelu_and_mul<fp32_t, 8, false>"),
]
EXTRA_CUDA_CFLAGS: list[str] = []

_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


@cache_once
def _load(name: str, dtype: torch.dtype, vec_bytes: int) -> Module:
    args = make_cpp_args(dtype, vec_bytes, is_arch_support_pdl())
    return load_jit(name, *args, cuda_files=CUDA_FILES, cuda_wrappers=[(name, f"{name}<{args}>")])


@cache_once
def _jit_act_module(name: str, dtype: torch.dtype, width: int) -> Module:
    """Module for an input of last dim ``width`` (= 2 * d); picks the vector width once per shape."""
    if dtype not in _DTYPES:
        raise RuntimeError(f"{name}: unsupported dtype {dtype} (float16, bfloat16, float32)")
    half_bytes = (width // 2) * torch.empty((), dtype=dtype).element_size()
    vec_bytes = next((w for w in (16, 8, 4, 2) if half_bytes % w == 0), 16)
    return _load(name, dtype, vec_bytes)


def silu_and_mul(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """``silu(x[:, :d]) * x[:, d:]`` for a 2-D CUDA tensor ``x`` of shape ``[rows, 2 * d]``."""
    if out is None:
        out = x.new_empty(x.shape[:-1] + (x.shape[-1] // 2,))
    _jit_act_module("silu_and_mul", x.dtype, x.shape[-1]).silu_and_mul(out, x)
    return out


def gelu_and_mul(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """``gelu(x[:, :d]) * x[:, d:]`` (exact GELU) for a 2-D CUDA tensor ``x`` of shape ``[rows, 2 * d]``."""
    if out is None:
        out = x.new_empty(x.shape[:-1] + (x.shape[-1] // 2,))
    _jit_act_module("gelu_and_mul", x.dtype, x.shape[-1]).gelu_and_mul(out, x)
    return out
