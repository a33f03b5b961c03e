"""The harness on the planted-bug fixtures, on a real GPU: every bug caught with its code,
every correct twin clean, a crash and a hang survived in the same run. And a drafted spec
whose reference is then filled in reaches the hand-written spec's verdicts: ``kernel-check
spec new`` on a csrc/ kernel, the draft's two TODOs (the reference and the scalar's value)
written as a user would, both specs run with the same options."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from kernel_check.build import nvcc_available
from kernel_check.finding import Severity
from kernel_check.harness.discover import discover
from kernel_check.harness.draft import TODO, draft_text
from kernel_check.harness.report import Progress, render_table
from kernel_check.harness.run import RunOptions, run_specs, visible_gpus
from kernel_check.harness.sanitize import find_sanitizer
from kernel_check.harness.shard import Shard, shard_specs

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "harness"
CSRC = Path(__file__).resolve().parents[2] / "csrc"

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not visible_gpus(), reason="no CUDA GPU visible (nvidia-smi lists none)"),
    pytest.mark.skipif(not nvcc_available(), reason="nvcc not found (install the CUDA toolkit or set CUDA_HOME)"),
    pytest.mark.skipif(
        find_sanitizer() is None and shutil.which("nvidia-smi") is not None, reason="compute-sanitizer not found"
    ),
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


@pytest.mark.parametrize(
    "name, kernel", [("fixture_anon_shift", "anon_shift_kernel"), ("fixture_macro_shift", "macro_shift_kernel")]
)
def test_sanitizer_reports_of_anonymous_namespace_and_macro_kernels_are_kept(harness, name, kernel):
    """The kernels live in an anonymous namespace (one declared through a macro) and the
    launcher is ``ShiftAdd<...>::run``: the memcheck report names the kernel."""
    reads = [f for f in harness.by_spec[name] if f.code == "KD201"]
    assert reads and any(kernel in f.message for f in reads), [f.message for f in harness.by_spec[name]]


def test_the_gather_bug_is_reported_with_the_profile_that_exposed_it(harness):
    findings = harness.by_spec["fixture_gather_unchecked"]
    assert any(f.code == "KD201" and "ids=oob" in f.message for f in findings), [f.message for f in findings]
    # random in-range ids never show it: nothing but the oob profile fails
    assert all("ids=oob" in f.message for f in findings if f.code in ("KD101", "KD201", "KD001")), [
        f.message for f in findings
    ]


def test_specs_without_a_reference_say_so_in_the_summary(harness):
    rows = [r for r in harness.rows if "_noref" in r.kernel]
    assert rows and all(r.cells["KD101"].text() == "no-ref" for r in rows)


def test_two_shards_reach_the_verdicts_of_one_run():
    """`--shard`: each shard's children reload the spec narrowed to that shard (case numbers,
    sanitizer and bandwidth jobs included); together the shards give every instantiation the
    verdicts of one unsharded run (bandwidth figures aside: they are timings)."""
    specs = discover([CSRC / "elementwise" / "scale_spec.py", CSRC / "norm" / "rmsnorm_spec.py"]).specs
    options = RunOptions(timeout=20.0, sanitize=("memcheck",), sanitize_timeout=300.0)

    def table(result) -> dict[str, dict[str, str]]:
        assert not result.environment and not result.stopped, (result.environment, result.stopped)
        return {
            row.kernel: {column: cell.text() for column, cell in row.cells.items() if column != "KD501"}
            for row in result.rows
        }

    whole = table(run_specs(specs, options, Progress(sys.stderr)))
    first, second = (table(run_specs(shard_specs(specs, Shard(k, 2)), options, Progress(sys.stderr))) for k in (1, 2))
    assert first and second and not set(first) & set(second)
    assert {**first, **second} == whole


# what the user writes in place of the draft's TODOs: the hand-written spec's reference and factor
FILLED_IN = {
    f"reference=None,  # {TODO}: write the PyTorch reference": (
        "reference=lambda src, factor: (src.float() * factor).to(src.dtype),"
    ),
    f"Scalar('factor', 1.0),  # {TODO}: pick a value": "Scalar('factor', 3.0),",
}


def verdicts(result, name: str) -> dict[str, dict[str, str]]:
    """Each instantiation's verdict per check: the summary rows ``name[instantiation]``."""
    return {
        row.kernel[len(name) + 1 : -1]: {column: cell.text() for column, cell in row.cells.items()}
        for row in result.rows
        if row.kernel.startswith(f"{name}[")
    }


def test_a_drafted_spec_with_its_reference_filled_in_reaches_the_hand_written_verdicts(tmp_path):
    hand = discover([CSRC / "elementwise" / "scale_spec.py"]).specs[0]
    spec_path = tmp_path / "scale_drafted_spec.py"
    text = draft_text(CSRC / "elementwise" / "scale.cuh", spec_path)
    for todo, written in FILLED_IN.items():
        assert todo in text, f"the draft no longer holds {todo!r}:\n{text}"
        text = text.replace(todo, written)
    spec_path.write_text(text.replace("name='scale'", "name='scale_drafted'"), encoding="utf-8")
    drafted = discover([spec_path])
    assert not drafted.errors, drafted.errors

    options = RunOptions(timeout=20.0, sanitize=("memcheck", "initcheck"), bandwidth=False)
    result = run_specs([hand, *drafted.specs], options, Progress(sys.stderr))
    print("\n" + render_table(result.rows))

    assert not result.environment and not result.stopped
    assert {f.code for f in result.by_spec["scale_drafted"]} == {f.code for f in result.by_spec["scale"]}
    hand_verdicts, drafted_verdicts = verdicts(result, "scale"), verdicts(result, "scale_drafted")
    assert len(hand_verdicts) == 6 and drafted_verdicts == hand_verdicts
    assert all(cells["KD101"] == "ok" for cells in drafted_verdicts.values())  # compared with the reference
