"""## What it does
Flags an exported kernel, launcher, device function, struct or class (template) that has no
`///` or `/** ... */` comment with a `\\brief` (or a leading brief sentence, which Doxygen
takes as the brief). *Exported* means declared at namespace scope outside `namespace details`
and anonymous namespaces, or a public member of such a class; local lambdas and classes are
not exported. A `\\copydoc`/`\\overload` comment counts as documentation.

A function may be documented on any of its declarations in the file (a forward declaration
or the definition); it is reported once, at its definition. Forward declarations of classes,
deleted and defaulted members, private and protected members, `main`, and host functions
that launch no kernel are out of scope.

Each undocumented entity is reported once, the way `include/sgl_kernel/` documents:
explicit and partial specializations are documented by their primary template (and their
members with them), declarations a macro expands to are documented at the macro, operators
speak for themselves, and the members of an undocumented class are not reported on top of
the class (document the class first; its members are checked once it is).

Like every rule that states the guide's conventions, it reports only in a tree that uses the
`sgl_kernel/` library: its own copy (found walking up from the file, or in `include-dirs`),
or a file that includes one of its headers. A tree without it is parsed against the copy
bundled with kernel-check, which is no reason to ask for the library's conventions.

## Why is this bad?
`include/sgl_kernel/` documents every exported entity this way, and the JIT tooling
configures clangd to render these comments on hover. An undocumented kernel or helper leaves
its contract (layouts, preconditions, units) to be reverse-engineered from the body.

## Example
```cpp
// scales a tensor
template <typename T>
__global__ void scale_kernel(T* __restrict__ dst, const T* __restrict__ src, float factor, uint32_t n);
```

## Use instead
```cpp
/// \\brief Element-wise `dst = src * factor`.
/// \\tparam T Element type.
/// \\param dst Output, `n` elements.
/// \\param src Input, `n` elements.
/// \\param factor Scale factor.
/// \\param n Number of elements.
template <typename T>
__global__ void scale_kernel(T* __restrict__ dst, const T* __restrict__ src, float factor, uint32_t n);
```
"""

from __future__ import annotations

from collections.abc import Iterator

from kernel_check.finding import Finding
from kernel_check.model import DocComment, Function, FunctionKind, Struct
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._common import location_of
from kernel_check.semantic import SemanticModel

_HIDDEN_ACCESS = ("private", "protected")


@rule("KC301", needs={Need.DECLARATIONS, Need.LAUNCHES})
def check(model: SemanticModel, ctx: RuleContext) -> Iterator[Finding]:
    if not model.header_library.adopted():  # the guide's convention, where the tree uses the library
        return
    for declarations in model.function_groups():
        subject = _function_subject(declarations[0], model.is_launcher(declarations[0]))
        if subject is None or any(_documents(f.doc) for f in declarations):
            continue
        if not _owner_checked(declarations[0].owner_usr, model):
            continue
        reported = next((f for f in declarations if f.is_definition), declarations[0])
        yield ctx.finding(
            location_of(model, reported.name_span), f"{subject} '{reported.name}' {_problem(reported.doc)}"
        )
    for struct in model.structs:
        if _struct_in_scope(struct) and _owner_checked(struct.owner_usr, model) and not _documents(struct.doc):
            what = "class template" if struct.template_params else "class" if struct.is_class else "struct"
            yield ctx.finding(location_of(model, struct.name_span), f"{what} '{struct.name}' {_problem(struct.doc)}")


def _function_subject(function: Function, is_launcher: bool) -> str | None:
    """What the function is in this rule's scope, or None when it is out of scope."""
    if not function.is_exported or function.is_deleted or function.is_defaulted:
        return None
    if function.access in _HIDDEN_ACCESS or function.name == "main" or function.from_macro:
        return None
    if function.name.startswith("operator"):
        return None
    if function.kind is FunctionKind.KERNEL:
        return "kernel"
    if function.kind is FunctionKind.DEVICE:
        return "device function"
    return "launcher" if is_launcher else None


def _struct_in_scope(struct: Struct) -> bool:
    return (
        bool(struct.name)
        and struct.is_exported
        and struct.is_definition
        and struct.access not in _HIDDEN_ACCESS
        and not struct.is_specialization
        and not struct.from_macro
    )


def _owner_checked(owner_usr: str, model: SemanticModel) -> bool:
    """Whether a member's documentation is checked: at namespace scope (no owner), or in a
    class that is itself in scope and documented (an undocumented class is the one finding)."""
    if not owner_usr:
        return True
    owner = model.record(owner_usr)
    return owner is not None and _struct_in_scope(owner) and _documents(owner.doc)


def _documents(doc: DocComment | None) -> bool:
    return doc is not None and doc.is_doxygen and (doc.has_brief or doc.copies_doc)


def _problem(doc: DocComment | None) -> str:
    if doc is None:
        return "has no Doxygen comment; add a `///` block with `\\brief`"
    if not doc.is_doxygen:
        return "has a plain comment, which Doxygen ignores; write it as `///` with `\\brief`"
    return "has a Doxygen comment without `\\brief` or a leading brief sentence"
