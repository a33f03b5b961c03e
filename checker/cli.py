"""The `kernel-check` command line.

    kernel-check [PATH ...] [options]      static check (default: the current directory)
    kernel-check rule CODE                 print a rule's documentation
    kernel-check rules                     list every code
    kernel-check clean                     remove the cache directory
    kernel-check build|test|sanitize ...   the build check and the dynamic harness

Exit codes: 0 clean, 1 findings that fail the gate, 2 usage, configuration or internal error.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from . import __version__
from .clang.parse import ParseConfigError, resolve_settings
from .config import Config, ConfigError, load_config
from .discover import DiscoveryError, discover
from .finding import Finding, Severity
from .registry import all_rules, get_rule

if TYPE_CHECKING:  # imported where a command needs them: `--version`, `rules` need none
    from .baseline import Baseline
    from .diff import DiffScope
    from .engine import FileResult, RunOptions

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
HARNESS_COMMANDS = ("build", "test", "sanitize")


class UsageError(Exception):
    """A bad command line; argparse-style one-line message and exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, no usage dump
        raise UsageError(message)


def _comma_list(value: str) -> list[str]:
    return [item.strip().upper() for item in value.split(",") if item.strip()]


def build_check_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kernel-check", description="Static checks for JIT-style CUDA kernels.")
    parser.add_argument("paths", nargs="*", type=Path, help="files or directories (default: .)")
    parser.add_argument("--version", action="version", version=f"kernel-check {__version__}")
    output = parser.add_argument_group("output")
    output.add_argument("--format", default="text", choices=("text", "json", "sarif", "github", "junit"))
    output.add_argument("--output", "-o", type=Path, help="write the report to FILE")
    output.add_argument("--statistics", action="store_true", help="counts per code instead of findings")
    output.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    output.add_argument("--quiet", "-q", action="store_true", help="no summary line in text output")
    rules = parser.add_argument_group("rule selection")
    rules.add_argument("--select", type=_comma_list, default=[], help="codes or prefixes to enable")
    rules.add_argument("--ignore", type=_comma_list, default=[], help="codes or prefixes to disable")
    rules.add_argument("--strict", action="store_true", help="warnings fail the run")
    rules.add_argument("--exit-zero", action="store_true", help="exit 0 even with findings")
    config = parser.add_argument_group("configuration")
    config.add_argument("--config", type=Path, help="a pyproject.toml or kernel-check TOML file")
    config.add_argument("--mode", choices=("auto", "system", "hermetic"), help="parse mode")
    config.add_argument("-I", "--include-dir", action="append", default=[], dest="include_dirs", metavar="DIR",
                        help="an extra include directory, after config `include-dirs` (repeatable)")
    config.add_argument("-D", "--define", action="append", default=[], dest="defines", metavar="NAME[=VALUE]",
                        help="a preprocessor definition, after config `defines` (repeatable)")
    config.add_argument("--force-exclude", action="store_true",
                        help="apply `exclude` to files passed explicitly too (what pre-commit needs)")
    speed = parser.add_argument_group("speed")
    speed.add_argument("--jobs", "-j", type=_positive_int, default=None, metavar="N",
                       help="worker processes (default: the CPUs this process may use)")
    speed.add_argument("--cache-dir", type=Path, metavar="DIR",
                       help="cache directory (default: $KERNEL_CHECK_CACHE_DIR, else ~/.cache/kernel-check)")
    speed.add_argument("--no-cache", action="store_true",
                       help="neither read nor write the cache (results and precompiled preambles)")
    adoption = parser.add_argument_group("adoption (docs/adopting.md)")
    adoption.add_argument("--diff", metavar="BASE",
                          help="only findings on lines changed since git revision BASE (`BASE...`: "
                               "since its merge base with HEAD), plus file-level findings of changed files")
    adoption.add_argument("--baseline", type=Path, metavar="FILE",
                          help="hide the findings recorded in FILE (default: config `baseline`)")
    adoption.add_argument("--write-baseline", type=Path, metavar="FILE",
                          help="record the current findings in FILE, then exit 0")
    parser.add_argument("--fix", action="store_true", help="apply safe fixes, then report what remains")
    return parser


