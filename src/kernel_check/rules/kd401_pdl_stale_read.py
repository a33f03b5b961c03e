"""## What it does
For instantiations launched with PDL, runs a producer kernel right before the kernel on
the same stream: it lets its dependents start at once, waits, and only then writes the
real inputs. A kernel that reads them before `PDLWaitPrimary` sees stale values.

The producer runs few blocks (so the kernel finds free SMs), spins on the GPU clock, and the
case repeats; a canary kernel first checks that PDL launches really overlap on the device,
and where they do not, a pass is reported as inconclusive.

The comparison is the one of every ordered run (docs/harness.md, "How the ordered runs are
judged"): with plain launches of the same inputs, the kernel's own noise and never-written
elements left out, and a difference reported only when it shows twice.

## Why is this bad?
With PDL the kernel starts while its predecessor is still running: any read of the
predecessor's output before the wait is a race that ordinary tests (where the
predecessor finished long ago) never show.

The race can also hide from this check: a load through a `const T* __restrict__` becomes
`ld.global.nc`, and ptxas may then move `griddepcontrol.wait` above it (seen on sm_90: the
wait came first in the SASS). The binary is then accidentally correct, and a later compiler
or a small edit brings the race back. Keep the wait first in the source whatever the SASS shows.

## Example
```cpp
float x = src[i];
device::PDLWaitPrimary<kUsePDL>();
```

## Use instead
Move every read of upstream data after `PDLWaitPrimary`; keep only independent work
(indices, parameters, buffers the predecessor never writes) before it.
"""
