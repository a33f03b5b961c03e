"""What real JIT kernels need from the harness, without a GPU: sanitizer reports attributed
by demangled name (anonymous namespaces, templates, macros), environment failures told
apart from kernel faults, the spec API's new shapes (class-template launchers, several
run-time dtypes per build, strides per dimension, derived dimensions, canonical outputs,
reference-free specs), KD301 cases from what the matcher allows, and value profiles."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
from pathlib import Path

import pytest

from kernel_check.build import kernel_identifier
from kernel_check.finding import Location
from kernel_check.harness import profiles
from kernel_check.harness.cases import BadKind, CaseKind, bad_inputs, plan_cases, plan_sanitize, wrong_dtype
from kernel_check.harness.discover import discover
from kernel_check.harness.environment import (
    CASE_OUT_OF_MEMORY,
    environment_failure,
    is_out_of_memory,
    sanitizer_failure,
)
from kernel_check.harness.protocol import CASE_MARKER, EVENT_PREFIX
from kernel_check.harness.report import Progress, reference_note
from kernel_check.harness.run import SpecRun
from kernel_check.harness.sanitize import ToolRun, parse_output, report_findings
from kernel_check.harness.spec import (
    Instantiation,
    Role,
    SpecError,
    Tensor,
    dim_axes,
    dim_size,
)
from kernel_check.runtime import find_nvcc

FIXTURES = Path(__file__).parent / "fixtures" / "harness"
SAMPLES = FIXTURES / "sanitizer_output"
SPECS = {s.name: s for s in discover([FIXTURES]).specs}


# ----- sanitizer attribution -----


@pytest.mark.parametrize(
    "name, identifier",
    [
        ("void (anonymous namespace)::anon_shift_kernel<(bool)1>(float *, const float *, long)", "anon_shift_kernel"),
        ("void <unnamed>::macro_shift_kernel<(bool)1>(float *, const float *, long)", "macro_shift_kernel"),
        ("void ns::(anonymous namespace)::fused<(bool)1, std::pair<int, int>>(int)", "fused"),
        ("void sglang::scale_kernel<__half, 8>(__half *, int)", "scale_kernel"),
        ("void take(float (*)[4], int)", "take"),
        ("(anonymous namespace)::bare", "bare"),
        ("_ZN12_GLOBAL__N_117anon_shift_kernelILb1EEEvPfPKfl", "anon_shift_kernel"),
        ("tail_overrun_kernel<true>", "tail_overrun_kernel"),
    ],
)
def test_kernel_identifier_survives_anonymous_namespaces_and_templates(name, identifier):
    assert kernel_identifier(name) == identifier


def test_source_scan_finds_macro_declared_kernels():
    from kernel_check.harness.run import global_kernel_names

    assert global_kernel_names(SPECS["fixture_anon_shift"]) == ["anon_shift_kernel", "macro_shift_kernel"]


@pytest.mark.parametrize(
    "sample, kernel, case",
    [
        ("harness-anon_shift-memcheck.txt", "anon_shift_kernel", "true-false sanitize n=1"),
        ("harness-macro_shift-memcheck.txt", "macro_shift_kernel", "true-true sanitize n=1"),
    ],
)
def test_real_sanitizer_output_of_anonymous_and_macro_kernels_is_attributed(sample, kernel, case):
    """Captured on the H200 (compute-sanitizer 2025.3.1, CUDA 13): the reports name the
    kernel ``void <unnamed>::anon_shift_kernel<(bool)1>(...)`` (the former name extraction
    read ``void``); every one is kept for the spec, with the case that ran."""
    reports = parse_output("memcheck", (SAMPLES / sample).read_text())
    reads = [r for r in reports if r.kind.startswith("Invalid __global__ read")]
    assert reads and {r.kernel for r in reads} == {kernel}
    assert all(r.function.startswith("void <unnamed>::") for r in reads)
    assert {r.path for r in reads} == {"anon_macro.cuh"} and {r.case for r in reads} == {case}
    findings = report_findings(reports, fallback=Location("x", 1), kernels=[kernel], search=[FIXTURES])
    assert {f.code for f in findings} == {"KD201"} and all(kernel in f.message for f in findings)
    assert all(f.location.path.endswith("anon_macro.cuh") for f in findings)


def test_a_report_from_a_device_helper_belongs_to_the_kernel_that_called_it():
    """A read made inside a device function the kernel calls (a vector type's ``load``, not
    inlined) names the helper first and the kernel last, in its device frames (as
    compute-sanitizer printed it for a planted read in a header kernel, on the H100): the
    report is the kernel's, at the kernel's line, and says which helper read."""
    text = "\n".join(
        [
            "========= Uninitialized __global__ memory read of size 16 bytes",
            "=========     at lib::vec<__half, (unsigned long)8>::load(const __half *)+0x470 in vec.cuh:160",
            "=========     by thread (0,0,0) in block (0,0,0)",
            "=========     Address 0x7f7c46800800",
            "=========         Device Frame: void lib::load_as<__half, float>(const T1 *)+0x470 in vec.cuh:65",
            "=========         Device Frame: void lib::merge_kernel<8u, __half>(T2 *, float *)+0x470 in merge.cuh:31",
            "=========     Saved host backtrace up to driver entry point at kernel launch time",
            "=========         Host Frame: cudaLaunchKernel [0x745b7] in libcudart.so.13",
        ]
    )
    (report,) = parse_output("initcheck", text)
    assert report.kernel == "merge_kernel" and (report.path, report.line) == ("merge.cuh", 31)
    (finding,) = report_findings([report], fallback=Location("x", 1), kernels=["merge_kernel"])
    assert finding.location.path == "merge.cuh" and finding.location.line == 31
    assert "in merge_kernel (through lib::vec<__half, (unsigned long)8>::load(const __half *) at vec.cuh:160)" in (
        finding.message
    )


def test_reports_carry_the_case_that_was_running():
    text = "\n".join(
        [
            f"{CASE_MARKER}false-int32 sanitize m=1 n=5",
            "========= Invalid __global__ read of size 4 bytes",
            "=========     at void (anonymous namespace)::gather<int>(float *)+0x10 in g.cuh:7",
            "=========     by thread (0,0,0) in block (0,0,0)",
            "========= ",
            f"{CASE_MARKER}false-int32 sanitize m=127 n=5 [ids=oob (safe)]",
            "========= Invalid __global__ read of size 4 bytes",
            "=========     at void (anonymous namespace)::gather<int>(float *)+0x10 in g.cuh:9",
            "=========     by thread (1,0,0) in block (0,0,0)",
        ]
    )
    first, second = parse_output("memcheck", text)
    assert first.case == "false-int32 sanitize m=1 n=5"
    assert second.case == "false-int32 sanitize m=127 n=5 [ids=oob (safe)]"
    (_, finding) = report_findings([first, second], fallback=Location("x", 1), kernels=["gather"], context="spec")
    assert "[spec; false-int32 sanitize m=127 n=5 [ids=oob (safe)]]" in finding.message


# ----- environment failures -----


@pytest.mark.parametrize(
    "output, what",
    [
        ("Traceback ...\nRuntimeError: No CUDA GPUs are available", "no CUDA GPU"),
        ("torch.AcceleratorError: CUDA error: CUDA-capable device(s) is/are busy or unavailable", "busy"),
        ("RuntimeError: Found no NVIDIA driver on your system.", "driver"),
        ("========= Internal Sanitizer Error: The Sanitizer failed to initialize", "compute-sanitizer"),
        ("RuntimeError: CUDA error: out of memory while creating the context", "out of memory"),
    ],
)
def test_environment_failures_are_recognized(output, what):
    message = environment_failure(output)
    assert message is not None and what in message and "\n" not in message


@pytest.mark.parametrize(
    "output",
    [
        "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
        "RuntimeError: CUDA error: misaligned address",
        "========= Invalid __global__ read of size 4 bytes",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 80.00 GiB",
    ],
)
def test_kernel_faults_are_not_environment_failures(output):
    assert environment_failure(output) is None


def test_a_full_gpu_while_a_case_allocates_is_no_verdict():
    """torch's allocation failure inside a case (other processes hold the GPU) ends the child
    with the out-of-memory marker, which the parent reads as an environment failure; the same
    words in a kernel's own traceback (above) stay the kernel's."""
    import torch

    assert is_out_of_memory(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 80.00 GiB"))
    assert not is_out_of_memory(RuntimeError("CUDA error: an illegal memory access was encountered"))
    message = environment_failure(f"{CASE_OUT_OF_MEMORY} (n=5): CUDA out of memory. Tried to allocate 2.00 GiB")
    assert message is not None and "ran out of memory while a case allocated" in message


@pytest.mark.nvcc
@pytest.mark.skipif(find_nvcc() is None, reason="nvcc not found (install the CUDA toolkit or set CUDA_HOME)")
def test_a_case_that_cannot_reach_a_gpu_is_an_environment_error_not_a_finding(monkeypatch):
    """A case child that sees no usable GPU (here GPU "99", which no machine has; on a machine
    without one, torch's own error) raises inside each case: that is the machine, not the
    kernel, so the run ends with an environment error and no KD finding."""
    from kernel_check.harness import run as run_mod

    monkeypatch.setattr(run_mod, "ENVIRONMENT_RETRY_DELAY", 0.0)
    spec = SPECS["fixture_tail_overrun_ok"]
    options = run_mod.RunOptions(timeout=20.0, sanitize=(), bandwidth=False, gpus=("99",))
    result = run_mod.run_specs([spec], options, Progress(sys.stderr))
    assert result.environment and "cases" in result.environment[0], result.environment
    assert "no CUDA GPU" in result.environment[0]
    assert not [f for f in result.findings if f.code.startswith("KD")]


def test_a_child_failing_for_the_environment_is_retried_then_reported(monkeypatch, tmp_path):
    from kernel_check.harness import run as run_mod

    monkeypatch.setattr(run_mod, "ENVIRONMENT_RETRY_DELAY", 0.0)
    counter = tmp_path / "starts"
    script = (
        f"import pathlib,sys; p=pathlib.Path({str(counter)!r}); p.write_text(p.read_text()+'x' "
        f"if p.exists() else 'x'); print('RuntimeError: No CUDA GPUs are available'); sys.exit(4)"
    )
    _exit, failure = run_mod.run_child_retrying([sys.executable, "-c", script], {}, startup_timeout=30, case_timeout=30)
    assert counter.read_text() == "xx"  # once more after the first failure
    assert failure is not None and "no CUDA GPU" in failure


def test_a_kernel_fault_is_not_retried(tmp_path):
    from kernel_check.harness import run as run_mod

    script = "print('CUDA error: an illegal memory access was encountered'); raise SystemExit(3)"
    exit_, failure = run_mod.run_child_retrying([sys.executable, "-c", script], {}, startup_timeout=30, case_timeout=30)
    assert failure is None and exit_.returncode == 3


# compute-sanitizer's last lines when the target (the harness child) exited with status 3
# (its FATAL_EXIT) and the tool saw no error in the spec's kernels: nothing to blame them for
NO_REPORT_EXIT_3 = "\n".join(
    [
        "========= COMPUTE-SANITIZER",
        f"{CASE_MARKER}true-false sanitize n=1",
        "========= Target application returned an error",
        "========= ERROR SUMMARY: 0 errors",
    ]
)
INTERNAL_ERROR = "\n".join(
    [
        "========= COMPUTE-SANITIZER",
        "========= Internal Sanitizer Error: The Sanitizer failed to initialize the target",
        "========= ERROR SUMMARY: 0 errors",
    ]
)


def _tool_run(output: str, returncode: int | None) -> ToolRun:
    return ToolRun("memcheck", returncode, False, parse_output("memcheck", output), output)


def test_a_sanitizer_run_failing_without_a_report_is_the_environment():
    failure = sanitizer_failure(_tool_run(NO_REPORT_EXIT_3, 3), reported=False)
    assert failure == (
        "compute-sanitizer exited with status 3 while running true-false sanitize n=1: "
        "no report; its last line: ========= ERROR SUMMARY: 0 errors"
    )
    internal = sanitizer_failure(_tool_run(INTERNAL_ERROR, 255), reported=False)
    assert internal is not None and "\n" not in internal
    assert internal.startswith("compute-sanitizer exited with status 255: compute-sanitizer could not start")
    assert "The Sanitizer failed to initialize the target" in internal


def test_a_sanitizer_report_stays_the_kernels_finding():
    """A real memcheck report (captured on the H200) with the error exit status, or with the
    child's own failure after it: KD201, and no environment failure."""
    output = (SAMPLES / "harness-anon_shift-memcheck.txt").read_text()
    for status in (86, 3):
        run = _tool_run(output, status)
        findings = report_findings(run.reports, fallback=Location("x", 1), kernels=["anon_shift_kernel"])
        assert {f.code for f in findings} == {"KD201"}
        assert sanitizer_failure(run, reported=bool(findings)) is None
    assert sanitizer_failure(_tool_run("========= ERROR SUMMARY: 0 errors", 0), reported=False) is None
    timed_out = ToolRun("memcheck", -9, True, [], "")
    assert sanitizer_failure(timed_out, reported=False) is None  # a hang is KD002


def _fake_sanitizer(folder: Path, fail_times: int, fatal: str = "") -> Path:
    """A stand-in for the compute-sanitizer binary (this machine has no GPU to run the real
    one): it prints what the real one prints when the harness child exited with status 3
    and nothing was reported, the first ``fail_times`` times (each start counted in a
    file), then a clean run. ``fatal``: the child's "fatal" event before that (the CUDA
    error of the case that poisoned its context)."""
    starts = folder / "starts"
    script = folder / "compute-sanitizer"
    event = [EVENT_PREFIX + json.dumps({"event": "fatal", "case": 0, "error": fatal})] if fatal else []
    lines = "".join(f"echo '{line}'\n" for line in [*event, *NO_REPORT_EXIT_3.splitlines()])
    script.write_text(
        "#!/bin/sh\n"
        f"echo x >> '{starts}'\n"
        f"if [ $(wc -l < '{starts}') -le {fail_times} ]; then\n{lines}exit 3\nfi\n"
        "echo '========= COMPUTE-SANITIZER'\necho '========= ERROR SUMMARY: 0 errors'\n"
    )
    script.chmod(0o755)
    return starts


def _sanitize_once(tmp_path: Path) -> SpecRun:
    """run.run_sanitizer's memcheck run of a real fixture spec, on a build that says it exists."""
    from kernel_check.harness.build import SpecBuilds
    from kernel_check.harness.report import Progress
    from kernel_check.harness.run import RunOptions, run_sanitizer

    spec = SPECS["fixture_anon_shift"]
    run = SpecRun(spec)
    builds = SpecBuilds(libraries={spec.name: {"true-false": str(tmp_path / "k.so")}})
    options = RunOptions(sanitize_timeout=60)
    run_sanitizer(run, "memcheck", builds, options, "0", tmp_path, Progress(enabled=False))
    return run


@pytest.fixture
def sanitizer_bin(monkeypatch, tmp_path) -> Path:
    from kernel_check.harness import run as run_mod

    monkeypatch.setattr(run_mod, "ENVIRONMENT_RETRY_DELAY", 0.0)
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    return folder


def test_a_sanitizer_that_fails_once_is_retried(sanitizer_bin, tmp_path):
    starts = _fake_sanitizer(sanitizer_bin, fail_times=1)
    run = _sanitize_once(tmp_path)
    assert starts.read_text() == "x\nx\n"  # once more after the failure
    assert run.environment == [] and run.findings == [] and run.sanitizer == {"memcheck": 0}


def test_a_sanitizer_that_always_fails_is_one_environment_error_never_kd001(sanitizer_bin, tmp_path, capsys):
    from kernel_check.harness.cli import EXIT_USAGE, _report_environment

    starts = _fake_sanitizer(sanitizer_bin, fail_times=2)
    run = _sanitize_once(tmp_path)
    assert starts.read_text() == "x\nx\n"  # tried twice, then given up
    assert run.findings == [] and "memcheck" not in run.sanitizer and not run.complete
    assert run.environment == [
        "fixture_anon_shift: memcheck: compute-sanitizer exited with status 3 while running "
        "true-false sanitize n=1: no report; its last line: ========= ERROR SUMMARY: 0 errors"
    ]
    assert _report_environment(run.environment) == EXIT_USAGE
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("kernel-check: environment error, not a kernel finding: fixture_anon_shift: memcheck:")


def test_a_kernel_fault_that_ends_a_sanitizer_run_is_the_kernels_kd001(sanitizer_bin, tmp_path):
    """initcheck does not report an out-of-bounds access: the case faults, the child ends with
    its FATAL_EXIT and the tool reports nothing. That is the kernel's fault (KD001, once, not
    retried), not an environment error; a CUDA error of the environment stays one."""
    starts = _fake_sanitizer(sanitizer_bin, fail_times=2, fatal="CUDA error: an illegal memory access was encountered")
    run = _sanitize_once(tmp_path)
    assert starts.read_text() == "x\n" and run.environment == []
    [finding] = run.findings
    assert finding.code == "KD001" and "faulted under memcheck while running true-false sanitize n=1" in finding.message
    assert "illegal memory access" in finding.message
    assert "the rest of its memcheck cases did not run" in finding.message
    (sanitizer_bin / "starts").unlink()
    _fake_sanitizer(sanitizer_bin, fail_times=2, fatal="RuntimeError: No CUDA GPUs are available")
    run = _sanitize_once(tmp_path)
    assert run.findings == [] and len(run.environment) == 1


def test_a_sanitizer_that_cannot_start_is_an_environment_error(monkeypatch, sanitizer_bin, tmp_path):
    """A compute-sanitizer file without execute permission (found through CUDA_HOME) does not
    start: an environment error after one retry, not a traceback."""
    home = tmp_path / "cuda"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "compute-sanitizer").write_text("#!/bin/sh\n")
    monkeypatch.setenv("CUDA_HOME", str(home))
    monkeypatch.setenv("PATH", str(sanitizer_bin))  # an empty folder: no compute-sanitizer on PATH
    run = _sanitize_once(tmp_path)
    (line,) = run.environment
    assert line.startswith("fixture_anon_shift: memcheck: compute-sanitizer did not start: ")
    assert "Permission denied" in line and run.findings == []


