"""## What it does
Runs every instantiation over the spec's shape grid (tails 1, 127, 4097 and shapes that
are not multiples of the vector width included) and compares each output with the spec's
PyTorch reference, with `torch.testing.assert_close`'s rule and per-dtype tolerances. The
finding reports the number of bad elements, the max absolute and relative error and the
first bad index.

## Why is this bad?
A kernel that is right on the shapes its author tried and wrong on a tail, a stride or a
dtype gives silently wrong model output.

## Example
```cpp
for (int64_t i = num_vecs * kVec + tid; i < n; i += stride) {
  dst[i] = src[i];  // the tail forgets the factor
}
```

## Use instead
Apply the same computation on the vectorized body and the scalar tail; test the tails
(`TAILS` in the spec grid).
"""
