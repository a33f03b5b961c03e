"""Per-file bounds: run one unit of work in a child process that can be killed.

A libclang parse runs in C: no Python signal handler runs until it returns and a thread
cannot be stopped, so the only bound that always holds is a process. `run_bounded` forks
a child, runs `fn(*args)` there and returns what `fn` returned -- or a `Stopped` that says
why there is no result:

* `TimedOut`: the child used more than `timeout` seconds of CPU time, or waited past the
  wall-clock backstop (see `Clock`), and was killed (SIGKILL); `bound` says which;
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
  (no atexit handler, no second flush of the parent's buffered output);
* its cycle collector leaves the objects it inherited alone (`gc.freeze`): walking them
  would cost time and copy their pages, for nothing the child's exit does not free.

`fn` and `args` reach the child through the fork (nothing is pickled); only the result
comes back, pickled. What the child changes in memory (caches, counters) is lost with
it, what it writes to disk (a precompiled preamble, a cache entry) stays: load shared
state before calling (the engine loads libclang and the file's preamble first).

`timeout` None or <= 0, or a platform without `os.fork`: `fn` runs in this process,
unbounded (an exception still becomes `Failed`). A `KeyboardInterrupt` or `SystemExit`
in this process is never swallowed: the child is killed and the exception goes on.

`BoundHere` gives the same outcomes without the fork, for a process that its parent
watches and kills (a pool worker); `lost` and `killed` are the parent's side of it.
"""

from __future__ import annotations

import gc
import os
import pickle
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

DEFAULT_MEMORY_HEADROOM = 4 << 30  # bytes a bounded call may add to the parent's size
_CAN_FORK = hasattr(os, "fork") and sys.platform != "win32"
_READ_CHUNK = 1 << 16
_REAP_GRACE_S = 2.0  # after the result arrived, how long the child may take to exit
_STDERR_KEEP = 1 << 14  # bytes of the child's stderr kept (the rest is read and dropped)
WALL_FACTOR = 3.0  # the wall-clock backstop: this many times the CPU limit, times the load per CPU
CPU_POLL_S = 0.1  # how often a watcher reads a bounded process's CPU time


@dataclass(frozen=True)
class Stopped:
    """No result: why. `message` is one line; `detail` may be several."""

    message: str
    detail: str = ""


@dataclass(frozen=True)
class TimedOut(Stopped):
    limit: float = 0.0
    bound: str = "cpu"  # "cpu": the CPU-time limit; "wall": the wall-clock backstop


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
    """A unit of work that no `Clock` watched (a preamble build, a worker's backstop) ran past
    `limit` seconds of wall-clock time."""
    return f"not checked: the static pipeline took longer than file-timeout ({limit:g} s)"


@dataclass(frozen=True)
class Clock:
    """A call's time bound. The limit is CPU time: on a loaded machine a parse gets a smaller
    share of a core and takes longer, but not more CPU, so the machine's load does not turn
    files into "not checked". A call that waits (a blocking read, a stopped process) uses no
    CPU, so a wall-clock backstop stays: `WALL_FACTOR` times the limit, scaled up by the load
    average per CPU when the call starts. Where a process's CPU time cannot be read (no
    /proc), the limit is wall-clock time, as before.

    Picklable: a pool worker starts the clock and sends it to the parent, which watches."""

    limit: float  # seconds of CPU time
    wall: float  # seconds of wall-clock time
    started: float  # time.monotonic() at the start (a system-wide clock)
    cpu_start: float | None  # the process's CPU seconds at the start; None: wall-clock only

    @classmethod
    def start(cls, limit: float, pid: int | str = "self") -> Clock:
        cpu = cpu_seconds(pid)
        if cpu is not None and pid != "self":
            cpu = 0.0  # a child forked for the call: its CPU time started at zero
        wall = limit * WALL_FACTOR * _load_per_cpu() if cpu is not None else limit
        return cls(limit, wall, time.monotonic(), cpu)

    @property
    def deadline(self) -> float:
        return self.started + self.wall

    def exceeded(self, pid: int | str = "self", errors: str = "") -> TimedOut | None:
        """Which bound process `pid` has passed since the start (None: neither)."""
        used = cpu_seconds(pid) if self.cpu_start is not None else None
        if used is not None and self.cpu_start is not None and used - self.cpu_start > self.limit:
            return TimedOut(
                f"not checked: the static pipeline used more than file-timeout ({self.limit:g} s) "
                "of CPU time on this file",
                errors,
                limit=self.limit,
                bound="cpu",
            )
        if time.monotonic() - self.started <= self.wall:
            return None
        if self.cpu_start is None:
            return TimedOut(timed_out_message(self.limit), errors, limit=self.limit, bound="wall")
        return TimedOut(
            f"not checked: the static pipeline waited longer than {self.wall:.0f} s of wall-clock "
            f"time on this file (file-timeout ({self.limit:g} s) is CPU time; the wall-clock bound "
            f"is {WALL_FACTOR:g}x that, scaled by the machine's load)",
            errors,
            limit=self.limit,
            bound="wall",
        )

    def next_check(self) -> float:
        """Seconds until this clock is worth reading again."""
        left = self.deadline - time.monotonic()
        return max(0.0, min(left, CPU_POLL_S) if self.cpu_start is not None else left)


