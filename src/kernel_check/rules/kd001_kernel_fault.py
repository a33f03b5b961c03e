"""## What it does
Runs the kernel on the valid inputs its spec describes, in a child process; when the
CUDA context reports a sticky error (an illegal or misaligned address, an illegal
instruction, a trap) or the process dies, the case is reported with the error, and the
run continues with the other kernels. The rest of that instantiation's checks are skipped,
except the bad-input checks.

## Why is this bad?
A fault poisons the whole CUDA context: every later CUDA call in the process fails, so
one bad kernel takes down the serving process that called it.

## Example
```cpp
float* out = reinterpret_cast<float*>(params.out);  // a host pointer passed by mistake
out[i] = x;  // an illegal memory access
```

## Use instead
Run `kernel-check test --sanitize memcheck` (or `kernel-check sanitize -- <command>`) to
get the faulting access with its source line, and fix the address computation.
"""
