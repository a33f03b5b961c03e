"""## What it does
Calls the kernel with one argument made invalid at a time: a CPU tensor, a wrong dtype,
a wrong rank, a wrong shape, a non-contiguous view, a base pointer offset by one element
and a padded row stride that breaks the vector width (the last two for tensors the spec
marks vectorized). Each must raise a host-side error; being accepted, failing only with a
CUDA error, or faulting are all reported.

## Why is this bad?
A launcher that does not check its inputs turns a caller's mistake (a sliced cache, a
CPU tensor) into a misaligned-address fault or silently wrong results deep inside a
model.

## Example
```cpp
TensorMatcher({rows, cols}).with_strides({row_stride, 1}).verify(cache);  // no ensure_alignment
AlignedVector<fp16_t, 8> v; v.load(cache_row, j);  // a padded row faults here
```

## Use instead
Validate every tensor with `TensorMatcher` and end the chain of a vectorized tensor with
`.ensure_alignment(w)` for the width the kernel uses.
"""
