#!/usr/bin/env python3
"""Ecosystem check: kernel-check on a pinned real kernel tree, as a user runs it.

    python bench/ecosystem.py /path/to/sglang                      # both modes, report in bench/ecosystem-out/
    python bench/ecosystem.py /path/to/sglang --compare OLD.json   # also: what changed since OLD
    python bench/ecosystem.py /path/to/sglang --modes hermetic --output-dir /tmp/eco

The tree is sglang's JIT kernels (`python/sglang/kernels/jit/` of a checkout; a directory
that itself holds `include/sgl_kernel/` is taken as is). The pinned commit is
`PINNED_COMMIT` below; get it once (this script never downloads anything, and none of that
tree is copied into this repository):

    git clone https://github.com/froststeam/sglang && git -C sglang checkout 382343f860c7df8dc43ecefd7902c940d81c99a9
    # or, from a bare mirror:  mkdir sglang && git --git-dir=MIRROR archive 382343f860c7 | tar -x -C sglang

For each mode (`hermetic`, `system`) the installed `kernel-check` console script checks the
kernel directory twice with `--format json` into a fresh cache directory: cold (the cache
empty) and warm (the same command again, nothing changed). Each run is one child process:
wall seconds, CPU seconds and peak resident memory come from its `wait4` rusage (the child
and the workers it waited for). The report (`ecosystem.json` and `ecosystem.md`) holds the
file counts, the KC000 findings per mode grouped by their first error, the findings per
code, and with `--compare` the findings that are new or gone since an earlier report, per
code and file. A KC000 whose first error is a missing third-party header (`THIRD_PARTY`:
headers that only an `include-dirs` entry can provide) is counted apart: the parse-health
rate is over the `.cuh`/`.cu` files whose includes can be resolved at all.

In a checkout (not a bare kernel directory) the Python side is checked too, once (Python
rules do not depend on the parse mode): the registered tests and benchmarks
(`test/registered/kernels/`) and the wrappers (`python/sglang/kernels/ops/`), with
`--select KC5`, paths relative to the tree so that `package-root` and
`registered-tests-root` apply as in a checkout. Its findings per code are the report's
`python` entry.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_static import kernel_check_command, run_timed  # one home for the timing
from kernel_check.results import FileStatus  # the JSON report's `file_status`

PINNED_COMMIT = "382343f860c7df8dc43ecefd7902c940d81c99a9"
KERNELS_SUBDIR = Path("python/sglang/kernels/jit")
# The Python side a KC5xx rule reads, besides the kernel directory's own helpers.
PYTHON_SUBDIRS = (Path("test/registered/kernels"), Path("python/sglang/kernels/ops"))
MODES = ("hermetic", "system")
KERNEL_SUFFIXES = (".cuh", ".cu")  # the files the parse-health target counts
# Header prefixes that no CUDA install or hermetic prelude provides: only `include-dirs` can.
THIRD_PARTY = ("cutlass/", "cute/", "cublasdx", "ATen/", "c10/", "torch/", "hip/", "rocm")
MISSING_HEADER_RE = re.compile(r"'([^']+)' (?:file )?not found")
PREFIX_RE = re.compile(r"^clang could not parse this file: ")
MORE_RE = re.compile(r" \(and \d+ more\)$")


# -- running kernel-check ---------------------------------------------------------------------------
def kernels_dir(tree: Path) -> Path:
    """The JIT kernel directory of a checkout, or `tree` itself when it is one."""
    candidate = tree / KERNELS_SUBDIR
    if candidate.is_dir():
        return candidate
    if (tree / "include" / "sgl_kernel").is_dir():
        return tree
    raise SystemExit(f"{tree}: neither an sglang checkout ({KERNELS_SUBDIR}) nor a kernel directory")


def tree_commit(tree: Path) -> str | None:
    """The checked-out commit, when `tree` is a git work tree (an extract has none)."""
    done = subprocess.run(["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def check_once(
    kernels: Path, mode: str, cache: Path, output: Path, extra: list[str], paths: list[str] | None = None
) -> dict:
    """One `kernel-check` process in `kernels` over `paths` (default: all of it): its figures
    and the findings it reported."""
    args = [
        *(paths or [str(kernels)]),
        "--mode",
        mode,
        "--format",
        "json",
        "--output",
        str(output),
        "--cache-dir",
        str(cache),
        "--exit-zero",
        "--quiet",
        *extra,
    ]
    run = run_timed(kernel_check_command(args), env=None, cwd=kernels)
    figures = {
        "wall_s": round(run["seconds"], 2),
        "cpu_s": round(run["cpu"], 2),
        "peak_rss_mb": round(run["process_rss_mb"], 1),
        "tree_pss_mb": round(run["tree_rss_mb"], 1),
    }
    return {"figures": figures, "findings": json.loads(output.read_text())}


def source_files(kernels: Path) -> list[str]:
    """The C++/CUDA files the CLI checks there (its own discovery), relative to `kernels`."""
    from kernel_check.config import load_config
    from kernel_check.discover import discover, is_python

    files = discover([kernels], load_config(kernels))
    return sorted(str(p.relative_to(kernels)) for p in files if not is_python(p))


# -- the report ---------------------------------------------------------------------------------------
def first_error(finding: dict) -> str:
    """A KC000's first clang error (or its whole message when it is not a clang one)."""
    return MORE_RE.sub("", PREFIX_RE.sub("", finding["message"]))


