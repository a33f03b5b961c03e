"""``kernel-check test|build|sanitize|spec|confirm``: the harness's command line.

``src/kernel_check/cli.py`` dispatches these subcommands to ``main(argv)`` (argv[0] is the
subcommand; ``confirm``, confirm.py, gets the static check handed in too). Exit status: 0
clean, 1 findings (errors; warnings too with ``--strict``; for ``confirm``, a confirmed one),
2 usage or internal error (no nvcc, no GPU, a broken spec) or a ``test`` run that
``--max-time`` stopped before it finished, 128 + the signal for one that SIGINT (130, Ctrl-C)
or SIGTERM (143) stopped (what finished is still reported). Ctrl-C in the other commands
is 130 too (``kernel_check.cli.main``).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fnmatch
import os
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from ..baseline import BaselineError
from ..build import (
    NVCC_MISSING,
    BuildTarget,
    build_all,
    build_findings,
    ensure_arch_for_compile_only,
    environment_failures,
    merge_budgets,
    nvcc_available,
    wrapper_targets,
)
from ..cli_common import (
    OneLineParser,
    add_baseline_options,
    add_selection_options,
    emit,
    policy_from_args,
    positive_seconds,
    refuse_output_over_inputs,
    use_color,
)
from ..cli_common import UsageError as CommandLineError  # what the one-line parser raises
from ..config import Config, ConfigError, load_config, print_warnings
from ..diff import DiffError
from ..finalize import BUILD_STAGES, SANITIZE_STAGES, TEST_STAGES, Policy, filter_results, finalize, record_baseline
from ..finding import Finding
from .build import SpecBuilds, build_specs, progress_lines
from .discover import discover
from .process import stop_all
from .report import Progress, reference_note, render_table
from .run import HarnessResult, RunOptions, launcher_location, run_specs, visible_gpus
from .sanitize import TOOLS, find_sanitizer, sanitize_command
from .shard import Shard, instantiation_count, parse_shard, shard_specs, shard_targets
from .spec import KernelSpec

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """A problem with the command line or the environment: one line, exit 2."""


def _tools(value: str) -> tuple[str, ...]:
    tools = tuple(t.strip() for t in value.split(",") if t.strip())
    unknown = [t for t in tools if t not in TOOLS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown tool(s) {', '.join(unknown)}; choose from {', '.join(TOOLS)}")
    return tools


def _output_options(parser: argparse.ArgumentParser) -> None:
    """The report, gate and baseline flags, as the static command spells them (`kernel_check.cli`)."""
    from ..report import FORMATS

    parser.add_argument(
        "--output-format",
        "--format",
        dest="format",
        choices=FORMATS,
        default="text",
        help="findings format (default text)",
    )
    parser.add_argument(
        "--output", "-o", type=Path, metavar="FILE", help="write the findings to FILE instead of stdout"
    )
    parser.add_argument("--strict", action="store_true", help="warnings fail the run too")
    add_selection_options(parser)
    add_baseline_options(parser)


def _shard_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--shard",
        type=parse_shard,
        metavar="K/N",
        help="only shard K of N (counted from 1): a fixed split of the instantiations, for N CI runners",
    )


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="kernel-check")  # a usage error is one line and exit 2, as for the static check
    sub = parser.add_subparsers(dest="command", required=True)

    test = sub.add_parser("test", help="build and run kernel specs (*_spec.py) on the GPU")
    test.add_argument("paths", nargs="+", type=Path, help="kernel specs (*_spec.py) or directories holding them")
    test.add_argument("--compile-only", action="store_true", help="build every instantiation, run nothing")
    test.add_argument("--timeout", type=positive_seconds, default=60.0, help="seconds one case may run (default 60)")
    sanitizers = test.add_mutually_exclusive_group()
    sanitizers.add_argument(
        "--sanitize",
        type=_tools,
        default=TOOLS,
        help=f"compute-sanitizer tools, comma-separated (default {','.join(TOOLS)})",
    )
    sanitizers.add_argument(
        "--no-sanitize", dest="sanitize", action="store_const", const=(), help="run no compute-sanitizer tool"
    )
    test.add_argument(
        "--sanitize-timeout",
        type=positive_seconds,
        default=600.0,
        help="seconds one tool's run of one spec may take (default 600)",
    )
    test.add_argument(
        "-k", dest="filter", default="", metavar="PATTERN", help="only specs whose name contains (or matches) this"
    )
    test.add_argument("--jobs", type=int, default=0, help="child processes at a time (default two per GPU)")
    test.add_argument(
        "--max-time",
        type=positive_seconds,
        metavar="SECONDS",
        help="stop after this long and report what finished (exit 2 if anything was cut off)",
    )
    test.add_argument("--sanitizer-log", type=Path, help="keep compute-sanitizer's raw output in this folder")
    test.add_argument("--no-bandwidth", dest="bandwidth", action="store_false", help="skip KD501")
    test.add_argument(
        "--bandwidth-floor",
        type=float,
        default=0.8,
        help="KD501: fraction of the copy bandwidth a memory-bound kernel should reach",
    )
    test.add_argument(
        "--against", metavar="REV", help="use the kernels as built at git revision REV as the reference (KD101)"
    )
    _shard_option(test)
    _output_options(test)

    spec = sub.add_parser(
        "spec", help="draft a kernel spec from the code (spec new FILE.cuh), or compile-probe specs (spec check PATH)"
    )
    spec_sub = spec.add_subparsers(dest="spec_command", required=True, help="what to do: new, check")
    new = spec_sub.add_parser("new", help="write a *_spec.py drafted from a kernel's launcher")
    new.add_argument("source", type=Path, help="the kernel's .cuh, or a folder: every kernel under it")
    new.add_argument("--launcher", help="draft only this launcher (name or Class::method)")
    new.add_argument("--wrapper", type=Path, help="the Python wrapper that loads it (default: NAME.py beside it)")
    new.add_argument(
        "-o",
        "--output",
        type=Path,
        help="the spec file (default NAME_spec.py beside it; - for stdout); for a folder: where the specs go",
    )
    new.add_argument(
        "-D",
        dest="defines",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a macro the wrapper defines for the build (repeatable)",
    )
    new.add_argument(
        "--no-probe",
        dest="probe",
        action="store_false",
        help="keep every candidate instantiation (default: compile each with nvcc, when found, keep those that build)",
    )
    new.add_argument(
        "--tree-env",
        metavar="VARIABLE",
        help="the spec finds the kernel tree through this environment variable (set now)",
    )

    check = spec_sub.add_parser(
        "check",
        help="compile every instantiation of the specs with nvcc, no GPU: built or the first error "
        "(exit 1 if one fails; results cached by source and flags)",
    )
    check.add_argument("paths", nargs="+", type=Path, help="kernel specs (*_spec.py) or directories holding them")
    check.add_argument(
        "-k", dest="filter", default="", metavar="PATTERN", help="only specs whose name contains (or matches) this"
    )
    check.add_argument("--jobs", type=int, default=0, help="nvcc processes at a time (default: one per core)")

    build = sub.add_parser("build", help="compile every instantiation the specs declare (KC600-KC602)")
    build.add_argument(
        "paths", nargs="+", type=Path, help="kernel specs, wrappers with CUDA_FILES and INSTANTIATIONS, or directories"
    )
    build.add_argument(
        "-k",
        dest="filter",
        default="",
        metavar="PATTERN",
        help="only specs, and wrapper instantiations (WRAPPER:SYMBOL), whose name contains (or matches) this",
    )
    _shard_option(build)
    _output_options(build)

    confirm = sub.add_parser(
        "confirm",
        help="run each static finding's witness (KC4xx, KC112, KC170) on the GPU under the check that shows it, "
        "and record the verdict for the static report (docs/confirm.md)",
    )
    confirm.add_argument("paths", nargs="+", type=Path, help="kernel sources, or folders holding them, to check")
    confirm.add_argument(
        "--spec",
        dest="specs",
        action="append",
        type=Path,
        default=[],
        metavar="SPEC",
        help="a kernel spec (*_spec.py) or a folder of them (repeatable; default: the specs under PATH, "
        "else one drafted as `spec new` drafts it)",
    )
    confirm.add_argument(
        "--timeout", type=positive_seconds, default=300.0, help="seconds one finding's run may take (default 300)"
    )
    confirm.add_argument(
        "--cache-dir",
        type=Path,
        metavar="DIR",
        help="the cache holding the confirmations file (default: $KERNEL_CHECK_CACHE_DIR, else ~/.cache/kernel-check)",
    )

    sanitize = sub.add_parser("sanitize", help="run a command under compute-sanitizer: sanitize -- CMD...")
    sanitize.add_argument(
        "--tools",
        type=_tools,
        default=TOOLS,
        help=f"compute-sanitizer tools, comma-separated (default {','.join(TOOLS)})",
    )
    sanitize.add_argument("--timeout", type=positive_seconds, default=3600.0, help="seconds per tool (default 3600)")
    sanitize.add_argument("cmd", nargs=argparse.REMAINDER, help="the command, after --")
    _output_options(sanitize)
    return parser


def subcommand_parsers() -> dict[str, argparse.ArgumentParser]:
    """`build`, `test` and `sanitize`'s own parsers, by command."""
    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


