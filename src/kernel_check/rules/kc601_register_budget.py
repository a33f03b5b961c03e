"""## What it does
Reads ptxas's per-kernel report (`-Xptxas -v`) of every built instantiation and reports a
kernel that uses more registers per thread than the budget: 64 by default,
`register-budget` and `register-budget-per-kernel` in `[tool.kernel-check]`, or
`register_budget` in the kernel's spec (a number, or per kernel name).

## Why is this bad?
Registers per thread bound how many warps an SM can hold. A memory-bound kernel needs many
warps in flight to hide memory latency; above about 64 registers occupancy, and with it
bandwidth, drops.

## Example
```text
ptxas info : Used 96 registers, 392 bytes cmem[0]   (rmsnorm_kernel<bf16_t, 8192>)
```

## Use instead
Recompute values instead of keeping them live, split the work over more threads, or cap
the count with `__launch_bounds__`; raise the budget for the kernel in the spec or the
config when the extra registers are worth it.
"""
