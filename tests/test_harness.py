"""CPU-only tests of the harness: spec validation, case planning, sanitizer-output parsing
(real compute-sanitizer output captured on an H200), the summary table and the CLI's usage
errors. Nothing here needs a GPU or nvcc."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from kernel_check.finding import Location
from kernel_check.harness import cli
from kernel_check.harness.cases import (
    BadKind,
    CaseKind,
    bad_inputs,
    base_sizes,
    medium_sizes,
    plan_bandwidth,
    plan_cases,
    plan_sanitize,
    sanitize_sizes,
)
from kernel_check.harness.discover import discover
from kernel_check.harness.report import Cell, SummaryRow, render_table
from kernel_check.harness.sanitize import group_reports, parse_output, report_findings, sanitizer_command
from kernel_check.harness.spec import TAILS, Instantiation, KernelSpec, Role, Scalar, SpecError, Tensor

FIXTURES = Path(__file__).parent / "fixtures" / "harness"
SAMPLES = FIXTURES / "sanitizer_output"


def make_spec(**changes) -> KernelSpec:
    spec = KernelSpec(
        name="scale",
        source="scale.cuh",
        export="scale",
        symbol="scale",
        args=(
            Tensor("dst", ("n",), role=Role.OUT, vector_bytes=16),
            Tensor("src", ("n",), vector_bytes=16),
            Scalar("factor", 2.0),
        ),
        reference=lambda src, factor: src * factor,
        instantiations=(
            Instantiation(("float16", True), dtypes={"T": "float16"}, pdl=True),
            Instantiation(("float32", False), dtypes={"T": "float32"}),
        ),
        grid={"n": TAILS + (1024,)},
    )
    return dataclasses.replace(spec, **changes)


# ----- spec -----


def test_valid_spec_and_cpp_args():
    spec = make_spec()
    spec.validate()
    assert [i.cpp_args() for i in spec.instantiations] == ["fp16_t, true", "fp32_t, false"]
    assert [i.id for i in spec.instantiations] == ["float16-true-pdl", "float32-false"]


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(grid={"n": (4, 8)}), "tails"),
        (dict(grid={"m": TAILS}), "not an axis"),
        (dict(args=(Tensor("src", ("n",)),)), "nothing to compare"),
        (dict(instantiations=()), "no instantiations"),
        (dict(args=(Tensor("dst", ("n",), role=Role.OUT, dtype="U"),)), "neither a dtype"),
        (dict(args=(Tensor("dst", ("n",), role=Role.OUT, vector_bytes=12),)), "power of two"),
        (dict(args=(Tensor("dst", ("n",), role=Role.OUT, strided_rows=True),)), "rank 2"),
        (dict(args=(Tensor("dst", ("n",), role=Role.OUT, init="perm:m"),)), "names no grid axis"),
        (dict(args=(Tensor("dst", ("n",), role=Role.OUT, init="randint:(m+1)//2"),)), "names no grid axis"),
        (dict(args=(Tensor("dst", ("n",), role=Role.OUT, init="randint:4"),)), "names no grid axis"),
        (dict(constraint=lambda sizes: False), "no point"),
        (dict(args=(Tensor("x", ("n",), role=Role.OUT), Tensor("x", ("n",)))), "repeat"),
        (dict(args=(Tensor("dst", ("n",), role=Role.OUT), Scalar("order", ["big"]))), "not a bool, int, float, str"),
    ],
)
def test_invalid_specs_are_rejected(changes, message):
    with pytest.raises(SpecError, match=message):
        make_spec(**changes).validate()


def test_an_index_init_may_bound_its_ids_by_an_expression_of_axes():
    """``randint:(n+1)//2``: each of two ids an index adds stays below half of n."""
    spec = make_spec(args=(Tensor("dst", ("n",), role=Role.OUT), Tensor("ids", ("n",), init="randint:(n+1)//2")))
    spec.validate()


