"""Running one child process with event streaming and two timeouts (start-up, per case).

The child is the leader of a new process group, so a hang is ended by killing that
group (the child and anything it started, compute-sanitizer's target included).

``stop_all()`` ends every running child and refuses new ones: a run interrupted by a
signal or its overall time limit still reports what finished (``ChildExit.stopped``
tells the caller that an ending was not the kernel's doing).
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO

from .protocol import EVENT_PREFIX

OUTPUT_TAIL_LINES = 200
POLL_SECONDS = 0.5  # how soon a running child notices stop_all()

_stopping = threading.Event()


def stop_all() -> None:
    """Kill the running children and start no more (safe from a signal handler)."""
    _stopping.set()


def stopping() -> bool:
    return _stopping.is_set()


def reset_stop() -> None:
    """Allow children again (a new run in the same process, e.g. the next pytest item)."""
    _stopping.clear()


@dataclass
class ChildExit:
    """How a child ended: its status, the events it sent, the rest of its output."""

    returncode: int | None
    events: list[dict] = field(default_factory=list)
    output: list[str] = field(default_factory=list)
    timed_out: bool = False
    stopped: bool = False  # ended by stop_all(), not by itself or a timeout
    running_case: int | None = None  # the case that had begun and not ended

    @property
    def output_tail(self) -> str:
        return "\n".join(self.output[-OUTPUT_TAIL_LINES:])


def _reader(stream: IO[str], lines: queue.Queue[str | None]) -> None:
    for raw in iter(stream.readline, ""):
        lines.put(raw.rstrip("\n"))
    lines.put(None)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run_child(
    command: Sequence[str],
    env: Mapping[str, str],
    *,
    startup_timeout: float,
    case_timeout: float,
    on_event: Callable[[dict], None] | None = None,
    keep_output: bool = False,
) -> ChildExit:
    """Run ``command``; a timeout starts at launch and again at every ``begin`` event."""
    if stopping():
        return ChildExit(returncode=None, stopped=True)
    proc = subprocess.Popen(
        list(command),
        env=dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True).start()
    result = ChildExit(returncode=None)
    deadline = time.monotonic() + startup_timeout
    while True:
        if stopping():
            result.stopped = True
            _kill_group(proc)
            break
        try:
            line = lines.get(timeout=min(POLL_SECONDS, max(0.05, deadline - time.monotonic())))
        except queue.Empty:
            if time.monotonic() < deadline:
                continue
            result.timed_out = True
            _kill_group(proc)
            break
        if line is None:
            break
        if not line.startswith(EVENT_PREFIX):
            result.output.append(line)
            if not keep_output and len(result.output) > 4 * OUTPUT_TAIL_LINES:
                del result.output[:-OUTPUT_TAIL_LINES]
            continue
        event = json.loads(line[len(EVENT_PREFIX) :])
        result.events.append(event)
        if event["event"] == "begin":
            result.running_case = event["case"]
            deadline = time.monotonic() + case_timeout
        elif event["event"] in ("end", "fatal"):
            result.running_case = None if event["event"] == "end" else event["case"]
            deadline = time.monotonic() + case_timeout
        if on_event is not None:
            on_event(event)
    result.returncode = proc.wait()
    return result
