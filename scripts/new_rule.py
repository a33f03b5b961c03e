#!/usr/bin/env python3
"""Scaffold a new C++/CUDA rule: its code-table line, one rule module and one fixture.

    python scripts/new_rule.py KC170 barrier-in-divergent-branch
    python scripts/new_rule.py KC170 barrier-in-divergent-branch --root /some/checkout

adds the code's line to `src/kernel_check/codes.py` (the code table: name, stage, default severity,
summary), and writes `src/kernel_check/rules/kc170_barrier_in_divergent_branch.py` (the check, its docstring
the doc page) and `tests/fixtures/cpp/kc170_barrier_in_divergent_branch.cuh` (a line that
must fire and a near miss that must not). The new rule reports nothing yet, so the fixture test fails until
the check is written: that failing test is the starting point. See docs/contributing.md.

Refuses, with one line and exit status 2, a malformed code or name, a code or name the code
table or an existing rule module already uses, and any file that already exists (it never
overwrites).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CODE_RE = re.compile(r"^KC\d{3}$")
NAME_RE = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")
RULE_FILE_RE = re.compile(r"^k[cd](\d{3})_(\w+)\.py$")

RULE_TEMPLATE = '''"""## What it does
Flags ... (one paragraph: the construct, and what is deliberately not flagged).

## Why is this bad?
... (what goes wrong on the GPU, or which convention it breaks, and why it matters).

## Example
```cpp
// the smallest code that fires
```

## Use instead
```cpp
// the same code, fixed
```
"""

from __future__ import annotations

from collections.abc import Iterator

from kernel_check.finding import Finding
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.semantic import SemanticModel


# its name, severity and summary: its line in src/kernel_check/codes.py; `needs`: what the
# check reads (registry.Need), so that a run that does not select it skips the rest
@rule("{code}", needs={Need.DECLARATIONS})
def check(model: SemanticModel, ctx: RuleContext) -> Iterator[Finding]:
    # Query the model (kernel_check.semantic.SemanticModel), never cursors or source text,
    # and yield ctx.finding(location_of(model, span), "message") for each violation
    # (location_of comes from kernel_check.rules._common).
    yield from ()
'''

FIXTURE_TEMPLATE = """// {code} fixture: {name}. Each `// expect: {code}` line must fire; every other line must not.
// Once the check exists, pin the column and the message too: `// expect: {code}@COLUMN "words of the message"`.
#include <sgl_kernel/utils.cuh>

#include <cstdint>

namespace sglang {{

/// \\brief Fires: replace the body with the smallest code that violates {code}.
/// \\param dst Output buffer.
__global__ void fires_kernel(float* __restrict__ dst) {{
  dst[threadIdx.x] = 1.0f;  // expect: {code}
}}

/// \\brief Near miss: code that looks alike but is fine must not fire.
/// \\param dst Output buffer.
__global__ void near_miss_kernel(float* __restrict__ dst) {{
  dst[threadIdx.x] = 0.0f;
}}

}}  // namespace sglang
"""


TABLE_LINE = (
    '{constant} = _define("{code}", "{name}", Severity.WARNING, Language.CPP,\n'
    '        "{name}: one line for the rule index")\n'
)
DEFINE_RE = re.compile(r'^\w+ = _define\("(K[CD]\d{3})", "([^"]+)"', re.M)


class Refused(Exception):
    """The request cannot be honoured; the message is the one line the user sees."""


def planned_paths(root: Path, code: str, name: str) -> tuple[Path, Path]:
    """The rule module and the fixture that `code`/`name` get under `root`."""
    stem = f"{code.lower()}_{name.replace('-', '_')}"
    return root / "src" / "kernel_check" / "rules" / f"{stem}.py", root / "tests" / "fixtures" / "cpp" / f"{stem}.cuh"


def check_request(root: Path, code: str, name: str) -> None:
    """Raise `Refused` for a malformed code or name, or one an existing rule already uses."""
    if not CODE_RE.match(code):
        raise Refused(f"malformed code '{code}': expected KC followed by three digits, e.g. KC170")
    if not NAME_RE.match(name):
        raise Refused(f"malformed name '{name}': expected lower-case words joined by '-', e.g. barrier-in-branch")
    rules_dir, table = root / "src" / "kernel_check" / "rules", root / "src" / "kernel_check" / "codes.py"
    for needed in (rules_dir, table):
        if not needed.exists():
            raise Refused(f"{needed}: not found here (use --root to name the checkout)")
    for defined, defined_name in DEFINE_RE.findall(table.read_text(encoding="utf-8")):
        if defined == code:
            raise Refused(f"code {code} is already used by {table} ({defined_name})")
        if defined_name == name:
            raise Refused(f"name '{name}' is already used by {table} ({defined})")
    snake = name.replace("-", "_")
    for path in sorted(rules_dir.glob("k[cd][0-9][0-9][0-9]_*.py")):
        match = RULE_FILE_RE.match(path.name)
        if match and f"KC{match.group(1)}" == code and path.name.startswith("kc"):
            raise Refused(f"code {code} is already used by {path}")
        if match and match.group(2) == snake:
            raise Refused(f"name '{name}' is already used by {path}")


def write_new(path: Path, text: str) -> None:
    """Create `path` with `text`; an existing file is never replaced."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("x", encoding="ascii") as handle:
        handle.write(text)


def add_table_line(table: Path, code: str, name: str) -> None:
    """Insert the code's `_define(...)` statement after the last smaller code's."""
    text = table.read_text(encoding="utf-8")
    line = TABLE_LINE.format(constant=name.upper().replace("-", "_"), code=code, name=name)
    before = [m for m in DEFINE_RE.finditer(text) if m.group(1) < code]
    end = text.index(")\n", before[-1].start()) + 2 if before else len(text)
    text = text[:end] + line + text[end:]
    table.write_text(text, encoding="utf-8")


def scaffold(root: Path, code: str, name: str) -> tuple[Path, Path]:
    check_request(root, code, name)
    module, fixture = planned_paths(root, code, name)
    for path in (module, fixture):
        if path.exists():
            raise Refused(f"{path} already exists; not overwriting it")
    write_new(module, RULE_TEMPLATE.replace("{code}", code).replace("{name}", name))
    write_new(fixture, FIXTURE_TEMPLATE.format(code=code, name=name))
    add_table_line(root / "src" / "kernel_check" / "codes.py", code, name)
    return module, fixture


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write a new rule module and its fixture from a template.")
    parser.add_argument("code", help="the new code, e.g. KC170")
    parser.add_argument("name", help="the rule's name in kebab case, e.g. barrier-in-divergent-branch")
    parser.add_argument("--root", type=Path, default=REPO, help="the checkout to write into (default: this one)")
    args = parser.parse_args(argv)
    try:
        module, fixture = scaffold(args.root, args.code, args.name)
    except Refused as refusal:
        print(f"new_rule: {refusal}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"new_rule: {error.filename}: {error.strerror}", file=sys.stderr)
        return 2
    print(
        f"added {args.code} to {args.root / 'src' / 'kernel_check' / 'codes.py'}\nwrote {module}\nwrote {fixture}\n"
        f"next: write the check, then run pytest tests/test_fixtures.py -k {fixture.stem} "
        "and python scripts/gen_docs.py"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
