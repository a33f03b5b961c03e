"""`kernel-check confirm` without a GPU: the witness a static finding carries (from a real
libclang parse of the confirm fixture), the case the confirm stage makes of it with the
fixture's real spec, the confirmations store (voided by an edit of the file), the message
the static report gives a confirmed finding, and `confirm` refusing to run without a GPU."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO_ROOT, run_one
from kernel_check import confirmations, runtime
from kernel_check.finding import Counterexample, Finding, Location, Severity
from kernel_check.harness import cli as harness_cli
from kernel_check.harness import draft
from kernel_check.harness.cases import Case, CaseKind
from kernel_check.harness.confirm import CHECKS, COMPARISON, plan, render_table, witness_case
from kernel_check.harness.discover import discover
from kernel_check.report import render
from kernel_check.result_cache import decode, encode

CONFIRM = FIXTURES / "confirm"
SOURCE = CONFIRM / "unbounded_gather.cuh"


def _kc401(path: Path = SOURCE) -> Finding:
    (finding,) = [f for f in run_one(path).findings if f.code == "KC401"]
    return finding


@pytest.fixture(scope="module")
def kc401() -> Finding:
    return _kc401()


@pytest.fixture(scope="module")
def specs() -> list:
    found = discover([CONFIRM])
    assert not found.errors, found.errors
    return found.specs


def _named(specs: list, name: str):
    return next(s for s in specs if s.name == name)


def test_the_witness_is_data(kc401: Finding) -> None:
    """The solver's values, as the message says them: the launcher, its sizes, each
    verified tensor's shape at them, the id and the first thread."""
    assert kc401.witness == Counterexample(
        kernel="unbounded_gather_kernel",
        launcher="sglang::unbounded_gather",
        sizes=(("D", 1), ("N", 1)),
        shapes=(("out", (1, 1)), ("table", (1, 1)), ("ids", (1,))),
        values=(("ids", 1),),
        thread=(0, 0, 0),
        block_dim=(1, 1, 1),
    )
    assert "for D = 1, N = 1 (`table` is [N, D]), `ids[blockIdx.x]` = 1" in kc401.message


@pytest.mark.parametrize(
    ("fixture", "code", "expected"),
    [
        # KC112: the launcher's overflowing size and the shapes it gives (a contract's witness)
        ("kc112_witness_from_contract", "KC112", {"sizes": (("N", 4294967297),), "block_dim": (256, 1, 1)}),
        # KC405: the input to fill, by the tensor the converted value is read from
        ("kc405_unguarded_narrowing_conversion", "KC405", {"kernel": "fires", "fill": (("x", "nan"),)}),
        # KC404: the block's shape and a thread of the race
        ("kc404_shared_read_write_race", "KC404", {"kernel": "races", "block_dim": (33, 1, 1)}),
    ],
)
def test_other_classes_carry_their_witness(fixture: str, code: str, expected: dict) -> None:
    first = next(f for f in run_one(FIXTURES / "cpp" / f"{fixture}.cuh").findings if f.code == code)
    assert first.witness is not None
    assert {name: getattr(first.witness, name) for name in expected} == expected


def test_the_witness_survives_the_result_cache_and_the_reports(kc401: Finding) -> None:
    assert decode(json.loads(json.dumps(encode(kc401)))).witness == kc401.witness
    (row,) = json.loads(render([kc401], "json", root=REPO_ROOT))
    assert row["witness"]["values"] == {"ids": 1}
    assert row["witness"]["shapes"]["table"] == [1, 1]
    log = json.loads(render([kc401], "sarif", root=REPO_ROOT))
    assert log["runs"][0]["results"][0]["properties"]["witness"] == kc401.witness.as_json()


def test_the_case_the_witness_names(kc401: Finding, specs: list) -> None:
    """The spec of the witness's launcher (not its twin of the same file), at the witness's
    shape, the id tensor filled with the witness's id, run under memcheck."""
    planned = plan(kc401, specs)
    assert planned.spec is not None and planned.spec.name == "confirm_unbounded_gather", planned.why
    assert planned.case == Case(0, "default", CaseKind.SANITIZE, (("m", 1), ("n", 1), ("d", 1)), fills=(("ids", 1),))
    assert CHECKS[kc401.code] == "memcheck"
    assert Case.from_json(json.loads(json.dumps(planned.case.to_json()))) == planned.case


