"""KC4xx plantings: one real defect of each class of issue 28 planted into a real kernel.

Each mutation is a single local edit of a `__global__` kernel's body (a guard dropped, a bound
moved by one, a widening removed, a barrier removed or made conditional, a clamp removed) and
plants only where the edit breaks something the original code protected: a guard on an index
computed from the thread's position or read from a tensor, a shared array that other threads
read, a conversion that does not saturate by itself. Where a defect is reported at an access the
edit exposes rather than at the edited line (a dropped guard lets every access it covered go out
of range), the planting names the lines it covers and any new finding of its code there counts.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from planting import Mutation, Planted, block_end, line_of  # the framework's types and helpers

CPP = (".cuh", ".cu")

# The classes of defect of issue 28 (`Mutation.defect`).
MEMORY = "memory safety"
OFFSETS_32 = "32-bit offsets"
WRITE_RACE = "shared write race"
READ_WRITE_RACE = "read-write race"
UNINIT_SHARED = "uninitialised shared read"
DIVERGENCE = "barrier divergence"
NUMERICS = "numerics"

# The idioms of the code planted into.
EARLY_EXIT = "early exit guard"
BLOCK_GUARD = "if guard"
STRIDE_LOOP = "block/grid-stride loop"
INT64_LOCAL = "64-bit index local"
INLINE_OFFSET = "inline offset"
LEADER_WRITE = "leader-thread write"
THREAD_SLOT = "thread-indexed slot"
INT_CONVERSION = "integer conversion"

_KERNEL = re.compile(r"__global__\b[^;{}]*?\b\w+\s*\(([^;{}]*?)\)\s*\{", re.S)
_THREAD_POSITION = re.compile(r"\b(?:threadIdx|blockIdx|blockDim)\b")
# A runtime size a guard compares with: a parameter, a params field or a local, never a
# compile-time constant (`kBlock`, `BT`), whose guard may be redundant for the launch's block.
_RUNTIME_SIZE = r"(?!k[A-Z0-9])(?![A-Z][A-Z0-9_]*\b)[A-Za-z_][\w.]*"


class Kernel(NamedTuple):
    """A kernel's body: the offsets just past its `{` and just past its closing `}`."""

    start: int
    end: int


def _kernels(text: str) -> Iterator[Kernel]:
    for match in _KERNEL.finditer(text):
        yield Kernel(match.end(), block_end(text, match.end()))


def _plant(text: str, start: int, end: int, replacement: str, covered_end: int | None = None) -> Planted:
    """`text[start:end]` replaced; the finding is expected on the edit's first line, or anywhere
    from there to the line holding `covered_end` (an offset of the original text)."""
    planted = text[:start] + replacement + text[end:]
    line = line_of(text, start)
    if covered_end is None:
        return Planted(planted, line)
    shift = len(replacement) - (end - start)
    return Planted(planted, line, line_of(planted, covered_end + shift))


def _is_comment(text: str, offset: int) -> bool:
    line_start = text.rfind("\n", 0, offset) + 1
    return "//" in text[line_start:offset] or text[line_start:offset].lstrip().startswith("*")


def _definition(text: str, kernel: Kernel, name: str, before: int) -> str | None:
    """The initializer of the last declaration (or assignment) of local `name` in the kernel
    body before `before`."""
    found = None
    for match in re.finditer(rf"\b{re.escape(name)}\s*=(?!=)\s*([^;]*);", text[kernel.start : before]):
        found = match.group(1)
    return found


def _from_thread_position(text: str, kernel: Kernel, name: str, before: int, depth: int = 3) -> bool:
    """Whether local `name` is computed from the thread's or block's position (directly or
    through other locals that are, up to `depth` deep)."""
    value = _definition(text, kernel, name, before)
    if value is None or depth == 0:
        return False
    if _THREAD_POSITION.search(value):
        return True
    return any(
        word != name and _from_thread_position(text, kernel, word, before, depth - 1)
        for word in re.findall(r"\b(?:tid|gid|idx|global_\w+|\w*_id)\b", value)
    )


_TENSOR_READ = re.compile(r"^\s*(?:static_cast<[^>]+>\()?\s*(?:__ldg\(&?)?[\w.]+\s*\[[^\]]+\]\s*\)*\s*$")


