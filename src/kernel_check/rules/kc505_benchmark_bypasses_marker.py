"""## What it does
Checks `bench_*.py` files for direct calls of `triton.testing.do_bench`,
`triton.testing.do_bench_cudagraph` (any `do_bench*`) or `triton.testing.perf_report`,
however they are imported (`from triton.testing import do_bench`,
`import triton.testing as tt`, an import inside the benchmark function...).

## Why is this bad?
Kernel benchmarks use the project's `marker` framework: `marker.do_bench` times under a
CUDA graph, clones the inputs per iteration so they are not L2-hot, and reports bandwidth,
while `@marker.parametrize(..., ci_vals)` shrinks the sweep under CI. A benchmark that
calls Triton's helpers directly skips all of that, and its numbers cannot be compared with
the other benchmarks'.

## Example
```python
import triton.testing


def benchmark(size: int, impl: str):
    src = create_random(size)
    return triton.testing.do_bench(lambda: FN_MAP[impl](src, 2.0))
```

## Use instead
```python
from sglang.kernels.jit.benchmark import marker


@marker.parametrize("size", [2**n for n in range(10, 20)], [4096, 65536])
@marker.benchmark("impl", ["jit", "torch"])
def benchmark(size: int, impl: str):
    src = create_random(size)
    return marker.do_bench(FN_MAP[impl], input_args=(src, 2.0), graph_clone_args=(0,))
```
"""

from __future__ import annotations

from collections.abc import Iterator
from fnmatch import fnmatch
from pathlib import PurePosixPath

from kernel_check.finding import Finding
from kernel_check.pymodel import PyModel
from kernel_check.registry import RuleContext, rule

# What to use instead of each Triton helper.
_MARKER_REPLACEMENT = {
    "do_bench": "`marker.do_bench`",
    "perf_report": "`@marker.benchmark` and `@marker.parametrize`",
}


def _triton_helper(callee: str | None) -> str | None:
    """`do_bench` or `perf_report` when `callee` is one of Triton's benchmark helpers."""
    module, _, name = (callee or "").rpartition(".")
    if module != "triton.testing":
        return None
    if name.startswith("do_bench"):
        return "do_bench"
    return "perf_report" if name == "perf_report" else None


@rule("KC505")
def check(model: PyModel, ctx: RuleContext) -> Iterator[Finding]:
    if not fnmatch(PurePosixPath(ctx.rel_path).name, "bench_*.py"):
        return
    for call in model.calls:
        if (helper := _triton_helper(call.callee)) is not None:
            yield ctx.finding(
                call.callee_span.location(ctx.path),
                f"`{call.callee}` bypasses the benchmark marker framework; use {_MARKER_REPLACEMENT[helper]}",
            )
