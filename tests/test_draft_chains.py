"""Drafted inputs that honour what a launcher's matchers share: a wildcard dimension of one
matcher (mini-sglang's binds it on the first verify) and a dtype symbol bound by several."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import drafted_specs

pytestmark = pytest.mark.slow  # each test drafts from a real libclang parse

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "draft" / "chains"


def _spec(source: Path, tmp_path: Path):
    (spec,) = drafted_specs(source, tmp_path)
    return spec


def test_tensors_of_one_matcher_share_its_wildcard_and_matchers_share_a_dtype_symbol(tmp_path):
    spec = _spec(FIXTURES / "slot_store.cuh", tmp_path)
    tensors = {t.name: t for t in spec.tensors}
    # TensorMatcher({-1, C}).verify(a_cache).verify(b_cache): one size for the wildcard
    assert tensors["a_cache"].shape == tensors["b_cache"].shape == ("a_cache_0", "c")
    # with_dtype(dtype) in two matchers, dtype.set_options<fp16_t, bf16_t>(): one dtype variable
    assert {tensors[n].dtype for n in ("a_cache", "b_cache", "a", "b")} == {"a_cache_dtype"}
    (inst,) = spec.instantiations
    assert inst.dtypes["a_cache_dtype"] == ("float16", "bfloat16")
    # a dtype symbol of its own: a variable of its own
    assert tensors["slots"].dtype == "slots_dtype" and inst.dtypes["slots_dtype"] == ("int32", "int64")