# ----- shared steps -----


def _selected(name: str, pattern: str) -> bool:
    """`-k PATTERN`: a part of the name, or a glob of all of it (no pattern: everything)."""
    return not pattern or pattern in name or fnmatch.fnmatch(name, pattern)


def _select(specs: list[KernelSpec], pattern: str) -> list[KernelSpec]:
    return [s for s in specs if _selected(s.name, pattern)]


def _with_config_defines(specs: list[KernelSpec], config: Config) -> list[KernelSpec]:
    """Each spec built with the configuration's `defines` too (after its own flags, none
    twice): the macros a tree's kernels need in every build, as the static check reads them
    (FlashInfer's dtype dispatch compiles its fp16/bf16 cases only under its ENABLE macros)."""
    flags = tuple(f"-D{define}" for define in config.get("defines"))
    return [
        dataclasses.replace(spec, extra_cuda_cflags=(*spec.extra_cuda_cflags, *missing))
        if (missing := tuple(f for f in flags if f not in spec.extra_cuda_cflags))
        else spec
        for spec in specs
    ]


def _load_specs(paths: Sequence[Path], pattern: str, config: Config) -> list[KernelSpec]:
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise UsageError(f"no such file or directory: {', '.join(missing)}")
    found = discover(paths)
    if found.errors:
        raise UsageError("cannot load specs:\n  " + "\n  ".join(found.errors))
    specs = _select(found.specs, pattern)
    if not specs:
        raise UsageError(
            f"no kernel specs (*_spec.py) under {', '.join(map(str, paths))}"
            + (f" matching -k {pattern!r}" if pattern else "")
        )
    return _with_config_defines(specs, config)


