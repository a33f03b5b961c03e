"""The `kernel-check` command line (`SUBCOMMANDS_HELP` below is what `--help` lists).

Exit codes: 0 clean, 1 findings that fail the gate, 2 usage, configuration or internal error,
130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from . import __version__, codes
from .clang.parse import resolve_settings
from .cli_common import (
    OneLineParser,
    UsageError,
    add_baseline_options,
    add_selection_options,
    emit,
    policy_from_args,
    positive_int,
    refuse_output_over_inputs,
    use_color,
    user_errors,
)
from .config import Config, load_config, print_warnings, real_path
from .discover import discover
from .paths import display_path
from .progress import is_terminal
from .registry import all_rules, get_rule

if TYPE_CHECKING:  # imported where a command needs them: `--version`, `rules` need none
    from .cache_session import WarmSessions
    from .engine import CacheOptions, RunOptions
    from .filter import Selection
    from .finalize import Policy
    from .finding import Finding
    from .fix import FileFix
    from .progress import Progress
    from .results import FileResult

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT: what a shell reports for a command that Ctrl-C ended
HARNESS_COMMANDS = ("build", "test", "sanitize", "spec", "confirm")
SUBCOMMANDS_HELP = """\
commands:
  kernel-check [PATH ...]        static check (default: the current directory)
  kernel-check rules             list every rule code
  kernel-check rule CODE         print a rule's documentation
  kernel-check clean [--all]     remove this project's cached results (--all: the whole cache)
  kernel-check build PATH ...    compile every declared instantiation with nvcc (KC600-KC602)
  kernel-check test PATH ...     the dynamic harness on a GPU (docs/harness.md)
  kernel-check sanitize -- CMD   run a command under compute-sanitizer
  kernel-check spec new FILE.cuh draft a kernel spec from the code (docs/harness.md)
  kernel-check spec check PATH   compile every instantiation of the specs, no GPU
  kernel-check confirm PATH      run static findings' witnesses on the GPU (docs/confirm.md)
  kernel-check server            language server for editors (docs/editors.md)

`kernel-check COMMAND --help` describes a command's options."""
PROGRESS_DELAY_S = 2.0  # a run shorter than this shows no progress line