def test_a_string_and_an_absent_optional_are_scalar_values():
    """A ``std::string`` parameter takes a str, an ``Optional<TensorView>`` left out None."""
    spec = make_spec(args=(Tensor("dst", ("n",), role=Role.OUT), Scalar("order", "big"), Scalar("bias", None)))
    spec.validate()
    assert [s.resolve({"n": 1}) for s in spec.scalars] == ["big", None]


def test_discovery_finds_every_fixture_and_reports_broken_files(tmp_path):
    found = discover([FIXTURES])
    assert not found.errors
    assert {"fixture_tail_overrun", "fixture_tail_overrun_ok", "fixture_crash", "fixture_hang"} <= {
        s.name for s in found.specs
    }
    assert all(s.spec_path.endswith("_spec.py") for s in found.specs)
    (tmp_path / "broken_spec.py").write_text("SPEC = 3\n")
    (tmp_path / "raises_spec.py").write_text("raise RuntimeError('boom')\n")
    errors = discover([tmp_path]).errors
    assert len(errors) == 2 and any("KernelSpec" in e for e in errors) and any("boom" in e for e in errors)


# ----- cases -----


def test_plan_covers_every_check_in_order():
    plan = plan_cases(make_spec())
    kinds = [c.kind for c in plan if c.inst == "float16-true-pdl"]
    assert kinds[:4] == [CaseKind.REFERENCE] * 4
    assert {CaseKind.GRAPH, CaseKind.STREAM, CaseKind.PDL, CaseKind.BAD_INPUT} <= set(kinds)
    assert CaseKind.PDL not in {c.kind for c in plan if c.inst == "float32-false"}
    # within an instantiation, the bad inputs (which may fault) come last
    first_bad = kinds.index(CaseKind.BAD_INPUT)
    assert all(k is CaseKind.BAD_INPUT for k in kinds[first_bad:])
    assert [c.index for c in plan] == list(range(len(plan)))


def test_bad_inputs_of_a_vectorized_1d_tensor():
    spec = make_spec()
    kinds = {b.kind for b in bad_inputs(spec, spec.instantiations[0], base_sizes(spec)) if b.tensor == "src"}
    assert kinds == {BadKind.CPU, BadKind.DTYPE, BadKind.RANK, BadKind.SHAPE, BadKind.NON_CONTIGUOUS, BadKind.OFFSET}


def test_padded_stride_breaks_the_vector_width():
    spec = discover([FIXTURES / "row_copy_spec.py"]).specs[0]
    padded = [
        b for b in bad_inputs(spec, spec.instantiations[0], {"rows": 127, "cols": 8}) if b.kind is BadKind.PADDED_STRIDE
    ]
    assert {b.tensor for b in padded} == {"dst", "src"}
    assert all((8 + b.pad) * 2 % 16 for b in padded)  # the stride is not a multiple of 16 bytes
    assert any(c.kind is CaseKind.STRIDED for c in plan_cases(spec))


def test_scalar_tensors_get_no_alignment_cases():
    spec = make_spec(args=(Tensor("dst", ("n",), "float32", Role.OUT), Tensor("src", ("n",), "float32")))
    kinds = {b.kind for b in bad_inputs(spec, spec.instantiations[0], {"n": 127})}
    assert BadKind.OFFSET not in kinds and BadKind.PADDED_STRIDE not in kinds


def test_sanitizer_and_bandwidth_sizes():
    spec = make_spec(grid={"n": TAILS + (1 << 20,)}, memory_bound=True)
    assert all(p["n"] <= 4097 for p in sanitize_sizes(spec, "memcheck"))
    assert sanitize_sizes(spec, "racecheck") == [{"n": 127}]  # 2 x 4097 elements is over the cap
    assert len(plan_sanitize(spec, "racecheck")) == 2  # one shape per instantiation
    assert [c.size_map for c in plan_bandwidth(spec)] == [{"n": 1 << 20}] * 2
    assert plan_bandwidth(make_spec()) == []