def _require_nvcc() -> None:
    if not nvcc_available():
        raise UsageError(NVCC_MISSING)


def _config(args: argparse.Namespace) -> Config:
    from ..registry import load_rules

    try:
        config = load_config(Path.cwd())
        print_warnings(config)
        load_rules()
    except ConfigError as exc:
        raise UsageError(str(exc)) from exc
    return config


def _policy(args: argparse.Namespace, config: Config, stages: frozenset) -> Policy:
    """Codes, baseline and gate: checked before the (slow) build, so a typo costs nothing.
    Under `--shard` no baseline entry counts as fixed, and none is written."""
    sharded = getattr(args, "shard", None) is not None
    if sharded and args.write_baseline is not None:
        raise CommandLineError(
            "--write-baseline cannot be combined with --shard (a shard runs part of each kernel's "
            "instantiations); write the baseline from a run without --shard"
        )
    try:
        policy = policy_from_args(args, config, stages)
    except ConfigError as exc:
        raise UsageError(str(exc)) from exc
    except (BaselineError, DiffError) as exc:
        raise UsageError(f"kernel-check: error: {exc}") from exc
    return dataclasses.replace(policy, partial=True) if sharded else policy


def _refuse_output_over_inputs(
    args: argparse.Namespace, policy: Policy, specs: Sequence[KernelSpec] = (), files: Sequence[Path | str] = ()
) -> None:
    """`-o FILE` naming a path given, a spec, its kernel source or another file the run reads
    (`files`) is refused before the run (`kernel_check.cli_common.refuse_output_over_inputs`)."""
    read = [*getattr(args, "paths", ()), *files, *(s.spec_path for s in specs), *_sources(specs)]
    refuse_output_over_inputs(args.output, read, policy)


