"""KC501-KC506: the fixture repository's `# expect:` markers, and what the Python model extracts."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from kernel_check.config import OPTIONS
from kernel_check.finding import Finding
from kernel_check.pymodel import (
    ArgumentKind,
    CheckKind,
    PyModel,
    Span,
    build_python_model,
    path_under,
)
from kernel_check.registry import Language, RegisteredRule, RuleContext, get_rule, rules_for

FIXTURE_REPO = Path(__file__).resolve().parent / "fixtures" / "python" / "repo"
PYTHON_CODES = {"KC501", "KC502", "KC503", "KC504", "KC505", "KC506"}
REQUIRED_HEADINGS = ("## What it does", "## Why is this bad?", "## Example", "## Use instead")
EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>[A-Z]{2}\d{3}(?:\s*,\s*[A-Z]{2}\d{3})*)\s*$")


# --------------------------------------------------------------------------- helpers


def options_table(overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The `[tool.kernel-check]` table as the engine passes it: every key, defaults filled in."""
    return {option.key: option.default for option in OPTIONS} | (overrides or {})


def fixture_options() -> dict[str, Any]:
    with open(FIXTURE_REPO / "pyproject.toml", "rb") as handle:
        return options_table(tomllib.load(handle)["tool"]["kernel-check"])


def run_rules(
    model: PyModel, rel_path: str, options: dict[str, Any], rules: Iterable[RegisteredRule], root: str = ""
) -> list[Finding]:
    findings: list[Finding] = []
    for registered in rules:
        assert registered.check is not None
        ctx = RuleContext(registered.meta, model.path, rel_path, options, root)
        findings.extend(registered.check(model, ctx))
    return findings


def check_source(source: str, rel_path: str, code: str, options: dict[str, Any] | None = None) -> list[Finding]:
    """Findings of one rule on a snippet placed at `rel_path`."""
    registered = get_rule(code)
    assert registered is not None
    model = build_python_model(rel_path, textwrap.dedent(source))
    return run_rules(model, rel_path, options_table(options), [registered])


def expected_markers(text: str) -> set[tuple[int, str]]:
    expected = set()
    for line_number, line in enumerate(text.splitlines(), start=1):
        if match := EXPECT.search(line):
            expected.update((line_number, code.strip()) for code in match["codes"].split(","))
    return expected


def describe(pairs: set[tuple[int, str]], lines: list[str], findings: list[Finding]) -> str:
    if not pairs:
        return "  (none)"
    messages = {(f.line, f.code): f.message for f in findings}
    return "\n".join(
        f"  {line:>4} {code}  {lines[line - 1].strip()!r}"
        + (f"  -- {messages[line, code]}" if (line, code) in messages else "")
        for line, code in sorted(pairs)
    )


FIXTURE_FILES = sorted(FIXTURE_REPO.rglob("*.py"))


def fixture_id(path: Path) -> str:
    return path.relative_to(FIXTURE_REPO).as_posix()


# --------------------------------------------------------------------------- fixtures


def test_rules_are_registered_with_docs() -> None:
    python_rules = {r.meta.code: r for r in rules_for(Language.PYTHON)}
    assert python_rules.keys() >= PYTHON_CODES
    for code in sorted(PYTHON_CODES):
        doc = python_rules[code].meta.doc
        positions = [doc.find(heading) for heading in REQUIRED_HEADINGS]
        assert -1 not in positions and positions == sorted(positions), f"{code}: doc headings missing or out of order"
        assert doc.count("```python") == 2, f"{code}: doc needs one Example and one Use instead block"


def test_every_code_has_a_firing_fixture() -> None:
    expected_codes = {code for path in FIXTURE_FILES for _, code in expected_markers(path.read_text())}
    assert expected_codes >= PYTHON_CODES


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=fixture_id)
def test_fixture_findings_match_markers(path: Path) -> None:
    text = path.read_text()
    model = build_python_model(str(path), text)
    findings = run_rules(model, fixture_id(path), fixture_options(), rules_for(Language.PYTHON), str(FIXTURE_REPO))
    actual = {(finding.line, finding.code) for finding in findings}
    expected = expected_markers(text)
    lines = text.splitlines()
    missing, unexpected = expected - actual, actual - expected
    assert not missing and not unexpected, (
        f"{fixture_id(path)}\nmissing (marked but not reported):\n{describe(missing, lines, findings)}"
        f"\nunexpected (reported but not marked):\n{describe(unexpected, lines, findings)}"
    )


def test_findings_point_into_the_file() -> None:
    path = FIXTURE_REPO / "test/registered/kernels/ops/elementwise/test_scale_ci_values.py"
    model = build_python_model(str(path), path.read_text())
    for finding in run_rules(model, fixture_id(path), fixture_options(), rules_for(Language.PYTHON), str(FIXTURE_REPO)):
        assert finding.path == str(path)
        assert not finding.message[0].isupper() and ";" in finding.message, finding.message


