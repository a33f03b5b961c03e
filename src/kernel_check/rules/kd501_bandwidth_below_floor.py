"""## What it does
Advisory. For specs marked `memory_bound`, times the kernel at a large shape with CUDA
events (alone on the GPU) and compares the bytes it moves per second with a
device-to-device copy measured on the same GPU. Reports when it reaches less than the
floor (`--bandwidth-floor`, default 0.8). A shape whose call moves less than 64 MiB
(about a GPU's L2) is not judged: its figure would be the cache's or the launch latency's;
the summary shows `n/a` there.

## Why is this bad?
A memory-bound kernel far below the copy bandwidth leaves performance on the table:
usually scalar accesses, too few bytes in flight, or low occupancy.

## Example
```cpp
dst[i] = src[i] * factor;  // 4-byte accesses, one element per thread
```

## Use instead
Vectorize (`AlignedVector` of 16 bytes), give each thread several vectors, and keep
registers within budget.
"""
