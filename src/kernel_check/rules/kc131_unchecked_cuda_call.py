"""## What it does
Flags a call of a `cuda*` runtime API function whose `cudaError_t` result is thrown away:
the call is a statement of its own instead of being wrapped in `CHECK_CUDA(...)` (or
`host::RuntimeDeviceCheck(...)`), assigned, returned or compared. An explicit `(void)`
cast is taken as a deliberate discard and not reported, and so is the result of a launch
(`cudaLaunchKernelEx`, `cudaLaunchKernel`) when a later statement of its block reads the
launch error (`CHECK(cudaPeekAtLastError())`, `return cudaGetLastError();`). The suggested wrapper is one the
header library on the include path has (`CHECK_CUDA`, else `host::RuntimeDeviceCheck`).

## Why is this bad?
CUDA reports failures only through these return values (and the sticky error state). A
failed `cudaMemsetAsync`, `cudaFuncSetAttribute` or `cudaStreamWaitEvent` that nobody
checks shows up much later as a wrong result or as an unrelated error in another kernel,
far from its cause.

## Example
```cpp
inline void zero(tvm::ffi::TensorView out) {
  cudaMemsetAsync(out.data_ptr(), 0, nbytes, host::get_stream(out.device()));
}
```

## Use instead
```cpp
inline void zero(tvm::ffi::TensorView out) {
  CHECK_CUDA(cudaMemsetAsync(out.data_ptr(), 0, nbytes, host::get_stream(out.device())))
      << "while zeroing the output";
}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from kernel_check.finding import Finding
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._common import location_of
from kernel_check.semantic import SemanticModel


@rule("KC131", needs={Need.INTERFACE})
def check(model: SemanticModel, ctx: RuleContext) -> Iterator[Finding]:
    for call in model.launcher_facts.api_calls:
        if call.name.startswith("cuda") and call.returns_cuda_error and call.result_use == "discarded":
            yield ctx.finding(
                location_of(model, call.span),
                f"the cudaError_t returned by `{call.name}` is discarded; {_advice(model)}",
            )


def _advice(model: SemanticModel) -> str:
    """The check that the user's header library offers."""
    for wrapper in ("CHECK_CUDA", "RuntimeDeviceCheck"):
        if model.header_library.provides(wrapper):
            spelled = f"{wrapper}(...)" if wrapper == "CHECK_CUDA" else f"host::{wrapper}(...)"
            return f"wrap the call in `{spelled}` so a failure surfaces here"
    return "compare it with `cudaSuccess` and throw with `cudaGetErrorString` so a failure surfaces here"
