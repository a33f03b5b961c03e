"""The spec API's host buffers and returned outputs, end to end on a real GPU, with no shim:
a launcher that reads a pinned host buffer (``Tensor(device="cpu", pinned=True)``) and
launchers that return a tuple or one tensor (``returns=``) go through every check
(reference, determinism, inputs, bad inputs, stream, graph, the four sanitizers) clean,
and their planted twins (a wrong reference, outputs named in the wrong order, a returned
tensor of another dtype than declared) are caught."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from kernel_check.build import nvcc_available
from kernel_check.finding import Severity
from kernel_check.harness.discover import discover
from kernel_check.harness.report import Progress, render_table
from kernel_check.harness.run import RunOptions, run_specs, visible_gpus
from kernel_check.harness.sanitize import find_sanitizer

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "spec_api"

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not visible_gpus(), reason="no CUDA GPU visible (nvidia-smi lists none)"),
    pytest.mark.skipif(not nvcc_available(), reason="nvcc not found (install the CUDA toolkit or set CUDA_HOME)"),
    pytest.mark.skipif(
        find_sanitizer() is None and shutil.which("nvidia-smi") is not None, reason="compute-sanitizer not found"
    ),
]

CLEAN = {s.name: s for s in discover([FIXTURES]).specs}
# Seen on an H100 (2026-12-06) and fixed: the pinned fixture's "cuda tensor" bad input was
# a padded host copy (`execute._apply_bad` had no case for it), which its launcher rightly
# accepted (a false KD301); and the planted twins, made inside this module, could not be
# loaded by the harness child by name (KD001 "no spec named ..."): they now have a module of
# their own.
# every check a spec without PDL instantiations runs, and what the clean fixtures must get
CHECKED = (
    "build",
    "KD101",
    "KD103",
    "KD104",
    "KD301",
    "KD402",
    "KD403",
    "memcheck",
    "racecheck",
    "initcheck",
    "synccheck",
)


PLANTED_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "spec_api_planted"
# the twins, by the label of the check each must fail (a module the harness child can load)
PLANTED = {s.name: s for s in discover([PLANTED_DIR]).specs}


def _run(specs, options: RunOptions):
    result = run_specs(specs, options, Progress(sys.stderr))
    print("\n" + render_table(result.rows))
    for name, findings in sorted(result.by_spec.items()):
        print(f"{name}: {[f'{f.code} {f.message}' for f in findings] or 'clean'}")
    assert not result.environment, result.environment
    return result


@pytest.fixture(scope="module")
def harness():
    return _run(list(CLEAN.values()), RunOptions(timeout=30.0, sanitize_timeout=300.0))


@pytest.fixture(scope="module")
def planted():
    return _run(list(PLANTED.values()), RunOptions(timeout=30.0, sanitize=(), bandwidth=False))


def _cells(result, name: str) -> dict[str, str]:
    (row,) = [r for r in result.rows if r.kernel.startswith(f"{name}[")]
    return {column: cell.text() for column, cell in row.cells.items()}


@pytest.mark.parametrize("name", sorted(CLEAN))
def test_host_buffers_and_returned_outputs_pass_every_check(harness, name):
    failing = [f"{f.code} {f.message}" for f in harness.by_spec[name] if f.severity is not Severity.INFO]
    assert not failing, failing
    cells = _cells(harness, name)
    assert {column: cells.get(column, "-") for column in CHECKED} == dict.fromkeys(CHECKED, "ok")


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_planted_twins_are_caught(planted, name):
    findings = planted.by_spec[name]
    assert any(f.code == "KD101" for f in findings), [f"{f.code} {f.message}" for f in findings]
    if name == "planted_returned_dtype":  # the call's returned tensor is judged against its declaration
        assert any("returned output out" in f.message and "float16" in f.message for f in findings)
