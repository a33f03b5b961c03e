"""kernel-check as users install it: the wheel, installed NON-editable into a fresh virtual
environment, checks a repository of its own that has no `include/` (the header library comes
from the wheel's package data), builds its kernel with nvcc, and blocks a commit through the
real `pre-commit` from a `repo:` + `rev: <release tag>` entry.

The new environment sees the system site-packages (torch, libclang-ng and tvm-ffi need not
download), where an editable install of this checkout may also live: each test checks that
`kernel_check` imports from the installed wheel."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import git, pre_commit_env, user_repo
from test_workflows import template_workflows

from kernel_check import runtime

pytestmark = pytest.mark.skipif(shutil.which("git") is None or shutil.which("pre-commit") is None,
                                reason="git or pre-commit is not installed")

KERNEL = """\
/// \\file negate.cuh
/// \\brief Example kernel for the installation test: `out = -in`.
#pragma once

#include <sgl_kernel/tensor.h>
#include <sgl_kernel/utils.cuh>
#include <sgl_kernel/utils.h>

#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>

#include <cstdint>

namespace sglang {

/**
 * \\brief Writes the negation of each element (one element per thread).
 *
 * \\tparam T    Element type
 * \\param out   Output, `count` elements
 * \\param in    Input, `count` elements
 * \\param count Number of elements
 */
template <typename T>
__global__ void negate_kernel(T* __restrict__ out, const T* in, int64_t count) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) {
    out[i] = -in[i];
  }
}

/**
 * \\brief Checks `out` and `in` (one 1-D shape, dtype `T`, one CUDA device), launches `negate_kernel`.
 *
 * \\tparam T  Element type
 * \\param out Output tensor
 * \\param in  Input tensor
 */
