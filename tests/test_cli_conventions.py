"""The command line's safety and its ruff/clang-tidy conventions, end to end on real files:
`clean` deletes only its own cache, symlink loops and binary files cost one finding, the
flags ruff users expect (`--output-format`, accumulating `--select`, `--stdin-filename`,
`concise`, FORCE_COLOR/NO_COLOR, `--fix-diff`), `kernel-check.toml`, and the progress
display on a real pseudo-terminal.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from kernel_check import cli as kernel_check_cli
from kernel_check.cli import main
from test_cli import snapshot, write

KERNEL = """\
#include <cstdint>
#include "local.h"

namespace sglang {

/// \\brief Scales a vector.
/// \\param dst Output.
/// \\param src Input.
/// \\param n Element count.
__global__ void scale_kernel(float* __restrict__ dst, const float* src, uint32_t n) {
  dst[0] = src[0] * kScale + static_cast<float>(n);
}

}  // namespace sglang
"""
LOCAL_H = """\
#pragma once

namespace sglang {

/// \\brief The scale factor.
constexpr float kScale = 2.0f;

}  // namespace sglang
"""
CLEAN_PY = "def add(a, b):\n    return a + b\n"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(autouse=True)
def color_unset(monkeypatch):
    """The runner's own NO_COLOR/FORCE_COLOR must not decide what these tests see."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)


def kernel_tree(root: Path) -> Path:
    write(root / "csrc" / "local.h", LOCAL_H)
    return write(root / "csrc" / "scale.cuh", KERNEL)


