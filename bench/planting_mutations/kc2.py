"""KC2xx plantings: PDL reads, waits and launches planted into real kernels.

Each one picks a kernel that already uses PDL (so the file parses with the PDL helpers in
scope) and changes exactly one thing about it."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from kernel_check.rules.kc201_read_before_pdl_wait import is_weight_pointer
from planting import Mutation, Planted, block_end, line_of

# The idioms these mutations plant into (the census of issue 26: how real kernels read their
# parameters, wait and launch).
BINDING = "structured binding"
PARAMS_STRUCT = "__grid_constant__ params struct"
HELPER_WAIT = "wait inside a helper"
NAMED_LAUNCH = "named launch object"
RUNTIME_API_LAUNCH = "runtime API launch"

CPP = (".cuh", ".cu")
# A kernel definition up to its opening brace: `__global__ ... name(params) {`.
_KERNEL = re.compile(r"__global__\b[^;{}]*?\b(\w+)\s*\(([^;{}]*?)\)\s*\{", re.S)
_CONST_POINTER_PARAM = re.compile(r"\bconst\s+[\w:]+\s*\*\s*(?:__restrict__\s+)?(\w+)\s*(?:,|$)")
_WAIT = re.compile(r"^([ \t]*)(?:device::)?PDLWaitPrimary<\s*(\w+)\s*>\(\);[ \t]*$", re.M)


def _insert_line(text: str, offset: int, line: str) -> Planted:
    """`line` inserted as a new line at the start of the line holding `offset`."""
    start = text.rfind("\n", 0, offset) + 1
    return Planted(text[:start] + line + "\n" + text[start:], line_of(text, start))


def _read_pointer_param(kernel: re.Match) -> str | None:
    """The kernel's first const pointer parameter that is not a weight's: KC201 lets weights
    be read before the wait (docs/rules/KC201.md), so a read of one is no defect."""
    names = (m.group(1) for m in _CONST_POINTER_PARAM.finditer(kernel.group(2)))
    return next((name for name in names if not is_weight_pointer(name)), None)


def _kernels_with_wait(text: str):
    """(match, first wait in its body) for each kernel whose own body waits on a named flag."""
    for kernel in _KERNEL.finditer(text):
        wait = _WAIT.search(text, kernel.end(), block_end(text, kernel.end()))
        if wait is not None and wait.group(2) not in ("false", "true"):
            yield kernel, wait


def read_before_wait(text: str) -> Planted | None:
    """A load through a kernel's const pointer parameter, just before its PDL wait."""
    for kernel, wait in _kernels_with_wait(text):
        pointer = _read_pointer_param(kernel)
        if pointer is not None:
            return _insert_line(text, wait.start(), f"{wait.group(1)}const auto kc_planted_early = {pointer}[0];")
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
    return Planted(planted, line_of(text, launch))


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
    return Planted(planted, line_of(text, waits[0].start()))


def asm_wait_without_clobber(text: str) -> Planted | None:
    """A raw `griddepcontrol.wait` without the "memory" clobber, next to a kernel's wait."""
    for _, wait in _kernels_with_wait(text):
        line_end = text.find("\n", wait.end())
        return _insert_line(text, line_end + 1, f'{wait.group(1) or "  "}asm volatile("griddepcontrol.wait;");')
    return None


# ---- the same violations inside the idioms real kernels use -------------------------------------
_COMMENTS = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_BINDING = re.compile(r"\bauto\s*&{0,2}\s*\[([^\]]*)\]\s*=\s*(\w+)\s*;")
_FUNCTION = re.compile(r"\b(\w+)\s*\(([^;{}()]*)\)\s*(?:const\s*)?(?:noexcept\s*)?\{")
_NOT_FUNCTIONS = frozenset(("if", "constexpr", "for", "while", "switch", "catch", "return", "sizeof"))


