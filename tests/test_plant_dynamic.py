"""bench/plant_dynamic.py without a GPU: a planting edits exactly the spot it names, a bad
plant folder is one clear error, the verdicts compare planted with unplanted findings, a
trimmed draft is what discovery loads, and the variant's git HEAD is the unplanted kernel."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import plant_dynamic as pd
from kernel_check.harness.discover import discover

KERNEL = """\
__global__ void k(float* out, int n) {
  int i = threadIdx.x;
  if (i < n) out[i] = 1.0f;
  if (i < n) out[i] += 1.0f;
}
"""


def planting(line: int, before: str = "if (i < n)", after: str = "if (i <= n)", **kw: object) -> pd.Planting:
    fields = {"kernel": "k", "defect": "memory", "file": "k.cuh", "line": line, "before": before, "after": after}
    return pd.Planting(**{**fields, **kw})  # type: ignore[arg-type]


def test_planting_edits_the_occurrence_on_its_line_only() -> None:
    planted = pd.planted_text(KERNEL, planting(4))
    assert planted.splitlines()[2] == "  if (i < n) out[i] = 1.0f;"
    assert planted.splitlines()[3] == "  if (i <= n) out[i] += 1.0f;"


def test_planting_that_does_not_start_on_its_line_is_refused() -> None:
    with pytest.raises(pd.PlantError, match=r"k\.cuh:2: 'if \(i < n\)' does not start on this line"):
        pd.planted_text(KERNEL, planting(2))
    with pytest.raises(pd.PlantError, match="has no line 40"):
        pd.planted_text(KERNEL, planting(40))


def write_plant_dir(root: Path, plantings: list[dict]) -> Path:
    (root / "kernels" / "k").mkdir(parents=True)
    (root / "kernels" / "k" / "k.cuh").write_text(KERNEL)
    (root / "kernels.json").write_text(json.dumps({"k": {"source": "k.cuh", "launcher": "run"}}))
    (root / "plantings.json").write_text(json.dumps(plantings))
    return root


ENTRY = {"kernel": "k", "class": "memory", "file": "k.cuh", "line": 3, "before": "<", "after": "<="}


def test_plant_folder_loads(tmp_path: Path) -> None:
    root = write_plant_dir(tmp_path, [ENTRY])
    kernels = pd.load_kernels(root)
    assert [p.variant for p in pd.load_plantings(root, kernels)] == ["memory"]


def test_kernel_defines_reach_spec_new(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = write_plant_dir(tmp_path, [ENTRY])
    entry = {"source": "k.cuh", "launcher": "run", "defines": ["FLASHINFER_ENABLE_F16=1", "USE_X=2"]}
    (root / "kernels.json").write_text(json.dumps({"k": entry}))
    [kernel] = pd.load_kernels(root)
    assert kernel.defines == ("FLASHINFER_ENABLE_F16=1", "USE_X=2")
    commands: list[list[str]] = []

    def fake_run(command: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        commands.append(command)
        return subprocess.CompletedProcess(command, 1, "", "no launcher found")

    monkeypatch.setattr(pd.subprocess, "run", fake_run)
    pd.draft_spec(root / "kernels" / "k", kernel)
    [command] = commands
    assert command[command.index("new") :] == [
        *("new", "k.cuh", "--launcher", "run"),
        *("-D", "FLASHINFER_ENABLE_F16=1", "-D", "USE_X=2"),
    ]


def test_kernel_defines_must_be_strings(tmp_path: Path) -> None:
    root = write_plant_dir(tmp_path, [ENTRY])
    (root / "kernels.json").write_text(json.dumps({"k": {"source": "k.cuh", "launcher": "run", "defines": "X=1"}}))
    with pytest.raises(pd.PlantError, match="k: 'defines' must be a list of NAME=VALUE strings"):
        pd.load_kernels(root)


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ([{**ENTRY, "class": "leak"}], r"entry 0: class 'leak' is none of memory, uninit, unwritten, nan"),
        ([{**ENTRY, "kernel": "other"}], r"entry 0: unknown kernel 'other'"),
        ([ENTRY, ENTRY], r"entry 1: a second memory planting for k"),
        ([{"kernel": "k"}], r"entry 0: needs kernel, class, file, line, before, after"),
    ],
)
def test_bad_plantings_name_the_entry(tmp_path: Path, entries: list[dict], message: str) -> None:
    root = write_plant_dir(tmp_path, entries)
    with pytest.raises(pd.PlantError, match=message):
        pd.load_plantings(root, pd.load_kernels(root))


def test_main_reports_a_bad_plant_folder_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_plant_dir(tmp_path, [{**ENTRY, "class": "leak"}])
    assert pd.main([str(root), "--out", str(tmp_path / "out"), "--dry-run"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def finding(code: str, message: str) -> dict:
    return {"code": code, "message": message}


def run(variant: str, *findings: dict, status: str = "ok") -> pd.Run:
    return pd.Run("k", variant, "plain", status, findings=list(findings))


def test_verdict_counts_only_findings_the_unplanted_run_lacks() -> None:
    noise = finding("KD301", "x: a tensor of 4096 elements at /tmp/a/unplanted/k.cuh was accepted")
    same_noise = finding("KD301", "x: a tensor of 127 elements at /tmp/a/memory/k.cuh was accepted")
    fault = finding("KD201", "Invalid __global__ write of size 4 bytes in k")
    base = run(pd.UNPLANTED, noise)
    assert pd.verdict(base, run("memory", same_noise)) == pd.Verdict("no")
    assert pd.verdict(base, run("memory", same_noise, fault)) == pd.Verdict("yes", ("KD201",))


def test_verdict_without_a_working_unplanted_run() -> None:
    planted = run("memory", finding("KD201", "Invalid"))
    assert pd.verdict(run(pd.UNPLANTED, finding("KC600", "does not build")), planted).flagged == "unbuilt"
    assert pd.verdict(run(pd.UNPLANTED, status=pd.NO_DRAFT), planted).flagged == pd.NO_DRAFT
    assert pd.verdict(run(pd.UNPLANTED, status="error"), planted).flagged == "error"
    assert pd.verdict(run(pd.UNPLANTED), run("memory", status="error")).flagged == "error"
    assert pd.verdict(run(pd.UNPLANTED), None).flagged == "error"


def test_table_counts_each_verdict() -> None:
    kernels = [pd.Kernel("k", "k.cuh", "run")]
    plantings = [planting(3), planting(3, defect="nan")]
    runs = [run(pd.UNPLANTED), run("memory", finding("KD201", "Invalid")), run("nan")]
    text = pd.table(pd.summarize(kernels, plantings, runs, ["plain"]), ["plain"])
    assert "| k | plain | clean | Y KD201 | - | - | n |" in text
    assert "plain: flagged 1 of 2 planted (yes 1, no 1, unbuilt 0, no-draft 0, error 0)" in text


SPEC = """\
from kernel_check.harness.spec import Instantiation, KernelSpec, Role, Tensor

