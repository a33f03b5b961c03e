"""libclang entry points that the Python bindings do not wrap, declared in one place.

Each one is a C function of libclang called through ctypes: its prototype is declared once
(`_lib`), and a small typed function here is the only caller, so the extraction passes never
touch ctypes themselves.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from ctypes import POINTER, Structure, byref, c_int, c_longlong, c_uint, c_ulonglong, c_void_p, cast
from dataclasses import dataclass
from typing import Any

import clang.cindex as ci

from ..model import Span
from .cursors import span_of


class _SourceRangeList(Structure):
    _fields_ = [("count", c_uint), ("ranges", POINTER(ci.SourceRange))]


# CXUnaryOperatorKind values
UNARY_POST_INC, UNARY_POST_DEC, UNARY_PRE_INC, UNARY_PRE_DEC = 1, 2, 3, 4
UNARY_ADDRESS_OF, UNARY_DEREF = 5, 6
_EVAL_INT = 1  # CXEval_Int

_PROTOTYPES: dict[str, tuple[list, object]] = {
    "clang_getCursorUnaryOperatorKind": ([ci.Cursor], c_int),
    "clang_isInvalidDeclaration": ([ci.Cursor], c_uint),
    "clang_getSkippedRanges": ([ci.TranslationUnit, ci.File], POINTER(_SourceRangeList)),
    "clang_disposeSourceRangeList": ([POINTER(_SourceRangeList)], None),
    "clang_Cursor_getGCCAssemblyTemplate": ([ci.Cursor], ci._CXString),
    "clang_Cursor_isGCCAssemblyVolatile": ([ci.Cursor], c_uint),
    "clang_Cursor_getGCCAssemblyNumClobbers": ([ci.Cursor], c_uint),
    "clang_Cursor_getGCCAssemblyClobber": ([ci.Cursor, c_uint], ci._CXString),
    "clang_Cursor_getGCCAssemblyNumOutputs": ([ci.Cursor], c_uint),
    "clang_Cursor_getGCCAssemblyNumInputs": ([ci.Cursor], c_uint),
    "clang_Cursor_getGCCAssemblyOutput": ([ci.Cursor, c_uint, POINTER(ci._CXString), POINTER(ci.Cursor)], c_uint),
    "clang_Cursor_getGCCAssemblyInput": ([ci.Cursor, c_uint, POINTER(ci._CXString), POINTER(ci.Cursor)], c_uint),
    "clang_Cursor_Evaluate": ([ci.Cursor], c_void_p),
    "clang_EvalResult_getKind": ([c_void_p], c_int),
    "clang_EvalResult_isUnsignedInt": ([c_void_p], c_uint),
    "clang_EvalResult_getAsLongLong": ([c_void_p], c_longlong),
    "clang_EvalResult_getAsUnsigned": ([c_void_p], c_ulonglong),
    "clang_EvalResult_dispose": ([c_void_p], None),
    "clang_getExpansionLocation": (
        [ci.SourceLocation, POINTER(c_void_p), POINTER(c_uint), POINTER(c_uint), POINTER(c_uint)],
        None,
    ),
    "clang_getFileLocation": (
        [ci.SourceLocation, POINTER(c_void_p), POINTER(c_uint), POINTER(c_uint), POINTER(c_uint)],
        None,
    ),
}


@functools.cache
def _lib() -> Any:
    """The libclang library with the prototypes above declared."""
    lib = ci.conf.lib
    for name, (argtypes, restype) in _PROTOTYPES.items():
        function = getattr(lib, name)
        function.argtypes = argtypes
        function.restype = restype
    return lib


def unary_operator(node: ci.Cursor) -> int:
    """The operator of a UNARY_OPERATOR cursor (one of the `UNARY_*` values)."""
    return _lib().clang_getCursorUnaryOperatorKind(node)


def is_invalid_declaration(cursor: ci.Cursor) -> bool:
    """Whether clang marked the declaration invalid (its type or a redeclaration was wrong)."""
    return bool(_lib().clang_isInvalidDeclaration(cursor))


def overloaded_decls(node: ci.Cursor) -> list[ci.Cursor]:
    """The candidate declarations behind an OVERLOADED_DECL_REF."""
    lib = ci.conf.lib
    count = lib.clang_getNumOverloadedDecls(node)
    return [ci.Cursor.from_result(lib.clang_getOverloadedDecl(node, i), node) for i in range(count)]


def skipped_spans(tu: ci.TranslationUnit, path: str) -> list[Span]:
    """The preprocessor-inactive regions (`#if` branches not taken) of the main file."""
    lib = _lib()
    ranges = lib.clang_getSkippedRanges(tu, tu.get_file(path))
    try:
        return [span_of(ranges.contents.ranges[i]) for i in range(ranges.contents.count)]
    finally:
        lib.clang_disposeSourceRangeList(ranges)


def folded_int(cursor: ci.Cursor) -> int | None:
    """The integer value clang computes for a non-dependent constant expression (C++
    semantics: truncating division, wrap-around of unsigned types), else None."""
    if not cursor.kind.is_expression():
        return None
    lib = _lib()
    result = lib.clang_Cursor_Evaluate(cursor)
    if not result:
        return None
    try:
        if lib.clang_EvalResult_getKind(result) != _EVAL_INT:
            return None
        if lib.clang_EvalResult_isUnsignedInt(result):
            return int(lib.clang_EvalResult_getAsUnsigned(result))
        return int(lib.clang_EvalResult_getAsLongLong(result))
    finally:
        lib.clang_EvalResult_dispose(result)


@dataclass(frozen=True)
class AsmParts:
    """An inline `asm` statement's template, clobbers and operand expressions."""

    template: str
    clobbers: tuple[str, ...]
    is_volatile: bool
    outputs: tuple[ci.Cursor, ...]
    inputs: tuple[ci.Cursor, ...]