def build_check_parser() -> argparse.ArgumentParser:
    from .report import FORMATS

    parser = OneLineParser(
        prog="kernel-check",
        description="Static checks for JIT-style CUDA kernels.",
        epilog=SUBCOMMANDS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="*", type=Path, help="files or directories (default: .)")
    parser.add_argument("--version", action="version", version=f"kernel-check {__version__}")
    output = parser.add_argument_group("output")
    output.add_argument(
        "--output-format",
        "--format",
        dest="format",
        default="text",
        choices=FORMATS,
        help="report format; `concise` is one line per finding",
    )
    output.add_argument("--output", "-o", type=Path, metavar="FILE", help="write the report to FILE")
    output.add_argument(
        "--statistics",
        action="store_true",
        help="counts per code instead of findings: a table, or a JSON list with "
        "`--output-format json` (as in ruff, not with sarif, github or junit)",
    )
    output.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="ANSI colors in text output; `auto`: on a terminal (not TERM=dumb), or when FORCE_COLOR "
        "is set, never when NO_COLOR is set",
    )
    output.add_argument("--quiet", "-q", action="store_true", help="no summary line in text output")
    output.add_argument(
        "--stdin-filename",
        type=Path,
        metavar="PATH",
        help="check standard input as the contents of PATH (config, includes and "
        "per-file-ignores as for PATH; the file itself is not read or written)",
    )
    rules = parser.add_argument_group("rule selection")
    add_selection_options(rules)
    rules.add_argument("--strict", action="store_true", help="warnings fail the run")
    config = parser.add_argument_group("configuration")
    config.add_argument("--config", type=Path, help="a pyproject.toml or kernel-check TOML file")
    config.add_argument("--mode", choices=("auto", "system", "hermetic"), help="parse mode")
    config.add_argument(
        "-I",
        "--include-dir",
        action="append",
        default=[],
        dest="include_dirs",
        metavar="DIR",
        help="an extra include directory, after config `include-dirs` (repeatable)",
    )
    config.add_argument(
        "-D",
        "--define",
        action="append",
        default=[],
        dest="defines",
        metavar="NAME[=VALUE]",
        help="a preprocessor definition, after config `defines` (repeatable)",
    )
    config.add_argument(
        "--force-exclude",
        action="store_true",
        help="apply `exclude` to files passed explicitly too (what pre-commit needs)",
    )
    speed = parser.add_argument_group("speed")
    speed.add_argument(
        "--jobs",
        "-j",
        type=positive_int,
        default=None,
        metavar="N",
        help="worker processes (default: the CPUs this process may use)",
    )
    speed.add_argument(
        "--cache-dir",
        type=Path,
        metavar="DIR",
        help="cache directory, one for every project (default: $KERNEL_CHECK_CACHE_DIR, else "
        "$XDG_CACHE_HOME/kernel-check, else ~/.cache/kernel-check)",
    )
    speed.add_argument(
        "--no-cache", action="store_true", help="neither read nor write the cache (results and precompiled preambles)"
    )
    adoption = parser.add_argument_group("adoption (docs/adopting.md)")
    adoption.add_argument(
        "--diff",
        metavar="BASE",
        help="only findings on lines changed since git revision BASE (`BASE...`: "
        "since its merge base with HEAD), plus file-level findings of changed files",
    )
    add_baseline_options(adoption)
    fixes = parser.add_mutually_exclusive_group()
    fixes.add_argument("--fix", action="store_true", help="apply safe fixes, then report what remains")
    fixes.add_argument(
        "--fix-diff",
        action="store_true",
        help="print the safe fixes as a unified diff and write nothing (exit 1 when there "
        "is one); not `--diff`, which limits the report to changed lines",
    )
    return parser


@dataclass
class CheckRun:
    """What one static run produced, before reporting."""

    policy: Policy
    results: list[FileResult]
    fixed: int = 0  # fixes `--fix` applied
    planned: dict[str, FileFix] | None = None  # what `--fix-diff` would change

    @property
    def config(self) -> Config:
        return self.policy.config


def _load(args: argparse.Namespace, buffer: bytes | None = None) -> tuple[Config, list[Path], dict[Path, bytes]]:
    """The configuration, the files to check, and the buffers that stand for files (stdin,
    or `buffer` when given)."""
    paths = [args.stdin_filename] if args.stdin_filename is not None else args.paths or [Path(".")]
    start = next((p for p in (paths[0], paths[0].parent) if p.exists()), Path("."))
    config = load_config(start, args.config)
    print_warnings(config)
    config = config.with_overrides(mode=args.mode, strict=True if args.strict else None)
    if args.stdin_filename is None:
        return config, discover(paths, config, force_exclude=args.force_exclude), {}
    return config, *_stdin_buffer(args, config, buffer)


def _stdin_buffer(
    args: argparse.Namespace, config: Config, buffer: bytes | None = None
) -> tuple[list[Path], dict[Path, bytes]]:
    """`--stdin-filename PATH`: standard input (or `buffer`, the language server's document)
    checked as PATH's contents (an editor's buffer)."""
    from .discover import SOURCE_SUFFIXES, is_source
    from .globs import matches_any

    path = args.stdin_filename
    if args.paths and args.paths != [Path("-")]:
        raise UsageError("--stdin-filename checks standard input: give no PATH with it (or `-`)")
    for flag, given in (("--fix", args.fix), ("--diff", args.diff), ("--write-baseline", args.write_baseline)):
        if given:
            hint = "; --fix-diff shows the fixes" if flag == "--fix" else ""
            raise UsageError(f"{flag} cannot be combined with --stdin-filename{hint}")
    if not is_source(path):
        raise UsageError(
            f"--stdin-filename {path}: not a C++/CUDA or Python source (expected one of {', '.join(SOURCE_SUFFIXES)})"
        )
    data = sys.stdin.buffer.read() if buffer is None else buffer
    if args.force_exclude and matches_any(config.relative(path), config.get("exclude")):
        return [], {}
    return [path], {path: data}


