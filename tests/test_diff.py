"""`--diff BASE`: findings on added or changed lines only, on real temporary git repositories."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from kernel_check.cli import main
from kernel_check.diff import ChangedFile, DiffScope, is_file_level, parse_unified_diff
from kernel_check.finding import Finding, Location, Severity

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV, "HOME": str(cwd)}
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout.strip()


def init_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    return path


def commit_all(repo: Path, message: str = "commit") -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def factory(name: str, cached: bool = True) -> str:
    """A JIT module factory; with `cached` it carries a KC501 finding on its decorator line."""
    decorator = "@functools.lru_cache(maxsize=None)" if cached else "@cache_once"
    return f'\n\n{decorator}\ndef _jit_{name}_module(dtype):\n    return load_jit("{name}", dtype)\n'


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def run_json(capsys, *argv: str) -> tuple[int, list[dict], str]:
    code = main([*argv, "--format", "json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else []), err


def found(findings: list[dict]) -> list[tuple[str, int, str]]:
    return [(f["path"], f["line"], f["code"]) for f in findings]


def decorator_lines(path: Path) -> list[int]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [n for n, line in enumerate(lines, start=1) if line.startswith("@functools.lru_cache")]


# ------------------------------------------------------------------ the diff parser


def test_parser_reads_added_lines_renames_and_new_files():
    diff = b"""diff --git a/src/a.py b/src/a.py
index 1111111..2222222 100644
--- a/src/a.py
+++ b/src/a.py
@@ -3 +3 @@ x
-old
+new
@@ -10,0 +11,2 @@ y
+one
+two
@@ -20,2 +21,0 @@
-gone
-gone too
diff --git a/old name.py b/new name.py
similarity index 90%
rename from old name.py
rename to new name.py
index 1111111..2222222 100644
--- a/old name.py
+++ b/new name.py
@@ -1,0 +2 @@
+inserted
diff --git a/same.py b/moved/same.py
similarity index 100%
rename from same.py
rename to moved/same.py
diff --git a/fresh.py b/fresh.py
new file mode 100644
index 0000000..3333333
--- /dev/null
+++ b/fresh.py
@@ -0,0 +1,2 @@
+a
+b
diff --git a/empty.py b/empty.py
new file mode 100644
index 0000000..e69de29
diff --git a/dead.py b/dead.py
deleted file mode 100644
index 3333333..0000000
--- a/dead.py
+++ /dev/null
@@ -1 +0,0 @@
-a
diff --git a/mode.py b/mode.py
old mode 100644
new mode 100755
"""
    files = {f.path: f for f in parse_unified_diff(diff)}
    assert files["src/a.py"] == ChangedFile("src/a.py", frozenset({3, 11, 12}))
    assert files["new name.py"] == ChangedFile("new name.py", frozenset({2}), "old name.py")
    assert files["moved/same.py"] == ChangedFile("moved/same.py", frozenset(), "same.py")
    assert files["fresh.py"].lines is None and files["empty.py"].lines is None
    assert "dead.py" not in files and "mode.py" not in files


def test_parser_counts_hunk_bodies_so_header_like_lines_are_content():
    # a removed line "-- a/x" and an added line "++ b/y" print as "--- a/x" and "+++ b/y"
    diff = b"""diff --git a/f.py b/f.py