def asm_parts(node: ci.Cursor) -> AsmParts:
    """The parts of a GCC-style inline assembly statement (an ASM_STMT cursor)."""
    lib = _lib()

    def operands(count: int, getter: Callable) -> tuple[ci.Cursor, ...]:
        found = []
        for index in range(count):
            constraint, expression = ci._CXString(), ci.Cursor()
            if getter(node, index, byref(constraint), byref(expression)) and not expression.is_null():
                expression._tu = node._tu
                found.append(expression)
        return tuple(found)

    clobbers = tuple(
        ci._CXString.from_result(lib.clang_Cursor_getGCCAssemblyClobber(node, i))
        for i in range(lib.clang_Cursor_getGCCAssemblyNumClobbers(node))
    )
    return AsmParts(
        template=ci._CXString.from_result(lib.clang_Cursor_getGCCAssemblyTemplate(node)),
        clobbers=clobbers,
        is_volatile=bool(lib.clang_Cursor_isGCCAssemblyVolatile(node)),
        outputs=operands(lib.clang_Cursor_getGCCAssemblyNumOutputs(node), lib.clang_Cursor_getGCCAssemblyOutput),
        inputs=operands(lib.clang_Cursor_getGCCAssemblyNumInputs(node), lib.clang_Cursor_getGCCAssemblyInput),
    )


def file_handle(cursor: ci.Cursor) -> int | None:
    """The file of `cursor`'s location (where its macro expansion is, as `location.file`
    answers) as libclang's file handle, an integer that stands for one file of this
    translation unit; None for no file. Cheaper than `location.file.name` (no `File` and
    no string per cursor) where many cursors are sorted by file (`file_name_of`)."""
    lib = _lib()
    handle = c_void_p()
    lib.clang_getExpansionLocation(lib.clang_getCursorLocation(cursor), byref(handle), None, None, None)
    return handle.value


def written_span(extent: ci.SourceRange) -> Span:
    """Where the code of `extent` is written. Inside a macro's arguments that is the
    argument's own text (a kernel launch in a lambda handed to a dispatch macro), where the
    bindings' locations (`span_of`) all answer the macro's start; code of a macro's body
    still answers the macro's start."""
    lib = _lib()
    ends = []
    for location in (extent.start, extent.end):
        at = (c_uint(), c_uint(), c_uint())  # line, column, offset
        lib.clang_getFileLocation(location, None, *(byref(part) for part in at))
        ends.append(tuple(part.value for part in at))
    (line, column, start), (end_line, end_column, end) = ends
    if end < start:  # a written start and an end from the macro's body: the start alone
        end_line, end_column, end = line, column, start
    return Span(line, column, end_line, end_column, start, end)


def file_name_of(handle: int) -> str:
    """The name of a file handle `file_handle` returned (its translation unit alive)."""
    return ci.File(cast(c_void_p(handle), ci.c_object_p)).name
