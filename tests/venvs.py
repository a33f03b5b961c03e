"""Fresh virtual environments to install kernel-check into, offline (test_wheel, test_install_docs).

`python -m venv` alone gives an environment with the standard library only, and
`--system-site-packages` adds the *base* interpreter's packages, which are not the ones the
suite runs with when the suite itself runs in a virtual environment (the README's set-up):
there the new environment would lack libclang-ng and filelock, and pip would look for them on
the index. `make_venv` instead writes a .pth file into the new environment that adds the
running interpreter's site directories after its own: it sees exactly the packages the
suite runs with, and what is installed into it comes first.

`OFFLINE_PIP` keeps pip off the network: every requirement is already met by those
packages, so pip needs no index, and it builds kernel-check with the running environment's
setuptools (the test extra carries the build requirements) instead of downloading them into
an isolated build environment."""

from __future__ import annotations

import os
import site
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import RELEASE_TAG

OFFLINE_PIP = {
    "PIP_NO_INDEX": "1",
    # pip reads the variable of a `--no-X` flag as the value of the setting behind it
    # (`build_isolation`): "0" turns build isolation off
    "PIP_NO_BUILD_ISOLATION": "0",
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
}
# What the docs install kernel-check from: `pip install git+REPOSITORY_URL@RELEASE_TAG`,
# and pre-commit's `repo:`.
REPOSITORY_URL = "https://github.com/kernel-check/kernel-check"
RUNNING_ENVIRONMENT_PTH = "running-environment.pth"


def run(
    args: list[str | Path], cwd: Path, env: dict[str, str] | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """A command's result; with `check`, a non-zero exit fails the test with its output."""
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    if check and done.returncode != 0:
        pytest.fail(f"{' '.join(map(str, args))} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done


def running_site_dirs() -> list[str]:
    """The site directories the running interpreter reads: a virtual environment's own (and
    its base's, when made with system site-packages), else the installation's and the user's."""
    dirs = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    return [d for d in dirs if os.path.isdir(d)]


def venv_environ(bin_dir: Path) -> dict[str, str]:
    """The environment of a command run "in" the virtual environment of `bin_dir`: first on
    PATH (`pip`, `python`, `kernel-check` are its own), offline pip, and no PYTHONPATH (which
    would put a source tree before what was installed)."""
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")}
    return {
        **env,
        **OFFLINE_PIP,
        "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', os.defpath)}",
        "VIRTUAL_ENV": str(bin_dir.parent),
    }


def make_venv(root: Path) -> Path:
    """A new virtual environment at `root` that sees the running environment's packages;
    returns its bin/."""
    run([sys.executable, "-m", "venv", root], cwd=root.parent)
    bin_dir = root / "bin"
    env = venv_environ(bin_dir)
    # ensurepip installs an old setuptools on Python < 3.12; the running environment's builds
    run([bin_dir / "python", "-m", "pip", "uninstall", "-q", "-y", "setuptools"], cwd=root, env=env)
    purelib = run(
        [bin_dir / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=root, env=env
    ).stdout.strip()
    # `addsitedir` rather than plain path lines: the .pth files there (editable installs) apply too
    lines = [f"import site; site.addsitedir({directory!r})\n" for directory in running_site_dirs()]
    (Path(purelib) / RUNNING_ENVIRONMENT_PTH).write_text("".join(lines))
    return bin_dir


def installed_module(bin_dir: Path, cwd: Path) -> Path:
    """Where the environment's `python` imports kernel_check from."""
    shown = run(
        [bin_dir / "python", "-c", "import kernel_check; print(kernel_check.__file__)"],
        cwd=cwd,
        env=venv_environ(bin_dir),
    )
    return Path(shown.stdout.strip())


def with_local_repository(script: str, hook_repo: Path) -> str:
    """`script` with the documented git install (`git+REPOSITORY_URL@RELEASE_TAG`) pointed at
    `hook_repo`, this checkout's files tagged RELEASE_TAG; fails the test when the script has no
    such install (the docs drifted from what is tested)."""
    documented = f"git+{REPOSITORY_URL}@{RELEASE_TAG}"
    assert documented in script, f"expected an install of {documented} in:\n{script}"
    return script.replace(documented, f"git+{hook_repo.as_uri()}@{RELEASE_TAG}")