def missing_header(finding: dict) -> str | None:
    """The header a KC000 reports as not found, if that is its first error."""
    match = MISSING_HEADER_RE.search(first_error(finding))
    return match.group(1) if match else None


def is_third_party(header: str | None) -> bool:
    return header is not None and header.startswith(THIRD_PARTY)


def mode_report(findings: list[dict], kernels: Path, files: list[str]) -> dict:
    """Counts for one mode: KC000 per cause, findings per code, every finding by file.

    A file the run did not check (it ran past `file-timeout`, crashed) is counted apart: its
    KC000 says nothing about whether it parses."""
    relative = [dict(f, path=_relative(f["path"], kernels)) for f in findings]
    not_checked = sorted({f["path"] for f in relative if f["file_status"] == FileStatus.NOT_CHECKED.value})
    parse_errors = [f for f in relative if f["code"] == "KC000" and f["path"] not in not_checked]
    causes: dict[str, list[str]] = {}
    for finding in parse_errors:
        causes.setdefault(first_error(finding), []).append(finding["path"])
    kernel_files = [f for f in files if f.endswith(KERNEL_SUFFIXES)]
    unresolvable = sorted({f["path"] for f in parse_errors if is_third_party(missing_header(f))})
    failing_kernels = sorted({f["path"] for f in parse_errors if f["path"].endswith(KERNEL_SUFFIXES)})
    resolvable = [f for f in kernel_files if f not in unresolvable and f not in not_checked]
    failing_resolvable = [f for f in failing_kernels if f not in unresolvable]
    return {
        "kc000_files": len({f["path"] for f in parse_errors}),
        "not_checked_files": not_checked,
        "kc000_kernel_files": len(failing_kernels),
        "unresolvable_kernel_files": len([f for f in unresolvable if f.endswith(KERNEL_SUFFIXES)]),
        "resolvable_kernel_files": len(resolvable),
        "kc000_resolvable_kernel_files": len(failing_resolvable),
        "kc000_rate_resolvable": round(len(failing_resolvable) / len(resolvable), 4) if resolvable else 0.0,
        "kc000_causes": dict(sorted(causes.items(), key=lambda item: (-len(item[1]), item[0]))),
        "per_code": dict(sorted(Counter(f["code"] for f in relative).items())),
        "findings": sorted(
            ({k: f[k] for k in ("path", "line", "code", "message")} for f in relative),
            key=lambda f: (f["path"], f["line"], f["code"], f["message"]),
        ),
    }


