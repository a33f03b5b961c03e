#!/usr/bin/env python3
"""CPU time per stage of the static check, per file, in one process (no pool, no watchdog).

    python bench/profile_static.py TREE_OR_DIR                  # parse / extract / rules per file
    python bench/profile_static.py DIR --profile extract -n 30  # cProfile of one stage

Where `bench_static.py` times whole `kernel-check` processes, this splits one file's check
into its stages (`time.process_time`, so a busy machine's neighbours do not count): the
parse against the precompiled preamble (built first, untimed, in `--cache-dir`), the model
extraction, and the rules. `--profile STAGE` prints the top functions of that stage.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
import time
from pathlib import Path

from bench_static import kernel_files

STAGES = ("parse", "extract", "rules")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tree", type=Path, help="a tree (its csrc/ is checked when it has one) or a directory")
    parser.add_argument("-n", "--files", type=int, default=0, help="only the first N files (0: all)")
    parser.add_argument("--cache-dir", type=Path, help="preamble cache (default: a temporary directory)")
    parser.add_argument("--profile", choices=STAGES, help="print a cProfile of this stage")
    parser.add_argument("--top", type=int, default=30, help="functions shown by --profile")
    parser.add_argument("--repeat", type=int, default=1,
                        help="measure N times, report each stage's least total (a shared machine)")
    args = parser.parse_args()
    target = args.tree / "csrc" if (args.tree / "csrc").is_dir() else args.tree
    files = kernel_files(target)[: args.files or None]
    cache = args.cache_dir or Path(tempfile.mkdtemp(prefix="kc-profile-"))
    runs = [measure(files, args.tree, cache, args.profile) for _ in range(max(1, args.repeat))]
    totals = {stage: min(run[0][stage] for run in runs) for stage in STAGES}
    profile = runs[-1][1]
    count = len(files)
    print(f"{count} files; CPU ms per file: " + ", ".join(f"{s} {totals[s] / count * 1000:.1f}" for s in STAGES)
          + f"; total {sum(totals.values()) / count * 1000:.1f}")
    if profile is not None:
        pstats.Stats(profile).sort_stats("tottime").print_stats(args.top)
    return 0


def measure(files: list[Path], root: Path, cache: Path,
            profiled: str | None) -> tuple[dict[str, float], cProfile.Profile | None]:
    from kernel_check.clang.extract import extract
    from kernel_check.clang.parse import parse_file, resolve_settings
    from kernel_check.clang.preamble import PreambleCache
    from kernel_check.config import load_config
    from kernel_check.engine import RunOptions, _compile_args, _no_cycle_collection, _run_rules
    from kernel_check.registry import Language, load_rules

    load_rules()
    config = load_config(root)
    settings = resolve_settings(config.get("mode"), (), tuple(config.get("defines")), config.get("arch"))
    options = RunOptions(config, settings)
    preamble = PreambleCache(cache / "preamble")
    inputs = []
    for path in files:
        data = path.read_bytes()
        text = data.decode("utf-8", errors="replace")
        preamble.prefetch(path, data, _compile_args(path, settings))  # builds: not timed
        inputs.append((path, text, data))
    totals = dict.fromkeys(STAGES, 0.0)
    profile = cProfile.Profile() if profiled else None

    def timed(stage: str, fn, *call_args):
        if profile is not None and stage == profiled:
            profile.enable()
        started = time.process_time()
        value = fn(*call_args)
        totals[stage] += time.process_time() - started
        if profile is not None and stage == profiled:
            profile.disable()
        return value

    for path, text, data in inputs:
        with _no_cycle_collection():  # as the engine runs a file's pipeline
            unit = timed("parse", parse_file, path, data, settings, preamble)
            model = timed("extract", extract, unit, text, data)
            timed("rules", _run_rules, Language.CPP, model, path, config.relative(path), options)
    return totals, profile


if __name__ == "__main__":
    sys.exit(main())
