"""## What it does
Runs the spec's small cases under `compute-sanitizer --tool memcheck` with a `-lineinfo`
build and `PYTORCH_NO_CUDA_MEMORY_CACHING=1`, and reports each distinct error with the
kernel, the access and the source line.

## Why is this bad?
An out-of-bounds access by a few elements usually lands inside the caching allocator's
slab and corrupts a neighbouring tensor instead of faulting: wrong results somewhere
else, later.

## Example
```cpp
const int64_t bound = (n + 7) / 8 * 8;  // rounds up past the end
if (i < bound) dst[i] = src[i];
```

## Use instead
Bound every access by the real size (`i < n`), and handle the tail separately from the
vectorized body.
"""
