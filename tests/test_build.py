"""The build check stage (kernel-check build): KC600 with the compiler's message while the
other kernels still build, KC601/KC602 from ptxas's report, wrapper manifests. The nvcc
test compiles for sm_90 without a GPU and skips cleanly where nvcc is missing."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from kernel_check import runtime
from kernel_check.build import (
    BuildOutcome,
    BuildTarget,
    build_findings,
    environment_failures,
    kernel_identifier,
    merge_budgets,
    read_manifest,
    resource_findings,
    wrapper_targets,
)
from kernel_check.harness import cli
from kernel_check.harness.spec import TAILS, Instantiation, KernelSpec, Role, Tensor

FIXTURES = Path(__file__).parent / "fixtures" / "harness"
REPO = Path(__file__).parent.parent

BROKEN_SPEC = """
from kernel_check.harness.spec import TAILS, Instantiation, KernelSpec, Role, Tensor

SPEC = KernelSpec(name="broken", source="broken.cuh", export="broken", symbol="broken",
                  args=(Tensor("dst", ("n",), "float32", Role.OUT),), reference=lambda: None,
                  instantiations=(Instantiation(()),), grid={"n": TAILS})
"""
BROKEN_SOURCE = "namespace sglang {\nvoid broken(int x) { undefined_identifier(x); }\n}\n"


def _target(budget: dict[str, int]) -> BuildTarget:
    return BuildTarget(
        "k[x]",
        ("k",),
        ("k.cuh",),
        (("k", "k"),),
        str(FIXTURES),
        str(FIXTURES / "tail_overrun.cuh"),
        register_budget=budget,
    )


def test_register_budget_and_spills():
    result = runtime.BuildResult(
        "k",
        "key",
        Path("k.so"),
        "",
        [
            runtime.KernelResources(
                "void sglang::tail_overrun_kernel<(bool)1>(float *, const float *, float, long)", 96, 0, 0, 0, 0
            ),
            runtime.KernelResources("_ZN6sglang5otherEv", 40, 8, 8, 0, 8),
        ],
    )
    findings = resource_findings(BuildOutcome(_target({"default": 64}), result=result))
    assert sorted(f.code for f in findings) == ["KC601", "KC602"]
    over = next(f for f in findings if f.code == "KC601")
    assert "96 registers" in over.message and over.location.line > 1  # at the kernel's definition
    assert not [
        f
        for f in resource_findings(BuildOutcome(_target({"default": 64, "tail_overrun_kernel": 128}), result=result))
        if f.code == "KC601"
    ]


def test_a_build_tool_that_cannot_start_is_an_environment_failure_not_kc600(monkeypatch, tmp_path):
    """Starting ninja can fail for a moment on a machine short of memory ([Errno 14] seen on
    the H200 with many builds and GPU children): tried again, then no finding, one line."""
    monkeypatch.setattr(runtime, "_SPAWN_RETRY_DELAYS", (0.0, 0.0))
    with pytest.raises(runtime.BuildError) as raised:
        runtime._run_build_tool([str(tmp_path / "no-such-ninja"), "-v"], str(tmp_path))
    assert raised.value.environment and "could not start" in str(raised.value)
    outcome = BuildOutcome(_target({"default": 64}), error=raised.value)
    assert build_findings([outcome]) == []
    assert environment_failures([outcome]) == [f"k[x]: {raised.value}"]
    broken = BuildOutcome(_target({"default": 64}), error=runtime.BuildError("JIT build failed", log="k.cuh(3): error"))
    assert [f.code for f in build_findings([broken])] == ["KC600"] and environment_failures([broken]) == []
    assert runtime._run_build_tool(["true"], str(tmp_path)).returncode == 0


def test_budget_merging_and_identifiers():
    assert merge_budgets(64, {"a": "96"}, None) == {"default": 64, "a": 96}
    assert merge_budgets(64, {}, 80)["default"] == 80
    assert merge_budgets(64, {}, {"b": 128}) == {"default": 64, "b": 128}
    assert kernel_identifier("_ZN6sglang12scale_kernelIfLi4ELb1EEEvPT_PKS1_fj") == "scale_kernel"


def test_wrapper_manifest_targets():
    wrapper = REPO / "csrc" / "add_constant.py"
    if not wrapper.exists():
        pytest.skip("csrc/add_constant.py is not in this checkout")
    assert read_manifest(wrapper)["CUDA_FILES"] == ["add_constant.cuh"]
    targets = wrapper_targets(wrapper, {"default": 64})
    assert targets and all(Path(t.csrc_root) == REPO / "csrc" for t in targets)
    assert read_manifest(REPO / "src" / "kernel_check" / "build.py") is None


@pytest.mark.nvcc
@pytest.mark.skipif(runtime.find_nvcc() is None, reason="nvcc not found (install the CUDA toolkit or set CUDA_HOME)")
def test_build_compiles_what_it_can_and_reports_the_rest(tmp_path, monkeypatch, capsys):
    # The JIT cache is the user's (KERNEL_CHECK_JIT_CACHE or the default): the good kernels'
    # key covers their contents, not their folder, so a tree copied here reuses the builds of
    # tests/fixtures/harness (kernel-check build, earlier runs) and only the broken one compiles.
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "9.0")
    tree = tmp_path / "kernels"
    tree.mkdir()
    for name in ("tail_overrun.cuh", "tail_overrun_spec.py"):
        shutil.copy(FIXTURES / name, tree / name)
    (tree / "broken.cuh").write_text(BROKEN_SOURCE)
    (tree / "broken_spec.py").write_text(BROKEN_SPEC)
    status = cli.main(["build", str(tree), "--format", "json"])
    out = capsys.readouterr().out
    assert status == 1
    assert '"KC600"' in out and "undefined_identifier" in out and "broken.cuh" in out
    assert out.count('"KC600"') == 1  # both tail_overrun instantiations built


@pytest.mark.nvcc
@pytest.mark.skipif(runtime.find_nvcc() is None, reason="nvcc not found (install the CUDA toolkit or set CUDA_HOME)")
def test_build_output_has_only_our_messages(tmp_path):
    """Real `kernel-check build` on a machine without NumPy: torch (imported by tvm-ffi) would
    warn "Failed to initialize NumPy", and tvm-ffi's own `-std=c++17` next to ours made nvcc
    warn "incompatible redefinition for option 'std'" in every compiler log (KC600's detail)."""
    hidden = tmp_path / "no-numpy" / "numpy"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text('raise ModuleNotFoundError("No module named \'numpy\'", name="numpy")\n')
    tree = tmp_path / "kernels"
    tree.mkdir()
    (tree / "broken.cuh").write_text("#include <sgl_kernel/tensor.h>\n" + BROKEN_SOURCE)
    (tree / "broken.py").write_text('CUDA_FILES = ["broken.cuh"]\nINSTANTIATIONS = [("broken", "broken")]\n')
    env = {
        **os.environ,
        "PYTHONPATH": str(hidden.parent),
        "KERNEL_CHECK_JIT_CACHE": str(tmp_path / "jit"),
        "TVM_FFI_CUDA_ARCH_LIST": "9.0",
    }
    run = subprocess.run(
        [sys.executable, "-m", "kernel_check", "build", str(tree), "--format", "json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    (finding,) = json.loads(run.stdout)
    assert finding["code"] == "KC600" and "undefined_identifier" in finding["detail"]
    nvcc_line = next(line for line in finding["detail"].splitlines() if "nvcc" in line and " -c " in line)
    assert len(re.findall(r"\s-std=", nvcc_line)) == 1, nvcc_line
    assert "incompatible redefinition" not in run.stdout + run.stderr
    assert "NumPy" not in run.stderr, run.stderr


@pytest.mark.nvcc
@pytest.mark.skipif(runtime.find_nvcc() is None, reason="nvcc not found (install the CUDA toolkit or set CUDA_HOME)")
def test_build_finds_the_repositorys_headers_and_the_configured_ones(tmp_path, monkeypatch, capsys):
    """`kernel-check build` searches what the static check searches: the repository's own
    `include/sgl_kernel/` (found walking up from the kernel) and `[tool.kernel-check] include-dirs`."""
    repo = tmp_path / "repo"
    (repo / "include" / "sgl_kernel").mkdir(parents=True)
    (repo / "include" / "sgl_kernel" / "own.h").write_text("#pragma once\nconstexpr int kOwnHeader = 1;\n")
    (repo / "vendor").mkdir()
    (repo / "vendor" / "vendor_extra.h").write_text("#pragma once\nconstexpr int kVendorHeader = 2;\n")
    (repo / "pyproject.toml").write_text('[tool.kernel-check]\ninclude-dirs = ["vendor"]\n')
    (repo / "csrc").mkdir()
    (repo / "csrc" / "k.cuh").write_text(
        "#include <sgl_kernel/own.h>\n#include <vendor_extra.h>\n#include <tvm/ffi/container/tensor.h>\n"
        "namespace sglang {\n"
        "inline void probe(tvm::ffi::TensorView x) { static_assert(kOwnHeader + kVendorHeader == 3); (void)x; }\n"
        "}  // namespace sglang\n"
    )
    (repo / "csrc" / "k.py").write_text('CUDA_FILES = ["k.cuh"]\nINSTANTIATIONS = [("probe", "probe")]\n')
    monkeypatch.chdir(repo)
    monkeypatch.setenv("KERNEL_CHECK_JIT_CACHE", str(tmp_path / "jit"))
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "9.0")
    status = cli.main(["build", "csrc", "--format", "json"])
    out = capsys.readouterr().out
    assert (status, json.loads(out)) == (0, []), out


BROKEN_WRAPPER = 'import torch\n\nCUDA_FILES = ["broken.cuh"]\nINSTANTIATIONS = [("broken", "broken")]\n'


def _spec_and_wrapper_tree(root: Path) -> Path:
    """A spec (tail_overrun, two instantiations) and a csrc-style wrapper (`broken` in the tree,
    which imports torch as wrappers do) whose one instantiation does not compile."""
    tree = root / "kernels"
    tree.mkdir()
    for name in ("tail_overrun.cuh", "tail_overrun_spec.py"):
        shutil.copy(FIXTURES / name, tree / name)
    (tree / "broken.cuh").write_text("#include <sgl_kernel/tensor.h>\n" + BROKEN_SOURCE)
    (tree / "broken.py").write_text(BROKEN_WRAPPER)
    return tree


@pytest.mark.nvcc
@pytest.mark.skipif(runtime.find_nvcc() is None, reason="nvcc not found (install the CUDA toolkit or set CUDA_HOME)")
def test_k_selects_among_the_wrappers_instantiations_too(tmp_path, monkeypatch, capsys):
    """`-k` picks wrapper instantiations (named WRAPPER:SYMBOL) as it picks specs: it used to
    drop every wrapper, then say there was nothing to build."""
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "9.0")
    monkeypatch.setenv("KERNEL_CHECK_JIT_CACHE", str(tmp_path / "jit"))
    tree = _spec_and_wrapper_tree(tmp_path)
    assert cli.main(["build", str(tree), "-k", "broken", "--format", "json"]) == 1
    out, err = capsys.readouterr()
    (finding,) = json.loads(out)
    assert finding["code"] == "KC600" and finding["message"].startswith("broken:broken does not compile")
    assert "[1/1 " in err and "tail_overrun" not in err, err  # the one selected module, not the spec's
    assert cli.main(["build", str(tree), "-k", "nothing*"]) == 2
    assert "nothing to build" in capsys.readouterr().err


@pytest.mark.nvcc
@pytest.mark.skipif(runtime.find_nvcc() is None, reason="nvcc not found (install the CUDA toolkit or set CUDA_HOME)")
def test_building_a_wrapper_named_directly_needs_no_torch(tmp_path):
    """`kernel-check build WRAPPER.py` reads the wrapper's manifest with `ast`; it
    used to import the wrapper as a spec, and so torch, which only running a kernel needs."""
    blocked = tmp_path / "no-torch" / "torch"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text('raise ImportError("torch is not installed here")\n')
    tree = _spec_and_wrapper_tree(tmp_path)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(blocked.parent), os.environ.get("PYTHONPATH", "")]),
        "KERNEL_CHECK_JIT_CACHE": str(tmp_path / "jit"),
        "TVM_FFI_CUDA_ARCH_LIST": "9.0",
    }
    run = subprocess.run(
        [sys.executable, "-m", "kernel_check", "build", str(tree / "broken.py"), "--format", "json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 1 and "torch" not in run.stderr, run.stdout + run.stderr
    (finding,) = json.loads(run.stdout)
    assert finding["code"] == "KC600" and "undefined_identifier" in finding["detail"]


WIDTHS_SOURCE = """namespace sglang {
template <int kWidth>
__global__ void widths_kernel(int* out) { out[threadIdx.x] = kWidth; }
template <int kWidth>
int widths(int x) {
  static_assert(kWidth != 3, "widths: 3 is not supported");
  return x * kWidth;
}
}  // namespace sglang
"""


def _widths_spec(tree: Path, widths: tuple[int, ...]) -> KernelSpec:
    return KernelSpec(
        name="widths",
        source="widths.cuh",
        export="widths",
        symbol="widths",
        args=(Tensor("dst", ("n",), "int32", Role.OUT),),
        reference=None,
        instantiations=tuple(Instantiation((w,)) for w in widths),
        grid={"n": TAILS},
        spec_path=str(tree / "widths_spec.py"),
    )


@pytest.mark.nvcc
@pytest.mark.skipif(runtime.find_nvcc() is None, reason="nvcc not found (install the CUDA toolkit or set CUDA_HOME)")
def test_a_spec_is_one_module_and_a_failing_one_is_built_again_per_instantiation(tmp_path, monkeypatch):
    """Every instantiation of a spec in one module, each under its own export; when that
    module fails, each instantiation alone: KC600 names the broken one, the rest still load."""
    import tvm_ffi

    from kernel_check.harness.build import build_specs

    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "9.0")
    monkeypatch.setenv("KERNEL_CHECK_JIT_CACHE", str(tmp_path / "jit"))
    (tmp_path / "widths.cuh").write_text(WIDTHS_SOURCE)

    good = build_specs([_widths_spec(tmp_path, (1, 2))])
    assert not good.findings
    assert len(set(good.libraries["widths"].values())) == 1
    assert good.exports["widths"] == {"1": "widths_0", "2": "widths_1"}
    module = tvm_ffi.load_module(good.libraries["widths"]["2"])
    assert [module.widths_0(5), module.widths_1(5)] == [5, 10]

    built = []  # two specs of one launcher (a spec per value contract, say): one compile
    twins = build_specs(
        [_widths_spec(tmp_path, (1, 2)), replace(_widths_spec(tmp_path, (1, 2)), name="twin")], on_done=built.append
    )
    assert [o.target.label for o in built] == ["widths", "twin"]  # progress names both, compiled once
    assert twins.libraries["twin"] == twins.libraries["widths"] == good.libraries["widths"]
    assert not twins.findings

    mixed = build_specs([_widths_spec(tmp_path, (1, 3))])
    (failure,) = mixed.findings
    assert failure.code == "KC600" and "widths[3]" in failure.message and "3 is not supported" in failure.detail
    assert list(mixed.libraries["widths"]) == ["1"] and mixed.exports["widths"] == {"1": "widths_0"}
    assert tvm_ffi.load_module(mixed.libraries["widths"]["1"]).widths_0(5) == 5


def test_a_compile_error_points_at_its_line_after_lines_the_patterns_do_not_take(tmp_path: Path) -> None:
    """nvcc prints lines without `(` before `FILE(LINE): error` (a command, a note): the match
    starts on the error's own line, and a first match naming no file does not end the search."""
    from kernel_check.build import _compiler_error_location

    source = tmp_path / "broken.cuh"
    source.write_text("int x = ;\n")
    log = (
        f"ninja: build stopped\nIn file included from a file that is not here\n"
        f"missing.cuh(9): error: no such file\n{source}(3): error: expected an expression\n"
    )
    location = _compiler_error_location(log, str(tmp_path / "fallback.cuh"))
    assert (Path(location.path).resolve(), location.line) == (source.resolve(), 3)


ARCH_GATED_SOURCE = """#include <tvm/ffi/container/tensor.h>
namespace sglang {
/// \\brief Compiles only for sm_90 and newer.
__global__ void needs_sm90_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#error "needs_sm90_kernel: built for an arch below sm_90"
#endif
}
/// \\brief Launches nothing; the build is the test.
inline void needs_sm90(tvm::ffi::TensorView x) { (void)x; }
}  // namespace sglang
"""


@pytest.mark.nvcc
@pytest.mark.skipif(runtime.find_nvcc() is None, reason="nvcc not found (install the CUDA toolkit or set CUDA_HOME)")
@pytest.mark.parametrize(("env_arch", "built"), [(None, False), ("9.0", True)])
def test_build_targets_the_configured_arch_unless_the_environment_names_one(tmp_path, env_arch, built):
    """`[tool.kernel-check] arch` is the arch a compile-only build targets, as it is the one the
    parse assumes; TVM_FFI_CUDA_ARCH_LIST, when set, still wins."""
    (tmp_path / "pyproject.toml").write_text('[tool.kernel-check]\narch = "80"\n')
    (tmp_path / "k.cuh").write_text(ARCH_GATED_SOURCE)
    (tmp_path / "k.py").write_text('CUDA_FILES = ["k.cuh"]\nINSTANTIATIONS = [("needs_sm90", "needs_sm90")]\n')
    env = {k: v for k, v in os.environ.items() if k != "TVM_FFI_CUDA_ARCH_LIST"}
    env["KERNEL_CHECK_JIT_CACHE"] = str(tmp_path / "jit")
    if env_arch:
        env["TVM_FFI_CUDA_ARCH_LIST"] = env_arch
    run = subprocess.run(
        [sys.executable, "-m", "kernel_check", "build", ".", "--format", "json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    findings = json.loads(run.stdout)
    if built:
        assert (run.returncode, findings) == (0, []), run.stdout + run.stderr
    else:
        assert run.returncode == 1, run.stdout + run.stderr
        assert [f["code"] for f in findings] == ["KC600"] and "below sm_90" in findings[0]["detail"]
