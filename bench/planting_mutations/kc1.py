"""KC1xx plantings: one violation of a kernel-interface or memory rule planted into a real file.

Each `plant(text)` finds the first place in the file where the violation reads naturally (a
kernel's parameter list, a launcher right after a tensor is verified, a kernel body) and
returns the planted text with the line the rule must report, or None when the file offers no
such place. The planted code uses only what the file already has (its tensors, its pointer
parameters, its `LaunchKernel` calls), so it compiles wherever the original did.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from planting import Mutation, Planted  # the framework's types

_CUDA = (".cuh", ".cu", ".h")
_OPEN, _CLOSE = "([{", ")]}"
_COMMENTS = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)


# The idioms of the census of issue 26 some of these mutations are planted into: files whose
# kernels name their vector type through a typedef (`using vec_t = AlignedVector<T, N>;`,
# `typename Plan<N>::vec_t`) and files that reach tensor data through a local helper returning
# `t.data_ptr()`.
VECTOR_TYPEDEF = "vector type through a typedef"
POINTER_HELPER = "local pointer helper"
_VECTOR_TYPEDEF = re.compile(
    r"\busing\s+\w+\s*=\s*(?:typename\s+)?[^;]*(?:[Vv]ec|AlignedVector)[^;]*;|\btypename\s+[\w:]+<[^;]*?>::\w*vec\w*"
)


def _only_where(idiom: re.Pattern, plant: Callable[[str], Planted | None]) -> Callable[[str], Planted | None]:
    """`plant`, restricted to files that use an idiom (so its recall is told per idiom)."""
    return lambda text: plant(text) if idiom.search(text) else None


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _closing(text: str, start: int) -> int | None:
    """The offset just past the bracket that closes the one at `start`."""
    depth = 0
    for index in range(start, len(text)):
        char = text[index]
        if char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            depth -= 1
            if depth == 0:
                return index + 1
    return None


def _split_top_level(text: str) -> list[str]:
    """Comma-separated parts at bracket depth 0 (angle brackets of template ids included)."""
    parts, depth, current = [], 0, []
    for char in text:
        if char in "([{<":
            depth += 1
        elif char in ")]}>":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    parts.append("".join(current).strip())
    return parts


def _kernels(text: str) -> list[tuple[int, int, int]]:
    """(parameter list start, parameter list end, body start) of each `__global__` definition."""
    found = []
    for match in re.finditer(r"__global__\b[^;{]*?\b(\w+)\s*\(", text):
        params_end = _closing(text, match.end() - 1)
        if params_end is None:
            continue
        body = re.compile(r"\s*(?:__launch_bounds__\s*\([^)]*\)\s*)?\{").match(text, params_end)
        if body is not None:
            found.append((match.end(), params_end - 1, body.end()))
    return found


def _insert_line(text: str, offset: int, new_line: str) -> Planted:
    """Insert `new_line` as a line of its own after the line holding `offset`, indented like
    the next line; the finding is expected on the inserted line."""
    lines = text.splitlines(keepends=True)
    index = _line(text, offset) - 1
    following = lines[index + 1] if index + 1 < len(lines) else lines[index]
    indent = re.match(r"[ \t]*", following).group(0) or "  "
    lines.insert(index + 1, f"{indent}{new_line}\n")
    return Planted("".join(lines), index + 2)


def _in_macro_definition(text: str, offset: int) -> bool:
    """Whether `offset` is inside a `#define` (code there is reported where the macro is used)."""
    line_start = text.rfind("\n", 0, offset) + 1
    previous = text[:line_start].rstrip("\n").rsplit("\n", 1)[-1]
    return text[line_start:].lstrip().startswith("#define") or previous.rstrip().endswith("\\")


def _verified_tensors(text: str) -> list[tuple[str, int]]:
    """(tensor, offset of the end of its statement) for `.verify(x);` ending a matcher chain."""
    return [(m.group(1), m.end()) for m in re.finditer(r"\.verify\((\w+)\)\s*;", text)]


def _kernel_without_pdl(text: str) -> tuple[int, int, int] | None:
    """The first kernel of a file that waits on no PDL primary (a planted read stays clean)."""
    if "PDLWaitPrimary" in text or "griddepcontrol" in text:
        return None
    kernels = _kernels(text)
    return kernels[0] if kernels else None


# ---- KC101 / KC102 / KC110: a kernel's parameter list ----------------------------------------

_CONST_RESTRICT = re.compile(r"\bconst\s+(?:[\w:]+(?:<[^<>]*>)?)\s*\*\s*(__restrict__)\s+\w+")
_FIXED_VALUE_PARAM = re.compile(r"(?<=[(,])(\s*(?:const\s+)?)(u?int32_t)(\s+\w+\s*)(?=[,)])")


def _in_kernel_params(text: str, pattern: re.Pattern) -> re.Match | None:
    for params_start, params_end, _ in _kernels(text):
        match = pattern.search(text, params_start - 1, params_end + 1)
        if match is not None:
            return match
    return None


def drop_restrict(text: str) -> Planted | None:
    match = _in_kernel_params(text, _CONST_RESTRICT)
    if match is None:
        return None
    start, end = match.span(1)
    return Planted(text[:start] + text[end:].lstrip(" "), _line(text, start))


def drop_const(text: str) -> Planted | None:
    match = _in_kernel_params(text, _CONST_RESTRICT)
    if match is None:
        return None
    start = match.start()
    return Planted(text[:start] + text[start + len("const") :].lstrip(), _line(text, start))


def int_kernel_param(text: str) -> Planted | None:
    match = _in_kernel_params(text, _FIXED_VALUE_PARAM)
    if match is None:
        return None
    start, end = match.span(2)
    return Planted(text[:start] + "int" + text[end:], _line(text, start))


# ---- KC111 / KC140 / KC150 / KC160: a launcher, after a tensor is verified -------------------


def _after_first_verify(text: str, make_line) -> Planted | None:
    verified = _verified_tensors(text)
    if not verified:
        return None
    tensor, end = verified[0]
    return _insert_line(text, end, make_line(tensor))


def narrow_size(text: str) -> Planted | None:
    return _after_first_verify(text, lambda t: f"const uint32_t planted_rows = {t}.size(0);")


def manual_tensor_check(text: str) -> Planted | None:
    return _after_first_verify(
        text, lambda t: f'if ({t}.ndim() == 0) host::Panic("planted: {t} must not be a scalar");'
    )


def arch_query_attribute(text: str) -> Planted | None:
    if "CHECK_CUDA" not in text and "sgl_kernel/utils.cuh" not in text:
        return None
    return _after_first_verify(
        text,
        lambda t: (
            f"int planted_major = 0; CHECK_CUDA(cudaDeviceGetAttribute(&planted_major, "
            f"cudaDevAttrComputeCapabilityMajor, {t}.device().device_id));"
        ),
    )


def arch_query_runtime(text: str) -> Planted | None:
    if "sgl_kernel/runtime.cuh" not in text:
        return None
    return _after_first_verify(
        text, lambda t: f"const auto planted_sm = host::runtime::get_sm_version({t}.device().device_id);"
    )


def function_style_check(text: str) -> Planted | None:
    return _after_first_verify(
        text, lambda t: 'host::RuntimeCheck(sizeof(void*) == 8, "planted: pointers are ", sizeof(void*), " bytes");'
    )


# ---- KC112 / KC151 / KC170: a kernel body ----------------------------------------------------

_WIDE_VALUE_PARAM = re.compile(r"(?<=[(,])\s*(?:const\s+)?(?:int64_t|size_t|uint64_t)\s+\w+\s*(?=[,)])")
_TYPED_POINTER_PARAM = re.compile(r"\bconst\s+(?!void\b)([\w:]+)\s*\*\s*__restrict__\s+(\w+)")


def late_widening(text: str) -> Planted | None:
    for params_start, params_end, body in _kernels(text):
        if _WIDE_VALUE_PARAM.search(text, params_start - 1, params_end + 1):
            return _insert_line(text, body, "const int64_t planted_flat = blockIdx.x * blockDim.x + threadIdx.x;")
    return None


def lane_modulo(text: str) -> Planted | None:
    kernel = _kernel_without_pdl(text)
    if kernel is None:
        return None
    params_start, params_end, body = kernel
    pointer = _TYPED_POINTER_PARAM.search(text, params_start - 1, params_end + 1)
    if pointer is None:
        return None
    return _insert_line(text, body, f"(void){pointer.group(2)}[threadIdx.x % 32];")


def divergent_barrier(text: str) -> Planted | None:
    kernels = _kernels(text)
    if not kernels:
        return None
    return _insert_line(text, kernels[0][2], "if (threadIdx.x == 0) { __syncthreads(); }")


# ---- KC120 / KC141: take away what made a tensor safe ----------------------------------------

_HAND_ALIGNMENT_LINE = re.compile(
    r"^[ \t]*(?:host::)?RuntimeCheck\([^;\n]*?(\w+)\.data_ptr\(\)\)?\s*%[^;\n]*;[ \t]*\n", re.MULTILINE
)
_ALIGNED_CALL = re.compile(r"\b\w*aligned\w*\((\w+)\.data_ptr\(\)[^()]*\)")


def _matcher_line(text: str, tensor: str, near: int) -> int | None:
    """The line where the matcher chain verifying `tensor` starts: the last one before
    offset `near` (the launcher's own), else the first one after it."""
    verifies = [m.start() for m in re.finditer(rf"\.verify\({tensor}\)", text)]
    before = [v for v in verifies if v < near]
    verify = before[-1] if before else next((v for v in verifies if v >= near), None)
    if verify is None:
        return None
    start = text.rfind("TensorMatcher", 0, verify)
    return _line(text, start) if start >= 0 else None


# Bulk copies (TMA) move a tensor's data: KC120 covers vectorized loads and stores, so taking
# the alignment check away from a tensor written this way plants nothing KC120 is about.
_BULK_COPY = re.compile(r"cp_async_bulk|cp\.async\.bulk")


def drop_hand_alignment_check(text: str) -> Planted | None:
    if _BULK_COPY.search(text):
        return None
    for match in _HAND_ALIGNMENT_LINE.finditer(text):
        planted = text[: match.start()] + text[match.end() :]
        line = _matcher_line(planted, match.group(1), match.start())
        if line is not None:
            return Planted(planted, line)
    return None


def drop_alignment_test(text: str) -> Planted | None:
    for match in _ALIGNED_CALL.finditer(text):
        planted = text[: match.start()] + "true" + text[match.end() :]
        line = _matcher_line(planted, match.group(1), match.start())
        if line is not None:
            return Planted(planted, line)
    return None


def drop_second_verify(text: str) -> Planted | None:
    for match in re.finditer(r"\.verify\(\w+\)(\s*\.verify\((\w+)\))", text):
        tensor = match.group(2)
        if len(re.findall(rf"\.verify\({tensor}\)", text)) != 1:
            continue
        planted = text[: match.start(1)] + text[match.end(1) :]
        use = re.compile(rf"\b{tensor}\.data_ptr\(\)").search(planted, match.start(1))
        if use is not None:
            return Planted(planted, _line(planted, _macro_call_start(planted, use.start())))
    return None


def _statement_start(text: str, offset: int) -> int:
    """The offset of the line where the statement holding `offset` starts: just after the last
    `;` or block brace before it that is not inside brackets (an initializer's `{` is not a
    block: a block's brace follows `)`, `;`, a brace, `else`, `do` or `try`)."""
    depth = 0
    for index in range(offset - 1, -1, -1):
        char = text[index]
        if char in ")]}":
            depth += 1
        elif char in "([{":
            if depth:
                depth -= 1
                continue
            before = text[:index].rstrip()
            if char != "{" or not (before.endswith((")", ";", "{", "}")) or re.search(r"\b(?:else|do|try)$", before)):
                return -1  # inside a call or an initializer that starts on an earlier line
            return text.index("\n", index) + 1
        elif char == ";" and depth == 0:
            return text.index("\n", index) + 1
    return 0


def unverified_through_helper(text: str) -> Planted | None:
    """`drop_second_verify`, with the unverified tensor's data reached through a local pointer
    helper (`auto kc_ptr = [](const auto& t) { return t.data_ptr(); };`, declared just before
    the statement) instead of `t.data_ptr()` directly."""
    planted = drop_second_verify(text)
    if planted is None:
        return None
    use_line = sum(len(line) for line in planted.text.splitlines(keepends=True)[: planted.line - 1])
    use = re.compile(r"\b(\w+)\.data_ptr\(\)").search(planted.text, use_line)
    start = _statement_start(planted.text, use_line) if use is not None else -1
    if start < 0 or "#define" in planted.text[start:use_line] or text[start:use_line].count("\\\n"):
        return None
    indent = re.match(r"[ \t]*", planted.text[start:]).group(0)
    helper = f"{indent}auto kc_ptr = [](const auto& t) {{ return t.data_ptr(); }};\n"
    rewritten = planted.text[: use.start()] + f"kc_ptr({use.group(1)})" + planted.text[use.end() :]
    return Planted(rewritten[:start] + helper + rewritten[start:], planted.line + 1)


def _macro_call_start(text: str, offset: int) -> int:
    """Where the macro call around `offset` starts (`CHECK_HOST(\n  ... x.data_ptr() ...)`),
    else `offset`: code in a macro argument is located at the macro's expansion, as clang does."""
    depth = 0
    for index in range(offset - 1, max(offset - 2000, 0), -1):
        char = text[index]
        if char == ")":
            depth += 1
        elif char == "(":
            if depth == 0:
                name = re.search(r"(\w+)\s*$", text[:index])
                if name is not None and name.group(1).isupper():
                    return name.start(1)
            else:
                depth -= 1
        elif char == ";" or char == "{":
            break
    return offset


# ---- KC130 / KC131: the launch and CUDA calls themselves -------------------------------------


def raw_launch(text: str) -> Planted | None:
    """`LaunchKernel(grid, block, device[, smem])(kernel, args...)` without PDL, rewritten as
    `kernel<<<grid, block, smem>>>(args...)`."""
    for match in re.finditer(r"\bLaunchKernel\(", text):
        config_end = _closing(text, match.end() - 1)
        if config_end is None or not text[config_end:].lstrip().startswith("("):
            continue
        call_start = text.index("(", config_end)
        call_end = _closing(text, call_start)
        if call_end is None:
            continue
        config = _split_top_level(_COMMENTS.sub("", text[match.end() : config_end - 1]))
        arguments = _split_top_level(_COMMENTS.sub("", text[call_start + 1 : call_end - 1]))
        if len(config) < 3 or not arguments[0]:
            continue
        start = match.start() - (len("host::") if text[: match.start()].endswith("host::") else 0)
        smem = config[3] if len(config) > 3 else "0"
        launch = f"{arguments[0]}<<<{config[0]}, {config[1]}, {smem}>>>({', '.join(arguments[1:])})"
        return Planted(text[:start] + launch + text[call_end:], _line(text, start))
    return None


def unchecked_cuda_call(text: str) -> Planted | None:
    for match in re.finditer(r"\b(?:CHECK_CUDA|(?:host::)?RuntimeDeviceCheck)\((\s*cuda\w+\()", text):
        outer_end = _closing(text, match.end() - len(match.group(1)) - 1)
        inner_end = _closing(text, match.end() - 1)
        statement_end = text.find(";", outer_end or 0)
        if outer_end is None or inner_end is None or statement_end < 0 or _in_macro_definition(text, match.start()):
            continue
        call = text[match.end() - len(match.group(1)) : inner_end].strip()
        return Planted(text[: match.start()] + call + text[statement_end:], _line(text, match.start()))
    return None


MUTATIONS = [
    Mutation("KC101", "const pointer parameter loses __restrict__", _CUDA, drop_restrict),
    Mutation("KC102", "read-only pointer parameter loses const", _CUDA, drop_const),
    Mutation("KC110", "uint32_t/int32_t kernel parameter spelled int", _CUDA, int_kernel_param),
    Mutation("KC111", "tensor size narrowed implicitly to uint32_t", _CUDA, narrow_size),
    Mutation("KC112", "64-bit flat index from a 32-bit product", _CUDA, late_widening),
    Mutation("KC120", "hand-written alignment check removed", _CUDA, drop_hand_alignment_check),
    Mutation("KC120", "run-time alignment test replaced by true", _CUDA, drop_alignment_test),
    Mutation(
        "KC120",
        "hand-written alignment check removed",
        _CUDA,
        _only_where(_VECTOR_TYPEDEF, drop_hand_alignment_check),
        VECTOR_TYPEDEF,
    ),
    Mutation(
        "KC120",
        "run-time alignment test replaced by true",
        _CUDA,
        _only_where(_VECTOR_TYPEDEF, drop_alignment_test),
        VECTOR_TYPEDEF,
    ),
    Mutation("KC130", "LaunchKernel rewritten as <<<...>>>", _CUDA, raw_launch),
    Mutation("KC131", "CUDA call unwrapped from its check", _CUDA, unchecked_cuda_call),
    Mutation("KC140", "tensor rank checked by hand", _CUDA, manual_tensor_check),
    Mutation("KC141", "second .verify of a chain removed", _CUDA, drop_second_verify),
    Mutation(
        "KC141",
        "second .verify removed, data reached through a pointer helper",
        _CUDA,
        unverified_through_helper,
        POINTER_HELPER,
    ),
    Mutation("KC150", "compute capability queried with cudaDeviceGetAttribute", _CUDA, arch_query_attribute),
    Mutation("KC150", "compute capability queried with runtime::get_sm_version", _CUDA, arch_query_runtime),
    Mutation("KC151", "threadIdx.x % 32 used as a subscript", _CUDA, lane_modulo),
    Mutation("KC160", "function-style RuntimeCheck", _CUDA, function_style_check),
    Mutation("KC170", "__syncthreads under a thread-dependent branch", _CUDA, divergent_barrier),
]