def _row_spec(**changes) -> KernelSpec:
    """A row kernel whose hidden size is a template argument (axis ``h`` fixed per instantiation)."""
    spec = KernelSpec(
        name="rows",
        source="rows.cuh",
        export="rows",
        symbol="rows",
        args=(
            Tensor("out", ("m", "h"), role=Role.OUT, strided_rows=True),
            Tensor("input", ("m", "h"), strided_rows=True),
            Tensor("weight", ("h",)),
        ),
        reference=lambda input, weight: input * weight,
        instantiations=(
            Instantiation(
                ("float16", 128),
                dtypes={"T": "float16"},
                sizes={"h": 128},
                vector_bytes={"out": 16, "input": 16, "weight": 16},
            ),
            Instantiation(("float16", 127), dtypes={"T": "float16"}, sizes={"h": 127}),
            Instantiation(("float16", 1), dtypes={"T": "float16"}, sizes={"h": 1}),
        ),
        grid={"m": TAILS},
    )
    return dataclasses.replace(spec, **changes)


def _batch_spec(**changes) -> KernelSpec:
    """Rows of a batch: the grid writes a dispatch threshold (16) as values on both sides."""
    args = (
        Tensor("dst", ("batch", "n"), role=Role.OUT, vector_bytes=16),
        Tensor("src", ("batch", "n"), vector_bytes=16),
        Scalar("factor", 2.0),
    )
    return make_spec(args=args, grid={"n": TAILS, "batch": (1, 16, 17, 512)}, **changes)


def test_sanitizer_shapes_reach_every_value_of_every_axis():
    spec = _batch_spec()
    points = sanitize_sizes(spec, "memcheck")
    for axis, values in spec.grid.items():
        assert {p[axis] for p in points} == set(values), axis
    # each value at its cheapest point: the large batch with the smallest row
    assert {"n": 1, "batch": 512} in points and {"n": 4097, "batch": 1} in points
    assert len(points) == len({tuple(p.items()) for p in points})


def test_a_spec_adds_sanitizer_shapes_and_racecheck_keeps_one():
    spec = _batch_spec(sanitize_extra=({"n": 200, "batch": 3},))
    assert {"n": 200, "batch": 3} in sanitize_sizes(spec, "memcheck")
    assert len(sanitize_sizes(spec, "racecheck")) == 1


def test_value_profiles_run_at_the_small_and_the_large_shape():
    spec = _batch_spec()
    inst = spec.variants[0]
    shapes = {c.sizes for c in plan_cases(spec) if c.kind is CaseKind.PROFILE and c.inst == inst.id}
    assert sorted(dict(s)["n"] for s in shapes) == [127, 4097]
    assert {tuple(base_sizes(spec, inst).items()), tuple(medium_sizes(spec, inst).items())} == shapes


def test_instantiation_sizes_pin_axes():
    spec = _row_spec()
    spec.validate()
    wide, odd, one = spec.instantiations
    assert [p["h"] for p in spec.grid_points(wide)] == [128] * 3
    assert {c.size_map["h"] for c in plan_cases(spec) if c.inst == odd.id} == {127}
    assert base_sizes(spec, wide) == {"m": 127, "h": 128}
    assert all(p["h"] == 1 for p in sanitize_sizes(spec, "memcheck", one))
    # a size the template fixes is checked by the launcher: a wrong one must be rejected
    shape_cases = [b for b in bad_inputs(spec, odd, {"m": 127, "h": 127}) if b.kind is BadKind.SHAPE]
    assert {(b.tensor, b.dim) for b in shape_cases} == {("out", 1), ("input", 1), ("weight", 0)}


def test_instantiation_vector_bytes_decide_alignment_cases():
    spec = _row_spec()
    wide, odd, _ = spec.instantiations
    kinds = {(b.tensor, b.kind) for b in bad_inputs(spec, wide, {"m": 127, "h": 128})}
    assert {("input", BadKind.OFFSET), ("input", BadKind.PADDED_STRIDE), ("weight", BadKind.OFFSET)} <= kinds
    assert not {b.kind for b in bad_inputs(spec, odd, {"m": 127, "h": 127})} & {BadKind.OFFSET, BadKind.PADDED_STRIDE}