def test_one_build_serves_cases_and_sanitizers(monkeypatch, tmp_path):
    """A cold run built every instantiation twice (plain, then -lineinfo): now once."""
    from kernel_check.harness import run as run_mod
    from kernel_check.harness.build import SpecBuilds
    from kernel_check.harness.report import Progress

    calls, seen = [], {}
    monkeypatch.setattr(run_mod, "build_specs", lambda specs, **kw: calls.append(kw) or SpecBuilds())
    monkeypatch.setattr(run_mod, "_run_all", lambda runs, builds, lineinfo, *a: seen.update(same=builds is lineinfo))
    monkeypatch.setattr(run_mod, "children_fitting", lambda gpus: 8)
    spec = SPECS["fixture_tail_overrun"]
    run_mod.run_specs([spec], run_mod.RunOptions(bandwidth=False, gpus=("0",)), Progress(enabled=False))
    assert len(calls) == 1 and calls[0]["lineinfo"] and calls[0]["with_probe"] and seen["same"]
    calls.clear()
    run_mod.run_specs([spec], run_mod.RunOptions(bandwidth=False, sanitize=(), gpus=("0",)), Progress(enabled=False))
    assert len(calls) == 1 and not calls[0]["lineinfo"]


def test_cli_reports_environment_errors_with_exit_2(capsys):
    from kernel_check.harness.cli import EXIT_USAGE, _report_environment
    from kernel_check.harness.run import HarnessResult

    result = HarnessResult([], [], environment=["spec_a: memcheck: compute-sanitizer could not start: x"])
    assert _report_environment(result.environment) == EXIT_USAGE
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "environment error, not a kernel finding" in line and "spec_a: memcheck" in line