def _emit(
    findings: list[Finding],
    args: argparse.Namespace,
    policy: Policy,
    sources: Sequence[str] = (),
    unfinished: Sequence[str] = (),
) -> int:
    """The shared back end (`finalize.py`) over the run's findings, then the report or the
    baseline. `sources`: the kernel sources the run exercised; `unfinished`: those of specs a
    stop cut off."""
    from ..report import Summary, render

    results = filter_results(findings, policy, sources, unfinished)
    if args.write_baseline is not None:
        return record_baseline(args.write_baseline, results, policy)
    verdict = finalize(results, policy)
    shard = getattr(args, "shard", None)
    summary = Summary(
        suppressed=verdict.suppressed,
        baseline_hidden=verdict.baseline_hidden,
        baseline_fixed=verdict.baseline_fixed,
        shard="" if shard is None else str(shard),
    )
    emit(
        render(
            verdict.findings,
            args.format,
            root=policy.config.root,
            summary=summary,
            color=use_color("auto", args.output),
            statuses=verdict.statuses,
        ),
        args.output,
    )
    return verdict.exit_status(args.exit_zero)


def _sources(specs: Sequence[KernelSpec]) -> list[str]:
    """The kernel sources of `specs`, named as their findings name them."""
    return sorted({launcher_location(spec).path for spec in specs})


def _shard(
    shard: Shard | None, specs: list[KernelSpec], wrappers: Sequence[BuildTarget] = ()
) -> tuple[list[KernelSpec], list[BuildTarget]]:
    """`--shard K/N`: this shard's part of the specs' instantiations and of the wrappers'
    (a wrapper instantiation a spec builds is the spec's), said on stderr."""
    if shard is None:
        return specs, list(wrappers)
    total = instantiation_count(specs) + len(wrappers)
    mine, mine_wrappers = shard_specs(specs, shard), shard_targets(wrappers, shard)
    count = instantiation_count(mine) + len(mine_wrappers)
    if count:
        print(f"kernel-check: shard {shard}: {count} of {total} instantiations", file=sys.stderr)
    else:
        print(f"kernel-check: shard {shard}: none of the {total} instantiations; nothing to run", file=sys.stderr)
    return mine, mine_wrappers


def _build_options(config: Config) -> dict:
    """What every build takes from the configuration: register budgets, include directories."""
    return dict(
        register_budget=int(config.get("register-budget")),
        per_kernel_budget=dict(config.get("register-budget-per-kernel")),
        include_dirs=config.include_dirs(),
    )


# ----- subcommands -----


def _wrapper_targets(paths: Sequence[Path], specs: list[KernelSpec], config: Config) -> list[BuildTarget]:
    """Instantiations the csrc wrappers' manifests declare that no spec already builds."""
    from .build import spec_target

    budgets = merge_budgets(int(config.get("register-budget")), config.get("register-budget-per-kernel"), None)
    built = {_target_key(spec_target(s, i, budgets)) for s in specs for i in s.instantiations}
    targets = [t for f in _python_files(paths) for t in wrapper_targets(f, budgets, config.include_dirs())]
    return [t for t in targets if _target_key(t) not in built]


def _python_files(paths: Sequence[Path]) -> list[Path]:
    """The Python files `build` reads for wrapper manifests: those given, and under the folders given."""
    return sorted({p for path in paths for p in ([path] if path.is_file() else path.rglob("*.py"))})


def _target_key(target: BuildTarget) -> tuple[str, str]:
    source = str((Path(target.csrc_root) / target.cuda_files[0]).resolve())
    return source, target.wrappers[0][1].replace(" ", "")


