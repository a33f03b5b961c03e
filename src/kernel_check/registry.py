"""Rule registration: each code of the code table (`codes.py`) joined with its rule module.

A code's identity (name, stage, default severity, summary) is its line in `codes.py`. Its
rule module, `src/kernel_check/rules/<code>_<name>.py`, gives the doc page (the module docstring, in ruff
form: ## What it does / ## Why is this bad? / ## Example / ## Use instead) and, for a
static rule, the check::

    from kernel_check.registry import RuleContext, rule

    @rule("KC101")
    def check(model, ctx):
        yield ctx.finding(location, "message")

A rule declares what it needs: the whole model (the default), or the file's text alone
(`@rule("KC310", needs=Needs.TEXT)`): a text rule gets a model holding only the path, text
and bytes, and runs on every file whatever its parse outcome (a missing header, a file
clang gives up on, a file past `file-timeout`), because nothing it reads depends on clang.

A build (KC6xx), dynamic (KD) or meta (KC000, KC001) code's module is its docstring alone:
other stages produce its findings, but docs and reporting are shared.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from types import ModuleType
from typing import Any

from .codes import TABLE, Code, Language
from .finding import Finding, Fix, Location, Related, Severity

__all__ = [
    "Language",
    "Needs",
    "RegisteredRule",
    "RuleContext",
    "RuleMeta",
    "all_rules",
    "get_rule",
    "load_rules",
    "rule",
    "rules_for",
]


@dataclass(frozen=True)
class RuleMeta:
    code: str
    name: str
    severity: Severity
    language: Language
    summary: str
    doc: str
    fixable: bool = False

    @classmethod
    def of(cls, code: Code, doc: str) -> RuleMeta:
        return cls(code.code, code.name, code.severity, code.language, code.summary, doc, code.fixable)


CheckFn = Callable[[Any, "RuleContext"], Iterable[Finding]]


class Needs(str, Enum):
    """What a static rule's check reads: the file's text alone, or the parsed model."""

    TEXT = "text"
    MODEL = "model"


@dataclass(frozen=True)
class RegisteredRule:
    meta: RuleMeta
    check: CheckFn | None = None
    needs: Needs = Needs.MODEL


@dataclass
class RuleContext:
    """What a rule sees besides the model.

    `path` is the file as given on the command line; `rel_path` is its POSIX path relative to
    the project root (the directory of the governing `pyproject.toml`, else the current
    directory); `options` is the `[tool.kernel-check]` table with defaults filled in.
    """

    meta: RuleMeta
    path: str
    rel_path: str
    options: dict[str, Any] = field(default_factory=dict)

    def finding(
        self,
        location: Location,
        message: str,
        *,
        related: Iterable[Related] = (),
        fix: Fix | None = None,
        detail: str = "",
    ) -> Finding:
        return Finding(
            code=self.meta.code,
            message=message,
            location=location,
            severity=self.meta.severity,
            related=tuple(related),
            fix=fix,
            detail=detail,
        )


_REGISTRY: dict[str, RegisteredRule] = {}


def _table_entry(code: str, where: str) -> Code:
    entry = TABLE.get(code)
    if entry is None:
        raise RuntimeError(f"{where}: code {code} is not in the code table (kernel_check/codes.py)")
    return entry


def _add(code: str, module: ModuleType | None, check: CheckFn | None, needs: Needs = Needs.MODEL) -> None:
    where = module.__name__ if module else code
    if code in _REGISTRY:
        raise RuntimeError(f"{where}: code {code} registered twice")
    doc = ((module.__doc__ if module else None) or "").strip()
    _REGISTRY[code] = RegisteredRule(RuleMeta.of(_table_entry(code, where), doc), check, needs)


def rule(code: str, needs: Needs = Needs.MODEL) -> Callable[[CheckFn], CheckFn]:
    """Register a static rule's check for `code` (a line of the code table); the doc page is
    the module docstring; `needs`: what the check reads (see the module docstring)."""

    def decorate(fn: CheckFn) -> CheckFn:
        _add(code, sys.modules.get(fn.__module__), fn, needs)
        return fn

    return decorate


_loaded = False


def load_rules() -> None:
    """Import every module of the rule pack once, so each registers itself."""
    global _loaded
    if _loaded:
        return
    from . import rules as pack  # kernel_check.rules

    for info in sorted(pkgutil.iter_modules(pack.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{pack.__name__}.{info.name}")
        code = info.name[:5].upper()
        entry = _table_entry(code, module.__name__)
        if info.name != f"{code.lower()}_{entry.name.replace('-', '_')}":
            raise RuntimeError(
                f"{module.__name__}: the module of {code} is named "
                f"{code.lower()}_{entry.name.replace('-', '_')}.py (its name in the code table)"
            )
        if code not in _REGISTRY:  # a code another stage reports: the module is its doc page
            _add(code, module, None)
    _loaded = True


def all_rules() -> list[RegisteredRule]:
    load_rules()
    return [_REGISTRY[c] for c in sorted(_REGISTRY)]


def get_rule(code: str) -> RegisteredRule | None:
    load_rules()
    return _REGISTRY.get(code.upper())


def rules_for(language: Language, needs: Needs | None = None) -> Iterator[RegisteredRule]:
    """The static rules of `language` that have a check; with `needs`, only those that need it."""
    return (
        r
        for r in all_rules()
        if r.meta.language is language and r.check is not None and (needs is None or r.needs is needs)
    )
