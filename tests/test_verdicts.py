"""How the ordered cases (stream, graph, PDL) judge a run, on the CPU: a difference must
repeat before it is a verdict, and a nondeterministic kernel's own spread is no
difference. The GPU side (tests/gpu, the scatter-add and atomic-slot fixtures) runs the
same code on real kernels."""

from __future__ import annotations

import torch

from kernel_check import codes
from kernel_check.harness.cases import Outcome
from kernel_check.harness.execute import CONFIRM_RUNS, NOISE_MARGIN, _confirmed, _noise, compare


def _scripted(verdicts: list[bool]):
    """An attempt that answers the given verdicts in turn, and records how often it ran."""
    ran: list[int] = []

    def attempt(index: int) -> Outcome:
        ran.append(index)
        passed = verdicts[index]
        return Outcome(codes.WRONG_STREAM, passed, "" if passed else f"differs (attempt {index})")

    return attempt, ran


def test_a_difference_that_repeats_is_a_verdict_with_its_count():
    attempt, ran = _scripted([False, True, False])
    outcome = _confirmed(attempt, 1)
    assert not outcome.passed
    assert outcome.message == "differs (attempt 0) (in 2 of 3 runs)"
    assert ran == [0, 1, 2]


def test_a_difference_seen_once_passes_and_keeps_what_was_seen():
    attempt, ran = _scripted([False] + [True] * CONFIRM_RUNS)
    outcome = _confirmed(attempt, 1)
    assert outcome.passed
    assert "seen once in 3 runs" in outcome.detail and "differs (attempt 0)" in outcome.detail
    assert ran == [0, 1, 2]


def test_a_clean_case_runs_its_planned_runs_only():
    attempt, ran = _scripted([True] * 5)
    assert _confirmed(attempt, 3).passed
    assert ran == [0, 1, 2]


def test_the_pdl_case_stops_at_the_second_difference():
    attempt, ran = _scripted([True, False, False, True, True])
    outcome = _confirmed(attempt, 3)
    assert not outcome.passed and outcome.message.endswith("(in 2 of 3 runs)")
    assert ran == [0, 1, 2]


def test_noise_is_the_widest_range_of_the_plain_runs_times_the_margin():
    runs = [
        torch.tensor([1.0, 2.0, 3.0, float("nan"), float("nan")]),
        torch.tensor([1.0, 2.25, 3.0, float("nan"), 7.0]),
        torch.tensor([1.0, 1.75, 3.0, float("nan"), float("nan")]),
    ]
    slack = _noise(runs, None)
    assert slack[:4].tolist() == [NOISE_MARGIN * 0.5] * 4  # 2.25 - 1.75, over the whole tensor
    assert slack[4] == float("inf")  # NaN in some runs only: any value


def test_never_written_elements_add_no_noise():
    runs = [torch.tensor([1.0, 5.0]), torch.tensor([1.0, -5.0])]  # element 1 held two poisons
    assert _noise(runs, torch.tensor([False, True])).tolist() == [0.0, 0.0]


def test_slack_widens_the_bound_and_nothing_else():
    expected = torch.tensor([10.0, 20.0, 30.0])
    slack = torch.full((3,), 0.5)
    assert compare(torch.tensor([10.4, 20.0, 29.6]), expected, 0.0, 0.0, slack=slack) is None
    mismatch = compare(torch.tensor([10.4, 21.0, 30.0]), expected, 0.0, 0.0, slack=slack)
    assert mismatch is not None and mismatch.count == 1 and mismatch.first_index == (1,)
    assert compare(torch.tensor([10.4, 20.0, 30.0]), expected, 0.0, 0.0) is not None  # no slack: exact


def test_a_kernel_whose_plain_runs_agree_gets_no_slack():
    run = torch.tensor([3, 1, 2], dtype=torch.int32)
    assert _noise([run, run.clone(), run.clone()], None).tolist() == [0.0, 0.0, 0.0]
