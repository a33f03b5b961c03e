"""## What it does
Runs each case three times on identical inputs and compares the outputs bitwise, unless
the spec declares `deterministic=False`. Outputs the spec canonicalizes (an order the kernel
does not fix, `canonicalize={"out": "sort"}`) are compared in their canonical form.

## Why is this bad?
Run-to-run differences (the order of floating-point atomics, a race) make results
irreproducible, break bitwise regression tests and hide real races.

## Example
```cpp
atomicAdd(&out[0], partial);  // the order of additions depends on scheduling
```

## Use instead
Reduce in a fixed order (per-block partial sums, then one ordered final pass), or declare
the kernel nondeterministic in its spec when that is intended.
"""
