#!/usr/bin/env python3
"""The findings of one code to review by hand: all of them up to N, else N sampled evenly.

    kernel-check TREE --format json --no-cache > findings.json
    python bench/precision_sample.py findings.json KC201                # 30, with source around each
    python bench/precision_sample.py findings.json KC201 --n 15 --context 6 --root TREE

Sampling is deterministic: the findings of the code sorted by (path, line, column, message),
then every (count / N)-th one, so a rerun on the same report shows the same sample and a
reviewer can cite a finding by its sample number. Relative paths in the report are read
from `--root` (default: the current directory).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def sample_evenly(findings: list[dict], count: int) -> list[dict]:
    """All of `findings` when there are at most `count`, else `count` spread evenly over them."""
    ordered = sorted(findings, key=lambda f: (f["path"], f["line"], f.get("column", 0), f["message"]))
    if len(ordered) <= count:
        return ordered
    return [ordered[index * len(ordered) // count] for index in range(count)]


def source_excerpt(path: Path, line: int, context: int) -> str:
    """Lines `line - context` .. `line + context` of `path`, numbered, the finding's line marked."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as error:
        return f"    (cannot read {path}: {error.strerror})"
    first, last = max(1, line - context), min(len(lines), line + context)
    return "\n".join(f"{'>' if number == line else ' '}{number:6} | {lines[number - 1]}"
                     for number in range(first, last + 1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path, help="a `kernel-check --format json` report")
    parser.add_argument("code", help="the rule code to sample, e.g. KC201")
    parser.add_argument("--n", type=int, default=30, help="sample size (default 30)")
    parser.add_argument("--context", type=int, default=4, help="source lines shown each side (default 4)")
    parser.add_argument("--root", type=Path, default=Path("."), help="where relative report paths are read from")
    args = parser.parse_args(argv)
    try:
        findings = [f for f in json.loads(args.report.read_text()) if f["code"] == args.code]
    except (OSError, ValueError, KeyError, TypeError) as error:
        print(f"{args.report}: not a kernel-check JSON report ({error})", file=sys.stderr)
        return 2
    chosen = sample_evenly(findings, args.n)
    print(f"{args.code}: {len(findings)} findings, {len(chosen)} shown")
    for number, finding in enumerate(chosen, 1):
        print(f"\n#{number} {finding['path']}:{finding['line']}: {finding['message']}")
        print(source_excerpt(args.root / finding["path"], finding["line"], args.context))
    return 0


if __name__ == "__main__":
    sys.exit(main())
