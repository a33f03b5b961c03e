"""The drafter's door to the static model: one file parsed as the static check parses it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..model import SourceModel

_PREAMBLES: dict[tuple[Path, str], Any] = {}  # (store, strategy) -> this process's PreambleCache


def parse_model(cuh: Path, defines: tuple[str, ...] = (), include_dirs: Sequence[Path] = ()) -> SourceModel:
    """The static model of one file, parsed as ``kernel-check`` parses it (the real CUDA
    headers when installed: a parse error hides the declaration it is in from the model),
    and with the tree's include folders the build gets (``tree_includes``): a header not
    found leaves the types after it unresolved (an ``Optional<TensorView>`` reads ``int``)
    and hides a tree's own matchers (mini-sglang's ``<minisgl/tensor.h>``). Like the static
    check, it parses against the precompiled preambles of the user's cache (``_preambles``)."""
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
        unit = parse_file(cuh, data, settings, _preambles())
        return extract(unit, data.decode("utf-8", errors="replace"), data, every_access=True)

    return on_deep_stack(parse)


def _preambles() -> Any:
    """The preamble store the static check uses (``cache.preamble_store`` of the cache root,
    strategy ``KERNEL_CHECK_PREAMBLE``), None when that is "off": a file's headers are ~90% of
    its plain parse, and a draft of a tree parses each source and the tree headers its
    launchers call into. Kept for the process, as a server keeps its sessions
    (``cache_session.WarmSessions``): replaced when a file it hashed changed since. No cap of
    its own: the static check's runs keep the store within ``cache-max-size``, and a draft
    builds only the preambles of the flags the static check parses the same files with."""
    from ..cache import cache_root, mark_cache_root, preamble_store, preamble_strategy, static_root
    from ..clang.preamble import PreambleCache

    strategy = preamble_strategy()
    if strategy == "off":
        return None
    key = (preamble_store(static_root()), strategy)
    cache = _PREAMBLES.get(key)
    if cache is None or cache.hashes.changed():
        if cache is not None:
            cache.close()  # its directories may be evicted from now on
        mark_cache_root(cache_root())
        cache = _PREAMBLES[key] = PreambleCache(key[0], strategy)
    return cache
