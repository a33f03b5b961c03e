"""Tests of the report stage (kernel_check.report): every output format, from hand-made findings."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from kernel_check import __version__, codes, registry
from kernel_check.cli import main
from kernel_check.finding import Finding, Fix, Location, Related, Severity, TextEdit
from kernel_check.paths import display_path
from kernel_check.registry import Language
from kernel_check.report import FORMATS, Summary, render
from kernel_check.results import FileStatus

SCHEMA = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"

SOURCE = "#include <x>\n\tconst float* src = in;\nvoid f();\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project holding csrc/k.cuh, and the current directory (where the text formats'
    paths start)."""
    (tmp_path / "csrc").mkdir()
    (tmp_path / "csrc" / "k.cuh").write_text(SOURCE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> registry.RuleMeta:
    """A throwaway KC999 rule, removed from the code table and the registry afterwards."""
    registry.load_rules()
    monkeypatch.setitem(
        codes.TABLE,
        "KC999",
        codes.Code("KC999", "throwaway-rule", Severity.WARNING, Language.CPP, "a throwaway rule", fixable=True),
    )

    @registry.rule("KC999")
    def check(model, ctx):  # pragma: no cover - never run
        yield from ()

    yield registry._REGISTRY["KC999"].meta
    registry._REGISTRY.pop("KC999", None)


def kfile(project: Path) -> str:
    return str(project / "csrc" / "k.cuh")


def finding(path: str, code: str = "KC901", line: int = 2, column: int = 8, **kw) -> Finding:
    severity = kw.pop("severity", Severity.ERROR)
    location = Location(path, line, column, kw.pop("end_line", None), kw.pop("end_column", None))
    return Finding(code, kw.pop("message", "read-only pointer lacks __restrict__"), location, severity, **kw)


def full_finding(project: Path) -> Finding:
    path = kfile(project)
    return finding(
        path,
        end_line=2,
        end_column=13,
        related=(Related(Location(path, 3, 1), "launched here"),),
        fix=Fix("add __restrict__", (TextEdit(26, 26, " __restrict__"),)),
        detail="clang: error: boom\n  at here",
    )


# --- shared behaviour -------------------------------------------------------------------------


def test_formats_and_unknown_format(project: Path) -> None:
    assert FORMATS == ("text", "concise", "json", "sarif", "github", "junit")
    with pytest.raises(ValueError, match="unknown output format"):
        render([], "xml", root=project)


def test_display_path_is_relative_to_the_current_directory_else_absolute(
    project: Path, tmp_path_factory, monkeypatch
) -> None:
    assert display_path(kfile(project)) == "csrc/k.cuh"
    assert display_path("csrc/../csrc/k.cuh") == "csrc/k.cuh"
    monkeypatch.chdir(project / "csrc")
    assert display_path(kfile(project)) == "k.cuh"
    assert display_path("../csrc/k.cuh") == "k.cuh"
    outside = tmp_path_factory.mktemp("elsewhere") / "x.cuh"
    assert display_path(outside) == str(outside)
    assert display_path(os.path.relpath(outside)) == str(outside)  # `../../x` style becomes absolute


def test_people_read_paths_from_the_current_directory_tools_from_the_project_root(project: Path, monkeypatch) -> None:
    """text and concise name the file so that it opens from where the command ran; json,
    junit and github name it the same way whatever the current directory."""
    monkeypatch.chdir(project / "csrc")
    found = [finding(kfile(project), related=(Related(Location(kfile(project), 3, 1), "launched here"),))]
    text = render(found, "text", root=project).splitlines()
    assert text[0].startswith("k.cuh:2:8: KC901") and text[3] == "  note: k.cuh:3:1: launched here"
    assert render(found, "concise", root=project).startswith("k.cuh:2:8: KC901")
    row = json.loads(render(found, "json", root=project))[0]
    assert (row["path"], row["related"][0]["path"]) == ("csrc/k.cuh", "csrc/k.cuh")
    assert ET.fromstring(render(found, "junit", root=project)).find(".//testcase").get("classname") == "csrc/k.cuh"
    assert render(found, "github", root=project).startswith("::error file=csrc/k.cuh,line=2,")


def test_every_format_sorts_findings(project: Path) -> None:
    path = kfile(project)
    findings = [finding(path, "KC920", 3, 1), finding(path, "KC901", 1), finding(path, "KC100", 1)]
    rows = json.loads(render(findings, "json", root=project))
    assert [(r["code"], r["line"]) for r in rows] == [("KC100", 1), ("KC901", 1), ("KC920", 3)]
    for fmt in FORMATS:
        assert render(findings, fmt, root=project) == render(findings[::-1], fmt, root=project)


# --- text -------------------------------------------------------------------------------------


def test_text_finding_block(project: Path) -> None:
    out = render([full_finding(project)], "text", root=project)
    assert out.splitlines() == [
        "csrc/k.cuh:2:8: KC901 [error] read-only pointer lacks __restrict__",
        "  2 | \tconst float* src = in;",
        "    | \t      ^^^^^",  # the tab is kept so the carets line up under "float"
        "  note: csrc/k.cuh:3:1: launched here",
        "    clang: error: boom",
        "      at here",
        "  [*] fixable with --fix: add __restrict__",
        "",
        "Found 1 finding (1 error, 0 warnings, 0 info).",
        "[*] 1 fixable with --fix.",
    ]
    assert "\x1b[" not in out


def test_text_caret_spans(project: Path) -> None:
    path = kfile(project)
    single = render([finding(path, line=1, column=1)], "text", root=project).splitlines()
    assert single[2] == "    | ^"
    to_end = finding(path, line=1, column=10, end_line=3, end_column=2)
    assert render([to_end], "text", root=project).splitlines()[2] == "    |          ^^^"


def test_text_source_line_fallbacks(tmp_path: Path) -> None:
    missing = str(tmp_path / "gone.cuh")
    given = Finding("KC901", "m", Location(missing, 7, 3), Severity.WARNING, source_line="  abc")
    lines = render([given], "text", root=tmp_path).splitlines()
    assert lines[1:3] == ["  7 |   abc", "    |   ^"]
    assert render([finding(missing, line=7)], "text", root=tmp_path).splitlines()[1] == ""
    latin1 = tmp_path / "latin1.cuh"
    latin1.write_bytes(b"int caf\xe9 = 1;\n")
    lines = render([finding(str(latin1), line=1, column=5)], "text", root=tmp_path).splitlines()
    assert lines[1] == "  1 | int caf\ufffd = 1;"


def test_text_summary_line(project: Path) -> None:
    path = kfile(project)
    findings = [
        finding(path, "KC901", 1, severity=Severity.ERROR),
        finding(path, "KC920", 2, severity=Severity.WARNING),
        finding(path, "KC321", 3, severity=Severity.WARNING),
        finding(path, "KC930", 3, severity=Severity.INFO),
    ]
    summary = Summary(files_checked=4, suppressed=2, baseline_hidden=3, baseline_fixed=1)
    last = render(findings, "text", root=project, summary=summary).splitlines()[-1]
    assert last == (
        "Found 4 findings (1 error, 2 warnings, 1 info). 4 files checked, 2 suppressed, "
        "3 hidden by the baseline, 1 baseline entry fixed."
    )
    assert render([], "text", root=project) == "All checks passed."
    clean = render([], "text", root=project, summary=Summary(files_checked=1, cached=1, fixed=2))
    assert clean == "Found 2 findings (2 fixed, 0 remaining). 1 file checked, 1 cached."


def test_text_color(project: Path) -> None:
    out = render([full_finding(project)], "text", root=project, color=True)
    assert "\x1b[1;31mKC901\x1b[0m" in out
    assert "\x1b[31m[error]\x1b[0m" in out


# --- statistics -------------------------------------------------------------------------------


def test_statistics_table(project: Path, registered: registry.RuleMeta) -> None:
    path = kfile(project)
    fixed = Fix("f", (TextEdit(0, 0, "x"),))
    findings = [
        finding(path, "KC999", 1, fix=fixed),
        finding(path, "KC999", 2),
        finding(path, "KC200", 1),
        finding(path, "KC100", 3),
        *(finding(path, "KC050", n) for n in range(1, 12)),
    ]
    lines = render(findings, "text", root=project, statistics=True).splitlines()
    assert lines[:4] == [
        "11  KC050  [ ] KC050",
        " 2  KC999  [*] throwaway-rule",
        " 1  KC100  [ ] KC100",
        " 1  KC200  [ ] KC200",
    ]
    assert lines[4].startswith("Found 15 findings")
    rows = json.loads(render(findings, "json", root=project, statistics=True))
    assert rows[1] == {"code": "KC999", "name": "throwaway-rule", "count": 2, "fixable": True}


# --- json -------------------------------------------------------------------------------------


def test_json_objects(project: Path, registered: registry.RuleMeta) -> None:
    plain = finding(kfile(project), "KC999", 1, 1, severity=Severity.WARNING)
    rows = json.loads(render([full_finding(project), plain], "json", root=project))
    assert list(rows[0]) == [
        "code",
        "name",
        "severity",
        "message",
        "path",
        "line",
        "column",
        "end_line",
        "end_column",
        "related",
        "fix",
        "detail",
        "file_status",
        "shard",
        "witness",
    ]
    assert rows[0] == {
        "code": "KC999",
        "name": "throwaway-rule",
        "severity": "warning",
        "message": "read-only pointer lacks __restrict__",
        "path": "csrc/k.cuh",
        "line": 1,
        "column": 1,
        "end_line": None,
        "end_column": None,
        "related": [],
        "fix": None,
        "detail": "",
        "file_status": None,  # the caller gave no statuses
        "shard": None,  # not a shard of a harness run
        "witness": None,  # no solver's values
    }
    assert rows[1]["name"] == "KC901"
    assert rows[1]["related"] == [
        {
            "path": "csrc/k.cuh",
            "line": 3,
            "column": 1,
            "end_line": None,
            "end_column": None,
            "message": "launched here",
        }
    ]
    assert rows[1]["fix"] == {
        "description": "add __restrict__",
        "edits": [{"start": 26, "end": 26, "replacement": " __restrict__"}],
    }
    assert rows[1]["detail"] == "clang: error: boom\n  at here"


def test_json_carries_each_files_status(project: Path, registered: registry.RuleMeta) -> None:
    parsed, stopped = kfile(project), str(project / "csrc" / "slow.cuh")
    statuses = {parsed: FileStatus.PARSE_ERROR, stopped: FileStatus.NOT_CHECKED}
    rows = json.loads(
        render(
            [finding(parsed), finding(stopped, "KC000", 1, 1, message="too slow")],
            "json",
            root=project,
            statuses=statuses,
        )
    )
    assert {row["path"]: row["file_status"] for row in rows} == {
        "csrc/k.cuh": "parse error",
        "csrc/slow.cuh": "not checked",
    }


# --- sarif ------------------------------------------------------------------------------------


def sarif(findings: list[Finding], root: Path) -> dict:
    log = json.loads(render(findings, "sarif", root=root))
    jsonschema.Draft4Validator(json.loads(SCHEMA.read_text())).validate(log)
    return log


def test_sarif_validates_with_every_feature(project, registered, tmp_path_factory) -> None:
    latin1 = project / "latin1.cuh"
    latin1.write_bytes(b"int caf\xe9;\n")
    outside = tmp_path_factory.mktemp("elsewhere") / "o.cuh"
    findings = [
        full_finding(project),
        finding(kfile(project), "KC999", 1, 1, severity=Severity.INFO),
        finding(str(latin1), "KC902", 1, fix=Fix("rename", (TextEdit(4, 9, "cafe"),))),
        finding(str(outside), "KD901", 0, 0, detail="kernel faulted"),
        finding(kfile(project), "KC920", 3, 5, end_line=2, end_column=1),  # end before start
    ]
    run = sarif(findings, project)["runs"][0]
    assert sarif([], project)["runs"][0]["results"] == []
    assert run["tool"]["driver"]["version"] == __version__
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == project.as_uri() + "/"
    assert run["columnKind"] == "unicodeCodePoints"
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == ["KC901", "KC902", "KC920", "KC999", "KD901"]
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
    by_code = {r["ruleId"]: r for r in run["results"]}
    assert by_code["KC999"]["level"] == "note"
    assert by_code["KD901"]["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": outside.as_uri()},
    }
    assert by_code["KD901"]["properties"] == {"detail": "kernel faulted"}
    assert by_code["KC920"]["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 3,
        "startColumn": 5,
    }
    [binary] = by_code["KC902"]["fixes"][0]["artifactChanges"][0]["replacements"]
    assert binary["deletedRegion"] == {"byteOffset": 4, "byteLength": 5}


