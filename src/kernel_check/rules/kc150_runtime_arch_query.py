"""## What it does
Flags run-time queries of the GPU architecture: `get_cc_major`, `get_cc_minor`,
`get_sm_version`, `cudaGetDeviceProperties`, and `cudaDeviceGetAttribute` (or the driver's
`cuDeviceGetAttribute`) asked for the compute capability. A query whose answer is read only
to refuse a device (the condition of a check that fails, and its message: `major == 10 &&
(minor == 0 || minor == 3)` for a module built for the `sm_100f` family, which no compile-time
arch macro can tell apart) is a precondition, not a code path, and is not reported.

## Why is this bad?
JIT kernels are compiled for the exact GPU they run on, so the architecture is a
compile-time fact: `SGL_CUDA_ARCH` is injected by the build and
`SGL_ARCH_HOPPER_OR_GREATER`, `SGL_ARCH_BLACKWELL_OR_GREATER` and `device::kMaxVecBytes`
derive from it. A run-time query costs a driver call, can disagree with the code that was
actually compiled, and hides arch-specific paths from the compiler. (The SM count is
different: it varies within an arch, so `runtime::get_sm_count` stays a run-time query.)

## Example
```cpp
inline void launch(tvm::ffi::TensorView out) {
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, out.device().device_id));
  const bool wide = prop.major >= 10;
}
```

## Use instead
```cpp
inline void launch(tvm::ffi::TensorView out) {
  constexpr bool wide = SGL_ARCH_BLACKWELL_OR_GREATER;
}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from kernel_check.finding import Finding
from kernel_check.model import ApiCall
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._common import location_of
from kernel_check.semantic import SemanticModel

_ARCH_FUNCTIONS = frozenset({"get_cc_major", "get_cc_minor", "get_sm_version"})
_PROPERTY_QUERIES = frozenset({"cudaGetDeviceProperties", "cudaGetDeviceProperties_v2"})
_ATTRIBUTE_QUERIES = frozenset({"cudaDeviceGetAttribute", "cuDeviceGetAttribute"})
_ARCH_ATTRIBUTES = frozenset(
    {
        "cudaDevAttrComputeCapabilityMajor",
        "cudaDevAttrComputeCapabilityMinor",
        "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR",
        "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR",
    }
)


def _what(call: ApiCall) -> str | None:
    """Why the call is an arch query, or None."""
    if call.function_name in _ARCH_FUNCTIONS:
        return None  # the query helper's own definition
    if call.name in _ARCH_FUNCTIONS or call.name in _PROPERTY_QUERIES:
        return f"`{call.name}` queries the architecture at run time"
    attributes = _ARCH_ATTRIBUTES.intersection(call.argument_names)
    if call.name in _ATTRIBUTE_QUERIES and attributes:
        return f"`{call.name}({min(attributes)})` queries the architecture at run time"
    return None


@rule("KC150", needs={Need.INTERFACE})
def check(model: SemanticModel, ctx: RuleContext) -> Iterator[Finding]:
    for call in model.launcher_facts.api_calls:
        what = _what(call)
        if what is not None and not call.output_only_refuses:
            yield ctx.finding(
                location_of(model, call.span),
                f"{what}; the JIT build compiles for one architecture, so use `SGL_CUDA_ARCH` "
                "and the flags derived from it (`SGL_ARCH_HOPPER_OR_GREATER`, `device::kMaxVecBytes`...)",
            )
