"""What the command lines (`kernel_check.cli`, `kernel_check.harness.cli`) share: the one-line
usage errors and which errors are the user's (the language server's too), the selection and
baseline flags and the policy they make, positive-number flags, and where the report goes."""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from . import codes
from .config import Config, ConfigError
from .paths import display_path
from .progress import is_terminal

if TYPE_CHECKING:  # imported where a policy is made: `--version`, `rules` need none
    from .filter import Selection
    from .finalize import Policy


class UsageError(Exception):
    """A bad command line; argparse-style one-line message and exit code 2."""


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2, no usage dump
        raise UsageError(message)


def _comma_list(value: str) -> list[str]:
    return [item.strip().upper() for item in value.split(",") if item.strip()]


def add_selection_options(group: argparse._ActionsContainer) -> None:
    """`--select`/`--ignore` (repeated flags accumulate) and `--exit-zero`: the same for the
    static check, `build` and `test`."""
    group.add_argument(
        "--select",
        type=_comma_list,
        action="extend",
        default=[],
        metavar="CODES",
        help="codes or prefixes to enable, comma-separated (repeatable; replaces config `select`)",
    )
    group.add_argument(
        "--ignore",
        type=_comma_list,
        action="extend",
        default=[],
        metavar="CODES",
        help="codes or prefixes to disable, comma-separated (repeatable; adds to config `ignore`)",
    )
    group.add_argument("--exit-zero", action="store_true", help="exit 0 even with findings")


def add_baseline_options(group: argparse._ActionsContainer) -> None:
    """`--baseline` and `--write-baseline`: the same for the static check, `build` and `test`
    (one baseline file holds every stage's entries; each run replaces only its own)."""
    group.add_argument(
        "--baseline", type=Path, metavar="FILE", help="hide the findings recorded in FILE (default: config `baseline`)"
    )
    group.add_argument(
        "--write-baseline", type=Path, metavar="FILE", help="record the current findings in FILE, then exit 0"
    )


def _positive(cast: Callable[[str], float], noun: str) -> Callable[[str], float]:
    """An argparse `type` that takes a finite number above zero (a count, a time limit)."""

    def parse(value: str) -> float:
        try:
            number = cast(value)
        except ValueError:
            number = math.nan
        if not (math.isfinite(number) and number > 0):
            raise argparse.ArgumentTypeError(f"expected a positive {noun}, got {value!r}")
        return number

    return parse


positive_int = _positive(int, "integer")
positive_seconds = _positive(float, "number of seconds")


def user_errors() -> tuple[type[Exception], ...]:
    """The errors that are the user's to fix: one line and exit 2, no traceback. (Imported
    here, on the error path: the `--diff` and baseline modules load where they are used.)"""
    from .baseline import BaselineError
    from .cache import NotACache
    from .clang.parse import ParseConfigError
    from .diff import DiffError
    from .discover import DiscoveryError
    from .fix import WriteRefused

    return (
        UsageError,
        ConfigError,
        DiscoveryError,
        ParseConfigError,
        DiffError,
        BaselineError,
        NotACache,
        WriteRefused,
    )


def policy_from_args(args: argparse.Namespace, config: Config, stages: frozenset[codes.Language]) -> Policy:
    """The run's policy from a command's flags (`add_selection_options`, `add_baseline_options`
    and, for the static check, `--strict` and `--diff`)."""
    return make_policy(
        config,
        stages,
        select=args.select,
        ignore=args.ignore,
        strict=args.strict,
        paths=getattr(args, "paths", None) or [Path(".")],
        baseline=getattr(args, "baseline", None),
        writes_baseline=getattr(args, "write_baseline", None) is not None,
        diff=getattr(args, "diff", None),
    )


