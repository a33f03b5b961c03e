"""## What it does
Runs the small cases under `compute-sanitizer --tool synccheck` and reports divergent or
otherwise invalid uses of barriers (`__syncthreads` in divergent code, wrong masks in
`__syncwarp` or warp shuffles).

## Why is this bad?
A barrier that not all threads of the block reach is undefined behaviour: a hang, or a
barrier that silently does not order anything.

## Example
```cpp
if (threadIdx.x < n) {
  __syncthreads();  // threads past n never arrive
}
```

## Use instead
Reach every barrier from all threads of the block (hoist it out of the condition).
"""
