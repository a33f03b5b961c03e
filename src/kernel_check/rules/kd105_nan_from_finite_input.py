"""## What it does
Where no reference says what an input should give, runs the kernel on all-zero and on
all-equal values of one floating input (the `zeros` and `equal` value profiles under their
`safe` contract) and on the ordinary random values of the same sizes, and reports an output
that holds NaN after the former and none after the latter. A spec with a reference compares
these profiles with it instead (KD101).

## Why is this bad?
Zeros and ties are ordinary values (padding, an empty row, a constant activation). A NaN
they produce comes from a guard the kernel lacks, a norm of zero or a variance of zero
divided by, and spreads into every later result.

## Example
```cpp
float rstd = rsqrtf(sum_sq / d);  // an all-zero row: rsqrt(0) = inf, and 0 * inf = NaN
out[i] = x[i] * rstd;
```

## Use instead
Keep the guard that makes the degenerate input finite (`rsqrtf(sum_sq / d + eps)`, a
`d_sum > 0` test), or declare the profile's contract for the tensor in the spec
(`profiles={"zeros": "off"}`) when such values never reach the kernel.
"""
