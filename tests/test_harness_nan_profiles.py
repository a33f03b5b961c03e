"""KD105 on the CPU: after a profile of finite values (zeros, equal), an output NaN that the
ordinary inputs never give is reported; an element never written (its poison is a NaN with a
payload of its own) and an output that holds NaN on ordinary inputs too are not. The GPU side
runs the same function on a kernel's outputs (``execute._nan_from_finite``)."""

from __future__ import annotations

import torch

from kernel_check.harness.execute import fill_poison, new_nans
from kernel_check.harness.profiles import FINITE_PROFILES, default_contract


def _rows(*values: float) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float16)


def test_a_nan_that_only_the_finite_profile_gives_is_reported_with_where():
    # rsqrt(sum_sq / d) with no eps: an all-zero row gives inf, and 0 * inf = NaN
    profiled = {"out": _rows(0.5, float("nan"), float("nan")), "scale": _rows(1.0, 2.0, 3.0)}
    ordinary = {"out": _rows(0.5, -0.25, 1.0), "scale": _rows(1.0, 2.0, 3.0)}
    message, count = new_nans(profiled, ordinary, which_poison=0)
    assert message == "out: 2 of 3 elements NaN (first at index (1,))"
    assert count == 2
    fp8 = {"out": _rows(float("nan"), 1.0).to(torch.float8_e4m3fn)}
    assert new_nans(fp8, {"out": _rows(0.5, 1.0).to(torch.float8_e4m3fn)}, which_poison=0)[1] == 1


def test_an_unwritten_element_and_a_nan_the_ordinary_inputs_give_too_are_no_finding():
    unwritten = _rows(0.5, 0.5, 0.5)
    fill_poison(unwritten[1:], 0)  # never written: it still holds poison A
    assert torch.isnan(unwritten).sum() == 2
    message, _ = new_nans({"out": unwritten}, {"out": _rows(0.5, 1.0, 2.0)}, which_poison=0)
    assert message == ""
    # a kernel whose ordinary values already give NaN (log of a negative): not the profile's doing
    message, _ = new_nans({"out": _rows(float("nan"), 1.0)}, {"out": _rows(1.0, float("nan"))}, which_poison=0)
    assert message == ""
    # integer outputs hold no NaN
    assert new_nans({"ids": torch.arange(3)}, {"ids": torch.arange(3)}, which_poison=0) == ("", 0)


def test_the_finite_profiles_are_judged_safe_without_a_reference_and_matched_with_one():
    assert set(FINITE_PROFILES) == {"zeros", "equal"}
    for profile in FINITE_PROFILES:
        assert default_contract(profile, None, has_reference=False) == "safe"
        assert default_contract(profile, None, has_reference=True) == "match"