def _params_struct(text: str, kernel: re.Match, name: str) -> list[tuple[str, str]]:
    """(type, field) of each data member, in order, of the struct type of the kernel's
    parameter `name` when the file defines it (what a structured binding of it names)."""
    declaration = next((p for p in kernel.group(2).split(",") if re.search(rf"\b{name}\s*$", p.strip())), None)
    if declaration is None:
        return []
    words = [w for w in re.findall(r"\w+", declaration) if w not in ("const", "__grid_constant__", name)]
    if not words:
        return []
    struct = re.search(rf"\bstruct\s+{words[-1]}\s*\{{", text)
    if struct is None:
        return []
    body = _COMMENTS.sub("", text[struct.end() : block_end(text, struct.end()) - 1])
    fields = []
    for member in body.split(";"):
        member = " ".join(member.split())
        field = re.fullmatch(r"(?!static\b|using\b|typedef\b)([^(){}=]+?)\s*\b(\w+)(?:\s*=[^(){}]*)?", member)
        if field is not None:
            fields.append((field.group(1), field.group(2)))
    return fields


def _typed_pointer(type_spelling: str) -> bool:
    """A pointer to a type one can index (not `void*`)."""
    return "*" in type_spelling and not re.search(r"\bvoid\b", type_spelling)


def read_binding_member_before_wait(text: str) -> Planted | None:
    """A load through a pointer the kernel took from its params struct with a structured
    binding (`const auto& [in, out, n] = params;`), just before its PDL wait."""
    for kernel, wait in _kernels_with_wait(text):
        for binding in _BINDING.finditer(text, kernel.end(), wait.start()):
            names = [n.strip() for n in binding.group(1).split(",")]
            fields = _params_struct(text, kernel, binding.group(2))
            if len(fields) != len(names):
                continue
            pointer = next(
                (n for n, (spelling, _) in zip(names, fields) if _typed_pointer(spelling) and not is_weight_pointer(n)),
                None,
            )
            if pointer is not None:
                return _insert_line(text, wait.start(), f"{wait.group(1)}const auto kc_planted_early = {pointer}[0];")
    return None


def _params_pointer_field(text: str, kernel: re.Match) -> str | None:
    """`params.field` for a pointer field of the kernel's `__grid_constant__` params struct."""
    param = re.search(r"__grid_constant__[^,]*?\b(\w+)\s*(?:,|$)", kernel.group(2))
    if param is None:
        return None
    fields = _params_struct(text, kernel, param.group(1))
    field = next((name for spelling, name in fields if _typed_pointer(spelling) and not is_weight_pointer(name)), None)
    return f"{param.group(1)}.{field}" if field is not None else None


def read_params_field_before_wait(text: str) -> Planted | None:
    """A load through a pointer field of the kernel's `__grid_constant__` params struct
    (`params.in[0]`), just before its PDL wait."""
    for kernel, wait in _kernels_with_wait(text):
        pointer = _params_pointer_field(text, kernel)
        if pointer is not None:
            return _insert_line(text, wait.start(), f"{wait.group(1)}const auto kc_planted_early = {pointer}[0];")
    return None


def _waiting_helpers(text: str) -> set[str]:
    """Names of the file's functions (device helpers, static methods) that wait for PDL."""
    helpers = set()
    kernels = {kernel.group(1) for kernel in _KERNEL.finditer(text)}
    for function in _FUNCTION.finditer(text):
        if function.group(1) in _NOT_FUNCTIONS or function.group(1) in kernels:
            continue
        if _WAIT.search(text, function.end(), block_end(text, function.end())):
            helpers.add(function.group(1))
    return helpers


def read_before_helper_wait(text: str) -> Planted | None:
    """A load through a kernel's const pointer parameter (else a pointer field of its params
    struct), just before the call of the helper that waits for it (the kernel itself has no
    wait of its own)."""
    helpers = _waiting_helpers(text)
    if not helpers:
        return None
    call = re.compile(r"^([ \t]*)[^\n;]*?\b(?:" + "|".join(sorted(helpers)) + r")\s*(?:<[^;\n]*?>)?\s*\(", re.M)
    for kernel in _KERNEL.finditer(text):
        end = block_end(text, kernel.end())
        helper_call = call.search(text, kernel.end(), end)
        if helper_call is None or _WAIT.search(text, kernel.end(), end):
            continue
        pointer = _read_pointer_param(kernel) or _params_pointer_field(text, kernel)
        if pointer is not None:
            line = f"{helper_call.group(1)}const auto kc_planted_early = {pointer}[0];"
            return _insert_line(text, helper_call.start(), line)
    return None


