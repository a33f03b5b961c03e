"""One progress display for every long command: the static check, `build` and `test`.

On a terminal it is one status line rewritten in place, `[done/total elapsed] what`;
`log` adds one kept line per finished unit (on a terminal above the status line, else
plain lines: a CI log). Without `log` nothing at all is written off a terminal, so a pipe
or a machine-readable report never sees it. `delay` holds the live line back until the
run has taken that long: a quick run prints nothing extra.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import TextIO

_ERASE_LINE = "\r\x1b[K"


class Progress:
    """Thread-safe progress: a status line on a terminal, one line per finished unit otherwise."""

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        live: bool | None = None,
        enabled: bool = True,
        log: bool = True,
        delay: float = 0.0,
    ):
        self.stream = stream or sys.stderr
        self.live = is_terminal(self.stream) if live is None else live
        self.enabled = enabled
        self.log = log
        self.delay = delay
        self.total = 0
        self.done = 0
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._current = ""
        self._shown = False  # a live line is on the screen (close() erases it)

    def add(self, units: int) -> None:
        with self._lock:
            self.total += units

    def status(self, text: str) -> None:
        """What is running now (shown live only)."""
        with self._lock:
            self._current = text
            self._write(text, final=False)

    def finished(self, text: str = "") -> None:
        """One unit of work done (a file, a build, a spec's cases, a sanitizer run)."""
        with self._lock:
            self.done += 1
            self._write(text or self._current, final=True)

    def tick(self) -> None:
        """Redraw the live line, so the elapsed time moves while a long unit runs."""
        with self._lock:
            self._write(self._current, final=False)

    def close(self) -> None:
        """Erase the live line (what the command prints next starts on a clean line)."""
        with self._lock:
            if self._shown:
                self.stream.write(_ERASE_LINE)
                self.stream.flush()
                self._shown = False

    def _write(self, text: str, *, final: bool) -> None:
        if not self.enabled:
            return
        elapsed = time.monotonic() - self.started
        line = f"[{self.done}/{self.total} {elapsed:.0f}s] {text}"
        if self.live:
            if elapsed < self.delay:
                return
            keep = final and self.log
            self.stream.write(_ERASE_LINE + _fit(line, self.stream) + ("\n" if keep else ""))
            self._shown = not keep
        elif final and self.log:
            self.stream.write(line + "\n")
        else:
            return
        self.stream.flush()


def is_terminal(stream: TextIO) -> bool:
    """A terminal that takes escape sequences (the live line's erase, colors): not one that
    TERM=dumb declares to take none (Emacs' shell buffer, some CI runners)."""
    if os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _fit(line: str, stream: TextIO) -> str:
    """`line` cut to the terminal's width: a wrapped line could not be rewritten in place."""
    try:
        width = os.get_terminal_size(stream.fileno()).columns or 80  # 0: a terminal with no size set
    except (AttributeError, OSError, ValueError):
        width = 80
    return line if len(line) < width else line[: max(1, width - 2)] + "~"
