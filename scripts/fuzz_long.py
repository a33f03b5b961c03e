#!/usr/bin/env python3
"""The long fuzz profile of the static pipeline (the quick one runs with the tests).

    python3 scripts/fuzz_long.py --cases 10000 --jobs 2

Cases are deterministic: case N of a profile and seed is always the same input, so a
failure is replayed with `--start N --cases 1`. Prints progress, then the cases, the
crashes and invariant failures (grouped by kind), the time-outs and the slowest case;
the files of every failing case are kept under --crash-dir. Exit status 1 when any case
failed. See tests/fuzz/cases.py for the invariants and tests/fuzz/mutate.py for the
mutation operators.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fuzz.cases import PROFILES
from fuzz.runner import run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=10_000, help="how many cases (default 10000)")
    parser.add_argument("--start", type=int, default=0, help="first case index (replay: --start N --cases 1)")
    parser.add_argument("--jobs", "-j", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--profile", choices=sorted(PROFILES), default="long")
    parser.add_argument("--seed", type=int, help="override the profile's seed")
    parser.add_argument("--crash-dir", type=Path, help="where failing cases are kept (default: a temp dir)")
    parser.add_argument("--json", type=Path, help="also write the summary as JSON here")
    parser.add_argument("--every", type=int, default=250, help="progress line every N cases")
    parser.add_argument(
        "--replay",
        type=Path,
        metavar="SUMMARY_JSON",
        help="run only the failing cases of an earlier --json summary (same profile and seed)",
    )
    args = parser.parse_args(argv)

    profile = PROFILES[args.profile]
    if args.seed is not None:
        profile = dataclasses.replace(profile, seed=args.seed)
    crash_dir = args.crash_dir or Path(tempfile.mkdtemp(prefix="kernel-check-fuzz-crashes-"))
    crash_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()

    def progress(report, outcome) -> None:
        if outcome.problems:
            print(f"FAIL {outcome.label} ({outcome.seconds:.2f} s): {outcome.signatures[0]}", flush=True)
        if report.cases % args.every == 0:
            print(
                f"[{time.perf_counter() - started:7.0f} s] {report.cases}/{args.cases} cases, "
                f"{len(report.failures)} failing, {len(report.timeouts)} timed out, slowest "
                f"{report.slowest.seconds:.1f} s",
                flush=True,
            )

    indices: list[int] = list(range(args.start, args.start + args.cases))
    if args.replay is not None:
        earlier = json.loads(args.replay.read_text())
        indices = sorted(int(label.split()[0].lstrip("#")) for label in earlier["failing_cases"])
        args.cases = len(indices)
        print(f"fuzz: replaying the {len(indices)} failing cases of {args.replay}", flush=True)
    print(
        f"fuzz: profile {profile.name}, seed {profile.seed}, {len(indices)} cases "
        f"({indices[0] if indices else '-'}..{indices[-1] if indices else '-'}), "
        f"{args.jobs} jobs, crashes kept in {crash_dir}",
        flush=True,
    )
    report = run(profile, indices, jobs=args.jobs, crash_dir=crash_dir, progress=progress)
    print(report.summary(), flush=True)
    if args.json is not None:
        slowest = report.slowest
        args.json.write_text(
            json.dumps(
                {
                    "profile": profile.name,
                    "seed": profile.seed,
                    "start": args.start,
                    "cases": report.cases,
                    "seconds": round(report.seconds, 1),
                    "cpu_seconds": round(report.cpu, 1),
                    "failures": len(report.failures),
                    "new_failures": len(report.new_failures),
                    "timeouts": len(report.timeouts),
                    "failure_kinds": {
                        sig: {
                            "count": n,
                            "known": report.known_of[sig].where if report.known_of[sig] else None,
                            "first": report.first_of[sig],
                        }
                        for sig, n in report.signatures.most_common()
                    },
                    "failing_cases": [o.label for o in report.failures],
                    "slowest": {"case": slowest.label, "seconds": round(slowest.seconds, 2)} if slowest else None,
                    "codes": dict(report.codes),
                    "kinds": dict(report.kinds),
                    "crash_dir": str(crash_dir),
                },
                indent=2,
            )
            + "\n"
        )
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
