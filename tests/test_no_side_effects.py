"""A check changes nothing, `--fix` writes atomically, and nothing from the checked tree runs.

1. `test_no_command_changes_the_tree`: a copy of `csrc/`, `include/` and `tests/fixtures/`
   is snapshotted (every entry's type, mode, size, modification time and content hash,
   directories included, so a temporary file created and removed again shows too), every
   command that is not `--fix` runs over it -- the check in every format, `--output` and
   `--write-baseline` to paths outside the tree, `--statistics`, `--baseline`, `--diff`,
   `rule`, `rules`, `clean`, and `build` / `test --compile-only` where nvcc exists -- and
   the snapshot must not change.
2. `write_atomically`: a child process writing a large payload is killed at several points
   (the temporary file half written, fully written); the target is always the old or the
   new content, never a mix or a truncation; a normal `--fix` run leaves no temporary file.
3. `test_checking_never_imports_or_runs_the_tree`: a tree plants a `conftest.py`, a
   `setup.py`, a wrapper and a spec that write a marker when imported, a `pyproject.toml`
   whose `[build-system]` points at a backend in the tree, and modules that shadow what
   the checker imports (`tomllib`, `filelock`, `clang`); the checker runs over it from
   inside the tree and no marker may appear.

The commands run the installed `kernel-check` script, as a user or pre-commit does, with
its caches (`KERNEL_CHECK_CACHE_DIR`, `KERNEL_CHECK_JIT_CACHE`) outside the tree.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # runs every command over a copy of the repository

REPO = Path(__file__).resolve().parent.parent
TREE_PARTS = ("csrc", "include", "tests/fixtures")
FORMATS = ("text", "json", "sarif", "github", "junit")
FRESH_RUN_DIR = "csrc/elementwise"  # what the runs that parse again (no cache, another mode) check


def kernel_check_command() -> list[str]:
    """The installed console script next to this interpreter (sys.path[0] is then its own
    directory, not the working directory); else the module with Python's safe-path mode."""
    script = Path(sys.executable).with_name("kernel-check")
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-P", "-m", "kernel_check"]


def snapshot(root: Path) -> dict[str, tuple]:
    entries: dict[str, tuple] = {}
    for current, dirnames, filenames in os.walk(root):
        for name in [".", *dirnames, *filenames] if current == str(root) else [*dirnames, *filenames]:
            path = Path(current) / name if name != "." else Path(current)
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                content = os.readlink(path)
            elif stat.S_ISREG(info.st_mode):
                content = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                content = ""
            entries[path.relative_to(root).as_posix()] = (
                stat.S_IFMT(info.st_mode),
                stat.S_IMODE(info.st_mode),
                info.st_size,
                info.st_mtime_ns,
                content,
            )
    return entries


def describe_changes(before: dict, after: dict) -> str:
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed = sorted(k for k in set(before) & set(after) if before[k] != after[k])
    return f"added {added[:10]}, removed {removed[:10]}, changed {changed[:10]}"


