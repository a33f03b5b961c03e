"""bench/ecosystem.py on a tiny tree: the report it writes and the difference it computes.

The script runs the installed `kernel-check` (cold, then warm) in hermetic mode over three
files written here: a clean header, a params struct with findings, and a kernel that needs a
third-party header nobody provided."""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


def _load_ecosystem():
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("ecosystem", BENCH / "ecosystem.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ecosystem = _load_ecosystem()

SCALE = """#include <cstdint>

/// \\brief Params of the scale kernel.
struct ScaleParams {
  const float* __restrict__ src;  ///< Input.
  float* __restrict__ dst;        ///< Output.
  unsigned count;                 ///< Elements.
};
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict:
    tree = tmp_path_factory.mktemp("tree")
    (tree / "include" / "sgl_kernel").mkdir(parents=True)
    (tree / "include" / "sgl_kernel" / "marker.h").write_text("#pragma once\nnamespace sglang {}\n")  # KC320 applies
    (tree / "csrc").mkdir()
    (tree / "csrc" / "scale.cuh").write_text(SCALE)
    (tree / "csrc" / "gemm.cuh").write_text("#include <cute/tensor.hpp>\n")
    out = tmp_path_factory.mktemp("out")
    assert ecosystem.main([str(tree), "--modes", "hermetic", "--output-dir", str(out), "--jobs", "1"]) == 0
    written = json.loads((out / "ecosystem.json").read_text())
    written["markdown"] = (out / "ecosystem.md").read_text()
    return written


def test_report_counts_files_parse_errors_and_codes(report: dict) -> None:
    assert report["files"] == {"cpp": 3, "kernels": 2}
    hermetic = report["modes"]["hermetic"]
    assert hermetic["per_code"] == {"KC000": 1, "KC110": 1, "KC320": 1}
    [(cause, paths)] = hermetic["kc000_causes"].items()
    assert "header 'cute/tensor.hpp' not found" in cause and paths == ["csrc/gemm.cuh"]
    # the file that needs cute does not count against parse health; the other one parses
    assert (hermetic["unresolvable_kernel_files"], hermetic["resolvable_kernel_files"]) == (1, 1)
    assert hermetic["kc000_rate_resolvable"] == 0.0 and hermetic["not_checked_files"] == []
    assert hermetic["warm_same_findings"]
    assert hermetic["cold"]["wall_s"] > 0 and hermetic["cold"]["peak_rss_mb"] > 0
    assert "| hermetic | 1 | 1 | 1 | 0 of 1 = 0.0% |" in report["markdown"]


def test_compare_lists_new_and_gone_findings_by_code_and_file(report: dict) -> None:
    later = copy.deepcopy(report)
    findings = later["modes"]["hermetic"]["findings"]
    renamed = next(f for f in findings if f["code"] == "KC110")
    renamed["message"] = renamed["message"].replace("'count'", "'total'")
    renamed["line"] += 3  # moved lines alone are no change
    findings.remove(next(f for f in findings if f["code"] == "KC320"))
    change = ecosystem.compare(report, later)["hermetic"]
    assert list(change["new"]) == ["KC110"] and list(change["new"]["KC110"]) == ["csrc/scale.cuh"]
    assert "'total'" in change["new"]["KC110"]["csrc/scale.cuh"][0]
    assert sorted(change["gone"]) == ["KC110", "KC320"]
    assert ecosystem.compare(report, report)["hermetic"] == {"new": {}, "gone": {}}
    later["compare"] = {"against": "old.json", "modes": ecosystem.compare(report, later)}
    assert "- hermetic, gone KC320: csrc/scale.cuh (1)" in ecosystem.render_markdown(later)


def test_checkout_python_side_is_checked_with_tree_relative_paths(tmp_path: Path) -> None:
    """In a checkout the registered tests and the wrappers are checked for KC5xx, with the
    project paths KC504/KC506 read (an extract: no `.git`, no config marks the root)."""
    kernels = tmp_path / "python" / "sglang" / "kernels" / "jit"
    (kernels / "include" / "sgl_kernel").mkdir(parents=True)
    (kernels / "include" / "sgl_kernel" / "marker.h").write_text("#pragma once\n")
    tests = tmp_path / "test" / "registered" / "kernels" / "ops" / "scale"
    tests.mkdir(parents=True)
    (tests / "test_scale.py").write_text("import torch\n")  # no registration: KC506
    (tests / "test_scale_cpu.py").write_text('register_cpu_ci(est_time=1, suite="base-a-test-cpu")\n')
    wrappers = tmp_path / "python" / "sglang" / "kernels" / "ops"
    wrappers.mkdir()
    (wrappers / "scale.py").write_text('register_cuda_ci(est_time=1, suite="x")\n')  # in the package: KC504
    workdir = tmp_path / "work"
    workdir.mkdir()
    python = ecosystem.python_report(tmp_path, workdir, ["--jobs", "1"])
    assert python["dirs"] == ["test/registered/kernels", "python/sglang/kernels/ops"]
    assert [(f["code"], f["path"]) for f in python["findings"]] == [
        ("KC504", "python/sglang/kernels/ops/scale.py"),
        ("KC506", "test/registered/kernels/ops/scale/test_scale.py"),
    ]
    assert ecosystem.python_report(kernels, workdir, []) is None


def test_a_file_not_checked_is_told_by_its_status_not_its_wording(tmp_path: Path) -> None:
    """The report counts a file apart by the JSON's `file_status`: a worker that died gives
    a KC000 whose message does not say "not checked", and a parse error that happens to
    start with those words is still a parse error."""

    def kc000(path: str, message: str, status: str) -> dict:
        return {"path": str(tmp_path / path), "line": 1, "code": "KC000", "message": message, "file_status": status}

    findings = [
        kc000("lost.cuh", "the worker process died while checking this file", "not checked"),
        kc000("odd.cuh", "not checked: clang could not parse this file", "parse error"),
    ]
    report = ecosystem.mode_report(findings, tmp_path, ["lost.cuh", "odd.cuh"])
    assert report["not_checked_files"] == ["lost.cuh"]
    assert (report["kc000_files"], report["resolvable_kernel_files"]) == (1, 1)
