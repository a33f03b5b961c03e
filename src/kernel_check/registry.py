"""Rule registration: each code of the code table (`codes.py`) joined with its rule module.

A code's identity (name, stage, default severity, summary) is its line in `codes.py`. Its
rule module, `src/kernel_check/rules/<code>_<name>.py`, gives the doc page (the module docstring, in ruff
form: ## What it does / ## Why is this bad? / ## Example / ## Use instead) and, for a
static rule, the check::

    from kernel_check.registry import RuleContext, rule

    @rule("KC101", needs={Need.DECLARATIONS})
    def check(model, ctx):
        yield ctx.finding(location, "message")

`needs` says what the check reads (`Need`): the run runs its selected rules alone and builds
only what they need (`needs_of`, `pipeline.RunOptions.plan`), so `--select KC310` reads
the file's text and parses nothing.

A build (KC6xx), dynamic (KD) or meta (KC000, KC001) code's module is its docstring alone:
other stages produce its findings, but docs and reporting are shared.
"""

from __future__ import annotations

import enum
import importlib
import pkgutil
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from .codes import TABLE, Code, Language
from .finding import Counterexample, Finding, Fix, Location, Related, Severity

__all__ = [
    "Language",
    "Need",
    "RegisteredRule",
    "RuleContext",
    "RuleMeta",
    "all_rules",
    "get_rule",
    "load_rules",
    "needs_of",
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


class Need(enum.Enum):
    """What a static rule reads. A C++ rule that reads only `TEXT` runs without a parse; each
    tier-2 analysis (`src/kernel_check/clang/extract.py`) runs only when a selected rule
    needs it."""

    TEXT = "text"  # the file's bytes and lines
    PYTHON = "python"  # the Python model (pymodel.py)
    DECLARATIONS = "declarations"  # the C++ parse: functions, structs, docs, error spans
    LAUNCHES = "launches"  # clang/launches.py: `SourceModel.launches`
    INTERFACE = "interface"  # clang/kernel_interface.py: launcher facts, each launch's tensors
    DATAFLOW = "dataflow"  # clang/pointer_accesses.py: dataflow facts
    THREADS = "threads"  # clang/thread_dependence.py: divergent barriers
    INTEGERS = "integers"  # clang/index_values.py: integer facts
    SCOPE = "scope"  # clang/scope_facts.py: scope facts
    SYMBOLIC = "symbolic"  # clang/symbolic.py: symbolic offsets of global accesses
    CONTRACTS = "contracts"  # clang/symbolic.py: each launch's contract over the launcher's sizes
    NUMERICS = "numerics"  # clang/numerics.py: narrowing conversions of unbounded values
    # each kernel's solver budget (`SemanticModel.solver_budget`), which the rules that spend it
    # share in code order: a rule that spends it runs whenever a selected rule does and what
    # it reads is built, so that each finds the budget a full run leaves it
    SOLVER = "solver"


# What each need builds on: a tier-2 analysis reads the parse, the launcher facts fill in
# the tensors of the launches.
_IMPLIED = {
    Need.LAUNCHES: {Need.DECLARATIONS},
    Need.INTERFACE: {Need.DECLARATIONS, Need.LAUNCHES},
    Need.DATAFLOW: {Need.DECLARATIONS},
    Need.THREADS: {Need.DECLARATIONS},
    Need.INTEGERS: {Need.DECLARATIONS},
    Need.SCOPE: {Need.DECLARATIONS},
    Need.SYMBOLIC: {Need.DECLARATIONS},
    Need.NUMERICS: {Need.DECLARATIONS},
    Need.CONTRACTS: {Need.DECLARATIONS, Need.LAUNCHES, Need.INTERFACE},
}
_ALL_NEEDS = {
    Language.CPP: frozenset(Need) - {Need.PYTHON},
    Language.PYTHON: frozenset({Need.TEXT, Need.PYTHON}),
}


def needs_of(rules: Iterable[RegisteredRule]) -> frozenset[Need]:
    """What running `rules` takes, with what each need builds on."""
    needs = {need for registered in rules for need in registered.needs}
    return frozenset(needs.union(*(_IMPLIED.get(need, set()) for need in needs)))


@dataclass(frozen=True)
class RegisteredRule:
    meta: RuleMeta
    check: CheckFn | None = None
    # What the check reads; a rule that does not say gets everything of its language.
    needs: frozenset[Need] = frozenset()


@dataclass
class RuleContext:
    """What a rule sees besides the model, and the work it defers (`defer`).

    `path` is the file as given on the command line; `rel_path` is its POSIX path relative to
    the project root (the directory of the governing `pyproject.toml`, else the current
    directory); `options` is the `[tool.kernel-check]` table with defaults filled in; `root`
    is the project root itself ("" outside a project: the convention rules then detect no
    convention, `conventions.py`).
    """

    meta: RuleMeta
    path: str
    rel_path: str
    options: dict[str, Any] = field(default_factory=dict)
    root: str = ""
    # Work the rule runs after every selected rule's check: its witness searches, which
    # spend what each kernel's solver budget has left once every rule has decided (solver.py)
    deferred: list[Callable[[], Iterable[Finding]]] = field(default_factory=list)

    def defer(self, work: Callable[[], Iterable[Finding]]) -> None:
        """Run `work` (and report what it yields) after every selected rule's check."""
        self.deferred.append(work)

    def finding(
        self,
        location: Location,
        message: str,
        *,
        related: Iterable[Related] = (),
        fix: Fix | None = None,
        detail: str = "",
        witness: Counterexample | None = None,
    ) -> Finding:
        return Finding(
            code=self.meta.code,
            message=message,
            location=location,
            severity=self.meta.severity,
            related=tuple(related),
            fix=fix,
            detail=detail,
            witness=witness,
        )


_REGISTRY: dict[str, RegisteredRule] = {}


def _table_entry(code: str, where: str) -> Code:
    entry = TABLE.get(code)
    if entry is None:
        raise RuntimeError(f"{where}: code {code} is not in the code table (kernel_check/codes.py)")
    return entry


def _add(code: str, module: ModuleType | None, check: CheckFn | None, needs: Iterable[Need] = ()) -> None:
    where = module.__name__ if module else code
    if code in _REGISTRY:
        raise RuntimeError(f"{where}: code {code} registered twice")
    doc = ((module.__doc__ if module else None) or "").strip()
    meta = RuleMeta.of(_table_entry(code, where), doc)
    declared = frozenset(needs) or _ALL_NEEDS.get(meta.language, frozenset())
    _REGISTRY[code] = RegisteredRule(meta, check, declared)


def rule(code: str, needs: Iterable[Need] = ()) -> Callable[[CheckFn], CheckFn]:
    """Register a static rule's check for `code` (a line of the code table); the doc page is
    the module docstring. `needs`: what the check reads (everything of its language when
    not given)."""

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


def rules_for(language: Language) -> Iterator[RegisteredRule]:
    return (r for r in all_rules() if r.meta.language is language and r.check is not None)
