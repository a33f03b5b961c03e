"""Model stage, device side: one model from the host pass and its device passes.

A device pass (`device_pass.py`) parsed code the host pass skipped under `#if
__CUDA_ARCH__`. The model of that pass is built like any other (`extract.py`); this module
takes from it what the host pass could not see, so that every rule reads one model and a
location is described by one pass only (a finding is never reported twice):

* the device pass's *territory*: the kernels, device and host-device functions whose extent
  holds code only that pass parsed (the whole function, as the device compiler sees it: its
  parameters, its body, the facts of every analysis about it), and the regions only that pass
  parsed outside any function (a device-only struct, a global, a declaration). A host function
  is never taken from a device pass: the host pass is what a launcher is compiled from, and a
  region inside one stays unseen.
* nothing of a declaration that holds an error of the device pass (its errors are not
  reported; the host pass's view stays), and nothing from a pass with a header or fatal error.
* inside the territory every fact comes from the device pass and the host pass's facts there
  are dropped; outside it every fact comes from the host pass.

A fact is located by its own span (`span`, a launch's `launch`, a body's `body`); facts about
a header's code (their `path` is set) and facts without a location stay the host pass's.
Device facts go after the host's in each list: where a device-only fallback (the stub of an
`__CUDA_ARCH__ < 800` branch) has the same USR as the host pass's definition, the host's is
the first definition of that entity (KC301 reports an undocumented entity at its first
definition; KC203 checks the first body of a launched kernel).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from ..model import FunctionKind, SourceModel, Span
from .device_pass import Range, subtract_ranges


def merge_device_model(host: SourceModel, device: SourceModel, regions: tuple[Range, ...]) -> None:
    """Move into `host` what `device` (a device pass's model) describes in `regions`."""
    territory = _territory(device, regions)
    if not territory:
        return
    for host_facts, device_facts in _fact_containers(host, device):
        for item in fields(host_facts):
            host_list, device_list = getattr(host_facts, item.name), getattr(device_facts, item.name)
            if not isinstance(host_list, list) or item.name == "error_spans":
                continue
            taken = [fact for fact in device_list if _inside(_anchor(fact), territory)]
            kept = [fact for fact in host_list if not _inside(_anchor(fact), territory)]
            if taken or len(kept) != len(host_list):
                setattr(host_facts, item.name, kept + taken)


def _territory(device: SourceModel, regions: tuple[Range, ...]) -> list[Range]:
    """Where the device pass's facts replace the host pass's (see the module doc)."""
    errors = [(s.start, s.end) for s in device.error_spans]
    host_functions = [_range(f.span) for f in device.functions if f.kind is FunctionKind.HOST]
    owned = [
        _range(f.span)
        for f in device.functions
        if f.kind is not FunctionKind.HOST and f.body is not None and _overlaps(_range(f.span), regions)
    ]
    loose = subtract_ranges(list(regions), host_functions)
    return [r for r in owned + loose if not _overlaps(r, errors)]


def _fact_containers(host: SourceModel, device: SourceModel) -> list[tuple[Any, Any]]:
    return [
        (host, device),
        (host.launcher_facts, device.launcher_facts),
        (host.integer_facts, device.integer_facts),
        (host.scope_facts, device.scope_facts),
        (host.dataflow_facts, device.dataflow_facts),
    ]


def _anchor(fact: Any) -> int | None:
    """The byte offset a fact is located at in the checked file (None: elsewhere or nowhere)."""
    if getattr(fact, "path", ""):
        return None  # about a header's code
    for name in ("span", "launch", "body"):
        value = getattr(fact, name, None)
        if isinstance(value, Span):
            return value.start
    return None


def _range(span: Span) -> Range:
    return span.start, span.end


def _inside(offset: int | None, ranges: list[Range]) -> bool:
    return offset is not None and any(start <= offset < end for start, end in ranges)


def _overlaps(extent: Range, ranges: list[Range] | tuple[Range, ...]) -> bool:
    return any(max(extent[0], start) < min(extent[1], end) for start, end in ranges)
