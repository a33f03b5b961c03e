"""Drafted specs, second stage: a ``Draft`` (``draft_model.py``, drafted by ``draft.py``) written out as a spec file.

The text is plain Python that loads as it is: one ``KernelSpec`` per launcher, the guesses
listed in the module docstring, ``reference=None`` behind a ``TODO(kernel-check)`` marker.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .draft_model import TODO, Draft, DraftInstantiation, DraftScalar, DraftTensor
from .spec import TAILS, CurrentStream, Role

REFERENCE_MARKER = f"  # {TODO}: write the PyTorch reference"


def render(drafts: Sequence[Draft], cuh: Path) -> str:
    """The spec file's text: valid Python that loads as it is."""
    notes = [n for d in drafts for n in d.notes]
    lines = [f'"""Drafted harness spec for {cuh.name} (kernel-check spec new): check every guess.', ""]
    lines += [f"- {note}" for note in dict.fromkeys(notes)]
    lines += [f"- {TODO}: write the PyTorch reference (until then: checks without one, or --against REV)", '"""', ""]
    tree = drafts[0].tree_variable if drafts else ""
    imported = ["TAILS", "Instantiation", "KernelSpec", "Role", "Scalar", "Tensor"]
    if any(isinstance(a, DraftScalar) and isinstance(a.value, CurrentStream) for d in drafts for a in d.args):
        imported.insert(0, "CURRENT_STREAM")
    lines += [f"from kernel_check.harness.spec import {', '.join([*imported, *(['tree_path'] if tree else [])])}", ""]
    if tree:
        lines += [f"TREE = tree_path({tree!r})  # the kernel tree: set ${tree}", ""]
    names = []
    for draft in drafts:
        names.append(draft.name.upper())
        lines += [f"{draft.name.upper()} = {_render_spec(draft)}", ""]
    if len(drafts) == 1:
        lines.append(f"SPEC = {names[0]}")
    else:
        lines.append(f"SPECS = [{', '.join(names)}]")
    return "\n".join(lines) + "\n"


def _render_spec(draft: Draft) -> str:
    fields = [
        ("name", repr(draft.name)),
        ("source", _render_path(draft.source, draft)),
        ("export", repr(draft.export)),
        ("symbol", repr(draft.symbol)),
        ("args", "(\n" + "".join(f"        {_render_arg(a, draft)},{_comment(a)}\n" for a in draft.args) + "    )"),
        *([("returns", repr(draft.returns))] if draft.returns else []),
        ("reference", "None"),
        (
            "instantiations",
            "(\n" + "".join(f"        {_render_inst(i, draft)},\n" for i in draft.instantiations) + "    )",
        ),
        ("grid", "{" + ", ".join(f"{k!r}: {_render_axis(v)}" for k, v in draft.grid.items()) + "}"),
    ]
    if draft.constraint:
        test = " and ".join(f"sizes[{rows!r}] >= sizes[{ids!r}]" for rows, ids in draft.constraint)
        fields.append(("constraint", f"lambda sizes: {test}"))
    if draft.canonicalize:
        fields.append(("canonicalize", repr(draft.canonicalize)))
    if draft.extra_cuda_cflags:
        fields.append(("extra_cuda_cflags", repr(draft.extra_cuda_cflags)))
    if draft.include_dirs:
        dirs = "".join(f"{_render_path(d, draft)}, " for d in draft.include_dirs).rstrip()
        fields.append(("include_dirs", f"({dirs})"))
    if draft.min_arch is not None:
        fields.append(("min_arch", repr(draft.min_arch)))
    body = "".join(f"    {key}={value},{REFERENCE_MARKER if key == 'reference' else ''}\n" for key, value in fields)
    return f"KernelSpec(\n{body})"


def _render_path(path: str, draft: Draft) -> str:
    """A path relative to the spec, or (``--tree-env``) below the tree the variable names."""
    return f"str(TREE / {path!r})" if draft.tree_variable else repr(path)


def _render_axis(values: tuple[int, ...]) -> str:
    if values[: len(TAILS)] == TAILS:
        rest = values[len(TAILS) :]
        return "TAILS" + (f" + {rest!r}" if rest else "")
    return repr(values)


def _uniform_width(tensor: DraftTensor, draft: Draft) -> int | None:
    widths = {i.vector_bytes.get(tensor.name, 0) for i in draft.instantiations}
    return widths.pop() if len(widths) == 1 else None


def _render_arg(arg: DraftTensor | DraftScalar, draft: Draft) -> str:
    if isinstance(arg, DraftScalar):
        value = f"lambda sizes: sizes[{arg.axis!r}]" if arg.axis else repr(arg.value)
        return f"Scalar({arg.name!r}, {value})"
    parts = [repr(arg.name), repr(arg.shape)]
    if arg.dtype != "T":
        parts.append(f"dtype={arg.dtype!r}")
    if arg.role is not Role.IN:
        parts.append(f"role=Role.{arg.role.name}")
    width = _uniform_width(arg, draft)
    if width:
        parts.append(f"vector_bytes={width}")
    if arg.accepts:
        parts.append(f"accepts={arg.accepts!r}")
    if arg.strided_rows:
        parts.append("strided_rows=True")
    if arg.init:
        parts.append(f"init={arg.init!r}")
    if arg.written_rows:
        parts.append(f"written_rows={arg.written_rows!r}")
    if arg.device != "cuda":
        parts.append(f"device={arg.device!r}, pinned=True")
    return f"Tensor({', '.join(parts)})"


def _comment(arg: DraftTensor | DraftScalar) -> str:
    return f"  # {arg.comment}" if isinstance(arg, DraftScalar) and arg.comment else ""


def _render_inst(inst: DraftInstantiation, draft: Draft) -> str:
    parts = [repr(inst.template_args)]
    if inst.dtypes:
        parts.append(f"dtypes={inst.dtypes!r}")
    if inst.pdl:
        parts.append("pdl=True")
    if inst.sizes:
        parts.append(f"sizes={inst.sizes!r}")
    varying = {
        name: width
        for name, width in inst.vector_bytes.items()
        if _uniform_width(next(a for a in draft.args if isinstance(a, DraftTensor) and a.name == name), draft) is None
    }
    if varying:
        parts.append(f"vector_bytes={varying!r}")
    return f"Instantiation({', '.join(parts)})"
