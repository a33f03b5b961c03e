"""## What it does
Reports every kernel for which ptxas reports spill stores or spill loads: values that did
not fit in registers and go through local memory.

## Why is this bad?
Local memory is off-chip: every spill is a global-memory round trip on the kernel's hot
path, usually far slower than recomputing the value.

## Example
```text
ptxas info : 128 bytes stack frame, 96 bytes spill stores, 96 bytes spill loads
```

## Use instead
Reduce live state (smaller per-thread arrays, fewer unrolled iterations, recompute
instead of caching), or give the kernel more registers with `__launch_bounds__`.
"""