def _run_options(config: Config, args: argparse.Namespace, selection: Selection) -> RunOptions:
    from .engine import RunOptions

    include_dirs = config.include_dirs() + tuple(str(real_path(Path(d))) for d in args.include_dirs)
    defines = tuple(config.get("defines")) + tuple(args.defines)
    settings = resolve_settings(config.get("mode"), include_dirs, defines, config.get("arch"))
    return RunOptions(
        config,
        settings,
        selection,
        cache=_cache_options(args, config),
        jobs=args.jobs or _available_cpus(),
    )


def _cache_options(args: argparse.Namespace, config: Config) -> CacheOptions:
    from .cache import cache_root, mark_cache_root, preamble_strategy, static_root
    from .engine import CacheOptions

    try:
        preamble = preamble_strategy()
    except ValueError as error:
        raise UsageError(str(error)) from None
    if args.no_cache:
        return CacheOptions(None, results=False, preamble=preamble)
    mark_cache_root(cache_root(args.cache_dir))
    return CacheOptions(static_root(args.cache_dir), preamble=preamble, max_bytes=_store_cap(config))


def _store_cap(config: Config) -> int:
    """The preamble store's cap: `KERNEL_CHECK_CACHE_MAX_SIZE` when set, else `cache-max-size`."""
    from .cache import MAX_SIZE_ENV, parse_size

    given = os.environ.get(MAX_SIZE_ENV)
    if not given:
        return parse_size(config.get("cache-max-size"))  # checked when the file was read
    try:
        return parse_size(given)
    except ValueError as error:
        raise UsageError(f"{MAX_SIZE_ENV}: {error}") from None


def _available_cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def run_check(args: argparse.Namespace, buffer: bytes | None = None, sessions: WarmSessions | None = None) -> CheckRun:
    """The static run the flags ask for. With `--stdin-filename`, `buffer` stands for standard
    input; `sessions` keeps the caches warm from one call to the next (`kernel-check server`)."""
    from .engine import run_static
    from .registry import load_rules

    load_rules()
    config, files, buffers = _load(args, buffer)
    policy = policy_from_args(args, config, codes.STATIC)
    refuse_output_over_inputs(args.output, [*args.paths, *files], policy)
    if policy.diff is not None:
        files = [f for f in files if policy.diff.touches(f)]  # findings elsewhere are outside the diff
    options = _run_options(config, args, policy.selection)
    progress = _progress(args)
    try:
        results = _with_buffer_lines(run_static(files, options, progress, buffers, sessions=sessions), buffers)
    finally:
        progress.close()
    run = CheckRun(policy, results)
    if not (args.fix or args.fix_diff):
        return run
    from .finalize import finalize
    from .fix import apply_fixes, plan_fixes

    # fix what the run reports: not findings the baseline hides or outside --diff (KC000s
    # stay in, so that the fixer keeps away from files that did not fully parse)
    reported = set(finalize(results, policy).findings)
    fixable = [f for r in results for f in r.findings if f in reported or f.code == codes.PARSE_ERROR]
    if args.fix_diff:
        run.planned = plan_fixes(fixable, {str(path): data for path, data in buffers.items()})
        return run
    fixed = apply_fixes(fixable)
    if fixed:
        rerun = {r.path: r for r in run_static([Path(p) for p in fixed], options)}
        run.results = [rerun.get(r.path, r) for r in results]
        run.fixed = sum(fixed.values())
    return run


