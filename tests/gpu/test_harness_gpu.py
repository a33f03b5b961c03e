"""The harness on the planted-bug fixtures, on a real GPU: every bug caught with its code,
every correct twin clean, a crash and a hang survived in the same run."""

from __future__ import annotations

import os
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

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "harness"

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not visible_gpus(), reason="no CUDA GPU visible (nvidia-smi lists none)"),
    pytest.mark.skipif(not nvcc_available(), reason="nvcc not found (install the CUDA toolkit or set CUDA_HOME)"),
    pytest.mark.skipif(find_sanitizer() is None and shutil.which("nvidia-smi") is not None,
                       reason="compute-sanitizer not found"),
]

SPECS = discover([FIXTURES]).specs


@pytest.fixture(scope="module")
def harness():
    log_dir = os.environ.get("KERNEL_CHECK_SANITIZER_LOG")  # keep raw sanitizer output (device runs)
    options = RunOptions(timeout=20.0, sanitize_timeout=300.0, sanitizer_log_dir=Path(log_dir) if log_dir else None)
    result = run_specs(SPECS, options, Progress(sys.stderr))
    print("\n" + render_table(result.rows))
    for name, findings in sorted(result.by_spec.items()):
        print(f"{name}: {sorted({f.code for f in findings}) or 'clean'}")
    return result


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_fixture(harness, spec):
    findings = harness.by_spec[spec.name]
    failing = {f.code for f in findings if f.severity is not Severity.INFO}
    if spec.expect:
        missing = set(spec.expect) - failing
        assert not missing, f"{spec.name}: expected {sorted(missing)}, got {sorted(failing)}"
    else:
        assert not failing, "\n".join(f"{f.code} {f.message}" for f in findings)


# ----- real-kernel shapes, reference-free specs, value profiles, the environment -----


@pytest.mark.parametrize("name, kernel", [("fixture_anon_shift", "anon_shift_kernel"),
                                          ("fixture_macro_shift", "macro_shift_kernel")])
def test_sanitizer_reports_of_anonymous_namespace_and_macro_kernels_are_kept(harness, name, kernel):
    """The kernels live in an anonymous namespace (one declared through a macro) and the
    launcher is ``ShiftAdd<...>::run``: the memcheck report names the kernel."""
    reads = [f for f in harness.by_spec[name] if f.code == "KD201"]
    assert reads and any(kernel in f.message for f in reads), [f.message for f in harness.by_spec[name]]


def test_the_gather_bug_is_reported_with_the_profile_that_exposed_it(harness):
    findings = harness.by_spec["fixture_gather_unchecked"]
    assert any(f.code == "KD201" and "ids=oob" in f.message for f in findings), [f.message for f in findings]
    # random in-range ids never show it: nothing but the oob profile fails
    assert all("ids=oob" in f.message for f in findings if f.code in ("KD101", "KD201", "KD001")), \
        [f.message for f in findings]


def test_specs_without_a_reference_say_so_in_the_summary(harness):
    rows = [r for r in harness.rows if "_noref" in r.kernel]
    assert rows and all(r.cells["KD101"].text() == "no-ref" for r in rows)


def test_an_unusable_gpu_is_an_environment_error_not_a_finding():
    spec = next(s for s in SPECS if s.name == "fixture_tail_overrun_ok")
    options = RunOptions(timeout=20.0, sanitize=(), bandwidth=False, gpus=("99",))  # no such GPU
    result = run_specs([spec], options, Progress(sys.stderr))
    assert result.environment and "cases" in result.environment[0], result.environment
    assert not [f for f in result.findings if f.code.startswith("KD")]
