"""The one back end (`kernel_check.finalize`): build and dynamic findings go through the same
filters, baseline and gate as static ones, under the project's configuration; a file's
status is a value on its result.

The dynamic findings are the harness's own: compute-sanitizer's memcheck output recorded
from a real run of the planted tail overrun (tests/fixtures/harness), parsed and located
by `harness.sanitize`, and a result mismatch made by `harness.run.make_finding` for the
real spec. The build findings come from real nvcc runs (skipped without nvcc).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kernel_check import codes, runtime
from kernel_check.baseline import load_baseline
from kernel_check.clang.parse import resolve_settings
from kernel_check.cli import main
from kernel_check.cli_common import make_policy
from kernel_check.config import load_config
from kernel_check.engine import RunOptions, check_file
from kernel_check.finalize import TEST_STAGES, Policy, Verdict, filter_results, finalize, record_baseline
from kernel_check.finding import Finding
from kernel_check.harness import cli as harness_cli
from kernel_check.harness.discover import discover
from kernel_check.harness.run import launcher_location, make_finding
from kernel_check.harness.sanitize import parse_output, report_findings
from kernel_check.harness.spec import KernelSpec
from kernel_check.registry import load_rules
from kernel_check.results import FileStatus
from test_build import BROKEN_SOURCE, BROKEN_SPEC
from test_time_bound import macro_bomb

FIXTURES = Path(__file__).parent / "fixtures" / "harness"
MEMCHECK_OUTPUT = FIXTURES / "sanitizer_output" / "harness-tail_overrun-memcheck.txt"
KERNEL = "kernels/tail_overrun.cuh"
needs_nvcc = pytest.mark.skipif(
    runtime.find_nvcc() is None, reason="nvcc not found (install the CUDA toolkit or set CUDA_HOME)"
)


@pytest.fixture
def project(tail_overrun_project: Path) -> Path:
    root = tail_overrun_project
    load_rules()
    return root


def configure(root: Path, table: str) -> None:
    (root / "pyproject.toml").write_text(f'[project]\nname = "p"\n\n[tool.kernel-check]\n{table}\n')


def planted_run(root: Path) -> tuple[KernelSpec, list[Finding]]:
    """The spec and what `kernel-check test` reports for it: memcheck's out-of-bounds read
    (KD201, at the kernel's line 27) and a result mismatch (KD101, at the launcher)."""
    spec = next(s for s in discover([root / "kernels"]).specs if s.name == "fixture_tail_overrun")
    reports = parse_output("memcheck", MEMCHECK_OUTPUT.read_text())
    memcheck = report_findings(
        reports, fallback=launcher_location(spec), kernels=["tail_overrun_kernel"], search=[root / "kernels"]
    )
    mismatch = make_finding(spec, codes.RESULT_MISMATCH, f"{spec.name}: result differs from the reference")
    return spec, memcheck + [mismatch]


def policy(root: Path, **given) -> Policy:
    return make_policy(load_config(root), TEST_STAGES, paths=(root / "kernels",), **given)


def judge(root: Path, findings: list[Finding] | None = None, **given) -> Verdict:
    spec, planted = planted_run(root)
    chosen = policy(root, **given)
    return finalize(
        filter_results(planted if findings is None else findings, chosen, [launcher_location(spec).path]), chosen
    )


def reported(verdict: Verdict) -> list[tuple[str, str, int]]:
    return sorted((f.code, f.path, f.line) for f in verdict.findings)


def test_without_configuration_every_dynamic_finding_is_reported_and_fails(project: Path) -> None:
    verdict = judge(project)
    assert [code for code, _, _ in reported(verdict)] == ["KD101", "KD201"]
    assert all(path == KERNEL for _, path, _ in reported(verdict))
    assert (codes.MEMCHECK, KERNEL, 27) in reported(verdict)
    assert verdict.fails and verdict.exit_status() == 1 and verdict.exit_status(exit_zero=True) == 0


@pytest.mark.parametrize(
    "table, given, left",
    [
        ('ignore = ["KD2"]', {}, ["KD101"]),
        ('select = ["KD201"]', {}, ["KD201"]),
        ('per-file-ignores = {"kernels/*.cuh" = ["KD101"]}', {}, ["KD201"]),
        ('per-file-ignores = {"other/*.cuh" = ["KD101"]}', {}, ["KD101", "KD201"]),
        ("", {"select": ["KD1"]}, ["KD101"]),
        ('select = ["KD201"]', {"select": ["KD101"]}, ["KD101"]),  # --select replaces config `select`
        ('ignore = ["KD101"]', {"ignore": ["KD201"]}, []),  # --ignore adds to config `ignore`
    ],
)
def test_select_ignore_and_per_file_ignores_apply_to_dynamic_codes(
    project: Path, table: str, given: dict, left: list[str]
) -> None:
    configure(project, table)
    verdict = judge(project, **given)
    assert [code for code, _, _ in reported(verdict)] == left
    assert verdict.fails is bool(left)


def test_severity_overrides_and_strict_decide_the_gate(project: Path) -> None:
    configure(project, 'severity = {KD101 = "warning", KD201 = "info"}')
    verdict = judge(project)
    assert {(f.code, f.severity.value) for f in verdict.findings} == {("KD101", "warning"), ("KD201", "info")}
    assert not verdict.fails
    assert [f.code for f in judge(project, strict=True).failing] == ["KD101"]  # info never fails
    configure(project, 'strict = true\nseverity = {KD101 = "warning"}')
    assert sorted(f.code for f in judge(project).failing) == ["KD101", "KD201"]


@pytest.mark.slow
def test_an_inline_suppression_hides_a_dynamic_finding_and_the_static_check_leaves_it_alone(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kernel = project / KERNEL
    lines = kernel.read_text().splitlines(keepends=True)
    assert "if (i < bound)" in lines[25]  # line 26: the suppression covers it and line 27
    lines[25] = lines[25].rstrip("\n") + "  // kernel-check: ignore[KD201]\n"
    lines[0] = lines[0].rstrip("\n") + "  // kernel-check: ignore[KC130]\n"  # unused: the contrast
    kernel.write_text("".join(lines))
    verdict = judge(project)
    assert [code for code, _, _ in reported(verdict)] == ["KD101"] and verdict.suppressed == 1
    # The static check cannot use a KD201 suppression (only `kernel-check test` can), so it
    # does not call it unused; the unused KC130 one it does report.
    main(["--no-cache", "--format", "json", KERNEL])
    unused = [f for f in json.loads(capsys.readouterr().out) if f["code"] == codes.UNUSED_SUPPRESSION]
    assert [(f["line"], f["message"]) for f in unused] == [(1, "unused suppression for KC130")]


@pytest.mark.slow
def test_one_baseline_holds_dynamic_and_static_entries(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec, planted = planted_run(project)
    writing = policy(project, writes_baseline=True)
    assert record_baseline(project / "kc.json", filter_results(planted, writing, [KERNEL]), writing) == 0
    assert "wrote 2 baseline entries (2 findings in 1 file)" in capsys.readouterr().out
    configure(project, 'baseline = "kc.json"')
    verdict = judge(project)
    assert verdict.findings == [] and verdict.baseline_hidden == 2 and not verdict.fails
    # the mismatch is fixed: its entry counts as fixed, and a new finding is reported
    fixed = judge(project, findings=[f for f in planted if f.code != codes.RESULT_MISMATCH])
    assert (fixed.baseline_hidden, fixed.baseline_fixed, fixed.findings) == (1, 1, [])
    new = make_finding(spec, codes.NONDETERMINISTIC, f"{spec.name}: two runs differ")
    assert [f.code for f in judge(project, findings=[*planted, new]).findings] == ["KD103"]
    # A static run neither counts the dynamic entries as fixed nor drops them when it
    # writes the same baseline: each stage covers only its own codes. (The static check
    # finds the planted overrun as well, at `kPlantBug = 1`: a read and a write past `n`.)
    assert main(["--no-cache", KERNEL]) == 1
    out = capsys.readouterr().out
    assert "fixed" not in out and out.count("KC406") == 2, out
    assert main(["--no-cache", "--write-baseline", "kc.json", KERNEL]) == 0
    # one entry per code and kernel (its count the findings it covers)
    assert sorted(key.code for key in load_baseline(project / "kc.json").entries) == ["KC406", "KD101", "KD201"]


def test_file_status_is_a_value_of_the_result(project: Path) -> None:
    sources = project / "src"
    sources.mkdir()
    files = {
        "clean.cuh": "/// \\file clean\n#pragma once\n",
        "broken.cuh": "#pragma once\nint broken( {\n",
        "binary.cuh": "\0\1\2",
        "bomb.cuh": macro_bomb(),
    }
    for name, text in files.items():
        (sources / name).write_text(text)
    configure(project, "file-timeout = 1")
    options = RunOptions(load_config(project), resolve_settings("hermetic"))
    results = {name: check_file(sources / name, options) for name in files}
    assert {name: r.status for name, r in results.items()} == {
        "clean.cuh": FileStatus.CHECKED,
        "broken.cuh": FileStatus.PARSE_ERROR,
        "binary.cuh": FileStatus.PARSE_ERROR,
        "bomb.cuh": FileStatus.NOT_CHECKED,
    }
    assert [f.code for f in results["bomb.cuh"].findings] == [codes.PARSE_ERROR]
    # the back end reads the value: a baseline records the parse errors, never the timeout,
    # and a recorded entry of the same text cannot hide the timeout's finding either
    static = make_policy(load_config(project), codes.STATIC, paths=(sources,), writes_baseline=True)
    record_baseline(project / "kc.json", list(results.values()), static)
    recorded = load_baseline(project / "kc.json").entries
    assert sorted(key.path for key in recorded) == ["src/binary.cuh", "src/broken.cuh"]
    configure(project, 'file-timeout = 1\nbaseline = "kc.json"')
    verdict = finalize(list(results.values()), make_policy(load_config(project), codes.STATIC, paths=(sources,)))
    assert [(f.path, f.code) for f in verdict.findings] == [(str(sources / "bomb.cuh"), "KC000")]
    assert verdict.baseline_hidden == 2
    assert verdict.statuses[str(sources / "bomb.cuh")] is FileStatus.NOT_CHECKED


def test_the_json_report_carries_each_files_status(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A script tells a file the run could not check from one that failed to parse by the
    report's `file_status`, not by the KC000's wording."""
    sources = project / "src"
    sources.mkdir()
    (sources / "broken.cuh").write_text("#pragma once\nint broken( {\n")
    # 2**24 tokens (seconds of CPU past the limit) against a 3 s limit that a parse error,
    # a cold libclang and a loaded machine stay well inside
    (sources / "bomb.cuh").write_text(macro_bomb(depth=24))
    configure(project, "file-timeout = 3")
    assert main(["--no-cache", "--jobs", "1", "--format", "json", "src"]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert sorted((row["path"], row["code"], row["file_status"]) for row in rows) == [
        ("src/bomb.cuh", "KC000", "not checked"),
        ("src/broken.cuh", "KC000", "parse error"),
    ]


# -- the commands -----------------------------------------------------------------------------


@pytest.fixture
def broken_tree(project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "9.0")
    for name in ("tail_overrun.cuh", "tail_overrun_spec.py"):
        (project / "kernels" / name).unlink()
    (project / "kernels" / "broken.cuh").write_text(BROKEN_SOURCE)
    (project / "kernels" / "broken_spec.py").write_text(BROKEN_SPEC)
    return project


@pytest.mark.slow
@pytest.mark.nvcc
@needs_nvcc
def test_build_honours_the_configuration_and_the_baseline(
    broken_tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert harness_cli.main(["build", "kernels", "--format", "json"]) == 1
    (finding,) = json.loads(capsys.readouterr().out)
    assert finding["code"] == "KC600" and finding["path"] == "kernels/broken.cuh"
    configure(broken_tree, 'per-file-ignores = {"kernels/broken.cuh" = ["KC6"]}')
    assert harness_cli.main(["build", "kernels", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    configure(broken_tree, "")
    assert harness_cli.main(["build", "kernels", "--write-baseline", "kc.json"]) == 0
    assert "wrote 1 baseline entry" in capsys.readouterr().out
    assert harness_cli.main(["build", "kernels", "--baseline", "kc.json"]) == 0
    assert "1 hidden by the baseline" in capsys.readouterr().out
    assert harness_cli.main(["build", "kernels", "--ignore", "KD9"]) == 2  # a typo costs no build
    assert "unknown rule code or prefix 'KD9'" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.nvcc
@needs_nvcc
def test_the_pytest_plugin_honours_the_configuration(broken_tree: Path) -> None:
    def pytest_run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-p",
                "no:cacheprovider",
                "--kernel-check",
                "--kernel-check-compile-only",
                "kernels",
            ],
            cwd=broken_tree,
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        )

    failed = pytest_run()
    assert failed.returncode == 1 and re.search(r"kernels/broken\.cuh:\d+: KC600 ", failed.stdout), failed.stdout
    configure(broken_tree, 'severity = {KC600 = "warning"}')
    passed = pytest_run()
    assert passed.returncode == 0 and "1 passed" in passed.stdout, passed.stdout
    configure(broken_tree, 'strict = true\nseverity = {KC600 = "warning"}')
    assert pytest_run().returncode == 1
    configure(broken_tree, 'select = ["KC9"]')  # a typo: one line, not a traceback
    typo = pytest_run()
    assert typo.returncode == 1 and "unknown rule code or prefix 'KC9'" in typo.stdout
    assert "Traceback" not in typo.stdout