def _progress(args: argparse.Namespace) -> Progress:
    """A live line on stderr for a long run: only when a person watches (stderr and the
    report's destination are terminals) and the report is for a person."""
    from .progress import Progress
    from .report import HUMAN_FORMATS

    watched = (
        args.format in HUMAN_FORMATS
        and args.stdin_filename is None
        and is_terminal(sys.stderr)
        and (args.output is not None or is_terminal(sys.stdout))
    )
    return Progress(sys.stderr, live=watched, log=False, delay=PROGRESS_DELAY_S)


def _with_buffer_lines(results: list[FileResult], buffers: dict[Path, bytes]) -> list[FileResult]:
    """Findings in a buffer (stdin) carry their source line: the report cannot read it from disk."""
    if not buffers:
        return results
    from dataclasses import replace

    from .model import split_lines

    for result in results:
        data = buffers.get(Path(result.path))
        if data is not None:
            lines = split_lines(data.removeprefix(b"\xef\xbb\xbf").decode("utf-8", errors="replace"))
            result.findings = [
                replace(f, source_line=lines[f.line - 1]) if 1 <= f.line <= len(lines) else f for f in result.findings
            ]
    return results


def command_check(argv: Sequence[str]) -> int:
    from .finalize import finalize, record_baseline
    from .report import HUMAN_FORMATS, Summary, render

    args = build_check_parser().parse_args(list(argv))
    _check_statistics_format(args)
    run = run_check(args)
    if args.write_baseline is not None:
        return record_baseline(args.write_baseline, run.results, run.policy)
    if run.planned is not None:
        return _fix_diff(run, args)
    verdict = finalize(run.results, run.policy)
    summary = Summary(
        files_checked=len(run.results),
        suppressed=verdict.suppressed,
        baseline_hidden=verdict.baseline_hidden,
        baseline_fixed=verdict.baseline_fixed,
        fixed=run.fixed,
    )
    report = render(
        _with_confirmations(verdict.findings, run.config.root, args.cache_dir),
        args.format,
        root=run.config.root,
        statistics=args.statistics,
        summary=summary,
        color=use_color(args.color, args.output),
        statuses=verdict.statuses,
    )
    if args.quiet and args.format in HUMAN_FORMATS:
        report = "\n".join(line for line in report.splitlines() if not line.startswith(("Found ", "All checks")))
    emit(report, args.output)
    return verdict.exit_status(args.exit_zero)


def _with_confirmations(findings: list[Finding], root: Path, cache_dir: Path | None) -> list[Finding]:
    """Each finding `kernel-check confirm` confirmed on the GPU (a valid record in the
    project's confirmations file) with the verdict at the end of its message."""
    from .confirmations import annotate, load, store_path

    return annotate(findings, load(store_path(root, cache_dir)), root)


def _check_statistics_format(args: argparse.Namespace) -> None:
    """`--statistics` in a format that has no place for counts is refused before the run:
    a SARIF or JUnit file must stay one, and GitHub annotations need a file and line."""
    from .report import STATISTICS_FORMATS

    if args.statistics and args.format not in STATISTICS_FORMATS:
        raise UsageError(
            f"--statistics cannot be combined with --output-format {args.format} (use {', '.join(STATISTICS_FORMATS)})"
        )


def _fix_diff(run: CheckRun, args: argparse.Namespace) -> int:
    """`--fix-diff`: the diff on stdout (or `-o`), a count on stderr; 1 when there is a fix."""
    from .fix import unified_diff

    planned = run.planned or {}
    emit(unified_diff(planned, display_path).rstrip("\n"), args.output)
    count = sum(fix.count for fix in planned.values())
    print(
        f"Would fix {count} {'finding' if count == 1 else 'findings'} in {len(planned)} "
        f"{'file' if len(planned) == 1 else 'files'}."
        if count
        else "No fixes available.",
        file=sys.stderr,
    )
    return EXIT_FINDINGS if count and not args.exit_zero else EXIT_CLEAN


