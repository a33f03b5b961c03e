"""## What it does
Runs the smallest cases under `compute-sanitizer --tool racecheck`, filtered to the spec's
kernels, and reports each hazard (write-after-read, read-after-write, write-after-write)
with both source lines.

## Why is this bad?
A shared-memory race gives results that depend on warp scheduling: right on one GPU or
build, wrong on another.

## Example
```cpp
tile[threadIdx.x] = src[i];
dst[i] = tile[blockDim.x - 1 - threadIdx.x];  // another warp may not have written it yet
```

## Use instead
Put a `__syncthreads()` (or the right warp/named barrier) between the writes and the
reads of other threads' data.
"""
