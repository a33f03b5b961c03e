"""Parse stage, device side: the code a host-only parse leaves out under `#if __CUDA_ARCH__`.

`parse_file` parses the host pass (`--cuda-host-only`), where `__CUDA_ARCH__` is not
defined: a kernel body behind `#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900`, a
device-only helper behind `#ifdef __CUDA_ARCH__`, the stub kernel of an
`#if __CUDA_ARCH__ < 800` fallback are preprocessor-inactive there, and no analysis sees
them. For a file whose host pass skipped such a region (and only for those: a device pass
costs a plain parse), `parse.add_device_passes` parses the file again in device mode
(`--cuda-device-only`), once per architecture that makes a skipped region active (this
module reads which from the file's `#if` groups; it parses nothing itself):

1. the configured architecture (`arch`, what the JIT build compiles for);
2. then, for the regions still skipped, the oldest architecture CUDA compiles for
   (`OLDEST_ARCH`), when the region's condition says it is active there (an
   `__CUDA_ARCH__ < 800` fallback). Regions for architectures above the configured one
   (`__CUDA_ARCH__ >= 1000`) stay unseen; each pass is a full parse.

A region is "under `__CUDA_ARCH__`" when a condition of its `#if`/`#elif`/`#else` group up
to the branch that starts it names `__CUDA_ARCH__` (written out: a macro that hides it is
not followed). Whether a branch is active at an architecture is read from those conditions
(`_condition_value`); a condition with other macros is unknown, which is enough for the
configured pass and not for the extra one.

What a pass gives the model (`parse.DevicePass.regions`): the byte ranges it parsed that the host
pass and the earlier device passes skipped. The model stage (`device_merge.py`) decides
which of its functions and facts to take.

A pass parses through the host pass's preamble source (`clang/preamble.py`), when it has
one: device-mode arguments are another recipe key, so the files of a tree share a device-mode
PCH per architecture (and tier), built from those arguments -- never the host pass's, which
is another mode -- and a header whose closure fails to build for that architecture (an
sm_90-only one in the sm_75 union) is left out of it. Every pass is checked against it as
the host pass is (include agreement, `_deviates`) and falls back tier by tier down to a
plain parse, the reference, so both passes see the file's own includes. The headers a pass
entered join the unit's dependencies (the result cache's key), its PCH's as a group
(`pipeline._unit_deps`), as for the host pass. `parse.device_args` guesses from the text which
passes a file gets, so that their preambles are resolved -- built -- before the file's
bounded parse (`PreambleCache.prefetch`, the pool's builds). A device pass whose parse fails
is left out; its errors are never reported (the host pass is the one that decides KC000):
the model stage takes nothing from a declaration that holds one, nor anything from a pass
with an error in a header or a fatal one.

Measured on the sglang tree (bench/README.md): of its 20 files with a `__CUDA_ARCH__`
condition, hermetic mode gives 12 device passes (5 at sm_90, 7 at sm_75: the marlin `< 800`
stubs), every one parsed against a preamble, at 0.05-0.6 CPU s a pass (1.1 s for the one
that fell back to the `base` tier) instead of ~1.1 s plain, for up to five more PCH builds
a cold run (~1.5 s each). The sm_75 pass goes through a preamble too: left plain, those
files cost more CPU (its two builds are cheaper than its seven plain parses) for a peak
memory within 6%.
"""

from __future__ import annotations

import ast
import re

OLDEST_ARCH = "75"  # sm_75: the oldest architecture CUDA 13 builds for
NEWEST_ARCH = "100"  # sm_100: the newest one whose `#if` branches kernels pick (Blackwell)

Range = tuple[int, int]  # byte offsets, end exclusive


def arch_regions(skipped: list, groups: ConditionalGroups, within: list[Range]) -> list[tuple[int, int, int]]:
    """(start, end, directive line) of the skipped regions under `__CUDA_ARCH__` inside `within`."""
    found = []
    for span in skipped:
        if groups.under_cuda_arch(span.line):
            found += [(start, end, span.line) for start, end in _intersect([(span.start, span.end)], within)]
    return found


def pass_plan(arch: str) -> list[tuple[str, bool]]:
    """The device passes for the configured `arch`: (architecture, whether a region whose
    condition is unknown there counts), in order."""
    return [(arch, True), *([(OLDEST_ARCH, False)] if arch != OLDEST_ARCH else [])]


def takes_any(states: list[bool | None], unknown_counts: bool) -> bool:
    """Whether a pass takes one of the regions whose activity there is `states`."""
    return any(state is True or (unknown_counts and state is None) for state in states)