def make_policy(
    config: Config,
    stages: frozenset[codes.Language],
    *,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    strict: bool = False,
    paths: Sequence[Path] = (),
    baseline: Path | None = None,
    writes_baseline: bool = False,
    diff: str | None = None,
) -> Policy:
    """What decides a run's report and exit status (`finalize.py`). Validates the codes, then
    loads `--diff` and the baseline (`baseline`, else config `baseline`; none when the run
    writes one), all before the (slow) run."""
    from .baseline import configured_path, load_baseline
    from .diff import load_diff
    from .finalize import Policy

    selection = selection_of(config, select, ignore)
    if writes_baseline and diff:
        raise UsageError("--write-baseline records every finding; it cannot be combined with --diff")
    scope = load_diff(diff, (list(paths) or [Path(".")])[0]) if diff else None
    path = None if writes_baseline else configured_path(baseline, config)
    return Policy(
        config,
        stages,
        selection,
        strict=strict or bool(config.get("strict")),
        baseline=load_baseline(path) if path is not None else None,
        diff=scope,
        paths=tuple(paths),
    )


def selection_of(config: Config, select: Sequence[str] = (), ignore: Sequence[str] = ()) -> Selection:
    """The run's one `Selection`, once `--select`/`--ignore` and the configured codes are
    known to name rules (a typo is an error, as in ruff)."""
    from .filter import Selection, unknown_selector

    for origin, given in (("--select", select), ("--ignore", ignore)):
        if bad := next((c for c in given if unknown_selector(c)), None):
            raise UsageError(f"{origin}: unknown rule code or prefix '{bad}' (see `kernel-check rules`)")
    configured = {key: config.get(key) for key in ("select", "ignore", "severity")}
    configured.update({f"per-file-ignores '{glob}'": listed for glob, listed in config.get("per-file-ignores").items()})
    for key, listed in configured.items():
        exact = key == "severity"  # a severity names one code, not a prefix
        if bad := next((c for c in listed if (codes.lookup(c) is None if exact else unknown_selector(c))), None):
            raise ConfigError(
                f"{config.source or config.root}: [tool.kernel-check] {key}: "
                f"unknown rule code {'' if exact else 'or prefix '}'{bad}' (see `kernel-check rules`)"
            )
    return Selection.of(config, select, ignore)


def use_color(choice: str, output: Path | None) -> bool:
    """`--color`; `auto`: never into a file, never with NO_COLOR set, always with FORCE_COLOR
    set (a CI log that renders colors), else when stdout is a terminal that is not TERM=dumb."""
    if choice != "auto":
        return choice == "always"
    if output is not None or os.environ.get("NO_COLOR"):
        return False
    return bool(os.environ.get("FORCE_COLOR")) or is_terminal(sys.stdout)


def refuse_output_over_inputs(output: Path | None, inputs: Iterable[Path | str], policy: Policy) -> None:
    """`-o FILE` must not name a file the run reads (an input path, a discovered file, the
    configuration, the baseline): the report would replace it. Every command that takes `-o`
    calls this once its inputs are known, before it writes anything."""
    if output is None or not output.exists():
        return  # a file that does not exist yet is none of the inputs
    target = output.stat()
    sources = (policy.config.source, policy.baseline.source if policy.baseline is not None else None)
    for path in [*inputs, *(s for s in sources if s is not None)]:
        try:
            same = os.path.samestat(target, os.stat(path))
        except OSError:
            continue  # gone or unreadable: the run reports it, it is not the output
        if same and not Path(path).is_dir():
            raise UsageError(
                f"--output {output}: is {display_path(path)}, which this run reads; "
                "the report would overwrite it (give another file)"
            )


def emit(text: str, output: Path | None) -> None:
    """The report on stdout, or into `output` (a file that cannot be written is a usage error)."""
    if output is None:
        sys.stdout.write(text + ("\n" if text else ""))
    else:
        try:
            output.write_text(text + "\n", encoding="utf-8")
        except OSError as error:
            raise UsageError(f"{output}: cannot write the report: {error.strerror or error}") from None