def _rule_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="kernel-check rule", description="Print a rule's documentation.")
    parser.add_argument("code", help="a rule code, e.g. KC101 (`kernel-check rules` lists them)")
    return parser


def _rules_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="kernel-check rules", description="List every rule code.")
    parser.add_argument(
        "--output-format",
        "--format",
        dest="format",
        choices=("text", "json"),
        default="text",
        help="a table for people, or JSON for tools (default text)",
    )
    return parser


def _clean_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="kernel-check clean",
        description="Remove this project's cached results, or with --all the whole cache "
        "directory (only one that kernel-check created), and say what that freed.",
    )
    parser.add_argument(
        "path",
        nargs="?",
        type=Path,
        default=Path("."),
        help="a file or directory of the project (default: .), found as a check finds it",
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="remove the whole cache directory: every project's results, the preamble store "
        "all projects share and the JIT builds",
    )
    parser.add_argument(
        "--cache-dir",
        type=Path,
        metavar="DIR",
        help="the cache directory (default: $KERNEL_CHECK_CACHE_DIR, else "
        "$XDG_CACHE_HOME/kernel-check, else ~/.cache/kernel-check)",
    )
    return parser


def _server_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="kernel-check server",
        description="A language server (LSP over standard input/output) for editors: the static "
        "check's findings on open .cuh/.cu/.py documents as you type, with quick fixes "
        "and suppressions (docs/editors.md). Needs pygls (the `server` extra).",
    )
    parser.add_argument(
        "--stdio",
        action="store_true",
        help="talk over standard input/output: the only transport, so the flag changes nothing "
        "(language clients pass it)",
    )
    parser.add_argument(
        "--cache-dir",
        type=Path,
        metavar="DIR",
        help="cache directory (default: $KERNEL_CHECK_CACHE_DIR, else ~/.cache/kernel-check)",
    )
    return parser


def all_parsers() -> dict[str, argparse.ArgumentParser]:
    """Every command's parser, by command (`check` is the static check): what --help shows."""
    from .harness.cli import subcommand_parsers

    return {
        "check": build_check_parser(),
        "rule": _rule_parser(),
        "rules": _rules_parser(),
        "clean": _clean_parser(),
        "server": _server_parser(),
        **subcommand_parsers(),
    }


def command_rule(argv: Sequence[str]) -> int:
    args = _rule_parser().parse_args(list(argv))
    registered = get_rule(args.code)
    if registered is None:
        raise UsageError(f"unknown rule code '{args.code}' (see `kernel-check rules`)")
    meta = registered.meta
    fixable = " (fixable with --fix)" if meta.fixable else ""
    print(f"# {meta.code} {meta.name}\n\nSeverity: {meta.severity.value}{fixable}. {meta.summary}.\n")
    print(meta.doc)
    return EXIT_CLEAN


def command_rules(argv: Sequence[str]) -> int:
    args = _rules_parser().parse_args(list(argv))
    rules = [r.meta for r in all_rules()]
    if args.format == "json":
        import json

        print(
            json.dumps(
                [
                    {
                        "code": m.code,
                        "name": m.name,
                        "severity": m.severity.value,
                        "stage": m.language.value,
                        "fixable": m.fixable,
                        "summary": m.summary,
                    }
                    for m in rules
                ],
                indent=2,
            )
        )
        return EXIT_CLEAN
    for meta in rules:
        marker = "*" if meta.fixable else " "
        print(f"{meta.code} {marker} {meta.severity.value:<7} {meta.language.value:<7} {meta.name}: {meta.summary}")
    return EXIT_CLEAN