def test_strided_rows_are_made_non_contiguous_only_inside_a_row():
    spec = _row_spec()
    wide, _, one = spec.instantiations
    noncontig = {
        b.tensor: b.dim for b in bad_inputs(spec, wide, {"m": 127, "h": 128}) if b.kind is BadKind.NON_CONTIGUOUS
    }
    assert noncontig == {"out": 1, "input": 1, "weight": 0}
    # rows of one element: any row stride is valid and there is nothing inside a row to stride
    assert not [b for b in bad_inputs(spec, one, {"m": 127, "h": 1}) if b.kind is BadKind.NON_CONTIGUOUS]


def test_bandwidth_shape_per_instantiation():
    spec = _row_spec(memory_bound=True, bandwidth_sizes=lambda fixed: {"m": 1 << 20} if fixed["h"] > 1 else None)
    assert [(c.inst, c.size_map) for c in plan_bandwidth(spec)] == [
        ("float16-128", {"m": 1 << 20, "h": 128}),
        ("float16-127", {"m": 1 << 20, "h": 127}),
    ]


@pytest.mark.parametrize(
    "changes, message",
    [
        (
            dict(instantiations=(Instantiation(("float16",), dtypes={"T": "float16"}, sizes={"h": 8, "q": 4}),)),
            "no axis",
        ),
        (
            dict(
                instantiations=(
                    Instantiation(("float16",), dtypes={"T": "float16"}, sizes={"h": 8}, vector_bytes={"nope": 16}),
                )
            ),
            "names no tensor",
        ),
        (
            dict(
                instantiations=(
                    Instantiation(("float16",), dtypes={"T": "float16"}, sizes={"h": 8}, vector_bytes={"out": 1}),
                )
            ),
            "narrower",
        ),
        (dict(instantiations=(Instantiation(("float16",), dtypes={"T": "float16"}),)), "not an axis"),
        (dict(grid={"m": (4, 8), "h": TAILS}), "tails"),  # h is fixed everywhere: its grid never runs
    ],
)
def test_invalid_instantiation_sizes(changes, message):
    with pytest.raises(SpecError, match=message):
        _row_spec(**changes).validate()


CSRC = Path(__file__).parent.parent / "csrc"


@pytest.mark.skipif(not CSRC.is_dir(), reason="csrc/ is not in this checkout")
def test_every_csrc_instantiation_has_a_spec():
    """Each (export, launcher) that a csrc wrapper's INSTANTIATIONS declares is built and run
    by some spec: a new instantiation without a spec shows up here, not silently untested."""
    from kernel_check.build import read_manifest

    found = discover([CSRC])
    assert not found.errors
    covered = {
        (Path(s.spec_path).parent / s.source).resolve().as_posix()
        + ":"
        + f"{s.symbol}<{i.cpp_args()}>".replace(" ", "")
        for s in found.specs
        for i in s.instantiations
    }
    missing = []
    for wrapper in sorted(CSRC.rglob("*.py")):
        manifest = read_manifest(wrapper)
        if manifest is None:
            continue
        root = next(d for d in wrapper.parents if (d / manifest["CUDA_FILES"][0]).is_file())
        source = (root / manifest["CUDA_FILES"][0]).resolve().as_posix()
        missing += [
            f"{wrapper.name}: {symbol}"
            for _, symbol in manifest["INSTANTIATIONS"]
            if f"{source}:{symbol.replace(' ', '')}" not in covered
        ]
    assert not missing, "no spec covers: " + ", ".join(missing)