def _build(args: argparse.Namespace, config: Config) -> int:
    policy = _policy(args, config, BUILD_STAGES)
    found = discover(args.paths)
    if found.errors:
        raise UsageError("cannot load specs:\n  " + "\n  ".join(found.errors))
    specs = _with_config_defines(_select(found.specs, args.filter), config)
    wrappers = [t for t in _wrapper_targets(args.paths, specs, config) if _selected(t.label, args.filter)]
    if not specs and not wrappers:
        raise UsageError(
            f"nothing to build under {', '.join(map(str, args.paths))} "
            "(no *_spec.py, no wrapper with CUDA_FILES and INSTANTIATIONS)"
            + (f" matching -k {args.filter!r}" if args.filter else "")
        )
    wrapper_sources = [Path(t.csrc_root) / f for t in wrappers for f in t.cuda_files]
    _refuse_output_over_inputs(args, policy, specs, [*_python_files(args.paths), *wrapper_sources])
    specs, wrappers = _shard(args.shard, specs, wrappers)
    if not specs and not wrappers:
        return _emit([], args, policy)
    _require_nvcc()
    ensure_arch_for_compile_only(str(config.get("arch")))
    progress = Progress()
    progress.add(len(specs) + len(wrappers))  # one module per spec
    on_done = progress_lines(progress)
    builds = build_specs(specs, on_done=on_done, **_build_options(config))
    wrapper_outcomes = build_all(wrappers, on_done=on_done)
    status = _emit(builds.findings + build_findings(wrapper_outcomes), args, policy, _sources(specs))
    environment = list(builds.environment.values()) + environment_failures(wrapper_outcomes)
    return _report_environment(environment) or status


def _test(args: argparse.Namespace, config: Config) -> int:
    if args.compile_only:
        return _build(args, config)
    policy = _policy(args, config, TEST_STAGES)
    specs = _load_specs(args.paths, args.filter, config)
    _refuse_output_over_inputs(args, policy, specs)
    specs, _ = _shard(args.shard, specs)
    if not specs:
        return _emit([], args, policy)
    _require_nvcc()
    if not visible_gpus():
        raise UsageError("no CUDA GPU visible; `kernel-check test --compile-only` builds without one")
    if args.sanitize and find_sanitizer() is None:
        raise UsageError(
            "compute-sanitizer not found (it ships with the CUDA toolkit); pass --no-sanitize to run without it"
        )
    options = RunOptions(
        timeout=args.timeout,
        sanitize=args.sanitize,
        sanitize_timeout=args.sanitize_timeout,
        bandwidth=args.bandwidth,
        bandwidth_floor=args.bandwidth_floor,
        jobs=args.jobs,
        sanitizer_log_dir=args.sanitizer_log,
        max_time=args.max_time,
        **_build_options(config),
    )
    if args.against:
        return _test_against(specs, options, args, policy)
    with _stop_on_signals() as signals:
        result = run_specs(specs, options, Progress())
    _print_table(result)
    note = reference_note([s.name for s in specs if s.reference is None])
    if note:
        print(note, file=sys.stderr)
    stopped = [s for s in specs if s.name in result.stopped]
    status = _emit(result.findings, args, policy, _sources(specs), _sources(stopped))
    return _report_environment(result.environment) or _report_stop(result, len(specs), signals) or status


def _print_table(result: HarnessResult) -> None:
    """The summary table, then each spec this GPU could not run and why."""
    print(render_table(result.rows), file=sys.stderr)
    for line in result.not_run:
        print(f"kernel-check: {line}", file=sys.stderr)


def _report_environment(environment: list[str]) -> int:
    """One line per environment failure (no verdict on those kernels); EXIT_USAGE then."""
    for line in environment:
        print(f"kernel-check: environment error, not a kernel finding: {line}", file=sys.stderr)
    return EXIT_USAGE if environment else EXIT_CLEAN