def test_a_case_the_spec_cannot_state(kc401: Finding, specs: list) -> None:
    """No spec of the file, a fixed dim the witness contradicts, an input the spec lacks: each
    said, never a guessed case."""
    assert plan(kc401, [s for s in specs if s.source != SOURCE.name]).why.startswith("no spec of its file")
    twin = [s for s in specs if s.name == "confirm_clamped_gather"]  # same file, another launcher
    assert plan(kc401, twin).why == "no spec of its file and its launcher `sglang::unbounded_gather`"
    spec = _named(specs, "confirm_unbounded_gather")
    renamed = dataclasses.replace(kc401.witness, shapes=(("cache", (1, 1)),))
    assert witness_case(spec, "KC401", renamed) == "it has none of the witness's tensors (`cache`)"
    fixed = dataclasses.replace(spec.tensors[1], shape=("n", 8))
    narrow = dataclasses.replace(spec, args=(spec.args[0], fixed, spec.args[2]))
    assert witness_case(narrow, "KC401", kc401.witness) == "`table` dim 1 is 8 in the spec, 1 in the witness"
    other = dataclasses.replace(kc401.witness, values=(("slots", 1),))
    assert witness_case(spec, "KC401", other) == "no input tensor named `slots`"
    assert plan(dataclasses.replace(kc401, witness=None), specs).why.startswith("the finding has no witness")


def test_a_kc405_case_fills_the_input_and_compares(specs: list) -> None:
    witness = Counterexample(kernel="unbounded_gather_kernel", fill=(("table", "nan"),))
    case = witness_case(_named(specs, "confirm_unbounded_gather"), "KC405", witness)
    assert isinstance(case, Case) and case.kind is CaseKind.PROFILE
    assert case.profile is not None and case.profile.label == "table=nan (match)"
    assert CHECKS["KC405"] == COMPARISON


STRIDED = CONFIRM / "strided_rows.cuh"


def test_a_layout_finding_runs_its_padded_view(specs: list) -> None:
    """KC408's witness is data too, with the strides of the view that goes wrong (a row stride
    of 9 floats for rows of 8): the case lays `x` out at them, and memcheck is the check."""
    (finding,) = [f for f in run_one(STRIDED).findings if f.code == "KC408"]
    assert finding.witness is not None
    assert (finding.witness.launcher, finding.witness.sizes) == ("sglang::copy_rows", (("D", 8), ("R", 8), ("S", 9)))
    assert finding.witness.strides == (("x", (9, 1)),)  # `out` is contiguous: no strides
    assert "x=[8,8]/[9,1] out=[8,8]" in finding.witness.describe()
    planned = plan(finding, specs)
    assert planned.spec is not None and planned.spec.name == "confirm_strided_rows", planned.why
    assert planned.case == Case(0, "default", CaseKind.SANITIZE, (("r", 8), ("d", 8)), strides=(("x", (9, 1)),))
    assert Case.from_json(json.loads(json.dumps(planned.case.to_json()))) == planned.case
    assert decode(json.loads(json.dumps(encode(finding)))).witness == finding.witness
    assert CHECKS[finding.code] == "memcheck"
    flat = dataclasses.replace(planned.spec.tensors[1], shape=("r",))
    one_dim = dataclasses.replace(planned.spec, args=(planned.spec.args[0], flat))
    assert witness_case(one_dim, finding.code, finding.witness) == (
        "the witness gives `x` 2 strides, the spec a rank-1 tensor"
    )


def test_a_witness_sets_the_scalars_and_axes_it_names(specs: list) -> None:
    """A launcher size the witness names that is an integer or boolean scalar of the spec
    (`ne_n = 4`, drafted as 1; a flag's 0) takes the witness's value, and one that is a grid
    axis sets the axis; a string scalar of the same name is left alone."""
    from kernel_check.harness.execute import scalar_values
    from kernel_check.harness.spec import Scalar

    spec = _named(specs, "confirm_unbounded_gather")
    extra = (Scalar("ne_n", 1), Scalar("flag", True), Scalar("mode", "fast"))
    with_scalars = dataclasses.replace(spec, args=(*spec.args, *extra))
    witness = Counterexample(kernel="unbounded_gather_kernel", sizes=(("ne_n", 4), ("flag", 0), ("mode", 1), ("m", 3)))
    case = witness_case(with_scalars, "KC401", witness)
    assert isinstance(case, Case)
    assert case.scalars == (("flag", 0), ("ne_n", 4)) and case.size_map["m"] == 3
    assert scalar_values(with_scalars, case) == {"ne_n": 4, "flag": False, "mode": "fast"}
    assert Case.from_json(json.loads(json.dumps(case.to_json()))) == case
    clash = dataclasses.replace(witness, shapes=(("out", (2, 1)),))
    assert witness_case(with_scalars, "KC401", clash) == "the witness gives axis `m` both 2 and 3"


def _project(tmp_path: Path) -> Path:
    """The fixture kernel in a project of its own."""
    (tmp_path / "pyproject.toml").write_text("[tool.kernel-check]\n")
    shutil.copy(SOURCE, tmp_path / SOURCE.name)
    return tmp_path / SOURCE.name


CONFIRMED = confirmations.Verdict("confirmed", "memcheck", "NVIDIA H100 80GB HBM3", "2026-12-06")


