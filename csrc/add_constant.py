"""add_constant: dst = src + constant (minimal reference kernel).

Build-check manifest
--------------------
Every wrapper module in csrc/ declares, as module-level literals (readable with
``ast.literal_eval``, no import needed):

``CUDA_FILES``
    The ``.cuh`` files the module includes, relative to ``csrc/``, in order.
``INSTANTIATIONS``
    ``(export_name, cpp_symbol)`` pairs. Each pair is one complete template-id that
    ``build_jit(<marker>, cuda_files=CUDA_FILES, cuda_wrappers=[pair])`` must compile;
    export names repeat across pairs (they are what the wrapper calls at run time),
    so to compile several pairs in one translation unit, give each a unique export
    name first. The list covers every dtype and flag the wrapper can pick.
``EXTRA_CUDA_CFLAGS`` (optional, default ``[]``)
    Extra nvcc flags the wrapper passes to ``load_jit``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from kernel_check.runtime import cache_once, load_jit, make_cpp_args

if TYPE_CHECKING:
    from tvm_ffi.module import Module

CUDA_FILES = ["add_constant.cuh"]
INSTANTIATIONS = [
    ("add_constant", "add_constant<int32_t, 1>"),
    ("add_constant", "add_constant<fp32_t, 1>"),
]
EXTRA_CUDA_CFLAGS: list[str] = []


@cache_once
def _jit_add_constant_module(dtype: torch.dtype, constant: int) -> Module:
    if dtype not in (torch.int32, torch.float32):
        raise RuntimeError(f"add_constant: unsupported dtype {dtype} (int32, float32)")
    args = make_cpp_args(dtype, int(constant))
    return load_jit(
        "add_constant",
        *args,
        cuda_files=CUDA_FILES,
        cuda_wrappers=[("add_constant", f"add_constant<{args}>")],
    )


def add_constant(src: torch.Tensor, constant: int = 1) -> torch.Tensor:
    """Return ``src + constant`` (1-D CUDA tensor, int32 or float32)."""
    out = torch.empty_like(src)
    _jit_add_constant_module(src.dtype, constant).add_constant(out, src)
    return out
