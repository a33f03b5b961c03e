"""kernel_check's modules import each other without a circle.

The graph is read from the source (every `import` / `from ... import`, those inside functions and
`if TYPE_CHECKING:` blocks included): an import moved into a function to dodge a circle still
counts as one.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "kernel_check"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, modules: set[str]) -> set[str]:
    """The package's modules that `path` imports, relative imports resolved."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            found.add(target)
            # `from package import module` imports the module
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return {m for m in found if m in modules and m != name}


def import_graph() -> dict[str, set[str]]:
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(p) for p in paths}
    return {module_name(p): imported_modules(p, modules) for p in paths}


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """A circle of imports, as [a, b, ..., a], for each import that closes one."""
    cycles = []
    done: set[str] = set()
    for start in sorted(graph):
        if start in done:
            continue
        path = [start]
        branches = [iter(sorted(graph[start]))]
        while path:
            target = next(branches[-1], None)
            if target is None:
                done.add(path.pop())
                branches.pop()
            elif target in path:
                cycles.append([*path[path.index(target) :], target])
            elif target not in done:
                path.append(target)
                branches.append(iter(sorted(graph[target])))
    return cycles


def test_the_graph_sees_relative_and_function_level_imports():
    graph = import_graph()
    assert "kernel_check.model" in graph["kernel_check.clang.extract"]  # `from ..model import`
    assert "kernel_check.harness.cli" in graph["kernel_check.cli"]  # inside command_harness()
    assert "kernel_check.report.text" in graph["kernel_check.report"]  # `from . import text`
    assert len(graph) > 100


def test_there_is_no_import_cycle():
    cycles = find_cycles(import_graph())
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(cycle) for cycle in cycles)