def cli(*argv: str, cwd: Path, stdin: bytes | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """The real command in a fresh process."""
    return subprocess.run(
        [sys.executable, "-m", "kernel_check", *argv],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


def one_line_error(result: subprocess.CompletedProcess) -> str:
    err = result.stderr.decode()
    assert result.returncode == 2, (result.stdout, err)
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err.strip()


# ------------------------------------------------------------------------ safe commands


@pytest.mark.parametrize("scope", [[], ["--all"]], ids=["project", "all"])
def test_clean_refuses_a_directory_it_did_not_create(tmp_path: Path, scope: list[str]) -> None:
    precious = write(tmp_path / "work" / "notes.txt", "keep me\n").parent
    result = cli("clean", *scope, "--cache-dir", str(precious), cwd=tmp_path)
    assert "not a kernel-check cache" in one_line_error(result)
    assert (precious / "notes.txt").read_text() == "keep me\n"
    link = tmp_path / "link"
    link.symlink_to(precious)
    assert "symbolic link" in one_line_error(cli("clean", *scope, "--cache-dir", str(link), cwd=tmp_path))
    assert (precious / "notes.txt").exists()


def test_clean_removes_the_cache_a_run_created_and_never_tags_a_used_directory(project: Path) -> None:
    write(project / "ok.py", CLEAN_PY)
    cache = project.parent / "cache"
    assert cli("ok.py", "--cache-dir", str(cache), cwd=project).returncode == 0
    assert (cache / "CACHEDIR.TAG").is_file()
    removed = cli("clean", "--all", "--cache-dir", str(cache), cwd=project)
    assert removed.returncode == 0 and not cache.exists(), removed.stderr
    # a run pointed at a directory holding other things uses it, but clean still refuses it
    busy = write(project.parent / "busy" / "thesis.tex", "x").parent
    assert cli("ok.py", "--cache-dir", str(busy), cwd=project).returncode == 0
    assert not (busy / "CACHEDIR.TAG").exists()
    assert "not a kernel-check cache" in one_line_error(cli("clean", "--cache-dir", str(busy), cwd=project))
    assert (busy / "thesis.tex").exists()


def test_a_symlink_loop_is_one_finding_and_the_run_goes_on(project: Path, capsys) -> None:
    write(project / "pkg" / "ok.py", CLEAN_PY)
    (project / "pkg" / "a.cuh").symlink_to("b.cuh")
    (project / "pkg" / "b.cuh").symlink_to("a.cuh")
    (project / "pkg" / "up").symlink_to("..")  # a directory loop: not followed
    (project / "loopdir").symlink_to("loopdir")  # an include directory that leads nowhere
    for argv in (["pkg"], ["pkg/ok.py", "pkg/a.cuh"], ["pkg", "-I", "loopdir"]):
        code = main([*argv, "--output-format", "json", "--no-cache"])
        out, err = capsys.readouterr()
        assert code == 1 and "Traceback" not in err and "internal error" not in err, err
        by_path = {(f["path"], f["code"]) for f in json.loads(out)}
        assert ("pkg/a.cuh", "KC000") in by_path
        assert {path for path, _ in by_path} <= {"pkg/a.cuh", "pkg/b.cuh"}
        assert any("symbolic links" in f["message"] for f in json.loads(out))


def test_a_binary_excerpt_prints_no_control_characters(project: Path, capsys) -> None:
    write(project / "blob.cuh", b"int x;\x1b[2J\x1b]0;owned\x07\x00\r\x08\x9b31m tail\n")
    write(project / "esc.py", "x = 1\t# \x1b[31mred\x1b[0m \x07\n" + "def f(:\n")
    for fmt in ("text", "concise"):
        code = main(["blob.cuh", "esc.py", "--output-format", fmt, "--color", "never", "--no-cache"])
        out, err = capsys.readouterr()
        assert code == 1 and "Traceback" not in err
        assert "blob.cuh:1:1: KC000" in out
        controls = [c for c in out if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0]
        assert controls == [], repr(out)


# ------------------------------------------------------------------------ conventions


def test_output_format_and_format_are_one_flag(project: Path, capsys) -> None:
    kernel_tree(project)
    outputs = []
    for flag in ("--output-format", "--format"):
        assert main(["csrc", flag, "json", "--no-cache"]) == 1
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] and json.loads(outputs[0])


def test_repeated_select_and_ignore_accumulate(project: Path, capsys) -> None:
    kernel_tree(project)
    write(project / "csrc" / "bad.py", "import os\n")
    assert main(["csrc", "--select", "KC101", "--select", "KC302,KC3", "--format", "json", "--no-cache"]) == 1
    codes = {f["code"] for f in json.loads(capsys.readouterr().out)}
    assert "KC101" in codes and codes <= {"KC101", "KC302", "KC301", "KC310", "KC320", "KC321", "KC330"}
    main(["csrc", "--ignore", "KC101", "--ignore", "KC3", "--format", "json", "--no-cache"])
    codes = {f["code"] for f in json.loads(capsys.readouterr().out)}
    assert not any(c == "KC101" or c.startswith("KC3") for c in codes)


def test_stdin_filename_checks_the_buffer_as_that_file(project: Path) -> None:
    kernel = kernel_tree(project)
    on_disk = KERNEL.replace("const float* src", "const float* __restrict__ src")
    kernel.write_text(on_disk)
    result = cli(
        "--stdin-filename",
        "csrc/scale.cuh",
        "--output-format",
        "concise",
        "--no-cache",
        cwd=project,
        stdin=KERNEL.encode(),
    )
    out = result.stdout.decode()
    assert result.returncode == 1, result.stderr
    assert "csrc/scale.cuh:10:" in out and "KC101" in out, out  # the buffer's finding
    assert "KC000" not in out  # "local.h" found next to csrc/scale.cuh
    assert kernel.read_text() == on_disk
    # a new, unsaved file in an existing directory; and the text format's excerpt is the buffer's
    text = cli("--stdin-filename", "csrc/new.cuh", "--no-cache", cwd=project, stdin=KERNEL.encode())
    assert "const float* src" in text.stdout.decode() and not (project / "csrc" / "new.cuh").exists()
    clean = cli("--stdin-filename", "csrc/scale.cuh", "--no-cache", cwd=project, stdin=on_disk.encode())
    assert clean.returncode == 0, clean.stdout


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--stdin-filename", "notes.txt"], "not a C++/CUDA or Python source"),
        (["--stdin-filename", "a.py", "--fix"], "--fix cannot be combined with --stdin-filename"),
        (["--stdin-filename", "a.py", "other.py"], "give no PATH"),
    ],
)
def test_stdin_filename_bad_input_is_one_line(project: Path, argv: list[str], message: str) -> None:
    write(project / "a.py", CLEAN_PY)
    assert message in one_line_error(cli(*argv, cwd=project, stdin=b"x = 1\n"))
    assert (project / "a.py").read_text() == CLEAN_PY


