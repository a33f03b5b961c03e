"""Sizes a launcher dispatches over: the values of a ``switch`` that has no other way in.

FlashInfer's ``MergeState`` runs its kernel through ``DISPATCH_HEAD_DIM(head_dim, HEAD_DIM,
...)``, a macro of the tree's headers expanding to ``switch (head_dim) { case 64: ... case
128: ... default: FLASHINFER_ERROR(...) }``: any other head dimension is an error, so a draft
drawing ``head_dim`` from the usual sizes sees the launcher refuse every case. A switch over a
variable whose ``default`` raises an error (or that has none, so other values launch nothing)
gives that variable its case values; the switch is read in the launcher's body and in the
header helpers it hands tensors to (a helper's parameter standing for the launcher's text of
the argument), inside the function-like macros of the tree's headers (one level;
``HeaderModels.macros``, read once per tree).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..model import Function, SourceModel
from ..semantic import SemanticModel
from .hand_checks import clean, expanded_invocation
from .launch_sites import MACRO_DEFINITION, HeaderModels, uncast

_SWITCH = re.compile(r"\bswitch\s*\(\s*([\w.:()]+?)\s*\)\s*\{")
_LABEL = re.compile(r"\b(?:case\s+((?:[^:;{}]|::)+?)|(default))\s*:(?!:)")
_INTEGER = re.compile(r"\(?\s*(-?\d+)[uUlL]*\s*\)?")
# how an erroring branch reads: a throw, an error or panic call, a check of `false`
_ERROR = re.compile(
    r"\bthrow\b|\b\w*(?:ERROR|Error|THROW|Throw|FAIL|Fail|PANIC|Panic|abort|Unreachable|UNREACHABLE)\w*\s*\("
    r"|\b\w*CHECK\w*\s*\(\s*false\b"
)
_SUBJECT_CALL = re.compile(r"\.(?:unwrap|value)\(\)$")


def dispatched_sizes(
    model: SourceModel, launcher: Function, body: str, headers: HeaderModels
) -> dict[str, tuple[int, ...]]:
    """The values switches let through, by the launcher's name for the variable: in its
    ``body``, and in the header helpers it hands tensors to (over a parameter: the
    launcher's text of that argument)."""
    macros = headers.macros
    found = switched_values(body, macros)
    for helper in headers.helpers(SemanticModel(model), launcher):
        span = helper.function.body
        if span is None:
            continue
        text = helper.semantic.data[span.start : span.end].decode("utf-8", errors="replace")
        params = [p.name for p in helper.function.params]
        for subject, values in switched_values(text, macros).items():
            if subject in params and params.index(subject) < len(helper.passed):
                found.setdefault(uncast(helper.passed[params.index(subject)]), values)
    return found


def switched_values(body: str, macros: str) -> dict[str, tuple[int, ...]]:
    """Each variable a switch of ``body`` (or of a macro of ``macros`` it invokes) takes
    only its case values of: ``{"head_dim": (64, 128, 256, 512)}``."""
    text = clean(body)
    found = dict(_switches(text))
    names = set(MACRO_DEFINITION.findall(macros))
    if not names:
        return found
    joined = text + "\n" + macros
    for call in re.finditer(r"\b(\w+)\s*\(", text):
        if call.group(1) in names:
            expansion = expanded_invocation(joined, call.start())
            for subject, values in _switches(clean(expansion or "")):
                found.setdefault(subject, values)
    return found


def _switches(text: str) -> Iterator[tuple[str, tuple[int, ...]]]:
    for switch in _SWITCH.finditer(text):
        block = _block(text, switch.end())
        values, default = _labels(block)
        known = [v for v in values if v is not None]
        if known and len(known) == len(values) and (default is None or _ERROR.search(default)):
            yield _SUBJECT_CALL.sub("", switch.group(1)), tuple(dict.fromkeys(known))


def _block(text: str, start: int) -> str:
    """The text of the brace block whose ``{`` is just before ``start``."""
    depth = 1
    for index in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[index], 0)
        if depth == 0:
            return text[start:index]
    return text[start:]


def _labels(block: str) -> tuple[list[int | None], str | None]:
    """The case values at the top of a switch block (None for one that is no integer
    literal: a named constant) and its ``default`` branch's text (None without one): up to
    the next label, or the block's end."""
    values: list[int | None] = []
    depth, default_at, default_end = 0, -1, len(block)
    index = 0
    while index < len(block):
        char = block[index]
        if char in "{}":
            depth += 1 if char == "{" else -1
        elif depth == 0 and char in "cd":
            label = _LABEL.match(block, index)
            if label is not None and (index == 0 or not (block[index - 1].isalnum() or block[index - 1] == "_")):
                if default_at >= 0 and default_end == len(block):
                    default_end = index
                if label.group(1) is not None:
                    literal = _INTEGER.fullmatch(label.group(1).strip())
                    values.append(int(literal.group(1)) if literal else None)
                else:
                    default_at = label.end()
                index = label.end()
                continue
        index += 1
    return values, (block[default_at:default_end] if default_at >= 0 else None)
