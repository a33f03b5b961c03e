"""The C++ model's tier boundary (docs/architecture.md, "The C++ model's tiers"): only tier 1,
the modules whose job is reading libclang, imports its bindings or reaches the cursor behind
a tier-1 node; every analysis of tier 2 reads tier-1 nodes. Read from the sources (`ast`),
nothing is parsed with libclang."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "kernel_check"

# The libclang layer: the bindings and their plumbing, the typed program tree, the evaluators
# of what no tier-1 node models (constants and types as written, records' fields), and the
# passes over declarations.
TIER_1 = frozenset(
    f"clang/{name}.py"
    for name in (
        "capi",
        "cursors",
        "tree",
        "parse",
        "preamble",
        "program",
        "consteval",
        "provenance",
        "extract",
        "scope_facts",
        "variable_templates",
    )
)
TIER_2 = frozenset(
    f"clang/{name}.py"
    for name in ("index_values", "pointer_accesses", "kernel_interface", "launches", "thread_dependence")
)
CURSOR_DOORS = frozenset({"cursor_of"})


def _modules() -> dict[str, ast.Module]:
    return {
        path.relative_to(PACKAGE).as_posix(): ast.parse(path.read_text(encoding="utf-8"), str(path))
        for path in sorted(PACKAGE.rglob("*.py"))
    }


def bindings_imports(tree: ast.Module) -> list[int]:
    """The lines that import libclang's Python bindings (`clang`, `clang.cindex`)."""
    return [node.lineno for node in ast.walk(tree) if any(m.split(".")[0] == "clang" for m in _imported(node))]


def _imported(node: ast.AST) -> list[str]:
    """The absolute modules an import statement names ([] for anything else)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0:
        return [node.module or ""]
    return []


def cursor_doors(tree: ast.Module) -> list[int]:
    """The lines that name the door from a tier-1 node back to its cursor, however imported."""
    return [node.lineno for node in ast.walk(tree) if CURSOR_DOORS & _names(node)]


def _names(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Attribute):
        return {node.attr}
    if isinstance(node, ast.ImportFrom):
        return {a.name for a in node.names}
    return set()


MODULES = _modules()


def test_the_tiers_name_modules_that_exist() -> None:
    assert not TIER_1 - MODULES.keys()
    assert not TIER_2 - MODULES.keys()
    assert not TIER_1 & TIER_2


def test_only_tier_1_imports_the_bindings() -> None:
    outside = {m: lines for m, tree in MODULES.items() if m not in TIER_1 and (lines := bindings_imports(tree))}
    assert outside == {}, "only tier 1 reads libclang (docs/architecture.md)"


def test_only_tier_1_reaches_a_nodes_cursor() -> None:
    outside = {m: lines for m, tree in MODULES.items() if m not in TIER_1 and (lines := cursor_doors(tree))}
    assert outside == {}, "a tier-2 analysis reads tier-1 nodes, never their cursors (docs/architecture.md)"


def test_the_scans_see_each_form_of_the_import_and_the_door() -> None:
    """The scans are not blind: each way a module could cross the boundary is seen."""
    crossing = ast.parse(
        "import clang.cindex as ci\n"
        "from clang.cindex import Cursor\n"
        "from clang import cindex\n"
        "from .program import cursor_of\n"
        "from . import program\n"
        "program.cursor_of(node)\n"
    )
    assert bindings_imports(crossing) == [1, 2, 3]
    assert cursor_doors(crossing) == [4, 6]
    assert bindings_imports(ast.parse("from .clang import parse\nimport clangd_tools\n")) == []


def private_reaches(tree: ast.Module) -> list[int]:
    """The lines that import a private name (`_x`) of another module of the package, or
    reach one through a module of the package imported whole (`runtime._x`)."""
    modules: set[str] = set()  # the names package modules are bound to here
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level > 0 or (node.module or "").startswith("kernel_check")):
            lines += [node.lineno for alias in node.names if _is_private(alias.name)]
            modules.update(alias.asname or alias.name for alias in node.names)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
            lines += [node.lineno] if _is_private(node.attr) else []
    return sorted(lines)


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_no_module_reaches_another_s_private_names() -> None:
    """What one module uses of another is public there: a private name is its module's own."""
    reaching = {m: lines for m, tree in MODULES.items() if (lines := private_reaches(tree))}
    assert reaching == {}, "give the name a public home instead"


def test_the_private_scan_sees_each_form() -> None:
    crossing = ast.parse(
        "from .symbolic import _range\n"
        "from kernel_check.program import _cursor_of as door\n"
        "from .. import runtime\n"
        "runtime._find_nvcc()\n"
        "from __future__ import annotations\n"
        "import argparse\n"
        "argparse._SubParsersAction\n"
        "from . import __version__\n"
    )
    assert private_reaches(crossing) == [1, 2, 4]
