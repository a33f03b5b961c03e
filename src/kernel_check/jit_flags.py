"""The flags a Python wrapper builds its C++ files with, read from its `load_jit` call.

A JIT kernel's C++ file often uses macros its wrapper defines (`load_jit(...,
cuda_files=["rope.cuh"], extra_cuda_cflags=[f"-DJIT_HEAD_DIM={head_dim}"])`): parsed
without them it fails. `wrapper_flags` reads the wrappers' source (`ast`, never imported
or run) for calls of `load_jit` / `build_jit` (kernel-check's `runtime.py` and the JIT
helpers shaped like it) and gives each C++ file such a call builds the `-D`, `-I` and
`-std=` arguments of the call's `extra_cflags`, `extra_cuda_cflags` and `extra_include_paths`, and
the installed folders of the header-only dependencies its `extra_dependencies` names
(`includes.JIT_DEPENDENCIES`).

What is read: list or tuple literals, directly or through a module-level name bound to one
(`CUDA_FILES = [...]`), of string literals or f-strings. A define whose value is computed at
run time (`f"-DJIT_HEAD_DIM={head_dim}"`) takes the first integer the C++ file compares the
macro with (`JIT_HEAD_DIM == 64`), else 1: one valid instantiation is all the static check
needs. File names resolve as the JIT does: relative to `csrc_root` when it is a literal,
else to the wrapper's folder or its nearest ancestor that holds the file, directly or in
its `csrc/`, else to the folder of the builder the wrapper imports (`from pkg.jit.utils
import load_jit`) or its nearest ancestor in that package that holds it. The first wrapper
(in path order) that builds a file gives its flags.

`inline_build_args` gives the other implicit part of a build: `tvm_ffi.cpp.load_inline` puts
tvm-ffi's own headers before the source it compiles, so a source built that way names
`tvm::ffi` without including them (the wrapper often reaches `load_inline` through a helper of
its own, so the file is recognised by its text instead).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from .config import real_path
from .includes import jit_dependency_dirs

BUILDERS = ("load_jit", "build_jit")
_FILE_KEYWORDS = ("cuda_files", "cpp_files")
_FLAG_KEYWORDS = ("extra_cflags", "extra_cuda_cflags")
_UNKNOWN = "\0"  # stands for a value computed at run time inside an f-string
_STANDARD = re.compile(r"--?std=(?:c|gnu)\+\+\w+")  # the language standard a build compiles with
# the headers `tvm_ffi.cpp.load_inline` includes before the source it is given
INLINE_BUILD_HEADERS = (
    "tvm/ffi/container/tensor.h",
    "tvm/ffi/dtype.h",
    "tvm/ffi/error.h",
    "tvm/ffi/extra/c_env_api.h",
    "tvm/ffi/function.h",
)
_SOURCE_SUFFIXES = (".cu", ".cc", ".cpp", ".cxx")
_COMMENT = re.compile(rb"//[^\n]*|/\*.*?\*/", re.DOTALL)
_NAMES_TVM_FFI = re.compile(rb"\btvm::ffi::")
_INCLUDES_TVM_FFI = re.compile(rb"^[ \t]*#[ \t]*include[ \t]*[<\"]tvm/ffi/", re.MULTILINE)


def inline_build_args(path: Path, data: bytes) -> tuple[str, ...]:
    """The forced includes of a source `tvm_ffi.cpp.load_inline` builds (empty for any other
    file): a source (not a header: a header relies on its includer) whose code names
    `tvm::ffi::` and includes no `tvm/ffi/` header."""
    if path.suffix not in _SOURCE_SUFFIXES:
        return ()
    code = _COMMENT.sub(b" ", data)
    if not _NAMES_TVM_FFI.search(code) or _INCLUDES_TVM_FFI.search(code):
        return ()
    return tuple(arg for header in INLINE_BUILD_HEADERS for arg in ("-include", header))


def wrapper_flags(wrappers: Iterable[Path], sources: Mapping[Path, bytes] | None = None) -> dict[str, tuple[str, ...]]:
    """For each C++ file a wrapper of `wrappers` builds: its `-D`/`-I`/`-std=` arguments."""
    found: dict[str, tuple[str, ...]] = {}
    for wrapper in sorted({real_path(Path(w)) for w in wrappers}):
        data = (sources or {}).get(wrapper)
        try:
            tree = ast.parse(data if data is not None else wrapper.read_bytes())
        except (OSError, SyntaxError, ValueError, RecursionError):
            continue  # an unreadable wrapper builds nothing we can know of
        calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and _callee(node) in BUILDERS]
        if not calls:
            continue  # most Python files of a run build nothing: no imports to read
        constants, homes = _module_lists(tree), _builder_homes(tree, wrapper)
        for call in calls:
            for path, args in _built_files(call, wrapper, constants, homes):
                found.setdefault(path, args)
    return found


def _builder_homes(tree: ast.Module, wrapper: Path) -> list[Path]:
    """Where the builder the wrapper imports lives, and that folder's ancestors up to its top
    package (`from sglang.kernels.jit.utils import load_jit` in a wrapper under `sglang/kernels/ops/`:
    `sglang/kernels/jit/utils`, `sglang/kernels/jit`, ...): a JIT helper resolves the
    file names it is given against its own `csrc/`, not the caller's folder."""
    homes: list[Path] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or not node.module or node.level:
            continue
        if not any(alias.name in BUILDERS for alias in node.names):
            continue
        top, *inner = node.module.split(".")
        package = next((folder for folder in wrapper.parents if folder.name == top), None)
        if package is None:
            continue
        home = package.joinpath(*inner)
        homes += [home, *(folder for folder in home.parents if folder.is_relative_to(package))]
    return list(dict.fromkeys(homes))