@pytest.mark.skipif(not CSRC.is_dir(), reason="csrc/ is not in this checkout")
def test_csrc_references_run_on_cpu():
    """Every csrc spec's inputs and reference work on its smallest shapes (on the CPU)."""
    torch = pytest.importorskip("torch")
    from kernel_check.harness.cases import shape_of

    for spec in discover([CSRC]).specs:
        for inst in spec.instantiations:
            sizes = min(spec.grid_points(inst), key=lambda p: sum(p.values()))
            gen = torch.Generator().manual_seed(0)
            inputs = {}
            for t in spec.tensors:
                if not t.read:
                    continue
                dtype = getattr(torch, spec.tensor_dtype(t, inst))
                shape = shape_of(t, sizes)
                if callable(t.init):
                    inputs[t.name] = t.init(shape, dtype, torch.device("cpu"), gen, sizes)
                elif t.init.startswith(("perm", "randint")):
                    inputs[t.name] = torch.randint(0, sizes[t.init.split(":")[1]], shape).to(dtype)
                else:
                    inputs[t.name] = torch.zeros(shape, dtype=dtype)
            result = spec.reference(**inputs, **{s.name: s.resolve(sizes) for s in spec.scalars})
            written = [t for t in spec.tensors if t.written]
            result = result if isinstance(result, dict) else {written[0].name: result}
            for t in written:
                assert tuple(result[t.name].shape) == shape_of(t, sizes), (spec.name, inst.id, t.name)


def test_probe_exports_the_pdl_canary():
    from kernel_check.harness.build import probe_target

    exports = dict(probe_target().wrappers)
    assert exports["pdl_canary"] == "pdl_canary" and exports["late_write_pdl"] == "late_write<true>"


def test_bandwidth_batch_job_round_trip(tmp_path):
    from kernel_check.harness.child import Job

    job = Job(
        "a_spec.py",
        "a",
        "bandwidth",
        {"x": "a.so"},
        batch=[{"spec_path": "b_spec.py", "spec_name": "b", "libraries": {"y": "b.so"}}],
    )
    job.write(tmp_path / "job.json")
    assert Job.read(tmp_path / "job.json") == job


def test_bandwidth_batch_collects_per_spec_and_retries_the_unfinished(monkeypatch, tmp_path):
    from kernel_check.harness import run as run_mod
    from kernel_check.harness.build import SpecBuilds
    from kernel_check.harness.process import ChildExit

    first = make_spec(name="first", memory_bound=True, spec_path=str(tmp_path / "a_spec.py"))
    second = make_spec(name="second", memory_bound=True, spec_path=str(tmp_path / "b_spec.py"))
    builds = SpecBuilds(libraries={s.name: {i.id: f"{s.name}.so" for i in s.instantiations} for s in (first, second)})
    ok = {"code": "KD501", "passed": True, "message": "fine", "metric": 0.9, "detail": ""}
    events = [
        {"event": "end", "case": 0, "spec": "first", "outcomes": [ok]},
        {"event": "end", "case": 1, "spec": "first", "outcomes": [ok]},
        {"event": "spec-done", "spec": "first"},
        {"event": "end", "case": 0, "spec": "second", "outcomes": [ok]},
    ]  # then the child died
    monkeypatch.setattr(run_mod, "run_child", lambda *a, **k: ChildExit(returncode=-9, events=events))
    retried = []
    monkeypatch.setattr(run_mod, "run_bandwidth", lambda run, *a, **k: retried.append(run.spec.name))
    runs = [run_mod.SpecRun(first), run_mod.SpecRun(second)]
    run_mod.run_bandwidth_batch(runs, builds, run_mod.RunOptions(), "0", tmp_path)
    assert [o.metric for _, o in runs[0].results] == [0.9, 0.9]
    assert retried == ["second"] and runs[1].results == []  # its partial result is measured again


