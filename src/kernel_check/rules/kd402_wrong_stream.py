"""## What it does
Calls the kernel under a non-default stream right behind a delaying kernel that writes
the inputs late. A kernel that runs on its own or the default stream does not wait for it
and reads stale inputs.

## Why is this bad?
Frameworks order work by streams: a kernel that ignores the caller's stream races with
the work before and after it (and breaks CUDA-graph capture).

## Example
```cpp
LaunchKernel(grid, block, cudaStream_t{nullptr})(kernel, args...);
```

## Use instead
Launch with `LaunchKernel(grid, block, device)`, which resolves the caller's current
stream through TVM-FFI.
"""