# --------------------------------------------------------------------------- the model


def test_decorators_resolve_through_imports() -> None:
    model = build_python_model(
        "m.py",
        textwrap.dedent(
            """
            import functools
            import functools as ft
            from functools import lru_cache as lc
            from sglang.kernels.jit.utils import cache_once as once

            @functools.cache
            def a(): ...

            @ft.lru_cache(maxsize=None)
            def b(): ...

            @lc
            def c(): ...

            @once
            def d(): ...

            def lru_cache(fn): return fn

            @lru_cache
            def e(): ...
            """
        ),
    )
    qualified = {f.name: f.decorators[0].qualified for f in model.functions if f.decorators}
    assert qualified == {
        "a": "functools.cache",
        "b": "functools.lru_cache",
        "c": "functools.lru_cache",
        "d": "sglang.kernels.jit.utils.cache_once",
        "e": "lru_cache",
    }
    assert next(f for f in model.functions if f.name == "d").has_decorator("cache_once")


def test_function_scope_imports_and_relative_imports() -> None:
    model = build_python_model(
        "m.py",
        textwrap.dedent(
            """
            from . import jit
            from .ops.norm import rmsnorm

            def bench():
                import triton.testing as tt
                from triton.testing import do_bench as db
                tt.do_bench_cudagraph(f)
                db(f)
                jit.build()
                rmsnorm(x)

            def other():
                tt.do_bench(f)
            """
        ),
    )
    assert [call.callee for call in model.calls] == [
        "triton.testing.do_bench_cudagraph",
        "triton.testing.do_bench",
        ".jit.build",
        ".ops.norm.rmsnorm",
        "tt.do_bench",  # the import is local to `bench`
    ]


def test_registration_calls() -> None:
    model = build_python_model(
        "test_x.py",
        textwrap.dedent(
            """
            from sglang.test.ci.ci_register import register_cuda_ci
            reg = register_cuda_ci
            register_cuda_ci(30, stage=STAGE, *extra, **more)
            reg(est_time=1)
            if __name__ == "__main__":
                register_cuda_ci(est_time=2)
            """
        ),
    )
    first, alias, guarded = model.calls
    assert first.is_ci_registration and first.is_module_statement and first.written == "register_cuda_ci"
    assert [(a.kind, a.keyword, a.position, a.is_literal) for a in first.arguments] == [
        (ArgumentKind.POSITIONAL, None, 0, True),
        (ArgumentKind.STAR, None, 1, False),
        (ArgumentKind.KEYWORD, "stage", None, False),
        (ArgumentKind.DOUBLE_STAR, None, None, False),
    ]
    assert alias.callee == "sglang.test.ci.ci_register.register_cuda_ci" and alias.written == "reg"
    assert guarded.is_ci_registration and not guarded.is_module_statement


def test_positions_are_one_based_character_columns() -> None:
    model = build_python_model("m.py", 'x = "é"; f(a,\n  b)\n')
    (call,) = model.calls
    assert call.span == Span(line=1, column=10, end_line=2, end_column=5)
    assert call.callee_span == Span(1, 10, 1, 11)
    assert call.span.location("m.py").column == 10


def test_entry_point_facts() -> None:
    model = build_python_model(
        "ops.py",
        textwrap.dedent(
            """
            def entry(x, out=None):
                if x.dim() != 2:
                    raise ValueError("2-D")
                assert x.shape[0] == out.shape[0]
                if not x.is_contiguous():
                    x = x.contiguous()
                if x.dtype in SUPPORTED:
                    pass
                if out is None:
                    out = torch.empty_like(x)
                module = _jit_a_module(x.dtype) if flag else _jit_b_module(x.dtype)
                module.run(out, x)
                _jit_c_module(x.dtype).run(out, x)

                def nested():
                    raise RuntimeError
            """
        ),
    )
    entry = next(f for f in model.functions if f.name == "entry")
    assert [(c.kind, c.subject, c.span.line, c.converts) for c in entry.checks] == [
        (CheckKind.RAISE, "raise", 4, False),
        (CheckKind.ASSERT, "assert", 5, False),
        (CheckKind.TENSOR_TEST, "x.is_contiguous()", 6, True),
        (CheckKind.TENSOR_TEST, "x.dtype", 8, False),
    ]
    kernel_calls = {(c.producer, c.attribute) for c in entry.result_calls if c.producer.startswith("_jit")}
    assert kernel_calls == {("_jit_a_module", "run"), ("_jit_b_module", "run"), ("_jit_c_module", "run")}
    nested = next(f for f in model.functions if f.name == "nested")
    assert nested.qualname == "entry.nested" and [c.kind for c in nested.checks] == [CheckKind.RAISE]


