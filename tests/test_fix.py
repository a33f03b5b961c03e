"""`--fix`: each safe fix leaves a file that still parses and re-checks clean for its rule."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import kernel_check
from conftest import FIXTURES, run_one
from kernel_check.cli import main
from kernel_check.paths import display_path
from kernel_check.registry import all_rules

FIXABLE = sorted(r.meta.code for r in all_rules() if r.meta.fixable and r.check is not None)


def _fixture_for(code: str) -> Path:
    matches = sorted((FIXTURES / "cpp").glob(f"{code.lower()}_*.cuh"))
    assert matches, f"no fixture for fixable rule {code}"
    return matches[0]


@pytest.mark.parametrize("code", FIXABLE)
def test_fix_clears_the_rule_and_keeps_the_file_parsing(code: str, tmp_path: Path) -> None:
    target = tmp_path / _fixture_for(code).name
    shutil.copy(_fixture_for(code), target)
    before = run_one(target)
    fixable_before = [f for f in before.findings if f.code == code and f.fix is not None]
    assert fixable_before, f"the {code} fixture has no fixable finding"

    assert main([str(target), "--fix", "--select", code, "--mode", "hermetic", "--quiet"]) in (0, 1)

    after = run_one(target)
    assert not [f for f in after.findings if f.code == "KC000"], "the fixed file no longer parses"
    remaining = [f for f in after.findings if f.code == code and f.fix is not None]
    assert remaining == [], f"fixable {code} findings remain: {remaining}"


def test_fix_never_touches_a_file_with_parse_errors(tmp_path: Path) -> None:
    broken = tmp_path / "broken.cuh"
    source = "// bad dash \u2014 here\nnamespace sglang { int x = undeclared_name; }\n"
    broken.write_text(source, encoding="utf-8")
    main([str(broken), "--fix", "--mode", "hermetic", "--quiet"])
    assert broken.read_text(encoding="utf-8") == source


NOBODY = 65534  # the unprivileged user the ownership tests run kernel-check as
FIX_KC101 = ["--fix", "--select", "KC101", "--mode", "hermetic", "--no-cache", "--quiet"]
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: files owned by another user")


def _kc101_copy(path: Path, mode: int = 0o644) -> bytes:
    """A copy of the KC101 fixture (fixable findings) at `path` with `mode`; its bytes."""
    shutil.copy(_fixture_for("KC101"), path)
    path.chmod(mode)
    return path.read_bytes()


@pytest.mark.slow
def test_fix_refuses_a_read_only_file_and_writes_no_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file made read-only (even for root, who could write it) is refused before anything
    is written: the writable file beside it, sorted first, is left as it was too."""
    writable, read_only = tmp_path / "a_writable.cuh", tmp_path / "b_read_only.cuh"
    before = {writable: _kc101_copy(writable), read_only: _kc101_copy(read_only, 0o444)}

    assert main([str(tmp_path), *FIX_KC101]) == 2

    assert capsys.readouterr().err.splitlines() == [
        f"kernel-check: error: {display_path(read_only)}: cannot apply fixes: the file is read-only (mode 0444)"
    ]
    assert {path: path.read_bytes() for path in before} == before
    assert stat.S_IMODE(read_only.stat().st_mode) == 0o444


@pytest.mark.slow
def test_fix_through_a_symlink_rewrites_its_target_and_keeps_the_link(tmp_path: Path) -> None:
    target, link = tmp_path / "real.cuh", tmp_path / "link.cuh"
    before = _kc101_copy(target, 0o640)
    link.symlink_to(target.name)

    assert main([str(link), *FIX_KC101]) in (0, 1)

    assert link.is_symlink() and target.read_bytes() != before
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


@pytest.mark.slow
@needs_root
def test_fix_by_root_keeps_the_owner_group_and_mode_of_another_users_file(tmp_path: Path) -> None:
    kernel = tmp_path / "theirs.cuh"
    before = _kc101_copy(kernel, 0o640)
    os.chown(kernel, NOBODY, NOBODY)

    assert main([str(kernel), *FIX_KC101]) in (0, 1)

    after = kernel.stat()
    assert kernel.read_bytes() != before
    assert (after.st_uid, after.st_gid, stat.S_IMODE(after.st_mode)) == (NOBODY, NOBODY, 0o640)


def _as_nobody(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`python -m kernel_check ARGV` as uid/gid 65534 with no supplementary groups."""
    package_parent = str(Path(kernel_check.__file__).parents[1])
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(cwd), "PYTHONPATH": package_parent}
    return subprocess.run(
        [sys.executable, *argv],
        cwd=cwd,
        env=env,
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _nobody_runs_kernel_check(cwd: Path) -> bool:
    try:
        return _as_nobody("-c", "import kernel_check.cli, clang.cindex", cwd=cwd).returncode == 0
    except PermissionError:  # the interpreter itself is out of its reach
        return False


@needs_root
@pytest.mark.parametrize(
    "mode,reason",
    [
        (0o644, "the current user may not write it"),
        (0o666, "it is owned by uid 0, and rewriting it would make uid 65534 its owner"),
    ],
)
def test_fix_as_another_user_refuses_a_root_owned_file_in_a_world_writable_folder(mode: int, reason: str) -> None:
    """The folder lets uid 65534 rename a new file over root's, which would make it the
    file's owner: refused, whether or not the file itself is writable to it."""
    with tempfile.TemporaryDirectory() as name:  # not under pytest's tmp_path, which only root may enter
        folder = Path(name)
        folder.chmod(0o777)
        if not _nobody_runs_kernel_check(folder):
            pytest.skip("uid 65534 cannot run this Python with kernel-check (its install is not readable to it)")
        kernel = folder / "roots.cuh"
        before = _kc101_copy(kernel, mode)

        done = _as_nobody("-m", "kernel_check", kernel.name, *FIX_KC101, cwd=folder)

        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stderr.splitlines() == [f"kernel-check: error: roots.cuh: cannot apply fixes: {reason}"]
        assert kernel.read_bytes() == before
        assert (kernel.stat().st_uid, stat.S_IMODE(kernel.stat().st_mode)) == (0, mode)
