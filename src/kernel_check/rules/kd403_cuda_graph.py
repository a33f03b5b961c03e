"""## What it does
Captures one call in a CUDA graph, replays it on new input values and compares the
output with an eager call on the same values.

The comparison is the one of every ordered run (docs/harness.md, "How the ordered runs are
judged"): with plain launches of the same inputs, the kernel's own noise and never-written
elements left out, and a difference reported only when it shows twice.

## Why is this bad?
Serving stacks capture decode steps in CUDA graphs. A launcher that uses another stream,
synchronizes, allocates with `cudaMalloc` or bakes host-side values into the launch
breaks capture or replays stale values.

## Example
```cpp
CHECK_CUDA(cudaStreamSynchronize(stream));  // not allowed while capturing
```

## Use instead
Keep launchers capture-safe: the caller's stream only, no synchronization, scratch
memory from `alloc_workspace_tensor`, every per-call value passed as a kernel argument
read at run time.
"""
