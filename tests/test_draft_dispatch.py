"""Sizes a launcher dispatches over (FlashInfer's DISPATCH_HEAD_DIM shape): a dimension that
reaches a ``switch`` whose other values are an error is drafted with the case values only."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import drafted_specs
from kernel_check.harness.dispatch_sizes import dispatched_sizes, switched_values
from kernel_check.harness.draft import TAIL_AXIS
from kernel_check.harness.launch_sites import HeaderModels, launch_sites
from kernel_check.harness.parsed import parse_model
from kernel_check.semantic import SemanticModel

TREE = Path(__file__).resolve().parent / "fixtures" / "draft" / "width_tree"


@pytest.mark.slow
def test_a_width_a_header_helper_dispatches_over_takes_the_dispatched_values(tmp_path):
    """``copy_rows`` hands ``width`` (``in.size(1)``) to ``widths::CopyRows``, whose
    ``DISPATCH_WIDTH`` macro (another header) switches over 32 and 96 and throws otherwise:
    the axis gets those two, and the tails go to a dummy axis, not to ``rows``."""
    tree = tmp_path / "width_tree"
    shutil.copytree(TREE, tree)
    source = tree / "csrc" / "copy_rows.cu"
    (spec,) = drafted_specs(source, source.parent)
    assert {t.name: t.shape for t in spec.tensors}["in_"] == ("rows", "width")
    assert spec.grid == {"rows": (1, 3, 32), "width": (32, 96), "tail": TAIL_AXIS}


def test_only_a_switch_with_no_other_way_in_restricts_its_variable():
    body = """{
      switch (a) { case 1: f(); break; case 2u: g(); break; default: TVM_FFI_THROW(ValueError) << a; }
      switch (b.unwrap()) { case 8: { h(); break; } }
      switch (c) { case 4: h(); break; default: generic(c); }
      switch (d) { case 16: RuntimeCheck(false, "no"); break; default: Panic("d"); }
      switch (e) { case Sizes::kSmall: f(); break; case (8): g(); break; default: throw 1; }
    }"""
    # a: the default throws; b: no default (other values launch nothing); c: the default
    # does the work; d: an erroring case is still a case the switch names; e: a case of a
    # named constant is a value unknown here, so the switch says nothing
    assert switched_values(body, "") == {"a": (1, 2), "b": (8,), "d": (16,)}


def test_dispatch_macros_of_the_source_itself_and_of_its_headers_are_expanded(tmp_path):
    source = tmp_path / "k.cu"
    (tmp_path / "sizes.h").write_text(
        "#define DISPATCH_LANES(lanes, L, ...) switch (lanes) { case 2: { __VA_ARGS__ } break; default: abort(); }\n"
    )
    source.write_text(
        '#include "sizes.h"\n'
        "#define DISPATCH_COUNT(count, N, ...) \\\n"
        "  switch (count) { case 4: { constexpr int N = 4; __VA_ARGS__ } break; default: throw 0; }\n"
    )
    body = "{ DISPATCH_COUNT(n, N, { DISPATCH_LANES(lanes, L, { f<N, L>(); }) }) }"
    assert switched_values(body, HeaderModels(source).macros) == {"n": (4,), "lanes": (2,)}


def test_the_tree_macros_are_read_once_per_tree(tmp_path):
    """Every launcher of a source asks the same ``HeaderModels``: its headers' macros are
    read on the first question, not again for each launcher."""
    source = tmp_path / "k.cu"
    (tmp_path / "sizes.h").write_text("#define DISPATCH_LANES(lanes, ...) switch (lanes) { default: abort(); }\n")
    source.write_text('#include "sizes.h"\n')
    headers = HeaderModels(source)
    first = headers.macros
    (tmp_path / "sizes.h").write_text("#define OTHER(x) x\n")
    assert "DISPATCH_LANES" in first
    assert headers.macros == first


def test_a_launchers_header_helpers_are_found_once_for_its_sites_and_its_dispatched_sizes(tmp_path):
    """``copy_rows`` hands its tensors to ``widths::CopyRows`` of a header: the launch sites
    and the dispatched sizes of the launcher ask for that helper, found once."""
    tree = tmp_path / "width_tree"
    shutil.copytree(TREE, tree)
    source, include = tree / "csrc" / "copy_rows.cu", tree / "include"
    model = parse_model(source, (), (include,))
    (launcher,) = [f for f in model.functions if f.name == "copy_rows" and f.body is not None]
    headers = HeaderModels(source, (include,))
    sites = launch_sites(model, launcher, headers)
    helpers = headers.helpers(SemanticModel(model), launcher)
    assert [h.function.name for h in helpers] == ["CopyRows"]
    assert any(site.semantic is helpers[0].semantic for site in sites)
    assert dispatched_sizes(model, launcher, "", headers) == {"width": (32, 96)}
    assert headers.helpers(SemanticModel(model), launcher) is helpers