template <typename T>
void negate(tvm::ffi::TensorView out, tvm::ffi::TensorView in) {
  using namespace host;
  SymbolicSize count{"count"};
  SymbolicDevice device;
  device.set_options<kDLCUDA>();
  TensorMatcher({count})  //
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .verify(out, "out")
      .verify(in, "in");
  const int64_t n = count.unwrap();
  constexpr uint32_t kThreads = 128;
  const auto blocks = static_cast<uint32_t>(div_ceil(n, int64_t{kThreads}));
  LaunchKernel(blocks, kThreads, device.unwrap())(
      negate_kernel<T>, static_cast<T*>(out.data_ptr()), static_cast<const T*>(in.data_ptr()), n);
}

}  // namespace sglang
"""
PLANTED_LINE = 25  # `const T* in`: a read-only kernel pointer without __restrict__ (KC101)
FIXED_KERNEL = KERNEL.replace("const T* in,", "const T* __restrict__ in,")
WRAPPER = '''"""negate: what `kernel-check build` compiles (module-level literals, read without importing)."""

CUDA_FILES = ["negate.cuh"]
INSTANTIATIONS = [("negate", "negate<fp32_t>")]
'''


def _run(args: list[str | Path], cwd: Path, env: dict[str, str] | None = None,
         check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    if check and done.returncode != 0:
        pytest.fail(f"{' '.join(map(str, args))} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done


@pytest.fixture(scope="module")
def wheel(hook_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`pip wheel` of the tagged snapshot, in pip's isolated build environment as users get it."""
    dist = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", dist, hook_repo], cwd=dist)
    (built,) = dist.glob("kernel_check-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtual environment with the wheel installed non-editable; returns its bin/."""
    root = tmp_path_factory.mktemp("venv")
    _run([sys.executable, "-m", "venv", "--system-site-packages", root], cwd=root)
    bin_dir = root / "bin"
    _run([bin_dir / "python", "-m", "pip", "install", "-q", "--no-deps", "--ignore-installed", wheel], cwd=root)
    shown = _run([bin_dir / "python", "-c", "import kernel_check.includes as i; print(i.__file__); "
                  "print(i.bundled_include_dir())"], cwd=root).stdout.split()
    module, headers = (Path(line) for line in shown)
    assert module.is_relative_to(root), f"kernel_check imports from {module}, not the installed wheel"
    assert headers.is_relative_to(root) and (headers / "sgl_kernel" / "tensor.h").is_file()
    return bin_dir


@pytest.fixture(scope="module")
def jit_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One JIT cache for this module: the CI recipe's build step reuses the build test's."""
    return tmp_path_factory.mktemp("jit")


def _user_repo(tmp_path: Path, hook_repo: Path) -> Path:
    repo = user_repo(tmp_path / "user", hook_repo)
    (repo / "csrc").mkdir()
    (repo / "csrc" / "negate.cuh").write_text(KERNEL)
    (repo / "csrc" / "negate.py").write_text(WRAPPER)
    return repo


def test_static_check_finds_the_headers_and_the_planted_finding(venv: Path, tmp_path: Path,
                                                                hook_repo: Path) -> None:
    repo = _user_repo(tmp_path, hook_repo)
    done = _run([venv / "kernel-check", "csrc", "--format", "json", "--no-cache"], cwd=repo, check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    found = [(f["path"], f["line"], f["code"]) for f in json.loads(done.stdout)]
    assert found == [("csrc/negate.cuh", PLANTED_LINE, "KC101")], found


@pytest.mark.nvcc
@pytest.mark.skipif(runtime._find_nvcc() is None, reason="nvcc not found (install the CUDA toolkit or set CUDA_HOME)")
def test_build_compiles_against_the_installed_headers(venv: Path, tmp_path: Path, hook_repo: Path,
                                                     jit_cache: Path) -> None:
    repo = _user_repo(tmp_path, hook_repo)
    env = {**os.environ, "KERNEL_CHECK_JIT_CACHE": str(jit_cache), "TVM_FFI_CUDA_ARCH_LIST": "9.0"}
    for command in (["build"], ["test", "--compile-only"]):  # the second one hits the JIT cache
        done = _run([venv / "kernel-check", *command, "csrc", "--format", "json"], cwd=repo, env=env, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        assert json.loads(done.stdout) == []
        assert "warning" not in done.stderr.lower(), done.stderr
    assert list(jit_cache.glob("wrapper_negate_0_*/wrapper_negate_0.so")), "no library was built"


def test_pre_commit_blocks_the_commit_until_the_finding_is_fixed(tmp_path: Path, hook_repo: Path,
                                                                  pre_commit_home: Path) -> None:
    repo = _user_repo(tmp_path, hook_repo)
    env = pre_commit_env(pre_commit_home)
    _run(["pre-commit", "install"], cwd=repo, env=env)
    git(repo, "add", "-A")
    commit = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "negate kernel"]
    blocked = _run(commit, cwd=repo, env=env, check=False)
    hook_output = blocked.stdout + blocked.stderr  # git shows the hook's output on stderr
    assert blocked.returncode == 1, hook_output
    assert f"csrc/negate.cuh:{PLANTED_LINE}:" in hook_output and "KC101" in hook_output
    assert "KC000" not in hook_output, hook_output

    (repo / "csrc" / "negate.cuh").write_text(FIXED_KERNEL)
    git(repo, "add", "-A")
    passed = _run(commit, cwd=repo, env=env, check=False)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert _run(["git", "log", "--format=%s"], cwd=repo).stdout.split("\n")[0] == "negate kernel"


# ----- docs/ci.md, run as written -----

GITHUB_CONTEXT = {"github.base_ref": "main"}  # a pull request into main


def _recipe_steps(job: str) -> list[dict]:
    """The `run:` steps of one job of the docs/ci.md workflow that install or run kernel-check
    or fetch the base branch (the container's apt-get set-up is the CI image's business)."""
    ((_, workflow),) = template_workflows()
    steps = [s for s in workflow["jobs"][job]["steps"] if "run" in s]
    return [s for s in steps if "kernel-check" in s["run"] or "git fetch" in s["run"]]


def _run_step(step: dict, job_env: dict, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """One step the way a runner runs it: `bash -e`, the job's and the step's `env:` with their
    `${{ github.* }}` expressions filled in (the scripts themselves must not hold any)."""
    assert "${{" not in step["run"], f"expression inside a script: {step['run']}"
    expression = re.compile(r"\$\{\{\s*([\w.]+)\s*\}\}")
    for key, value in {**job_env, **step.get("env", {})}.items():
        env[key] = expression.sub(lambda m: GITHUB_CONTEXT[m.group(1)], str(value))
    return subprocess.run(["bash", "-e", "-c", step["run"]], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)


def _pull_request_checkout(tmp_path: Path) -> Path:
    """`origin` with a clean kernel on main, and the checkout of a branch that adds KC101."""
    origin = tmp_path / "origin"
    origin.mkdir()
    git(origin, "init", "-q", "-b", "main")
    (origin / "csrc").mkdir()
    (origin / "csrc" / "negate.cuh").write_text(FIXED_KERNEL)
    (origin / "csrc" / "negate.py").write_text(WRAPPER)
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "base")
    checkout = tmp_path / "checkout"
    git(tmp_path, "clone", "-q", origin.as_uri(), str(checkout))
    git(checkout, "checkout", "-q", "-b", "feature")
    (checkout / "csrc" / "negate.cuh").write_text(KERNEL)
    git(checkout, "commit", "-qam", "a kernel parameter without __restrict__")
    return checkout


def test_ci_recipe_runs_as_written(venv: Path, wheel: Path, tmp_path: Path, jit_cache: Path) -> None:
    checkout = _pull_request_checkout(tmp_path)
    # `pip install kernel-check==X` resolves to the local wheel; `python` is the runner's (the venv)
    env = {**os.environ, "PATH": f"{venv}{os.pathsep}{os.environ['PATH']}", "PIP_FIND_LINKS": str(wheel.parent),
           "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "KERNEL_CHECK_JIT_CACHE": str(jit_cache)}
    ((_, workflow),) = template_workflows()
    jobs = ["static"] + (["build"] if runtime._find_nvcc() is not None else [])
    ran = [(step["run"], _run_step(step, workflow["jobs"][job].get("env", {}), checkout, env))
           for job in jobs for step in _recipe_steps(job)]
    assert len(ran) >= 4, [script for script, _ in ran]

    for script, done in ran:  # only the gate fails: the pull request adds a finding
        expected = 1 if "--diff" in script else 0
        assert done.returncode == expected, f"{script}\n{done.stdout}\n{done.stderr}"
    (gate,) = [done for script, done in ran if "--diff" in script]
    assert gate.stdout.startswith(f"::error file=csrc/negate.cuh,line={PLANTED_LINE},"), gate.stdout
    sarif = json.loads((checkout / "kernel-check.sarif").read_text())
    (result,) = sarif["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "csrc/negate.cuh"
