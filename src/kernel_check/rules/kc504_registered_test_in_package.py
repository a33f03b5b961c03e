"""## What it does
Checks for `register_*_ci(...)` calls in files under the package source root
(`python/sglang/` by default): a registered CI test inside the importable package.

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
- `registered-tests-root`: where registered tests belong, named in the message
  (default `"test/registered/"`).
"""

from __future__ import annotations

from collections.abc import Iterator

from kernel_check.finding import Finding
from kernel_check.pymodel import PyModel, path_under
from kernel_check.registry import RuleContext, rule


@rule("KC504")
def check(model: PyModel, ctx: RuleContext) -> Iterator[Finding]:
    if not path_under(ctx.rel_path, ctx.options["package-root"]):
        return
    tests_root = ctx.options["registered-tests-root"]
    for call in model.calls:
        if call.is_ci_registration:
            yield ctx.finding(
                call.span.location(ctx.path),
                f"`{call.name}(...)` in the package source tree; move this test under `{tests_root}`",
            )
