"""## What it does
Snapshots every input (role `IN`) before the calls and compares it bitwise afterwards.

## Why is this bad?
A kernel that writes into its inputs corrupts the caller's tensors (activations, caches)
in ways that show up far away from the kernel.

## Example
```cpp
x[i] = x[i] * rstd;  // x was declared read-only; the result belonged in out
```

## Use instead
Write results only to outputs, or declare the tensor `Role.INPLACE` when in-place is the
contract.
"""
