#!/usr/bin/env python3
"""Recall on real code: plant one violation at a time into a real kernel tree.

    python bench/planting.py /path/to/sglang                    # every family
    python bench/planting.py /path/to/sglang --family kc1 --per-mutation 8 --json recall.json
    python bench/planting.py /path/to/sglang --codes KC120,KC150 --mode system

The tree is an sglang checkout or extract at the commit pinned in `bench/ecosystem.py`
(nothing of it is copied into this repository). It is copied into a temporary directory
first; the original is never written.

A *mutation* (`bench/planting_mutations/<family>.py`, a `MUTATIONS` list) turns the text of
one real file into a planted text and names the line where its rule must report. For each
mutation the script picks up to `--per-mutation` files where it applies (spread evenly over
the sorted candidates), groups the plantings into rounds in which no file is planted twice,
and for each round writes the planted files, runs the installed `kernel-check` on exactly
those files (as pre-commit does) and restores them. A planting counts as

* found: a finding of the mutation's code on the expected line (for a planting that names a
  range of lines -- a dropped guard, reported at whichever access it covered -- a finding of the
  code in that range that the file did not have before);
* clean: found, and no other finding is new in that file (findings compared by code and
  message, so lines shifted by an insertion do not count as new).

Recall per rule is found / planted; the report lists every miss and every extra finding, so
each one can be judged (a miss is a bug of the analysis, or a mutation that did not plant
what it meant to).

Each mutation names the idiom of the real code it plants into (`Mutation.idiom`: a read
through a structured binding, a launch through a named `LaunchKernel` object, a wait inside a
helper, ...; `any` for a mutation that takes whatever form the file has), and the report gives
recall per code and per idiom, so an idiom the analysis does not follow shows as its own row.
A mutation that plants a defect rather than a breach of a convention also names its class
(`Mutation.defect`: issue 28's memory safety, shared write race, numerics...), and the report
adds recall per class.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_static import kernel_check_command  # one home for finding the console script
from ecosystem import KERNELS_SUBDIR, PYTHON_SUBDIRS  # one home for the tree's layout
from kernel_check.clang.parse import CPP_SUFFIXES  # what kernel-check accepts as C++

MUTATIONS_DIR = Path(__file__).resolve().parent / "planting_mutations"
TESTS_SUBDIR = Path("test/registered/kernels")
# What is copied and planted: the kernels, the registered tests and the wrappers.
PLANTED_SUBDIRS = tuple(dict.fromkeys((KERNELS_SUBDIR, TESTS_SUBDIR, *PYTHON_SUBDIRS)))
CHECK_TIMEOUT_S = 1800


# -- what a mutation module declares -----------------------------------------------------------------
@dataclass(frozen=True)
class Planted:
    """A planted file: its whole new text and the 1-based line the rule must report -- or, with
    `last_line`, the lines from `line` to `last_line` where a new finding of the rule counts (a
    dropped guard is reported at whichever access it covered goes out of range)."""

    text: str
    line: int
    last_line: int | None = None


# The idiom of a mutation that plants into whatever form the file has.
ANY_IDIOM = "any"


@dataclass(frozen=True)
class Mutation:
    """One kind of violation: which rule must catch it, how to plant it into a file and the
    idiom of the real code it is planted into."""

    code: str
    name: str
    suffixes: tuple[str, ...]
    plant: Callable[[str], Planted | None]
    idiom: str = ANY_IDIOM
    # The class of defect (issue 28: memory safety, a shared write race, numerics...) the
    # planting is, for mutations that plant a defect rather than a breach of a convention.
    defect: str = ""
    # Files (paths in the tree) where the edit, checked by hand, breaks nothing (the planted
    # access stays in range, or the code it exposes never runs), each with the reason: such a
    # planting is left out of the recall and listed with its reason.
    harmless: tuple[tuple[str, str], ...] = ()


def line_of(text: str, offset: int) -> int:
    """The 1-based line holding `offset`."""
    return text.count("\n", 0, offset) + 1


def block_end(text: str, open_end: int, opening: str = "{", closing: str = "}") -> int:
    """The offset just past the `closing` bracket that closes the one ending at `open_end`
    (the end of the text when it is never closed)."""
    depth = 1
    for index in range(open_end, len(text)):
        depth += {opening: 1, closing: -1}.get(text[index], 0)
        if depth == 0:
            return index + 1
    return len(text)


def insert_after(text: str, pattern: str, new_line: str, *, flags: int = re.MULTILINE) -> Planted | None:
    """Insert `new_line` after the line holding the first match of `pattern`, indented like
    the line that follows it; the finding is expected on the inserted line."""
    match = re.search(pattern, text, flags)
    if match is None:
        return None
    lines = text.splitlines(keepends=True)
    anchor = line_of(text, match.end()) - 1  # 0-based index of the line holding the match's end
    following = lines[anchor + 1] if anchor + 1 < len(lines) else lines[anchor]
    indent = re.match(r"[ \t]*", following).group(0)
    lines.insert(anchor + 1, f"{indent}{new_line}\n")
    return Planted("".join(lines), anchor + 2)


def replace_first(text: str, pattern: str, replacement: str, *, flags: int = re.MULTILINE) -> Planted | None:
    """Replace the first match of `pattern` (a `re.sub` replacement); the finding is expected
    on the line where the match started."""
    match = re.search(pattern, text, flags)
    if match is None:
        return None
    planted = text[: match.start()] + match.expand(replacement) + text[match.end() :]
    return Planted(planted, line_of(text, match.start()))


def load_mutations(families: Iterable[str] | None) -> dict[str, list[Mutation]]:
    """The `MUTATIONS` of each family module (file stem), in name order."""
    wanted = set(families) if families else None
    found: dict[str, list[Mutation]] = {}
    for module_path in sorted(MUTATIONS_DIR.glob("*.py")):
        family = module_path.stem
        if module_path.name.startswith("_") or (wanted is not None and family not in wanted):
            continue
        spec = importlib.util.spec_from_file_location(f"planting_mutations.{family}", module_path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        found[family] = list(module.MUTATIONS)
    if wanted is not None and (unknown := wanted - found.keys()):
        raise SystemExit(f"{MUTATIONS_DIR}: no mutation module for {', '.join(sorted(unknown))}")
    return found


# -- choosing where to plant ------------------------------------------------------------------------
@dataclass
class Planting:
    family: str
    mutation: Mutation
    path: Path  # relative to the copied tree
    planted: Planted
    harmless: str = ""  # why the edit breaks nothing in this file (`Mutation.harmless`)
    findings_before: list[dict] = field(default_factory=list)
    findings_after: list[dict] = field(default_factory=list)


def candidate_files(root: Path) -> list[Path]:
    """The checked folders' files, relative to the copied tree, sorted."""
    folders = [root / sub for sub in PLANTED_SUBDIRS]
    return sorted(
        p.relative_to(root) for folder in folders if folder.is_dir() for p in folder.rglob("*") if p.is_file()
    )


