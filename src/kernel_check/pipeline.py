"""The static pipeline for one file: read -> parse -> model -> rules -> filter.

`check_file` runs it on one file (a plain parse, no cache: what the tests and library
callers get); `check` is the same with what a run adds (a preamble, bytes already read, a
pool worker's bound) and returns what the result cache stores besides the result
(`cache_session.py`). Each file's pipeline runs under `file-timeout` (CPU time, with a
wall-clock backstop: `watchdog.Clock`) and a memory cap: `watchdog.run_bounded` (a child
per file) unless the caller gives its own bound (a pool worker's `watchdog.BoundHere`,
`pool.py`). A file the pipeline gave up on gets one KC000 and a status that says so
(`results.FileStatus`).
"""

from __future__ import annotations

import functools
import gc
import os
import re
import traceback
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .clang.parse import ParseSettings
from .config import Config
from .discover import is_python
from .filter import PARSE_ERROR, FilterOutcome, Selection, filter_file_findings, typed_findings
from .finding import Finding, Location, Severity
from .includes import build_made_header, header_provider
from .model import Span
from .registry import Language, Need, RegisteredRule, RuleContext, needs_of, rules_for
from .results import FileResult, FileStatus, status_of

MAX_QUOTED_ERRORS = 3


@dataclass(frozen=True)
class CacheOptions:
    """Where the run may keep state. `root` None: nothing persists (`--no-cache`); a run of
    several C++ files then still builds a preamble, in a temporary directory."""

    root: Path | None = None  # the static cache root, `cache.static_root(...)`
    results: bool = True
    preamble: str = "union"  # "union", "exact" or "off" (see clang/preamble.py)
    max_bytes: int | None = None  # the preamble store's cap (`cache-max-size`); None: no cap


@dataclass(frozen=True)
class CheckPlan:
    """What one file's check runs: `rules` (the selected rules of its language, and the
    rules that share their solver budgets: `_shares_budget`) and `needs`, what the selected
    rules read (`registry.Need`) plus the parse wherever KC000 is wanted. Nothing else is
    built or run, and the result is cached under both (`CacheSession.key`)."""

    rules: tuple[RegisteredRule, ...]
    needs: frozenset[Need]

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(r.meta.code for r in self.rules)


@dataclass(frozen=True)
class RunOptions:
    """Everything a worker needs besides the path (sent once per worker)."""

    config: Config
    settings: ParseSettings
    selected: Selection | None = None  # the run's one selection (None: the configuration's)
    cache: CacheOptions | None = None  # None: plain parses, no result cache (library default)
    jobs: int = 1
    # each file's plan by (language, relative path): asked at every stage of its check
    _plans: dict[tuple[Language, str, bool], CheckPlan] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @functools.cached_property
    def selection(self) -> Selection:
        return self.selected if self.selected is not None else Selection.of(self.config)

    def plan(self, path: Path, every_rule: bool = False) -> CheckPlan:
        """What a check of `path` runs and builds for this run's selection; `every_rule`:
        for every rule of its language (a result that any selection can filter).
        `--select KC310` reads a C++ file's text alone."""
        language = _language_of(path)
        relative = self.config.relative(path)
        key = (language, relative, every_rule)
        known = self._plans.get(key)
        if known is None:
            selection = self.selection
            ruleset = list(rules_for(language))
            chosen = [r for r in ruleset if every_rule or selection.enabled(r.meta.code, relative)]
            needs = needs_of(chosen)
            rules = tuple(r for r in ruleset if r in chosen or _shares_budget(r, needs))
            if language is Language.CPP and (every_rule or selection.parses):
                needs |= {Need.DECLARATIONS}
            known = self._plans[key] = CheckPlan(rules, needs)
        return known

    def needs(self, path: Path) -> frozenset[Need]:
        """What a check of `path` builds (`plan`)."""
        return self.plan(path).needs


def _language_of(path: Path) -> Language:
    return Language.PYTHON if is_python(path) else Language.CPP


def _shares_budget(rule: RegisteredRule, needs: frozenset[Need]) -> bool:
    """Whether `rule`, though not selected, runs with the selected rules: it spends the
    kernels' solver budgets that one of them spends too (`Need.SOLVER`), and what it reads
    is built. Its findings are filtered out; what it spends is what a full run spends, so
    the selected rules' findings are the full run's."""
    return Need.SOLVER in rule.needs and rule.needs <= needs