def _read_from_tensor(text: str, kernel: Kernel, name: str, before: int) -> bool:
    """Whether local `name` holds an element read from memory (`ids[i]`, `params.loc[t]`)."""
    value = _definition(text, kernel, name, before)
    return value is not None and _TENSOR_READ.match(value) is not None


# -- guards ---------------------------------------------------------------------------------------
class Guard(NamedTuple):
    """An `if` that keeps an index in range: the index, the `if`'s text span, the end of the
    code it covers (the rest of the body for an early exit, the guarded block or statement
    otherwise), whether it exits, the offset of its comparison and whether it is the upper
    bound's (else the lower one's: `id >= 0`)."""

    index: str
    start: int  # the `if`
    end: int  # just past the condition's `)` and, for an early exit, the exit statement
    covered_end: int
    exits: bool
    comparison: int
    upper: bool


_EXIT_GUARD = re.compile(
    rf"^[ \t]*(if \(\s*(?:(\w+) < 0 \|\| )?(\w+) (>=) ({_RUNTIME_SIZE})\s*\)\s*"
    r"(?:\{\s*)?(?:return|continue);(?:\s*\})?)[ \t]*$",
    re.M,
)
_POSITIVE_GUARD = re.compile(rf"\bif \(\s*(?:(\w+) >= 0 && )?(\w+) (<) ({_RUNTIME_SIZE})\s*\)\s*")
# The lower side alone (`if (slot < 0) continue;`, `if (pos >= 0) {`): a guard for an id read
# from memory, where -1 marks an empty slot.
_LOWER_EXIT_GUARD = re.compile(
    r"^[ \t]*(if \(\s*(\w+) (<) 0\s*\)\s*(?:\{\s*)?(?:return|continue);(?:\s*\})?)[ \t]*$", re.M
)
_LOWER_POSITIVE_GUARD = re.compile(r"\bif \(\s*(\w+) (>=) 0\s*\)\s*")


def _covered_end(text: str, statement: int) -> int:
    """The end of the statement (or braced block) starting at `statement`."""
    if text.startswith("{", statement):
        return block_end(text, statement + 1) - 1
    return text.find(";", statement)


def _guards(text: str, kernel: Kernel) -> Iterator[Guard]:
    """The kernel's guards that keep an index below a runtime bound, then those that keep it
    from going negative (`upper` False)."""
    for match in _EXIT_GUARD.finditer(text, kernel.start, kernel.end):
        if match.group(2) in (None, match.group(3)):
            yield Guard(match.group(3), match.start(1), match.end(1), kernel.end - 1, True, match.start(4), True)
    for match in _POSITIVE_GUARD.finditer(text, kernel.start, kernel.end):
        if match.group(1) in (None, match.group(2)) and not _is_comment(text, match.start()):
            covered_end = _covered_end(text, match.end())
            yield Guard(match.group(2), match.start(), match.end(), covered_end, False, match.start(3), True)
    for match in _LOWER_EXIT_GUARD.finditer(text, kernel.start, kernel.end):
        yield Guard(match.group(2), match.start(1), match.end(1), kernel.end - 1, True, match.start(3), False)
    for match in _LOWER_POSITIVE_GUARD.finditer(text, kernel.start, kernel.end):
        if not _is_comment(text, match.start()):
            covered_end = _covered_end(text, match.end())
            yield Guard(match.group(1), match.start(), match.end(), covered_end, False, match.start(2), False)


def _indexes_memory(covered: str, index: str, shared: set[str]) -> bool:
    """Whether `covered` reaches memory other than a shared array at an offset computed from
    `index` (or from a local computed from it): a subscript, pointer arithmetic or a load,
    store or copy call (a guard that only keeps a shared slot in range is not a global
    access's)."""
    derived = {index}
    for _ in range(3):
        derived |= {
            name
            for name, value in re.findall(r"\b(\w+)\s*=(?!=)\s*([^;]*);", covered)
            if any(re.search(rf"\b{re.escape(d)}\b", value) for d in derived)
        }
    names = "|".join(re.escape(d) for d in sorted(derived))
    mentions = re.compile(rf"\b(?:{names})\b")
    subscripts = re.findall(r"\b(\w+)\s*\[([^\[\]]*)\]", covered)
    if any(base not in shared and mentions.search(subscript) for base, subscript in subscripts):
        return True
    arithmetic = re.findall(rf"\b([A-Za-z_][\w.]*)\s*\+\s*[^;,()]*?\b(?:{names})\b", covered)
    if any(base not in shared and base not in derived for base in arithmetic):
        return True
    calls = re.findall(r"\b(?:\w*load\w*|\w*store\w*|offset|\w*copy\w*|\w*fill\w*)\s*(?:<[^;]*?>)?\(([^;]*)", covered)
    return any(mentions.search(arguments) for arguments in calls)


