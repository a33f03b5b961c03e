"""`kernel-check spec check`: each instantiation compiled with nvcc (no GPU), built or its
first error, failures remembered; and a draft of a tree like FlashInfer's (its own include/,
a launcher that exports itself) that builds as drafted. Real nvcc, real libclang parses."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernel_check import runtime
from kernel_check.harness.compile_probe import FAILURES_FOLDER
from kernel_check.harness.discover import discover

pytestmark = [
    pytest.mark.nvcc,
    pytest.mark.skipif(
        runtime.find_nvcc() is None, reason="nvcc not found (install the CUDA toolkit or set CUDA_HOME)"
    ),
]

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _kernel_check(*args: str, cwd: Path, cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "KERNEL_CHECK_JIT_CACHE": str(cache), "TVM_FFI_CUDA_ARCH_LIST": "9.0"}
    return subprocess.run(
        [sys.executable, "-m", "kernel_check", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=900
    )


def test_spec_check_reports_each_instantiation_and_remembers_failures(tmp_path):
    tree = tmp_path / "kernels"
    shutil.copytree(FIXTURES / "spec_check", tree)
    cache = tmp_path / "jit"
    first = _kernel_check("spec", "check", str(tree), cwd=tmp_path, cache=cache)
    assert first.returncode == 1, first.stderr
    lines = first.stdout.splitlines()
    assert lines[0] == "built   fill[2]"
    assert lines[1].startswith("FAILED  fill[3]: ") and "kWidth must be even" in lines[1], lines
    assert "Traceback" not in first.stderr and "1 of 2 instantiations build" in first.stderr
    remembered = sorted((cache / FAILURES_FOLDER).iterdir())
    assert len(remembered) == 2  # the module of both, then width 3 alone
    again = _kernel_check("spec", "check", str(tree), cwd=tmp_path, cache=cache)
    assert again.returncode == 1 and again.stdout == first.stdout
    assert sorted((cache / FAILURES_FOLDER).iterdir()) == remembered


def test_spec_check_usage_errors_are_one_line(tmp_path):
    missing = _kernel_check("spec", "check", str(tmp_path / "nope"), cwd=tmp_path, cache=tmp_path / "jit")
    assert missing.returncode == 2 and len(missing.stderr.splitlines()) == 1 and "no such file" in missing.stderr


def test_a_draft_of_a_tree_with_its_own_include_folder_builds_as_drafted(tmp_path):
    tree = tmp_path / "own_tree"
    shutil.copytree(FIXTURES / "draft" / "own_tree", tree)
    spec = tmp_path / "specs" / "halve_spec.py"
    spec.parent.mkdir()
    drafted = _kernel_check(
        "spec", "new", str(tree / "csrc" / "halve.cu"), "-o", str(spec), cwd=tmp_path, cache=tmp_path / "jit"
    )
    assert drafted.returncode == 0, drafted.stderr
    text = spec.read_text()
    assert "include_dirs=('../own_tree/include',)" in text
    assert "export='halve_under_test'" in text  # halve.cu exports `halve` itself
    # without the tree's include/ the header is missing; that failure is remembered, and must
    # not answer the same spec once the folder is there
    bare = tmp_path / "bare" / "halve_spec.py"
    bare.parent.mkdir()
    bare.write_text(text.replace("include_dirs=('../own_tree/include',)", "include_dirs=()"))
    unfound = _kernel_check("spec", "check", str(bare), cwd=tmp_path, cache=tmp_path / "jit")
    assert unfound.returncode == 1 and "own/halve_kernel.cuh" in unfound.stdout, unfound.stdout + unfound.stderr
    checked = _kernel_check("spec", "check", str(spec), cwd=tmp_path, cache=tmp_path / "jit")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.splitlines() == ["built   halve[default]"]


def test_the_drafter_keeps_the_template_values_that_compile(tmp_path):
    cuh = tmp_path / "groups.cuh"
    assertion = 'static_assert(kGroup % 8 == 0, "kGroup must be a multiple of 8");'
    source = (FIXTURES / "draft" / "probe" / "groups.cuh").read_text().replace(f"  {assertion}\n", "")
    # in the kernel, where the drafter's model does not evaluate it: only the compiler sees it
    cuh.write_text(source.replace("  const int64_t g = ", f"  {assertion}\n  const int64_t g = ", 1))
    cache = tmp_path / "jit"
    guessed = _kernel_check("spec", "new", str(cuh), "--no-probe", "-o", "-", cwd=tmp_path, cache=cache)
    assert "Instantiation((1,))," in guessed.stdout  # no value known: 1, which breaks the static_assert
    drafted = _kernel_check("spec", "new", str(cuh), cwd=tmp_path, cache=cache)
    assert drafted.returncode == 0, drafted.stderr
    spec = discover([tmp_path / "groups_spec.py"]).specs[0]
    assert [i.template_args for i in spec.instantiations] == [(8,), (32,), (64,), (128,), (512,)]
    text = (tmp_path / "groups_spec.py").read_text()
    assert "2 of 7 candidate instantiations do not compile" in text and "kGroup must be a multiple of 8" in text
    assert not list(tmp_path.glob(".kernel-check-probe-*"))  # the probe's spec file is gone


def test_spec_check_targets_the_configured_arch(tmp_path):
    """Without `TVM_FFI_CUDA_ARCH_LIST`, `spec check` builds for `[tool.kernel-check] arch`, as
    `kernel-check build` does: a kernel that needs sm_90 fails for a project set to sm_80."""
    tree = tmp_path / "kernels"
    shutil.copytree(FIXTURES / "spec_check", tree)
    source = tree / "widths.cuh"
    source.write_text(
        source.read_text().replace(
            "__global__ void fill_kernel(float* data, int64_t n) {\n",
            "__global__ void fill_kernel(float* data, int64_t n) {\n"
            '#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900\n#error "built below sm_90"\n#endif\n',
        )
    )
    (tmp_path / "pyproject.toml").write_text('[tool.kernel-check]\narch = "80"\n')
    env = {k: v for k, v in os.environ.items() if k != "TVM_FFI_CUDA_ARCH_LIST"}
    env["KERNEL_CHECK_JIT_CACHE"] = str(tmp_path / "jit")
    run = subprocess.run(
        [sys.executable, "-m", "kernel_check", "spec", "check", str(tree)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=900,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stdout.startswith("FAILED  fill[2]: ") and "built below sm_90" in run.stdout, run.stdout


def test_the_configured_defines_reach_every_build(tmp_path):
    """`defines` of the configuration hold for the harness's builds as for the static check:
    a kernel that compiles only under a macro the tree's build defines (FlashInfer's dtype
    dispatch and its ENABLE macros) builds once the configuration names it."""
    tree = tmp_path / "kernels"
    shutil.copytree(FIXTURES / "spec_check", tree)
    source = tree / "widths.cuh"
    guard = '#ifndef FILL_ENABLED\n#error "FILL_ENABLED is defined by the build"\n#endif\n'
    source.write_text(source.read_text().replace("#pragma once\n", "#pragma once\n" + guard))
    spec = tree / "widths_spec.py"
    spec.write_text(spec.read_text().replace("Instantiation((2,)), Instantiation((3,))", "Instantiation((2,)),"))
    unset = _kernel_check("spec", "check", ".", cwd=tree, cache=tmp_path / "jit")
    assert unset.returncode == 1 and "FILL_ENABLED is defined by the build" in unset.stdout, unset.stdout
    (tree / "kernel-check.toml").write_text('defines = ["FILL_ENABLED=1"]\n')
    configured = _kernel_check("spec", "check", ".", cwd=tree, cache=tmp_path / "jit")
    assert configured.returncode == 0 and configured.stdout.splitlines() == ["built   fill[2]"], configured.stdout
