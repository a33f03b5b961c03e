"""## What it does
Each case has a timeout (`--timeout`, default 60 s). A child that shows no progress for
that long is killed with its process group, the rest of that instantiation is skipped,
and the run continues with the other kernels.

## Why is this bad?
A kernel that never finishes (a spin-wait on a flag nobody sets, a barrier some threads
never reach, a loop whose bound overflowed) hangs the whole process that launched it.

## Example
```cpp
while (atomicAdd(&flag, 0) == 0) {}  // the producer of `flag` is this same kernel's later block
```

## Use instead
Make every wait's condition reachable by the threads that can run concurrently, and bound
loops by the real sizes.
"""
