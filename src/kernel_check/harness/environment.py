"""Environment failures: a child that could not use the GPU or the sanitizer is no verdict.

A kernel fault and a broken machine both end a child with an error; only the first is a
finding. ``environment_failure`` reads a child's output (or compute-sanitizer's) and, when
it shows that the GPU, the driver or the sanitizer itself failed, returns one line saying
what failed; ``child_failure`` and ``sanitizer_failure`` decide it for a case child and for
a compute-sanitizer run. The run then retries the child once, alone-ish (other children may
have exhausted the GPU), and reports what still fails as an environment error (exit 2).

A compute-sanitizer run that fails without reporting anything on the spec's kernels is
always such a failure, whatever its output says: a fault of the kernel shows as a report
(memcheck), and the same kernel's plain cases, run before, are where a fault without one is
a finding (KD001). compute-sanitizer's exit status is then the target's own or its own
error, never a verdict on the kernel.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .protocol import CASE_MARKER

if TYPE_CHECKING:  # types only: this module is imported by every child
    from .process import ChildExit
    from .sanitize import ToolRun

# What a child reports when allocating a case's tensors fails: no kernel ran yet, so no verdict.
CASE_OUT_OF_MEMORY = "CUDA out of memory while allocating a case's tensors"

# CUDA errors a kernel raises itself (a fault on the device), never the environment's
_DEVICE_FAULT = re.compile(
    r"illegal memory access|misaligned address|unspecified launch failure|illegal instruction|"
    r"device-side assert|hardware stack error|illegal address",
    re.IGNORECASE,
)

# (pattern, what failed): checked in order, the first match names the failure
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), what)
    for pattern, what in (
        (
            r"no CUDA GPUs are available|no CUDA-capable device is detected|cudaErrorNoDevice|"
            r"Torch not compiled with CUDA enabled",
            "no CUDA GPU is available to the child process",
        ),
        (
            r"CUDA-capable device\(s\) (?:is/are|is|are) busy or unavailable|cudaErrorDevicesUnavailable",
            "the GPU is busy or unavailable (exclusive compute mode, or too many processes on it)",
        ),
        (
            r"found no NVIDIA driver|CUDA driver version is insufficient|cudaErrorInsufficientDriver|"
            r"CUDA driver initialization failed|cudaErrorInitializationError|CUDA unknown error - this may be "
            r"due to an incorrectly set up environment|forward compatibility was attempted on non supported HW",
            "the CUDA driver could not be initialized",
        ),
        (
            r"out of memory.{0,80}(?:context|cuInit|cudaSetDevice|initiali[sz])|"
            r"(?:context|cuInit|cudaSetDevice|initiali[sz]).{0,80}out of memory",
            "the GPU ran out of memory while the child process started",
        ),
        (
            re.escape(CASE_OUT_OF_MEMORY),
            "the GPU ran out of memory while a case allocated its tensors "
            "(other processes hold it, or the spec's sizes exceed it)",
        ),
        (
            r"Internal Sanitizer Error|Unable to (?:load|find) (?:the )?injection library|"
            r"Sanitizer (?:could not|failed to) (?:start|initiali[sz]e|attach)|"
            r"Failed to (?:initiali[sz]e|launch|attach) (?:the )?(?:target|debugger|sanitizer)|"
            r"Debugger interface initialization failed|The Sanitizer is not supported",
            "compute-sanitizer could not start or instrument the process",
        ),
    )
)


def environment_failure(output: str) -> str | None:
    """One line naming what failed in the environment, or None when nothing points there."""
    for pattern, what in _PATTERNS:
        match = pattern.search(output)
        if match:
            line = next((ln.strip() for ln in output[match.start() :].splitlines() if ln.strip()), "")
            evidence = _line_around(output, match.start()) or line
            return f"{what}: {evidence[:200]}"
    return None


def child_failure(exit_: ChildExit) -> str | None:
    """What failed in the environment when a case child ended badly (None: the kernel's doing)."""
    if exit_.stopped or exit_.timed_out or (exit_.returncode == 0 and exit_.running_case is None):
        return None
    errors = "\n".join(e.get("error", "") for e in exit_.events if e["event"] in ("error", "fatal"))
    return environment_failure(errors + "\n" + exit_.output_tail)


def sanitizer_failure(run: ToolRun, reported: bool) -> str | None:
    """What failed when a compute-sanitizer run ended badly with no report on the spec's
    kernels (``reported``: it has some): one line with its exit status, the case that was
    running and its last output line (or the known cause, when the output names one).
    None when the run ended as runs do: clean, with reports, timed out (KD002), stopped, or
    cut short by a kernel fault (initcheck, racecheck and synccheck report no out-of-bounds
    access: the fault itself ends the child, which is the kernel's doing)."""
    if reported or kernel_fault(run) or run.timed_out or run.stopped or not run.command_failed:
        return None
    status = "did not start" if run.returncode is None else f"exited with status {run.returncode}"
    case = running_case(run.output)
    where = f" while running {case}" if case else ""
    cause = environment_failure(run.output) or f"no report; its last line: {_last_line(run.output)[:200]}"
    return f"compute-sanitizer {status}{where}: {cause}"


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether `exc` is torch's allocation failure on the GPU (checked by name, so that this
    module needs no torch import)."""
    return type(exc).__name__ == "OutOfMemoryError" and "out of memory" in str(exc)


def _line_around(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return text[start : end if end >= 0 else len(text)].strip().lstrip("=").strip()


def kernel_fault(run: ToolRun) -> str:
    """The device fault that ended a sanitizer run's child early ("" if none): a case's own
    CUDA error (the child's "fatal" event), and one a kernel raises, not the environment."""
    return run.fault if _DEVICE_FAULT.search(run.fault) and environment_failure(run.fault) is None else ""


def running_case(output: str) -> str:
    """The harness case a sanitizer run had begun last (its CASE_MARKER line), "" if none."""
    markers = [ln[len(CASE_MARKER) :].strip() for ln in output.splitlines() if ln.startswith(CASE_MARKER)]
    return markers[-1] if markers else ""


def _last_line(output: str) -> str:
    return next((ln.strip() for ln in reversed(output.splitlines()) if ln.strip()), "(no output)")
