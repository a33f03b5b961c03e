"""## What it does
Checks `register_cuda_ci(...)` and the other `register_*_ci(...)` calls for anything CI's
collector cannot read without running the file:

- an argument that is not a plain literal (`est_time=EST_TIME`, `stage=f"..."`,
  `runner_config=RUNNERS[0]`, `suite=...`, any other argument too);
- `*args` or `**kwargs`;
- the helper called under another spelling: an import alias (`import ... as reg`), an alias
  assignment (`reg = register_cuda_ci`, `functools.partial(register_cuda_ci, ...)`), or an
  attribute (`ci_register.register_cuda_ci(...)`);
- the helper called through a wrapper, a function of the same file that registers (directly
  or through another wrapper).

## Why is this bad?
CI never imports a test file to find out where it runs: `test/run_suite.py` parses each
file and reads the module-level `register_*_ci(...)` statements, matching the helper by its
bare name and taking each argument only if it is a constant. A computed value, a starred
argument, an alias or a wrapper either breaks collection for the whole suite or silently
drops the file (or the argument, such as `disabled=`) from CI.

## Example
```python
from sglang.test.ci.ci_register import register_cuda_ci

RUNNER = "1-gpu-large"
register_cuda_ci(est_time=30, stage="base-b-kernel-unit", runner_config=RUNNER)
```

## Use instead
```python
from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=30, stage="base-b-kernel-unit", runner_config="1-gpu-large")
```
"""

from __future__ import annotations

from collections.abc import Iterator

from kernel_check.finding import Finding
from kernel_check.pymodel import Argument, ArgumentKind, Call, PyModel
from kernel_check.registry import RuleContext, rule

# The positional parameters of the `register_*_ci` helpers, in order.
_POSITIONAL_PARAMETERS = ("est_time", "suite", "nightly", "disabled")


def _wrappers(model: PyModel) -> dict[str, str]:
    """Functions of this file that register, directly or through another wrapper.

    Maps each wrapper's name to the `register_*_ci` helper it ends up calling.
    """
    wrappers: dict[str, str] = {}
    grown = True
    while grown:
        grown = False
        for function in model.functions:
            if function.name in wrappers:
                continue
            helper = next(filter(None, (_registers(call, wrappers) for call in model.calls_in(function))), None)
            if helper is not None:
                wrappers[function.name] = helper
                grown = True
    return wrappers


def _registers(call: Call, wrappers: dict[str, str]) -> str | None:
    """The `register_*_ci` helper `call` reaches, directly or through a known wrapper."""
    if call.is_ci_registration:
        return call.name
    return wrappers.get(call.callee or "")


def _parameter(argument: Argument) -> str:
    """The parameter an argument binds: its keyword, or the name of its positional slot."""
    if argument.keyword is not None:
        return argument.keyword
    position = argument.position
    if position is not None and position < len(_POSITIONAL_PARAMETERS):
        return _POSITIONAL_PARAMETERS[position]
    return "positional argument"


def _argument_problem(argument: Argument, helper: str) -> str | None:
    if argument.kind in (ArgumentKind.STAR, ArgumentKind.DOUBLE_STAR):
        return f"`{argument.kind.value}` in `{helper}(...)`; pass each argument as a literal keyword"
    if not argument.is_literal:
        return f"non-literal `{_parameter(argument)}` in `{helper}(...)`; use a literal, CI reads it from the AST"
    return None


def _registration_findings(call: Call, ctx: RuleContext) -> Iterator[Finding]:
    helper = call.name or ""
    if call.written != helper:
        yield ctx.finding(
            call.callee_span.location(ctx.path),
            f"`{helper}` called as `{call.written}`; call `{helper}(...)` by its own name",
        )
    for argument in call.arguments:
        if (problem := _argument_problem(argument, helper)) is not None:
            yield ctx.finding(argument.span.location(ctx.path), problem)


@rule("KC503")
def check(model: PyModel, ctx: RuleContext) -> Iterator[Finding]:
    wrappers = _wrappers(model)
    for call in model.calls:
        if call.is_ci_registration:
            yield from _registration_findings(call, ctx)
        elif (helper := _registers(call, wrappers)) is not None:
            yield ctx.finding(
                call.callee_span.location(ctx.path),
                f"`{helper}` called through wrapper `{call.callee}`; call `{helper}(...)` directly at module level",
            )