def test_sanitizer_tools_run_side_by_side_after_each_specs_cases(monkeypatch, tmp_path):
    import threading
    import time

    from kernel_check.harness import run as run_mod
    from kernel_check.harness.build import SpecBuilds
    from kernel_check.harness.report import Progress

    specs = [make_spec(name=n, spec_path=str(tmp_path / f"{n}_spec.py")) for n in ("a", "b")]
    libraries = {s.name: {i.id: "x.so" for i in s.instantiations} for s in specs}
    log, active, peak = [], [0], [0]
    lock = threading.Lock()

    def fake_cases(run, *args):
        log.append(("cases", run.spec.name))

    def fake_tool(run, tool, *args):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.05)
        with lock:
            active[0] -= 1
            assert ("cases", run.spec.name) in log  # never before the spec's own cases
            log.append((tool, run.spec.name))

    monkeypatch.setattr(run_mod, "run_cases", fake_cases)
    monkeypatch.setattr(run_mod, "run_sanitizer", fake_tool)
    monkeypatch.setattr(run_mod, "plan_sanitize", lambda spec, tool: [1])
    runs = [run_mod.SpecRun(s) for s in specs]
    options = run_mod.RunOptions()
    run_mod._run_all(
        runs,
        SpecBuilds(libraries=libraries),
        SpecBuilds(libraries=libraries),
        options,
        run_mod.GpuSlots(("0",), 8),
        8,
        tmp_path,
        Progress(enabled=False),
    )
    assert sorted(log) == sorted(
        [("cases", "a"), ("cases", "b")] + [(t, n) for t in options.sanitize for n in ("a", "b")]
    )
    assert peak[0] > 1


@pytest.fixture
def stop_after_test():
    from kernel_check.harness import process

    yield process
    process.reset_stop()


def test_stop_all_kills_a_running_child_and_refuses_new_ones(stop_after_test):
    import sys
    import threading
    import time

    process = stop_after_test
    threading.Timer(0.5, process.stop_all).start()
    started = time.monotonic()
    exit_ = process.run_child(
        [sys.executable, "-c", "import time; print('up', flush=True); time.sleep(60)"],
        {},
        startup_timeout=60,
        case_timeout=60,
    )
    assert exit_.stopped and not exit_.timed_out and exit_.output == ["up"]
    assert time.monotonic() - started < 10  # killed, not waited for
    assert process.run_child([sys.executable, "-c", "pass"], {}, startup_timeout=60, case_timeout=60).stopped


def test_a_stopped_spec_is_incomplete_not_hung(stop_after_test, tmp_path):
    from kernel_check.harness import run as run_mod
    from kernel_check.harness.build import SpecBuilds
    from kernel_check.harness.report import Progress

    spec = make_spec(name="cut", spec_path=str(tmp_path / "cut_spec.py"))
    builds = SpecBuilds(libraries={spec.name: {i.id: "cut.so" for i in spec.instantiations}})
    run = run_mod.SpecRun(spec)
    stop_after_test.stop_all()
    run_mod.run_cases(run, builds, run_mod.RunOptions(), "0", tmp_path, Progress(enabled=False))
    assert not run.complete and run.findings == [] and run.hung == set()
    rows = run_mod.summary_rows([run], builds, ())
    assert all(row.kernel.endswith(" (stopped)") for row in rows)


# ----- sanitizer output (captured on an H200 with compute-sanitizer 2025.3.1) -----


def _parse(name: str, tool: str):
    return parse_output(tool, (SAMPLES / name).read_text())


def test_memcheck_out_of_bounds():
    reports = _parse("planted-memcheck.txt", "memcheck")
    *accesses, api_error = reports  # the fault then fails cudaDeviceSynchronize
    assert len(accesses) == 3
    assert api_error.kind.startswith("Program hit cudaErrorLaunchFailure") and api_error.kernel == ""
    first = accesses[0]
    assert first.kind == "Invalid __global__ read of size 4 bytes"
    assert (first.kernel, first.path, first.line) == ("oob_kernel", "planted.cu", 12)
    assert (first.thread, first.block) == ("125,0,0", "0,0,0")
    assert len(group_reports(accesses)) == 1