def _guard_of(predicate: Callable[[str, Kernel, str, int], bool], upper_only: bool) -> Callable[[str], Iterator[Guard]]:
    """The kernels' guards on an index for which `predicate(text, kernel, index, guard)` holds
    and which the covered code uses to reach memory other than a shared array."""

    def guards(text: str) -> Iterator[Guard]:
        shared = _shared_memory_names(text)
        for kernel in _kernels(text):
            for guard in _guards(text, kernel):
                if upper_only and not guard.upper:
                    continue
                covered = text[guard.end : guard.covered_end]
                if predicate(text, kernel, guard.index, guard.start) and _indexes_memory(covered, guard.index, shared):
                    yield guard

    return guards


_THREAD_INDEX_GUARDS = _guard_of(_from_thread_position, upper_only=True)
_LOADED_ID_GUARDS = _guard_of(_read_from_tensor, upper_only=False)


def _drop_guard(guards: Iterator[Guard], text: str, exits: bool) -> Planted | None:
    """The first guard of the kind (`exits`: an early exit, else a guarding `if`) removed."""
    guard = next((g for g in guards if g.exits == exits), None)
    if guard is None:
        return None
    replacement = "" if guard.exits else "if (true) "  # keeps a guarded `else` well-formed
    return _plant(text, guard.start, guard.end, replacement, guard.covered_end)


def drop_exit_guard(text: str) -> Planted | None:
    """`if (i >= n) return;` removed, `i` the thread's position: the rest of the body runs past `n`."""
    return _drop_guard(_THREAD_INDEX_GUARDS(text), text, exits=True)


def drop_if_guard(text: str) -> Planted | None:
    """`if (i < n)` around an access made unconditional, `i` the thread's position."""
    return _drop_guard(_THREAD_INDEX_GUARDS(text), text, exits=False)


def guard_off_by_one(text: str) -> Planted | None:
    """`i < n` in a guard turned into `i <= n` (`i >= n` into `i > n` in an early exit)."""
    guard = next(_THREAD_INDEX_GUARDS(text), None)
    if guard is None:
        return None
    operator = ">" if guard.exits else "<="
    end = guard.comparison + (2 if guard.exits else 1)
    return _plant(text, guard.comparison, end, operator, guard.covered_end)


_STRIDE_LOOP = re.compile(
    rf"\bfor \(\s*[\w:]+ (\w+) = [^;]*(?:threadIdx|\btid\b)[^;]*; (\w+) (<) ({_RUNTIME_SIZE}); \2 \+= [^)]+\)\s*"
)


def stride_loop_off_by_one(text: str) -> Planted | None:
    """A block- or grid-stride loop's `i < n` turned into `i <= n`."""
    for kernel in _kernels(text):
        for loop in _STRIDE_LOOP.finditer(text, kernel.start, kernel.end):
            if loop.group(1) != loop.group(2) or _is_comment(text, loop.start()):
                continue
            return _plant(text, loop.start(3), loop.end(3), "<=", _covered_end(text, loop.end()))
    return None


def drop_loaded_id_guard(text: str) -> Planted | None:
    """The bound check of an id read from a tensor (`if (e < 0 || e >= n) continue;`, `if (id <
    n) {`) removed: the id then indexes another tensor unchecked."""
    guard = next(_LOADED_ID_GUARDS(text), None)
    if guard is None:
        return None
    return _plant(text, guard.start, guard.end, "" if guard.exits else "if (true) ", guard.covered_end)


_MIN_CLAMP = re.compile(r"\b(?:std::)?min\((\w+\[[^\[\]]+\]|\w+),\s*[\w.]+\s*-\s*1\)")


def drop_loaded_id_clamp(text: str) -> Planted | None:
    """`min(id, n - 1)` on an id read from a tensor replaced by the id."""
    for kernel in _kernels(text):
        for clamp in _MIN_CLAMP.finditer(text, kernel.start, kernel.end):
            value = clamp.group(1)
            if "[" in value or _read_from_tensor(text, kernel, value, clamp.start()):
                return _plant(text, clamp.start(), clamp.end(), value, kernel.end - 1)
    return None


