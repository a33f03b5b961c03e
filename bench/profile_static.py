#!/usr/bin/env python3
"""CPU time per stage of the static check, per file, in one process (no pool, no watchdog).

    python bench/profile_static.py TREE_OR_DIR                  # parse / extract / rules per file
    python bench/profile_static.py DIR --mode system --slowest 15  # and the files that cost most
    python bench/profile_static.py DIR --profile extract -n 30  # cProfile of one stage

Where `bench_static.py` times whole `kernel-check` processes, this splits one file's check
into its stages (`time.process_time`, so a busy machine's neighbours do not count): the
preamble builds (each in a child process, as the engine builds them: CPU of the children),
clang's own parse (`Index.parse` calls: one per file, more when a preamble was refused or
deviated), the preamble's checks around it (the rest of the parse stage), the model
extraction, and the rules; within the rules, the time spent in the KC4xx solver
(`solver.Session.check`, every query: building it in z3 and solving it), given per file as p50/p95/max.
Each file's parse is counted under the preamble tier it ended with (`project`, `external`,
`base`, `plain`). `--profile STAGE` prints the top functions
of that stage.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import resource
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

STAGES = ("parse", "extract", "rules")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tree", type=Path, help="the directory whose C++ files are checked (its configuration applies)")
    parser.add_argument("-n", "--files", type=int, default=0, help="only the first N files (0: all)")
    parser.add_argument(
        "--mode",
        default=None,
        choices=("auto", "system", "hermetic"),
        help="parse mode (default: the tree's configuration)",
    )
    parser.add_argument("--cache-dir", type=Path, help="preamble cache (default: a temporary directory)")
    parser.add_argument("--profile", choices=STAGES, help="print a cProfile of this stage")
    parser.add_argument("--top", type=int, default=30, help="functions shown by --profile")
    parser.add_argument("--slowest", type=int, default=10, help="list the N files that cost most")
    parser.add_argument(
        "--repeat", type=int, default=1, help="measure N times, report each stage's least total (a shared machine)"
    )
    args = parser.parse_args()
    from bench_static import kernel_files

    files = kernel_files(args.tree, args.tree)[: args.files or None]
    cache = args.cache_dir or Path(tempfile.mkdtemp(prefix="kc-profile-"))
    runs = [measure(files, args.tree, cache, args.profile, args.mode) for _ in range(max(1, args.repeat))]
    report(runs, len(files), args.slowest)
    if runs[-1]["profile"] is not None:
        pstats.Stats(runs[-1]["profile"]).sort_stats("tottime").print_stats(args.top)
    return 0


def report(runs: list[dict], count: int, slowest: int) -> None:
    totals = {stage: min(run["totals"][stage] for run in runs) for stage in (*STAGES, "clang")}
    last = runs[-1]
    print(
        f"{count} files; preamble builds: {len(last['builds'])}, "
        f"{sum(last['builds'].values()):.1f} CPU s ({', '.join(f'{t} {s:.1f}' for t, s in last['builds'].items())})"
    )
    print(
        f"CPU s in all: clang parse {totals['clang']:.1f}, preamble checks {totals['parse'] - totals['clang']:.1f}, "
        f"extract {totals['extract']:.1f}, rules {totals['rules']:.1f}; "
        f"total {sum(totals[s] for s in STAGES):.1f}"
    )
    print(
        "CPU ms per file: "
        + ", ".join(f"{s} {totals[s] / count * 1000:.1f}" for s in STAGES)
        + f" (clang's own parse {totals['clang'] / count * 1000:.1f})"
    )
    tiers = Counter(row["tier"] for row in last["rows"])
    for tier, n in tiers.most_common():
        rows = [row for row in last["rows"] if row["tier"] == tier]
        print(
            f"  {tier:8s} {n:4d} files: clang {sum(r['clang'] for r in rows):6.1f} s "
            f"(~{sum(r['clang'] for r in rows) / n * 1000:.0f} ms/file, {sum(r['parses'] for r in rows)} parses), "
            f"checks {sum(r['parse'] - r['clang'] for r in rows):5.1f} s, "
            f"extract {sum(r['extract'] for r in rows):5.1f} s, rules {sum(r['rules'] for r in rows):4.1f} s"
        )
    _report_solver(last["rows"])
    print(f"slowest {slowest} files (CPU s: clang / checks / extract / rules, tier):")
    for row in sorted(last["rows"], key=lambda r: -(r["parse"] + r["extract"] + r["rules"]))[:slowest]:
        print(
            f"  {row['parse'] + row['extract'] + row['rules']:6.2f}  {row['clang']:5.2f} / "
            f"{row['parse'] - row['clang']:5.2f} / {row['extract']:5.2f} / {row['rules']:5.2f}  "
            f"{row['tier']:8s} x{row['parses']} {row['path']}"
        )


def _report_solver(rows: list[dict]) -> None:
    """Solver CPU per file (issue 28's cost figure): over every file, and over those that asked."""
    spent = sorted(row["solver"] for row in rows)
    asked = sorted(row["solver"] for row in rows if row["queries"])
    if not asked:
        print("solver: no file asked the solver anything")
        return
    print(
        f"solver CPU s per file, all {len(spent)}: p50 {_quantile(spent, 0.5):.3f}, p95 {_quantile(spent, 0.95):.3f}, "
        f"max {spent[-1]:.3f}; the {len(asked)} that asked ({sum(r['queries'] for r in rows)} queries): "
        f"p50 {_quantile(asked, 0.5):.3f}, p95 {_quantile(asked, 0.95):.3f}; total {sum(spent):.1f}"
    )
    worst = max(rows, key=lambda row: row["solver"])
    print(f"  most solver time: {worst['solver']:.2f} s, {worst['queries']} queries, {worst['path']}")


def _quantile(ordered: list[float], q: float) -> float:
    """The nearest-rank quantile of an ascending list."""
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(files: list[Path], root: Path, cache: Path, profiled: str | None, mode: str | None) -> dict:
    from kernel_check.clang import parse as parse_module
    from kernel_check.clang.extract import extract
    from kernel_check.clang.parse import parse_file, resolve_settings
    from kernel_check.clang.preamble import PreambleCache
    from kernel_check.config import load_config
    from kernel_check.pipeline import RunOptions, _no_cycle_collection, _run_rules, compile_args
    from kernel_check.registry import load_rules
    from kernel_check.semantic import SemanticModel

    load_rules()
    config = load_config(root)
    settings = resolve_settings(
        mode or config.get("mode"), tuple(config.get("include-dirs")), tuple(config.get("defines")), config.get("arch")
    )
    options = RunOptions(config, settings)
    preamble = PreambleCache(cache / "preamble")
    builds: dict[str, float] = defaultdict(float)
    inputs = []
    for path in files:
        data = path.read_bytes()
        text = data.decode("utf-8", errors="replace")
        args = compile_args(path, settings)
        for recipe in preamble.recipes(path, data, args):  # builds: timed apart
            before = _children_cpu()
            preamble.get(recipe)
            builds[recipe.tier] += _children_cpu() - before
        inputs.append((path, text, data))
    index = parse_module.get_index()
    clang = {"seconds": 0.0, "calls": 0}
    original_parse = type(index).parse

    def timed_parse(self, *call_args, **kwargs):
        started = time.process_time()
        try:
            return original_parse(self, *call_args, **kwargs)
        finally:
            clang["seconds"] += time.process_time() - started
            clang["calls"] += 1

    type(index).parse = timed_parse
    from kernel_check import solver

    original_check = solver.Session.check
    solving = {"seconds": 0.0, "calls": 0}

    def timed_check(*call_args, **kwargs):
        started = time.process_time()
        try:
            return original_check(*call_args, **kwargs)
        finally:
            solving["seconds"] += time.process_time() - started
            solving["calls"] += 1

    solver.Session.check = timed_check  # every query goes through it (`solver.check` too)
    totals = dict.fromkeys((*STAGES, "clang"), 0.0)
    profile = cProfile.Profile() if profiled else None
    rows = []

    def timed(stage: str, fn, *call_args):
        if profile is not None and stage == profiled:
            profile.enable()
        started = time.process_time()
        value = fn(*call_args)
        spent = time.process_time() - started
        totals[stage] += spent
        if profile is not None and stage == profiled:
            profile.disable()
        return value, spent

    try:
        for path, text, data in inputs:
            with _no_cycle_collection():  # as the engine runs a file's pipeline
                clang_before, calls_before = clang["seconds"], clang["calls"]
                solver_before, queries_before = solving["seconds"], solving["calls"]
                unit, parse_s = timed("parse", parse_file, path, data, settings, preamble)
                model, extract_s = timed("extract", extract, unit, text, data, options.needs(path))
                semantic = SemanticModel(model)
                _, rules_s = timed("rules", _run_rules, semantic, path, config.relative(path), options)
            tier = unit.preamble.recipe.tier if unit.preamble is not None else "plain"
            rows.append(
                {
                    "path": config.relative(path),
                    "tier": tier,
                    "parse": parse_s,
                    "clang": clang["seconds"] - clang_before,
                    "parses": clang["calls"] - calls_before,
                    "extract": extract_s,
                    "rules": rules_s,
                    "solver": solving["seconds"] - solver_before,
                    "queries": solving["calls"] - queries_before,
                }
            )
            del unit, model, semantic
    finally:
        type(index).parse = original_parse
        solver.Session.check = original_check
    totals["clang"] = clang["seconds"]
    return {"totals": totals, "profile": profile, "rows": rows, "builds": dict(builds)}


if __name__ == "__main__":
    sys.exit(main())