def python_report(tree: Path, workdir: Path, extra: list[str]) -> dict | None:
    """KC5xx over the checkout's registered tests and wrappers (None for a bare kernel directory).

    The paths go relative to the tree and the configuration is an empty file outside it, so
    that each file's project path is the tree-relative one, as in a checkout's root (an
    extract has no `.git` to mark that root)."""
    dirs = [str(d) for d in PYTHON_SUBDIRS if (tree / d).is_dir()]
    if not dirs:
        return None
    config = workdir / "python" / "kernel-check.toml"
    config.parent.mkdir()
    config.write_text("")
    run = check_once(
        tree,
        MODES[0],
        workdir / "cache-python",
        workdir / "python.json",
        [*extra, "--select", "KC5", "--config", str(config)],
        paths=dirs,
    )
    findings = sorted(
        ({k: f[k] for k in ("path", "line", "code", "message")} for f in run["findings"]),
        key=lambda f: (f["path"], f["line"], f["code"], f["message"]),
    )
    return {"dirs": dirs, "per_code": dict(sorted(Counter(f["code"] for f in findings).items())), "findings": findings}


def _relative(path: str, kernels: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(kernels.resolve()))
    except ValueError:
        return path


def compare(old: dict, new: dict) -> dict:
    """Per mode: findings new or gone since `old`, as {code: {file: [messages]}}.

    Findings are matched by file, code and message (not line: an edit above a finding
    moves it without changing it)."""
    result = {}
    for mode in new["modes"]:
        before = Counter(_key(f) for f in old.get("modes", {}).get(mode, {}).get("findings", []))
        after = Counter(_key(f) for f in new["modes"][mode]["findings"])
        result[mode] = {"new": _by_code_and_file(after - before), "gone": _by_code_and_file(before - after)}
    return result


def _key(finding: dict) -> tuple[str, str, str]:
    return finding["code"], finding["path"], finding["message"]


def _by_code_and_file(keys: Counter) -> dict[str, dict[str, list[str]]]:
    grouped: dict[str, dict[str, list[str]]] = {}
    for (code, path, message), count in sorted(keys.items()):
        grouped.setdefault(code, {}).setdefault(path, []).extend([message] * count)
    return grouped