@dataclass
class CheckRun:
    """What one static run produced, before reporting."""

    config: Config
    results: list[FileResult]
    diff: DiffScope | None = None
    baseline: Baseline | None = None

    @property
    def findings(self) -> list[Finding]:
        return [f for r in self.results for f in r.findings]

    @property
    def suppressed(self) -> int:
        return sum(r.suppressed for r in self.results)


def _load(args: argparse.Namespace) -> tuple[Config, list[Path]]:
    paths = args.paths or [Path(".")]
    config = load_config(paths[0] if paths[0].exists() else Path("."), args.config)
    config = config.with_overrides(mode=args.mode, strict=True if args.strict else None)
    return config, discover(paths, config, force_exclude=args.force_exclude)


def _run_options(config: Config, args: argparse.Namespace) -> RunOptions:
    from .engine import RunOptions

    include_dirs = config.include_dirs() + tuple(str(Path(d).resolve()) for d in args.include_dirs)
    defines = tuple(config.get("defines")) + tuple(args.defines)
    settings = resolve_settings(config.get("mode"), include_dirs, defines, config.get("arch"))
    return RunOptions(config, settings, tuple(args.select), tuple(args.ignore),
                      cache=_cache_options(args), jobs=args.jobs or _available_cpus())


def _cache_options(args: argparse.Namespace) -> CacheOptions:
    from .cache import static_root
    from .engine import CacheOptions

    preamble = os.environ.get("KERNEL_CHECK_PREAMBLE", "union")
    if preamble not in ("union", "exact", "off"):
        raise UsageError(f"KERNEL_CHECK_PREAMBLE must be union, exact or off, got {preamble!r}")
    if args.no_cache:
        return CacheOptions(None, results=False, preamble=preamble)
    return CacheOptions(static_root(args.cache_dir), preamble=preamble)


def _available_cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}")
    return number


def run_check(args: argparse.Namespace) -> CheckRun:
    from .engine import run_static
    from .registry import load_rules

    load_rules()
    config, files = _load(args)
    diff, baseline = _adoption_inputs(args, config)
    if diff is not None:
        files = [f for f in files if diff.touches(f)]  # findings elsewhere are outside the diff
    options = _run_options(config, args)
    results = run_static(files, options)
    if args.fix:
        from .fix import apply_fixes

        # fix what the run reports: not findings the baseline hides or outside --diff (KC000s
        # stay in, so that apply_fixes keeps away from files that did not fully parse)
        reported = set(_adopt(CheckRun(config, results, diff, baseline), args)[0])
        fixed = apply_fixes([f for r in results for f in r.findings if f in reported or f.code == "KC000"])
        if fixed:
            changed = [Path(p) for p in fixed]
            rerun = {r.path: r for r in run_static(changed, options)}
            results = [rerun.get(r.path, r) for r in results]
    return CheckRun(config, results, diff, baseline)


def _adoption_inputs(args: argparse.Namespace, config: Config) -> tuple[DiffScope | None, Baseline | None]:
    """Validate codes, then load `--diff` and the baseline before the (slow) run."""
    from .baseline import configured_path, load_baseline
    from .diff import load_diff
    from .filter import unknown_selector

    for origin, codes in (("--select", args.select), ("--ignore", args.ignore)):
        if bad := next((c for c in codes if unknown_selector(c)), None):
            raise UsageError(f"{origin}: unknown rule code or prefix '{bad}' (see `kernel-check rules`)")
    configured = {key: config.get(key) for key in ("select", "ignore", "severity")}
    configured.update({f"per-file-ignores '{glob}'": codes for glob, codes in config.get("per-file-ignores").items()})
    for key, codes in configured.items():
        exact = key == "severity"  # a severity names one code, not a prefix
        if bad := next((c for c in codes if (get_rule(c) is None if exact else unknown_selector(c))), None):
            raise ConfigError(f"{config.source or config.root}: [tool.kernel-check] {key}: "
                              f"unknown rule code {'' if exact else 'or prefix '}'{bad}' (see `kernel-check rules`)")
    if getattr(args, "write_baseline", None) is not None and getattr(args, "diff", None):
        raise UsageError("--write-baseline records every finding; it cannot be combined with --diff")
    diff = load_diff(args.diff, (args.paths or [Path(".")])[0]) if getattr(args, "diff", None) else None
    path = None if getattr(args, "write_baseline", None) else configured_path(getattr(args, "baseline", None), config)
    return diff, (load_baseline(path) if path is not None else None)


