"""## What it does
Fills every output with a poison value before the call (NaN, then a different sentinel
on a second run) and reports output elements that still hold it afterwards where the
reference holds something else.

## Why is this bad?
An output element the kernel never writes holds whatever the allocator left there; with
PyTorch's caching allocator that is often a previous, plausible value, so the bug passes
ordinary tests.

## Example
```cpp
for (int64_t v = tid; v < n / 4; v += stride) store4(dst, v, load4(src, v) * factor);
// no scalar loop for the last n % 4 elements
```

## Use instead
Cover every element: add the scalar tail loop (or pad the vector loop with a bound
check).
"""
