"""One include search path (kernel_check.includes) for the static check, build and harness:
the repository's own `include/` holding `sgl_kernel/`, the configured directories, then the
bundled header library only when neither holds `sgl_kernel/`."""

from __future__ import annotations

from pathlib import Path

from kernel_check.clang.parse import ParseSettings, compile_args
from kernel_check.includes import (
    bundled_include_dir,
    find_include,
    find_repo_include_dir,
    include_lines,
    included_files,
    sgl_include_dirs,
)


def _tree(tmp_path: Path, own_headers: bool) -> Path:
    kernel = tmp_path / "repo" / "csrc" / "norm" / "k.cuh"
    kernel.parent.mkdir(parents=True)
    kernel.write_text("// kernel\n")
    if own_headers:
        (tmp_path / "repo" / "include" / "sgl_kernel").mkdir(parents=True)
    return kernel


def test_the_bundled_library_is_there() -> None:
    assert (bundled_include_dir() / "sgl_kernel" / "tensor.h").is_file()


def test_repository_headers_come_first_and_replace_the_bundled_ones(tmp_path: Path) -> None:
    kernel = _tree(tmp_path, own_headers=True)
    vendor = tmp_path / "vendor"
    assert sgl_include_dirs(kernel, [vendor]) == [tmp_path / "repo" / "include", vendor]
    header = tmp_path / "repo" / "include" / "sgl_kernel" / "tensor.h"
    assert find_repo_include_dir(header) == tmp_path / "repo" / "include"  # a header of the library itself


def test_an_include_is_found_as_the_compiler_finds_it(tmp_path: Path) -> None:
    """A quoted name beside the includer first, then the search folders in order; an angled
    name in the search folders only; a name in none of them (the standard library) is None."""
    includer = tmp_path / "csrc" / "k.cuh"
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (includer.parent, first, second):
        folder.mkdir()
        (folder / "common.h").write_text("")
    (second / "only_second.h").write_text("")
    assert find_include("common.h", True, includer, [first, second]) == includer.parent / "common.h"
    assert find_include("common.h", False, includer, [first, second]) == first / "common.h"
    assert find_include("only_second.h", True, includer, [first, second]) == second / "only_second.h"
    assert find_include("vector", False, includer, [first, second]) is None


def test_configured_directories_then_the_bundled_copy(tmp_path: Path) -> None:
    kernel = _tree(tmp_path, own_headers=False)
    cutlass = tmp_path / "third_party" / "cutlass" / "include"  # holds no sgl_kernel/
    assert sgl_include_dirs(kernel, [cutlass]) == [cutlass, bundled_include_dir()]
    own_elsewhere = tmp_path / "headers"
    (own_elsewhere / "sgl_kernel").mkdir(parents=True)
    assert sgl_include_dirs(kernel, [own_elsewhere]) == [own_elsewhere]


def test_the_static_check_uses_the_same_path(tmp_path: Path) -> None:
    kernel = _tree(tmp_path, own_headers=False)
    cutlass = str(tmp_path / "cutlass")
    args = compile_args(kernel, ParseSettings(include_dirs=(cutlass,)))
    included = [args[i + 1] for i, arg in enumerate(args) if arg == "-I"]
    assert included[:2] == [cutlass, str(bundled_include_dir())]


def test_include_lines_leave_comments_out() -> None:
    text = b'#include "a.h"\n// #include "b.h"\n/* #include <c.h>\n */\n  #  include <d/e.h>\n'
    assert include_lines(text) == [("a.h", True), ("d/e.h", False)]


def test_the_include_walk_follows_what_it_finds_each_file_once(tmp_path: Path) -> None:
    """`a.cuh` includes `b.h` beside it and `lib/c.h` from a search folder; both include
    `a.cuh` back (a cycle) and `<absent.h>`: each file is read once, the unfound named."""
    source, beside, library = tmp_path / "a.cuh", tmp_path / "b.h", tmp_path / "inc" / "lib" / "c.h"
    library.parent.mkdir(parents=True)
    source.write_text('#include "b.h"\n#include <lib/c.h>\n')
    beside.write_text('#include "a.cuh"\n#include <absent.h>\n')
    library.write_text('#include "../../a.cuh"\n')
    search = [tmp_path / "inc"]
    walked = list(included_files(source, search, limit=10))
    assert [data for data, _ in walked] == [source.read_bytes(), library.read_bytes(), beside.read_bytes()]
    assert walked[0][1] == [("b.h", tmp_path / "b.h"), ("lib/c.h", tmp_path / "inc" / "lib" / "c.h")]
    assert walked[2][1] == [("a.cuh", tmp_path / "a.cuh"), ("absent.h", None)]
    # beside its includer only: the library's header is found, and not read
    beside_only = list(included_files(source, search, limit=10, beside_only=True))
    assert [data for data, _ in beside_only] == [source.read_bytes(), beside.read_bytes()]
    assert len(list(included_files(source, search, limit=2))) == 2  # at most `limit` files
