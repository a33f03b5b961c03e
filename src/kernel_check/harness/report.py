"""Harness output besides the findings: the kernel x check summary table and progress.

Findings go through the shared reporters (``kernel_check.report.render``); this module
adds the table a person reads at the end of a run; the progress display is the one every
command shares (``kernel_check.progress``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import codes
from ..progress import Progress

__all__ = ["Cell", "Progress", "SummaryRow", "reference_note", "render_table"]

# (column title, the code or tool it summarizes)
COLUMNS: tuple[tuple[str, str], ...] = (
    ("build", "build"),
    ("ref", codes.RESULT_MISMATCH),
    ("poison", codes.OUTPUT_NOT_WRITTEN),
    ("determ", codes.NONDETERMINISTIC),
    ("inputs", codes.INPUT_MODIFIED),
    ("bad-in", codes.BAD_INPUT_NOT_REJECTED),
    ("pdl", codes.PDL_STALE_READ),
    ("stream", codes.WRONG_STREAM),
    ("graph", codes.CUDA_GRAPH),
    ("memchk", "memcheck"),
    ("race", "racecheck"),
    ("init", "initcheck"),
    ("sync", "synccheck"),
    ("bw", codes.BANDWIDTH_BELOW_FLOOR),
)
NOT_RUN = "-"
# the KD101 cell of a spec without a reference: the only check that needs one
NO_REFERENCE = "no-ref"


@dataclass
class Cell:
    """Pass/fail of one check for one kernel, with its worst error when it failed."""

    passed: bool = True
    worst: float | None = None
    note: str = ""  # replaces the verdict: "crash", "hang", "skip", a percentage

    def merge(self, passed: bool, metric: float | None) -> None:
        if not passed:
            self.passed = False
            if metric is not None:
                self.worst = metric if self.worst is None else max(self.worst, metric)

    def text(self) -> str:
        if self.note:
            return self.note
        if self.passed:
            return "ok"
        return "FAIL" if self.worst is None else f"FAIL {self.worst:.2g}"


@dataclass
class SummaryRow:
    kernel: str
    cells: dict[str, Cell] = field(default_factory=dict)

    def cell(self, column: str) -> Cell:
        return self.cells.setdefault(column, Cell())


def render_table(rows: list[SummaryRow]) -> str:
    """A fixed-width table; ``-`` where a check did not apply or did not run."""
    header = ["kernel"] + [title for title, _ in COLUMNS]
    body = [
        [row.kernel] + [row.cells[key].text() if key in row.cells else NOT_RUN for _, key in COLUMNS] for row in rows
    ]
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule, *(line(r) for r in body)])


def reference_note(without_reference: list[str]) -> str:
    """The line under the table naming the specs that have no reference ("" when none)."""
    if not without_reference:
        return ""
    return (
        f"{len(without_reference)} spec(s) without a reference ({', '.join(without_reference)}): "
        f"ran poison, determinism, inputs, bad-input, pdl/stream/graph (against the plain launch), "
        f"the sanitizers and the value profiles' safe contracts; needs a reference: ref (KD101) and "
        f"the value profiles' match contracts"
    )
