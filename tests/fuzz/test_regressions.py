"""Minimal reproducers of what the fuzz suite found, as plain tests.

Each bug that lives in a module another engineer owns is an `xfail(strict=True)` naming
the module and the fix: when it is fixed the test passes, strict xfail turns that into a
failure, and whoever fixed it deletes the marker. Bugs in the fuzz suite's own modules
(the watchdog) are fixed and tested in tests/test_time_bound.py.
"""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path

import pytest

from kernel_check.clang.parse import resolve_settings
from kernel_check.config import load_config
from kernel_check.engine import RunOptions, check_file
from kernel_check.registry import load_rules


def _check(path: Path, preamble=None):
    load_rules()
    return check_file(path, RunOptions(load_config(path), resolve_settings("hermetic")), preamble)


def _check_here(path: Path, preamble) -> object:
    """`_check` with no time bound (a timeout of 0 is the watchdog's "run in this process"; a
    user cannot configure it): the parse runs here, not in a forked child, so the preamble
    cache's counters see what it did."""
    load_rules()
    config = load_config(path).with_overrides(file_timeout=0)
    return check_file(path, RunOptions(config, resolve_settings("hermetic")), preamble)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.kernel-check]\n")
    return tmp_path


def _rule_codes(result) -> set[str]:
    return {f.code for f in result.findings} - {"KC000", "KC001"}


def test_kc000_has_a_real_position_when_clang_hits_its_error_limit(project: Path) -> None:
    (project / "broken.h").write_text("".join(f"int v{i} = undeclared_{i};\n" for i in range(60)))
    main = project / "kernel.cuh"
    main.write_text('#include "broken.h"\nnamespace sglang { int ok; }\n')
    result = _check(main)
    assert [f.code for f in result.findings if f.code == "KC000"] == ["KC000"]
    assert all(f.line >= 1 and f.location.column >= 1 for f in result.findings), [
        (f.code, f.line, f.location.column) for f in result.findings
    ]


@pytest.mark.parametrize(
    "source, invalid_line",
    [
        # The header is missing, so `unknown_type_t` is unknown and `outside` is invalid (line 5).
        (
            '#include "kc_header_that_does_not_exist.cuh"\nnamespace sglang {\nunknown_type_t* lookup();\n}\n'
            "void outside(unknown_type_t x) {}\n",
            5,
        ),
        # It includes itself ~200 deep without a guard: the redefinitions of `Early` and `early` use up
        # the 50 errors, so the invalid redefinitions of `late` (line 4) are never reported.
        ('struct Early {};\nvoid early() {}\n#include "kernel.cuh"\nvoid late() {}\n', 4),
    ],
    ids=["after-a-fatal-missing-include", "past-the-error-limit"],
)
def test_no_rule_fires_inside_a_declaration_clang_marked_invalid(project: Path, source: str, invalid_line: int) -> None:
    main = project / "kernel.cuh"
    main.write_text(source)
    result = _check(main)
    assert "KC000" in {f.code for f in result.findings}
    fired = [(f.code, f.line, f.message) for f in result.findings if f.code not in ("KC000", "KC001")]
    assert not [f for f in fired if f[1] == invalid_line], fired


def test_no_rule_fires_on_a_repeated_redefinition(project: Path) -> None:
    """clang reports 'redefinition of' once; the third definition is invalid too
    (clang_isInvalidDeclaration) without a diagnostic of its own."""
    main = project / "kernel.cuh"
    main.write_text("void twice(int n) {}\nvoid twice(int n) {}\nvoid twice(int n) {}\n")
    fired = [(f.code, f.line) for f in _check(main).findings if f.code not in ("KC000", "KC001")]
    assert not [f for f in fired if f[1] == 3], fired  # line 3 is invalid; line 1 is the valid one


def test_a_fix_in_a_file_with_non_utf8_bytes_lands_where_clang_saw_it(project: Path) -> None:
    """clang parses the raw bytes: given U+FFFD-replaced text (3 bytes per bad byte), every
    offset after it was shifted and `--fix` corrupted the file."""
    main = project / "kernel.cuh"
    data = (
        b"// caf\xe9 \xe9\xe9\xe9\xe9\nnamespace sglang {\n/// \\brief Copy.\n/// \\param dst Output.\n"
        b"/// \\param src Input.\n__global__ void copy_kernel(float* __restrict__ dst, const float* src) {\n"
        b"  dst[threadIdx.x] = src[threadIdx.x];\n}\n}  // namespace sglang\n"
    )
    main.write_bytes(data)
    findings = [f for f in _check(main).findings if f.code == "KC101" and f.fix is not None]
    assert findings, "KC101 should offer its __restrict__ fix"
    expected = data.index(b"const float*") + len(b"const float*")
    assert [edit.start for edit in findings[0].fix.edits] == [expected]
    from kernel_check.fix import apply_fixes

    assert apply_fixes(findings) == {str(main): 1}
    assert main.read_bytes() == data.replace(b"const float* src", b"const float* __restrict__ src")


