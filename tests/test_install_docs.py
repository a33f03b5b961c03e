"""The install instructions of the README and the docs, run as written.

Every shell block of those pages that installs kernel-check (from a checkout, from a wheel
built there, or from the release tag's git URL) runs with `bash -e` in a fresh virtual
environment, from a clone of this checkout, and then `kernel-check csrc/` must pass there with
the package it installed. Offline: the environment sees the packages the suite runs with, and
pip uses no index and no isolated build environment (tests/venvs.py), so the commands need no
flag the docs do not show. The git URL is pointed at the tagged snapshot of this checkout
(`hook_repo`), after checking the block names the documented repository and tag.

Besides: no page tells users to install a kernel-check from PyPI (there is none), the
pre-commit snippets name the repository the git install names, and the test extra carries the
build requirements the offline builds use."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REPO_ROOT, git
from markdown_blocks import file_blocks
from test_workflows import shell_commands, template_workflows
from venvs import REPOSITORY_URL, installed_module, make_venv, run, venv_environ, with_local_repository

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

PAGES = [REPO_ROOT / "README.md", REPO_ROOT / "docs" / "getting-started.md", REPO_ROOT / "docs" / "ci.md"]
SHELL = ("bash", "sh")
PIP = (["pip"], ["pip3"], ["python", "-m", "pip"], ["python3", "-m", "pip"])
BY_NAME = re.compile(r"kernel[-_]check(\[[\w,]*\])?([<>=!~].*)?")  # a requirement an index would resolve


def _pip_arguments(words: list[str]) -> list[str] | None:
    """The arguments after `pip install` / `pip wheel` (any spelling of pip), else None."""
    for pip in PIP:
        if words[: len(pip)] == pip and words[len(pip) : len(pip) + 1] in (["install"], ["wheel"]):
            return words[len(pip) + 1 :]
    return None


def _source(argument: str) -> str | None:
    """What a pip argument installs kernel-check from: a checkout, a wheel or its git URL."""
    if argument == "." or argument.startswith(".["):
        return "checkout"
    if argument.startswith("dist/kernel_check-") and argument.endswith(".whl"):
        return "wheel"
    if argument.startswith(f"git+{REPOSITORY_URL}"):
        return "git"
    return None


def block_sources(block: str) -> set[str]:
    """The kernel-check sources a shell block installs from."""
    return {
        source
        for words in shell_commands(block)
        for argument in _pip_arguments(words) or ()
        if (source := _source(argument))
    }


def install_blocks() -> list[str]:
    """The distinct shell blocks of PAGES that install kernel-check, except a block that also
    runs the test suite (the README's test command: running it here would run this suite again)."""
    blocks = [block for page in PAGES for block in file_blocks(page, SHELL)]
    installing = [block for block in blocks if block_sources(block) and "pytest" not in block]
    return list(dict.fromkeys(installing))


def test_the_readme_shows_every_install_that_works_today():
    readme = [block for block in file_blocks(REPO_ROOT / "README.md", SHELL) if block in install_blocks()]
    assert set().union(*map(block_sources, readme)) == {"checkout", "wheel", "git"}


def test_no_page_installs_kernel_check_from_pypi():
    """`pip install kernel-check` finds nothing: kernel-check is not on PyPI."""
    pages = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").rglob("*.md"))]
    scripts = [(page, block) for page in pages for block in file_blocks(page, SHELL + ("console", "shell"))]
    scripts += [
        (name, step["run"])
        for name, workflow in template_workflows()
        for job in workflow["jobs"].values()
        for step in job["steps"]
        if "run" in step
    ]
    for where, script in scripts:
        for words in shell_commands(script):
            named = [a for a in _pip_arguments(words) or () if BY_NAME.fullmatch(a)]
            assert not named, f"{where}: `{shlex.join(words)}` installs kernel-check from an index"


def test_precommit_snippets_name_the_repository_of_the_git_install():
    pages = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
    configs = [
        yaml.safe_load(block) for page in pages for block in file_blocks(page, ("yaml", "yml")) if "repos:" in block
    ]
    hooks_comment = (REPO_ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    assert configs and f"repo: {REPOSITORY_URL}\n" in hooks_comment
    assert {repo["repo"] for config in configs for repo in config["repos"]} == {REPOSITORY_URL}


def test_the_test_extra_carries_the_build_requirements():
    """The offline builds (no isolated build environment) use the running environment's."""
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert set(project["build-system"]["requires"]) <= set(project["project"]["optional-dependencies"]["test"])


def _first_line(block: str) -> str:
    return block.splitlines()[0]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
@pytest.mark.parametrize("block", install_blocks(), ids=_first_line)
def test_install_block_runs_as_written(block: str, hook_repo: Path, tmp_path: Path) -> None:
    checkout = tmp_path / "kernel-check"
    git(tmp_path, "clone", "-q", str(hook_repo), str(checkout))  # "from a clone of this repository"
    venv = tmp_path / "venv"
    bin_dir = make_venv(venv)
    env = {**venv_environ(bin_dir), "KERNEL_CHECK_CACHE_DIR": str(tmp_path / "cache")}
    script = with_local_repository(block, hook_repo) if "git" in block_sources(block) else block
    done = subprocess.run(
        ["bash", "-e", "-c", script], cwd=checkout, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, f"{script}\n{done.stdout}\n{done.stderr}"

    module = installed_module(bin_dir, checkout)  # the new environment's own, or the clone's when editable
    assert module.is_relative_to(venv) or module.is_relative_to(checkout), module
    checked = run(["kernel-check", "csrc/"], cwd=checkout, env=env, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "All checks passed" in checked.stdout, checked.stdout
