"""Helpers shared by several C++ rules (one home for each piece of shared logic)."""

from __future__ import annotations

import re

from kernel_check.finding import Location
from kernel_check.model import SourceModel, Span, Struct, TypeInfo

_QUALIFIERS = re.compile(r"\b(const|volatile|struct|class|typename)\b|[&*]")


def location_of(model: SourceModel, span: Span) -> Location:
    """A reportable location; clang's byte columns become character columns."""
    return Location(model.path, span.line, _char_column(model, span.line, span.column),
                    span.end_line, _char_column(model, span.end_line, span.end_column))


def _char_column(model: SourceModel, line: int, byte_column: int) -> int:
    raw = model.line_bytes(line)
    if raw.isascii():
        return byte_column
    return len(raw[:byte_column - 1].decode("utf-8", errors="replace")) + 1


def bare_type_name(spelling: str) -> str:
    """`const sglang::Params<T> &` -> `Params`: the unqualified record name of a type."""
    name = _QUALIFIERS.sub(" ", spelling).strip()
    name = name.split("<", 1)[0].strip()
    return name.split("::")[-1].strip()


def struct_for_type(model: SourceModel, type_: TypeInfo) -> Struct | None:
    """The struct of this file a by-value (or const-reference) parameter type names."""
    if type_.is_pointer:
        return None
    name = bare_type_name(type_.spelling)
    matches = [s for s in model.structs if s.name == name and s.is_definition]
    return matches[0] if matches else None