def command_clean(argv: Sequence[str]) -> int:
    from .cache import clean_cache, clean_project, format_size, preamble_store, static_root, tree_size
    from .config import find_project_root

    args = _clean_parser().parse_args(list(argv))
    if args.all:
        removed = clean_cache(args.cache_dir)
        if removed is None:
            print("nothing to remove")
            return EXIT_CLEAN
        parts = ", ".join(f"{what} {format_size(size)}" for what, size in removed.parts.items() if size)
        print(f"freed {format_size(removed.size)}: removed {removed.path}" + (f" ({parts})" if parts else ""))
        return EXIT_CLEAN
    if not args.path.exists():
        raise UsageError(f"{args.path}: no such file or directory")
    project, _ = find_project_root(args.path)
    removed = clean_project(project, args.cache_dir)
    print(
        f"freed {format_size(removed.size)}: removed the cached results of {project} ({removed.path})"
        if removed
        else f"nothing to remove: no cached results of {project}"
    )
    kept = tree_size(preamble_store(static_root(args.cache_dir)))
    if kept:
        print(
            f"kept {format_size(kept)}: the preamble store all projects share (`kernel-check clean --all` removes it)"
        )
    return EXIT_CLEAN


def check_document(path: Path, data: bytes, sessions: WarmSessions, flags: Sequence[str] = ()) -> list[Finding]:
    """What `kernel-check --stdin-filename PATH --force-exclude FLAGS` reports for `data`: the
    language server's check of an open document (`serve` is given it), its caches kept warm
    in `sessions`."""
    from .finalize import finalize

    args = build_check_parser().parse_args(["--stdin-filename", str(path), "--force-exclude", *flags])
    run = run_check(args, buffer=data, sessions=sessions)
    return finalize(run.results, run.policy).findings


def command_server(argv: Sequence[str]) -> int:
    args = _server_parser().parse_args(list(argv))
    try:
        from .server import serve
    except ImportError as error:
        if (error.name or "").partition(".")[0] not in ("pygls", "lsprotocol"):
            raise
        raise UsageError("the language server needs pygls: pip install 'pygls>=2,<3' (the `server` extra)") from None
    flags = ["--cache-dir", str(args.cache_dir)] if args.cache_dir is not None else []
    return serve(functools.partial(check_document, flags=flags))


def command_harness(argv: Sequence[str]) -> int:
    from .harness.cli import main as harness_main

    return harness_main(list(argv), static_findings)


def static_findings(
    paths: Sequence[Path], selected: Sequence[str], cache_dir: Path | None
) -> tuple[Path, list[Finding]]:
    """The project root, and the static findings of the `selected` codes under `paths` as the
    static check reports them (configuration, suppressions and baseline applied): what
    `kernel-check confirm` confirms."""
    from .finalize import finalize

    flags = [*map(str, paths), "--select", ",".join(selected)]
    if cache_dir is not None:
        flags += ["--cache-dir", str(cache_dir)]
    run = run_check(build_check_parser().parse_args(flags))
    return run.config.root, [f for f in finalize(run.results, run.policy).findings if f.code in selected]


SUBCOMMANDS: dict[str, Callable[[Sequence[str]], int]] = {
    "rule": command_rule,
    "rules": command_rules,
    "clean": command_clean,
    "check": command_check,
    "server": command_server,
}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in HARNESS_COMMANDS:
            return command_harness(argv)
        if argv and argv[0] in SUBCOMMANDS:
            return SUBCOMMANDS[argv[0]](argv[1:])
        return command_check(argv)
    except KeyboardInterrupt:  # the cache stays good: its entries are written atomically
        print("kernel-check: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader went away (`kernel-check rules | head`): stop quietly, and point stdout at
        # /dev/null so the interpreter's final flush does not raise the same error again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_ERROR
    except Exception as error:  # never a traceback for users; KERNEL_CHECK_DEBUG=1 shows it
        if isinstance(error, user_errors()):
            print(f"kernel-check: error: {error}", file=sys.stderr)
            return EXIT_ERROR
        if os.environ.get("KERNEL_CHECK_DEBUG"):
            raise
        print(f"kernel-check: internal error: {type(error).__name__}: {error}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
