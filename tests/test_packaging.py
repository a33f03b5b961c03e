"""The wheel's package list names every package of the source tree (pyproject.toml lists them
by hand because the header library `include/` maps in from outside `src/`)."""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent


def test_every_package_under_src_is_in_the_wheel() -> None:
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    src = REPO / "src"
    on_disk = {".".join(init.parent.relative_to(src).parts) for init in src.rglob("__init__.py")}
    assert on_disk - listed == set(), "add these to [tool.setuptools] packages"
    assert listed - on_disk == {"kernel_check.include"}  # data only, mapped from include/
