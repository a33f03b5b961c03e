"""## What it does
Checks `bench_*.py` files for direct calls of `triton.testing.do_bench`,
`triton.testing.do_bench_cudagraph` (any `do_bench*`) or `triton.testing.perf_report`,
however they are imported (`from triton.testing import do_bench`,
`import triton.testing as tt`, an import inside the benchmark function...).

Only in a tree that has the framework: the module `benchmark-marker` names
(`python/sglang/kernels/jit/benchmark/marker.py` by default) exists in the checked file's
directory or one above it (the project root's among them); the message names it. A tree
without it (code written before the framework existed, or another project) gets no finding:
there is nothing to use instead.
`conventions = { KC505 = "on" }` (or `"off"`) decides it instead of the detection.

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

## Options
- `benchmark-marker`: the framework's module, relative to the project root
  (default `"python/sglang/kernels/jit/benchmark/marker.py"`).
- `conventions`: `{ KC505 = "on" }` or `"off"` overrides the detection.
"""

from __future__ import annotations

from collections.abc import Iterator
from fnmatch import fnmatch
from pathlib import PurePosixPath

from kernel_check.conventions import FORCED, project_convention
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
    framework = ""  # looked up at the first call that needs it: most benchmarks have none
    for call in model.calls:
        if (helper := _triton_helper(call.callee)) is None:
            continue
        framework = framework or project_convention("KC505", ctx.path, ctx.root, ctx.options)
        if not framework:
            return  # the tree has no marker framework: nothing to use instead
        origin = f"the convention {FORCED} turns on" if framework == FORCED else f"this tree's {framework}"
        yield ctx.finding(
            call.callee_span.location(ctx.path),
            f"`{call.callee}` bypasses the benchmark marker framework ({origin}); use {_MARKER_REPLACEMENT[helper]}",
        )
