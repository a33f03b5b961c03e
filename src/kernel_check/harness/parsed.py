"""The drafter's door to the static model: one file parsed as the static check parses it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from ..model import SourceModel


def parse_model(cuh: Path, defines: tuple[str, ...] = (), include_dirs: Sequence[Path] = ()) -> SourceModel:
    """The static model of one file, parsed as ``kernel-check`` parses it (the real CUDA
    headers when installed: a parse error hides the declaration it is in from the model),
    and with the tree's include folders the build gets (``tree_includes``): a header not
    found leaves the types after it unresolved (an ``Optional<TensorView>`` reads ``int``)
    and hides a tree's own matchers (mini-sglang's ``<minisgl/tensor.h>``)."""
    from ..clang.deep_stack import on_deep_stack
    from ..clang.extract import extract
    from ..clang.parse import parse_file, resolve_settings
    from ..jit_flags import inline_build_args

    def parse() -> SourceModel:
        data = cuh.read_bytes()
        settings = resolve_settings("auto", include_dirs=tuple(str(d) for d in include_dirs), defines=defines)
        inline = inline_build_args(cuh, data)
        if inline:  # a source that names tvm::ffi without including it: the harness's build includes it first
            settings = replace(settings, wrapper_flags=((str(cuh.resolve()), inline),))
        unit = parse_file(cuh, data, settings)
        return extract(unit, data.decode("utf-8", errors="replace"), data, every_access=True)

    return on_deep_stack(parse)