# -- 32-bit offsets -------------------------------------------------------------------------------
# A widening of a grid built-in multiplied by a 32-bit factor (the block size, a literal, a
# compile-time constant): without it the product is computed in 32 bits.
_WIDENED_PRODUCT = re.compile(
    r"(?:static_cast<(?:int64_t|uint64_t|size_t|long long)>\(((?:blockIdx|gridDim)\.[xyz])\)"
    r"|\((?:int64_t|uint64_t|size_t)\)\s*((?:blockIdx|gridDim)\.[xyz]))"
    r"(?=\s*\*\s*(?:blockDim\.[xyz]|\d+|k[A-Z]\w*|[A-Z][A-Z0-9_]*)\b)"
)
_INT64_DECLARATION = re.compile(r"\b(?:int64_t|uint64_t|size_t|long long)\s+\w+\s*=\s*$")


def _drop_widening(text: str, in_declaration: bool) -> Planted | None:
    for kernel in _kernels(text):
        for cast in _WIDENED_PRODUCT.finditer(text, kernel.start, kernel.end):
            statement_start = max(text.rfind(c, 0, cast.start()) for c in ";{}") + 1
            declared = _INT64_DECLARATION.search(text[statement_start : cast.start()]) is not None
            if declared == in_declaration and not _is_comment(text, cast.start()):
                return _plant(text, cast.start(), cast.end(), cast.group(1) or cast.group(2))
    return None


def unwiden_index_local(text: str) -> Planted | None:
    """`const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + ...` without the cast."""
    return _drop_widening(text, in_declaration=True)


def unwiden_inline_offset(text: str) -> Planted | None:
    """`p[static_cast<int64_t>(blockIdx.x) * kN + j]` (any 64-bit use) without the cast."""
    return _drop_widening(text, in_declaration=False)


# -- shared memory --------------------------------------------------------------------------------
def _shared_names(text: str) -> set[str]:
    """Names the file declares `__shared__` (arrays and scalars; not `extern` ones)."""
    return set(re.findall(r"(?<!extern )__shared__\s+(?:alignas\(\d+\)\s+)?[\w:<>, ]+?\s+(\w+)\s*[\[;]", text))


def _shared_memory_names(text: str) -> set[str]:
    """`_shared_names`, `extern __shared__` arrays and the pointers the file sets into them
    (`int32_t* counts = smem + n;`): whatever a subscript of reaches shared memory."""
    names = _shared_names(text) | set(re.findall(r"\bextern\s+__shared__\s+[^;]*?(\w+)\s*\[\s*\]", text))
    aliases = re.findall(r"\*\s*(?:const\s+)?(\w+)\s*=\s*(?:reinterpret_cast<[^;]*?>\()?(\w+)\b", text)
    for _ in range(len(aliases)):
        grown = names | {alias for alias, source in aliases if source in names}
        if grown == names:
            break
        names = grown
    return names


def _thread_id_names(text: str, kernel: Kernel) -> set[str]:
    """`threadIdx.x` and the locals the kernel sets to it alone."""
    names = {"threadIdx.x"}
    body = text[kernel.start : kernel.end]
    names |= set(re.findall(r"\b(\w+)\s*=\s*(?:static_cast<\w+>\()?threadIdx\.x\)?\s*;", body))
    return names


def halve_thread_slot(text: str) -> Planted | None:
    """`smem[threadIdx.x] = v` turned into `smem[threadIdx.x / 2] = v`: two threads, one slot."""
    shared = _shared_names(text)
    for kernel in _kernels(text):
        ids = "|".join(re.escape(n) for n in _thread_id_names(text, kernel))
        write = re.compile(rf"^[ \t]*(\w+)\[({ids})\]\s*=(?!=)\s*([^;]*);", re.M)
        for match in write.finditer(text, kernel.start, kernel.end):
            if match.group(1) in shared and not _same_for_neighbours(text, kernel, match.group(3), match.start()):
                return _plant(text, match.start(2), match.end(2), f"{match.group(2)} / 2")
    return None


def _literal(value: str) -> bool:
    return re.fullmatch(r"[-+]?(?:\d[\w.]*|true|false|nullptr)", value.strip()) is not None


_COLLECTIVE = re.compile(r"\breduce_\w+\(|__shfl\w*\(|\bBlockReduce\b")