def _coverage(run: CheckRun, args: argparse.Namespace):
    from .baseline import coverage
    from .filter import Selection

    selection = Selection(run.config, list(args.select), list(args.ignore))
    return coverage(run.config, run.results, args.paths or [Path(".")], selection.enabled)


def _write_baseline(run: CheckRun, args: argparse.Namespace) -> int:
    from .baseline import write_baseline

    from .baseline import is_not_checked

    written, kept = write_baseline(args.write_baseline, run.findings, run.config, _coverage(run, args))
    unchecked = sorted({run.config.relative(Path(f.path)) for f in run.findings if is_not_checked(f)})
    if unchecked:
        print(f"kernel-check: warning: {len(unchecked)} {'file was' if len(unchecked) == 1 else 'files were'} "
              f"not checked (timeout, crash or out of memory), so the baseline keeps their old entries: "
              f"{', '.join(unchecked)}; rerun --write-baseline (a larger file-timeout helps on a busy machine)",
              file=sys.stderr)
    entries, files = len(written.entries), len({key.path for key in written.entries})
    note = f"; kept {kept} of files this run did not check" if kept else ""
    print(f"kernel-check: wrote {entries} baseline {'entry' if entries == 1 else 'entries'} "
          f"({written.total} {'finding' if written.total == 1 else 'findings'} in {files} "
          f"{'file' if files == 1 else 'files'}) to {args.write_baseline}{note}")
    return EXIT_CLEAN


def _adopt(run: CheckRun, args: argparse.Namespace) -> tuple[list[Finding], int, int]:
    """The baseline hides accepted findings (over whole files), then `--diff` narrows to lines."""
    findings, hidden, fixed = run.findings, 0, 0
    if run.baseline is not None:
        match = run.baseline.match(findings, run.config, _coverage(run, args))
        findings, hidden, fixed = match.new, match.hidden, len(match.fixed)
    if run.diff is not None:
        findings = run.diff.filter(findings)
    return findings, hidden, fixed


def gate_fails(findings: list[Finding], strict: bool) -> bool:
    """Errors always fail; warnings only when strict; info never."""
    threshold = Severity.WARNING.rank if strict else Severity.ERROR.rank
    return any(f.severity.rank >= threshold for f in findings)


def _use_color(choice: str, output: Path | None) -> bool:
    if choice != "auto":
        return choice == "always"
    return output is None and sys.stdout.isatty() and "NO_COLOR" not in os.environ


def _emit(text: str, output: Path | None) -> None:
    if output is None:
        sys.stdout.write(text + ("\n" if text else ""))
    else:
        try:
            output.write_text(text + "\n", encoding="utf-8")
        except OSError as error:
            raise UsageError(f"{output}: cannot write the report: {error.strerror or error}") from None


