"""One file's result: its findings and its status, a value the back end reads (`finalize.py`).

The status says how much the findings can be trusted: a file the pipeline gave up on (too
slow, out of memory, crashed) has one KC000 saying so, and nothing is known about its code,
so a baseline neither records nor hides that finding and the file does not count as
checked (its old entries are kept, not counted as fixed). The status travels with the
result to the back end (`finalize.Verdict.statuses`) and into the JSON report (each
finding's `file_status`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from .finding import Finding
from .watchdog import Failed, Stopped


class FileStatus(enum.Enum):
    """How far the static pipeline got with a file."""

    CHECKED = "checked"  # every selected rule saw the whole file
    PARSE_ERROR = "parse error"  # a KC000: clang could not type all of it, or it is unreadable or binary
    NOT_CHECKED = "not checked"  # past file-timeout, out of memory, or the checking process crashed
    INTERNAL_ERROR = "internal error"  # the checker itself raised on the file

    @property
    def known(self) -> bool:
        """Whether the findings say something about the code (what a baseline may use)."""
        return self in (FileStatus.CHECKED, FileStatus.PARSE_ERROR)


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    suppressed: int = 0
    cached: bool = False
    status: FileStatus = FileStatus.CHECKED


def status_of(stopped: Stopped) -> FileStatus:
    """The status of a file whose pipeline stopped without a result."""
    return FileStatus.INTERNAL_ERROR if isinstance(stopped, Failed) else FileStatus.NOT_CHECKED