def reads_text_alone(rule: RegisteredRule) -> bool:
    """Whether `rule` reads nothing but the file's text: it runs on every file, before and
    whatever the parse (`_text_findings`)."""
    return rule.needs <= {Need.TEXT}


def parses(needs: frozenset[Need]) -> bool:
    """Whether a C++ check with these needs parses the file (else it reads the text alone)."""
    return Need.DECLARATIONS in needs


def reads_text_alone_of(path: Path, options: RunOptions) -> bool:
    """Whether the check of `path` is its text rules alone: a C++ file whose selected rules
    parse nothing (cheap enough to need neither a worker nor a bound)."""
    return not is_python(path) and not parses(options.needs(path))


def options_table(config: Config) -> dict[str, Any]:
    from .config import OPTIONS

    return {option.key: config.get(option.key) for option in OPTIONS}


# -- one file ---------------------------------------------------------------------------------
def check_file(path: Path, options: RunOptions, preamble: Any = None) -> FileResult:
    """Run the whole static pipeline on one file; never raises for a bad input file."""
    from .clang.parse import forget_compile_args

    forget_compile_args()  # each call looks for the file's include directories afresh
    return check(path, options, preamble)[0]


@dataclass
class Outcome:
    """Extra facts about one check, for the result cache."""

    data: bytes | None = None  # the bytes checked (None: unreadable, never cached)
    deps: Any = None  # result_cache.Deps, None when the result must not be cached
    typed: list[Finding] = field(default_factory=list)  # before selection and suppressions


@dataclass
class Raw:
    """What a file's bounded pipeline hands back (across a process boundary: plain data)."""

    findings: list[Finding]
    error_spans: list[Span] = field(default_factory=list)
    deps: Any = None  # result_cache.Deps, None when the result must not be cached
    status: FileStatus = FileStatus.CHECKED  # INTERNAL_ERROR: a rule raised (its KC000 says which)


def check(
    path: Path, options: RunOptions, preamble: Any = None, data: bytes | None = None, bound: Any = None
) -> tuple[FileResult, Outcome]:
    """One file through the pipeline: `data` its bytes when already read; `bound` runs the
    file's pipeline under its limits: `watchdog.run_bounded` (a child per file) unless
    given (a pool worker's `watchdog.BoundHere`)."""
    config = options.config
    relative = config.relative(path)
    if data is None:
        try:
            data = read_limited(path, config.get("max-file-bytes"))
        except OSError as error:
            return _single(path, f"cannot read file: {error.strerror or error}"), Outcome()
    if len(data) > config.get("max-file-bytes"):  # not read to the end: not cached either
        return _single(path, _unparsable_reason(data, config, path)), Outcome()
    problem = _unparsable_reason(data, config)
    if problem:  # found again from the bytes at once: not worth a cache entry
        return _single(path, problem), Outcome(data)
    text = data.decode("utf-8", errors="replace")
    text_raw = _text_findings(path, relative, text, data, options)  # whatever the parse gives
    from .watchdog import Stopped

    bounded = _bounded_findings(path, relative, text, data, options, preamble, bound)
    if isinstance(bounded, Stopped):  # too slow, out of memory, crashed or raised: one KC000
        stopped = parse_error(str(path), 1, 1, bounded.message, bounded.detail)
        return _stopped_result(path, stopped, text_raw.findings, text, options, status_of(bounded)), Outcome(data, None)
    # a text rule's findings stand even inside declarations clang could not type
    typed = [*typed_findings(bounded.findings, bounded.error_spans), *text_raw.findings]
    result = selected(path, typed, text, options)
    status = bounded.status if bounded.status is not FileStatus.CHECKED else text_raw.status
    if status is not FileStatus.CHECKED:  # a crashing rule is worth a second look next run
        return replace(result, status=status), Outcome(data, None, typed)
    return result, Outcome(data, bounded.deps, typed)


