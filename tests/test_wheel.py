"""kernel-check as users install it: the wheel, installed NON-editable into a fresh virtual
environment, checks a repository of its own that has no `include/` (the header library comes
from the wheel's package data), builds its kernel with nvcc, and blocks a commit through the
real `pre-commit` from a `repo:` + `rev: <release tag>` entry.

The new environment sees the packages the suite runs with (tests/venvs.py: torch, libclang-ng
and tvm-ffi need not download, nothing needs the network), where an editable install of this
checkout may also live: the environment's fixture checks that `kernel_check` imports from the
installed wheel."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import RELEASE_TAG, git, pre_commit_env, user_repo
from kernel_check import runtime
from test_workflows import template_workflows
from venvs import OFFLINE_PIP, installed_module, make_venv, run, venv_environ, with_local_repository

pytestmark = [
    pytest.mark.slow,  # builds wheels and fresh virtual environments
    pytest.mark.skipif(
        shutil.which("git") is None or shutil.which("pre-commit") is None, reason="git or pre-commit is not installed"
    ),
]

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


@pytest.fixture(scope="module")
def wheel(hook_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`pip wheel` of the tagged snapshot (the commit a release tag names), offline."""
    dist = tmp_path_factory.mktemp("dist")
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-q",
            "-w",
            dist,
            f"git+{hook_repo.as_uri()}@{RELEASE_TAG}",
        ],
        cwd=dist,
        env={**os.environ, **OFFLINE_PIP},
    )
    (built,) = dist.glob("kernel_check-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtual environment with the wheel installed non-editable; returns its bin/."""
    root = tmp_path_factory.mktemp("venv") / "env"
    bin_dir = make_venv(root)
    run([bin_dir / "pip", "install", "-q", wheel], cwd=root, env=venv_environ(bin_dir))
    module = installed_module(bin_dir, root)
    assert module.is_relative_to(root), f"kernel_check imports from {module}, not the installed wheel"
    headers = Path(
        run(
            [bin_dir / "python", "-c", "import kernel_check.includes as i; print(i.bundled_include_dir())"],
            cwd=root,
            env=venv_environ(bin_dir),
        ).stdout.strip()
    )
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


def test_static_check_finds_the_headers_and_the_planted_finding(venv: Path, tmp_path: Path, hook_repo: Path) -> None:
    repo = _user_repo(tmp_path, hook_repo)
    done = run(
        [venv / "kernel-check", "csrc", "--format", "json", "--no-cache"], cwd=repo, env=venv_environ(venv), check=False
    )
    assert done.returncode == 1, done.stdout + done.stderr
    found = [(f["path"], f["line"], f["code"]) for f in json.loads(done.stdout)]
    assert found == [("csrc/negate.cuh", PLANTED_LINE, "KC101")], found


@pytest.mark.nvcc
@pytest.mark.skipif(runtime.find_nvcc() is None, reason="nvcc not found (install the CUDA toolkit or set CUDA_HOME)")
def test_build_compiles_against_the_installed_headers(
    venv: Path, tmp_path: Path, hook_repo: Path, jit_cache: Path
) -> None:
    repo = _user_repo(tmp_path, hook_repo)
    env = {**venv_environ(venv), "KERNEL_CHECK_JIT_CACHE": str(jit_cache), "TVM_FFI_CUDA_ARCH_LIST": "9.0"}
    for command in (["build"], ["test", "--compile-only"]):  # the second one hits the JIT cache
        done = run([venv / "kernel-check", *command, "csrc", "--format", "json"], cwd=repo, env=env, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        assert json.loads(done.stdout) == []
        assert "warning" not in done.stderr.lower(), done.stderr
    assert list(jit_cache.glob("wrapper_negate_0_*/wrapper_negate_0.so")), "no library was built"


def test_pre_commit_blocks_the_commit_until_the_finding_is_fixed(
    tmp_path: Path, hook_repo: Path, pre_commit_home: Path
) -> None:
    repo = _user_repo(tmp_path, hook_repo)
    env = pre_commit_env(pre_commit_home)
    run(["pre-commit", "install"], cwd=repo, env=env)
    git(repo, "add", "-A")
    commit = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "negate kernel"]
    blocked = run(commit, cwd=repo, env=env, check=False)
    hook_output = blocked.stdout + blocked.stderr  # git shows the hook's output on stderr
    assert blocked.returncode == 1, hook_output
    assert f"csrc/negate.cuh:{PLANTED_LINE}:" in hook_output and "KC101" in hook_output
    assert "KC000" not in hook_output, hook_output

    (repo / "csrc" / "negate.cuh").write_text(FIXED_KERNEL)
    git(repo, "add", "-A")
    passed = run(commit, cwd=repo, env=env, check=False)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert run(["git", "log", "--format=%s"], cwd=repo).stdout.split("\n")[0] == "negate kernel"


# ----- docs/ci.md, run as written -----

GITHUB_CONTEXT = {"github.base_ref": "main"}  # a pull request into main


def _recipe_steps(job: str) -> list[dict]:
    """The `run:` steps of one job of the docs/ci.md workflow that install or run kernel-check
    or fetch the base branch (the container's apt-get set-up is the CI image's business)."""
    ((_, workflow),) = template_workflows()
    steps = [s for s in workflow["jobs"][job]["steps"] if "run" in s]
    return [s for s in steps if "kernel-check" in s["run"] or "git fetch" in s["run"]]


def _run_step(
    script: str, step: dict, job_env: dict, cwd: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """One step's `script` the way a runner runs it: `bash -e`, the job's and the step's `env:`
    with their `${{ github.* }}` expressions filled in (the scripts themselves must not hold any)."""
    assert "${{" not in script, f"expression inside a script: {script}"
    expression = re.compile(r"\$\{\{\s*([\w.]+)\s*\}\}")
    for key, value in {**job_env, **step.get("env", {})}.items():
        env[key] = expression.sub(lambda m: GITHUB_CONTEXT[m.group(1)], str(value))
    return subprocess.run(["bash", "-e", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


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


def _run_job(
    job: str, workflow: dict, checkout: Path, runner: Path, hook_repo: Path, jit_cache: Path
) -> list[tuple[str, subprocess.CompletedProcess[str]]]:
    """A job's steps on a fresh runner: `python` is a new virtual environment's, and the install
    step's git URL names the tagged snapshot of this checkout instead of the repository online."""
    env = {**venv_environ(make_venv(runner)), "KERNEL_CHECK_JIT_CACHE": str(jit_cache)}
    ran = []
    for step in _recipe_steps(job):
        script = with_local_repository(step["run"], hook_repo) if "pip install" in step["run"] else step["run"]
        ran.append((step["run"], _run_step(script, step, workflow["jobs"][job].get("env", {}), checkout, dict(env))))
    return ran


def test_ci_recipe_runs_as_written(tmp_path: Path, hook_repo: Path, jit_cache: Path) -> None:
    checkout = _pull_request_checkout(tmp_path)
    ((_, workflow),) = template_workflows()
    jobs = ["static"] + (["build"] if runtime.find_nvcc() is not None else [])
    ran = [
        result
        for job in jobs
        for result in _run_job(job, workflow, checkout, tmp_path / f"runner-{job}", hook_repo, jit_cache)
    ]
    assert len(ran) >= 4, [script for script, _ in ran]

    for script, done in ran:  # only the gate fails: the pull request adds a finding
        expected = 1 if "--diff" in script else 0
        assert done.returncode == expected, f"{script}\n{done.stdout}\n{done.stderr}"
    (gate,) = [done for script, done in ran if "--diff" in script]
    assert gate.stdout.startswith(f"::error file=csrc/negate.cuh,line={PLANTED_LINE},"), gate.stdout
    sarif = json.loads((checkout / "kernel-check.sarif").read_text())
    (result,) = sarif["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "csrc/negate.cuh"