def _same_for_neighbours(text: str, kernel: Kernel, value: str, before: int) -> bool:
    """Whether two neighbouring threads store the same `value`: a literal, a name the body never
    assigns (a parameter, a collective's output argument), or the result of a warp or block
    reduction (directly or through the local it was stored in), which every lane holds alike --
    a second writer of the slot then leaves it as it was."""
    if _literal(value) or _COLLECTIVE.search(value):
        return True
    if re.fullmatch(r"\s*\w+\s*", value) and _definition(text, kernel, value.strip(), before) is None:
        return True
    return any(
        _COLLECTIVE.search(_definition(text, kernel, word, before) or "") for word in re.findall(r"\b[a-z_]\w*", value)
    )


_LEADER_WRITE = re.compile(r"\bif \(\s*(threadIdx\.x|\w+) == 0\s*\)\s*(\w+)(?:\[[^\]]*\])?\s*=(?!=)\s*([^;]*);")


def drop_leader_guard(text: str) -> Planted | None:
    """`if (threadIdx.x == 0) s = v;` made unguarded, for a value `v` that may differ between
    threads (not a literal or a constant every thread computes alike)."""
    shared = _shared_names(text)
    for kernel in _kernels(text):
        ids = _thread_id_names(text, kernel)
        for match in _LEADER_WRITE.finditer(text, kernel.start, kernel.end):
            value = match.group(3)
            if match.group(1) not in ids or match.group(2) not in shared:
                continue
            if _same_for_neighbours(text, kernel, value, match.start()):
                continue  # every thread stores the same
            return _plant(text, match.start(), match.start(2), "")
    return None


_BARRIER = re.compile(r"^[ \t]*(__syncthreads\(\);)[ \t]*(?://[^\n]*)?$", re.M)


def _barriers(text: str, kernel: Kernel) -> list[re.Match]:
    return list(_BARRIER.finditer(text, kernel.start, kernel.end))


def _writes_and_reads(segment: str, name: str) -> tuple[set[str], set[str]]:
    """The index texts of the writes and of the reads of shared array `name` in `segment`."""
    writes = set(re.findall(rf"\b{name}\[([^\[\]]+)\]\s*(?:[-+*/|&^]?=)(?!=)", segment))
    reads = {
        index
        for index, after in re.findall(rf"\b{name}\[([^\[\]]+)\](\s*=?=?)", segment)
        if after.strip() in ("", "==")
    }
    return writes, reads


def drop_barrier_between(text: str) -> Planted | None:
    """A `__syncthreads()` between a write of a shared array and a read of another element of it
    (an index the write does not use) removed."""
    shared = _shared_names(text)
    for kernel in _kernels(text):
        barriers = _barriers(text, kernel)
        for number, barrier in enumerate(barriers):
            previous = barriers[number - 1].end() if number else kernel.start
            following = barriers[number + 1].start() if number + 1 < len(barriers) else kernel.end - 1
            for name in sorted(shared):
                writes, _ = _writes_and_reads(text[previous : barrier.start()], name)
                _, reads = _writes_and_reads(text[barrier.end() : following], name)
                if writes and reads - writes:
                    return _plant(text, barrier.start(1), barrier.end(1), "", following)
    return None


_INIT_LOOP = re.compile(
    r"\bfor \(\s*[\w:]+ (\w+) = (?:threadIdx\.x|\w+); \1 < ([^;]+); \1 \+= [^)]+\)\s*\{?\s*(\w+)\[\1\]\s*=(?!=)"
)


def shrink_init_loop(text: str) -> Planted | None:
    """The bound of a loop that fills a shared array (`i < N`) lowered by one: the last element
    stays unwritten, and the kernel reads it after the loop."""
    shared = _shared_names(text)
    for kernel in _kernels(text):
        for loop in _INIT_LOOP.finditer(text, kernel.start, kernel.end):
            name = loop.group(3)
            writes_elsewhere = re.search(rf"\b{name}\[[^\]]+\]\s*=(?!=)", text[loop.end() : kernel.end])
            if name in shared and writes_elsewhere is None and re.search(rf"\b{name}\b", text[loop.end() : kernel.end]):
                return _plant(text, loop.start(2), loop.end(2), f"{loop.group(2)} - 1", kernel.end - 1)
    return None