def spread(items: list, count: int) -> list:
    """`count` items spread evenly over `items` (all of them when there are fewer)."""
    if len(items) <= count:
        return items
    step = len(items) / count
    return [items[int(i * step)] for i in range(count)]


def choose_plantings(
    root: Path,
    mutations: dict[str, list[Mutation]],
    per_mutation: int,
    codes: set[str] | None,
    unparsable: frozenset[Path] = frozenset(),
) -> list[Planting]:
    """Up to `per_mutation` plantings per mutation, never into a file that clang could not
    parse before anything was planted (no rule runs there: a miss would say nothing). A
    planting the mutation names harmless in its file keeps its place in the spread (the other
    files chosen stay the same) and says why (`Planting.harmless`)."""
    files = [path for path in candidate_files(root) if path not in unparsable]
    texts: dict[Path, str] = {}
    plantings: list[Planting] = []
    for family, family_mutations in mutations.items():
        for mutation in family_mutations:
            if codes is not None and mutation.code not in codes:
                continue
            sites = []
            for path in files:
                if not path.name.endswith(mutation.suffixes):
                    continue
                text = texts.setdefault(path, (root / path).read_text(encoding="utf-8", errors="replace"))
                planted = mutation.plant(text)
                if planted is not None and planted.text != text:
                    sites.append((path, planted))
            harmless = dict(mutation.harmless)
            plantings += [
                Planting(family, mutation, path, planted, harmless.get(path.as_posix(), ""))
                for path, planted in spread(sites, per_mutation)
            ]
    return plantings


