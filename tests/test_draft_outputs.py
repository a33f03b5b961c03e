"""Drafted roles from the kernels' writes (issue 29, item 3): a tensor the kernel writes is
drafted ``OUT``, so the harness poisons it and an element a bug leaves unwritten is seen
(KD102); one drafted ``INPLACE`` keeps its input values and hides it."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import drafted_specs

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "draft" / "handcheck"


@pytest.mark.slow
def test_writes_through_a_runtime_api_launch_a_traits_alias_and_vector_methods_make_outputs(tmp_path):
    specs = {s.name: s for s in drafted_specs(FIXTURES / "vector_helpers.cu", tmp_path)}
    # a template helper's cudaLaunchKernel((void*)kernel, ..., args): kernel a local, args an
    # array of addresses; the kernel reads x and y and writes blended through the
    # cast_load/cast_store methods of a vector type that depends on its parameters
    blend = {t.name: t.role.name for t in specs["blend_states"].tensors}
    assert blend == {"x": "IN", "wx": "IN", "y": "IN", "wy": "IN", "blended": "OUT", "weight": "OUT"}
    # `using Traits = SpliceTraits<T>; Traits::store(to, ...)`: a static member of an alias of
    # a dependent type, whose specializations store with inline PTX
    splice = {t.name: t.role.name for t in specs["splice_rows"].tensors}
    assert splice == {"dst": "OUT", "src": "IN"}
