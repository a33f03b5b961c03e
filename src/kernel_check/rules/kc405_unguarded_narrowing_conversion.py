"""## What it does
Flags a conversion with no saturation of its own whose value comes from a tensor's element
-- through arithmetic, with no clamp and no guard on the way -- and can therefore be NaN, or
past the range of the type it is converted to:

- a floating value converted to an integer type (`(int8_t)roundf(x * scale)`,
  `static_cast<int>(v)`, `int8_t q = v;`);
- an integer that `__float2int_rn` (or another `__float2int_*`, `__float2uint_*`,
  `__float2ll_*`) saturated to 32 or 64 bits, narrowed further (`(int8_t)__float2int_rn(v)`);
- an fp8 conversion called with `__NV_NOSAT` (`__nv_cvt_float_to_fp8(v, __NV_NOSAT,
  __NV_E4M3)` and the other `__nv_cvt_*_to_fp8*`);
- PyTorch's `c10::Float8_e4m3fn(v)` (and `Float8_e5m2`, the `fnuz` types), which do not
  saturate either.

A value counts when it is read from memory through a pointer (a tensor's element: the
kernel's contract bounds its shape and dtype, never its values; a device function's pointer
or array parameter counts as memory too) and only arithmetic lies between the read and the
conversion (`+ - * /`, rounding, `fabsf`, conversions between floating formats, a local
variable, array or vector holding it, a `load` call's result, `make_float2` and braced
vectors, a device function it is passed to or returned from, defined in the same file or in
a header of the project it includes). A floating output of inline assembly counts too when
the instruction loads from global memory (`ld.global.nc.f32`) or is a matrix
multiply-accumulate (`mma.sync`, `wgmma`): the accumulator of a product of tensors
overflows to inf and carries NaN as surely as an element read does -- also where a helper's
`asm` writes it through a reference parameter (`mma(acc, a, b)` with `float (&d)[4]`), into
the local the caller hands it. A conversion helper's floating parameter counts as well (a
device function taking a float by value and returning an integer of at most 16 bits or an
fp8/fp4 byte, `int8_t to_int8(float x)`) when no call in the file reaches it: its callers
are in other files, and whatever they pass it must clamp itself. It is bounded by
`fminf`/`fmaxf`, `min`/`max`, `clamp`, `__saturatef`, `tanhf` -- a clamp to both ends of the
target's range is the fix; a clamp to one end still lets the other through. A finding names
the read it comes from and, for a conversion inside a helper, the call that passes the value
in; a conversion inside a function of an included header is reported at the file's call
that leads there, naming the header's line.

Never a finding: the saturating conversions (the CUDA fp8 and fp4 types' constructors,
`__NV_SATFINITE`, CUTLASS's `float_e4m3_t`, `cvt...satfinite` in inline assembly: fp4 has
no conversion without saturation), conversions to `__half` or `__nv_bfloat16`, casts
between integer types whose value did not come from a float, compile-time constants and
values built from integers (index arithmetic), a value any earlier condition of the function
tests (`if (isnan(v))`, a loop bound, a `?:` comparing it: a guard the walk does not
evaluate), a value that goes through something the walk does not follow (a call of an
unknown function or of a system header's, a member of a params struct, shared memory,
inline assembly that computes rather than loads or accumulates -- `ex2.approx`, `max.f32`,
`ld.shared` -- and asm outputs of integer type), and
conversions to a type a template leaves dependent (`static_cast<T>(v)`: which type is not
known).

## Why is this bad?
Converting a float that is out of range, or NaN, to an integer is undefined behaviour in
C++: on the GPU `(int8_t)` of 300.0f wraps to 44 or saturates depending on the instruction
the compiler picks, and NaN becomes 0 or -128 -- a quantized tensor silently holds garbage.
`__NV_NOSAT` turns a value past 448 into NaN in e4m3 (which has no infinity) and into inf
in e5m2: one outlier activation poisons the whole row once it is dequantized. The inputs
that trigger it (an outlier, an inf from an earlier overflow, a scale of zero) are ones the
kernel's contract lets in.

## Example
```cpp
__global__ void quantize_int8(int8_t* out, const float* x, float inv_scale, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = static_cast<int8_t>(roundf(x[i] * inv_scale));
}
```

## Use instead
```cpp
__global__ void quantize_int8(int8_t* out, const float* x, float inv_scale, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = static_cast<int8_t>(fminf(fmaxf(roundf(x[i] * inv_scale), -128.f), 127.f));
}
```
For fp8, pass `__NV_SATFINITE` (or construct `__nv_fp8_e4m3`, which saturates).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from kernel_check import witness
from kernel_check.finding import Counterexample, Finding, Related
from kernel_check.model import FunctionKind, NarrowingConversion, Span
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._common import location_of
from kernel_check.semantic import SemanticModel

# the pointer of an element read as written (`input[i]`, `params.x[i]`, `*(src + i)`)
_READ_POINTER = re.compile(r"^\*?\(?\s*([A-Za-z_][\w.]*)\s*(?:\[|\+)")


@rule("KC405", needs={Need.NUMERICS})
def check(model: SemanticModel, ctx: RuleContext) -> Iterator[Finding]:
    for conversion in model.narrowing_conversions:
        related = [Related(location_of(model, conversion.origin), "the read of memory it comes from")]
        if conversion.call is not None:
            related.append(Related(location_of(model, conversion.call), "the call that passes it in"))
        yield ctx.finding(
            location_of(model, conversion.span),
            f"{_what(model, conversion)} {_target(conversion.target)} with no saturation, "
            f"and it {conversion.reason}: it comes from `{_text(model, conversion.origin)}` with no clamp or "
            "guard on the way; clamp it to the target's range first (`fminf(fmaxf(v, lo), hi)`), "
            "or use a saturating conversion",
            related=related,
            witness=_counterexample(model, conversion),
        )


def _counterexample(model: SemanticModel, conversion: NarrowingConversion) -> Counterexample | None:
    """The input to fill, as data: the tensor the value is read from (the launcher's name for
    it where a launch in the file hands it one), with NaN where the value can be NaN, else
    with values past the target's range ("huge")."""
    origin = conversion.origin.start
    kernels = (f for f in model.functions if f.kind is FunctionKind.KERNEL and f.body is not None)
    kernel = next((f for f in kernels if f.body is not None and f.body.start <= origin < f.body.end), None)
    pointer = _READ_POINTER.match(_text(model, conversion.origin))
    if kernel is None or pointer is None:
        return None
    tensor = witness.tensor_of(model, kernel, pointer.group(1)) or pointer.group(1)
    return Counterexample(kernel=kernel.name, fill=((tensor, "nan" if "NaN" in conversion.reason else "huge"),))


def _what(model: SemanticModel, conversion: NarrowingConversion) -> str:
    """What is converted: the value, or for a conversion in a header's function, the call
    that passes it there."""
    if conversion.elsewhere:
        return f"`{_text(model, conversion.source)}` passes a value that {conversion.elsewhere} converts to"
    return f"`{_text(model, conversion.source)}` is converted to"


def _target(target: str) -> str:
    return target if target.startswith("fp8 (") else f"`{target}`"


def _text(model: SemanticModel, span: Span) -> str:
    text = model.data[span.start : span.end].decode("utf-8", errors="replace")
    text = " ".join(text.split())
    return text if len(text) <= 60 else text[:57] + "..."
