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
