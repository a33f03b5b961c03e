"""The `kernel-check` command line end to end through `kernel_check.cli.main`: bad input,
exit codes, formats, rule listing, `per-file-ignores` and `--force-exclude`.

Every bad input gives exit 2 and one line on stderr naming the file and the problem (or, for
a source that cannot be parsed, a KC000 finding and exit 1), never a traceback, and leaves
every file as it was.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kernel_check import __version__
from kernel_check.cli import main
from kernel_check.registry import all_rules

BAD_PY = (
    "import functools\n\n\n@functools.lru_cache(maxsize=None)\ndef _jit_scale_module(dtype):\n"
    '    return load_jit("scale", dtype)\n'
)
CLEAN_PY = "def add(a, b):\n    return a + b\n"


class Hang(BaseException):
    """Raised by the alarm: a BaseException, so the CLI's `except Exception` cannot hide it."""


@pytest.fixture
def fifo():
    """Make FIFOs that cannot hang the suite: an alarm stops a blocked read in this process,
    and teardown opens each FIFO for writing and closes it, so a reader elsewhere (a worker
    process) sees end of file."""
    made: list[Path] = []

    def alarm(signum, frame):
        raise Hang("kernel-check blocked for 5 s")

    def make(path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(path)
        made.append(path)
        return path

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(5)
    yield make
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)
    for path in made:
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass  # no reader left


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def snapshot(root: Path) -> dict[str, bytes | str]:
    """Every entry under root with its bytes (or what a link points to): nothing may change."""
    state: dict[str, bytes | str] = {}
    for current, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(current) / name
            key = path.relative_to(root).as_posix()
            if path.is_symlink():
                state[key] = "-> " + os.readlink(path)
            elif path.is_file():
                state[key] = path.read_bytes()
            else:
                state[key] = "dir" if path.is_dir() else "special"
    return state


def one_line_error(capsys, code: int, expected: int = 2) -> str:
    out, err = capsys.readouterr()
    assert code == expected, (out, err)
    assert "Traceback" not in err and "Traceback" not in out
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("kernel-check: error: ")
    return lines[0]


def json_findings(capsys, *argv: str) -> tuple[int, list[dict]]:
    code = main([*argv, "--format", "json"])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, json.loads(out)


# ------------------------------------------------------------------ bad input: exit 2


@pytest.mark.parametrize(
    "argv, message",
    [
        (["missing.cuh"], "kernel-check: error: missing.cuh: no such file or directory"),
        (["nodir/"], "kernel-check: error: nodir: no such file or directory"),
        (["empty"], "kernel-check: error: empty: no C++/CUDA or Python sources found"),
        (["notes.txt"], "kernel-check: error: notes.txt: not a C++/CUDA or Python source"),
    ],
)
def test_bad_paths(project, capsys, argv, message):
    write(project / "empty" / "README.md", "no sources here\n")
    write(project / "notes.txt", "text\n")
    (project / "dangling.cuh").symlink_to(project / "gone.cuh")
    before = snapshot(project)
    assert one_line_error(capsys, main(argv)).startswith(message)
    assert snapshot(project) == before


