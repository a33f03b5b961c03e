"""`kernel-check confirm` end to end on a real GPU: the confirm fixture's KC401 (a gather whose
ids nothing bounds) is run with its witness -- the shape and the id the solver chose -- under
memcheck and confirmed, and so is its KC408 (a vector load whose row stride the launcher does
not check), with the padded view its witness names; the static report then says so in the
finding's message, and the clamped twin of the same file gives no finding to confirm."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import expectations
from kernel_check.build import nvcc_available
from kernel_check.harness.run import visible_gpus
from kernel_check.harness.sanitize import find_sanitizer

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "confirm"

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not visible_gpus(), reason="no CUDA GPU visible (nvidia-smi lists none)"),
    pytest.mark.skipif(not nvcc_available(), reason="nvcc not found (install the CUDA toolkit or set CUDA_HOME)"),
    pytest.mark.skipif(find_sanitizer() is None, reason="compute-sanitizer not found"),
]


def _kernel_check(*args: str, cwd: Path, cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "KERNEL_CHECK_CACHE_DIR": str(cache)}
    return subprocess.run(
        [sys.executable, "-m", "kernel_check", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=540
    )


def _expected_line(source: Path, code: str) -> int:
    """The one line the fixture marks with ``// expect: CODE`` (so an edit above it moves both)."""
    (line,) = [number for number, expected in expectations(source) if expected == code]
    return line


def test_confirm_a_kc401_finding_with_memcheck(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(FIXTURE, project)
    (project / "pyproject.toml").write_text("[tool.kernel-check]\n")
    cache = tmp_path / "cache"
    done = _kernel_check("confirm", ".", cwd=project, cache=cache)
    print(done.stdout, done.stderr[-4000:], sep="\n")
    assert done.returncode == 1, done.stderr[-2000:]  # a finding confirmed
    (row,) = [line for line in done.stdout.splitlines() if line.startswith("KC401 ")]
    assert f"unbounded_gather.cuh:{_expected_line(project / 'unbounded_gather.cuh', 'KC401')}" in row, row
    assert "ids:=1" in row, row
    assert "| confirmed by memcheck on " in row and "[confirm_unbounded_gather[" in row, row
    # KC408's witness is a padded view: `x` laid out with rows 9 floats apart, so the second
    # row's 16-byte load is misaligned, which memcheck reports
    (row,) = [line for line in done.stdout.splitlines() if line.startswith("KC408 ")]
    assert f"strided_rows.cuh:{_expected_line(project / 'strided_rows.cuh', 'KC408')}" in row, row
    assert "x=[8,8]/[9,1]" in row, row
    assert "| confirmed by memcheck on " in row and "[confirm_strided_rows[" in row, row
    report = _kernel_check(".", "--select", "KC401", "--format", "json", cwd=project, cache=cache)
    (finding,) = json.loads(report.stdout)
    assert " confirmed on the GPU by memcheck, " in finding["message"], finding["message"]
