"""Configure stage: `kernel-check.toml` (keys at the top level) or `[tool.kernel-check]` in
`pyproject.toml`, read as TOML data only.

`OPTIONS` is the single description of every key: the loader validates against it and
`docs/configuration.md` is generated from it (a test keeps the two in step).
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

from .conventions import CONVENTION_CODES, SETTINGS
from .finding import Severity


class ConfigError(Exception):
    """A configuration problem, reported as one line and exit code 2."""


@dataclass(frozen=True)
class Option:
    key: str
    kind: str  # "str", "int", "float", "bool", "list[str]", "table[str]", "table[list[str]]"
    default: Any
    help: str


OPTIONS: tuple[Option, ...] = (
    Option(
        "mode",
        "str",
        "auto",
        'Parse mode: "auto" (system headers when a CUDA install is found, else hermetic), "system" or "hermetic".',
    ),
    Option(
        "include-dirs",
        "list[str]",
        [],
        "Extra include directories (relative to the project root), searched after the "
        "discovered `include/` that holds `sgl_kernel/` and before the bundled header library "
        "(the static check, `build` and `test` alike). The static check also searches, last, the "
        "header folders of installed header-only dependencies (flashinfer-python's CUTLASS and "
        "CuTe, nvidia-cutlass, nvidia-mathdx, deep_gemm) and the `-I` paths of the `load_jit` call "
        "that builds the file, and after the CUDA headers the CCCL of installed packages "
        "(flashinfer-python, nvidia-cuda-cccl) (docs/getting-started.md).",
    ),
    Option(
        "defines",
        "list[str]",
        [],
        'Preprocessor definitions, e.g. ["USE_FOO=1"], for every file: the static check, and the '
        "harness's builds (`build`, `test`, `spec check`) and drafts (`spec new`). The static check "
        "adds to a C++ file the `-D` flags of the `load_jit` call of the Python wrapper that builds it "
        "(a checked one, else the project's).",
    ),
    Option("arch", "str", "90", "CUDA architecture the parse and the build assume (90 = sm_90)."),
    Option(
        "select",
        "list[str]",
        [],
        "Codes or prefixes to enable (empty: every rule). `KC1` selects KC1xx. A file is read only as far as "
        "the selected rules need: with text rules alone (`KC310`) C++ files are not parsed, so a file clang "
        "cannot parse gets its KC000 only when `KC000` is selected too.",
    ),
    Option("ignore", "list[str]", [], "Codes or prefixes to disable."),
    Option("severity", "table[str]", {}, 'Severity overrides per code: {KC301 = "error", KC202 = "info"}.'),
    Option(
        "per-file-ignores", "table[list[str]]", {}, 'Codes ignored in files matching a glob: {"tests/**" = ["KC301"]}.'
    ),
    Option(
        "exclude",
        "list[str]",
        [],
        "Globs (relative to the project root) of files never checked when found in a "
        "directory; with --force-exclude also when passed explicitly.",
    ),
    Option("strict", "bool", False, "Warnings fail the run (same as --strict)."),
    Option("baseline", "str", "", "Baseline file of accepted findings (see docs/adopting.md)."),
    Option("register-budget", "int", 64, "KC601: registers per thread allowed for a kernel."),
    Option("register-budget-per-kernel", "table[str]", {}, "KC601: per-kernel budgets, {kernel_name = 128}."),
    Option(
        "package-root", "str", "python/sglang/", "KC504: the package source tree where registered tests must not live."
    ),
    Option(
        "registered-tests-root",
        "str",
        "test/registered/",
        "KC506: the tree whose test_*.py / bench_*.py must register with CI. KC504 reports only "
        "where this directory exists (in the checked file's directory or one above it).",
    ),
    Option(
        "benchmark-marker",
        "str",
        "python/sglang/kernels/jit/benchmark/marker.py",
        "KC505: the module of the benchmark framework that benchmarks must use; KC505 reports "
        "only where this file exists (in the checked file's directory or one above it).",
    ),
    Option(
        "conventions",
        "table[str]",
        {},
        "Whether the tree follows the convention a convention rule enforces (KC320, KC504, "
        'KC505): "auto" (detected, see each rule\'s page), "on" or "off", e.g. {KC505 = "off"}.',
    ),
    Option(
        "file-timeout",
        "float",
        20.0,
        "Seconds of CPU time one file may use in the static pipeline before it becomes a KC000 "
        "(a busy machine slows a parse down but does not make it use more CPU). A file that "
        "waits instead (a blocking read) is stopped at 3x this in wall-clock time, more on a "
        "loaded machine (times the load average per CPU). The KC000 says which bound it hit.",
    ),
    Option(
        "solver-budget",
        "float",
        2.0,
        "Seconds the solver may spend on one kernel's queries together, shared by every rule that "
        "asks it (KC170, the KC4xx rules, KC112's witness): each rule's decisions first, the "
        "witnesses' searches with what is left. Counted in z3's resource units, about 3 million "
        "a second, so that a loaded machine gives the same findings as an idle one. A query it "
        "cannot answer within the budget is never a finding (KC112 then reports without a "
        "witness, KC170 falls back to the branch's shape).",
    ),
    Option("max-file-bytes", "int", 2_000_000, "Files larger than this are not parsed; they get one KC000 finding."),
    Option(
        "cache-max-size",
        "str",
        "1GiB",
        'The most the preamble store may hold, e.g. "2GiB" or "500MB" (`KiB`, `MiB`, `GiB` and '
        "`K`, `M`, `G` count in 1024s, `KB`, `MB`, `GB` in 1000s). The store, under the cache "
        "directory, keeps the precompiled headers every project on this machine shares (30-50 MB "
        "each); after a build, the least recently used go until it fits, never one a running "
        "kernel-check uses. The environment variable KERNEL_CHECK_CACHE_MAX_SIZE overrides this key. "
        "Results are kept per project and pruned when unused for 30 days.",
    ),
)
_BY_KEY = {option.key: option for option in OPTIONS}


@dataclass(frozen=True)
class Config:
    """The effective configuration: file values over defaults, then CLI flags over both."""

    root: Path
    source: Path | None = None
    values: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()  # one line each: a table kernel-check does not read, and why

    def get(self, key: str) -> Any:
        return self.values.get(key, _BY_KEY[key].default)

    def with_overrides(self, **overrides: Any) -> Config:
        merged = dict(self.values)
        merged.update({k.replace("_", "-"): v for k, v in overrides.items() if v is not None})
        return replace(self, values=merged)

    def severity_of(self, code: str, default: Severity) -> Severity:
        override = self.get("severity").get(code)
        return Severity(override) if override else default

    def include_dirs(self) -> tuple[str, ...]:
        """`include-dirs`, resolved against the project root."""
        return tuple(str(real_path(self.root / d)) for d in self.get("include-dirs"))

    def relative(self, path: Path) -> str:
        """POSIX path relative to the project root (as given when outside it)."""
        try:
            return real_path(path).relative_to(real_path(self.root)).as_posix()
        except ValueError:
            return path.as_posix()


def real_path(path: Path) -> Path:
    """`path` with symlinks resolved as far as they go: unlike `Path.resolve` before Python
    3.13, a symlink loop is no error (the loop stays in the path; reading it then fails
    with an OSError, which the pipeline reports as a finding for that file)."""
    return Path(os.path.realpath(path))


CONFIG_FILES = ("kernel-check.toml", ".kernel-check.toml")  # keys at the top level
TABLE = "kernel-check"  # the pyproject.toml table: [tool.kernel-check]


def find_project_root(start: Path) -> tuple[Path, Path | None]:
    """The nearest ancestor with a `kernel-check.toml` (or `.kernel-check.toml`), or a
    `pyproject.toml` holding `[tool.kernel-check]` (in one directory the first wins, as
    `ruff.toml` does over `pyproject.toml`); else the nearest with any `pyproject.toml` or
    `.git`; else `start` itself."""
    start = real_path(start)
    if start.is_file():
        start = start.parent
    fallback: Path | None = None
    for directory in (start, *start.parents):
        own = next((directory / name for name in CONFIG_FILES if (directory / name).is_file()), None)
        if own is not None:
            return directory, own
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            try:
                if "kernel-check" in candidate.read_text(encoding="utf-8", errors="replace"):
                    return directory, candidate
            except OSError:
                pass
            fallback = fallback or directory
        elif (directory / ".git").exists():
            fallback = fallback or directory
    return (fallback or start), None


def is_project_root(directory: Path) -> bool:
    """Whether `directory` is a project's root by the marks `find_project_root` looks for (a
    kernel-check config, a `pyproject.toml`, a `.git`), not just the folder a lone file is in."""
    return any((directory / name).exists() for name in (*CONFIG_FILES, "pyproject.toml", ".git"))


def load_config(start: Path, explicit: Path | None = None) -> Config:
    """Read the governing config; `explicit` (from --config) wins over discovery."""
    if explicit is not None:
        if not explicit.is_file():
            raise ConfigError(f"{explicit}: config file not found")
        return Config(explicit.resolve().parent, explicit, _read_table(explicit))
    root, source = find_project_root(start)
    values = _read_table(source) if source else {}
    unread = root / "pyproject.toml"  # a pyproject.toml that may hold a misspelled table
    warnings = _near_misses(unread) if unread.is_file() and unread != source else ()
    if source is not None and source.name == "pyproject.toml":
        warnings = _near_misses(source)
    return Config(root, source, values, warnings)


def print_warnings(config: Config) -> None:
    """The configuration's warnings on stderr, one line each."""
    for warning in config.warnings:
        print(f"kernel-check: warning: {warning}", file=sys.stderr)


