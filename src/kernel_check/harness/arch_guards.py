"""Kernels that trap on older GPUs: a device function whose code for an older architecture is
a `__trap()` (FlashInfer's `fp32_vec_to_e2m1` converts with an sm_100 instruction and traps
below it: ``#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 1000) ... #else __trap(); #endif``).

Every case of such a kernel faults on a card below that architecture whatever its inputs, so
the drafter says so in the draft instead of leaving a KD001 to be read as the kernel's bug.
Read from the text: the preprocessor lines of each function body of the file, and the
functions a kernel names (its callees, by name, a few calls deep).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..model import Function, SourceModel

_DEPTH = 4  # calls followed from the kernel
_ARCH_AT_LEAST = re.compile(r"__CUDA_ARCH__\s*(>=|>)\s*(\d+)")
_ARCH_BELOW = re.compile(r"__CUDA_ARCH__\s*(<|<=)\s*(\d+)")
_TRAP = re.compile(r"\b__trap\s*\(|\basm\s*(?:volatile\s*)?\(\s*\"trap;")
_DIRECTIVE = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)$")


@dataclass(frozen=True)
class ArchTrap:
    """``function`` traps where ``__CUDA_ARCH__`` is below ``arch`` (1000: sm_100)."""

    function: str
    arch: int


def arch_traps(model: SourceModel, kernel: Function) -> list[ArchTrap]:
    """The functions ``kernel`` reaches (itself included) that trap below an architecture."""
    defined = {f.name: f for f in model.functions if f.body is not None}
    found: list[ArchTrap] = []
    seen: set[str] = set()
    frontier = [kernel]
    for _ in range(_DEPTH + 1):
        following: list[Function] = []
        for function in frontier:
            if function.name in seen or function.body is None:
                continue
            seen.add(function.name)
            body = model.data[function.body.start : function.body.end].decode("utf-8", errors="replace")
            arch = trapped_below(body)
            if arch is not None:
                found.append(ArchTrap(function.name, arch))
            following += [f for name, f in defined.items() if re.search(rf"\b{re.escape(name)}\s*[<(]", body)]
        frontier = following
    return found


def trapped_below(text: str) -> int | None:
    """The architecture below which code ``text`` traps: a ``__trap()`` in the branch of an
    ``#if`` on ``__CUDA_ARCH__`` taken below it (the ``#else`` of ``>= N``, the body of ``< N``)."""
    stack: list[tuple[int | None, bool]] = []  # per open #if: (its arch bound, whether below it is taken)
    for line in text.splitlines():
        directive = _DIRECTIVE.match(line)
        if directive is not None:
            _step(stack, directive.group(1), directive.group(2))
            continue
        if _TRAP.search(line):
            below = [bound for bound, taken in stack if bound is not None and taken]
            if below:
                return max(below)
    return None


def _step(stack: list[tuple[int | None, bool]], keyword: str, condition: str) -> None:
    """Open, switch or close an ``#if`` group."""
    if keyword in ("if", "ifdef", "ifndef"):
        stack.append(_bound(condition))
    elif keyword == "elif" and stack:
        stack[-1] = _bound(condition)
    elif keyword == "else" and stack:
        bound, below = stack[-1]
        stack[-1] = (bound, not below)
    elif keyword == "endif" and stack:
        stack.pop()


def _bound(condition: str) -> tuple[int | None, bool]:
    """An ``#if`` condition's architecture bound, and whether its branch is taken below it."""
    if (at_least := _ARCH_AT_LEAST.search(condition)) is not None:
        return int(at_least.group(2)) + (at_least.group(1) == ">"), False
    if (below := _ARCH_BELOW.search(condition)) is not None:
        return int(below.group(2)) + (below.group(1) == "<="), True
    return None, False
