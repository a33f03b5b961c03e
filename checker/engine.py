"""The static pipeline for one file and for a run: read -> parse -> model -> rules -> filter.

`check_file` is self-contained and picklable-argument-only so a process pool (and the
result cache) can run it; `run_static` orders results deterministically.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .clang.parse import ParseSettings
from .config import Config
from .discover import is_python
from .filter import PARSE_ERROR, Selection, filter_file_findings
from .finding import Finding, Location, Severity
from .model import Span
from .registry import Language, RuleContext, rules_for

MAX_QUOTED_ERRORS = 3


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    suppressed: int = 0
    cached: bool = False


@dataclass(frozen=True)
class RunOptions:
    """Everything a worker needs besides the path (kept small: it is pickled per task)."""

    config: Config
    settings: ParseSettings
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()


def _options_table(config: Config) -> dict[str, Any]:
    from .config import OPTIONS

    return {option.key: config.get(option.key) for option in OPTIONS}


def check_file(path: Path, options: RunOptions) -> FileResult:
    """Run the whole static pipeline on one file; never raises for a bad input file."""
    config = options.config
    relative = config.relative(path)
    try:
        data = path.read_bytes()
    except OSError as error:
        return _single(path, f"cannot read file: {error.strerror or error}")
    problem = _unparsable_reason(data, config)
    if problem:
        return _single(path, problem)
    text = data.decode("utf-8", errors="replace")
    raw, error_spans = _raw_findings(path, relative, text, data, options)
    selection = Selection(config, list(options.select), list(options.ignore))
    outcome = filter_file_findings(raw, path=str(path), relative_path=relative, text=text,
                                   error_spans=error_spans, selection=selection, config=config)
    findings = sorted(outcome.findings, key=Finding.sort_key)
    return FileResult(str(path), findings, outcome.suppressed)


def _unparsable_reason(data: bytes, config: Config) -> str:
    limit = config.get("max-file-bytes")
    if len(data) > limit:
        return f"file is {len(data)} bytes, over the max-file-bytes limit of {limit}; not parsed"
    if b"\x00" in data:
        return "binary file (contains NUL bytes); not parsed"
    return ""


def _single(path: Path, message: str) -> FileResult:
    return FileResult(str(path), [parse_error(str(path), 1, 1, message)])


def parse_error(path: str, line: int, column: int, message: str, detail: str = "") -> Finding:
    return Finding(PARSE_ERROR, message, Location(path, line, column), Severity.ERROR, detail=detail)


def _raw_findings(path: Path, relative: str, text: str, data: bytes,
                  options: RunOptions) -> tuple[list[Finding], list[Span]]:
    if is_python(path):
        return _python_findings(path, relative, text, options), []
    return _cpp_findings(path, relative, text, data, options)


def _python_findings(path: Path, relative: str, text: str, options: RunOptions) -> list[Finding]:
    from .pymodel import build_python_model

    try:
        model = build_python_model(str(path), text)
    except SyntaxError as error:
        return [parse_error(str(path), error.lineno or 1, error.offset or 1,
                            f"python syntax error: {error.msg}")]
    except (ValueError, RecursionError) as error:
        return [parse_error(str(path), 1, 1, f"python source cannot be parsed: {error}")]
    return _run_rules(Language.PYTHON, model, path, relative, options)


def _cpp_findings(path: Path, relative: str, text: str, data: bytes,
                  options: RunOptions) -> tuple[list[Finding], list[Span]]:
    from .clang.extract import extract
    from .clang.parse import parse_file

    unit = parse_file(path, text, options.settings)
    model = extract(unit, text, data)
    findings = _run_rules(Language.CPP, model, path, relative, options)
    if unit.errors:
        findings.append(_clang_error_finding(str(path), unit.errors))
    return findings, model.error_spans


def _clang_error_finding(path: str, errors: list) -> Finding:
    first_main = next((e for e in errors if e.in_main_file), errors[0])
    quoted = [f"{e.path}:{e.line}:{e.column}: error: {e.message}" for e in errors[:MAX_QUOTED_ERRORS]]
    line, column = (first_main.line, first_main.column) if first_main.in_main_file else (1, 1)
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return parse_error(path, line, column, f"clang could not parse this file: {first_main.message}{more}",
                       detail="\n".join(quoted))


def _run_rules(language: Language, model: Any, path: Path, relative: str,
               options: RunOptions) -> list[Finding]:
    table = _options_table(options.config)
    findings: list[Finding] = []
    for registered in rules_for(language):
        context = RuleContext(registered.meta, str(path), relative, table)
        try:
            findings.extend(registered.check(model, context))
        except Exception as error:  # a rule bug must not take the whole run down
            last = traceback.format_exception_only(type(error), error)[-1].strip()
            findings.append(parse_error(str(path), 1, 1,
                                        f"internal error in rule {registered.meta.code}: {last}",
                                        detail=traceback.format_exc(limit=4)))
    return findings


def run_static(paths: list[Path], options: RunOptions) -> list[FileResult]:
    """Check files in order (the speed stage replaces this with cache + pool)."""
    return [check_file(path, options) for path in paths]