def rounds_of(plantings: list[Planting]) -> list[list[Planting]]:
    """Group plantings so that no round plants the same file twice."""
    rounds: list[list[Planting]] = []
    for planting in plantings:
        home = next((r for r in rounds if all(p.path != planting.path for p in r)), None)
        if home is None:
            rounds.append(home := [])
        home.append(planting)
    return rounds


# -- running kernel-check ---------------------------------------------------------------------------
def check_files(root: Path, paths: list[Path], mode: str, cache: Path) -> dict[Path, list[dict]]:
    """`kernel-check` on exactly these files; findings by path relative to `root`."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as output:
        output_path = Path(output.name)
    args = [
        *map(str, paths),
        "--mode",
        mode,
        "--format",
        "json",
        "--output",
        str(output_path),
        "--cache-dir",
        str(cache),
        "--exit-zero",
        "--quiet",
    ]
    done = subprocess.run(kernel_check_command(args), cwd=root, capture_output=True, text=True, timeout=CHECK_TIMEOUT_S)
    if done.returncode != 0:
        raise SystemExit(f"kernel-check failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    findings: dict[Path, list[dict]] = {path: [] for path in paths}
    for finding in json.loads(output_path.read_text()):
        findings[_checked_path(finding["path"], paths)].append(finding)
    output_path.unlink()
    return findings


def _checked_path(reported: str, paths: list[Path]) -> Path:
    """Which checked file a report names: reports are relative to the project's root, which
    sits somewhere between the copied tree and the file."""
    matches = [p for p in paths if p.as_posix() == reported or p.as_posix().endswith("/" + reported)]
    if len(matches) != 1:
        raise SystemExit(f"kernel-check reported {reported!r}, which names none (or several) of the files checked")
    return matches[0]


def unparsable_files(root: Path, mode: str, cache: Path) -> frozenset[Path]:
    """The pristine tree's C++ files that kernel-check reports as KC000 (this also fills the
    cache the plantings' baseline runs reuse)."""
    cpp = [path for path in candidate_files(root) if path.suffix in CPP_SUFFIXES]
    findings = check_files(root, cpp, mode, cache)
    return frozenset(path for path, found in findings.items() if any(f["code"] == "KC000" for f in found))


def run_plantings(root: Path, plantings: list[Planting], mode: str, cache: Path, progress: bool) -> None:
    before = check_files(root, sorted({p.path for p in plantings}), mode, cache)
    rounds = rounds_of(plantings)
    for number, planting_round in enumerate(rounds, 1):
        originals = {p.path: (root / p.path).read_bytes() for p in planting_round}
        try:
            for planting in planting_round:
                (root / planting.path).write_text(planting.planted.text, encoding="utf-8")
            after = check_files(root, [p.path for p in planting_round], mode, cache)
        finally:
            for path, content in originals.items():
                (root / path).write_bytes(content)
        for planting in planting_round:
            planting.findings_before = before.get(planting.path, [])
            planting.findings_after = after.get(planting.path, [])
        if progress:
            print(f"round {number}/{len(rounds)}: {len(planting_round)} files", file=sys.stderr)


# -- judging and reporting --------------------------------------------------------------------------
def _keys(findings: list[dict]) -> Counter:
    return Counter((f["code"], f["message"]) for f in findings)