SPEC = KernelSpec(
    name="fill",
    source="k.cuh",
    export="run",
    symbol="run",
    args=(Tensor("out", ("n",), dtype="float32", role=Role.OUT),),
    reference=None,
    instantiations=(Instantiation((1,)), Instantiation((2,)), Instantiation((3,))),
    grid={"n": (1, 127, 4097)},
)
"""


def test_trimmed_draft_is_what_discovery_loads(tmp_path: Path) -> None:
    (tmp_path / "k.cuh").write_text(KERNEL)
    spec_file = tmp_path / "k_spec.py"
    spec_file.write_text(SPEC)
    pd.trim_instantiations(spec_file, 2)
    found = discover([tmp_path])
    assert found.errors == []
    [spec] = found.specs
    assert (spec.name, [i.template_args for i in spec.instantiations]) == ("fill", [(1,), (2,)])
    assert spec.spec_path == str(spec_file.resolve())
    assert (tmp_path / "k_draft.py").read_text() == SPEC


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_variant_head_is_the_unplanted_kernel(tmp_path: Path) -> None:
    (tmp_path / "k.cuh").write_text(KERNEL)
    assert pd.git_commit_all(tmp_path) == ""
    pd.apply_planting(tmp_path, planting(3))
    head = subprocess.run(["git", "show", "HEAD:k.cuh"], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert head.stdout == KERNEL
    assert "if (i <= n) out[i] = 1.0f;" in (tmp_path / "k.cuh").read_text()


def test_kernels_option_runs_only_those_kernels(tmp_path: Path) -> None:
    root = write_plant_dir(tmp_path / "plant", [ENTRY, {**ENTRY, "kernel": "k2"}])
    shutil.copytree(root / "kernels" / "k", root / "kernels" / "k2")
    kernels = json.loads((root / "kernels.json").read_text())
    (root / "kernels.json").write_text(json.dumps({**kernels, "k2": kernels["k"]}))
    out = tmp_path / "out"
    assert pd.main([str(root), "--out", str(out), "--kernels", "k2", "--dry-run", "--parallel", "1"]) == 0
    result = json.loads((out / "plant_dynamic.json").read_text())
    assert [p["kernel"] for p in result["plantings"]] == ["k2"]
    [draft] = result["drafts"]
    assert draft["kernel"] == "k2" and "no launcher found" in draft["error"]