def drop_shared_init(text: str) -> Planted | None:
    """The only statement that writes a shared scalar or array element (`if (tid == 0) s = v;`,
    `smem[tid] = 0;`) removed while the kernel still reads it."""
    shared = _shared_names(text)
    for kernel in _kernels(text):
        body = text[kernel.start : kernel.end]
        for name in sorted(shared):
            writes = list(
                re.finditer(rf"^[ \t]*(?:if \([^;{{]*\)\s*)?{name}(?:\[[^\]]+\])?\s*=(?!=)[^;]*;[ \t]*$", body, re.M)
            )
            any_write = re.findall(rf"\b{name}(?:\[[^\]]+\])?\s*[-+*/|&^]?=(?!=)|&{name}\b|\b{name}\s*[,)]", body)
            if len(writes) != 1 or len(any_write) != 1:
                continue  # written elsewhere, or handed to a call that may write it
            write = writes[0]
            if re.search(r"(?:\)|\belse)\s*$", body[: write.start()]):
                continue  # the body of a braceless `for`/`if`: the next statement would take its place
            if re.search(rf"\b{name}\b", body[write.end() :]):
                start, end = kernel.start + write.start(), kernel.start + write.end()
                return _plant(text, start, end, "", kernel.end - 1)
    return None


def conditional_barrier(text: str) -> Planted | None:
    """A kernel's `__syncthreads();` reached only by the threads of the first warp."""
    for kernel in _kernels(text):
        for barrier in _barriers(text, kernel):
            if "threadIdx" in text[kernel.start : kernel.end]:
                return _plant(text, barrier.start(1), barrier.start(1), "if (threadIdx.x < 32) ")
    return None


# -- numerics -------------------------------------------------------------------------------------
_CLAMP = re.compile(r"\b(fminf|fmaxf)\(\s*(fmaxf|fminf)\(")
_INTEGER_TYPE = r"(?:u?int(?:8|16|32|64)?_t|int|unsigned|short|char|signed char|unsigned char)"


def _clamp_span(text: str, start: int) -> tuple[int, str] | None:
    """For the `fminf(fmaxf(v, lo), hi)` (or the other order) at `start`: its end and `v`."""
    clamp = _CLAMP.match(text, start)
    if clamp is None or clamp.group(1) == clamp.group(2):
        return None
    outer_end = block_end(text, text.index("(", start) + 1, "(", ")")
    inner_end = block_end(text, clamp.end(), "(", ")")
    value = text[clamp.end() : inner_end - 1].rsplit(",", 1)[0].strip()
    return outer_end, value


def _function_end(text: str, offset: int) -> int:
    """The end of the top-level function holding `offset` (its closing brace at column 0)."""
    end = text.find("\n}", offset)
    return len(text) if end < 0 else end


def drop_clamp_before_int(text: str) -> Planted | None:
    """The clamp of a value converted to an integer type removed: in the cast itself
    (`static_cast<int8_t>(fminf(fmaxf(v, lo), hi))`) or on the local it converts."""
    for cast in re.finditer(rf"\bstatic_cast<{_INTEGER_TYPE}>\(\s*(?=(?:fminf|fmaxf)\()", text):
        span = _clamp_span(text, cast.end())
        if span is not None:
            return _plant(text, cast.end(), span[0], span[1])
    for assignment in re.finditer(r"\b(\w+) = (?=(?:fminf|fmaxf)\()", text):
        name = assignment.group(1)
        span = _clamp_span(text, assignment.end())
        rest = text[assignment.end() : _function_end(text, assignment.end())]
        converted = re.search(rf"\bstatic_cast<{_INTEGER_TYPE}>\(\s*{name}\s*\)", rest)
        if span is not None and converted is not None:
            return _plant(text, assignment.end(), span[0], span[1])
    return None


_CLAMPING = r"(?:fminf|fmaxf|\w*clip\w*|\w*clamp\w*)\("


def _clamped(text: str, argument: str, at: int) -> bool:
    """Whether `argument` clamps its value, or names a local the 400 characters before `at`
    assign a clamp to (`v.x = fminf(fmaxf(v.x, lo), hi);` before the conversion of `v`)."""
    if re.search(_CLAMPING, argument):
        return True
    preceding = text[max(0, at - 400) : at]
    return any(
        re.search(rf"\b{name}(?:\.\w+)?\s*=\s*{_CLAMPING}", preceding)
        for name in set(re.findall(r"\b[A-Za-z_]\w*", argument))
    )


