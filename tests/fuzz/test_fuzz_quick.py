"""The quick fuzz profile, part of every test run: a couple of hundred deterministic cases.

* `test_quick_profile`: `QUICK_CASES` cases of the `quick` profile (fixed seed) in two
  worker processes -- mutated kernels (mostly small header-free ones, a few header-heavy
  ones on the precompiled preamble), mutated wrappers, and a few CLI batches in a
  subprocess. Any failure lists the case, its mutations and the broken invariant; the
  case's files are kept under the pytest temporary directory for replay.
* two hypothesis tests drive the same operators in this process (derandomized), so a
  failure shrinks to the fewest mutations that still break the pipeline.

A failure that `known.py` explains (an open bug with a strict-xfail reproducer in
`test_regressions.py`) is reported, not failed on; everything else fails the test.

The long profile (>= 10,000 cases) is `python3 scripts/fuzz_long.py` (see its --help).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from . import corpus
from .cases import CPP_OPERATORS, PY_OPERATORS, QUICK, Case, Environment, run_case
from .mutate import Context, mutate
from .runner import run

pytestmark = pytest.mark.slow  # the quick fuzz profile mutates and checks hundreds of kernels

# 150 cases (about a minute on 2 cores): the default run stays well under 15 minutes;
# the long profile is where volume goes
QUICK_CASES = 150


def test_quick_profile(tmp_path: Path) -> None:
    report = run(QUICK, range(QUICK_CASES), jobs=2, workdir=tmp_path / "work", crash_dir=tmp_path / "crashes")
    print(report.summary())
    assert report.cases == QUICK_CASES
    assert not report.new_failures, report.summary()  # known open bugs: known.py, test_regressions.py
    assert not report.timeouts, report.summary()


@pytest.fixture(scope="module")
def environment(tmp_path_factory: pytest.TempPathFactory) -> Environment:
    root = tmp_path_factory.mktemp("fuzz-hypothesis")
    return Environment(root / "work", root / "cache")


_HYPOTHESIS = settings(
    max_examples=20,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def _case(seed: corpus.Seed, operators: list[str], rng_seed: int, kind: str) -> Case:
    rng = random.Random(rng_seed)
    ctx = Context(name=seed.relpath.rsplit("/", 1)[-1], relpath=seed.relpath, language=seed.language, size=QUICK.size)
    data = mutate(seed.data, operators, rng, ctx)
    return Case(-1, kind, seed.name, seed.relpath, data, operators, ctx.extra_files, use_preamble=False)


@_HYPOTHESIS
@given(
    seed=st.sampled_from(corpus.by_kind("python")),
    operators=st.lists(st.sampled_from(PY_OPERATORS), min_size=1, max_size=4),
    rng_seed=st.integers(0, 2**32 - 1),
)
def test_mutated_python_wrappers(environment: Environment, seed, operators, rng_seed) -> None:
    outcome = run_case(_case(seed, operators, rng_seed, "python"), environment)
    assert not outcome.new_problems, "\n".join(outcome.new_problems)


@_HYPOTHESIS
@given(
    seed=st.sampled_from(corpus.by_kind("cpp", heavy=False)),
    operators=st.lists(st.sampled_from(CPP_OPERATORS), min_size=1, max_size=3),
    rng_seed=st.integers(0, 2**32 - 1),
)
def test_mutated_small_kernels(environment: Environment, seed, operators, rng_seed) -> None:
    outcome = run_case(_case(seed, operators, rng_seed, "cpp"), environment)
    assert not outcome.new_problems, "\n".join(outcome.new_problems)
