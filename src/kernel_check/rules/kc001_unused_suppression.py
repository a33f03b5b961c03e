"""## What it does
Reports a `kernel-check: ignore[...]` or `ignore-file[...]` comment that suppresses
nothing in this run, that names a code kernel-check does not know, or that names no code
at all: a bare `kernel-check: ignore` (or `ignore-file`, or empty brackets) is no blanket
suppression, it suppresses nothing.

## Why is this bad?
Stale suppressions accumulate as code changes and later hide a real finding on the same
line; a misspelled code, or none, suppresses nothing at all while looking as if it did.

## Example
```cpp
const float* __restrict__ src,  // kernel-check: ignore[KC101]
const float* bias,  // kernel-check: ignore
```

## Use instead
Delete the comment once the finding it was written for is gone, and name the codes a
suppression is for:
```cpp
const float* __restrict__ src,
const float* bias,  // kernel-check: ignore[KC101]
```
"""
