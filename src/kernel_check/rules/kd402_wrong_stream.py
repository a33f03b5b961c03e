"""## What it does
Calls the kernel under a non-default stream right behind a delaying kernel that writes
the inputs late. A kernel that runs on its own or the default stream does not wait for it
and reads stale inputs.

The comparison is the one of every ordered run (docs/harness.md, "How the ordered runs are
judged"): with plain launches of the same inputs, the kernel's own noise and never-written
elements left out, and a difference reported only when it shows twice.

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