def _bounded_findings(
    path: Path, relative: str, text: str, data: bytes, options: RunOptions, preamble: Any, bound: Any
) -> Any:
    """The file's parse, model and rules under its time and memory bounds (`Raw`, or the
    `watchdog.Stopped` that ended them); nothing to run when its selected rules read the
    text alone (they ran in `_text_findings`): neither a parse nor a bounded child."""
    if reads_text_alone_of(path, options):
        from .result_cache import Deps

        return Raw([], deps=Deps())
    from .watchdog import run_bounded  # file-timeout and a memory cap (watchdog.py)

    # here, not in each bounded child: libclang, the extractors and the (shared) preamble,
    # built or loaded once
    if not is_python(path):
        load_clang()
        if preamble is not None:
            for args in (compile_args(path, options.settings), *device_compile_args(path, data, options.settings)):
                preamble.prefetch(path, data, args)
    return (bound or run_bounded)(
        _raw_findings, (path, relative, text, data, options, preamble), float(options.config.get("file-timeout"))
    )


def load_clang() -> None:
    """libclang and the C++ extractors (with the solver they import), loaded in this process:
    a bounded child or a forked worker then starts with them."""
    from .clang.extract import extract  # noqa: F401
    from .clang.parse import get_index

    get_index()


def selected(path: Path, typed: list[Finding], text: str, options: RunOptions) -> FileResult:
    """The filter stage on a file's typed findings: selection, suppressions, severities (run
    on every result, fresh or cached, so that the cache holds findings before it)."""
    outcome = _filtered(path, typed, text, options)
    status = FileStatus.PARSE_ERROR if any(f.code == PARSE_ERROR for f in typed) else FileStatus.CHECKED
    return FileResult(str(path), sorted(outcome.findings, key=Finding.sort_key), outcome.suppressed, status=status)


def _filtered(
    path: Path, typed: list[Finding], text: str, options: RunOptions, report_unused: bool = True
) -> FilterOutcome:
    """`filter.filter_file_findings` with this run's selection and configuration."""
    config = options.config
    return filter_file_findings(
        typed,
        path=str(path),
        relative_path=config.relative(path),
        text=text,
        error_spans=[],
        selection=options.selection,
        config=config,
        report_unused=report_unused,
    )


def _text_findings(path: Path, relative: str, text: str, data: bytes, options: RunOptions) -> Raw:
    """The rules that read the text alone (`Need.TEXT`), run here rather than in the
    bounded pipeline so that they report on every file: one clang cannot parse, one past
    `file-timeout`, one whose model stops short. They get a model of the text alone."""
    from .model import SourceModel
    from .semantic import SemanticModel

    model = SemanticModel(SourceModel(path=str(path), text=text, data=data))
    return _run_rules(model, path, relative, options, text_only=True)


def _stopped_result(
    path: Path, stopped: Finding, text_findings: list[Finding], text: str, options: RunOptions, status: FileStatus
) -> FileResult:
    """A file the bounded pipeline gave up on: its KC000 and the text rules' findings, these
    through the filter stage (no unused-suppression report: the rules that a suppression
    may be meant for did not run)."""
    outcome = _filtered(path, text_findings, text, options, report_unused=False)
    findings = sorted([stopped, *outcome.findings], key=Finding.sort_key)
    return FileResult(str(path), findings, outcome.suppressed, status=status)


def read_limited(path: Path, limit: int) -> bytes:
    """The file's bytes, but never more than `limit` + 1 of them (a huge generated file is
    not read into memory only to be refused); `os.stat` gives the size for the message."""
    with open(path, "rb") as handle:
        return handle.read(limit + 1)


def _unparsable_reason(data: bytes, config: Config, path: Path | None = None) -> str:
    limit = config.get("max-file-bytes")
    if len(data) > limit:
        size = len(data)
        if path is not None:
            try:
                size = max(size, os.stat(path).st_size)
            except OSError:
                pass
        return f"file is {size} bytes, over the max-file-bytes limit of {limit}; not parsed"
    if b"\x00" in data:
        return "binary file (contains NUL bytes); not parsed"
    return ""


def _single(path: Path, message: str) -> FileResult:
    return FileResult(str(path), [parse_error(str(path), 1, 1, message)], status=FileStatus.PARSE_ERROR)


def parse_error(path: str, line: int, column: int, message: str, detail: str = "") -> Finding:
    return Finding(PARSE_ERROR, message, Location(path, line, column), Severity.ERROR, detail=detail)