# ----- spec API -----


def test_class_template_launcher():
    spec = SPECS["fixture_gather_unchecked"]
    (inst,) = spec.instantiations
    assert spec.launcher(inst) == "GatherRows<false>::run" and spec.launcher_name == "run"
    plain = SPECS["fixture_tail_overrun"]
    assert plain.launcher(plain.instantiations[0]) == "tail_overrun<true>"


def test_one_build_serves_several_runtime_dtypes():
    spec = SPECS["fixture_gather_unchecked"]
    assert [v.id for v in spec.variants] == ["false-int32", "false-int64"]
    assert {v.build_id for v in spec.variants} == {"false"}
    ids = next(t for t in spec.tensors if t.name == "ids")
    assert [spec.tensor_dtype(ids, v) for v in spec.variants] == ["int32", "int64"]
    assert {c.inst for c in plan_cases(spec)} == {"false-int32", "false-int64"}
    # the wrong-dtype case passes neither accepted width
    assert {wrong_dtype(spec, ids, v) for v in spec.variants} == {"float32"}


def test_accepts_widens_what_the_matcher_allows():
    spec = SPECS["fixture_tail_overrun"]
    src = Tensor("src", ("n",), "float32", accepts=("float16", "bfloat16"))
    assert wrong_dtype(spec, src, spec.instantiations[0]) == "float64"