--- a/f.py
+++ b/f.py
@@ -1,2 +1,2 @@
--- a/x
-second
+++ b/y
+second
\\ No newline at end of file
@@ -9 +9 @@
-z
+w
"""
    (changed,) = parse_unified_diff(diff)
    assert changed == ChangedFile("f.py", frozenset({1, 2, 9}))


def test_parser_unquotes_c_style_paths():
    diff = (
        b'diff --git "a/t\\tab.py" "b/caf\\303\\251.py"\nsimilarity index 95%\n'
        b'rename from "t\\tab.py"\nrename to "caf\\303\\251.py"\n'
        b'--- "a/t\\tab.py"\n+++ "b/caf\\303\\251.py"\n@@ -1 +1 @@\n-a\n+b\n'
    )
    (changed,) = parse_unified_diff(diff)
    assert changed == ChangedFile("caf\u00e9.py", frozenset({1}), "t\tab.py")


def test_parser_drops_the_tab_after_names_with_spaces():
    diff = (
        b"diff --git a/old dir/x.py b/new dir/x.py\nsimilarity index 92%\nrename from old dir/x.py\n"
        b"rename to new dir/x.py\n--- a/old dir/x.py\t\n+++ b/new dir/x.py\t\n@@ -7,0 +8 @@\n+# edit\n"
    )
    (changed,) = parse_unified_diff(diff)
    assert changed == ChangedFile("new dir/x.py", frozenset({8}), "old dir/x.py")


def test_file_level_findings():
    def finding(code, line, column, end_line=None):
        return Finding(code, "m", Location("a.py", line, column, end_line), Severity.ERROR)

    assert is_file_level(finding("KC000", 17, 4))
    assert is_file_level(finding("KC506", 1, 1))
    assert not is_file_level(finding("KC310", 1, 1, end_line=1))
    assert not is_file_level(finding("KC501", 1, 2))
    assert not is_file_level(finding("KC501", 2, 1))


# ------------------------------------------------------------------ real repositories


@pytest.fixture
def repo(tmp_path, monkeypatch):
    repo = init_repo(tmp_path / "repo")
    # the rule set grows: pin the rules these sources are written for
    write(repo / "pyproject.toml", '[tool.kernel-check]\nselect = ["KC501", "KC506"]\n')
    write(repo / "pkg" / "ops.py", "import functools\n" + factory("old") + factory("clean", cached=False))
    write(repo / "pkg" / "other.py", "import functools\n" + factory("other"))
    commit_all(repo, "initial: two old violations")
    monkeypatch.chdir(repo)
    return repo


def test_added_line_fires_untouched_old_violation_does_not(repo, capsys):
    ops = repo / "pkg" / "ops.py"
    ops.write_text(ops.read_text() + factory("new"), encoding="utf-8")
    code, findings, _ = run_json(capsys, "--diff", "HEAD")
    new_line = decorator_lines(ops)[-1]
    assert found(findings) == [("pkg/ops.py", new_line, "KC501")]
    assert code == 1
    # without --diff every violation shows
    code, findings, _ = run_json(capsys)
    assert len(findings) == 3 and code == 1


def test_no_change_is_clean_and_checks_nothing(repo, capsys):
    assert main(["--diff", "HEAD"]) == 0
    out = capsys.readouterr().out
    assert "All checks passed." in out and "file" not in out  # nothing changed, nothing checked


def test_changed_line_counts_as_new(repo, capsys):
    ops = repo / "pkg" / "ops.py"
    ops.write_text(
        ops.read_text().replace("@functools.lru_cache(maxsize=None)", "@functools.lru_cache(maxsize=128)"),
        encoding="utf-8",
    )
    code, findings, _ = run_json(capsys, "--diff", "HEAD")
    assert found(findings) == [("pkg/ops.py", 4, "KC501")] and code == 1


def test_deleting_lines_above_an_old_violation_does_not_resurface_it(repo, capsys):
    ops = repo / "pkg" / "ops.py"
    ops.write_text(ops.read_text().replace("import functools\n\n\n", "import functools\n"), encoding="utf-8")
    code, findings, _ = run_json(capsys, "--diff", "HEAD")
    assert findings == [] and code == 0


def test_staged_and_untracked_new_files_are_all_added(repo, capsys):
    write(repo / "pkg" / "staged.py", "import functools\n" + factory("staged"))
    git(repo, "add", "pkg/staged.py")
    write(repo / "pkg" / "untracked.py", "import functools\n" + factory("untracked"))
    write(repo / ".gitignore", "ignored.py\n")
    write(repo / "pkg" / "ignored.py", "import functools\n" + factory("ignored"))
    code, findings, _ = run_json(capsys, "--diff", "HEAD")
    assert found(findings) == [("pkg/staged.py", 4, "KC501"), ("pkg/untracked.py", 4, "KC501")]
    assert code == 1


def test_works_from_a_subdirectory(repo, capsys, monkeypatch):
    other = repo / "pkg" / "other.py"
    other.write_text(other.read_text() + factory("sub"), encoding="utf-8")
    monkeypatch.chdir(repo / "pkg")
    _code, findings, _ = run_json(capsys, "--diff", "HEAD")
    assert found(findings) == [("pkg/other.py", decorator_lines(other)[-1], "KC501")]
    _code, findings, _ = run_json(capsys, "--diff", "HEAD", "other.py")
    assert found(findings) == [("pkg/other.py", decorator_lines(other)[-1], "KC501")]


def test_renamed_file_keeps_old_findings_hidden(repo, capsys):
    git(repo, "mv", "pkg/other.py", "pkg/renamed.py")
    renamed = repo / "pkg" / "renamed.py"
    renamed.write_text(renamed.read_text() + factory("after_rename"), encoding="utf-8")
    _code, findings, _ = run_json(capsys, "--diff", "HEAD")
    assert found(findings) == [("pkg/renamed.py", decorator_lines(renamed)[-1], "KC501")]


def test_file_level_finding_of_a_changed_file_is_reported(repo, capsys):
    # KC506 (no register_cuda_ci in a registered test) is a whole-file finding at 1:1
    write(repo / "test" / "registered" / "test_old.py", "import torch\n\n\ndef test_a():\n    pass\n")
    write(repo / "test" / "manual" / "test_moved.py", "import torch\n\n\ndef test_b():\n    pass\n")
    commit_all(repo, "tests")
    _code, findings, _ = run_json(capsys, "--diff", "HEAD")
    assert findings == []
    old = repo / "test" / "registered" / "test_old.py"
    old.write_text(old.read_text() + "\n\ndef test_c():\n    pass\n", encoding="utf-8")
    # a rename under test/registered/ makes KC506 apply to an otherwise unchanged file
    git(repo, "mv", "test/manual/test_moved.py", "test/registered/test_moved.py")
    _code, findings, _ = run_json(capsys, "--diff", "HEAD")
    assert found(findings) == [
        ("test/registered/test_moved.py", 1, "KC506"),
        ("test/registered/test_old.py", 1, "KC506"),
    ]


def test_parse_error_of_a_changed_file_is_reported_wherever_it_points(repo, capsys):
    other = repo / "pkg" / "other.py"
    other.write_bytes(other.read_bytes() + b"\n# trailing\x00 NUL byte\n")  # KC000 at 1:1
    code, findings, _ = run_json(capsys, "--diff", "HEAD")
    assert found(findings) == [("pkg/other.py", 1, "KC000")] and code == 1


def test_three_dots_diff_against_the_merge_base(repo, capsys):
    git(repo, "checkout", "-q", "-b", "feature")
    other = repo / "pkg" / "other.py"
    other.write_text(other.read_text() + factory("feature"), encoding="utf-8")
    commit_all(repo, "feature adds one violation")
    git(repo, "checkout", "-q", "main")
    ops = repo / "pkg" / "ops.py"
    ops.write_text(ops.read_text().replace('load_jit("old"', 'load_jit("old2"'), encoding="utf-8")
    ops.write_text(ops.read_text().replace("maxsize=None", "maxsize=8", 1), encoding="utf-8")
    commit_all(repo, "main moves on: touches its old violation")
    git(repo, "checkout", "-q", "feature")
    feature_line = decorator_lines(other)[-1]
    _, findings, _ = run_json(capsys, "--diff", "main")  # the tip of main: its edit shows reversed
    assert ("pkg/ops.py", 4, "KC501") in found(findings)
    _, findings, _ = run_json(capsys, "--diff", "main...")
    assert found(findings) == [("pkg/other.py", feature_line, "KC501")]


def test_shallow_clone_needs_base_fetched(tmp_path, capsys, monkeypatch):
    origin = init_repo(tmp_path / "origin")
    write(origin / "k.py", "import functools\n" + factory("old"))
    commit_all(origin, "base")
    git(origin, "checkout", "-q", "-b", "feature")
    write(origin / "k.py", (origin / "k.py").read_text() + factory("new"))
    commit_all(origin, "feature")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth=1", "--branch", "feature", "--single-branch", (origin.as_uri()), str(clone))
    assert git(clone, "rev-parse", "--is-shallow-repository") == "true"
    monkeypatch.chdir(clone)
    assert main(["--diff", "origin/main"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "unknown git revision 'origin/main'" in err
    assert "shallow clone" in err and "git fetch --depth=1 origin main" in err
    git(clone, "fetch", "-q", "--depth=1", "origin", "main:refs/remotes/origin/main")
    code, findings, _ = run_json(capsys, "--diff", "origin/main")
    assert found(findings) == [("k.py", decorator_lines(clone / "k.py")[-1], "KC501")] and code == 1


def test_cpp_kernel_added_line_fires_old_one_does_not(tmp_path, capsys, monkeypatch):
    repo = init_repo(tmp_path / "kernels")
    old_kernel = (
        "#include <cstdint>\n\n"
        "__global__ void old_kernel(float* __restrict__ dst, const float* src, uint32_t n) {\n"
        "  dst[0] = src[0];\n}\n"
    )
    kernel = write(repo / "csrc" / "scale.cuh", old_kernel)
    commit_all(repo)
    new_kernel = (
        "\n__global__ void new_kernel(float* __restrict__ dst, const float* lut, uint32_t n) {\n  dst[0] = lut[n];\n}\n"
    )
    kernel.write_text(old_kernel + new_kernel, encoding="utf-8")
    monkeypatch.chdir(repo)
    code, findings, _ = run_json(capsys, "--diff", "HEAD", "--mode", "hermetic", "--select", "KC101", "csrc")
    assert found(findings) == [("csrc/scale.cuh", 7, "KC101")] and code == 1
    assert "'lut'" in findings[0]["message"]


# ------------------------------------------------------------------ errors


def one_error_line(capsys) -> str:
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_unknown_base_is_one_line_exit_2(repo, capsys):
    assert main(["--diff", "no-such-branch"]) == 2
    assert one_error_line(capsys) == (
        f"kernel-check: error: --diff: unknown git revision 'no-such-branch' in {os.path.realpath(repo)}"
    )


def test_option_like_base_is_rejected(repo, capsys):
    assert main(["--diff=--output=x"]) == 2
    assert "is not a git revision" in one_error_line(capsys)


def test_not_a_git_repository_is_one_line_exit_2(tmp_path, capsys, monkeypatch):
    write(tmp_path / "plain" / "a.py", "x = 1\n")
    monkeypatch.chdir(tmp_path / "plain")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    assert main(["--diff", "HEAD"]) == 2
    line = one_error_line(capsys)
    assert line.startswith("kernel-check: error: --diff needs a git repository:") and "plain" in line


def test_missing_git_is_one_line_exit_2(repo, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(repo / "no-bin"))
    assert main(["--diff", "HEAD"]) == 2
    assert "no `git` executable is on PATH" in one_error_line(capsys)


def test_diff_and_write_baseline_do_not_combine(repo, capsys):
    assert main(["--diff", "HEAD", "--write-baseline", "b.json"]) == 2
    assert "cannot be combined with --diff" in one_error_line(capsys)
    assert not (repo / "b.json").exists()


def test_scope_maps_paths_through_symlinked_directories(tmp_path):
    real = tmp_path / "real"
    (real / "d").mkdir(parents=True)
    (tmp_path / "link").symlink_to(real)
    scope = DiffScope("HEAD", "0" * 40, real, {"d/a.py": ChangedFile("d/a.py", frozenset({2}))})
    assert scope.touches(tmp_path / "link" / "d" / "a.py")
    assert not scope.touches(tmp_path / "elsewhere.py")


def test_fix_with_diff_fixes_only_what_it_reports(tmp_path, capsys, monkeypatch):
    repo = init_repo(tmp_path / "kernels")
    old_kernel = "__global__ void old_kernel(float* __restrict__ dst, const float* src) { dst[0] = src[0]; }\n"
    kernel = write(repo / "csrc" / "copy.cuh", old_kernel)
    commit_all(repo)
    kernel.write_text(
        old_kernel + "__global__ void new_kernel(float* __restrict__ d, const float* s) { d[0] = s[0]; }\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(repo)
    assert main(["--fix", "--diff", "HEAD", "--mode", "hermetic", "--select", "KC101", "csrc"]) == 0
    assert kernel.read_text(encoding="utf-8") == old_kernel + (
        "__global__ void new_kernel(float* __restrict__ d, const float* __restrict__ s) { d[0] = s[0]; }\n"
    )


def test_file_names_git_quotes_or_pads(repo, capsys):
    names = ["with space.py", "caf\u00e9.py", "tab\there.py", 'quo"te.py']
    for name in names:
        write(repo / "odd" / name, "x = 1\n")
    commit_all(repo)
    for name in names:
        path = repo / "odd" / name
        path.write_text(path.read_text() + "import functools\n" + factory("odd"), encoding="utf-8")
    git(repo, "mv", "odd/with space.py", "odd/moved with space.py")
    _code, findings, _ = run_json(capsys, "--diff", "HEAD", "odd")
    assert sorted(f["path"] for f in findings) == sorted(
        f"odd/{n}" for n in ["moved with space.py", "caf\u00e9.py", "tab\there.py", 'quo"te.py']
    )
