"""Baseline: `--write-baseline` then `--baseline` hides accepted findings, through the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from kernel_check.baseline import Key, load_baseline
from kernel_check.cli import main


def factory(name: str, decorator: str = "@functools.lru_cache(maxsize=None)") -> str:
    """A JIT module factory; a functools decorator makes it a KC501 finding on that line."""
    return f'\n\n{decorator}\ndef _jit_{name}_module(dtype):\n    return load_jit("{name}", dtype)\n'


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = tmp_path / "project"
    # the rule set grows: pin the rules these sources are written for
    write(root / "pyproject.toml", '[tool.kernel-check]\nselect = ["KC501", "KC506"]\n')
    write(root / "pkg" / "ops.py", "import functools\n" + factory("a") + factory("b", "@functools.cache"))
    write(root / "pkg" / "more.py", "import functools\n" + factory("c"))
    monkeypatch.chdir(root)
    return root


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv: str) -> tuple[int, list[dict]]:
    code, out, err = run(capsys, *argv, "--format", "json")
    assert err == ""
    return code, json.loads(out)


def test_round_trip(project, capsys):
    code, out, _ = run(capsys, "--write-baseline", "baseline.json")
    assert code == 0
    assert out == ("kernel-check: wrote 3 baseline entries (3 findings in 2 files) to baseline.json\n")
    document = json.loads((project / "baseline.json").read_text())
    assert document == {
        "tool": "kernel-check",
        "version": 1,
        "entries": [
            {"path": "pkg/more.py", "code": "KC501", "text": "@functools.lru_cache(maxsize=None)", "count": 1},
            {"path": "pkg/ops.py", "code": "KC501", "text": "@functools.cache", "count": 1},
            {"path": "pkg/ops.py", "code": "KC501", "text": "@functools.lru_cache(maxsize=None)", "count": 1},
        ],
    }

    code, out, _ = run(capsys, "--baseline", "baseline.json")
    assert code == 0
    assert out.strip() == "All checks passed. 2 files checked, 3 hidden by the baseline."

    # edit unrelated lines: every finding moves down, the baseline still matches
    ops = project / "pkg" / "ops.py"
    moved = ops.read_text().replace("import functools\n", "import functools\nimport os\n")
    ops.write_text('"""Ops."""\n\n# moved\n' + moved, encoding="utf-8")
    code, out, _ = run(capsys, "--baseline", "baseline.json")
    assert code == 0 and "3 hidden by the baseline" in out

    # fix one violation: reported as a fixed entry
    ops.write_text(ops.read_text().replace("@functools.cache\n", "@cache_once\n"), encoding="utf-8")
    code, out, _ = run(capsys, "--baseline", "baseline.json")
    assert code == 0
    assert out.strip() == "All checks passed. 2 files checked, 2 hidden by the baseline, 1 baseline entry fixed."

    # plant one new violation: exactly that one is reported
    ops.write_text(ops.read_text() + factory("planted", "@functools.lru_cache(maxsize=4)"), encoding="utf-8")
    code, findings = run_json(capsys, "--baseline", "baseline.json")
    assert code == 1
    assert [(f["path"], f["code"], f["message"]) for f in findings] == [
        ("pkg/ops.py", "KC501", "`functools.lru_cache` on JIT module factory `_jit_planted_module`; use `cache_once`")
    ]


def test_writing_is_stable_and_leaves_no_temporary_files(project, capsys):
    assert main(["--write-baseline", "baseline.json"]) == 0
    first = (project / "baseline.json").read_bytes()
    assert main(["--write-baseline", "baseline.json"]) == 0
    assert (project / "baseline.json").read_bytes() == first
    assert first.endswith(b"}\n")
    assert sorted(p.name for p in project.iterdir()) == ["baseline.json", "pkg", "pyproject.toml"]


def test_editing_the_flagged_line_makes_the_finding_new(project, capsys):
    assert main(["--write-baseline", "baseline.json"]) == 0
    capsys.readouterr()
    more = project / "pkg" / "more.py"
    more.write_text(more.read_text().replace("maxsize=None", "maxsize=16"), encoding="utf-8")
    code, findings = run_json(capsys, "--baseline", "baseline.json")
    assert code == 1 and [(f["path"], f["line"]) for f in findings] == [("pkg/more.py", 4)]
    # and the old entry no longer matches: it shows as fixed
    code, out, _ = run(capsys, "--baseline", "baseline.json")
    assert "1 baseline entry fixed" in out


def test_whitespace_changes_keep_entries(project, capsys):
    assert main(["--write-baseline", "baseline.json"]) == 0
    more = project / "pkg" / "more.py"
    more.write_text(
        more.read_text().replace("@functools.lru_cache(maxsize=None)", "@functools.lru_cache(maxsize=None)   "),
        encoding="utf-8",
    )
    code, out, _ = run(capsys, "--baseline", "baseline.json")
    assert code == 0 and "3 hidden" in out


def test_identical_lines_are_counted(project, capsys):
    same = project / "pkg" / "same.py"
    write(same, "import functools\n" + factory("x") + factory("y"))
    assert main(["--write-baseline", "baseline.json", "pkg/same.py"]) == 0
    baseline = load_baseline(project / "baseline.json")
    assert baseline.entries == Counter({Key("pkg/same.py", "KC501", "@functools.lru_cache(maxsize=None)"): 2})
    capsys.readouterr()
    same.write_text(same.read_text() + factory("z"), encoding="utf-8")
    code, findings = run_json(capsys, "--baseline", "baseline.json", "pkg/same.py")
    assert code == 1 and len(findings) == 1 and findings[0]["line"] == 14  # the third, in file order


def test_file_level_findings_are_keyed_without_line_text(project, capsys):
    test = write(project / "test" / "registered" / "test_x.py", "import torch\n\n\ndef test_a():\n    pass\n")
    assert main(["--write-baseline", "baseline.json", "test"]) == 0
    document = json.loads((project / "baseline.json").read_text())
    assert document["entries"] == [{"path": "test/registered/test_x.py", "code": "KC506", "text": "", "count": 1}]
    capsys.readouterr()
    test.write_text('"""Now with a docstring on line 1."""\n' + test.read_text(), encoding="utf-8")
    code, out, _ = run(capsys, "--baseline", "baseline.json", "test")
    assert code == 0 and "1 hidden by the baseline" in out


def test_partial_write_keeps_other_files_entries(project, capsys):
    assert main(["--write-baseline", "baseline.json"]) == 0
    more = project / "pkg" / "more.py"
    more.write_text(more.read_text().replace("@functools.lru_cache(maxsize=None)", "@cache_once"), encoding="utf-8")
    capsys.readouterr()
    code, out, _ = run(capsys, "--write-baseline", "baseline.json", "pkg/more.py")
    assert code == 0
    assert out == (
        "kernel-check: wrote 2 baseline entries (2 findings in 1 file) to baseline.json; "
        "kept 2 of files this run did not check\n"
    )
    paths = [e["path"] for e in json.loads((project / "baseline.json").read_text())["entries"]]
    assert paths == ["pkg/ops.py", "pkg/ops.py"]


def test_checking_part_of_the_tree_does_not_count_other_entries_as_fixed(project, capsys):
    assert main(["--write-baseline", "baseline.json"]) == 0
    capsys.readouterr()
    code, out, _ = run(capsys, "--baseline", "baseline.json", "pkg/more.py")
    assert code == 0 and out.strip() == "All checks passed. 1 file checked, 1 hidden by the baseline."
    # the same for codes this run did not select
    code, out, _ = run(capsys, "--baseline", "baseline.json", "--select", "KC506")
    assert "fixed" not in out and "hidden" not in out


def test_deleted_file_entries_count_as_fixed(project, capsys):
    assert main(["--write-baseline", "baseline.json"]) == 0
    (project / "pkg" / "more.py").unlink()
    capsys.readouterr()
    code, out, _ = run(capsys, "--baseline", "baseline.json")
    assert code == 0 and "1 baseline entry fixed" in out
    code, out, _ = run(capsys, "--write-baseline", "baseline.json")
    assert "2 baseline entries" in out and "kept" not in out


def test_config_key_baseline_is_relative_to_the_project_root(project, capsys, monkeypatch):
    assert main(["--write-baseline", "ci/kc-baseline.json"]) == 2  # the directory must exist
    assert "does not exist" in capsys.readouterr().err
    (project / "ci").mkdir()
    assert main(["--write-baseline", "ci/kc-baseline.json"]) == 0
    write(project / "pyproject.toml", '[tool.kernel-check]\nselect = ["KC501"]\nbaseline = "ci/kc-baseline.json"\n')
    monkeypatch.chdir(project / "pkg")
    capsys.readouterr()
    code, out, _ = run(capsys)
    assert code == 0 and "3 hidden by the baseline" in out
    code, out, _ = run(capsys, "--baseline", "../missing.json")
    assert code == 2


@pytest.mark.parametrize(
    "content, problem",
    [
        ("{", "not a kernel-check baseline: invalid JSON at line 1 column 2"),
        ("[]", 'not a kernel-check baseline: expected a JSON object with "tool": "kernel-check"'),
        ('{"tool": "kernel-check", "version": 1, "entries": {}}', '"entries" must be a list'),
        (
            '{"tool": "kernel-check", "version": 1, "entries": [{"path": "a", "code": "KC101"}]}',
            'entry 1: "text" must be a string',
        ),
        (
            '{"tool": "kernel-check", "version": 1, "entries": '
            '[{"path": "a", "code": "KC101", "text": "", "count": 0}]}',
            'entry 1: "count" must be a positive integer',
        ),
        ('{"tool": "kernel-check", "version": 9, "entries": []}', "baseline version 9 is newer"),
        ("\xff", "not UTF-8"),
    ],
)
def test_corrupt_baseline_is_one_line_exit_2(project, capsys, content, problem):
    bad = project / "bad.json"
    bad.write_bytes(content.encode("latin-1"))
    before = bad.read_bytes()
    assert main(["--baseline", "bad.json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("kernel-check: error: bad.json: ") and problem in err
    # and --write-baseline refuses to replace a file that is not a baseline
    assert main(["--write-baseline", "bad.json"]) == 2
    assert "refusing to overwrite it" in capsys.readouterr().err
    assert bad.read_bytes() == before


def test_missing_baseline_is_one_line_exit_2(project, capsys):
    assert main(["--baseline", "nope.json"]) == 2
    _out, err = capsys.readouterr()
    assert err == (
        "kernel-check: error: nope.json: baseline file not found "
        "(create it with `kernel-check --write-baseline nope.json`)\n"
    )


def test_missing_configured_baseline_is_an_error(project, capsys):
    write(project / "pyproject.toml", '[tool.kernel-check]\nselect = ["KC501"]\nbaseline = "gone.json"\n')
    assert main([]) == 2
    assert "gone.json: baseline file not found" in capsys.readouterr().err
    # writing the configured file for the first time needs no existing one
    assert main(["--write-baseline", "gone.json"]) == 0


def test_write_baseline_refuses_source_files_and_directories(project, capsys):
    before = (project / "pkg" / "ops.py").read_bytes()
    assert main(["--write-baseline", "pkg/ops.py"]) == 2
    assert "refusing to write a baseline over a source file" in capsys.readouterr().err
    assert (project / "pkg" / "ops.py").read_bytes() == before
    assert main(["--write-baseline", "pkg"]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_write_baseline_refuses_a_read_only_baseline(project, capsys):
    """A baseline the user made read-only is not replaced (as `--fix` refuses such a file)."""
    assert main(["--write-baseline", "baseline.json"]) == 0
    baseline = project / "baseline.json"
    before = baseline.read_bytes()
    baseline.chmod(0o444)
    write(project / "pkg" / "new.py", "import functools\n" + factory("d"))
    capsys.readouterr()
    assert main(["--write-baseline", "baseline.json"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "kernel-check: error: baseline.json: cannot write baseline: the file is read-only (mode 0444)"
    ]
    assert baseline.read_bytes() == before


def git(cwd: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "HOME": str(cwd),
    }
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def test_baseline_with_diff_hides_old_and_shows_new(project, capsys):
    git(project, "init", "-q", "-b", "main")
    assert main(["--write-baseline", "baseline.json"]) == 0
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "adopt kernel-check with a baseline")
    ops = project / "pkg" / "ops.py"
    ops.write_text(ops.read_text() + factory("new"), encoding="utf-8")
    capsys.readouterr()
    code, findings = run_json(capsys, "--baseline", "baseline.json", "--diff", "HEAD")
    assert code == 1 and [f["message"].split("`")[3] for f in findings] == ["_jit_new_module"]


def test_cpp_kernel_round_trip(tmp_path, capsys, monkeypatch):
    root = tmp_path / "kernels"
    source = (
        "#include <cstdint>\n\n"
        "__global__ void scale_kernel(float* __restrict__ dst,\n"
        "                             const float* src,\n"
        "                             uint32_t n) {\n"
        "  dst[0] = src[0];\n}\n"
    )
    kernel = write(root / "csrc" / "scale.cuh", source)
    write(root / "pyproject.toml", '[tool.kernel-check]\nmode = "hermetic"\nselect = ["KC101"]\n')
    monkeypatch.chdir(root)
    assert main(["--write-baseline", "kc.json", "csrc"]) == 0
    entries = json.loads((root / "kc.json").read_text())["entries"]
    assert entries == [{"path": "csrc/scale.cuh", "code": "KC101", "text": "const float* src,", "count": 1}]
    kernel.write_text(
        "// Scales.\n"
        + source.replace("const float* src,", "const float*   src,")
        + "\n__global__ void copy_kernel(float* __restrict__ d, const float* s) { d[0] = s[0]; }\n",
        encoding="utf-8",
    )
    capsys.readouterr()
    code, findings = run_json(capsys, "--baseline", "kc.json", "csrc")
    assert code == 1 and [(f["line"], f["code"]) for f in findings] == [(10, "KC101")]
    # --fix repairs what the run reports, and leaves the accepted finding alone
    assert main(["--baseline", "kc.json", "--fix", "csrc"]) == 0
    text = kernel.read_text(encoding="utf-8")
    assert "const float*   src," in text and "const float* __restrict__ s)" in text


def test_files_the_run_could_not_check_keep_their_entries(project, capsys, monkeypatch):
    """A KC000 "not checked: ..." (timeout, crash, out of memory) says nothing about the code:
    it is never recorded nor hidden, and the file's old entries stay as they were."""
    import kernel_check.engine as engine
    from kernel_check.finding import Finding, Location, Severity
    from kernel_check.results import status_of
    from kernel_check.watchdog import TimedOut

    assert main(["--write-baseline", "baseline.json"]) == 0
    before = (project / "baseline.json").read_text()
    capsys.readouterr()
    real_run_static = engine.run_static

    def timing_out(files, options, *more, **keywords):
        results = real_run_static(files, options, *more, **keywords)
        for result in results:
            if result.path.endswith("more.py"):
                stopped = TimedOut(
                    "not checked: the static pipeline took longer than file-timeout (20 s)", limit=20.0, bound="wall"
                )
                result.findings = [Finding("KC000", stopped.message, Location(result.path, 1, 1), Severity.ERROR)]
                result.status = status_of(stopped)  # what the engine records for a stopped file
        return results

    monkeypatch.setattr(engine, "run_static", timing_out)
    code, findings = run_json(capsys, "--baseline", "baseline.json")
    assert code == 1 and [(f["path"], f["code"]) for f in findings] == [("pkg/more.py", "KC000")]
    code, out, _ = run(capsys, "--baseline", "baseline.json")
    assert "2 hidden by the baseline" in out and "fixed" not in out
    code, out, err = run(capsys, "--write-baseline", "baseline.json")
    assert code == 0 and "kept 1 of files this run did not check" in out
    assert err.startswith("kernel-check: warning: 1 file was not checked (timeout, crash or out of memory)")
    assert "pkg/more.py" in err
    assert (project / "baseline.json").read_text() == before
