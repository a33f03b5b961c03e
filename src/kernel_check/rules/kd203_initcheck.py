"""## What it does
Runs the small cases under `compute-sanitizer --tool initcheck` (outputs left
uninitialized, `PYTORCH_NO_CUDA_MEMORY_CACHING=1`) and reports reads of global memory that
nothing wrote.

## Why is this bad?
A read of uninitialized memory returns whatever the allocation held before: results that
change from run to run and between test and production.

## Example
```cpp
dst[i] += src[i] * factor;  // dst is an output, never initialized
```

## Use instead
Assign outputs instead of accumulating into them, or zero the buffer explicitly first.
"""
