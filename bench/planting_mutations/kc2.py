"""KC2xx plantings: PDL reads, waits and launches planted into real kernels.

Each one picks a kernel that already uses PDL (so the file parses with the PDL helpers in
scope) and changes exactly one thing about it."""

from __future__ import annotations

import re

from planting import Mutation, Planted

CPP = (".cuh", ".cu")
# A kernel definition up to its opening brace: `__global__ ... name(params) {`.
_KERNEL = re.compile(r"__global__\b[^;{}]*?\b(\w+)\s*\(([^;{}]*?)\)\s*\{", re.S)
_CONST_POINTER_PARAM = re.compile(r"\bconst\s+[\w:]+\s*\*\s*(?:__restrict__\s+)?(\w+)\s*(?:,|$)")
_WAIT = re.compile(r"^([ \t]*)(?:device::)?PDLWaitPrimary<\s*(\w+)\s*>\(\);[ \t]*$", re.M)


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _insert_line(text: str, offset: int, line: str) -> Planted:
    """`line` inserted as a new line at the start of the line holding `offset`."""
    start = text.rfind("\n", 0, offset) + 1
    return Planted(text[:start] + line + "\n" + text[start:], _line_of(text, start))


def _body_end(text: str, open_brace_end: int) -> int:
    """The offset just past the brace that closes the body opened right before `open_brace_end`."""
    depth = 1
    for index in range(open_brace_end, len(text)):
        depth += {"{": 1, "}": -1}.get(text[index], 0)
        if depth == 0:
            return index + 1
    return len(text)


def _kernels_with_wait(text: str):
    """(match, first wait in its body) for each kernel whose own body waits on a named flag."""
    for kernel in _KERNEL.finditer(text):
        wait = _WAIT.search(text, kernel.end(), _body_end(text, kernel.end()))
        if wait is not None and wait.group(2) not in ("false", "true"):
            yield kernel, wait


def read_before_wait(text: str) -> Planted | None:
    """A load through a kernel's const pointer parameter, just before its PDL wait."""
    for kernel, wait in _kernels_with_wait(text):
        param = _CONST_POINTER_PARAM.search(kernel.group(2))
        if param is not None:
            return _insert_line(
                text, wait.start(), f"{wait.group(1)}const auto kc_planted_early = {param.group(1)}[0];"
            )
    return None


def wait_first(text: str) -> Planted | None:
    """The kernel's wait moved up to be its first statement (a second wait, first)."""
    for kernel, wait in _kernels_with_wait(text):
        indent = wait.group(1) or "  "
        planted_at = text.find("\n", kernel.end()) + 1
        if planted_at <= 0 or text[kernel.end() : planted_at].strip():
            continue  # code on the brace's line: no clean first line
        return _insert_line(text, planted_at, f"{indent}device::PDLWaitPrimary<{wait.group(2)}>();")
    return None


def _single_launch_file(text: str) -> bool:
    return text.count("__global__") == 1 and text.count(".enable_pdl(") == 1 and "#if" not in text


def drop_wait(text: str) -> Planted | None:
    """Every wait of the file's only kernel removed: its PDL launch now waits for nothing."""
    if not _single_launch_file(text) or len(_WAIT.findall(text)) == 0 or "griddepcontrol" in text:
        return None
    enable = text.index(".enable_pdl(")
    launch = text.rfind("LaunchKernel(", 0, enable)
    if launch < 0 or text[launch : text.find("\n", launch)].rstrip().endswith("\\"):
        return None  # no launch, or one inside a macro (reported where the macro is expanded)
    planted = _WAIT.sub(lambda m: f"{m.group(1)}// PDL wait removed", text)  # same line count
    return Planted(planted, _line_of(text, launch))


def drop_enable_pdl(text: str) -> Planted | None:
    """The only PDL launch of the file's only kernel launched without PDL: its wait gains nothing."""
    if not _single_launch_file(text):
        return None
    waits = [
        w for kernel, w in _kernels_with_wait(text) if f"<{w.group(2)}" not in text[kernel.end() : w.start()]
    ]  # no helper before it that may wait
    if not waits:
        return None
    planted = re.sub(r"\.enable_pdl\((?:[^()]|\([^()]*\))*\)", "", text, count=1)
    return Planted(planted, _line_of(text, waits[0].start()))


def asm_wait_without_clobber(text: str) -> Planted | None:
    """A raw `griddepcontrol.wait` without the "memory" clobber, next to a kernel's wait."""
    for _, wait in _kernels_with_wait(text):
        line_end = text.find("\n", wait.end())
        return _insert_line(text, line_end + 1, f'{wait.group(1) or "  "}asm volatile("griddepcontrol.wait;");')
    return None


MUTATIONS = [
    Mutation("KC201", "load through a const pointer parameter before the wait", CPP, read_before_wait),
    Mutation("KC202", "wait as the kernel's first statement", CPP, wait_first),
    Mutation("KC203", "PDL launch of a kernel whose waits were removed", CPP, drop_wait),
    Mutation("KC204", "the only launch without .enable_pdl", CPP, drop_enable_pdl),
    Mutation("KC205", "asm griddepcontrol.wait without a memory clobber", CPP, asm_wait_without_clobber),
]