def drop_satfinite(text: str) -> Planted | None:
    """`__NV_SATFINITE` of an fp8 conversion turned into `__NV_NOSAT`, where nothing clamps the
    converted value before it."""
    for call in re.finditer(r"\b__nv_cvt_\w+_to_fp8\w*\(([^;]*?),\s*(__NV_SATFINITE)", text):
        if not _clamped(text, call.group(1), call.start()):
            return _plant(text, call.start(2), call.end(2), "__NV_NOSAT")
    return None


# -- plantings that break nothing in the pinned tree (each read by hand) ------------------------------
_CSRC = "python/sglang/kernels/jit/csrc"
_HARMLESS_IF_GUARD = (
    (
        f"{_CSRC}/hisparse.cuh",
        "`if (i < count)` made `if (true)` inside `for (i = tid; i < NUM_TOP_K; ...)`: `req_top_k_tokens[i]` "
        "stays below NUM_TOP_K, which the kernel's slow path reads unguarded (the row holds NUM_TOP_K ids); "
        "what the exposed read hands on is a loaded id, `req_device_buffer_locs[token_pos]` (KC401's)",
    ),
)
_HARMLESS_OFF_BY_ONE = (
    (
        f"{_CSRC}/gemm/marlin/awq_marlin_repack.cuh",
        "`start_k_tile >= k_tiles` made `>`: the one block let through at `start_k_tile == k_tiles` gets "
        "`finish_k_tile = min(start_k_tile + block_k_tiles, k_tiles) == start_k_tile`, so its tile loop "
        "runs no iteration and it touches no memory",
    ),
)
_HARMLESS_STRIDE_LOOP = (
    (
        f"{_CSRC}/deepseek_v4/common.cuh",
        "`i < num_tokens` made `<=` in `plan_prefill_cuda`: `i` indexes no memory (the plans go to atomic "
        "counters, the lengths are read at `batch_id < batch_size`); where the extend lengths sum to "
        "`num_tokens`, as the plan's consumers need, the extra token walks past the last sequence and leaves "
        "at `if (batch_id >= batch_size) break;` before any access",
    ),
)

MUTATIONS = [
    Mutation("KC406", "early-exit bound guard removed", CPP, drop_exit_guard, EARLY_EXIT, MEMORY),
    Mutation("KC406", "bound guard made unconditional", CPP, drop_if_guard, BLOCK_GUARD, MEMORY, _HARMLESS_IF_GUARD),
    Mutation("KC406", "bound guard off by one", CPP, guard_off_by_one, BLOCK_GUARD, MEMORY, _HARMLESS_OFF_BY_ONE),
    Mutation(
        "KC406", "stride loop bound off by one", CPP, stride_loop_off_by_one, STRIDE_LOOP, MEMORY, _HARMLESS_STRIDE_LOOP
    ),
    Mutation("KC401", "bound check of a loaded id removed", CPP, drop_loaded_id_guard, BLOCK_GUARD, MEMORY),
    Mutation("KC401", "clamp of a loaded id removed", CPP, drop_loaded_id_clamp, defect=MEMORY),
    Mutation("KC112", "widening of a 64-bit index local removed", CPP, unwiden_index_local, INT64_LOCAL, OFFSETS_32),
    Mutation("KC112", "widening in an offset removed", CPP, unwiden_inline_offset, INLINE_OFFSET, OFFSETS_32),
    Mutation("KC402", "thread's slot halved", CPP, halve_thread_slot, THREAD_SLOT, WRITE_RACE),
    Mutation(
        "KC402", "leader-thread guard of a shared write removed", CPP, drop_leader_guard, LEADER_WRITE, WRITE_RACE
    ),
    Mutation(
        "KC404",
        "barrier between a write and another thread's read removed",
        CPP,
        drop_barrier_between,
        defect=READ_WRITE_RACE,
    ),
    Mutation("KC403", "shared init loop one short", CPP, shrink_init_loop, STRIDE_LOOP, UNINIT_SHARED),
    Mutation("KC403", "only write of a shared value removed", CPP, drop_shared_init, defect=UNINIT_SHARED),
    Mutation("KC170", "barrier only in the first warp", CPP, conditional_barrier, defect=DIVERGENCE),
    Mutation(
        "KC405", "clamp before an integer conversion removed", CPP, drop_clamp_before_int, INT_CONVERSION, NUMERICS
    ),
    Mutation("KC405", "fp8 conversion without saturation", CPP, drop_satfinite, defect=NUMERICS),
]
