"""KC3xx plantings: documentation, hygiene and namespace violations planted into real files.

Declarations are planted right after the file's `namespace sglang {` (or before it, for the
global-scope rule), in files that include the `sgl_kernel` headers their planted code uses."""

from __future__ import annotations

import re

from planting import Mutation, Planted

CPP = (".cuh", ".cu", ".h")
_NAMESPACE_SGLANG = r"^namespace sglang(?:::\w+)* \{[^\n]*$"
_USES_SGL_DEVICE = "sgl_kernel/utils.cuh"


def _after_namespace(text: str, *lines: str) -> tuple[str, int] | None:
    """`lines` inserted after the first `namespace sglang {` line; the 1-based line of the first."""
    match = re.search(_NAMESPACE_SGLANG, text, re.M)
    if match is None:
        return None
    at = match.end() + 1
    first_line = text.count("\n", 0, at) + 1
    return text[:at] + "".join(f"{line}\n" for line in lines) + text[at:], first_line


def undocumented_device_function(text: str) -> Planted | None:
    if _USES_SGL_DEVICE not in text:
        return None
    planted = _after_namespace(text, "SGL_DEVICE float kc_planted_twice(float x) { return 2.0f * x; }")
    return Planted(*planted) if planted else None


_PARAM_LINE = re.compile(r"^([ \t]*(?:///|\*))[ \t]*[\\@]param[ \t]+\w+[^\n]*\n", re.M)
_DOC_LINE = re.compile(r"[ \t]*(?:///|\*|/\*\*)")


def stale_param(text: str) -> Planted | None:
    """A `\\param` naming no parameter, added to a block that documents a declaration (not a
    macro, which the rule does not check)."""
    for match in _PARAM_LINE.finditer(text):
        following = text[match.end() :].splitlines()
        documented = next((line for line in following if not _DOC_LINE.match(line)), "")
        if documented.lstrip().startswith("#"):
            continue
        line = text.count("\n", 0, match.end()) + 1
        planted = f"{match.group(1)} \\param kc_planted_gone A parameter that does not exist.\n"
        return Planted(text[: match.end()] + planted + text[match.end() :], line)
    return None


def non_ascii_comment(text: str) -> Planted | None:
    planted = _after_namespace(text, "// planted: a \u2192 b")
    return Planted(*planted) if planted else None


def global_declaration(text: str) -> Planted | None:
    """A constant at global scope, just before the file's `namespace sglang {`."""
    match = re.search(_NAMESPACE_SGLANG, text, re.M)
    if match is None or "#include" not in text[: match.start()]:
        return None
    line = text.count("\n", 0, match.start()) + 1
    return Planted(
        text[: match.start()] + "inline constexpr int kc_planted_global = 1;\n" + text[match.start() :], line
    )


def details_using_directive(text: str) -> Planted | None:
    """`using namespace` of another header's `details` (vec.cuh's, which the file includes)."""
    if "sgl_kernel/vec.cuh" not in text:
        return None
    planted = _after_namespace(text, "using namespace sglang::device::details;")
    return Planted(*planted) if planted else None


def forceinline_spelled_out(text: str) -> Planted | None:
    """A documented device function spelled `__device__ __forceinline__` (the finding is on it)."""
    planted = _after_namespace(
        text,
        "/// \\brief Planted helper.",
        "/// \\param x Value.",
        "/// \\return Twice `x`.",
        "__device__ __forceinline__ float kc_planted_fi(float x) { return 2.0f * x; }",
    )
    return Planted(planted[0], planted[1] + 3) if planted else None


MUTATIONS = [
    Mutation("KC301", "undocumented device function", CPP, undocumented_device_function),
    Mutation("KC302", "stale \\param in a parameter block", CPP, stale_param),
    Mutation("KC310", "non-ASCII arrow in a comment", CPP, non_ascii_comment),
    Mutation("KC320", "constant at global namespace scope", CPP, global_declaration),
    Mutation("KC321", "using namespace of another header's details", CPP, details_using_directive),
    Mutation("KC330", "__device__ __forceinline__ spelled out", CPP, forceinline_spelled_out),
]