@pytest.mark.parametrize(
    "pyproject, message",
    [
        ("[tool.kernel-check\nmode = 1\n", "pyproject.toml: invalid TOML: "),
        ('[tool.kernel-check]\nmodes = "hermetic"\n', "[tool.kernel-check] unknown key 'modes' (known: arch, "),
        ('[tool.kernel-check]\nselect = "KC101"\n', "[tool.kernel-check] 'select' must be list[str], got 'KC101'"),
        ('[tool.kernel-check]\nstrict = "yes"\n', "'strict' must be bool"),
        ('[tool.kernel-check]\nmode = "fast"\n', "'mode' must be auto, system or hermetic, got 'fast'"),
        (
            '[tool.kernel-check]\narch = "banana"\n',
            "[tool.kernel-check] 'arch' must be the SM version in digits, e.g. \"90\" for sm_90",
        ),
        ('[tool.kernel-check]\narch = "sm_90"\n', "'arch' must be the SM version in digits"),
        ("[tool.kernel-check]\nmax-file-bytes = 0\n", "'max-file-bytes' must be a positive number of bytes, got 0"),
        ("[tool.kernel-check]\nmax-file-bytes = -5\n", "'max-file-bytes' must be a positive number of bytes"),
        ("[tool.kernel-check]\nfile-timeout = -1.5\n", "'file-timeout' must be a positive number of seconds, got -1.5"),
        ("[tool.kernel-check]\nfile-timeout = 0\n", "'file-timeout' must be a positive number of seconds"),
        ("[tool.kernel-check]\nfile-timeout = nan\n", "'file-timeout' must be a positive number of seconds"),
        ('[tool.kernel-check]\nseverity = { KC101 = "fatal" }\n', "severity for KC101 must be error, warning or info"),
        ('[tool.kernel-check]\nselect = ["KC9"]\n', "[tool.kernel-check] select: unknown rule code or prefix 'KC9'"),
        ('[tool.kernel-check]\nignore = ["KX1"]\n', "ignore: unknown rule code or prefix 'KX1'"),
        (
            '[tool.kernel-check]\nper-file-ignores = { "a/**" = ["KC77"] }\n',
            "per-file-ignores 'a/**': unknown rule code or prefix 'KC77'",
        ),
        ("[tool]\nkernel-check = 3\n", "[tool.kernel-check] must be a table"),
        ('[tool.kernel-check]\nseverity = { KC1 = "info" }\n', "severity: unknown rule code 'KC1'"),
    ],
)
def test_broken_pyproject(project, capsys, pyproject, message):
    (project / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    write(project / "ok.py", CLEAN_PY)
    before = snapshot(project)
    line = one_line_error(capsys, main(["ok.py"]))
    assert str(project / "pyproject.toml") in line and message in line
    assert snapshot(project) == before


def test_a_bad_arch_is_a_config_error_for_the_check_and_the_build(project, capsys):
    """`arch` reaches the parse as `int(arch)`: a value that is no SM version was an internal
    error naming neither the file nor the key; now the loader refuses it, for every command."""
    config = project / "kernel-check.toml"
    config.write_text('mode = "hermetic"\narch = "banana"\n', encoding="utf-8")
    write(project / "k.cuh", "#pragma once\n")
    for argv in (["k.cuh", "--no-cache"], ["build", "k.cuh"]):
        assert main(argv) == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and "internal error" not in lines[0], lines
        assert f"{config}: [tool.kernel-check] 'arch' must be the SM version in digits" in lines[0]


def test_explicit_config_file_not_found(project, capsys):
    write(project / "ok.py", CLEAN_PY)
    assert one_line_error(capsys, main(["--config", "other.toml", "ok.py"])) == (
        "kernel-check: error: other.toml: config file not found"
    )


@pytest.mark.parametrize(
    "argv, message",
    [
        (["rule", "KC999"], "unknown rule code 'KC999' (see `kernel-check rules`)"),
        (["--select", "KC999", "ok.py"], "--select: unknown rule code or prefix 'KC999' (see `kernel-check rules`)"),
        (["--select", "KC101,kc9", "ok.py"], "--select: unknown rule code or prefix 'KC9'"),
        (["--ignore", "XY", "ok.py"], "--ignore: unknown rule code or prefix 'XY'"),
        (["--format", "xml", "ok.py"], "argument --output-format/--format: invalid choice: 'xml'"),
        (["--bogus", "ok.py"], "unrecognized arguments: --bogus"),
        (["--output", "no/such/dir/report.txt", "ok.py"], "no/such/dir/report.txt: cannot write the report"),
        (["--jobs", "0", "ok.py"], "argument --jobs/-j: expected a positive integer, got '0'"),
        (["test", ".", "--timeout", "-1"], "argument --timeout: expected a positive number of seconds, got '-1'"),
        (["test", ".", "--max-time", "inf"], "argument --max-time: expected a positive number of seconds, got 'inf'"),
        (
            ["test", ".", "--sanitize-timeout", "0"],
            "argument --sanitize-timeout: expected a positive number of seconds",
        ),
        (["sanitize", "--timeout", "nan", "--", "true"], "argument --timeout: expected a positive number of seconds"),
    ],
)
def test_bad_usage(project, capsys, argv, message):
    write(project / "ok.py", CLEAN_PY)
    before = snapshot(project)
    assert message in one_line_error(capsys, main(argv))
    assert snapshot(project) == before


def test_known_prefixes_select(project, capsys):
    write(project / "bad.py", BAD_PY)
    assert main(["--select", "KC5", "bad.py"]) == 1
    assert main(["--select", "kc501", "bad.py"]) == 1
    assert main(["--ignore", "KC50", "bad.py"]) == 0


# ------------------------------------------------------------------ bad input: KC000 findings


def single_kc000(capsys, argv: list[str], path: str) -> dict:
    code, findings = json_findings(capsys, *argv)
    assert code == 1
    assert [(f["path"], f["code"]) for f in findings] == [(path, "KC000")]
    return findings[0]


def test_binary_file_is_one_kc000(project, capsys):
    write(project / "blob.cuh", b"\x7fELF\x02\x01\x01\x00\x00\x00" + bytes(range(256)) * 4)
    before = snapshot(project)
    finding = single_kc000(capsys, ["blob.cuh"], "blob.cuh")
    assert finding["message"] == "binary file (contains NUL bytes); not parsed" and finding["line"] == 1
    assert snapshot(project) == before


def test_five_megabyte_file_is_one_kc000_and_fast(project, capsys):
    write(project / "huge.cuh", "// padding line\n" * (5 * 1024 * 1024 // 16))
    before = snapshot(project)
    finding = single_kc000(capsys, ["huge.cuh"], "huge.cuh")
    assert "over the max-file-bytes limit" in finding["message"]
    assert snapshot(project) == before


def test_not_cpp_at_all_is_one_kc000(project, capsys):
    write(project / "prose.cuh", "This is a shopping list, not C++.\nEggs, milk; bread?\n")
    before = snapshot(project)
    finding = single_kc000(capsys, ["prose.cuh", "--select", "KC0"], "prose.cuh")
    assert finding["message"].startswith("clang could not parse this file: ")
    assert snapshot(project) == before


def test_python_syntax_error_is_one_kc000(project, capsys):
    write(project / "broken.py", "def f(:\n    pass\n")
    finding = single_kc000(capsys, ["broken.py"], "broken.py")
    assert finding["message"].startswith("python syntax error") and finding["line"] == 1


def test_non_utf8_bytes_are_reported_not_crashed_on(project, capsys):
    write(project / "latin1.cuh", b"// caf\xe9 au lait\n#include <cstdint>\nuint32_t n;\n")
    before = snapshot(project)
    code, findings = json_findings(capsys, "latin1.cuh", "--select", "KC310")
    assert code == 1
    assert [(f["line"], f["code"]) for f in findings] == [(1, "KC310")]
    assert "invalid UTF-8" in findings[0]["message"]
    assert snapshot(project) == before
    # --fix must not touch bytes it cannot map
    assert main(["--fix", "--select", "KC310", "latin1.cuh"]) == 1
    assert snapshot(project) == before


def test_unreadable_entry_in_a_directory_is_one_kc000(project, capsys):
    # root reads a chmod 000 file anyway, so an unreadable entry is a dangling symlink here
    write(project / "src" / "ok.py", CLEAN_PY)
    (project / "src" / "dangling.py").symlink_to(project / "src" / "gone.py")
    before = snapshot(project)
    finding = single_kc000(capsys, ["src"], "src/dangling.py")
    assert finding["message"].startswith("cannot read file: ")
    assert snapshot(project) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read a chmod 000 file")
def test_chmod_000_file_is_one_kc000(project, capsys):
    path = write(project / "secret.py", CLEAN_PY)
    path.chmod(0)
    try:
        finding = single_kc000(capsys, ["secret.py"], "secret.py")
        assert finding["message"].startswith("cannot read file: ")
    finally:
        path.chmod(0o644)


NOBODY = 65534


def run_as_nobody(argv: list[str], cwd: Path, output: Path) -> tuple[int, str, str]:
    """`main(argv)` in a forked child that drops root for uid/gid 65534 (the interpreter
    lives under root's home, which that user cannot exec, so the child is forked from this
    process, whose modules the caller has already loaded): exit status, stdout, stderr."""
    out, err = output / "stdout", output / "stderr"
    with out.open("wb") as out_file, err.open("wb") as err_file:
        pid = os.fork()
        if pid == 0:  # the child: never returns into pytest
            status = 99
            try:
                os.dup2(out_file.fileno(), 1)
                os.dup2(err_file.fileno(), 2)
                sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__  # fds 1 and 2, not pytest's capture
                import ctypes  # noqa: F401  (what a file's bounded child imports: root's to read)
                import resource  # noqa: F401  (the same)

                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
                os.chdir(cwd)
                status = main(argv)
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(status)
        _, wait_status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(wait_status), out.read_text(), err.read_text()


@pytest.mark.skipif(os.geteuid() != 0, reason="runs the check as uid 65534, which needs root")
def test_an_unreadable_directory_is_one_warning_not_silently_skipped(tmp_path, monkeypatch, capsys):
    """Root reads a chmod 000 directory anyway, so the check runs as another user: the
    directory it cannot list is a warning naming it (as ruff's), its files are not counted
    as checked, and the exit status is the other files' (a warning does not fail the run,
    as in ruff)."""
    tree = Path(tempfile.mkdtemp(prefix="kernel-check-unreadable-"))  # in /tmp: 65534 reaches it
    locked = tree / "src" / "locked"
    try:
        write(tree / "pyproject.toml", '[tool.kernel-check]\nmode = "hermetic"\n')
        write(tree / "src" / "ok.py", CLEAN_PY)
        write(locked / "bad.py", BAD_PY)
        for path in (tree, tree / "src", locked):
            path.chmod(0o755)
        monkeypatch.chdir(tree)
        argv = ["src", "--no-cache", "--jobs", "1", "--color", "never"]
        assert main(argv) == 1  # root reads the directory (and loads the modules the child runs)
        out, err = capsys.readouterr()
        assert "2 files checked" in out and err == ""
        locked.chmod(0)
        status, out, err = run_as_nobody(argv, tree, tmp_path)
        assert status == 0 and "All checks passed" in out and "1 file checked" in out, (status, out, err)
        assert err == "kernel-check: warning: failed to read directory src/locked: Permission denied\n"
    finally:
        locked.chmod(0o755)
        shutil.rmtree(tree)


def test_fifo_passed_explicitly_is_one_line_exit_2(project, capsys, fifo):
    fifo(project / "pipe.cuh")
    line = one_line_error(capsys, main(["pipe.cuh"]))
    assert "pipe.cuh" in line and "not a regular file" in line


def test_fifo_inside_a_directory_does_not_block(project, capsys, fifo):
    write(project / "src" / "ok.py", CLEAN_PY)
    fifo(project / "src" / "pipe.py")
    code, findings = json_findings(capsys, "src")
    assert code in (0, 1) and all(f["path"] == "src/pipe.py" for f in findings)


# ------------------------------------------------------------------ exit codes


def test_exit_codes(project, capsys):
    write(project / "clean.py", CLEAN_PY)
    write(project / "bad.py", BAD_PY)
    write(project / "warn.py", CLEAN_PY + "x = 1  # kernel-check: ignore[KC501]\n")  # KC001 warning
    assert main(["clean.py"]) == 0
    assert main(["bad.py"]) == 1
    assert main(["--exit-zero", "bad.py"]) == 0
    assert main(["warn.py"]) == 0  # warnings alone do not fail the gate
    assert main(["--strict", "warn.py"]) == 1
    (project / "pyproject.toml").write_text("[tool.kernel-check]\nstrict = true\n", encoding="utf-8")
    assert main(["warn.py"]) == 1
    assert main(["--select", "KC506", "bad.py"]) == 0
    capsys.readouterr()


# ------------------------------------------------------------------ formats and output


@pytest.fixture
def two_files(project):
    write(project / "pkg" / "bad.py", BAD_PY)
    write(project / "pkg" / "clean.py", CLEAN_PY)
    return project


def test_a_suppression_without_codes_is_reported_where_it_is(project, capsys):
    """`# kernel-check: ignore` (no brackets) suppresses nothing, so it must not look as if it
    did: a KC001 on its line says to name the codes (C++ in the KC001 fixture)."""
    lines = BAD_PY.splitlines()
    write(
        project / "bare.py",
        "# kernel-check: ignore-file\n"
        + "\n".join(lines[:3])
        + "  # kernel-check: ignore\n"
        + "\n".join(lines[3:])
        + "\n",
    )
    assert main(["bare.py", "--format", "json"]) == 1  # the KC501 it meant to hide is still there
    found = [(f["line"], f["code"], f["message"]) for f in json.loads(capsys.readouterr().out)]
    assert found == [
        (
            1,
            "KC001",
            (
                "`kernel-check: ignore-file` names no code, so it suppresses nothing; "
                "write the codes to suppress, e.g. `kernel-check: ignore-file[KC101]`"
            ),
        ),
        (
            4,
            "KC001",
            (
                "`kernel-check: ignore` names no code, so it suppresses nothing; "
                "write the codes to suppress, e.g. `kernel-check: ignore[KC101]`"
            ),
        ),
        (5, "KC501", found[2][2]),  # the line below the bare `ignore`
    ], found


def test_text_format(two_files, capsys):
    assert main(["pkg", "--color", "never"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("pkg/bad.py:4:2: KC501 [error] `functools.lru_cache` on JIT module factory")
    assert "  4 | @functools.lru_cache(maxsize=None)\n" in out
    assert out.endswith("Found 1 finding (1 error, 0 warnings, 0 info). 2 files checked.\n")
    assert main(["pkg", "--quiet"]) == 1
    assert "Found" not in capsys.readouterr().out


def test_json_format(two_files, capsys):
    code, findings = json_findings(capsys, "pkg")
    assert code == 1
    assert [(f["path"], f["line"], f["column"], f["code"], f["severity"]) for f in findings] == [
        ("pkg/bad.py", 4, 2, "KC501", "error")
    ]


def test_sarif_format(two_files, capsys):
    assert main(["pkg", "--format", "sarif"]) == 1
    log = json.loads(capsys.readouterr().out)
    assert log["version"] == "2.1.0"
    (result,) = log["runs"][0]["results"]
    assert result["ruleId"] == "KC501"
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "pkg/bad.py", "uriBaseId": "%SRCROOT%"}


def test_github_format(two_files, capsys):
    assert main(["pkg", "--format", "github"]) == 1
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("::error file=pkg/bad.py,line=4,col=2,")
    assert "title=KC501 lru-cache-on-jit-factory::" in line


def test_junit_format(two_files, capsys):
    assert main(["pkg", "--format", "junit"]) == 1
    root = ET.fromstring(capsys.readouterr().out.split("\n", 1)[1])
    assert root.tag == "testsuites" and root.get("failures") == "1"


def test_output_file(two_files, capsys):
    assert main(["pkg", "--format", "json", "--output", "report.json"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err == ""
    assert json.loads((two_files / "report.json").read_text())[0]["code"] == "KC501"
    assert main(["pkg", "-o", "report.txt"]) == 1
    assert "\x1b[" not in (two_files / "report.txt").read_text()  # no color into a file


def test_statistics(two_files, capsys):
    write(two_files / "pkg" / "bad2.py", BAD_PY)
    assert main(["pkg", "--statistics"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "2  KC501  [ ] lru-cache-on-jit-factory"
    assert out[1].startswith("Found 2 findings")
    assert main(["pkg", "--statistics", "--format", "json"]) == 1
    assert json.loads(capsys.readouterr().out) == [
        {"code": "KC501", "name": "lru-cache-on-jit-factory", "count": 2, "fixable": False}
    ]


@pytest.mark.parametrize("fmt", ["sarif", "github", "junit"])
def test_statistics_in_a_format_without_room_for_counts_is_a_usage_error(two_files, capsys, fmt):
    """A SARIF or JUnit report must stay one (a tool parses it), and a GitHub annotation
    needs a file and line: `--statistics` there is refused before the run, as ruff does."""
    assert main(["pkg", "--statistics", "--output-format", fmt, "-o", "report"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and not (two_files / "report").exists()
    assert err == (
        f"kernel-check: error: --statistics cannot be combined with --output-format {fmt} (use text, concise, json)\n"
    )
    assert main(["pkg", "--statistics", "--output-format", "concise"]) == 1
    assert capsys.readouterr().out.startswith("1  KC501  [ ] lru-cache-on-jit-factory\n")


def test_a_test_run_a_signal_stopped_exits_128_plus_the_signal(capsys):
    """`kernel-check test` turns SIGINT/SIGTERM into a stop that still reports what finished
    (the run itself needs a GPU; this is its signal handling and exit status, with real
    signals): Ctrl-C is 130, SIGTERM 143, as shells report them; a `--max-time` stop stays 2."""
    from kernel_check.harness import cli as harness_cli
    from kernel_check.harness import process
    from kernel_check.harness.run import HarnessResult

    cut = HarnessResult([], [], stopped=["cut"])
    try:
        for sig, expected in ((signal.SIGINT, 130), (signal.SIGTERM, 143)):
            with harness_cli._stop_on_signals() as received:
                os.kill(os.getpid(), sig)
            assert harness_cli._report_stop(cut, 1, received) == expected
            process.reset_stop()
        assert harness_cli._report_stop(cut, 1) == 2
    finally:
        process.reset_stop()
    assert capsys.readouterr().err.count("stopped before 1 of 1 specs finished (cut)") == 3


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"kernel-check {__version__}\n"


def test_help_lists_the_adoption_flags(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    for flag in ("--diff BASE", "--baseline FILE", "--write-baseline FILE", "--force-exclude"):
        assert flag in out


# ------------------------------------------------------------------ rules, rule CODE


def test_rules_lists_every_code(capsys):
    assert main(["rules"]) == 0
    lines = capsys.readouterr().out.splitlines()
    codes = [r.meta.code for r in all_rules()]
    assert [line.split()[0] for line in lines] == codes
    assert any(line.startswith("KC101 * error") for line in lines)
    assert main(["rules", "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r["code"] for r in listed] == codes
    assert set(listed[0]) == {"code", "name", "severity", "stage", "fixable", "summary"}


@pytest.mark.parametrize("code", ["KC101", "kc101"])
def test_rule_prints_its_doc(capsys, code):
    assert main(["rule", code]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# KC101 restrict-readonly-pointer\n\nSeverity: error (fixable with --fix).")
    assert "## What it does" in out and "## Use instead" in out


# ------------------------------------------------------------------ per-file-ignores, --force-exclude


def test_per_file_ignores(project, capsys):
    (project / "pyproject.toml").write_text(
        "[tool.kernel-check]\n"
        "[tool.kernel-check.per-file-ignores]\n"
        '"legacy/**" = ["KC501"]\n'
        '"old_*.py" = ["KC5"]\n'
        '"pkg/keep.py" = ["KC101"]\n',
        encoding="utf-8",
    )
    for path in ("legacy/deep/a.py", "pkg/old_b.py", "pkg/keep.py", "pkg/new.py"):
        write(project / path, BAD_PY)
    code, findings = json_findings(capsys, ".")
    assert code == 1
    assert [f["path"] for f in findings] == ["pkg/keep.py", "pkg/new.py"]


def test_force_exclude_applies_config_excludes_to_explicit_files(project, capsys):
    (project / "pyproject.toml").write_text(
        '[tool.kernel-check]\nexclude = ["vendored/**", "gen_*.py"]\n', encoding="utf-8"
    )
    for path in ("vendored/lib/a.py", "pkg/gen_ops.py", "pkg/mine.py"):
        write(project / path, BAD_PY)
    # a directory walk always applies exclude
    code, findings = json_findings(capsys, ".")
    assert [f["path"] for f in findings] == ["pkg/mine.py"]
    # files passed explicitly are checked, unless --force-exclude (what pre-commit passes)
    explicit = ["vendored/lib/a.py", "pkg/gen_ops.py", "pkg/mine.py"]
    code, findings = json_findings(capsys, *explicit)
    assert [f["path"] for f in findings] == ["pkg/gen_ops.py", "pkg/mine.py", "vendored/lib/a.py"]
    code, findings = json_findings(capsys, "--force-exclude", *explicit)
    assert [f["path"] for f in findings] == ["pkg/mine.py"] and code == 1
    # only excluded files: nothing to check is a clean run, not an error
    assert main(["--force-exclude", "vendored/lib/a.py", "pkg/gen_ops.py"]) == 0
    assert capsys.readouterr().out.startswith("All checks passed.")


@pytest.mark.parametrize("argv", [["rules"], ["rule", "KC101"]])
def test_a_closed_output_pipe_ends_quietly(argv):
    """`kernel-check rules | head -1`: the reader leaves early; no traceback, no internal error."""
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "kernel_check", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    proc.stdout.close()  # before the child has written anything: every write hits a closed pipe
    stderr = proc.stderr.read()
    assert proc.wait(timeout=60) in (0, 2)
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