def _callee(call: ast.Call) -> str | None:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def _module_lists(tree: ast.Module) -> dict[str, ast.expr]:
    """Module-level `NAME = [...]` / `(...)` bindings (the last one wins, as at run time)."""
    bound: dict[str, ast.expr] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and isinstance(statement.value, (ast.List, ast.Tuple)):
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    bound[target.id] = statement.value
        elif (
            isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and isinstance(statement.value, (ast.List, ast.Tuple))
        ):
            bound[statement.target.id] = statement.value
    return bound


def _strings(node: ast.expr | None, constants: dict[str, ast.expr]) -> list[str]:
    """The strings of a list/tuple literal (or a module-level name bound to one); an
    f-string's computed parts read as `_UNKNOWN`; anything else is left out."""
    if isinstance(node, ast.Name):
        node = constants.get(node.id)
    if not isinstance(node, (ast.List, ast.Tuple)):
        return []
    found = []
    for item in node.elts:
        if isinstance(item, ast.Constant) and isinstance(item.value, str):
            found.append(item.value)
        elif isinstance(item, ast.JoinedStr):
            parts = [
                part.value if isinstance(part, ast.Constant) and isinstance(part.value, str) else _UNKNOWN
                for part in item.values
            ]
            found.append("".join(parts))
    return found


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _built_files(
    call: ast.Call, wrapper: Path, constants: dict[str, ast.expr], homes: list[Path]
) -> list[tuple[str, tuple[str, ...]]]:
    names = [name for keyword in _FILE_KEYWORDS for name in _strings(_keyword(call, keyword), constants)]
    root = _keyword(call, "csrc_root")
    explicit = wrapper.parent / root.value if isinstance(root, ast.Constant) and isinstance(root.value, str) else None
    flags = [flag for keyword in _FLAG_KEYWORDS for flag in _strings(_keyword(call, keyword), constants)]
    includes = [d for d in _strings(_keyword(call, "extra_include_paths"), constants) if _UNKNOWN not in d]
    includes += jit_dependency_dirs(_strings(_keyword(call, "extra_dependencies"), constants))
    built = []
    for name in names:
        path = _resolve(name, wrapper, explicit, homes) if _UNKNOWN not in name else None
        if path is not None:
            args = _arguments(flags, includes, wrapper, path)
            if args:
                built.append((str(path), args))
    return built


def _resolve(name: str, wrapper: Path, root: Path | None, homes: list[Path]) -> Path | None:
    if Path(name).is_absolute():
        return real_path(Path(name)) if Path(name).is_file() else None
    folders = [root] if root is not None else [wrapper.parent, *wrapper.parent.parents, *homes]
    for folder in folders:
        for candidate in (folder / name, folder / "csrc" / name):
            if candidate.is_file():
                return real_path(candidate)
    return None


def _arguments(flags: list[str], includes: list[str], wrapper: Path, source: Path) -> tuple[str, ...]:
    """The `-D`, `-I` and `-std=` arguments of a build's flags (`-I` spelled as two arguments,
    a define as one, nvcc's `--std=` as clang's `-std=`)."""
    args: list[str] = []
    includes = list(includes)
    for flag in flags:
        if flag.startswith("-D") and len(flag) > 2:
            args.append(_define(flag[2:], source))
        elif _STANDARD.fullmatch(flag):
            args.append("-" + flag.lstrip("-"))
        elif flag.startswith("-I") and len(flag) > 2 and _UNKNOWN not in flag:
            includes.append(flag[2:])
    for directory in includes:
        args += ["-I", str(real_path(wrapper.parent / directory))]
    return tuple(args)


def _define(definition: str, source: Path) -> str:
    name, _, value = definition.partition("=")
    if _UNKNOWN not in definition:
        return f"-D{definition}"
    if _UNKNOWN in name:
        return f"-D{name.replace(_UNKNOWN, '')}"  # a computed name: nothing sensible to define
    return f"-D{name}={_compared_value(name, source)}" if value else f"-D{name}"


def _compared_value(name: str, source: Path) -> str:
    """The first integer `source` compares macro `name` with (`NAME == 64`), else "1"."""
    try:
        text = source.read_text(errors="replace")
    except OSError:
        return "1"
    match = re.search(rf"\b{re.escape(name)}\s*==\s*(\d+)|\b(\d+)\s*==\s*{re.escape(name)}\b", text)
    return (match.group(1) or match.group(2)) if match else "1"
