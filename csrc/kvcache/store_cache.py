"""store_cache: k_cache[indices[t]] = k[t], v_cache[indices[t]] = v[t] (see add_constant.py for the manifest).

The number of warps per row (``num_split``) is a template argument; the module
factory picks it from the row size: rows of 4 KiB or more are split across more
warps so that every lane still moves whole 16-byte vectors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from kernel_check.runtime import cache_once, is_arch_support_pdl, load_jit, make_cpp_args

if TYPE_CHECKING:
    from tvm_ffi.module import Module

CUDA_FILES = ["kvcache/store_cache.cuh"]
INSTANTIATIONS = [
    ("store_cache", "store_cache<bf16_t, 1024, 1, int64_t, true>"),
    ("store_cache", "store_cache<fp16_t, 4096, 4, int64_t, true>"),
    ("store_cache", "store_cache<fp32_t, 1024, 2, int32_t, false>"),
    ("store_cache", "store_cache<fp8_e4m3_t, 576, 1, int64_t, false>"),
    ("store_cache", "store_cache<bf16_t, 127, 1, int32_t, true>"),
    ("store_cache", "store_cache<fp16_t, 1, 1, int64_t, false>"),
]
EXTRA_CUDA_CFLAGS: list[str] = []

_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float8_e4m3fn)
_INDEX_DTYPES = (torch.int32, torch.int64)


def choose_num_split(row_bytes: int) -> int:
    """Warps per row: 1 below 2 KiB, then 2 / 4 while the split keeps 16-byte vectors per lane."""
    for split in (4, 2):
        if row_bytes >= 2048 * split and row_bytes % (split * 16 * 32) == 0:
            return split
    return 1


@cache_once
def _jit_store_cache_module(dtype: torch.dtype, row_size: int, index_dtype: torch.dtype) -> Module:
    if dtype not in _DTYPES:
        raise RuntimeError(f"store_cache: unsupported dtype {dtype}")
    if index_dtype not in _INDEX_DTYPES:
        raise RuntimeError(f"store_cache: unsupported index dtype {index_dtype} (int32, int64)")
    num_split = choose_num_split(row_size * torch.empty((), dtype=dtype).element_size())
    args = make_cpp_args(dtype, row_size, num_split, index_dtype, is_arch_support_pdl())
    return load_jit(
        "store_cache", *args, cuda_files=CUDA_FILES, cuda_wrappers=[("store_cache", f"store_cache<{args}>")]
    )


def store_cache(
    k: torch.Tensor, v: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, indices: torch.Tensor
) -> None:
    """Write rows ``k[t]``/``v[t]`` (``[tokens, row]``) into cache rows ``indices[t]`` in place."""
    _jit_store_cache_module(k.dtype, k.shape[-1], indices.dtype).store_cache(k, v, k_cache, v_cache, indices)
