"""## What it does
Reports a `kernel-check: ignore[...]` or `ignore-file[...]` comment that suppresses
nothing in this run, or that names a code kernel-check does not know.

## Why is this bad?
Stale suppressions accumulate as code changes and later hide a real finding on the same
line; a misspelled code suppresses nothing at all while looking as if it did.

## Example
```cpp
const float* __restrict__ src,  // kernel-check: ignore[KC101]
```

## Use instead
Delete the comment once the finding it was written for is gone:
```cpp
const float* __restrict__ src,
```
"""