def test_strides_per_dimension_decide_the_non_contiguous_case():
    spec = SPECS["fixture_gather_unchecked"]
    inst = spec.variants[0]
    table = next(t for t in spec.tensors if t.name == "table")
    assert table.free_strides() == (0, 1)
    sizes = {"m": 4, "n": 5, "h": 2, "d": 3}
    by_tensor = {(b.tensor, b.kind): b for b in bad_inputs(spec, inst, sizes)}
    assert by_tensor[("table", BadKind.NON_CONTIGUOUS)].dim == 2  # only the innermost stays contiguous
    free_rank1 = dataclasses.replace(
        spec, args=(*spec.args[:2], Tensor("ids", ("m",), "I", init="randint:n", strided_dims=(0,)))
    )
    kinds = {(b.tensor, b.kind) for b in bad_inputs(free_rank1, inst, sizes)}
    assert ("ids", BadKind.NON_CONTIGUOUS) not in kinds  # a rank-1 tensor whose stride is free
    assert Tensor("x", ("a", "b", "c"), strided_rows=True).free_strides() == (1,)


def test_padded_strides_any_rank():
    from kernel_check.harness.execute import padded_strides

    assert padded_strides((2, 3, 4), (0, 1), 8) == (3 * 12 + 8, 12, 1)
    assert padded_strides((2, 3, 4), (1,), 4) == (24, 8, 1)
    assert padded_strides((5, 6), (), 4) == (6, 1)


