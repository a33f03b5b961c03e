"""The symbolic layer (src/kernel_check/clang/symbolic.py) over real parses, the solver behind
it (src/kernel_check/solver.py) with real z3, and KC401 through the command line."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from conftest import FIXTURES, run_one
from kernel_check.clang.symbolic import render, symbolic_accesses
from kernel_check.clang.thread_dependence import ThreadDependence
from kernel_check.cli import main
from kernel_check.model import Symbol, SymbolKind, Term
from kernel_check.solver import Budget, Outcome, check, launch_constraints, renamed, within

FIXTURE = FIXTURES / "cpp" / "kc401_unbounded_loaded_index.cuh"
RACES = FIXTURES / "cpp" / "kc402_shared_write_race.cuh"
UNWRITTEN = FIXTURES / "cpp" / "kc403_uninitialised_shared_read.cuh"

ACCESSES = """\
#include <cstdint>

struct Params {
  float* out;
  const int64_t* loc;
  int64_t d;
};

__global__ void k(Params params, const int32_t* ids, float* table, int n) {
  if (blockIdx.x >= n) return;
  const int64_t l = params.loc[blockIdx.x];
  float* row = params.out + l * params.d;
  for (int j = threadIdx.x; j < params.d; j += blockDim.x) row[j] = 1.0f;
  int moved = ids[0];
  moved += 1;
  table[moved] = 0.0f;
  table[threadIdx.x] = 0.0f;
}
"""


SHARED = """\
#include <cstdint>

__device__ void helper_sync() { __syncthreads(); }

__global__ void k(float* out, uint32_t n) {
  __shared__ float smem[256];
  float local[4];
  smem[threadIdx.x] = 0.0f;
  local[threadIdx.x % 4] = smem[threadIdx.x];
  __syncthreads();
  smem[threadIdx.x / 2] = 1.0f;
  helper_sync();
  for (uint32_t i = 0; i < n; ++i) {
    smem[i] = 2.0f;
    __syncthreads();
  }
  smem[get_lane()] = 3.0f;
  out[threadIdx.x] = smem[threadIdx.x] + local[0];
}
"""


def test_shared_writes_and_their_barrier_intervals(functions_of) -> None:
    found = functions_of(SHARED.replace("get_lane()", "threadIdx.x % 32"))
    writes = [a for a in symbolic_accesses(found["k"], ThreadDependence(found["program"])) if a.shared and a.is_write]
    # the per-thread array is not recorded; a call that reaches a barrier ends an interval
    # as `__syncthreads()` does; a loop with a barrier is marked (its interval is not one)
    assert [(re.sub(r"#\d+", "", render(w.offset)), w.phase, w.in_barrier_loop) for w in writes] == [
        ("threadIdx.x", 0, False),
        ("(threadIdx.x / 2)", 1, False),
        ("(i * 1)", 2, True),  # the counter: start 0, iteration `i`, step 1
        ("(threadIdx.x % 32)", 3, False),
    ]
    assert all(w.followed and w.extent == Term("const", value=256) for w in writes)


def test_a_shared_write_through_an_unknown_call_is_not_followed(functions_of) -> None:
    source = SHARED.replace("get_lane()", "lane_of(threadIdx.x)")
    found = functions_of("__device__ unsigned lane_of(unsigned t);\n" + source)
    writes = [a for a in symbolic_accesses(found["k"], ThreadDependence(found["program"])) if a.shared and a.is_write]
    assert [w.followed for w in writes] == [True, True, True, False]


def test_renamed_gives_a_second_threads_copy() -> None:
    term = Term("+", (_sym("threadIdx.x"), _sym("n")))
    assert renamed(term, {"threadIdx.x": "t2:threadIdx.x"}) == Term("+", (_sym("t2:threadIdx.x"), _sym("n")))


def _sym(name: str) -> Term:
    return Term("sym", name=name)


def _const(value: int) -> Term:
    return Term("const", value=value)


def test_an_access_through_a_row_pointer_under_its_guards(functions_of) -> None:
    found = functions_of(ACCESSES)
    accesses = symbolic_accesses(found["k"], ThreadDependence(found["program"]))
    # the row store depends on the id read from `params.loc`; `moved` is assigned after its
    # declaration (not followed) and `table[threadIdx.x]` reads no id: neither is recorded
    assert [a.pointer for a in accesses] == ["params.out"]
    access = accesses[0]
    assert access.is_write
    kinds = {s.text: s.kind for s in access.symbols}
    assert kinds["params.loc[blockIdx.x]"] is SymbolKind.LOAD
    assert kinds["params.d"] is SymbolKind.SCALAR
    assert kinds["j"] is SymbolKind.LOOP
    guards = [render(g) for g in access.guards]
    assert guards[0] == "not((n <= blockIdx.x))"  # the early return
    assert any("params.d" in g for g in guards)  # the loop's bound


def test_a_satisfiable_query_gives_its_witness() -> None:
    tid = Symbol("threadIdx.x", SymbolKind.THREAD, "threadIdx.x", 0, 2**31 - 1)
    constraints = [*launch_constraints([tid]), Term("<=", (_const(1000), _sym("threadIdx.x")))]
    answer = check(constraints, Budget(2.0))
    assert answer.outcome is Outcome.SAT
    assert 1000 <= answer.model["threadIdx.x"] < answer.model["blockDim.x"] <= 1024


def test_the_launch_bounds_make_a_query_unsatisfiable() -> None:
    tid = Symbol("threadIdx.x", SymbolKind.THREAD, "threadIdx.x", 0, 2**31 - 1)
    constraints = [*launch_constraints([tid]), *within(_sym("threadIdx.x"), 1024, 2**20)]
    assert check(constraints, Budget(2.0)).outcome is Outcome.UNSAT


def test_a_spent_budget_answers_unknown() -> None:
    budget = Budget(0.01)
    time.sleep(0.02)
    assert check([Term("<", (_sym("a"), _sym("b")))], budget).outcome is Outcome.UNKNOWN


@pytest.mark.parametrize("fixture", [FIXTURE, RACES, UNWRITTEN], ids=["KC401", "KC402", "KC403"])
def test_unknown_is_never_a_finding(fixture: Path) -> None:
    """With no time for the solver, the fixtures' firing lines give nothing."""
    result = run_one(fixture, solver_budget=1e-9)
    assert not [f for f in result.findings if f.code.startswith("KC4")]