def test_a_record_holds_until_the_file_changes(tmp_path: Path) -> None:
    source = _project(tmp_path)
    finding = _kc401(source)
    store = tmp_path / "cache" / confirmations.STORE_NAME
    assert confirmations.record(store, [(finding, CONFIRMED)], tmp_path)
    (annotated,) = confirmations.annotate([finding], confirmations.load(store), tmp_path)
    assert (
        annotated.message == finding.message + "; confirmed on the GPU by memcheck, NVIDIA H100 80GB HBM3, 2026-12-06"
    )
    source.write_text(source.read_text() + "// an edit\n")
    (after_edit,) = confirmations.annotate([finding], confirmations.load(store), tmp_path)
    assert after_edit.message == finding.message


def test_only_a_confirmed_finding_changes(tmp_path: Path) -> None:
    finding = _kc401(_project(tmp_path))
    store = tmp_path / confirmations.STORE_NAME
    confirmations.record(store, [(finding, confirmations.Verdict("not reproduced", "memcheck"))], tmp_path)
    (same,) = confirmations.annotate([finding], confirmations.load(store), tmp_path)
    assert same.message == finding.message
    store.write_text("not json")
    assert confirmations.load(store) == {}


def _kernel_check(*args: str, cwd: Path, cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "KERNEL_CHECK_CACHE_DIR": str(cache), "CUDA_VISIBLE_DEVICES": ""}
    return subprocess.run(
        [sys.executable, "-m", "kernel_check", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def test_the_static_report_says_a_confirmation(tmp_path: Path) -> None:
    """The static command's own run: the record `confirm` writes (where `confirm` writes it)
    ends the finding's message; the JSON report's too."""
    source = _project(tmp_path)
    cache = tmp_path / "cache"
    finding = _kc401(source)
    store = confirmations.store_path(tmp_path, cache)
    confirmations.record(store, [(finding, CONFIRMED)], tmp_path)
    done = _kernel_check(SOURCE.name, "--format", "json", "--select", "KC401", cwd=tmp_path, cache=cache)
    (row,) = json.loads(done.stdout)
    assert row["message"].endswith("; confirmed on the GPU by memcheck, NVIDIA H100 80GB HBM3, 2026-12-06"), row


def test_confirm_without_a_gpu(tmp_path: Path) -> None:
    """No GPU visible (`CUDA_VISIBLE_DEVICES` empty hides any the machine has): one line, exit 2."""
    done = _kernel_check("confirm", str(SOURCE), cwd=REPO_ROOT, cache=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "kernel-check: no CUDA GPU visible: `confirm` runs each finding's witness on one (nothing was checked)"
    ]


def test_the_table(kc401: Finding) -> None:
    verdict = dataclasses.replace(CONFIRMED, case="confirm_unbounded_gather[sanitize m=1 n=1 d=1]")
    table = render_table([(plan(kc401, []), verdict)])
    assert table.splitlines()[-1] == (
        f"KC401 {kc401.path}:25 | D=1 N=1 out=[1,1] table=[1,1] ids=[1] ids:=1 block of (1,1,1) thread (0,0,0) | "
        "confirmed by memcheck on NVIDIA H100 80GB HBM3 [confirm_unbounded_gather[sanitize m=1 n=1 d=1]]"
    )


@pytest.mark.nvcc
@pytest.mark.skipif(runtime.find_nvcc() is None, reason="nvcc not found (install the CUDA toolkit or set CUDA_HOME)")
def test_a_drafted_spec_keeps_the_instantiations_nvcc_builds(tmp_path: Path, monkeypatch) -> None:
    """`confirm` drafts a spec for a file without one as `spec new` does: it compile-probes the
    candidates, so a template value the kernel's `static_assert` rejects (1, 2) is not the
    instantiation a witness runs in (it would not build, and confirm nothing)."""
    monkeypatch.setenv("KERNEL_CHECK_JIT_CACHE", str(tmp_path / "jit"))
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "9.0")
    monkeypatch.setattr(draft, "PROBED_VALUES", (1, 2, 8, 32, 128))  # five compiles, not the default's seven
    assertion = 'static_assert(kGroup % 8 == 0, "kGroup must be a multiple of 8");'
    source = (FIXTURES / "draft" / "probe" / "groups.cuh").read_text().replace(f"  {assertion}\n", "")
    cuh = tmp_path / "groups.cuh"
    cuh.write_text(source.replace("  const int64_t g = ", f"  {assertion}\n  const int64_t g = ", 1))
    finding = Finding(
        "KC401", "", Location(str(cuh), 14, 1), Severity.ERROR, witness=Counterexample("group_sum_kernel")
    )
    args = harness_cli._parser().parse_args(["confirm", str(cuh)])
    (spec,) = harness_cli._confirm_specs(args, [finding], harness_cli._config(args), tmp_path)
    assert [i.template_args for i in spec.instantiations] == [(8,), (32,), (128,)]