def _expected_hit(planting: Planting, new: Counter) -> dict | None:
    """The finding of the mutation's code on its line -- or, for a planting that names a range
    of lines, a finding in that range that is new (one there before counts for nothing)."""
    code, planted = planting.mutation.code, planting.planted
    if planted.last_line is None:
        return next((f for f in planting.findings_after if f["code"] == code and f["line"] == planted.line), None)
    in_range = (
        f for f in planting.findings_after if f["code"] == code and planted.line <= f["line"] <= planted.last_line
    )
    return next((f for f in in_range if new[(f["code"], f["message"])] > 0), None)


def judge(planting: Planting) -> dict:
    code, line = planting.mutation.code, planting.planted.line
    new = _keys(planting.findings_after) - _keys(planting.findings_before)
    hit = _expected_hit(planting, new)
    if hit is not None:
        new -= Counter({(hit["code"], hit["message"]): 1})
    last = planting.planted.last_line or line
    elsewhere = [f["line"] for f in planting.findings_after if f["code"] == code and not line <= f["line"] <= last]
    return {
        "family": planting.family,
        "code": code,
        "idiom": planting.mutation.idiom,
        "defect": planting.mutation.defect,
        "mutation": planting.mutation.name,
        "path": str(planting.path),
        "line": line,
        "last_line": planting.planted.last_line,
        "found": hit is not None,
        "found_line": hit["line"] if hit is not None else None,
        "extra": [{"code": c, "message": m} for (c, m), n in sorted(new.items()) for _ in range(n)],
        "same_code_other_lines": elsewhere,
    }


def _tally(results: list[dict], key: Callable[[dict], str]) -> dict[str, dict]:
    """Planted, found and clean counts of the results grouped by `key`, in key order."""
    rows: dict[str, dict] = {}
    for result in results:
        row = rows.setdefault(key(result), {"family": result["family"], "planted": 0, "found": 0, "clean": 0})
        row["planted"] += 1
        row["found"] += result["found"]
        row["clean"] += result["found"] and not result["extra"]
    return dict(sorted(rows.items()))


def summarize(results: list[dict]) -> dict[str, dict]:
    """Counts per code."""
    return _tally(results, lambda result: result["code"])


def summarize_idioms(results: list[dict]) -> dict[str, dict]:
    """Counts per code and idiom, keyed `CODE idiom`."""
    return _tally(results, lambda result: f"{result['code']} {result['idiom']}")


def summarize_defects(results: list[dict]) -> dict[str, dict]:
    """Counts per class of defect, over the plantings whose mutation names one."""
    return _tally([r for r in results if r.get("defect")], lambda result: result["defect"])


def _recall(found: int, planted: int) -> str:
    return f"{100 * found / planted:.0f}%" if planted else "-"


def _lines(result: dict) -> str:
    """The line a finding was expected on, or the range of them."""
    last = result.get("last_line")
    return f"{result['line']}-{last}" if last and last != result["line"] else str(result["line"])


def _elsewhere(result: dict) -> str:
    """Where a missed planting's code was reported instead, if anywhere in the file."""
    lines = result["same_code_other_lines"]
    return f" (reported at {lines})" if lines else ""


