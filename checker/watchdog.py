"""Per-file bounds: run one unit of work in a child process that can be killed.

A libclang parse runs in C: no Python signal handler runs until it returns and a thread
cannot be stopped, so the only bound that always holds is a process. `run_bounded` forks
a child, runs `fn(*args)` there and returns what `fn` returned -- or a `Stopped` that says
why there is no result:

* `TimedOut`: the child ran past `timeout` seconds and was killed (SIGKILL);
* `OutOfMemory`: `fn` failed at the child's address-space limit (see below);
* `Crashed`: the child died (a signal, e.g. a segfault inside libclang) or exited
  without a result;
* `Failed`: `fn` raised; the exception's type, text and traceback are kept.

`Stopped.message` is one line for a KC000 finding; `Stopped.detail` the longer story.

The child is set up so that one bad source cannot hurt the run or the machine:

* its address space is limited (`RLIMIT_AS`) to what the parent uses now plus
  `memory_headroom` bytes (default `DEFAULT_MEMORY_HEADROOM`): a file that includes
  `/dev/zero` makes clang read until that limit and fail, instead of eating the machine;
* its stdin is `/dev/null`: a file that includes `/dev/stdin` cannot wait on a terminal;
* on Linux it dies with its parent (`PR_SET_PDEATHSIG`): a pool worker killed for a
  timeout takes its child along, no parse keeps burning a core;
* it ignores SIGINT (the parent handles ^C and kills it) and leaves with `os._exit`
  (no atexit handler, no second flush of the parent's buffered output).

`fn` and `args` reach the child through the fork (nothing is pickled); only the result
comes back, pickled. What the child changes in memory (caches, counters) is lost with
it, what it writes to disk (a precompiled preamble, a cache entry) stays: load shared
state before calling (the engine loads libclang and the file's preamble first).

`timeout` None or <= 0, or a platform without `os.fork`: `fn` runs in this process,
unbounded (an exception still becomes `Failed`). A `KeyboardInterrupt` or `SystemExit`
in this process is never swallowed: the child is killed and the exception goes on.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

DEFAULT_MEMORY_HEADROOM = 4 << 30  # bytes a bounded call may add to the parent's size
_CAN_FORK = hasattr(os, "fork") and sys.platform != "win32"
_READ_CHUNK = 1 << 16
_REAP_GRACE_S = 2.0  # after the result arrived, how long the child may take to exit
_STDERR_KEEP = 1 << 14  # bytes of the child's stderr kept (the rest is read and dropped)


@dataclass(frozen=True)
class Stopped:
    """No result: why. `message` is one line; `detail` may be several."""

    message: str
    detail: str = ""


@dataclass(frozen=True)
class TimedOut(Stopped):
    limit: float = 0.0


@dataclass(frozen=True)
class OutOfMemory(Stopped):
    limit_bytes: int = 0


@dataclass(frozen=True)
class Crashed(Stopped):
    signal: int | None = None  # the signal that ended the child, if one did
    exit_code: int | None = None


@dataclass(frozen=True)
class Failed(Stopped):
    error_type: str = ""


def timed_out_message(limit: float) -> str:
    return f"not checked: the static pipeline took longer than file-timeout ({limit:g} s)"


def run_bounded(fn: Callable[..., Any], args: tuple[Any, ...] = (), timeout: float | None = None, *,
                memory_headroom: int | None = DEFAULT_MEMORY_HEADROOM) -> Any:
    """`fn(*args)` in a killable child, at most `timeout` seconds; its result or a `Stopped`.

    What the child writes to stderr (libclang's crash reports, Python warnings) is
    captured: replayed on this process's stderr after a result, kept in `detail` when
    there is none."""
    if timeout is None or timeout <= 0 or not _CAN_FORK:
        return _run_inline(fn, args)
    memory = _Memory.now(memory_headroom)
    deadline = time.monotonic() + float(timeout)
    for stream in (sys.stdout, sys.stderr):
        _flush(stream)  # else the child's exit could repeat what the parent had buffered
    result_r, result_w = os.pipe()
    errors_r, errors_w = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(result_r)
        os.close(errors_r)
        _child(fn, args, result_w, errors_w, parent, memory.limit)
    os.close(result_w)
    os.close(errors_w)
    try:
        payload, errors, complete = _read_all(result_r, errors_r, deadline)
    except BaseException:
        _kill(pid)
        raise
    finally:
        os.close(result_r)
        os.close(errors_r)
    if not complete:
        _kill(pid)
        return TimedOut(timed_out_message(float(timeout)), _tail(errors), limit=float(timeout))
    outcome = _decode(payload, _reap(pid), memory, _tail(errors))
    if errors and not isinstance(outcome, Stopped):
        _replay(errors)
    return outcome


@dataclass(frozen=True)
class _Memory:
    """The child's RLIMIT_AS (None: no limit) and this process's size when it was set."""

    limit: int | None
    base: int = 0

    @classmethod
    def now(cls, headroom: int | None) -> _Memory:
        if headroom is None:
            return cls(None)
        size = _virtual_size()
        if size is None:
            return cls(None)
        limit = size + int(headroom)
        try:
            import resource

            soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
        except (ImportError, OSError, ValueError):
            return cls(None)
        if soft != resource.RLIM_INFINITY and soft < limit:
            limit = soft  # a stricter limit someone set already stands
        return cls(limit, size)

    def exhausted(self, peak: int | None) -> bool:
        """Whether a failure at this peak size is the limit's doing: the child had used at
        least half of its headroom (an allocator asks for big blocks: the one that failed
        may have been far larger than what was left)."""
        if self.limit is None or not peak:
            return False
        return peak - self.base >= (self.limit - self.base) // 2


# -- this process --------------------------------------------------------------------------
def _run_inline(fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    try:
        return fn(*args)
    except Exception as error:
        return _failed(error, traceback.format_exc())


def _flush(stream: Any) -> None:
    try:
        stream.flush()
    except (AttributeError, OSError, ValueError):
        pass


def _read_all(result_fd: int, errors_fd: int, deadline: float) -> tuple[bytes, bytes, bool]:
    """What the child writes to both pipes, until the result pipe's end of file (True) or
    the deadline (False). Both are drained together: a full stderr pipe would block it."""
    import selectors

    chunks: dict[int, list[bytes]] = {result_fd: [], errors_fd: []}
    kept = {result_fd: 0, errors_fd: 0}
    with selectors.DefaultSelector() as selector:
        selector.register(result_fd, selectors.EVENT_READ)
        selector.register(errors_fd, selectors.EVENT_READ)
        open_fds = {result_fd, errors_fd}
        complete = False
        while open_fds:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            for key, _ in selector.select(remaining):
                chunk = os.read(key.fd, _READ_CHUNK)
                if not chunk:
                    selector.unregister(key.fd)
                    open_fds.discard(key.fd)
                    complete = complete or key.fd == result_fd
                    continue
                if key.fd == errors_fd and kept[errors_fd] > _STDERR_KEEP:
                    continue  # drain, keep the start (where the first complaint is)
                chunks[key.fd].append(chunk)
                kept[key.fd] += len(chunk)
            if complete and errors_fd not in open_fds:
                break
            if complete:  # the result is in; stderr closes when the child exits
                deadline = min(deadline, time.monotonic() + _REAP_GRACE_S)
    return b"".join(chunks[result_fd]), b"".join(chunks[errors_fd]), complete


def _tail(errors: bytes) -> str:
    return errors.decode("utf-8", errors="replace").strip()


def _replay(errors: bytes) -> None:
    try:
        sys.stderr.write(errors.decode("utf-8", errors="replace"))
        sys.stderr.flush()
    except (AttributeError, OSError, ValueError):
        pass


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def _reap(pid: int) -> int | None:
    """The child's wait status once it exits (it should, right after writing)."""
    end = time.monotonic() + _REAP_GRACE_S
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return None
        if done:
            return status
        if time.monotonic() >= end:
            _kill(pid)
            return None
        time.sleep(0.005)


def _decode(payload: bytes, status: int | None, memory: _Memory, errors: str) -> Any:
    if not payload:
        return _crashed(status, "it exited without a result", errors)
    try:
        kind, value = pickle.loads(payload)
    except Exception as error:  # a torn message: the child died while writing it
        return _crashed(status, f"its result could not be read back ({type(error).__name__})", errors)
    if kind == "ok":
        return value
    error_type, text, trace, peak = value
    detail = "\n".join(part for part in (trace.strip(), errors) if part)
    if error_type == "MemoryError" or memory.exhausted(peak):
        mib = (memory.limit or 0) >> 20
        return OutOfMemory(f"not checked: the static pipeline ran out of memory on this file "
                           f"(a {mib} MiB address-space limit)", detail, limit_bytes=memory.limit or 0)
    return Failed(f"internal error: {error_type}: {text}" if text else f"internal error: {error_type}",
                  detail, error_type=error_type)


def _crashed(status: int | None, why: str, errors: str) -> Crashed:
    if status is not None and os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        name = _signal_name(number)
        hint = " (perhaps out of memory)" if number == signal.SIGKILL else ""
        detail = "\n".join(part for part in (f"the checking process was ended by {name}; {why}", errors) if part)
        return Crashed(f"not checked: the static pipeline crashed on this file ({name}){hint}",
                       detail, signal=number)
    code = os.WEXITSTATUS(status) if status is not None and os.WIFEXITED(status) else None
    detail = "\n".join(part for part in (f"the checking process ended with status {code}; {why}", errors) if part)
    return Crashed(f"not checked: the static pipeline crashed on this file (exit status {code})",
                   detail, exit_code=code)


def _failed(error: BaseException, trace: str) -> Failed:
    last = traceback.format_exception_only(type(error), error)[-1].strip()
    return Failed(f"internal error: {last}", trace, error_type=type(error).__name__)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _virtual_size() -> int | None:
    try:
        with open("/proc/self/statm", "rb") as stream:
            pages = int(stream.read().split()[0])
        return pages * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _peak_virtual_size() -> int | None:
    try:
        with open("/proc/self/status", "rb") as stream:
            for line in stream:
                if line.startswith(b"VmPeak:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


# -- the child -----------------------------------------------------------------------------
def _child(fn: Callable[..., Any], args: tuple[Any, ...], result_fd: int, errors_fd: int,
           parent: int, limit_bytes: int | None) -> None:
    code = 0
    try:
        _child_setup(parent, errors_fd, limit_bytes)
        try:
            message = ("ok", fn(*args))
        except BaseException as error:  # noqa: BLE001 - everything goes back to the parent
            text = str(error).strip().splitlines()[0] if str(error).strip() else ""
            message = ("raised", (type(error).__name__, text, traceback.format_exc(),
                                  _peak_virtual_size()))
        try:
            data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException as error:  # noqa: BLE001 - an unpicklable result
            data = pickle.dumps(("raised", (type(error).__name__, f"the result cannot be sent back: {error}",
                                            "", None)), protocol=pickle.HIGHEST_PROTOCOL)
        for stream in (sys.stdout, sys.stderr):
            _flush(stream)
        view = memoryview(data)
        while view:
            written = os.write(result_fd, view)
            view = view[written:]
    except BaseException:  # noqa: BLE001 - nothing may escape into the parent's code
        code = 70
    finally:
        os._exit(code)


def _child_setup(parent: int, errors_fd: int, limit_bytes: int | None) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent()
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(71)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(errors_fd, 2)  # libclang's crash reports and Python's warnings go to the parent
    os.close(errors_fd)
    import faulthandler

    if faulthandler.is_enabled():  # its dump belongs in the captured stderr too, not on a terminal
        faulthandler.enable(file=2, all_threads=True)
    if limit_bytes is not None:
        try:
            import resource

            _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
            if hard != resource.RLIM_INFINITY:
                limit_bytes = min(limit_bytes, hard)
            resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, hard))
        except (ImportError, OSError, ValueError):
            pass


def _die_with_parent() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
