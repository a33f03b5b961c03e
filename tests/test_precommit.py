"""The real `pre-commit` runs this checkout's hook in a fresh git repository."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO_ROOT

BAD_KERNEL = """\
#include <cstdint>
namespace sglang {
/// \\brief Copy one element.
/// \\param dst Output.
/// \\param src Input.
__global__ void copy_kernel(float* __restrict__ dst, const float* src) { dst[0] = src[0]; }
}  // namespace sglang
"""

pytestmark = pytest.mark.skipif(shutil.which("pre-commit") is None and shutil.which("git") is None,
                                reason="pre-commit or git is not installed")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def _hook_repo(tmp_path: Path) -> Path:
    """A committed snapshot of this checkout: pre-commit installs hooks from a git revision."""
    snapshot = tmp_path / "hook-repo"
    ignore = shutil.ignore_patterns(".git", "__pycache__", "*.egg-info", ".pytest_cache", "build", ".whl")
    shutil.copytree(REPO_ROOT, snapshot, ignore=ignore)
    _git(snapshot, "init", "-q")
    _git(snapshot, "add", "-A")
    _git(snapshot, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "snapshot")
    return snapshot


def _run_pre_commit(repo: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    return subprocess.run(["pre-commit", "run", "--all-files", "--color", "never"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=900)


def test_hook_fails_on_a_finding_then_passes_after_the_fix(tmp_path: Path) -> None:
    hook_repo = _hook_repo(tmp_path)
    rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=hook_repo, capture_output=True, text=True,
                         check=True).stdout.strip()
    user = tmp_path / "user"
    user.mkdir()
    _git(user, "init", "-q")
    (user / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hook_repo}\n    rev: {rev}\n    hooks:\n      - id: kernel-check\n")
    kernel = user / "copy.cuh"
    kernel.write_text(BAD_KERNEL)
    _git(user, "add", "-A")

    failed = _run_pre_commit(user, tmp_path / "pc-home")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "KC101" in failed.stdout and "copy.cuh:6:" in failed.stdout

    kernel.write_text(BAD_KERNEL.replace("const float* src", "const float* __restrict__ src"))
    _git(user, "add", "-A")
    passed = _run_pre_commit(user, tmp_path / "pc-home")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert kernel.read_text().count("__restrict__") == 2
