"""Run libclang work on a thread with a deep stack.

clang's parser and semantic analysis recurse once per nesting level of the source, and by
default libclang parses on a "safety" thread of its own with an 8 MiB stack: a couple of
thousand nested parentheses, braces or template arguments overflow it and the whole process
dies with SIGSEGV (measured: 2,000 nested parentheses in one initializer are enough). With
`LIBCLANG_NOTHREADS` set libclang parses on the calling thread instead, and `on_deep_stack`
gives that thread `DEEP_STACK_BYTES`. The stack is reserved address space: only the pages a
file's nesting actually reaches are ever touched, so an ordinary file costs nothing extra.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

DEEP_STACK_BYTES = 512 << 20  # ~60x libclang's own; enough for the fuzz suite's deepest sources

_T = TypeVar("_T")


def use_calling_thread() -> None:
    """Make libclang parse on the thread that calls it (read by libclang at every parse)."""
    os.environ["LIBCLANG_NOTHREADS"] = "1"


def on_deep_stack(fn: Callable[..., _T], *args: Any) -> _T:
    """`fn(*args)` on a new thread with a `DEEP_STACK_BYTES` stack; its result or exception.

    The thread is a daemon: an interrupt in the caller ends the process without waiting for
    a parse that cannot be stopped (the caller's watchdog owns the time bound)."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = fn(*args)
        except BaseException as error:  # noqa: BLE001 - handed to the caller as is
            outcome["error"] = error

    previous = threading.stack_size(DEEP_STACK_BYTES)
    try:
        worker = threading.Thread(target=run, name="kernel-check-deep-stack", daemon=True)
        worker.start()
    finally:
        threading.stack_size(previous)
    worker.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
