"""## What it does
For instantiations launched with PDL, runs a producer kernel right before the kernel on
the same stream: it lets its dependents start at once, waits, and only then writes the
real inputs. A kernel that reads them before `PDLWaitPrimary` sees stale values.

## Why is this bad?
With PDL the kernel starts while its predecessor is still running: any read of the
predecessor's output before the wait is a race that ordinary tests (where the
predecessor finished long ago) never show.

## Example
```cpp
float x = src[i];
device::PDLWaitPrimary<kUsePDL>();
```

## Use instead
Move every read of upstream data after `PDLWaitPrimary`; keep only independent work
(indices, parameters, buffers the predecessor never writes) before it.
"""

from kernel_check.finding import Severity
from kernel_check.registry import Language, declare

declare("KD401", "pdl-stale-read", Severity.ERROR, Language.DYNAMIC,
        summary="with PDL, a result differs when the producer writes the inputs late",
        module=__name__)
