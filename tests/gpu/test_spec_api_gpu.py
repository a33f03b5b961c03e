"""The spec API's host buffers and returned outputs, end to end on a real GPU, with no shim:
a launcher that reads a pinned host buffer (``Tensor(device="cpu", pinned=True)``) and
launchers that return a tuple or one tensor (``returns=``) go through every check
(reference, determinism, inputs, bad inputs, stream, graph, the four sanitizers) clean,
and their planted twins (a wrong reference, outputs named in the wrong order, a returned
tensor of another dtype than declared) are caught."""

from __future__ import annotations

import dataclasses
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
from kernel_check.harness.spec import Role, Tensor

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
# On an H100 (2026-12-06) the pinned host-buffer fixture failed with KD301 "factors: cuda
# tensor was not rejected and the kernel faulted: illegal memory access" (and the planted twins
# of the same module with it). Root cause: the bad-input variants before that case (offset,
# padded and strided copies, dtype conversions) rebuilt the pinned buffer in pageable host
# memory, which the kernel cannot read over the bus; the launcher accepted the offset copy, and
# its fault surfaced at the next call. `execute._zeros_beside` keeps those copies pinned. Not
# yet re-run on a GPU, so the marker stays (not strict: a pass shows as XPASS).
HOST_BUFFER_OPEN = pytest.mark.xfail(
    reason="pinned bad-input copies were pageable (fixed, not re-run on a GPU); issue 29", strict=False
)
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


def _planted() -> dict[str, tuple]:
    """Planted twins, each with the code it must produce."""
    scale, pair, single = CLEAN["fixture_pinned_scale"], CLEAN["fixture_sum_diff"], CLEAN["fixture_doubled"]
    wrong_dtype = tuple(
        dataclasses.replace(a, dtype="float16") if isinstance(a, Tensor) and a.role is Role.OUT else a
        for a in single.args
    )
    return {
        "KD101 factors ignored": dataclasses.replace(scale, name="planted_pinned_ref", reference=lambda x, factors: x),
        "KD101 swapped": dataclasses.replace(pair, name="planted_swapped", returns=("diff", "sum")),
        "KD101 dtype": dataclasses.replace(single, name="planted_returned_dtype", args=wrong_dtype),
    }


PLANTED = _planted()


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


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=HOST_BUFFER_OPEN) if n == "fixture_pinned_scale" else n for n in sorted(CLEAN)]
)
def test_host_buffers_and_returned_outputs_pass_every_check(harness, name):
    failing = [f"{f.code} {f.message}" for f in harness.by_spec[name] if f.severity is not Severity.INFO]
    assert not failing, failing
    cells = _cells(harness, name)
    assert {column: cells.get(column, "-") for column in CHECKED} == dict.fromkeys(CHECKED, "ok")


@HOST_BUFFER_OPEN
@pytest.mark.parametrize("label", sorted(PLANTED))
def test_planted_twins_are_caught(planted, label):
    spec = PLANTED[label]
    findings = planted.by_spec[spec.name]
    assert any(f.code == "KD101" for f in findings), [f"{f.code} {f.message}" for f in findings]
    if label == "KD101 dtype":  # the call's returned tensor is judged against its declaration
        assert any("returned output out" in f.message and "float16" in f.message for f in findings)