_STATEMENT_LAUNCH = re.compile(r"^([ \t]*)(?:host::)?LaunchKernel\(", re.M)
_ENABLE_PDL = re.compile(r"\s*\.enable_pdl\(((?:[^()]|\([^()]*\))*)\)\s*\(")


def _closing(text: str, start: int) -> int:
    """The offset just past the `)` that closes the parenthesis open before `start`."""
    depth, end = 1, start
    while depth and end < len(text):
        depth += {"(": 1, ")": -1}.get(text[end], 0)
        end += 1
    return end


def _pdl_launch_statements(text: str) -> Iterator[tuple[re.Match, int, re.Match, int]]:
    """Each `LaunchKernel(config).enable_pdl(flag)(kernel, args);` statement: its match, the end
    of the config's parentheses, the `.enable_pdl(flag)(` match and the end of the call."""
    for statement in _STATEMENT_LAUNCH.finditer(text):
        config_end = _closing(text, statement.end())
        enable = _ENABLE_PDL.match(text, config_end)
        if enable is None:
            continue
        args_end = _closing(text, enable.end())
        if text[args_end : args_end + 1] == ";":
            yield statement, config_end, enable, args_end


def _rewritten(text: str, start: int, end: int, head: str, call: str) -> tuple[str, int, int]:
    """`text` with the launch statement from `start` to `end` (its `;` kept) replaced by the
    lines `head` and the launching `call`: the text, the statement's offset and the call's."""
    return text[:start] + head + call + text[end:], start, start + len(head)


def _named_launch(text: str, keep_pdl: bool) -> tuple[str, int, int] | None:
    """The first `LaunchKernel(config).enable_pdl(flag)(kernel, args);` statement written with a
    named launch object: the text, the offset of the statement and that of the launching call."""
    for statement, config_end, enable, args_end in _pdl_launch_statements(text):
        indent = statement.group(1)
        head = f"{indent}auto kc_launch = {text[statement.start() + len(indent) : config_end]};\n"
        if keep_pdl:
            head += f"{indent}kc_launch.enable_pdl({enable.group(1)});\n"
        call = f"{indent}kc_launch({text[enable.end() : args_end - 1]})"
        return _rewritten(text, statement.start(), args_end, head, call)
    return None