def _raw_findings(path: Path, relative: str, text: str, data: bytes, options: RunOptions, preamble: Any) -> Raw:
    with _no_cycle_collection():
        if is_python(path):
            return _python_findings(path, relative, text, options)
        return _cpp_findings(path, relative, text, data, options, preamble)


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Python's cycle collector paused while one file is checked. The pipeline allocates
    hundreds of thousands of short-lived objects (cursors, spans, facts), and each burst
    makes the collector rescan every long-lived object of the process (modules, bindings,
    rules): a quarter of the model extraction's time, measured. Reference counting still
    frees what the pipeline drops; the few cycles it leaves (~60 objects per file) are
    collected once the collector runs again."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _python_findings(path: Path, relative: str, text: str, options: RunOptions) -> Raw:
    from .pymodel import build_python_model
    from .result_cache import Deps

    try:
        model = build_python_model(str(path), text)
    except SyntaxError as error:
        return Raw(
            [parse_error(str(path), error.lineno or 1, error.offset or 1, f"python syntax error: {error.msg}")],
            deps=Deps(),
        )
    except (ValueError, RecursionError) as error:
        return Raw([parse_error(str(path), 1, 1, f"python source cannot be parsed: {error}")], deps=Deps())
    return replace(_run_rules(model, path, relative, options), deps=Deps())


def _cpp_findings(path: Path, relative: str, text: str, data: bytes, options: RunOptions, preamble: Any) -> Raw:
    from .clang.deep_stack import on_deep_stack

    # deeply nested sources make clang recurse past a default stack (deep_stack.py)
    return on_deep_stack(_cpp_findings_here, path, relative, text, data, options, preamble)


def _cpp_findings_here(path: Path, relative: str, text: str, data: bytes, options: RunOptions, preamble: Any) -> Raw:
    from .clang.cursors import NestedTooDeeply
    from .clang.extract import extract
    from .clang.parse import parse_file
    from .semantic import SemanticModel

    # clang parses the raw bytes: its offsets and columns then index the file itself, as
    # the model, the rules and `--fix` expect (decoded text shifts them after a bad byte)
    unit = parse_file(path, data, options.settings, preamble)
    try:
        model = extract(unit, text, data, options.needs(path))
    except NestedTooDeeply as error:  # the model would be cut off: no rule runs on the file
        return Raw([parse_error(str(path), error.line, error.column, str(error))], deps=_unit_deps(unit, preamble))
    raw = _run_rules(SemanticModel(model), path, relative, options)
    if unit.errors:
        raw.findings.append(_clang_error_finding(str(path), unit.errors))
    return replace(raw, error_spans=model.error_spans, deps=_unit_deps(unit, preamble))


def _unit_deps(unit: Any, preamble: Any) -> Any:
    from .result_cache import Deps

    hashes = getattr(preamble, "hashes", None)
    if hashes is None:
        from .cache import FileHashes

        hashes = FileHashes()
    files = []
    for header in unit.deps:
        value = hashes.get(header)
        if value is None:
            return None  # a header that cannot be read back: do not cache
        files.append([header, value])
    groups = []
    for part in (unit, *(device.unit for device in unit.device_passes)):  # each pass's own PCH
        if part.preamble is not None:
            groups.append((part.preamble.dep_group, part.preamble.deps))
    return Deps(groups, files)


def _clang_error_finding(path: str, errors: list) -> Finding:
    first_main = next((e for e in errors if e.in_main_file), errors[0])
    quoted = [f"{e.path}:{e.line}:{e.column}: error: {e.message}" for e in errors[:MAX_QUOTED_ERRORS]]
    missing = next((e for e in errors if e.missing_header), None)
    if missing is not None:  # a dependency nobody provided: say which, and which setting provides it
        line, column = (missing.line, missing.column) if missing.in_main_file else (1, 1)
        where = "" if missing.in_main_file else f" (included from {Path(missing.path).name}:{missing.line})"
        return parse_error(
            path,
            line,
            column,
            f"clang could not parse this file: header '{missing.missing_header}' not found{where}"
            f"{_missing_header_hint(Path(path), missing.missing_header)} "
            "add the directory that holds it to `include-dirs` (or pass -I DIR)",
            detail="\n".join(quoted),
        )
    line, column = (first_main.line, first_main.column) if first_main.in_main_file else (1, 1)
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    hint = _undeclared_hint(first_main) if first_main.in_main_file else ""
    return parse_error(
        path,
        line,
        column,
        f"clang could not parse this file: {first_main.message}{more}{hint}",
        detail="\n".join(quoted),
    )