def test_a_tensor_laid_out_at_given_strides():
    """A witness's view (`Case.strides`): padded rows keep every value; a view that overlaps
    itself (a row stride below the row) holds, where two indices share an element, one of
    the values written there, and the buffer is just the view's span."""
    import torch

    from kernel_check.harness.execute import laid_out_at

    values = torch.arange(6, dtype=torch.float32).view(2, 3)
    padded = laid_out_at(values, (4, 1))
    assert padded.stride() == (4, 1) and torch.equal(padded, values)
    assert padded.untyped_storage().nbytes() == 7 * 4
    overlapping = laid_out_at(values, (1, 1))
    assert overlapping.stride() == (1, 1) and overlapping.untyped_storage().nbytes() == 4 * 4
    assert overlapping[0, 0] == 0 and overlapping[1, 2] == 5
    assert overlapping[0, 1] == overlapping[1, 0] and float(overlapping[0, 1]) in (1.0, 3.0)


def test_derived_dimensions():
    assert dim_size("h*d", {"h": 4, "d": 8}) == 32
    assert dim_size("B+1", {"B": 7}) == 8
    assert dim_size("n//2 - 1", {"n": 10}) == 4
    assert dim_axes("h*d + 2") == {"h", "d"}
    spec = SPECS["fixture_gather_unchecked"]
    out = next(t for t in spec.tensors if t.name == "out")
    sizes = {"m": 4, "n": 5, "h": 2, "d": 3}
    shape = next(b for b in bad_inputs(spec, spec.variants[0], sizes) if b.tensor == "out" and b.kind is BadKind.SHAPE)
    assert shape.dim == 1 and out.shape[1] == "h*d"  # a derived dimension must be checked