def _read_document(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: cannot read config: {error}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None


def _read_table(path: Path) -> dict[str, Any]:
    document = _read_document(path)
    if path.name != "pyproject.toml" and "tool" in document:
        raise ConfigError(f"{path}: a {path.name} holds the keys at its top level, not under [tool.{TABLE}]")
    table = document.get("tool", {}).get(TABLE, {}) if path.name == "pyproject.toml" else document
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.kernel-check] must be a table")
    return {key: _validate(path, key, value) for key, value in table.items()}


def _near_misses(path: Path) -> tuple[str, ...]:
    """A warning for each `[tool.X]` table of `path` that looks meant for kernel-check but
    is not `[tool.kernel-check]` (`kernel_check`, `kernelcheck`, `kernel-checks`...): without
    it the file's settings are silently ignored."""
    try:
        tool = _read_document(path).get("tool", {})
    except ConfigError:
        return ()  # a pyproject.toml kernel-check does not read may be invalid: not ours to judge
    if not isinstance(tool, dict):
        return ()
    return tuple(
        f"{path}: [tool.{name}] is not read by kernel-check; did you mean [tool.{TABLE}]?"
        for name in tool
        if name != TABLE and _looks_like_ours(name)
    )


def _looks_like_ours(name: str) -> bool:
    import difflib

    squeezed = re.sub(r"[-_. ]", "", name.lower())
    return squeezed.startswith("kernelcheck") or difflib.SequenceMatcher(None, name.lower(), TABLE).ratio() >= 0.8


