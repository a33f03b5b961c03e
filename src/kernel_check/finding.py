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
class Counterexample:
    """The values a static finding's solver chose under which the defect happens, as data
    (the message says them in words): what `kernel-check confirm` builds its GPU case from.

    `sizes` are the launcher's sizes as its code names them (`N = 4096`); `shapes` the
    tensors those sizes give, by the launcher's parameter names; `strides` those of them the
    witness lays out other than contiguously (a padded row: `[9, 1]` for `[8, 8]`), in
    elements; `values` the ids read from
    memory, by the tensor they are read from; `fill` an input to fill with non-finite or
    out-of-range values (KC405's, "nan"); `thread`, `block` and `block_dim` the first
    thread that goes wrong, its block and the block's shape ((x, y, z), () where the finding
    does not say)."""

    kernel: str = ""  # the kernel's name
    launcher: str = ""  # the function whose launch the sizes belong to, qualified ("" without a contract)
    sizes: tuple[tuple[str, int], ...] = ()
    shapes: tuple[tuple[str, tuple[int, ...]], ...] = ()
    strides: tuple[tuple[str, tuple[int, ...]], ...] = ()
    values: tuple[tuple[str, int], ...] = ()
    fill: tuple[tuple[str, str], ...] = ()
    thread: tuple[int, ...] = ()
    block: tuple[int, ...] = ()
    block_dim: tuple[int, ...] = ()

    def as_json(self) -> dict[str, object]:
        """The report's form: each field by name, pairs as objects."""
        return {
            "kernel": self.kernel,
            "launcher": self.launcher,
            "sizes": dict(self.sizes),
            "shapes": {name: list(dims) for name, dims in self.shapes},
            "strides": {name: list(strides) for name, strides in self.strides},
            "values": dict(self.values),
            "fill": dict(self.fill),
            "thread": list(self.thread),
            "block": list(self.block),
            "block_dim": list(self.block_dim),
        }

    def describe(self) -> str:
        """`N=1 S=1 cache=[1,128] loc=-1 thread (0,0,0)`: one line for a table."""
        parts = [f"{name}={value}" for name, value in self.sizes]
        strides = dict(self.strides)
        parts += [f"{name}=[{_listed(dims)}]{_strides_text(strides.get(name))}" for name, dims in self.shapes]
        parts += [f"{name}:={value}" for name, value in self.values]
        parts += [f"{name}:={how}" for name, how in self.fill]
        if self.block_dim:
            parts.append(f"block of ({_listed(self.block_dim)})")
        if self.thread:
            parts.append(f"thread ({_listed(self.thread)})")
        return " ".join(parts) or "-"


def _listed(values: tuple[int, ...]) -> str:
    return ",".join(map(str, values))


def _strides_text(strides: tuple[int, ...] | None) -> str:
    """`/[9,1]`: a tensor's strides after its shape, where the witness gives them."""
    return f"/[{_listed(strides)}]" if strides else ""


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
    # the solver's values, where a static rule found them (KC4xx, KC112, KC170)
    witness: Counterexample | None = field(default=None, compare=False)

    @property
    def path(self) -> str:
        return self.location.path

    @property
    def line(self) -> int:
        return self.location.line

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.location.path, self.location.line, self.location.column, self.code)
