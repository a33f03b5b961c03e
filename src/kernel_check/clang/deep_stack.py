"""Run libclang work on a thread with a deep stack.

clang's parser and semantic analysis recurse once per nesting level of the source, and by
default libclang parses on a "safety" thread of its own with an 8 MiB stack: a couple of
thousand nested parentheses, braces or template arguments overflow it and the whole process
dies with SIGSEGV (measured: 2,000 nested parentheses in one initializer are enough). With
`LIBCLANG_NOTHREADS` set libclang parses on the calling thread instead, and `on_deep_stack`
gives that thread `DEEP_STACK_BYTES`. The stack is reserved address space: only the pages a
file's nesting actually reaches are ever touched, so an ordinary file costs nothing extra.
Reserved address space still counts against `RLIMIT_AS` (the watchdog's memory bound): where
the limit leaves no room for the full stack, a smaller one is taken, down to libclang's own.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

DEEP_STACK_BYTES = 512 << 20  # ~60x libclang's own; enough for the fuzz suite's deepest sources
SMALLEST_STACK_BYTES = 8 << 20  # libclang's own safety thread: below it nothing is gained

_T = TypeVar("_T")


def use_calling_thread() -> None:
    """Make libclang parse on the thread that calls it (read by libclang at every parse)."""
    os.environ["LIBCLANG_NOTHREADS"] = "1"


def on_deep_stack(fn: Callable[..., _T], *args: Any) -> _T:
    """`fn(*args)` on a new thread with a `DEEP_STACK_BYTES` stack; its result or exception.

    The thread is a daemon: an interrupt in the caller ends the process without waiting for
    a parse that cannot be stopped (the caller's watchdog owns the time bound). Where no
    thread fits under the address-space limit at all, `fn` runs here: its own allocations
    then meet the same limit and fail as the watchdog expects of a file that needs too much."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = fn(*args)
        except BaseException as error:  # handed to the caller as is
            outcome["error"] = error

    worker = _started(run)
    if worker is None:
        return fn(*args)
    worker.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _started(run: Callable[[], None]) -> threading.Thread | None:
    """A daemon thread running `run`, started with the deepest stack the address-space
    limit leaves room for; None where not even `SMALLEST_STACK_BYTES` fits."""
    size = DEEP_STACK_BYTES
    while size >= SMALLEST_STACK_BYTES:
        previous = threading.stack_size(size)
        try:
            worker = threading.Thread(target=run, name="kernel-check-deep-stack", daemon=True)
            worker.start()
            return worker
        except RuntimeError:  # "can't start new thread": the stack did not fit under RLIMIT_AS
            size //= 2
        finally:
            threading.stack_size(previous)
    return None