# -- the markdown summary --------------------------------------------------------------------------
def render_markdown(report: dict) -> str:
    modes = report["modes"]
    lines = [
        f"Tree: `{report['tree']['kernels']}` (commit {report['tree']['commit'] or 'unknown: not a git checkout'}"
        f"; pinned {PINNED_COMMIT[:12]}), {report['files']['cpp']} C++/CUDA files, "
        f"{report['files']['kernels']} of them `.cuh`/`.cu`. kernel-check {report['tool']}.",
        "",
        "| mode | KC000 files | KC000 `.cuh`/`.cu` | needs a third-party header"
        " | KC000 rate (resolvable `.cuh`/`.cu`) | cold wall s | cold CPU s | warm wall s | peak RSS MB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for mode, data in modes.items():
        cold, warm = data["cold"], data["warm"]
        lines.append(
            f"| {mode} | {data['kc000_files']} | {data['kc000_kernel_files']} | "
            f"{data['unresolvable_kernel_files']} | {data['kc000_resolvable_kernel_files']} of "
            f"{data['resolvable_kernel_files']} = {100 * data['kc000_rate_resolvable']:.1f}% | "
            f"{cold['wall_s']} | {cold['cpu_s']} | {warm['wall_s']} | "
            f"{max(cold['peak_rss_mb'], warm['peak_rss_mb'])} |"
        )
    codes = sorted({code for data in modes.values() for code in data["per_code"]})
    lines += ["", "Findings per code:", "", "| code | " + " | ".join(modes) + " |", "|---|" + "---:|" * len(modes)]
    lines += [
        f"| {code} | " + " | ".join(str(d["per_code"].get(code, 0)) for d in modes.values()) + " |" for code in codes
    ]
    for mode, data in modes.items():
        lines += ["", f"KC000 in {mode} mode, by first error:", ""]
        lines += [
            f"- {len(paths)}: {cause} ({', '.join(paths[:3])}{', ...' if len(paths) > 3 else ''})"
            for cause, paths in data["kc000_causes"].items()
        ] or ["- none"]
        if data["not_checked_files"]:
            lines.append(f"- not checked (past `file-timeout`, not counted above): {len(data['not_checked_files'])}")
    if report.get("python"):
        python = report["python"]
        lines += [
            "",
            f"Python side (KC5xx, once: no parse mode) over {', '.join(f'`{d}`' for d in python['dirs'])}:",
            "",
            "| code | findings |",
            "|---|---:|",
        ]
        lines += [f"| {code} | {count} |" for code, count in python["per_code"].items()] or ["| none | 0 |"]
    if "compare" in report:
        lines += ["", f"Compared with `{report['compare']['against']}`:"]
        for mode, change in report["compare"]["modes"].items():
            for kind in ("new", "gone"):
                for code, files in change[kind].items():
                    lines.append(
                        f"- {mode}, {kind} {code}: "
                        + "; ".join(f"{path} ({len(messages)})" for path, messages in files.items())
                    )
        if not any(change[kind] for change in report["compare"]["modes"].values() for kind in ("new", "gone")):
            lines.append("- no finding new or gone")
    return "\n".join(lines) + "\n"


# -- main ------------------------------------------------------------------------------------------
def build_report(tree: Path, modes: list[str], extra: list[str], workdir: Path) -> dict:
    kernels = kernels_dir(tree)
    files = source_files(kernels)
    version = subprocess.run(kernel_check_command(["--version"]), capture_output=True, text=True).stdout.strip()
    report: dict = {
        "tool": version,
        "tree": {"kernels": str(kernels), "commit": tree_commit(tree)},
        "files": {"cpp": len(files), "kernels": len([f for f in files if f.endswith(KERNEL_SUFFIXES)])},
        "modes": {},
    }
    for mode in modes:
        cache = workdir / f"cache-{mode}"  # fresh: the first run is cold, the second warm
        cold = check_once(kernels, mode, cache, workdir / f"{mode}-cold.json", extra)
        warm = check_once(kernels, mode, cache, workdir / f"{mode}-warm.json", extra)
        data = mode_report(cold["findings"], kernels, files)
        data["cold"], data["warm"] = cold["figures"], warm["figures"]
        data["warm_same_findings"] = mode_report(warm["findings"], kernels, files)["findings"] == data["findings"]
        report["modes"][mode] = data
        print(
            f"{mode}: KC000 on {data['kc000_files']} files, cold {data['cold']['wall_s']} s, "
            f"warm {data['warm']['wall_s']} s",
            file=sys.stderr,
        )
    report["python"] = python_report(tree, workdir, extra)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tree", type=Path, help="an sglang checkout or extract (pinned commit: see --help)")
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated parse modes (default: both)")
    parser.add_argument(
        "--output-dir",
        type=Path,
        default=Path(__file__).resolve().parent / "ecosystem-out",
        help="where ecosystem.json and ecosystem.md go",
    )
    parser.add_argument("--compare", type=Path, metavar="OLD.json", help="an earlier report to diff against")
    parser.add_argument("--jobs", type=int, help="--jobs for kernel-check (default: its default)")
    parser.add_argument(
        "--file-timeout",
        type=float,
        metavar="SECONDS",
        help="kernel-check's per-file bound (default: its default; raise it on a loaded machine)",
    )
    args = parser.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    if not modes or any(m not in MODES for m in modes):
        parser.error(f"--modes takes {', '.join(MODES)}")
    old = json.loads(args.compare.read_text()) if args.compare else None
    with tempfile.TemporaryDirectory(prefix="kc-ecosystem-") as workdir:
        extra = ["--jobs", str(args.jobs)] if args.jobs else []
        if args.file_timeout:
            config = Path(workdir) / "kernel-check.toml"
            config.write_text(f"file-timeout = {args.file_timeout}\n")
            extra += ["--config", str(config)]
        report = build_report(args.tree.resolve(), modes, extra, Path(workdir))
    if old is not None:
        report["compare"] = {"against": str(args.compare), "modes": compare(old, report)}
    args.output_dir.mkdir(parents=True, exist_ok=True)
    (args.output_dir / "ecosystem.json").write_text(json.dumps(report, indent=1) + "\n")
    summary = render_markdown(report)
    (args.output_dir / "ecosystem.md").write_text(summary)
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