def test_select_kc4_runs_the_family_alone(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(FIXTURE), str(RACES), "--select", "KC4", "--no-cache", "--mode", "hermetic", "--exit-zero"]) == 0
    codes = [m.group(1) for m in re.finditer(r"^\S+:\d+:\d+: (KC\d+) ", capsys.readouterr().out, re.MULTILINE)]
    assert codes == ["KC401"] * 3 + ["KC402"] * 5, codes


def test_a_solver_budget_that_is_not_positive_is_a_config_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.kernel-check]\nsolver-budget = 0\n")
    source = tmp_path / "k.cuh"
    source.write_text("__global__ void k() {}\n")
    assert main([str(source), "--no-cache"]) == 2
    assert "solver-budget" in capsys.readouterr().err


def test_the_symbolic_layer_is_built_only_for_the_rules_that_read_it() -> None:
    from kernel_check.clang.extract import extract
    from kernel_check.clang.parse import parse_file, resolve_settings
    from kernel_check.registry import Need, all_rules, needs_of

    data = FIXTURE.read_bytes()
    unit = parse_file(FIXTURE, data, resolve_settings("hermetic"))
    declarations = extract(unit, data.decode(), data, frozenset({Need.DECLARATIONS}))
    symbolic = extract(unit, data.decode(), data, frozenset({Need.DECLARATIONS, Need.SYMBOLIC}))
    assert declarations.symbolic_accesses == [] and len(symbolic.symbolic_accesses) >= 3
    family = [r for r in all_rules() if r.meta.code.startswith("KC4")]
    assert [r.meta.code for r in family] == ["KC401", "KC402", "KC403", "KC405"]
    # KC401's witness reads the launches' contracts, built over the launcher facts
    assert needs_of(family) == {
        Need.SYMBOLIC,
        Need.CONTRACTS,
        Need.DECLARATIONS,
        Need.LAUNCHES,
        Need.INTERFACE,
        Need.NUMERICS,
    }