def test_a_header_error_silences_rules_in_a_file_with_cr_line_endings(project: Path) -> None:
    """The file-wide erroneous span counts lines as clang does: a lone CR ends a line."""
    (project / "broken.h").write_text("int broken = undeclared_name;\n")
    main = project / "kernel.cuh"
    main.write_bytes(b'#include "broken.h"\r\r\r\rvoid outside_namespace() {}\r')
    result = _check(main)
    assert "KC000" in {f.code for f in result.findings}
    assert _rule_codes(result) == set(), [(f.code, f.line, f.message) for f in result.findings]


def test_findings_in_a_file_with_cr_line_endings_sit_where_clang_puts_them(project: Path) -> None:
    """Positions computed from byte offsets (cursors.Positions) count a lone CR as a line end,
    as clang does: they sat on line 1, at columns past its end."""
    source = (
        b"namespace sglang {\n__global__ void k(int* out,\n                  int n) {\n  out[threadIdx.x] = n;\n}\n}\n"
    )
    positions = {}
    for name, data in (("lf", source), ("cr", source.replace(b"\n", b"\r"))):
        main = project / f"{name}.cuh"
        main.write_bytes(data)
        positions[name] = sorted((f.line, f.location.column) for f in _check(main).findings if f.code == "KC110")
    assert positions["lf"] == [(2, 19), (3, 19)]
    assert positions["cr"] == positions["lf"]


def test_every_rule_numbers_cr_only_lines_as_clang_does(project: Path) -> None:
    """The non-ASCII rule (KC310) split lines at \\n only: in a file with lone-CR line ends its
    finding sat on another line than clang's, outside the invalid declaration the filter drops
    (fuzz #629, #5887). Doxygen comments were read the same way (a false KC301). Every rule's
    findings must not move when LF endings become CR."""
    source = (
        b"namespace sglang {\n/// \\brief Doubles a value \xe2\x80\x94 in place.\n"
        b"/// \\param out The value.\n__global__ void k(int* out) {\n  out[0] *= 2;\n}\n"
        b"// caf\xc3\xa9\nvoid launch() {}\n}\n"
    )
    found = {}
    for name, data in (("lf", source), ("cr", source.replace(b"\n", b"\r"))):
        main = project / f"{name}.cuh"
        main.write_bytes(data)
        found[name] = sorted((f.code, f.line, f.location.column) for f in _check(main).findings)
    assert [(code, line) for code, line, _ in found["lf"] if code in ("KC310", "KC301")] == [
        ("KC310", 2),
        ("KC310", 7),
    ], found["lf"]
    assert found["cr"] == found["lf"]


def test_a_non_utf8_byte_in_a_template_header_is_not_an_internal_error(project: Path) -> None:
    main = project / "kernel.cuh"
    main.write_bytes(b"namespace sglang {\n/* \x9c */ __global__ void k(float* p) {}\n}\n")
    result = _check(main)
    assert not [f.message for f in result.findings if "internal error" in f.message]


@pytest.mark.parametrize("qualifier, too_deep", [("__global__ ", True), ("", False)], ids=["kernel", "host"])
def test_a_deep_expression_prints_no_traceback(
    project: Path, capfd: pytest.CaptureFixture, qualifier: str, too_deep: bool
) -> None:
    """A recursion error inside libclang's visitor callback is printed by ctypes (or turned
    into a ctypes error). The walks are iterative; the data-flow walk of kernels and device
    functions recurses, bounded: past the bound the file is one KC000 that names it."""
    main = project / "kernel.cuh"
    terms = "+".join(["1"] * 3000)
    main.write_text(
        "namespace sglang {\n/// \\brief k.\n/// \\param out Output.\n"
        f"{qualifier}void k(int* out) {{ int total = {terms}; out[0] = total; }}\n}}\n"
    )
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)  # Python's default (hypothesis, in the same session, raises it)
    try:
        result = _check(main)
    finally:
        sys.setrecursionlimit(limit)
    err = capfd.readouterr().err
    assert "RecursionError" not in err and "Traceback" not in err, err[:2000]
    assert not [f.message for f in result.findings if "internal error" in f.message]
    kc000 = [(f.line, f.message) for f in result.findings if f.code == "KC000"]
    if too_deep:
        from kernel_check.clang.cursors import MAX_NESTING

        assert [line for line, _ in kc000] == [4] and f"nested more than {MAX_NESTING} levels" in kc000[0][1], kc000
    else:
        assert kc000 == [], kc000