@pytest.mark.parametrize(
    "shape, message",
    [
        (("n", "q*2"), "not an axis"),
        (("n", "n**2"), "only integers"),
        (("n", "n +"), "not an axis name nor an expression"),
    ],
)
def test_bad_derived_dimensions_are_rejected(shape, message):
    spec = SPECS["fixture_tail_overrun"]
    broken = dataclasses.replace(spec, args=(Tensor("dst", shape, "float32", Role.OUT), *spec.args[1:]))
    with pytest.raises(SpecError, match=message):
        broken.validate()


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(canonicalize={"src": "sort"}), "no OUT or INPLACE"),
        (dict(canonicalize={"dst": "shuffle"}), "one of"),
        (dict(symbol="A<>::B<>::run"), "more than one"),
        (dict(reference="src * 2"), "neither callable nor None"),
        (dict(instantiations=(Instantiation((True,), dtypes={"T": ()}),)), "non-empty tuple"),
        (dict(args=(Tensor("dst", ("n",), "float32", Role.OUT, strided_dims=(1,)),)), "rank-1"),
        (dict(args=(Tensor("dst", ("n",), "float32", Role.OUT, accepts=("float7",)),)), "unknown dtype"),
        (
            dict(
                args=(
                    Tensor("dst", ("n",), "float32", Role.OUT),
                    Tensor("src", ("n",), "float32", profiles={"nan": "maybe"}),
                )
            ),
            "contract",
        ),
        (
            dict(
                args=(
                    Tensor("dst", ("n",), "float32", Role.OUT),
                    Tensor("src", ("n",), "float32", profiles={"weird": "safe"}),
                )
            ),
            "profile",
        ),
    ],
)
def test_invalid_new_fields_are_rejected(changes, message):
    with pytest.raises(SpecError, match=message):
        dataclasses.replace(SPECS["fixture_tail_overrun"], **changes).validate()


