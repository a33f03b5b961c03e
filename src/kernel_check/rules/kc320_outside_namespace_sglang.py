"""## What it does
Flags a declaration written at global namespace scope -- a function, kernel, struct, variable,
alias, `using`, or a namespace other than `sglang` (an anonymous one included) -- in a kernel
source or header. The headers of `include/sgl_kernel/` follow the same rule: everything but
their macros lives in `namespace sglang`.

Not flagged: includes and macros (a declaration a macro expansion produces, such as the
`TVM_FFI_DLL_EXPORT_TYPED_FUNC` wrapper), `static_assert`, `main`, the out-of-line
definition of something already inside a namespace (`void sglang::f() {}`), the reopening of
a namespace or redeclaration of an entity first declared in another file (specializing
`std::hash`, extending `namespace tvm`), explicit and partial specializations (they move with
their primary template, which is reported once), and `using` declarations in a file that exports
through a global-scope TVM-FFI macro (they name what the wrapper exports).

Only where `namespace sglang` is the file's convention, which the message names:
- the `sgl_kernel/` header library the file is checked against opens `namespace sglang`, and
  it is the tree's own (the `include/` found walking up from the file, or one in
  `include-dirs`) or the file includes one of its headers; or
- the file itself opens `namespace sglang` elsewhere.

Code written without the library (another project's kernels, or code older than the
convention, checked against the copy bundled with kernel-check without including it) gets no
finding. `conventions = { KC320 = "on" }` (or `"off"`) decides it instead of the detection.

## Why is this bad?
JIT kernels are compiled together with the shared `host::`/`device::` helpers, which live in
`namespace sglang` and resolve unqualified only from inside it; `load_jit` also emits the
export wrapper inside `namespace sglang`. A global declaration can collide with another
kernel's, or with a CUDA or PyTorch symbol, and a global `using` leaks into every includer.

## Example
```cpp
#include <sgl_kernel/utils.cuh>

__global__ void scale_kernel(float* __restrict__ dst, const float* __restrict__ src, uint32_t n);
```

## Use instead
```cpp
#include <sgl_kernel/utils.cuh>

namespace sglang {

__global__ void scale_kernel(float* __restrict__ dst, const float* __restrict__ src, uint32_t n);

}  // namespace sglang
```

## Options
- `conventions`: `{ KC320 = "on" }` or `"off"` overrides the detection.
"""

from __future__ import annotations

from collections.abc import Iterator

from kernel_check.conventions import FORCED, setting, shown
from kernel_check.finding import Finding
from kernel_check.model import GlobalDeclaration
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._common import location_of
from kernel_check.semantic import SemanticModel

_HOME = "sglang"
_EXPORT_MACRO_PREFIX = "TVM_FFI_"


@rule("KC320", needs={Need.SCOPE})
def check(model: SemanticModel, ctx: RuleContext) -> Iterator[Finding]:
    declarations = model.scope_facts.global_declarations
    origin = _convention(model, declarations, ctx)
    if not origin:
        return
    exports = any(d.macro.startswith(_EXPORT_MACRO_PREFIX) for d in declarations)
    for declaration in declarations:
        if _exempt(declaration, exports):
            continue
        yield ctx.finding(
            location_of(model, declaration.name_span),
            f"{_describe(declaration)} is declared at global namespace scope; "
            f"put it inside `namespace sglang` ({origin})",
        )


def _convention(model: SemanticModel, declarations: list[GlobalDeclaration], ctx: RuleContext) -> str:
    """What makes `namespace sglang` this file's convention, as the message names it; ""
    when nothing does (module docstring)."""
    chosen = setting(ctx.options, "KC320")
    if chosen == "off":
        return ""
    home = model.header_library.namespace_convention()
    if home:
        return f"the namespace of this tree's header library, `{shown(home, ctx.root)}`"
    if any(d.kind == "namespace" and d.name == _HOME for d in declarations):
        return "the namespace the rest of this file is in"
    return f"the convention {FORCED} turns on" if chosen == "on" else ""


def _exempt(declaration: GlobalDeclaration, file_exports: bool) -> bool:
    if declaration.macro or declaration.redeclares_external or declaration.is_specialization:
        return True  # a specialization moves with its primary template, which is the finding
    if declaration.kind == "static_assert":
        return True
    if declaration.kind == "namespace" and declaration.name == _HOME:
        return True
    if declaration.kind == "function" and declaration.name == "main":
        return True
    return declaration.kind == "using" and file_exports


def _describe(declaration: GlobalDeclaration) -> str:
    if not declaration.name:
        return {"namespace": "an anonymous namespace", "using": "a using-directive"}.get(
            declaration.kind, f"a {declaration.kind} declaration"
        )
    return f"{declaration.kind} '{declaration.name}'"