# -- byte ranges ------------------------------------------------------------------------------
def subtract_ranges(ranges: list[Range], holes: list[Range]) -> list[Range]:
    """The parts of `ranges` outside every hole (byte ranges, end exclusive)."""
    result = []
    for start, end in ranges:
        pieces = [(start, end)]
        for hole_start, hole_end in holes:
            pieces = [p for s, e in pieces for p in ((s, min(e, hole_start)), (max(s, hole_end), e)) if p[0] < p[1]]
        result += pieces
    return result


def _intersect(ranges: list[Range], others: list[Range]) -> list[Range]:
    return [(max(s, os_), min(e, oe)) for s, e in ranges for os_, oe in others if max(s, os_) < min(e, oe)]


# -- preprocessor conditions ------------------------------------------------------------------
_DIRECTIVE_RE = re.compile(rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)\b(.*)$")
_COMMENT_RE = re.compile(r"/\*.*?\*/|//.*$")


class ConditionalGroups:
    """The `#if` groups of a file, by the line of each directive: for a branch, the
    conditions of its group up to it (earlier ones must be false, its own true)."""

    def __init__(self, data: bytes) -> None:
        self.branches: dict[int, tuple[list[str], int]] = {}  # line -> (group conditions, index)
        stack: list[list[str]] = []
        lines = data.split(b"\n")
        number = 0
        while number < len(lines):
            first = number + 1
            text = lines[number]
            while text.endswith((b"\\", b"\\\r")) and number + 1 < len(lines):
                number += 1
                text = text.rstrip(b"\r")[:-1] + lines[number]
            number += 1
            match = _DIRECTIVE_RE.match(text.rstrip(b"\r"))
            if match is None:
                continue
            word, rest = match.group(1).decode(), _COMMENT_RE.sub("", match.group(2).decode(errors="replace")).strip()
            condition = {
                "ifdef": f"defined({rest})",
                "elifdef": f"defined({rest})",
                "ifndef": f"!defined({rest})",
                "elifndef": f"!defined({rest})",
            }.get(word, rest)
            if word.startswith("if"):
                stack.append([condition])
                self.branches[first] = (stack[-1], 0)
            elif stack and word == "endif":
                stack.pop()
            elif stack:
                stack[-1].append(condition if word != "else" else "1")
                self.branches[first] = (stack[-1], len(stack[-1]) - 1)

    def under_cuda_arch(self, line: int) -> bool:
        conditions, index = self.branches.get(line, ([], -1))
        return any("__CUDA_ARCH__" in c for c in conditions[: index + 1])

    def active(self, line: int, arch: str) -> bool | None:
        """Whether the branch starting at `line` is taken when compiling for `arch` (None: unknown)."""
        conditions, index = self.branches.get(line, ([], -1))
        if index < 0:
            return None
        values = [_condition_value(c, int(arch) * 10) for c in conditions[: index + 1]]
        earlier, own = values[:-1], values[-1]
        if True in earlier or own is False:
            return False
        return None if None in earlier or own is None else True


_DEFINED_RE = re.compile(r"\bdefined\s*(?:\(\s*(\w+)\s*\)|(\w+))")


def _condition_value(condition: str, cuda_arch: int) -> bool | None:
    """The value of an `#if` condition made of `__CUDA_ARCH__`, integers, comparisons and
    `&&`/`||`/`!`, in device code for `cuda_arch`; None when it names anything else."""

    def defined(match: re.Match) -> str:
        return "1" if (match.group(1) or match.group(2)) == "__CUDA_ARCH__" else "__unknown__"

    text = _DEFINED_RE.sub(defined, condition).replace("__CUDA_ARCH__", str(cuda_arch))
    text = re.sub(r"(?<=\d)[uUlL]+\b", "", text).replace("&&", " and ").replace("||", " or ")
    text = re.sub(r"!(?!=)", " not ", text)
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        return None
    value = _evaluate(tree.body)
    return None if value is None else bool(value)


_COMPARE = {
    ast.Lt: int.__lt__,
    ast.LtE: int.__le__,
    ast.Gt: int.__gt__,
    ast.GtE: int.__ge__,
    ast.Eq: int.__eq__,
    ast.NotEq: int.__ne__,
}


def _evaluate(node: ast.AST) -> int | None:
    """Integers, comparisons, `and`/`or`/`not` only; anything else is unknown (None)."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        value = _evaluate(node.operand)
        return None if value is None else int(not value)
    if isinstance(node, ast.BoolOp):
        values = [_evaluate(v) for v in node.values]
        if None in values:
            return None
        return int(all(values) if isinstance(node.op, ast.And) else any(values))
    if isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
        operands = [_evaluate(node.left), *(_evaluate(c) for c in node.comparators)]
        known = [value for value in operands if value is not None]
        if len(known) < len(operands):
            return None
        return int(all(_COMPARE[type(op)](a, b) for op, a, b in zip(node.ops, known, known[1:])))
    return None