def test_canonical_outputs_ignore_order():
    torch = pytest.importorskip("torch")
    from kernel_check.harness.execute import canonical

    spec = dataclasses.replace(SPECS["fixture_tail_overrun"], canonicalize={"dst": "sort"})
    spec.validate()
    a = torch.tensor([[3.0, 1.0, 2.0], [0.5, -1.0, 9.0]], dtype=torch.float16)
    b = torch.tensor([[1.0, 2.0, 3.0], [9.0, 0.5, -1.0]], dtype=torch.float16)
    assert torch.equal(canonical(spec, {"dst": a})["dst"], canonical(spec, {"dst": b})["dst"])
    assert canonical(spec, {"dst": a})["dst"].dtype == torch.float16
    by_function = dataclasses.replace(spec, canonicalize=lambda outs: {"dst": outs["dst"].abs()})
    assert torch.equal(canonical(by_function, {"dst": -a})["dst"], a.abs())


# ----- reference-free specs -----


def test_a_spec_without_reference_plans_every_check_that_needs_none():
    spec = SPECS["fixture_default_stream_noref"]
    spec.validate()
    kinds = {c.kind for c in plan_cases(spec)}
    assert {CaseKind.REFERENCE, CaseKind.STREAM, CaseKind.GRAPH, CaseKind.BAD_INPUT, CaseKind.PROFILE} <= kinds
    # without a reference nothing is compared with one: every profile is judged "safe"
    assert {c.profile.contract for c in plan_cases(spec) if c.profile} == {"safe"}
    note = reference_note([spec.name])
    assert spec.name in note and "needs a reference: ref (KD101)" in note and "sanitizers" in note
    assert reference_note([]) == ""


def test_summary_marks_the_reference_column_of_a_spec_without_one():
    from kernel_check.harness.build import SpecBuilds
    from kernel_check.harness.run import SpecRun, summary_rows

    spec = SPECS["fixture_default_stream_noref"]
    rows = summary_rows([SpecRun(spec)], SpecBuilds(), ())
    assert rows and all(r.cells["KD101"].text() == "no-ref" for r in rows)


# ----- poisons -----


def test_poisons_are_nans_or_invalid_bytes_and_differ():
    torch = pytest.importorskip("torch")
    from kernel_check.harness.execute import POISON_BITS, fill_poison, holds_poison, unwritten_mask

    for name in POISON_BITS:
        dtype = getattr(torch, name)
        a, b = torch.empty(4, dtype=dtype), torch.empty(4, dtype=dtype)
        fill_poison(a, 0)
        fill_poison(b, 1)
        assert bool(holds_poison(a, 0).all()) and not bool(holds_poison(a, 1).any()), name
        if dtype.is_floating_point:
            assert bool(torch.isnan(a.float()).all()) and bool(torch.isnan(b.float()).all()), name
    # an element is unwritten only when it held A after run A and B after run B
    a = torch.empty(3, dtype=torch.float8_e4m3fn)
    b = torch.empty(3, dtype=torch.float8_e4m3fn)
    fill_poison(a, 0)
    fill_poison(b, 1)
    a[1] = b[1] = -416.0  # a value the kernel may legitimately write in both runs
    a[2] = 1.0
    assert unwritten_mask(a, b).tolist() == [True, False, False]


# ----- value profiles -----