def test_sarif_rules_metadata(project: Path, registered: registry.RuleMeta) -> None:
    run = sarif(
        [
            finding(kfile(project), "KC999", severity=Severity.ERROR),
            finding(kfile(project), "KC555"),
        ],
        project,
    )["runs"][0]
    unknown, known = run["tool"]["driver"]["rules"]
    assert unknown == {
        "id": "KC555",
        "name": "KC555",
        "shortDescription": {"text": "KC555"},
        "defaultConfiguration": {"level": "error"},
        "helpUri": unknown["helpUri"],
    }
    assert unknown["helpUri"].endswith("/docs/rules/KC555.md")
    assert known["name"] == "throwaway-rule"
    assert known["shortDescription"] == {"text": "a throwaway rule"}
    assert known["help"]["markdown"] == registered.doc != ""
    assert known["fullDescription"]["markdown"] == registered.doc
    assert known["defaultConfiguration"] == {"level": "warning"}  # the rule's, not the finding's
    assert known["helpUri"].endswith("/docs/rules/KC999.md")
    assert run["results"][1]["level"] == "error"  # the finding's own severity


def test_sarif_locations(project: Path) -> None:
    result = sarif([full_finding(project)], project)["runs"][0]["results"][0]
    assert result["locations"] == [
        {
            "physicalLocation": {
                "artifactLocation": {"uri": "csrc/k.cuh", "uriBaseId": "%SRCROOT%"},
                "region": {"startLine": 2, "startColumn": 8, "endLine": 2, "endColumn": 13},
            }
        }
    ]
    assert result["relatedLocations"] == [
        {
            "id": 0,
            "physicalLocation": {
                "artifactLocation": {"uri": "csrc/k.cuh", "uriBaseId": "%SRCROOT%"},
                "region": {"startLine": 3, "startColumn": 1},
            },
            "message": {"text": "launched here"},
        }
    ]