def cpu_seconds(pid: int | str = "self") -> float | None:
    """User + system CPU time of process `pid` (every thread), None where unknown (no /proc,
    a process that is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stream:
            fields = stream.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _load_per_cpu() -> float:
    """The 1-minute load average per CPU this process may use, at least 1."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    try:
        return max(1.0, os.getloadavg()[0] / max(1, cpus))
    except OSError:
        return 1.0


def run_bounded(
    fn: Callable[..., Any],
    args: tuple[Any, ...] = (),
    timeout: float | None = None,
    *,
    memory_headroom: int | None = DEFAULT_MEMORY_HEADROOM,
) -> Any:
    """`fn(*args)` in a killable child, at most `timeout` seconds; its result or a `Stopped`.

    What the child writes to stderr (libclang's crash reports, Python warnings) is
    captured: replayed on this process's stderr after a result, kept in `detail` when
    there is none."""
    if timeout is None or timeout <= 0 or not _CAN_FORK:
        return _run_inline(fn, args)
    memory = _Memory.now(memory_headroom)
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
    clock = Clock.start(float(timeout), pid)
    try:
        payload, errors, stopped = _read_all(result_r, errors_r, clock, pid)
    except BaseException:
        _kill(pid)
        raise
    finally:
        os.close(result_r)
        os.close(errors_r)
    if stopped is not None:
        _kill(pid)
        return replace(stopped, detail=_tail(errors))
    outcome = _decode(payload, _reap(pid), memory, _tail(errors))
    if errors and not isinstance(outcome, Stopped):
        _replay(errors)
    return outcome


class BoundHere:
    """`run_bounded`'s contract for calls in *this* process, which its parent watches: a pool
    worker (`pool.Pool`) checks file after file without a fork per file (a fork of
    a process that has libclang and a preamble loaded costs ~45 ms of CPU, a third of a
    file's check). What the child of `run_bounded` guarantees holds here as follows:

    * time: `on_start(clock)` hands the parent the call's `Clock` as it begins; the parent
      kills this process at either bound, and a call that returns past one still comes
      back as `TimedOut`, so the outcome never depends on who noticed;
    * memory: the address space is limited during each call (`RLIMIT_AS`, the same limit
      as `run_bounded`'s child); a call that ran out of it is `OutOfMemory`, and the process
      then asks to be replaced (`retire`) rather than keep a heap grown to the limit;
    * crashes: a segfault ends this process; the parent reports it (`lost`);
    * stderr: fd 2 points into `errors_fd` (a file the parent can read, `lost` does) during
      a call; it is replayed after a result and kept in `detail` when there is none;
    * stdin is /dev/null and this process dies with its parent (set up here, once).

    `retire` also turns true after a call that grew the process by a quarter of the
    headroom: `OutOfMemory` is told from other failures by the peak size, which for a
    long-lived process is the peak of every call so far."""

    def __init__(
        self,
        errors_fd: int,
        on_start: Callable[[Clock], None],
        *,
        memory_headroom: int | None = DEFAULT_MEMORY_HEADROOM,
    ) -> None:
        self.errors_fd = errors_fd
        self.on_start = on_start
        self.memory_headroom = memory_headroom
        self.retire = False
        _die_with_parent()
        _null_stdin()
        _faults_to_fd2()

    def __call__(self, fn: Callable[..., Any], args: tuple[Any, ...] = (), timeout: float | None = None) -> Any:
        if timeout is None or timeout <= 0:
            return _run_inline(fn, args)
        memory = _Memory.now(self.memory_headroom)
        os.ftruncate(self.errors_fd, 0)  # what `lost` reads is this call's stderr alone
        os.lseek(self.errors_fd, 0, os.SEEK_SET)
        with _stderr_into(self.errors_fd), _address_space(memory.limit):
            clock = Clock.start(float(timeout))
            self.on_start(clock)
            try:
                kind, value = "ok", fn(*args)
            except Exception as error:  # becomes Failed / OutOfMemory, as in a child
                kind, value = _raised(error)
        errors = os.pread(self.errors_fd, _STDERR_KEEP, 0)
        late = clock.exceeded("self", _tail(errors))
        if late is not None:
            return late
        outcome = _outcome(kind, value, memory, _tail(errors))
        self.retire = isinstance(outcome, OutOfMemory) or _grew(memory, self.memory_headroom)
        if errors and not isinstance(outcome, Stopped):
            _replay(errors)
        return outcome