def _missing_header_hint(path: Path, header: str) -> str:
    """Where a header nobody provided comes from: the package that installs it, or the
    project's build that makes it (a Python file of the project names it)."""
    provider = header_provider(header)
    if provider:
        return f"; it comes with {provider}: install it, or"
    made_by = build_made_header(path, header)
    if made_by is not None:
        return f"; the project's build makes it ({made_by.name} names it): check the file where it is made, or"
    return ";"


SELF_CONTAINED_HINT = "; each file is checked on its own, so it must include what it uses"
MACRO_HINT = "; if the build defines it, add it to `defines` (or pass -D NAME=VALUE)"
_UNDECLARED_RE = re.compile(
    r"(?:use of undeclared identifier|unknown type name|no template named) '([^']+)'|"
    r"no (?:type|member) named '([^']+)' in namespace"
)


def _undeclared_hint(error: Any) -> str:
    """Why a name the file uses could be undeclared: a macro its build passes with -D
    (an upper-case name), else an include it relies on others to make."""
    match = _UNDECLARED_RE.match(error.message)
    if match is None:
        return ""
    name = match.group(1) or match.group(2)
    return MACRO_HINT if re.fullmatch(r"[A-Z][A-Z0-9_]*", name) else SELF_CONTAINED_HINT


def _rules_to_run(path: Path, options: RunOptions, text_only: bool) -> list[RegisteredRule]:
    """The file's selected rules (`RunOptions.plan`) that read the text alone, or the others."""
    return [r for r in options.plan(path).rules if reads_text_alone(r) == text_only]


def _run_rules(model: Any, path: Path, relative: str, options: RunOptions, text_only: bool = False) -> Raw:
    """The file's selected rules that read the text alone (`text_only`), else the others
    (the model was built for what they read: `RunOptions.plan`), then the work they
    deferred (`RuleContext.defer`: witness searches, after every rule's decisions); a rule
    that raises costs its own findings (a KC000 says which rule) and makes the file's
    status INTERNAL_ERROR."""
    table = options_table(options.config)
    raw = Raw([])
    contexts: list[RuleContext] = []
    for registered in _rules_to_run(path, options, text_only):
        context = RuleContext(registered.meta, str(path), relative, table, str(options.config.root))
        check = registered.check
        assert check is not None  # rules_for yields the rules that have a check
        _run_guarded(raw, path, context, functools.partial(check, model, context))
        contexts.append(context)
    for context in contexts:  # what the rules deferred: witnesses, after every decision
        for work in context.deferred:
            _run_guarded(raw, path, context, work)
    return raw


def _run_guarded(raw: Raw, path: Path, context: RuleContext, work: Callable[[], Iterable[Finding]]) -> None:
    """Add what a rule's `work` reports to `raw`; a rule that raises costs its own findings
    (a KC000 says which rule) and makes the file's status INTERNAL_ERROR."""
    try:
        raw.findings.extend(work())
    except Exception as error:  # a rule bug must not take the whole run down
        last = traceback.format_exception_only(type(error), error)[-1].strip()
        raw.findings.append(
            parse_error(
                str(path),
                1,
                1,
                f"internal error in rule {context.meta.code}: {last}",
                detail=traceback.format_exc(limit=4),
            )
        )
        raw.status = FileStatus.INTERNAL_ERROR


def compile_args(path: Path, settings: ParseSettings) -> list[str]:
    """The file's libclang argument list (a key of its cached result, a preamble's recipe)."""
    from .clang.parse import compile_args as clang_args

    return clang_args(path, settings)


def device_compile_args(path: Path, data: bytes, settings: ParseSettings) -> list[list[str]]:
    """The argument lists of the device passes the file may get (`parse.device_args`)."""
    if b"__CUDA_ARCH__" not in data:
        return []  # most files: no device pass
    from .clang.parse import device_args

    return device_args(path, data, settings)