def _top_level_parts(text: str) -> list[str]:
    """`text` split at its commas outside parentheses, brackets and braces."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(text[start:index].strip())
            start = index + 1
    return [*parts, text[start:].strip()]


def _runtime_api_launch(text: str, keep_pdl: bool) -> tuple[str, int, int] | None:
    """The first `LaunchKernel(grid, block, device).enable_pdl(flag)(kernel, args);` statement
    written as the runtime's launch-configuration call (`cudaLaunchKernelEx(&config, kernel,
    args)`, the grid and block in the config, PDL as its launch attribute, which is left
    unset without `keep_pdl`): the text, the offset of the statement and that of the call."""
    for statement, config_end, enable, args_end in _pdl_launch_statements(text):
        config = _top_level_parts(text[statement.end() : config_end - 1])
        if len(config) < 2:
            continue
        indent = statement.group(1)
        lines = ["cudaLaunchAttribute kc_attrs[1] = {};"]
        if keep_pdl:
            lines += [
                "kc_attrs[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;",
                f"kc_attrs[0].val.programmaticStreamSerializationAllowed = {enable.group(1)};",
            ]
        lines += [
            "cudaLaunchConfig_t kc_config = {};",
            f"kc_config.gridDim = {config[0]};",
            f"kc_config.blockDim = {config[1]};",
            "kc_config.attrs = kc_attrs;",
            "kc_config.numAttrs = 1;",
        ]
        head = "".join(f"{indent}{line}\n" for line in lines)
        call = f'{indent}CHECK_CUDA(cudaLaunchKernelEx(&kc_config, {text[enable.end() : args_end - 1]})) << "planted"'
        return _rewritten(text, statement.start(), args_end, head, call)
    return None


def drop_wait_named_launch(text: str) -> Planted | None:
    """`drop_wait` where the kernel is launched through a named launch object
    (`auto launch = LaunchKernel(...); launch.enable_pdl(flag); launch(kernel, ...);`)."""
    return _drop_wait_rewritten(text, _named_launch)


def _drop_wait_rewritten(text: str, rewrite: Callable[[str, bool], tuple[str, int, int] | None]) -> Planted | None:
    """`drop_wait` with the launch written another way (`rewrite`), reported at its call."""
    if drop_wait(text) is None:
        return None
    rewritten = rewrite(_WAIT.sub(lambda m: f"{m.group(1)}// PDL wait removed", text), True)
    if rewritten is None:
        return None
    planted, _, call = rewritten
    return Planted(planted, line_of(planted, call))


def _drop_enable_pdl_rewritten(
    text: str, rewrite: Callable[[str, bool], tuple[str, int, int] | None]
) -> Planted | None:
    """`drop_enable_pdl` with the launch written another way (`rewrite`) that never enables PDL."""
    plain = drop_enable_pdl(text)
    rewritten = rewrite(text, False) if plain is not None else None
    if plain is None or rewritten is None:
        return None
    planted, statement, _ = rewritten
    # The rewrite adds lines at the launch only: a wait below it moves down by as many.
    added = planted.count("\n") - text.count("\n")
    return Planted(planted, plain.line + (added if plain.line > line_of(text, statement) else 0))


def drop_enable_pdl_named_launch(text: str) -> Planted | None:
    """`drop_enable_pdl` where the kernel is launched through a named launch object that is
    never told to enable PDL."""
    return _drop_enable_pdl_rewritten(text, _named_launch)


def drop_wait_runtime_api_launch(text: str) -> Planted | None:
    """`drop_wait` where the kernel is launched by `cudaLaunchKernelEx` with the PDL attribute."""
    return _drop_wait_rewritten(text, _runtime_api_launch)


def drop_enable_pdl_runtime_api_launch(text: str) -> Planted | None:
    """`drop_enable_pdl` where the kernel is launched by `cudaLaunchKernelEx` without the PDL
    attribute."""
    return _drop_enable_pdl_rewritten(text, _runtime_api_launch)


MUTATIONS = [
    Mutation("KC201", "load through a const pointer parameter before the wait", CPP, read_before_wait),
    Mutation("KC202", "wait as the kernel's first statement", CPP, wait_first),
    Mutation("KC203", "PDL launch of a kernel whose waits were removed", CPP, drop_wait),
    Mutation("KC204", "the only launch without .enable_pdl", CPP, drop_enable_pdl),
    Mutation("KC205", "asm griddepcontrol.wait without a memory clobber", CPP, asm_wait_without_clobber),
    Mutation(
        "KC201", "load through a bound params member before the wait", CPP, read_binding_member_before_wait, BINDING
    ),
    Mutation(
        "KC201", "load through a params struct field before the wait", CPP, read_params_field_before_wait, PARAMS_STRUCT
    ),
    Mutation("KC201", "load before the helper call that waits", CPP, read_before_helper_wait, HELPER_WAIT),
    Mutation(
        "KC203", "named PDL launch of a kernel whose waits were removed", CPP, drop_wait_named_launch, NAMED_LAUNCH
    ),
    Mutation("KC204", "named launch object never told to enable PDL", CPP, drop_enable_pdl_named_launch, NAMED_LAUNCH),
    Mutation(
        "KC203",
        "cudaLaunchKernelEx PDL launch of a kernel whose waits were removed",
        CPP,
        drop_wait_runtime_api_launch,
        RUNTIME_API_LAUNCH,
    ),
    Mutation(
        "KC204",
        "cudaLaunchKernelEx launch without the PDL attribute",
        CPP,
        drop_enable_pdl_runtime_api_launch,
        RUNTIME_API_LAUNCH,
    ),
]