def test_sarif_uri_is_percent_encoded(tmp_path: Path) -> None:
    spaced = tmp_path / "my dir" / "a#b.cuh"
    spaced.parent.mkdir()
    spaced.write_text("x\n")
    result = sarif([finding(str(spaced), line=1)], tmp_path)["runs"][0]["results"][0]
    uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "my%20dir/a%23b.cuh"


def test_sarif_fix_text_replacement_counts_code_points(tmp_path: Path) -> None:
    path = tmp_path / "u.cuh"
    data = "\ufeff// é€\nint x;\n".encode()  # BOM (3 bytes), é (2), € (3)
    path.write_bytes(data)
    start = data.index(b"x")
    edits = (TextEdit(start, start + 1, "y"), TextEdit(start + 1, start + 2, ""))
    fix = Fix("rename x, drop ;", edits)
    result = sarif([finding(str(path), line=2, fix=fix)], tmp_path)["runs"][0]["results"][0]
    assert result["fixes"] == [
        {
            "description": {"text": "rename x, drop ;"},
            "artifactChanges": [
                {
                    "artifactLocation": {"uri": "u.cuh", "uriBaseId": "%SRCROOT%"},
                    "replacements": [
                        {
                            "deletedRegion": {"charOffset": 10, "charLength": 1},
                            "insertedContent": {"text": "y"},
                        },
                        {"deletedRegion": {"charOffset": 11, "charLength": 1}},  # a deletion: no content
                    ],
                }
            ],
        }
    ]