def _test_against(specs: list[KernelSpec], options: RunOptions, args: argparse.Namespace, policy: Policy) -> int:
    """``--against REV``: REV's build of each kernel is the reference (differential.py)."""
    import tempfile

    from . import differential

    with tempfile.TemporaryDirectory(prefix="kernel-check-against-") as scratch:
        try:
            plan = differential.prepare(specs, args.against, Path(scratch), **_build_options(policy.config))
        except differential.AgainstError as exc:
            raise UsageError(str(exc)) from exc
        for reason in plan.skipped:
            print(f"kernel-check: --against {args.against}: not compared: {reason}", file=sys.stderr)
        if not plan.specs:
            raise UsageError(f"--against {args.against}: no spec could be compared")
        with _stop_on_signals() as signals:
            result = run_specs(plan.specs, options, Progress())
        _print_table(result)
        findings = plan.build_findings + differential.restore_paths(
            result.findings, plan.originals, plan.generated, args.against
        )
        status = _emit(findings, args, policy)
        return _report_environment(result.environment) or _report_stop(result, len(plan.specs), signals) or status


def _spec(args: argparse.Namespace, config: Config) -> int:
    return _spec_check(args, config) if args.spec_command == "check" else _spec_new(args, config)


def _spec_check(args: argparse.Namespace, config: Config) -> int:
    """``spec check PATH``: one line per instantiation, built or its first compile error."""
    from .compile_probe import check_specs

    specs = _load_specs(args.paths, args.filter, config)
    _require_nvcc()
    progress = Progress()
    progress.add(len(specs))
    result = check_specs(
        specs,
        include_dirs=config.include_dirs(),
        jobs=args.jobs or None,
        on_done=progress_lines(progress),
        arch=str(config.get("arch")),
    )
    for probe in result.results:
        print(f"built   {probe.label}" if probe.built else f"FAILED  {probe.label}: {probe.error}")
    built = len(result.results) - len(result.failed)
    print(f"{built} of {len(result.results)} instantiations build", file=sys.stderr)
    if result.failed:
        return _report_environment(result.environment) or EXIT_FINDINGS
    return _report_environment(result.environment)


def _draft_defines(args: argparse.Namespace, config: Config) -> tuple[str, ...]:
    """The macros a draft is parsed, probed and built with: the configuration's, then `-D`."""
    return tuple(dict.fromkeys((*config.get("defines"), *args.defines)))


def _spec_new(args: argparse.Namespace, config: Config) -> int:
    """``spec new FILE.cuh``: write a drafted spec (draft.py); never overwrites a file."""
    from .draft import DraftError, default_spec_path, draft_text

    if args.source.is_dir():
        return _spec_new_tree(args, config)
    if not args.source.is_file():
        raise UsageError(f"{args.source}: no such file")
    if args.wrapper is not None and not args.wrapper.is_file():
        raise UsageError(f"{args.wrapper}: no such file")
    to_stdout = str(args.output) == "-"
    target = default_spec_path(args.source) if args.output is None else args.output
    if not to_stdout and target.exists():
        raise UsageError(f"{target}: already exists; pass -o NEW_FILE (or -o - for stdout)")
    tree = _draft_tree(args.tree_env, args.source) if args.tree_env else None
    try:
        text = draft_text(
            args.source,
            Path.cwd() / "stdout_spec.py" if to_stdout else target,
            args.launcher,
            args.wrapper,
            _draft_defines(args, config),
            tree,
            probe=args.probe and nvcc_available(),
        )
    except DraftError as exc:
        raise UsageError(f"{args.source}: {exc}") from exc
    if to_stdout:
        sys.stdout.write(text)
    else:
        target.write_text(text, encoding="utf-8")
        print(f"kernel-check: wrote {target}; fill in each TODO(kernel-check), the reference first", file=sys.stderr)
    return EXIT_CLEAN


