"""## What it does
Checks that every `test_*.py` and `bench_*.py` under the registered-tests root
(`test/registered/` by default) has a module-level CI registration: a `register_cuda_ci(...)`
statement, or one of its siblings for other runners (`register_amd_ci`, `register_cpu_ci`,
`register_npu_ci`...), which CI's collector accepts alike. A registration inside
`if __name__ == "__main__":`, another `if`, a `try` or a function does not count, nor does
one spelled through an alias. The finding is on line 1; related locations point at
registrations that CI does not see.

## Why is this bad?
`test/run_suite.py` collects registrations by parsing each file and reading only the
`register_*_ci(...)` statements of the module body. A file without one is never scheduled
on a CUDA runner, and the collector's sanity check fails the suite.

## Example
```python
import pytest
import torch

from sglang.kernels.ops.elementwise.scale import scale
from sglang.test.ci.ci_register import register_cuda_ci


def test_scale():
    src = torch.randn(128, device="cuda")
    torch.testing.assert_close(scale(src, 2.0), src * 2.0)


if __name__ == "__main__":
    register_cuda_ci(est_time=30, stage="base-b-kernel-unit", runner_config="1-gpu-large")
    pytest.main([__file__])
```

## Use instead
```python
import pytest
import torch

from sglang.kernels.ops.elementwise.scale import scale
from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=30, stage="base-b-kernel-unit", runner_config="1-gpu-large")


def test_scale():
    src = torch.randn(128, device="cuda")
    torch.testing.assert_close(scale(src, 2.0), src * 2.0)


if __name__ == "__main__":
    pytest.main([__file__])
```

## Options
- `registered-tests-root`: the registered-tests root, relative to the project root
  (default `"test/registered/"`).
"""

from __future__ import annotations

from collections.abc import Iterator
from fnmatch import fnmatch
from pathlib import PurePosixPath

from kernel_check.finding import Finding, Location, Related
from kernel_check.pymodel import Call, PyModel, path_under
from kernel_check.registry import RuleContext, rule

_HELPER = "register_cuda_ci"
_REGISTERED_FILES = ("test_*.py", "bench_*.py")


def _collected(call: Call) -> bool:
    """Whether CI's collector sees `call`: a module statement spelled `register_<runner>_ci(...)`
    (a test registered only for AMD or CPU runners is collected all the same)."""
    return call.is_module_statement and call.written == call.name


@rule("KC506")
def check(model: PyModel, ctx: RuleContext) -> Iterator[Finding]:
    name = PurePosixPath(ctx.rel_path).name
    if not any(fnmatch(name, pattern) for pattern in _REGISTERED_FILES):
        return
    if not path_under(ctx.rel_path, ctx.options["registered-tests-root"]):
        return
    registrations = [call for call in model.calls if call.is_ci_registration]
    if any(_collected(call) for call in registrations):
        return
    yield ctx.finding(
        Location(ctx.path, 1, 1),
        f"no module-level `{_HELPER}(...)`; add one so CI runs this file",
        related=[
            Related(call.span.location(ctx.path), "CI does not collect this registration") for call in registrations
        ],
    )
