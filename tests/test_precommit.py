"""The real `pre-commit` runs this checkout's hook in a fresh git repository, from a
`.pre-commit-config.yaml` entry shaped like the README's: a repository and a release tag."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import git, pre_commit_env, user_repo

BAD_KERNEL = """\
#include <cstdint>
namespace sglang {
/// \\brief Copy one element.
/// \\param dst Output.
/// \\param src Input.
__global__ void copy_kernel(float* __restrict__ dst, const float* src) { dst[0] = src[0]; }
}  // namespace sglang
"""

WARNING_ONLY_KERNEL = """\
#include <cstdint>
namespace sglang {
/// \\brief Copy one element.
/// \\param dst Output.
/// \\param src Input.
/// \\param n Element count.
__global__ void copy_kernel(float* __restrict__ dst, const float* __restrict__ src, int n) {
  if (n > 0) dst[0] = src[0];
}
}  // namespace sglang
"""

pytestmark = [
    pytest.mark.slow,  # pre-commit installs the hook into an environment of its own
    pytest.mark.skipif(
        shutil.which("pre-commit") is None or shutil.which("git") is None, reason="pre-commit or git is not installed"
    ),
]


def run_pre_commit(repo: Path, home: Path, *files: str) -> subprocess.CompletedProcess[str]:
    """The hook on `files` (as a commit of just those passes them), else on every file."""
    return subprocess.run(
        ["pre-commit", "run", *(["--files", *files] if files else ["--all-files"]), "--color", "never"],
        cwd=repo,
        env=pre_commit_env(home),
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_hook_fails_on_a_finding_then_passes_after_the_fix(
    tmp_path: Path, hook_repo: Path, pre_commit_home: Path
) -> None:
    user = user_repo(tmp_path / "user", hook_repo)
    kernel = user / "copy.cuh"
    kernel.write_text(BAD_KERNEL)
    git(user, "add", "-A")

    failed = run_pre_commit(user, pre_commit_home)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "KC101" in failed.stdout and "copy.cuh:6:" in failed.stdout

    kernel.write_text(BAD_KERNEL.replace("const float* src", "const float* __restrict__ src"))
    git(user, "add", "-A")
    passed = run_pre_commit(user, pre_commit_home)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert kernel.read_text().count("__restrict__") == 2


def test_a_passing_hook_still_shows_its_warnings(tmp_path: Path, hook_repo: Path, pre_commit_home: Path) -> None:
    """A warning does not fail the commit, and pre-commit prints a passing hook's output only
    when the hook is `verbose`: without it the warning would never be seen."""
    user = user_repo(tmp_path / "user", hook_repo)
    (user / "warn.cuh").write_text(WARNING_ONLY_KERNEL)
    git(user, "add", "-A")

    passed = run_pre_commit(user, pre_commit_home)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Passed" in passed.stdout
    assert "warn.cuh:7:85: KC110 [warning]" in passed.stdout, passed.stdout


def test_a_kernel_committed_without_its_wrapper_parses_with_the_wrappers_flags(
    tmp_path: Path, hook_repo: Path, pre_commit_home: Path
) -> None:
    """pre-commit passes only the changed files: a kernel changed alone is checked with the
    `-D` its wrapper's `load_jit` call gives it (the wrapper is found in the repository), as
    in a run of the whole tree, not reported unparsable."""
    user = user_repo(tmp_path / "user", hook_repo)
    (user / "csrc").mkdir()
    (user / "csrc" / "scale.cuh").write_text("#pragma once\ninline constexpr int kScale = JIT_SCALE;\n")
    (user / "scale.py").write_text(
        "from kernel_check.runtime import load_jit\n\n"
        'load_jit("scale", cuda_files=["scale.cuh"], extra_cuda_cflags=["-DJIT_SCALE=3"])\n'
    )
    git(user, "add", "-A")

    result = run_pre_commit(user, pre_commit_home, "csrc/scale.cuh")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "KC000" not in result.stdout, result.stdout