def _spec_new_tree(args: argparse.Namespace, config: Config) -> int:
    """``spec new DIR``: a draft beside every kernel source of the tree that has a launcher
    (none overwritten), and a table of what each one guessed."""
    from .draft import draft_tree, render_tree_table

    if args.launcher or args.wrapper or (args.output is not None and not args.output.is_dir()):
        raise UsageError(f"{args.source}: a folder takes neither --launcher nor --wrapper, and -o only as a folder")
    tree = _draft_tree(args.tree_env, args.source) if args.tree_env else None
    defines = _draft_defines(args, config)
    rows = draft_tree(args.source, args.output, defines, tree, probe=args.probe and nvcc_available())
    print(render_tree_table(rows))
    written = sum(1 for row in rows if row.written)
    print(f"kernel-check: wrote {written} spec file(s); fill in each TODO(kernel-check)", file=sys.stderr)
    return EXIT_CLEAN


def _draft_tree(variable: str, source: Path) -> tuple[str, Path]:
    """``--tree-env VARIABLE``: the folder it names now, which must hold the kernel."""
    value = os.environ.get(variable, "")
    if not value or not Path(value).is_dir():
        raise UsageError(f"--tree-env {variable}: set {variable} to the kernel tree's folder")
    root = Path(value).resolve()
    if not source.resolve().is_relative_to(root):
        raise UsageError(f"{source}: not inside ${variable} ({root})")
    return variable, root


@contextlib.contextmanager
def _stop_on_signals() -> Iterator[list[int]]:
    """SIGINT/SIGTERM (Ctrl-C, a CI job's timeout) stop the run instead of killing it, so
    the table and the findings of everything that finished are still written. Yields the
    signals received, in order."""
    received: list[int] = []

    def handler(signum: int, frame: object) -> None:
        received.append(signum)
        stop_all()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _report_stop(result: HarnessResult, total: int, signals: Sequence[int] = ()) -> int:
    """Say which specs a stop cut off. The run is not a verdict: 128 + the signal that
    stopped it (what a shell reports for a command a signal ended: 130 for Ctrl-C), else
    (`--max-time`) EXIT_USAGE."""
    if not result.stopped:
        return EXIT_CLEAN
    print(
        f"kernel-check: stopped before {len(result.stopped)} of {total} specs finished "
        f"({', '.join(result.stopped)}); the findings above cover what finished",
        file=sys.stderr,
    )
    return 128 + signals[0] if signals else EXIT_USAGE


def _sanitize(args: argparse.Namespace, config: Config) -> int:
    policy = _policy(args, config, SANITIZE_STAGES)
    command = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not command:
        raise UsageError("usage: kernel-check sanitize [--tools ...] -- COMMAND [ARGS...]")
    _refuse_output_over_inputs(args, policy, files=command)  # `-o run.py -- python run.py`
    if find_sanitizer() is None:
        raise UsageError("compute-sanitizer not found (it ships with the CUDA toolkit; set CUDA_HOME)")
    findings, runs = sanitize_command(command, args.tools, timeout=args.timeout, root=config.root)
    for run in runs:
        state = "timed out" if run.timed_out else f"exit {run.returncode}"
        if run.command_failed:
            print(run.output[-4000:], file=sys.stderr)
        print(f"kernel-check sanitize: {run.tool}: {len(run.reports)} report(s), command {state}", file=sys.stderr)
    status = _emit(findings, args, policy)
    if status == EXIT_CLEAN and any(run.command_failed for run in runs):
        print("kernel-check sanitize: the command itself failed (see its output above)", file=sys.stderr)
        return EXIT_USAGE
    return status


# the static check's findings of some codes under some paths, with the project root: what
# `kernel_check.cli` hands `main` for `confirm` (this module imports nothing of the command line)
StaticFindings = Callable[[Sequence[Path], Sequence[str], "Path | None"], tuple[Path, list[Finding]]]