def test_sarif_fix_binary_replacement_when_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "l.cuh"
    path.write_bytes(b"int caf\xe9;\n")
    fix = Fix("rename", (TextEdit(4, 9, "café"),))
    result = sarif([finding(str(path), line=1, fix=fix)], tmp_path)["runs"][0]["results"][0]
    [replacement] = result["fixes"][0]["artifactChanges"][0]["replacements"]
    assert replacement["deletedRegion"] == {"byteOffset": 4, "byteLength": 5}
    assert base64.b64decode(replacement["insertedContent"]["binary"]) == "café".encode()


def test_sarif_fingerprints_survive_line_moves(project: Path) -> None:
    def fingerprints(line_of_src: int) -> list[str]:
        path = kfile(project)
        findings = [finding(path, line=line_of_src), finding(path, line=line_of_src + 1)]
        results = sarif(findings, project)["runs"][0]["results"]
        return [r["partialFingerprints"]["kernelCheckLineHash/v1"] for r in results]

    before = fingerprints(2)
    (project / "csrc" / "k.cuh").write_text("// new\n// lines\n" + SOURCE)
    assert fingerprints(4) == before
    assert before[0] != before[1]
    (project / "csrc" / "k.cuh").write_text("a;\n  a;\n")
    duplicates = fingerprints(1)
    assert duplicates[0].split(":")[0] == duplicates[1].split(":")[0]
    assert duplicates[0] != duplicates[1]


# --- github -----------------------------------------------------------------------------------


