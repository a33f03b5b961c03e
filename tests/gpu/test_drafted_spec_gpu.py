"""A drafted spec whose reference is then filled in reaches the hand-written spec's verdicts,
on a real GPU: ``kernel-check spec new`` on a csrc/ kernel, the draft's two TODOs (the
reference and the scalar's value) written as a user would, both specs run by the harness
with the same options, the same findings and the same verdict per check."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from kernel_check.build import nvcc_available
from kernel_check.harness.discover import discover
from kernel_check.harness.draft import TODO, draft_text
from kernel_check.harness.report import Progress, render_table
from kernel_check.harness.run import RunOptions, run_specs, visible_gpus
from kernel_check.harness.sanitize import find_sanitizer

CSRC = Path(__file__).resolve().parents[2] / "csrc"

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not visible_gpus(), reason="no CUDA GPU visible (nvidia-smi lists none)"),
    pytest.mark.skipif(not nvcc_available(), reason="nvcc not found (install the CUDA toolkit or set CUDA_HOME)"),
    pytest.mark.skipif(find_sanitizer() is None and shutil.which("nvidia-smi") is not None,
                       reason="compute-sanitizer not found"),
]

# what the user writes in place of the draft's TODOs: the hand-written spec's reference and factor
FILLED_IN = {
    f"reference=None,  # {TODO}: write the PyTorch reference":
        "reference=lambda src, factor: (src.float() * factor).to(src.dtype),",
    f"Scalar('factor', 1.0),  # {TODO}: pick a value": "Scalar('factor', 3.0),",
}


def verdicts(result, name: str) -> dict[str, dict[str, str]]:
    """Each instantiation's verdict per check: the summary rows ``name[instantiation]``."""
    return {row.kernel[len(name) + 1:-1]: {column: cell.text() for column, cell in row.cells.items()}
            for row in result.rows if row.kernel.startswith(f"{name}[")}


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