def _confirm(args: argparse.Namespace, config: Config, static_findings: StaticFindings | None) -> int:
    """``confirm PATH``: each static finding's witness run on the GPU (confirm.py), the verdicts
    recorded in the project's confirmations file and printed as a table."""
    import tempfile

    from .. import confirmations
    from .confirm import CHECKS, Machine, Plan, confirm_all, needed_specs, plan, render_table
    from .run import gpu_name

    missing = [str(p) for p in args.paths if not p.exists()]
    if missing:
        raise UsageError(f"no such file or directory: {', '.join(missing)}")
    gpus = visible_gpus()
    if not gpus:
        raise UsageError("no CUDA GPU visible: `confirm` runs each finding's witness on one (nothing was checked)")
    _require_nvcc()
    if find_sanitizer() is None:
        raise UsageError("compute-sanitizer not found (it ships with the CUDA toolkit; set CUDA_HOME)")
    if static_findings is None:
        raise UsageError("`confirm` runs the static check first: run it as `kernel-check confirm`")
    root, findings = static_findings(args.paths, tuple(CHECKS), args.cache_dir)
    progress = Progress()
    with tempfile.TemporaryDirectory(prefix="kernel-check-confirm-") as scratch:
        specs = _confirm_specs(args, findings, config, Path(scratch))
        plans = [plan(f, specs) for f in findings]
        to_build = needed_specs(plans)
        progress.add(len(to_build))
        built = progress_lines(progress)
        builds = build_specs(to_build, lineinfo=True, on_done=built, **_build_options(config)) if to_build else None
        machine = Machine(gpus[0], gpu_name(gpus[0]), Path(scratch), args.timeout)

        def said(each: Plan, verdict: confirmations.Verdict) -> None:
            progress.finished(verdict.summary()[:160])

        progress.add(len(plans))
        rows = confirm_all(plans, builds or SpecBuilds(), machine, said)
    store = confirmations.store_path(root, args.cache_dir)
    written = confirmations.record(store, [(p.finding, v) for p, v in rows], root)
    print(render_table(rows))
    confirmed = sum(v.confirmed for _, v in rows)
    print(
        f"kernel-check: {confirmed} of {len(rows)} finding(s) confirmed on {machine.name}; "
        + (f"recorded in {store}" if written else f"could not write {store}"),
        file=sys.stderr,
    )
    return EXIT_FINDINGS if confirmed else EXIT_CLEAN


def _confirm_specs(
    args: argparse.Namespace, findings: list[Finding], config: Config, scratch: Path
) -> list[KernelSpec]:
    """`--spec`'s specs (else those under PATH), and a draft (`spec new`) for each file with a
    finding to confirm that none of them covers; a draft that does not load is said on stderr.
    A draft keeps, as `spec new`'s does, the instantiations nvcc builds (`confirm` has checked
    that nvcc is there): one that does not build could confirm nothing."""
    from .draft import DraftError, draft_text

    found = discover(args.specs or args.paths)
    if args.specs and found.errors:
        raise UsageError("cannot load specs:\n  " + "\n  ".join(found.errors))
    specs = _with_config_defines(found.specs, config)
    covered = {(Path(s.spec_path).parent / s.source).resolve() for s in specs}
    wanted = sorted({Path(f.path).resolve() for f in findings if f.witness is not None} - covered)
    defines = tuple(config.get("defines"))
    for number, source in enumerate(wanted):
        target = scratch / f"draft{number}_{source.stem}_spec.py"
        try:
            target.write_text(draft_text(source, target, defines=defines, probe=True), encoding="utf-8")
        except DraftError as exc:
            print(f"kernel-check: {source}: no spec, and none could be drafted: {exc}", file=sys.stderr)
            continue
        drafted = discover([target])
        for error in drafted.errors:
            print(f"kernel-check: {source}: the drafted spec does not load: {error}", file=sys.stderr)
        specs += _with_config_defines(drafted.specs, config)
    return specs


COMMANDS = {"test": _test, "build": _build, "sanitize": _sanitize, "spec": _spec}


def main(argv: list[str], static_findings: StaticFindings | None = None) -> int:
    """`static_findings`: the static check, which `confirm` runs first (`kernel_check.cli`
    hands it in)."""
    try:
        args = _parser().parse_args(argv)
        if args.command == "confirm":
            return _confirm(args, _config(args), static_findings)
        return COMMANDS[args.command](args, _config(args))
    except SystemExit as exit_:  # argparse's --help (0)
        return EXIT_CLEAN if exit_.code == 0 else EXIT_USAGE
    except CommandLineError as exc:
        print(f"kernel-check: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except UsageError as exc:
        print(f"kernel-check: {exc}" if not str(exc).startswith("kernel-check") else str(exc), file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