def lost(exit_code: int | None, errors_fd: int) -> Crashed:
    """Why a `BoundHere` process ended during a call: `exit_code` as `multiprocessing`
    gives it (negative: the signal), with the call's stderr from `errors_fd`."""
    errors = _tail(os.pread(errors_fd, _STDERR_KEEP, 0))
    if exit_code is not None and exit_code < 0:
        return _ended(-exit_code, None, "it died while checking this file", errors)
    return _ended(None, exit_code, "it died while checking this file", errors)


def killed(stopped: TimedOut, errors_fd: int) -> TimedOut:
    """A `BoundHere` process killed at a time bound: the call's stderr kept as detail."""
    return replace(stopped, detail=_tail(os.pread(errors_fd, _STDERR_KEEP, 0)))


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


@contextmanager
def _stderr_into(fd: int) -> Iterator[None]:
    """File descriptor 2 (libclang's reports, Python's warnings) into `fd` for a while."""
    _flush(sys.stderr)
    saved = os.dup(2)
    os.dup2(fd, 2)
    try:
        yield
    finally:
        _flush(sys.stderr)
        os.dup2(saved, 2)
        os.close(saved)


@contextmanager
def _address_space(limit: int | None) -> Iterator[None]:
    """`RLIMIT_AS` at most `limit` bytes for a while (None: unchanged), then as it was."""
    import resource

    if limit is None:
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))
    except (OSError, ValueError):  # as in the child: no limit rather than no check
        yield
        return
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _grew(memory: _Memory, headroom: int | None) -> bool:
    peak = _peak_virtual_size()
    return (
        headroom is not None and memory.limit is not None and peak is not None and peak - memory.base >= headroom // 4
    )


def _flush(stream: Any) -> None:
    try:
        stream.flush()
    except (AttributeError, OSError, ValueError):
        pass


def _read_all(result_fd: int, errors_fd: int, clock: Clock, pid: int) -> tuple[bytes, bytes, TimedOut | None]:
    """What child `pid` writes to both pipes, until the result pipe's end of file (None) or
    a bound of `clock` (which one). Both are drained together: a full stderr pipe would
    block the child."""
    import selectors

    chunks: dict[int, list[bytes]] = {result_fd: [], errors_fd: []}
    kept = {result_fd: 0, errors_fd: 0}
    stopped: TimedOut | None = None
    with selectors.DefaultSelector() as selector:
        selector.register(result_fd, selectors.EVENT_READ)
        selector.register(errors_fd, selectors.EVENT_READ)
        open_fds = {result_fd, errors_fd}
        complete = False
        grace_end = 0.0
        while open_fds:
            if complete:  # the result is in; stderr closes when the child exits
                remaining = grace_end - time.monotonic()
                if remaining <= 0:
                    break
            else:
                stopped = clock.exceeded(pid)
                if stopped is not None:
                    break
                remaining = clock.next_check()
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
            if complete and not grace_end:
                grace_end = time.monotonic() + _REAP_GRACE_S
    return b"".join(chunks[result_fd]), b"".join(chunks[errors_fd]), stopped


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
    return _outcome(kind, value, memory, errors)