def command_check(argv: Sequence[str]) -> int:
    from .report import Summary, render

    args = build_check_parser().parse_args(list(argv))
    run = run_check(args)
    if getattr(args, "write_baseline", None) is not None:
        return _write_baseline(run, args)
    findings, hidden, fixed = _adopt(run, args)
    summary = Summary(files_checked=len(run.results), suppressed=run.suppressed,
                      baseline_hidden=hidden, baseline_fixed=fixed)
    report = render(findings, args.format, root=run.config.root, statistics=args.statistics,
                    summary=summary, color=_use_color(args.color, args.output))
    if args.quiet and args.format == "text":
        report = "\n".join(line for line in report.splitlines() if not line.startswith(("Found ", "All checks")))
    _emit(report, args.output)
    if args.exit_zero:
        return EXIT_CLEAN
    return EXIT_FINDINGS if gate_fails(findings, bool(run.config.get("strict"))) else EXIT_CLEAN


def command_rule(argv: Sequence[str]) -> int:
    parser = _Parser(prog="kernel-check rule", description="Print a rule's documentation.")
    parser.add_argument("code")
    args = parser.parse_args(list(argv))
    registered = get_rule(args.code)
    if registered is None:
        raise UsageError(f"unknown rule code '{args.code}' (see `kernel-check rules`)")
    meta = registered.meta
    fixable = " (fixable with --fix)" if meta.fixable else ""
    print(f"# {meta.code} {meta.name}\n\nSeverity: {meta.severity.value}{fixable}. {meta.summary}.\n")
    print(meta.doc)
    return EXIT_CLEAN


def command_rules(argv: Sequence[str]) -> int:
    parser = _Parser(prog="kernel-check rules", description="List every rule code.")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    args = parser.parse_args(list(argv))
    rules = [r.meta for r in all_rules()]
    if args.format == "json":
        import json

        print(json.dumps([{"code": m.code, "name": m.name, "severity": m.severity.value,
                           "stage": m.language.value, "fixable": m.fixable, "summary": m.summary}
                          for m in rules], indent=2))
        return EXIT_CLEAN
    for meta in rules:
        marker = "*" if meta.fixable else " "
        print(f"{meta.code} {marker} {meta.severity.value:<7} {meta.language.value:<7} {meta.name}: {meta.summary}")
    return EXIT_CLEAN


def command_clean(argv: Sequence[str]) -> int:
    from .cache import clean_cache

    parser = _Parser(prog="kernel-check clean", description="Remove kernel-check's caches.")
    parser.add_argument("--cache-dir", type=Path)
    args = parser.parse_args(list(argv))
    removed = clean_cache(args.cache_dir)
    print(f"removed {removed}" if removed else "nothing to remove")
    return EXIT_CLEAN


def command_harness(argv: Sequence[str]) -> int:
    from .harness.cli import main as harness_main

    return harness_main(list(argv))


SUBCOMMANDS: dict[str, Callable[[Sequence[str]], int]] = {
    "rule": command_rule,
    "rules": command_rules,
    "clean": command_clean,
    "check": command_check,
}


def _user_errors() -> tuple[type[Exception], ...]:
    """The errors that are the user's to fix: one line and exit 2, no traceback. (Imported
    here, on the error path: the `--diff` and baseline modules load where they are used.)"""
    from .baseline import BaselineError
    from .diff import DiffError

    return UsageError, ConfigError, DiscoveryError, ParseConfigError, DiffError, BaselineError


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in HARNESS_COMMANDS:
            return command_harness(argv)
        if argv and argv[0] in SUBCOMMANDS:
            return SUBCOMMANDS[argv[0]](argv[1:])
        return command_check(argv)
    except KeyboardInterrupt:
        print("kernel-check: interrupted", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:
        # the reader went away (`kernel-check rules | head`): stop quietly, and point stdout at
        # /dev/null so the interpreter's final flush does not raise the same error again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_ERROR
    except Exception as error:  # never a traceback for users; KERNEL_CHECK_DEBUG=1 shows it
        if isinstance(error, _user_errors()):
            print(f"kernel-check: error: {error}", file=sys.stderr)
            return EXIT_ERROR
        if os.environ.get("KERNEL_CHECK_DEBUG"):
            raise
        print(f"kernel-check: internal error: {type(error).__name__}: {error}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