def markdown(summary: dict[str, dict], results: list[dict]) -> str:
    lines = ["| family | code | planted | found at line | clean | recall |", "|---|---|---:|---:|---:|---:|"]
    lines += [
        f"| {row['family']} | {code} | {row['planted']} | {row['found']} | {row['clean']} | "
        f"{_recall(row['found'], row['planted'])} |"
        for code, row in summary.items()
    ]
    lines += ["", "| code | idiom | planted | found at line | clean | recall |", "|---|---|---:|---:|---:|---:|"]
    lines += [
        f"| {key.split(' ', 1)[0]} | {key.split(' ', 1)[1]} | {row['planted']} | {row['found']} | {row['clean']} | "
        f"{_recall(row['found'], row['planted'])} |"
        for key, row in summarize_idioms(results).items()
    ]
    if defects := summarize_defects(results):
        lines += ["", "| defect class | planted | found | clean | recall |", "|---|---:|---:|---:|---:|"]
        lines += [
            f"| {defect} | {row['planted']} | {row['found']} | {row['clean']} | {recall} |"
            for defect, row in defects.items()
            for recall in [_recall(row["found"], row["planted"])]
        ]
    families: dict[str, list[int]] = {}
    for row in summary.values():
        totals = families.setdefault(row["family"], [0, 0])
        totals[0] += row["found"]
        totals[1] += row["planted"]
    lines += ["", "| family | recall |", "|---|---:|"]
    lines += [
        f"| {family} | {_recall(found, planted)} ({found}/{planted}) |"
        for family, (found, planted) in sorted(families.items())
    ]
    misses = [r for r in results if not r["found"]]
    extras = [r for r in results if r["extra"]]
    if misses:
        lines += ["", "Misses:"] + [
            f"- {r['code']} {r['mutation']} ({r['idiom']}): {r['path']}:{_lines(r)}{_elsewhere(r)}" for r in misses
        ]
    if extras:
        lines += ["", "Other new findings:"] + [
            f"- {r['code']} {r['mutation']}: {r['path']}: "
            + "; ".join(f"{e['code']} {e['message']}" for e in r["extra"])
            for r in extras
        ]
    return "\n".join(lines) + "\n"


def copy_tree(tree: Path, destination: Path) -> Path:
    """The checked folders of `tree` under `destination`, laid out as in a checkout."""
    kernels = tree / KERNELS_SUBDIR
    if not kernels.is_dir():
        raise SystemExit(f"{tree}: not an sglang checkout or extract (no {KERNELS_SUBDIR})")
    for sub in PLANTED_SUBDIRS:
        if (tree / sub).is_dir():
            shutil.copytree(tree / sub, destination / sub, symlinks=True)
    # An empty configuration marks the project root, as a checkout's `.git` does, so project
    # paths (`package-root`, `registered-tests-root`) are relative to the tree.
    (destination / "kernel-check.toml").write_text("")
    return destination


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tree", type=Path, help="an sglang checkout or extract (pinned commit: bench/ecosystem.py)")
    parser.add_argument("--family", action="append", help="a mutation module's name (repeatable; default: all)")
    parser.add_argument("--codes", help="comma-separated codes to plant (default: every mutation's)")
    parser.add_argument("--mode", default="hermetic", choices=("hermetic", "system"))
    parser.add_argument("--per-mutation", type=int, default=6, metavar="N", help="files planted per mutation")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write every planting's result here")
    args = parser.parse_args(argv)
    mutations = load_mutations(args.family)
    codes = set(args.codes.split(",")) if args.codes else None
    with tempfile.TemporaryDirectory(prefix="kc-planting-") as scratch:
        root = copy_tree(args.tree.resolve(), Path(scratch) / "tree")
        unparsable = unparsable_files(root, args.mode, Path(scratch) / "cache")
        chosen = choose_plantings(root, mutations, args.per_mutation, codes, unparsable)
        harmless = [p for p in chosen if p.harmless]
        plantings = [p for p in chosen if not p.harmless]
        if not plantings:
            raise SystemExit("no mutation found a place to plant in this tree")
        run_plantings(root, plantings, args.mode, Path(scratch) / "cache", progress=sys.stderr.isatty())
    results = [judge(p) for p in plantings]
    summary = summarize(results)
    print(f"Left out: {len(unparsable)} files that do not parse before planting (KC000).")
    print(f"Left out: {len(harmless)} plantings whose edit breaks nothing in their file (`Mutation.harmless`).")
    print("".join(f"- {p.mutation.code} {p.mutation.name}: {p.path}: {p.harmless}\n" for p in harmless))
    print(markdown(summary, results), end="")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "mode": args.mode,
                    "unparsable": sorted(map(str, unparsable)),
                    "harmless": [
                        {"code": p.mutation.code, "mutation": p.mutation.name, "path": str(p.path), "why": p.harmless}
                        for p in harmless
                    ],
                    "summary": summary,
                    "idioms": summarize_idioms(results),
                    "defects": summarize_defects(results),
                    "results": results,
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