def _env(outside: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNEL_CHECK_")}
    env["KERNEL_CHECK_CACHE_DIR"] = str(outside / "cache")
    env["KERNEL_CHECK_JIT_CACHE"] = str(outside / "jit")
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a stray .pyc in the tree must show
    return env


def _run(args: list[str], cwd: Path, outside: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*kernel_check_command(), *args],
        cwd=cwd,
        env=_env(outside),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


# -- 1. nothing changes ----------------------------------------------------------------------------
@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    for part in TREE_PARTS:
        shutil.copytree(REPO / part, root / part, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (root / "pyproject.toml").write_text("[tool.kernel-check]\n")
    return root


def _git(tree: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tree, check=True, capture_output=True
    )


def _commands(outside: Path) -> list[tuple[list[str], tuple[int, ...]]]:
    """(arguments, exit codes that are fine)."""
    paths = ["csrc", "include", "tests/fixtures"]
    found = (0, 1)
    commands: list[tuple[list[str], tuple[int, ...]]] = [([], found)]
    commands += [([*paths, "--format", fmt], found) for fmt in FORMATS]
    commands += [
        ([*paths, "--format", fmt, "--output", str(outside / f"report.{fmt}")], found)
        for fmt in ("json", "sarif", "junit", "text")
    ]
    commands += [
        ([*paths, "--statistics"], found),
        ([*paths, "--statistics", "--format", "json"], found),
        # Each of these is a fresh run (another selection, mode or no cache): kept to one small
        # directory (two kernels, their wrappers and specs): re-parsing all of csrc/ for each
        # cost about as much as every cached command together and reached no other code.
        (["csrc", "--strict", "--select", "KC1,KC3", "--ignore", "KC310"], found),
        ([FRESH_RUN_DIR, "--no-cache", "--jobs", "1"], found),
        ([FRESH_RUN_DIR, "--exit-zero", "--mode", "hermetic", "--jobs", "2", "--quiet", "--color", "always"], (0,)),
        ([*paths, "--write-baseline", str(outside / "baseline.json")], (0,)),
        ([*paths, "--baseline", str(outside / "baseline.json")], found),
        (["csrc", "--diff", "HEAD"], found),
        (["rule", "KC101"], (0,)),
        (["rule", "KC501"], (0,)),
        (["rules"], (0,)),
        (["rules", "--format", "json"], (0,)),
        (["--version"], (0,)),
        (["clean", "--cache-dir", str(outside / "scratch-cache")], (0,)),
    ]
    return commands


def _run_all(tree: Path, outside: Path, commands: list[tuple[list[str], tuple[int, ...]]]) -> list[str]:
    """Run each command; the problems (a bad exit, a traceback, a change to the tree)."""
    before = snapshot(tree)
    problems = []
    for args, fine in commands:
        started = time.monotonic()
        proc = _run(args, tree, outside)
        print(f"{time.monotonic() - started:6.1f} s  exit {proc.returncode}  kernel-check {' '.join(args)}")
        if proc.returncode not in fine or "Traceback" in proc.stderr:
            problems.append(f"kernel-check {' '.join(args)}: exit {proc.returncode}\n{proc.stderr[-1500:]}")
        after = snapshot(tree)
        if after != before:
            problems.append(f"kernel-check {' '.join(args)} changed the tree: {describe_changes(before, after)}")
            before = after  # report each command's own changes
    return problems


@pytest.mark.skipif(shutil.which("git") is None, reason="git not found (the tree is a repository for --diff)")
def test_no_command_changes_the_tree(tree: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    _git(tree, "init", "-q")
    _git(tree, "add", "-A")
    _git(tree, "commit", "-q", "-m", "snapshot")
    problems = _run_all(tree, outside, _commands(outside))
    assert not problems, "\n\n".join(problems)
    for fmt in ("json", "sarif", "junit", "text"):
        assert (outside / f"report.{fmt}").stat().st_size > 0
    assert json.loads((outside / "baseline.json").read_text())


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not found: `build` and `test --compile-only` need it")
def test_building_does_not_change_the_tree(tmp_path: Path) -> None:
    """The build check imports specs (that is its job) and compiles into the JIT cache; the
    tree must stay as it was (no `__pycache__`, no build directory)."""
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    outside.mkdir()
    (tree / "csrc").mkdir(parents=True)
    for name in ("add_constant.cuh", "add_constant.py", "add_constant_spec.py"):
        shutil.copy2(REPO / "csrc" / name, tree / "csrc" / name)
    shutil.copytree(REPO / "include", tree / "include")
    (tree / "pyproject.toml").write_text("[tool.kernel-check]\n")
    problems = _run_all(
        tree,
        outside,
        [
            (["build", "csrc/add_constant_spec.py", "--format", "json"], (0, 1)),
            (["test", "--compile-only", "csrc/add_constant_spec.py"], (0, 1)),
        ],
    )
    assert not problems, "\n\n".join(problems)


# -- 2. --fix writes atomically ----------------------------------------------------------------------
_WRITER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from kernel_check.fix import write_atomically
    target, size = Path(sys.argv[1]), int(sys.argv[2])
    payload = (b"new content line\\n" * (size // 17 + 1))[:size]
    print("ready", flush=True)
    write_atomically(target, payload)
    print("done", flush=True)
""")


def _new_payload(size: int) -> bytes:
    return (b"new content line\n" * (size // 17 + 1))[:size]


def _temporaries(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.kc-tmp"))


@pytest.mark.parametrize("when", ["while-the-temp-file-is-written", "after-the-temp-file-is-complete"])
def test_a_kill_during_write_atomically_leaves_the_old_or_the_new_file(tmp_path: Path, when: str) -> None:
    target = tmp_path / "kernel.cuh"
    old = b"// the original content\n" * 1000
    target.write_bytes(old)
    os.chmod(target, 0o640)
    size = 192 << 20
    new_digest = hashlib.sha256(_new_payload(size)).hexdigest()
    outcomes = set()
    for _ in range(3):
        child = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(target), str(size)], stdout=subprocess.PIPE, text=True
        )
        assert child.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 120
        while True:
            temporaries = _temporaries(tmp_path)
            written = temporaries[0].stat().st_size if temporaries else 0
            if when.startswith("while") and 0 < written < size:
                break
            if when.startswith("after") and written >= size:
                break
            if child.poll() is not None or time.monotonic() > deadline:
                break  # the write was faster than this poll: the content check below still holds
            time.sleep(0.0005)
        child.send_signal(signal.SIGKILL)
        child.wait(30)
        data = target.read_bytes()
        if data == old:
            outcomes.add("old")
        else:
            assert len(data) == size and hashlib.sha256(data).hexdigest() == new_digest, (
                f"a kill left {len(data)} bytes that are neither the old nor the new file"
            )
            outcomes.add("new")
        assert stat.S_IMODE(target.stat().st_mode) == 0o640
        for leftover in _temporaries(tmp_path):  # SIGKILL leaves the temp file; never the target's name
            assert leftover.name.startswith(".kernel.cuh.")
            leftover.unlink()
        target.write_bytes(old)
        os.chmod(target, 0o640)
    assert outcomes, "no attempt was made"


def test_write_atomically_leaves_no_temporary_and_keeps_the_mode(tmp_path: Path) -> None:
    from kernel_check.fix import write_atomically

    target = tmp_path / "kernel.cuh"
    target.write_bytes(b"old\n")
    os.chmod(target, 0o604)
    write_atomically(target, b"new\n")
    assert target.read_bytes() == b"new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o604
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kernel.cuh"]


def test_a_fix_run_leaves_no_temporary_file(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[tool.kernel-check]\n")
    source = project / "kernel.cuh"
    source.write_text(
        "namespace sglang {\n/// \\brief Copy.\n/// \\param dst Output.\n/// \\param src Input.\n"
        "__global__ void copy_kernel(float* __restrict__ dst, const float* src) {\n"
        "  dst[threadIdx.x] = src[threadIdx.x];\n}\n}  // namespace sglang\n"
    )
    proc = _run([".", "--fix", "--format", "json"], project, outside)
    assert proc.returncode in (0, 1), proc.stderr
    assert "__restrict__ src" in source.read_text(), source.read_text()
    assert _temporaries(project) == []
    assert sorted(p.name for p in project.iterdir()) == ["kernel.cuh", "pyproject.toml"]


# -- 3. nothing from the tree is imported or run -----------------------------------------------------
def _planted_tree(root: Path, markers: Path) -> list[str]:
    """Files that each write `markers/<name>` if anything imports or runs them; their names."""

    def plant(relative: str, name: str, extra: str = "") -> str:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"import pathlib\npathlib.Path({str(markers / name)!r}).write_text('ran')\n{extra}")
        return name

    names = [
        plant("conftest.py", "conftest"),
        plant("tests/conftest.py", "tests-conftest"),
        plant("setup.py", "setup", "from setuptools import setup\nsetup(name='evil')\n"),
        plant("evil_backend.py", "build-backend"),
        plant("sitecustomize.py", "sitecustomize"),
        plant("tomllib.py", "shadow-tomllib"),
        plant("filelock.py", "shadow-filelock"),
        plant("clang/__init__.py", "shadow-clang"),
        plant("csrc/evil/evil_spec.py", "spec"),
        plant(
            "csrc/evil/evil_wrapper.py",
            "wrapper",
            textwrap.dedent("""
            __import__("os").system("touch " + {marker!r})
            from functools import lru_cache

            from sglang.kernels.jit.utils import load_jit


            @lru_cache(maxsize=None)
            def _jit_module(dtype):
                return load_jit("evil", cuda_files=["evil.cuh"], cuda_wrappers=[("run", "run")])


            def evil_op(x):
                assert x.dtype is not None
                return _jit_module(x.dtype).run(x)
        """).format(marker=str(markers / "wrapper-system")),
        ),
    ]
    (root / "csrc" / "evil" / "evil.cuh").write_text(
        "namespace sglang {\n/// \\brief Copy.\n/// \\param dst Output.\n/// \\param src Input.\n"
        "__global__ void evil_kernel(float* __restrict__ dst, const float* __restrict__ src) {\n"
        "  dst[threadIdx.x] = src[threadIdx.x];\n}\n}  // namespace sglang\n"
    )
    (root / "pyproject.toml").write_text(
        textwrap.dedent("""
        [build-system]
        requires = ["evil-backend-that-is-not-on-any-index"]
        build-backend = "evil_backend"
        backend-path = ["."]

        [project]
        name = "evil"
        version = "0"

        [tool.kernel-check]
        package-root = "python/sglang/"
        exclude = ["build/**"]
        strict = false
    """)
    )
    return names + ["wrapper-system"]


def test_checking_never_imports_or_runs_the_tree(tmp_path: Path) -> None:
    root, markers, outside = tmp_path / "tree", tmp_path / "markers", tmp_path / "outside"
    for directory in (root, markers, outside):
        directory.mkdir()
    names = _planted_tree(root, markers)
    runs = [
        [".", "--format", "json", "--no-cache", "--jobs", "1"],
        [".", "--format", "concise", "--jobs", "2", "--statistics"],
        ["csrc/evil/evil_wrapper.py", "conftest.py", "setup.py", "--format", "json"],
    ]
    outputs = []
    for args in runs:
        proc = _run(args, root, outside)
        assert proc.returncode in (0, 1), proc.stderr[-2000:]
        outputs.append(proc.stdout)
    assert sorted(p.name for p in markers.iterdir()) == [], f"ran from the checked tree: {names}"
    codes = {(Path(f["path"]).name, f["code"]) for f in json.loads(outputs[0])}
    assert ("evil_wrapper.py", "KC501") in codes, codes  # the wrapper was analyzed (as text)
    assert not list(root.rglob("__pycache__")), "something imported a module of the tree"


def test_python_dash_m_from_inside_the_tree_runs_nothing_from_it(tmp_path: Path) -> None:
    root, markers, outside = tmp_path / "tree", tmp_path / "markers", tmp_path / "outside"
    for directory in (root, markers, outside):
        directory.mkdir()
    _planted_tree(root, markers)
    proc = subprocess.run(
        [sys.executable, "-m", "kernel_check", ".", "--format", "json", "--no-cache"],
        cwd=root,
        env=_env(outside),
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert sorted(p.name for p in markers.iterdir()) == [], proc.stderr[-1000:]
    assert proc.returncode in (0, 1), proc.stderr[-1000:]