def test_profiles_by_tensor_kind_and_contract():
    assert profiles.applicable("randn", "float32") == profiles.FLOAT_PROFILES
    assert "inf" not in profiles.applicable("randn", "float8_e4m3fn")
    assert profiles.applicable("randint:n", "int32") == ("dup", "edge", "oob")
    assert profiles.applicable("randint:n", "uint8") == ("dup", "edge")
    assert profiles.applicable("randn", "int32") == ()
    assert profiles.default_contract("dup", "perm:n", True) == "off"
    assert profiles.default_contract("zeros", "randn", True) == "match"
    assert profiles.default_contract("nan", "randn", True) == "safe"
    assert profiles.default_contract("oob", "randint:n", True) == "safe"
    assert profiles.contract_of({"oob": "match"}, "oob", "randint:n", False) == "safe"
    assert profiles.contract_of({"oob": "reject"}, "oob", "randint:n", False) == "reject"


def test_profile_cases_and_their_sanitizer_runs():
    spec = SPECS["fixture_gather_unchecked"]
    labels = [c.label for c in plan_cases(spec) if c.kind is CaseKind.PROFILE]
    assert "values m=127 n=5 h=2 d=3 [ids=oob (match)]" in labels
    assert any("[table=nan (safe)]" in label for label in labels)
    memcheck = [c.profile.name for c in plan_sanitize(spec, "memcheck") if c.profile]
    assert set(memcheck) == {"nan", "dup", "edge", "oob"}
    assert not any(c.profile for c in plan_sanitize(spec, "racecheck"))
    off = dataclasses.replace(
        spec, args=(*spec.args[:2], Tensor("ids", ("m",), "I", init="randint:n", profiles={"oob": "off"}))
    )
    assert not any(c.profile and c.profile.name == "oob" for c in plan_cases(off))


def test_profile_values():
    torch = pytest.importorskip("torch")
    from kernel_check.harness.execute import profile_values

    gen = torch.Generator().manual_seed(3)
    x = torch.randn(256, dtype=torch.float16)
    assert int(torch.isnan(profile_values(x, "nan", 0, gen)).sum()) == 4
    inf = profile_values(x, "inf", 0, gen)
    assert int(torch.isinf(inf).sum()) == 4 and int(torch.isnan(inf).sum()) == 0
    huge = profile_values(x, "huge", 0, gen).float()
    assert float(huge.abs().max()) == torch.finfo(torch.float16).max / 2 and bool(torch.isfinite(huge).all())
    sub = profile_values(x, "subnormal", 0, gen).float()
    assert float(sub.abs().max()) < torch.finfo(torch.float16).tiny and float(sub.abs().max()) > 0
    assert int(profile_values(x, "equal", 0, gen).unique().numel()) == 1
    assert not bool(profile_values(x, "zeros", 0, gen).any())
    ids = torch.randperm(50, generator=gen)[:10].to(torch.int32)
    oob = profile_values(ids, "oob", 50, gen)
    assert {-1, 50} <= set(oob.tolist()) and oob.dtype == torch.int32
    edge = profile_values(ids, "edge", 50, gen)
    assert {0, 49} <= set(edge.tolist()) and len(set(edge.tolist())) == 10  # distinct ids stay distinct
    dup = profile_values(ids, "dup", 50, gen)
    assert len(set(dup.tolist())) == 1 and 0 <= dup[0] < 50
    assert not math.isnan(float(profile_values(x, "zeros", 0, gen).sum()))


def test_a_spec_that_needs_a_newer_gpu_is_not_run_and_says_why():
    """`min_arch=100` on an sm_90 card: not run, with the reason (a kernel that traps below
    sm_100 would fault in every case); on sm_100, or where nvidia-smi cannot say, it runs.
    The card's architecture is the oldest of the GPUs in use, from nvidia-smi's lines."""
    from kernel_check.harness.run import arch_of, unsupported

    spec = dataclasses.replace(SPECS["fixture_anon_shift"], min_arch=100)
    assert unsupported(spec, 90) == "fixture_anon_shift: not run: it needs sm_100 or newer, the GPU is sm_90"
    assert unsupported(spec, 100) is None and unsupported(spec, None) is None
    assert unsupported(SPECS["fixture_anon_shift"], 75) is None
    listing = "0, 10.0\n1, 9.0\n2, 12.1\n"
    assert arch_of(listing, ("0", "2")) == 100 and arch_of(listing, ("0", "1")) == 90
    assert arch_of("[N/A]\n", ("0",)) is None


def test_min_arch_must_be_an_architecture_number():
    from kernel_check.harness.spec import SpecError, validate_spec

    with pytest.raises(SpecError, match="min_arch '100' is not an architecture number"):
        validate_spec(dataclasses.replace(SPECS["fixture_anon_shift"], min_arch="100"))
