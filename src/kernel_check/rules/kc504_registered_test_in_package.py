"""## What it does
Checks for `register_*_ci(...)` calls in files under the package source root
(`python/sglang/` by default): a registered CI test inside the importable package.

Only in a tree that keeps its registered tests apart: the registered-tests tree
(`registered-tests-root`, `test/registered/` by default) exists in the checked file's
directory or one above it (the project root's among them); the message names it. A tree
without one (code written before the convention) gets no finding: there is nowhere to move
the test to.
`conventions = { KC504 = "on" }` (or `"off"`) decides it instead of the detection.

## Why is this bad?
Registered tests and benchmarks live in the registered-tests tree (`test/registered/` by
default), mirroring the wrapper's group, where `test/run_suite.py` discovers them. A
registration inside the package ships test code in the package and is rejected by the
`check-no-registered-tests-in-package` pre-commit hook. Only test-only helpers such as the
benchmark `marker` framework stay in the package.

## Example
```python
# python/sglang/kernels/ops/elementwise/test_scale.py
from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=30, stage="base-b-kernel-unit", runner_config="1-gpu-large")
```

## Use instead
```python
# test/registered/kernels/ops/elementwise/test_scale.py
from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=30, stage="base-b-kernel-unit", runner_config="1-gpu-large")
```

## Options
- `package-root`: the package source root, relative to the project root
  (default `"python/sglang/"`).
- `registered-tests-root`: where registered tests belong; its existence is the detection
  (default `"test/registered/"`).
- `conventions`: `{ KC504 = "on" }` or `"off"` overrides the detection.
"""

from __future__ import annotations

from collections.abc import Iterator

from kernel_check.conventions import FORCED, project_convention
from kernel_check.finding import Finding
from kernel_check.pymodel import PyModel, path_under
from kernel_check.registry import RuleContext, rule


@rule("KC504")
def check(model: PyModel, ctx: RuleContext) -> Iterator[Finding]:
    if not path_under(ctx.rel_path, ctx.options["package-root"]):
        return
    registrations = [call for call in model.calls if call.is_ci_registration]
    tests_root = project_convention("KC504", ctx.path, ctx.root, ctx.options) if registrations else ""
    if not tests_root:
        return  # the tree keeps no registered-tests tree: nowhere to move the test to
    if tests_root == FORCED:
        where = f"`{ctx.options['registered-tests-root']}` (the convention {FORCED} turns on)"
    else:
        where = f"{tests_root}, where this tree's registered tests live"
    for call in registrations:
        yield ctx.finding(
            call.span.location(ctx.path),
            f"`{call.name}(...)` in the package source tree; move this test under {where}",
        )
