"""The symbolic layer (src/kernel_check/clang/symbolic.py) over real parses, the solver behind
it (src/kernel_check/solver.py) with real z3, and KC401 through the command line."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from conftest import FIXTURES, run_one
from kernel_check.clang.symbolic import render, symbolic_accesses
from kernel_check.cli import main
from kernel_check.model import Symbol, SymbolKind, Term
from kernel_check.solver import Budget, Outcome, check, launch_constraints, within

FIXTURE = FIXTURES / "cpp" / "kc401_unbounded_loaded_index.cuh"

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


def _sym(name: str) -> Term:
    return Term("sym", name=name)


def _const(value: int) -> Term:
    return Term("const", value=value)


def test_an_access_through_a_row_pointer_under_its_guards(functions_of) -> None:
    found = functions_of(ACCESSES)
    accesses = symbolic_accesses(found["k"])
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


def test_unknown_is_never_a_finding() -> None:
    """With no time for the solver, the fixture's firing lines give nothing."""
    result = run_one(FIXTURE, solver_budget=1e-9)
    assert not [f for f in result.findings if f.code == "KC401"]


def test_select_kc4_runs_the_family_alone(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(FIXTURE), "--select", "KC4", "--no-cache", "--mode", "hermetic", "--exit-zero"]) == 0
    codes = [m.group(1) for m in re.finditer(r"^\S+:\d+:\d+: (KC\d+) ", capsys.readouterr().out, re.MULTILINE)]
    assert codes == ["KC401"] * 3, codes


def test_a_solver_budget_that_is_not_positive_is_a_config_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.kernel-check]\nsolver-budget = 0\n")
    source = tmp_path / "k.cuh"
    source.write_text("__global__ void k() {}\n")
    assert main([str(source), "--no-cache"]) == 2
    assert "solver-budget" in capsys.readouterr().err