def _validate(path: Path, key: str, value: Any) -> Any:
    option = _BY_KEY.get(key)
    if option is None:
        known = ", ".join(sorted(_BY_KEY))
        raise ConfigError(f"{path}: [tool.kernel-check] unknown key '{key}' (known: {known})")
    if not _matches(option.kind, value):
        raise ConfigError(f"{path}: [tool.kernel-check] '{key}' must be {option.kind}, got {value!r}")
    if key == "severity":
        for code, level in value.items():
            if level not in ("error", "warning", "info"):
                raise ConfigError(f"{path}: severity for {code} must be error, warning or info")
    check = _VALUE_CHECKS.get(key)
    if check is not None and not check[0](value):
        raise ConfigError(f"{path}: [tool.kernel-check] '{key}' must be {check[1]}, got {value!r}")
    return value


def _positive(value: float) -> bool:
    return math.isfinite(value) and value > 0  # TOML has nan and inf


def _is_size(value: str) -> bool:
    from .cache import parse_size

    try:
        parse_size(value)
    except ValueError:
        return False
    return True


# What a key's type admits but kernel-check cannot use: the test, and the valid forms the
# error names.
_VALUE_CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "mode": (lambda value: value in ("auto", "system", "hermetic"), "auto, system or hermetic"),
    "arch": (
        lambda value: re.fullmatch(r"[1-9][0-9]+", value) is not None,
        'the SM version in digits, e.g. "90" for sm_90 or "100" for sm_100',
    ),
    "file-timeout": (_positive, "a positive number of seconds"),
    "solver-budget": (_positive, "a positive number of seconds"),
    "max-file-bytes": (_positive, "a positive number of bytes"),
    "cache-max-size": (_is_size, 'a size such as "1GiB", "500MB" or "0"'),
    "conventions": (
        lambda value: all(code in CONVENTION_CODES and setting in SETTINGS for code, setting in value.items()),
        f'a table of {", ".join(CONVENTION_CODES)} to "auto", "on" or "off"',
    ),
}


def _matches(kind: str, value: Any) -> bool:
    checks = {
        "str": lambda v: isinstance(v, str),
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "bool": lambda v: isinstance(v, bool),
        "list[str]": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
        "table[str]": lambda v: isinstance(v, dict) and all(isinstance(x, (str, int)) for x in v.values()),
        "table[list[str]]": lambda v: (
            isinstance(v, dict) and all(isinstance(x, list) and all(isinstance(y, str) for y in x) for x in v.values())
        ),
    }
    return checks[kind](value)