def test_an_error_does_not_make_extraction_visit_the_whole_translation_unit(project: Path, monkeypatch) -> None:
    from kernel_check.clang import extract

    calls = {"n": 0}
    original = extract.in_file

    def counting(cursor, path):
        calls["n"] += 1
        return original(cursor, path)

    monkeypatch.setattr(extract, "in_file", counting)
    clean, broken = project / "clean.cuh", project / "broken.cuh"
    clean.write_text("namespace sglang { inline int f() { return 1; } }\n")
    broken.write_text("namespace sglang { inline int f() { return undeclared; } }\n")
    counts = []
    for path in (clean, broken):
        calls["n"] = 0
        from kernel_check.clang.parse import parse_file

        unit = parse_file(path, path.read_text(), resolve_settings("hermetic"))
        extract.extract(unit, path.read_text(), path.read_bytes())
        counts.append(calls["n"])
    assert counts[1] <= 2 * counts[0] + 100, f"in_file calls: clean {counts[0]}, with one error {counts[1]}"


def test_a_file_past_the_error_limit_keeps_the_preamble(project: Path, tmp_path: Path) -> None:
    """clang's location-less "too many errors emitted" fatal is no PCH problem: rejecting
    the PCH for it rebuilt the shared preamble for every file with over 50 errors."""
    from kernel_check.clang.preamble import PreambleCache

    cache = PreambleCache(tmp_path / "preamble")
    good = project / "good.cuh"
    good.write_text("#include <sgl_kernel/utils.cuh>\nnamespace sglang { int fine; }\n")
    _check_here(good, cache)
    assert cache.stats.parsed == 1
    broken = project / "broken.cuh"
    broken.write_text(
        "#include <sgl_kernel/utils.cuh>\nnamespace sglang {\n"
        + "".join(f"int v{i} = undeclared_{i};\n" for i in range(60))
        + "}\n"
    )
    _check_here(broken, cache)
    assert cache.stats.rejected == 0 and cache.stats.built == 1, cache.stats


def test_a_suppression_after_a_form_feed_covers_its_line(project: Path) -> None:
    """Suppression lines are numbered as clang numbers them (`str.splitlines()` also breaks at
    \\f, \\v, \\x1c-\\x1e, \\x85, U+2028, U+2029)."""
    main = project / "kernel.cuh"
    main.write_bytes(
        b"// page\x0cbreak\nvoid outside_namespace() {}  // kernel-check: ignore[KC320]\nnamespace sglang {}\n"
    )  # the file's own `namespace sglang` makes KC320 apply to it
    codes = [(f.code, f.line) for f in _check(main).findings]
    assert codes == [], codes


def test_deep_nesting_is_checked_not_crashed(project: Path) -> None:
    """2000 nested parentheses (under clang's bracket-depth limit of 2048) overflowed the 8 MiB
    stack libclang parses on by default: SIGSEGV, one KC000 per file (93 of the 10,000 long-profile
    cases). Parsed on the deep-stack thread (clang/deep_stack.py) the file is checked like any
    other, in the serial path too. (A crash that still happens is contained: test_time_bound.py.)"""
    import json
    import os
    import subprocess
    import sys

    # each file opens `namespace sglang` itself, which makes KC320 apply to it
    (project / "deep.cuh").write_text("int nest_v = " + "(" * 2000 + "1" + ")" * 2000 + ";\nnamespace sglang {}\n")
    (project / "fine.cuh").write_text("void outside_namespace() {}\nnamespace sglang {}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNEL_CHECK_")}
    proc = subprocess.run(
        [sys.executable, "-m", "kernel_check", ".", "--format", "json", "--no-cache", "--jobs", "1"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]  # warnings only
    findings = json.loads(proc.stdout)
    deep = [(f["code"], f["line"]) for f in findings if f["path"].endswith("deep.cuh")]
    assert deep == [("KC320", 1)], deep  # the variable outside namespace sglang: the rules ran
    assert "KC320" in {f["code"] for f in findings if f["path"].endswith("fine.cuh")}


def test_an_include_of_itself_with_a_guard_is_fine(project: Path) -> None:
    """(`#pragma once` does not apply to the main file: clang then nests 200 deep, a KC000.)"""
    main = project / "kernel.cuh"
    main.write_text(
        '#ifndef KERNEL_CUH\n#define KERNEL_CUH\n#include "kernel.cuh"\nnamespace sglang { int fine; }\n#endif\n'
    )
    assert [f.code for f in _check(main).findings] == []


def test_an_include_cycle_of_headers_is_a_kc000_not_a_crash(project: Path) -> None:
    (project / "a.h").write_text('#include "b.h"\nstruct A {};\n')
    (project / "b.h").write_text('#include "a.h"\n#include "kernel.cuh"\nstruct B {};\n')
    main = project / "kernel.cuh"
    main.write_text('#include "a.h"\nnamespace sglang { int fine; }\n')
    with contextlib.redirect_stderr(io.StringIO()):
        result = _check(main)
    assert "KC000" in {f.code for f in result.findings}
    assert not [f.message for f in result.findings if "internal error" in f.message or "crashed" in f.message]
