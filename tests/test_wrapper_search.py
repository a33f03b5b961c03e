"""`wrapper_search`: which Python files of a project are read as the wrappers of a C++ file
checked without them (text test and walk; what they build is `jit_flags`' part)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernel_check import project_walk
from kernel_check.wrapper_search import INDEX_NAME, named_sources, project_wrappers, python_files

CALL = 'load_jit("k", cuda_files=["elem/k.cuh"], extra_cuda_cflags=["-DX=1"])\n'


def test_the_text_test_names_the_base_names_of_a_builder_files_cpp_files() -> None:
    assert named_sources(b'load_jit("k", cuda_files=["elem/k.cuh", "a.cu"], cpp_files=[f"{x}.cc"])') == (
        "a.cu",
        "k.cuh",
    )
    assert named_sources(b'open("k.cuh")  # calls no builder') == ()


def test_the_walk_leaves_out_environments_build_outputs_and_hidden_folders(tmp_path: Path) -> None:
    for folder in ("ops", ".venv/lib", "build", ".git", "pkg.egg-info", "env/lib/site-packages/dep"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "w.py").write_text(CALL)
    assert python_files(tmp_path) == [str(tmp_path / "ops" / "w.py")]


def test_the_walk_stops_after_max_dirs_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "pkg"\n')
    (tmp_path / "a" / "b").mkdir(parents=True)
    for folder in (tmp_path, tmp_path / "a", tmp_path / "a" / "b"):
        (folder / "w.py").write_text(CALL)
    monkeypatch.setattr(project_walk, "MAX_DIRS", 2)
    assert python_files(tmp_path) == [str(tmp_path / "w.py"), str(tmp_path / "a" / "w.py")]


def test_a_folder_that_is_no_project_is_searched_in_itself_alone(tmp_path: Path) -> None:
    """The folder of a lone file (no config, `pyproject.toml` or `.git`), as `/tmp` or a home
    folder: its own Python files are its wrappers, the unrelated trees below it are not walked;
    marked as a project, the same folder is walked whole."""
    (tmp_path / "tree" / "ops").mkdir(parents=True)
    for folder in (tmp_path, tmp_path / "tree" / "ops"):
        (folder / "w.py").write_text(CALL)
    assert python_files(tmp_path) == [str(tmp_path / "w.py")]
    (tmp_path / ".git").mkdir()
    assert python_files(tmp_path) == [str(tmp_path / "w.py"), str(tmp_path / "tree" / "ops" / "w.py")]


def test_the_index_keeps_what_the_project_holds_now(tmp_path: Path) -> None:
    """A file read once is answered from the index; a removed file leaves it."""
    kernel = tmp_path / "elem" / "k.cuh"
    kept, gone = tmp_path / "w.py", tmp_path / "old.py"
    kept.write_text(CALL)
    gone.write_text(CALL)
    index = tmp_path / "cache" / INDEX_NAME
    assert project_wrappers([kernel], tmp_path, index) == [gone, kept]
    gone.unlink()
    assert project_wrappers([kernel], tmp_path, index) == [kept]
    assert list(json.loads(index.read_text())["files"]) == [str(kept)]