def test_what_a_tests_branches_do() -> None:
    """Branches that only convert inputs, or only pick which call's result to use."""
    model = build_python_model(
        "ops.py",
        textwrap.dedent(
            """
            from m import load_a as la

            def entry(x, r):
                r = r if r.dtype == x.dtype else r.to(x.dtype).contiguous()
                if x.shape[-1] == 128:
                    mod = la()
                elif x.shape[-1] == 64:
                    mod = load_b()
                else:
                    load_c().run(x)
                mod = load_a() if x.numel() > 0 else x
                if x.dtype == r.dtype:
                    x = x.view(-1)
            """
        ),
    )
    (entry,) = model.functions
    assert [(c.span.line, c.converts, c.selects) for c in entry.checks] == [
        (5, True, ()),
        (6, False, ("m.load_a", "load_b", "load_c")),
        (8, False, ("load_b", "load_c")),
        (12, False, ()),
        (13, False, ("x.view",)),
    ]


def test_calls_in_separates_nested_functions_and_classes() -> None:
    model = build_python_model(
        "m.py",
        textwrap.dedent(
            """
            class Kernels:
                helper()
                def method(self):
                    load_jit("a")
            """
        ),
    )
    (method,) = model.functions
    assert method.qualname == "Kernels.method"
    assert [call.callee for call in model.calls_in(method)] == ["load_jit"]
    assert model.calls[0].function is None


@pytest.mark.parametrize("source", ["def f(:\n    pass\n", "x = 1\x00\n"], ids=["syntax", "null-byte"])
def test_invalid_source_raises_syntax_error(source: str) -> None:
    with pytest.raises(SyntaxError):
        build_python_model("broken.py", source)


@pytest.mark.parametrize(
    ("rel_path", "root", "under"),
    [
        ("python/sglang/ops/a.py", "python/sglang/", True),
        ("python/sglang/ops/a.py", "./python/sglang", True),
        ("python/sglang_extra/a.py", "python/sglang/", False),
        ("python/sglang", "python/sglang/", False),
    ],
)
def test_path_under(rel_path: str, root: str, under: bool) -> None:
    assert path_under(rel_path, root) is under


# --------------------------------------------------------------------------- options and edges


REGISTERED = 'register_cuda_ci(est_time=1, stage="s", runner_config="r")\n'


def test_package_root_option() -> None:
    options = {"package-root": "src/mypkg/", "registered-tests-root": "tests/ci/", "conventions": {"KC504": "on"}}
    (finding,) = check_source(REGISTERED, "src/mypkg/ops/t.py", "KC504", options)
    assert "`tests/ci/`" in finding.message
    assert check_source(REGISTERED, "python/sglang/ops/t.py", "KC504", options) == []
    assert len(check_source(REGISTERED, "python/sglang/ops/t.py", "KC504", {"conventions": {"KC504": "on"}})) == 1


def test_registered_tests_root_option() -> None:
    options = {"registered-tests-root": "tests/ci/"}
    assert len(check_source("import torch\n", "tests/ci/test_a.py", "KC506", options)) == 1
    assert check_source("import torch\n", "test/registered/test_a.py", "KC506", options) == []
    assert check_source(REGISTERED, "tests/ci/bench_a.py", "KC506", options) == []


def test_missing_registration_points_at_hidden_ones() -> None:
    source = 'if __name__ == "__main__":\n    ' + REGISTERED
    (finding,) = check_source(source, "test/registered/test_a.py", "KC506")
    assert (finding.line, finding.location.column) == (1, 1)
    assert [related.location.line for related in finding.related] == [2]


def test_lru_cache_finding_is_on_the_decorator() -> None:
    source = """
        import functools

        @functools.lru_cache(maxsize=None)
        def _jit_a_module():
            return load_jit("a")
        """
    (finding,) = check_source(source, "python/sglang/ops/a.py", "KC501")
    assert (finding.line, finding.location.column, finding.location.end_column) == (4, 2, 35)
    assert [related.location.line for related in finding.related] == [6]


def test_factory_recognised_by_calling_load_jit() -> None:
    source = """
        def get_kernel(dtype):
            return load_jit("k", dtype)

        def run(x):
            if x.ndim != 2:
                x = x.flatten(1)
            get_kernel(x.dtype).run(x)
        """
    (finding,) = check_source(source, "python/sglang/ops/a.py", "KC502")
    assert finding.line == 6 and "`x.ndim` test" in finding.message
    assert [related.location.line for related in finding.related] == [8]