def test_concise_is_one_line_per_finding(project: Path, capsys) -> None:
    kernel_tree(project)
    assert main(["csrc", "--output-format", "concise", "--no-cache"]) == 1
    lines = capsys.readouterr().out.splitlines()
    headline = re.compile(r"^csrc/scale\.cuh:\d+:\d+: KC\d{3} \[(error|warning|info)\] ")
    findings = [line for line in lines if headline.match(line)]
    assert findings and lines[: len(findings)] == findings
    assert lines[len(findings) :] == [
        "Found 1 finding (1 error, 0 warnings, 0 info). 2 files checked.",
        "[*] 1 fixable with --fix.",
    ]


@pytest.mark.slow
def test_force_color_and_no_color(project: Path) -> None:
    kernel_tree(project)
    piped = cli("csrc", "--no-cache", cwd=project)
    assert not ANSI.search(piped.stdout.decode())
    forced = cli("csrc", "--no-cache", cwd=project, env={"FORCE_COLOR": "1"})
    assert ANSI.search(forced.stdout.decode())
    assert ANSI.sub("", forced.stdout.decode()) == piped.stdout.decode()
    both = cli("csrc", "--no-cache", cwd=project, env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert not ANSI.search(both.stdout.decode())
    assert ANSI.search(
        cli("csrc", "--no-cache", "--color", "always", cwd=project, env={"NO_COLOR": "1"}).stdout.decode()
    )


@pytest.mark.slow
def test_ctrl_c_exits_130_and_leaves_a_good_cache(project: Path) -> None:
    """A real SIGINT in the middle of a run: exit 130 (128 + SIGINT, what shells and CI
    expect of a command Ctrl-C ended) with one line, and the cache it leaves gives the same
    report as no cache at all."""
    kernel_tree(project)
    for index in range(30):
        write(project / "csrc" / f"copy{index}.cuh", KERNEL.replace("scale_kernel", f"copy{index}_kernel"))
    for attempt in range(3):
        cache = project.parent / f"cache{attempt}"
        run, finished_first = _interrupt_once_files_are_done(project, cache)
        if finished_first:
            continue
        out, err = run.communicate(timeout=120)
        # the signal can also land after the last file, while the run writes its report: it
        # then ends by itself, the report whole (0 or 1), and the signal tested nothing
        if run.returncode not in (0, 1) or not out:
            break
    else:
        pytest.fail("every run finished before the signal reached it")
    assert run.returncode == 130, (out, err)
    assert err.decode().strip().splitlines() == ["kernel-check: interrupted"] and out == b""
    fresh = cli("csrc", "--no-cache", "--format", "json", cwd=project)
    cached = cli("csrc", "--cache-dir", str(cache), "--format", "json", cwd=project)
    assert (cached.returncode, cached.stdout) == (fresh.returncode, fresh.stdout) == (1, fresh.stdout)
    assert len(json.loads(fresh.stdout)) == 31, fresh.stdout  # a KC101 per kernel


def _interrupt_once_files_are_done(project: Path, cache: Path) -> tuple[subprocess.Popen[bytes], bool]:
    """Start a run and send it SIGINT once its first results are cached (or 1.5 s in); True
    beside it when the run had already ended by then (a loaded machine can let it finish between two
    looks: the signal then tested nothing, and the caller tries again)."""
    argv = [sys.executable, "-m", "kernel_check", "csrc", "--cache-dir", str(cache), "--jobs", "2", "--format", "json"]
    run = subprocess.Popen(
        argv,
        cwd=project,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # an ignored SIGINT is inherited (Python then keeps ignoring it): a test of this
        # worker process that ran code which ignores it must not decide what this run does
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    started = time.monotonic()
    # files are done, or the run is well under way (a loaded machine can hold every result
    # back until the last one: the signal then lands in the run all the same)
    while not any((cache / "static-v1" / "projects").rglob("results/*/*.json")) and time.monotonic() < started + 1.5:
        if run.poll() is not None:
            break
        time.sleep(0.02)
    if run.poll() is not None:
        out, err = run.communicate()
        assert run.returncode in (0, 1), (out, err)  # it ended by itself, not by a crash
        return run, True
    run.send_signal(signal.SIGINT)
    return run, False


def test_help_lists_the_subcommands_and_every_argument_is_described(tmp_path: Path) -> None:
    top = cli("--help", cwd=tmp_path)
    assert top.returncode == 0
    for command in ("rules", "rule CODE", "clean", "build", "test", "sanitize", "server", "confirm"):
        assert f"kernel-check {command}" in top.stdout.decode()
    parsers = kernel_check_cli.all_parsers()
    assert set(parsers) == {"check", "rule", "rules", "clean", "build", "test", "sanitize", "spec", "server", "confirm"}
    for name, parser in parsers.items():
        undescribed = [a.option_strings or a.dest for a in parser._actions if not a.help]
        assert undescribed == [], name
        assert cli(*([] if name == "check" else [name]), "--help", cwd=tmp_path).returncode == 0


@pytest.mark.parametrize("command", ["build", "test"])
def test_build_and_test_take_the_static_commands_flags(command: str, tmp_path: Path) -> None:
    for flag in ("-o", "--output-format", "--exit-zero", "--select", "--ignore"):
        assert any(flag in a.option_strings for a in kernel_check_cli.all_parsers()[command]._actions), (command, flag)
    assert "unrecognized arguments: --bogus" in one_line_error(cli(command, ".", "--bogus", cwd=tmp_path))
    assert "required: paths" in one_line_error(cli(command, cwd=tmp_path))
    assert "unknown rule code or prefix 'KX9'" in one_line_error(cli(command, ".", "--select", "KX9", cwd=tmp_path))


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_build_selection_exit_zero_and_output_file(tmp_path: Path) -> None:
    """A real nvcc compile error (KC600) through `-o`, `--exit-zero` and `--ignore`."""
    csrc = tmp_path / "csrc" / "broken"
    write(csrc / "broken.cuh", "#include <cstdint>\n__global__ void broken_kernel(float* p) { p[0] = undeclared; }\n")
    write(csrc / "broken.py", 'CUDA_FILES = ["broken.cuh"]\nINSTANTIATIONS = [("broken_kernel", "broken_kernel")]\n')
    (tmp_path / "pyproject.toml").write_text("[tool.kernel-check]\n")
    failing = cli("build", "csrc", "-o", "report.json", "--output-format", "json", cwd=tmp_path)
    if failing.returncode == 2:
        pytest.skip(f"this wrapper shape is not a build target here: {failing.stderr.decode().strip()}")
    report = json.loads((tmp_path / "report.json").read_text())
    assert failing.returncode == 1 and {f["code"] for f in report} == {"KC600"}, failing.stderr
    assert failing.stdout == b""
    assert cli("build", "csrc", "--exit-zero", cwd=tmp_path).returncode == 0
    ignored = cli("build", "csrc", "--ignore", "KC6", "--output-format", "json", cwd=tmp_path)
    assert ignored.returncode == 0 and json.loads(ignored.stdout) == []


def test_fix_says_what_it_fixed(project: Path, capsys) -> None:
    kernel = kernel_tree(project)
    assert main(["csrc", "--select", "KC101", "--no-cache", "--fix"]) == 0
    out = capsys.readouterr().out
    assert "Found 1 finding (1 fixed, 0 remaining)." in out, out
    assert "const float* __restrict__ src" in kernel.read_text()


def test_fix_diff_prints_the_fix_and_writes_nothing(project: Path, capsys) -> None:
    kernel = kernel_tree(project)
    assert main(["csrc", "--fix-diff", "--no-cache"]) == 1
    out, err = capsys.readouterr()
    assert kernel.read_text() == KERNEL
    assert out.startswith("--- a/csrc/scale.cuh\n+++ b/csrc/scale.cuh\n@@ ")
    assert "-__global__ void scale_kernel(float* __restrict__ dst, const float* src" in out
    assert "Would fix 1 finding in 1 file." in err
    # the diff is the fix: applied by `git apply`, the file equals what --fix writes
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    (project / "fix.diff").write_text(out + "\n")
    subprocess.run(["git", "apply", "fix.diff"], cwd=project, check=True)
    patched = kernel.read_text()
    kernel.write_text(KERNEL)
    main(["csrc", "--fix", "--no-cache"])
    capsys.readouterr()
    assert kernel.read_text() == patched != KERNEL
    assert main(["csrc", "--fix-diff", "--no-cache"]) == 0
    assert "No fixes available." in capsys.readouterr().err
    assert "not allowed with argument" in one_line_error(cli("csrc", "--fix", "--fix-diff", cwd=project))


@pytest.mark.slow
def test_printed_paths_open_from_the_current_directory(project: Path) -> None:
    """text and concise name a file from where the command ran (ruff's way): from the
    project root `csrc/scale.cuh`, from `csrc/` `scale.cuh`, and a file outside the current
    directory absolutely; the project root's configuration applies in each case."""
    kernel_tree(project)
    outside = write(
        project / "other" / "scale.cuh", KERNEL.replace('#include "local.h"\n', "").replace(" * kScale", "")
    )
    runs = [
        (project, ["csrc"], "csrc/scale.cuh"),
        (project / "csrc", [], "scale.cuh"),
        (project / "csrc", ["../other/scale.cuh"], str(outside)),
    ]
    for cwd, paths, printed in runs:
        for fmt in ("text", "concise"):
            result = cli(*paths, "--select", "KC101", "--no-cache", "--output-format", fmt, cwd=cwd)
            first = result.stdout.decode().splitlines()[0]
            assert result.returncode == 1 and first.startswith(f"{printed}:"), (cwd, fmt, result.stdout)
            assert (cwd / first.split(":")[0]).is_file()


def test_fix_diff_from_a_subfolder_applies_there(project: Path) -> None:
    """`--fix-diff` names files as the report does, so `git apply` (which takes a patch's
    paths from the current directory) applies it where it was made."""
    kernel = kernel_tree(project)
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    diff = cli("--fix-diff", "--no-cache", cwd=project / "csrc")
    assert diff.stdout.decode().startswith("--- a/scale.cuh\n+++ b/scale.cuh\n"), diff.stdout
    subprocess.run(["git", "apply", "-"], cwd=project / "csrc", input=diff.stdout, check=True)
    assert "const float* __restrict__ src" in kernel.read_text()


@pytest.mark.parametrize(
    "argv, output, read",
    [
        (["csrc/scale.cuh"], "csrc/scale.cuh", "csrc/scale.cuh"),
        (["csrc", "--fix"], "csrc/scale.cuh", "csrc/scale.cuh"),  # refused before the fix is written
        (["csrc", "--fix-diff"], "csrc/../csrc/scale.cuh", "csrc/scale.cuh"),
        (["csrc"], "link.cuh", "csrc/scale.cuh"),  # a symlink to a checked file
        (["csrc"], "pyproject.toml", "pyproject.toml"),  # the configuration
        (["--stdin-filename", "csrc/scale.cuh"], "csrc/scale.cuh", "csrc/scale.cuh"),
    ],
)
def test_output_naming_a_file_the_run_reads_is_refused(project: Path, argv: list[str], output: str, read: str) -> None:
    kernel_tree(project)
    (project / "link.cuh").symlink_to("csrc/scale.cuh")
    before = snapshot(project)
    result = cli(*argv, "--no-cache", "-o", output, cwd=project, stdin=KERNEL.encode())
    assert one_line_error(result) == (
        f"kernel-check: error: --output {output}: is {read}, which this run reads; "
        "the report would overwrite it (give another file)"
    )
    assert snapshot(project) == before


@pytest.mark.parametrize(
    "argv",
    [
        ["build", "specs", "-o", "specs/atomic_sum_spec.py"],
        ["test", "specs", "-o", "specs/atomic_sum.cuh"],
        ["sanitize", "-o", "run.py", "--", sys.executable, "run.py"],
    ],
)
def test_harness_output_naming_a_file_the_run_reads_is_refused(tmp_path: Path, argv: list[str]) -> None:
    """build and test refuse a spec or its kernel as `-o`, sanitize a file of its command;
    before they need nvcc, a GPU or compute-sanitizer."""
    harness = Path(__file__).parent / "fixtures" / "harness"
    for name in ("atomic_sum_spec.py", "atomic_sum.cuh"):
        write(tmp_path / "specs" / name, (harness / name).read_bytes())
    write(tmp_path / "run.py", "print('hello')\n")
    before = snapshot(tmp_path)
    error = one_line_error(cli(*argv, cwd=tmp_path))
    assert error.startswith(f"kernel-check: error: --output {argv[argv.index('-o') + 1]}: is "), error
    assert snapshot(tmp_path) == before


# ------------------------------------------------------------------------ configuration


def test_kernel_check_toml_is_discovered_and_wins_over_pyproject(project: Path, capsys) -> None:
    kernel_tree(project)
    (project / "kernel-check.toml").write_text('mode = "hermetic"\nignore = ["KC101"]\n')
    main(["csrc", "--format", "json", "--no-cache"])
    assert not any(f["code"] == "KC101" for f in json.loads(capsys.readouterr().out))
    (project / "kernel-check.toml").write_text('[tool.kernel-check]\nignore = ["KC101"]\n')
    assert main(["csrc"]) == 2
    assert "holds the keys at its top level" in capsys.readouterr().err


@pytest.mark.parametrize("table", ["kernel_check", "kernelcheck", "kernel-checks", "Kernel-Check"])
def test_a_misspelled_table_is_one_warning(project: Path, table: str, capsys) -> None:
    (project / "pyproject.toml").write_text(f'[tool.{table}]\nignore = ["KC101"]\n\n[tool.ruff]\nline-length = 100\n')
    write(project / "ok.py", CLEAN_PY)
    assert main(["ok.py", "--no-cache"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kernel-check: warning: ") and f"[tool.{table}]" in err[0], err
    assert "did you mean [tool.kernel-check]" in err[0]


# ------------------------------------------------------------------------ progress


def run_on_a_terminal(argv: list[str], cwd: Path, env: dict | None = None) -> tuple[int, str]:
    """The real CLI with stdout and stderr on a pseudo-terminal (what a person sees); the
    display's delay is zero here, so that a run of a few files shows it. No colors unless
    `env` sets NO_COLOR empty."""
    code = "import sys; import kernel_check.cli as cli; cli.PROGRESS_DELAY_S = 0.0; sys.exit(cli.main(sys.argv[1:]))"
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))  # 40 rows, 100 columns
    process = subprocess.Popen(
        [sys.executable, "-c", code, *argv],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=terminal,
        stderr=terminal,
        env={**os.environ, "NO_COLOR": "1", **(env or {})},
    )
    os.close(terminal)
    chunks = []
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        ready, _, _ = select.select([controller], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # the terminal closed: the process is gone
                break
            if not chunk:
                break
            chunks.append(chunk)
        elif process.poll() is not None:
            break
    os.close(controller)
    return process.wait(30), b"".join(chunks).decode(errors="replace")


def progress_tree(root: Path) -> list[str]:
    """Six files (four kernels, a header, a Python file)."""
    kernel_tree(root)
    for index in range(3):
        write(root / "csrc" / f"copy{index}.cuh", KERNEL.replace("scale_kernel", f"copy{index}_kernel"))
    write(root / "csrc" / "ok.py", CLEAN_PY)
    return ["csrc", "--no-cache", "--jobs", "2"]


@pytest.mark.slow
def test_progress_on_a_terminal(project: Path) -> None:
    code, screen = run_on_a_terminal(progress_tree(project), project)
    assert code == 1, screen
    updates = re.findall(r"\r\x1b\[K\[(\d+)/(\d+) (\d+)s\] (\S*)", screen)
    assert updates, screen
    assert {total for _, total, _, _ in updates} == {"6"}
    assert {name for _, _, _, name in updates} >= {"csrc/scale.cuh", "csrc/copy0.cuh"}
    assert [int(done) for done, _, _, _ in updates] == sorted(int(done) for done, _, _, _ in updates)
    assert updates[-1][0] == "6"  # the last update counts every file
    report = screen[screen.rindex("\r\x1b[K") + len("\r\x1b[K") :]  # the line is erased before the report
    assert report.startswith("csrc/copy0.cuh:10:55: KC101") and "Found 4 findings" in report
    assert "/6 " not in report


@pytest.mark.slow
def test_term_dumb_gets_neither_colors_nor_the_live_line(project: Path) -> None:
    """TERM=dumb (Emacs' shell, some CI runners) declares a terminal that takes no escape
    sequences: a real terminal with it gets the plain report, as a pipe does."""
    argv = progress_tree(project)
    for term, escapes in (("xterm-256color", True), ("dumb", False)):
        code, screen = run_on_a_terminal(argv, project, env={"NO_COLOR": "", "TERM": term})
        assert code == 1 and "Found 4 findings" in screen, screen
        assert bool(ANSI.search(screen)) is escapes, (term, screen)
        assert ("\x1b[K" in screen) is escapes, (term, screen)


@pytest.mark.slow
def test_no_progress_when_not_a_terminal_or_machine_readable(project: Path) -> None:
    argv = progress_tree(project)
    piped = cli(*argv, cwd=project)
    assert piped.returncode == 1 and piped.stderr == b"" and b"\r" not in piped.stdout
    code, screen = run_on_a_terminal([*argv, "--output-format", "json"], project)
    assert code == 1 and "/6 " not in screen and "\x1b[K" not in screen
    json.loads(screen.replace("\r\n", "\n"))
