"""Environment failures: a child that could not use the GPU or the sanitizer is no verdict.

A kernel fault and a broken machine both end a child with an error; only the first is a
finding. ``environment_failure`` reads a child's output (or compute-sanitizer's) and, when
it shows that the GPU, the driver or the sanitizer itself failed, returns one line saying
what failed. The run then retries the child once, alone-ish (other children may have
exhausted the GPU), and reports what still fails as an environment error (exit 2).
"""

from __future__ import annotations

import re

# What a child reports when allocating a case's tensors fails: no kernel ran yet, so no verdict.
CASE_OUT_OF_MEMORY = "CUDA out of memory while allocating a case's tensors"

# (pattern, what failed): checked in order, the first match names the failure
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), what)
    for pattern, what in (
        (
            r"no CUDA GPUs are available|no CUDA-capable device is detected|cudaErrorNoDevice",
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


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether `exc` is torch's allocation failure on the GPU (checked by name, so that this
    module needs no torch import)."""
    return type(exc).__name__ == "OutOfMemoryError" and "out of memory" in str(exc)


def _line_around(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return text[start : end if end >= 0 else len(text)].strip().lstrip("=").strip()
