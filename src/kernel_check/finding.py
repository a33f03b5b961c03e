"""The result type every stage produces: a finding at a source location."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Severity(enum.Enum):
    """How much a finding matters to the gate (see docs/configuration.md)."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 2, "warning": 1, "info": 0}[self.value]


@dataclass(frozen=True)
class Location:
    """A 1-based line/column position in a file (path as given to the checker)."""

    path: str
    line: int
    column: int = 1
    end_line: int | None = None
    end_column: int | None = None


@dataclass(frozen=True)
class Related:
    """A secondary location that explains a finding (the wait, the launch site...)."""

    location: Location
    message: str


@dataclass(frozen=True)
class TextEdit:
    """Replace bytes [start, end) of the file with `replacement` (UTF-8 encoded on write)."""

    start: int
    end: int
    replacement: str


@dataclass(frozen=True)
class Fix:
    """A safe, mechanical fix: a set of non-overlapping edits to one file."""

    description: str
    edits: tuple[TextEdit, ...]


@dataclass(frozen=True)
class Finding:
    """One diagnostic. `code` is stable (KC101, KD201...); `severity` may be remapped by config."""

    code: str
    message: str
    location: Location
    severity: Severity
    related: tuple[Related, ...] = ()
    fix: Fix | None = None
    detail: str = ""
    source_line: str = field(default="", compare=False)

    @property
    def path(self) -> str:
        return self.location.path

    @property
    def line(self) -> int:
        return self.location.line

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.location.path, self.location.line, self.location.column, self.code)
