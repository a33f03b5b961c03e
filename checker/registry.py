"""Rule registration: every rule module declares its metadata and (for static rules) a check.

A rule module in `rules/` looks like::

    '''<doc page in ruff form: ## What it does / ## Why is this bad? / ## Example / ## Use instead>'''
    from kernel_check.registry import Language, rule
    from kernel_check.finding import Severity

    @rule("KC101", "restrict-readonly-pointer", Severity.ERROR, Language.CPP,
          summary="read-only kernel pointer lacks __restrict__", fixable=True)
    def check(model, ctx):
        yield ctx.finding(location, "message")

Build (KC6xx) and dynamic (KD) codes register metadata only with `declare(...)`; their
findings come from the build and harness stages, but they share docs and reporting.
"""

from __future__ import annotations

import enum
import importlib
import pkgutil
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

from .finding import Finding, Fix, Location, Related, Severity


class Language(enum.Enum):
    """Which stage produces a code's findings."""

    CPP = "cpp"
    PYTHON = "python"
    BUILD = "build"
    DYNAMIC = "dynamic"
    META = "meta"


@dataclass(frozen=True)
class RuleMeta:
    code: str
    name: str
    severity: Severity
    language: Language
    summary: str
    doc: str
    fixable: bool = False


CheckFn = Callable[[Any, "RuleContext"], Iterable[Finding]]


@dataclass(frozen=True)
class RegisteredRule:
    meta: RuleMeta
    check: CheckFn | None = None


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


def _module_doc(fn: Callable[..., Any] | None, module_name: str) -> str:
    module = sys.modules.get(module_name)
    return ((module.__doc__ if module else None) or (fn.__doc__ if fn else None) or "").strip()


def _add(meta: RuleMeta, check: CheckFn | None) -> None:
    existing = _REGISTRY.get(meta.code)
    if existing is not None and existing.meta.name != meta.name:
        raise RuntimeError(f"rule code {meta.code} registered twice ({existing.meta.name}, {meta.name})")
    _REGISTRY[meta.code] = RegisteredRule(meta, check)


def rule(
    code: str,
    name: str,
    severity: Severity,
    language: Language,
    *,
    summary: str,
    fixable: bool = False,
) -> Callable[[CheckFn], CheckFn]:
    """Register a static rule's check function; the doc page is the module docstring."""

    def decorate(fn: CheckFn) -> CheckFn:
        doc = _module_doc(fn, fn.__module__)
        _add(RuleMeta(code, name, severity, language, summary, doc, fixable), fn)
        return fn

    return decorate


def declare(
    code: str, name: str, severity: Severity, language: Language, *, summary: str, module: str
) -> None:
    """Register a code whose findings another stage (build, harness) produces."""
    _add(RuleMeta(code, name, severity, language, summary, _module_doc(None, module)), None)


_loaded = False


def load_rules() -> None:
    """Import every module of the rule pack once, so each registers itself."""
    global _loaded
    if _loaded:
        return
    from . import rules as pack  # kernel_check.rules

    for info in sorted(pkgutil.iter_modules(pack.__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"{pack.__name__}.{info.name}")
    _loaded = True


def all_rules() -> list[RegisteredRule]:
    load_rules()
    return [_REGISTRY[c] for c in sorted(_REGISTRY)]


def get_rule(code: str) -> RegisteredRule | None:
    load_rules()
    return _REGISTRY.get(code.upper())


def rules_for(language: Language) -> Iterator[RegisteredRule]:
    return (r for r in all_rules() if r.meta.language is language and r.check is not None)