def test_github_commands(project: Path, registered: registry.RuleMeta) -> None:
    path = kfile(project)
    findings = [
        full_finding(project),
        finding(path, "KC999", 3, 1, severity=Severity.WARNING),
        finding(path, "KC930", 3, 2, end_line=4, end_column=2, severity=Severity.INFO),
    ]
    assert render(findings, "github", root=project).splitlines() == [
        "::error file=csrc/k.cuh,line=2,col=8,endLine=2,endColumn=13,title=KC901::"
        "read-only pointer lacks __restrict__%0Anote: csrc/k.cuh:3:1: launched here"
        "%0Aclang: error: boom%0A  at here",
        "::warning file=csrc/k.cuh,line=3,col=1,title=KC999 throwaway-rule::read-only pointer lacks __restrict__",
        "::notice file=csrc/k.cuh,line=3,col=2,endLine=4,title=KC930::read-only pointer lacks __restrict__",
    ]


def test_github_escaping(tmp_path: Path) -> None:
    odd = tmp_path / "a,b:c%.cuh"
    odd.write_text("x\n")
    message = "100% wrong: a, b\r\nnext line"
    out = render([finding(str(odd), line=1, column=1, message=message)], "github", root=tmp_path)
    assert out == ("::error file=a%2Cb%3Ac%25.cuh,line=1,col=1,title=KC901::100%25 wrong: a, b%0D%0Anext line")


# --- junit ------------------------------------------------------------------------------------


def test_junit_counts_and_cases(project: Path, registered: registry.RuleMeta) -> None:
    path = kfile(project)
    other = project / "csrc" / "b.cuh"
    other.write_text("y\n")
    findings = [
        full_finding(project),
        finding(path, "KC999", 3, 1, message='bad <tag> & "quote"'),
        finding(str(other), "KC920", 1, 1, detail="\x1b[31mred\x1b[0m compiler output\x00"),
    ]
    suites = ET.fromstring(render(findings, "junit", root=project))
    assert suites.tag == "testsuites"
    assert (suites.get("tests"), suites.get("failures"), suites.get("errors")) == ("3", "3", "0")
    [suite] = suites
    assert suite.get("name") == "kernel-check"
    assert (suite.get("tests"), suite.get("failures")) == ("3", "3")
    cases = suite.findall("testcase")
    assert [(c.get("classname"), c.get("name")) for c in cases] == [
        ("csrc/b.cuh", "KC920 at csrc/b.cuh:1:1"),
        ("csrc/k.cuh", "KC901 at csrc/k.cuh:2:8"),
        ("csrc/k.cuh", "KC999 throwaway-rule at csrc/k.cuh:3:1"),
    ]
    failures = [c.find("failure") for c in cases]
    assert failures[2].get("message") == 'bad <tag> & "quote"'
    assert failures[2].get("type") == "KC999"
    assert "\\x1b[31mred\\x1b[0m compiler output\\x00" in failures[0].text
    assert failures[1].text.splitlines() == [
        "csrc/k.cuh:2:8: KC901 [error] read-only pointer lacks __restrict__",
        "  note: csrc/k.cuh:3:1: launched here",
        "clang: error: boom",
        "  at here",
    ]


def test_junit_clean_run_has_one_passing_case(project: Path) -> None:
    suites = ET.fromstring(render([], "junit", root=project))
    assert (suites.get("tests"), suites.get("failures")) == ("1", "0")
    [case] = suites.iter("testcase")
    assert case.find("failure") is None


def test_sarif_and_github_paths_are_relative_to_the_git_repository(tmp_path: Path, monkeypatch, capsys) -> None:
    """A monorepo: the project (pyproject.toml) is `python/`, the git repository one level up.
    GitHub resolves annotation files and SARIF URIs against the repository root."""
    repo = tmp_path / "mono"
    wrappers = repo / "python" / "kernels"
    wrappers.mkdir(parents=True)
    (repo / "python" / "pyproject.toml").write_text("[tool.kernel-check]\nselect = ['KC501']\n")
    (wrappers / "bad.py").write_text(
        "import functools\n\n\n@functools.lru_cache(maxsize=None)\n"
        'def _jit_scale_module(dtype):\n    return load_jit("scale", dtype)\n'
    )
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    monkeypatch.chdir(repo)

    assert main(["python/kernels", "--format", "github", "--no-cache"]) == 1
    assert capsys.readouterr().out.startswith("::error file=python/kernels/bad.py,line=4,")
    assert main(["python/kernels", "--format", "sarif", "--no-cache"]) == 1
    run = json.loads(capsys.readouterr().out)["runs"][0]
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == repo.as_uri() + "/"
    location = run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": "python/kernels/bad.py", "uriBaseId": "%SRCROOT%"}
    assert main(["python/kernels", "--format", "json", "--no-cache"]) == 1  # the others stay project-relative
    assert json.loads(capsys.readouterr().out)[0]["path"] == "kernels/bad.py"
