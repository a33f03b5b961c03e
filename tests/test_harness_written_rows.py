"""A tensor scattered into (``written_rows``) on the CPU: KD102 looks only at the rows its ids
name (an id out of range names none), and the spec says which tensors may carry the field."""

from __future__ import annotations

import pytest
import torch

from kernel_check.harness.execute import in_named_rows
from kernel_check.harness.spec import TAILS, Instantiation, KernelSpec, Role, SpecError, Tensor


def test_only_the_rows_the_ids_in_range_name_must_be_written():
    unwritten = torch.ones(5, 2, dtype=torch.bool)  # a cache of 5 rows, nothing written
    ids = torch.tensor([3, 0, -1, 5], dtype=torch.int32)  # two in range, two an oob profile's
    kept = in_named_rows(unwritten, ids)
    assert kept.tolist() == [[True, True], [False, False], [False, False], [True, True], [False, False]]
    # a 1-D tensor: its elements are its rows
    assert in_named_rows(torch.ones(4, dtype=torch.bool), torch.tensor([2])).tolist() == [False, False, True, False]


def _scatter(cache: Tensor) -> KernelSpec:
    return KernelSpec(
        name="put_rows",
        source="put_rows.cuh",
        export="put_rows",
        symbol="put_rows",
        args=(cache, Tensor("ids", ("l",), "int32", init="perm:rows"), Tensor("src", ("l", "d"), "float32")),
        reference=None,
        instantiations=(Instantiation(()),),
        grid={"rows": TAILS, "l": (1, 3), "d": (8,)},
        constraint=lambda sizes: sizes["rows"] >= sizes["l"],
    )


def test_written_rows_needs_an_output_and_an_input_of_ids():
    _scatter(Tensor("cache", ("rows", "d"), "float32", Role.OUT, written_rows="ids")).validate()
    for cache in (
        Tensor("cache", ("rows", "d"), "float32", Role.INPLACE, written_rows="ids"),
        Tensor("cache", ("rows", "d"), "float32", Role.OUT, written_rows="slots"),
    ):
        with pytest.raises(SpecError, match="tensor cache: written_rows needs an OUT tensor and the name of an input"):
            _scatter(cache).validate()
