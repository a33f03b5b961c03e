"""## What it does
Flags `details::X` written in a file other than the one that declares `X` inside its
`namespace details`, and every `using namespace ...details;`, wherever it is. A header that
names the helpers of its own `details` namespace is fine; so are qualifiers that come from a
macro's expansion (the macro's own header wrote them).

## Why is this bad?
`namespace details` is the private part of a header, free to change without notice. Code that
reaches into another module's `details` breaks when that header is refactored, and
`using namespace details` pulls every private name into the open. If a helper is needed
elsewhere, promote it to a documented name instead.

## Example
```cpp
#include <sgl_kernel/utils.h>

namespace sglang {
inline void check_rows(int64_t rows) {
  if (rows <= 0) throw host::PanicError(host::details::concat("bad rows: ", rows));
}
}  // namespace sglang
```

## Use instead
```cpp
#include <sgl_kernel/utils.h>

namespace sglang {
inline void check_rows(int64_t rows) {
  CHECK_HOST(rows > 0) << "bad rows: " << rows;
}
}  // namespace sglang
```
"""

from __future__ import annotations

from collections.abc import Iterator

from kernel_check.finding import Finding, Location, Related
from kernel_check.model import DetailsReference
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._common import location_of
from kernel_check.semantic import SemanticModel


@rule("KC321", needs={Need.SCOPE})
def check(model: SemanticModel, ctx: RuleContext) -> Iterator[Finding]:
    for reference in model.scope_facts.details_references:
        if reference.is_using_directive:
            yield ctx.finding(
                location_of(model, reference.span),
                f"`using namespace {reference.namespace}` pulls private names into scope; "
                "name what you need, or promote it out of `details`",
            )
        elif _leaks(model, reference):
            related = []
            if reference.target_path:
                related.append(
                    Related(
                        Location(reference.target_path, reference.target_line), f"'{reference.target}' is declared here"
                    )
                )
            name = reference.target or reference.namespace
            yield ctx.finding(
                location_of(model, reference.span),
                f"'{name}' is a private detail of another header; use a documented API or promote it out of `details`",
                related=related,
            )


def _leaks(model: SemanticModel, reference: DetailsReference) -> bool:
    if reference.target_path:
        return reference.target_path != model.path
    return not reference.namespace_opened_here
