"""Draw the precision-review sample from a kernel-check JSON report.

For every code: all of its findings when it has at most `--size` of them, else `--size` of them
taken evenly through the list sorted by (path, line, column): index `i * n // size`. The same
report always gives the same sample, so a review can be rerun and compared.

    python bench/precision_sample.py report.json --root TREE [--codes KC101,KC110] [--context 2]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path


def sample(findings: list[dict], size: int) -> list[dict]:
    """All findings when there are at most `size`, else `size` of them spread evenly."""
    ordered = sorted(findings, key=lambda f: (f["path"], f["line"], f["column"]))
    if len(ordered) <= size:
        return ordered
    return [ordered[i * len(ordered) // size] for i in range(size)]


def _source_lines(root: Path, finding: dict, context: int) -> list[str]:
    try:
        lines = (root / finding["path"]).read_text(errors="replace").splitlines()
    except OSError:
        return []
    first = max(finding["line"] - context, 1)
    last = min(finding["line"] + context, len(lines))
    return [f"{'>' if n == finding['line'] else ' '}{n:6} {lines[n - 1]}" for n in range(first, last + 1)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="`kernel-check --format json` output")
    parser.add_argument("--root", type=Path, required=True, help="the directory the report's paths are relative to")
    parser.add_argument("--codes", default="", help="comma-separated codes (default: every code in the report)")
    parser.add_argument("--size", type=int, default=30)
    parser.add_argument("--context", type=int, default=1, help="source lines shown around each finding")
    args = parser.parse_args(argv)
    by_code: dict[str, list[dict]] = defaultdict(list)
    for finding in json.loads(args.report.read_text()):
        by_code[finding["code"]].append(finding)
    wanted = [c for c in args.codes.split(",") if c] or sorted(by_code)
    for code in wanted:
        picked = sample(by_code.get(code, []), args.size)
        print(f"## {code}: {len(by_code.get(code, []))} fired, {len(picked)} reviewed")
        for number, finding in enumerate(picked, start=1):
            print(f"[{code} #{number}] {finding['path']}:{finding['line']}:{finding['column']}: {finding['message']}")
            print("\n".join(_source_lines(args.root, finding, args.context)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
