"""## What it does
Checks a Doxygen block (`///` or `/** ... */`) against the declaration it documents:

- a `\\param` or `\\tparam` naming a parameter that does not exist (reported at that line);
- a named parameter or template parameter the block leaves undocumented (reported at the
  declaration's name, all of them in one finding).

The completeness check (the second) applies to a block that documents parameters at all
(it has a `\\param`, `\\tparam` or `\\return`): a block that is only a brief sentence is
complete as it is, the way `include/sgl_kernel/` documents small helpers, and the way
Doxygen's own incomplete-documentation warning works. A missing `\\return` is not reported:
`include/sgl_kernel/` lets the brief say what a function returns ("Load data ...", "Check
if ..."), and writes `\\return` only now and then. For a class, only `\\tparam` is checked.
A block with `\\copydoc`, `\\copydetails`, `\\overload` or `\\inheritdoc` takes its
documentation from elsewhere and is skipped; plain `//` comments are not Doxygen blocks and
are left alone (KC301 covers missing documentation).

## Why is this bad?
A stale `\\param` after a rename or a reordered signature misleads every reader and every
clangd hover; an undocumented parameter is where the contract (layout, units, range) goes
unstated.

## Example
```cpp
/// \\brief Rows of `src` gathered into `dst`.
/// \\param dst Output rows.
/// \\param source Input rows.
template <typename T>
__global__ void gather_kernel(T* __restrict__ dst, const T* __restrict__ src, const int32_t* __restrict__ idx);
```

## Use instead
```cpp
/// \\brief Rows of `src` gathered into `dst`.
/// \\tparam T Element type.
/// \\param dst Output rows.
/// \\param src Input rows.
/// \\param idx Source row of each output row.
template <typename T>
__global__ void gather_kernel(T* __restrict__ dst, const T* __restrict__ src, const int32_t* __restrict__ idx);
```
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeGuard

from kernel_check.finding import Finding, Location
from kernel_check.model import DocComment, Span
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._common import location_of
from kernel_check.semantic import SemanticModel


@rule("KC302", needs={Need.DECLARATIONS})
def check(model: SemanticModel, ctx: RuleContext) -> Iterator[Finding]:
    for function in model.functions:
        doc = function.doc
        if _checked(doc):
            params = [p.name for p in function.params if p.name]
            tparams = [t.name for t in function.template_params if t.name]
            yield from _stale_names(model, ctx, doc, "param", doc.params, params)
            yield from _stale_names(model, ctx, doc, "tparam", doc.tparams, tparams)
            if not _documents_parameters(doc):
                continue
            yield from _undocumented(
                model,
                ctx,
                function.name_span,
                function.name,
                [p for p in params if p not in doc.params],
                [t for t in tparams if t not in doc.tparams],
            )
    for struct in model.structs:
        doc = struct.doc
        if _checked(doc):
            tparams = [t.name for t in struct.template_params if t.name]
            yield from _stale_names(model, ctx, doc, "tparam", doc.tparams, tparams)
            if _documents_parameters(doc):
                yield from _undocumented(
                    model, ctx, struct.name_span, struct.name, [], [t for t in tparams if t not in doc.tparams]
                )


def _checked(doc: DocComment | None) -> TypeGuard[DocComment]:
    return doc is not None and doc.is_doxygen and not doc.copies_doc


def _documents_parameters(doc: DocComment) -> bool:
    """Whether the block goes beyond a brief: only then must it be complete."""
    return bool(doc.params or doc.tparams or doc.has_return)


def _stale_names(
    model: SemanticModel,
    ctx: RuleContext,
    doc: DocComment,
    command: str,
    documented: tuple[str, ...],
    existing: list[str],
) -> Iterator[Finding]:
    for name in dict.fromkeys(documented):
        if name not in existing:
            yield ctx.finding(
                _command_location(model, doc, command, name),
                f"`\\{command} {name}` documents a {_noun(command)} that does not exist"
                + (f" (the {_noun(command)}s are: {', '.join(existing)})" if existing else ""),
            )


def _undocumented(
    model: SemanticModel, ctx: RuleContext, span: Span, name: str, params: list[str], tparams: list[str]
) -> Iterator[Finding]:
    missing = [f"`\\param {p}`" for p in params] + [f"`\\tparam {t}`" for t in tparams]
    if missing:
        yield ctx.finding(location_of(model, span), f"the Doxygen block of '{name}' lacks {', '.join(missing)}")


def _noun(command: str) -> str:
    return "template parameter" if command == "tparam" else "parameter"


def _command_location(model: SemanticModel, doc: DocComment, command: str, name: str) -> Location:
    """The `\\param name` text inside the block; the whole block when it cannot be placed."""
    written = next(
        (documented for documented in doc.param_spans if documented.command == command and documented.name == name),
        None,
    )
    if written is None:
        return location_of(model, doc.span)
    return Location(model.path, written.line, written.column, written.line, written.end_column)