def _outcome(kind: str, value: Any, memory: _Memory, errors: str) -> Any:
    """What a call's ("ok", result) or ("raised", (type, text, trace, peak)) comes to."""
    if kind == "ok":
        return value
    error_type, text, trace, peak = value
    detail = "\n".join(part for part in (trace.strip(), errors) if part)
    if error_type == "MemoryError" or memory.exhausted(peak):
        mib = (memory.limit or 0) >> 20
        return OutOfMemory(
            f"not checked: the static pipeline ran out of memory on this file (a {mib} MiB address-space limit)",
            detail,
            limit_bytes=memory.limit or 0,
        )
    return Failed(
        f"internal error: {error_type}: {text}" if text else f"internal error: {error_type}",
        detail,
        error_type=error_type,
    )


def _crashed(status: int | None, why: str, errors: str) -> Crashed:
    if status is not None and os.WIFSIGNALED(status):
        return _ended(os.WTERMSIG(status), None, why, errors)
    code = os.WEXITSTATUS(status) if status is not None and os.WIFEXITED(status) else None
    return _ended(None, code, why, errors)


def _ended(number: int | None, code: int | None, why: str, errors: str) -> Crashed:
    """A process ended by signal `number`, else with exit status `code` (None: unknown)."""
    if number is not None:
        name = _signal_name(number)
        hint = " (perhaps out of memory)" if number == signal.SIGKILL else ""
        detail = "\n".join(part for part in (f"the checking process was ended by {name}; {why}", errors) if part)
        return Crashed(f"not checked: the static pipeline crashed on this file ({name}){hint}", detail, signal=number)
    detail = "\n".join(part for part in (f"the checking process ended with status {code}; {why}", errors) if part)
    return Crashed(
        f"not checked: the static pipeline crashed on this file (exit status {code})", detail, exit_code=code
    )


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


def _raised(error: BaseException) -> tuple[str, tuple[str, str, str, int | None]]:
    """The message for a call that raised `error` (called in its `except` block)."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return "raised", (type(error).__name__, text, traceback.format_exc(), _peak_virtual_size())


# -- the child -----------------------------------------------------------------------------
def _child(
    fn: Callable[..., Any], args: tuple[Any, ...], result_fd: int, errors_fd: int, parent: int, limit_bytes: int | None
) -> None:
    code = 0
    try:
        _child_setup(parent, errors_fd, limit_bytes)
        try:
            message = ("ok", fn(*args))
        except BaseException as error:  # everything goes back to the parent
            message = _raised(error)
        try:
            data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException as error:  # an unpicklable result
            data = pickle.dumps(
                ("raised", (type(error).__name__, f"the result cannot be sent back: {error}", "", None)),
                protocol=pickle.HIGHEST_PROTOCOL,
            )
        for stream in (sys.stdout, sys.stderr):
            _flush(stream)
        view = memoryview(data)
        while view:
            written = os.write(result_fd, view)
            view = view[written:]
    except BaseException:  # nothing may escape into the parent's code
        code = 70
    finally:
        os._exit(code)


def _child_setup(parent: int, errors_fd: int, limit_bytes: int | None) -> None:
    # The parent's objects are the parent's: a cycle collection here would walk every one of
    # them (a long-lived parent -- `kernel-check server` -- has many), copying each page it
    # touches, for garbage the child's exit frees anyway. The child's own cycles still go.
    gc.freeze()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent()
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(71)
    _null_stdin()
    os.dup2(errors_fd, 2)  # libclang's crash reports and Python's warnings go to the parent
    os.close(errors_fd)
    _faults_to_fd2()
    if limit_bytes is not None:
        try:
            import resource

            _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
            if hard != resource.RLIM_INFINITY:
                limit_bytes = min(limit_bytes, hard)
            resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, hard))
        except (ImportError, OSError, ValueError):
            pass


def _faults_to_fd2() -> None:
    """A fault handler's dump belongs in the captured stderr too, not on a terminal (pytest
    points it at a copy of the original stderr)."""
    import faulthandler

    if faulthandler.is_enabled():
        faulthandler.enable(file=2, all_threads=True)


def _null_stdin() -> None:
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)


def _die_with_parent() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