def test_memcheck_from_the_harness_resolves_the_template_kernel():
    reports = _parse("harness-tail_overrun-memcheck.txt", "memcheck")
    assert {(r.kernel, r.path, r.line) for r in reports} == {("tail_overrun_kernel", "tail_overrun.cuh", 27)}
    findings = report_findings(reports, fallback=Location("x", 1), kernels=["tail_overrun_kernel"], search=[FIXTURES])
    assert {(f.code, f.location.line) for f in findings} == {("KD201", 27)}
    assert all(f.location.path.endswith("tests/fixtures/harness/tail_overrun.cuh") for f in findings)
    assert report_findings(reports, fallback=Location("x", 1), kernels=["other_kernel"]) == []


def test_memcheck_of_a_crash():
    (report, *_) = _parse("harness-crash-memcheck.txt", "memcheck")
    assert report.kind == "Invalid __global__ write of size 4 bytes"
    assert (report.kernel, report.line) == ("crash_kernel", 23)


def test_racecheck_hazard_pair():
    for name, kernel, line in (
        ("planted-racecheck.txt", "race_kernel", 17),
        ("harness-smem_race-racecheck.txt", "smem_race_kernel", 29),
    ):
        (report,) = _parse(name, "racecheck")
        assert report.kind == "Race reported between Write access and Read access"
        assert (report.kernel, report.line) == (kernel, line)
        assert report.hazards > 1
        (finding,) = report_findings([report], fallback=Location("x", 1))
        assert finding.code == "KD202" and "hazards" in finding.message


def test_initcheck_and_synccheck():
    init = _parse("harness-uninit_read-initcheck.txt", "initcheck")
    assert {(r.kind, r.kernel, r.line) for r in init} == {
        ("Uninitialized __global__ memory read of size 4 bytes", "uninit_read_kernel", 26)
    }
    sync = _parse("planted-synccheck.txt", "synccheck")
    assert {(r.kind, r.kernel, r.line) for r in sync} == {
        ("Barrier error detected. Divergent thread(s) in warp.", "sync_kernel", 28)
    }
    (finding,) = report_findings(sync, fallback=Location("x", 1))
    assert finding.code == "KD204" and f"({len(sync)} reports)" in finding.message


def test_clean_output_has_no_reports():
    assert _parse("harness-tail_overrun_ok-memcheck.txt", "memcheck") == []


def test_sanitizer_command_line():
    command = sanitizer_command("cs", "racecheck", ["python", "x.py"], kernels=["a", "b"], api_errors=False)
    assert command[:3] == ["cs", "--tool", "racecheck"]
    assert command[-2:] == ["python", "x.py"]
    assert command.count("--kernel-name") == 2 and "kns=b" in command
    assert "--error-exitcode" in command and "--report-api-errors" in command


# ----- report and CLI -----


def test_summary_table():
    row = SummaryRow("scale[float16]")
    row.cell("build").merge(True, None)
    row.cell("KD101").merge(False, 0.25)
    row.cells["KD501"] = Cell(note="91%")
    table = render_table([row])
    assert "FAIL 0.25" in table and "91%" in table and table.splitlines()[0].startswith("kernel")


def test_cli_usage_errors(tmp_path, capsys):
    assert cli.main(["test", str(tmp_path / "missing")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert cli.main(["test", str(tmp_path), "--sanitize", "bogus"]) == 2
    assert cli.main(["sanitize"]) == 2
    assert "usage" in capsys.readouterr().err


def test_cli_without_nvcc_says_how_to_install(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(cli, "nvcc_available", lambda: False)
    assert cli.main(["build", str(FIXTURES)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "nvidia-cuda-nvcc" in err and "CUDA_HOME" in err


def test_a_specs_include_dirs_come_before_the_bundled_headers(tmp_path):
    from kernel_check.harness.build import spec_target
    from kernel_check.harness.run import source_dirs

    spec = make_spec(spec_path=str(tmp_path / "k_spec.py"), include_dirs=("vendor/include",))
    target = spec_target(spec, spec.instantiations[0], {})
    assert target.include_dirs == (str(tmp_path / "vendor/include"),)
    assert tmp_path / "vendor/include/sgl_kernel" in source_dirs(spec)  # sanitizer file names resolve there
