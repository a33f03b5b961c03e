"""The symbolic layer (src/kernel_check/clang/symbolic.py) over real parses, the solver behind
it (src/kernel_check/solver.py) with real z3, and KC401 through the command line."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from conftest import FIXTURES, expectations, run_one
from kernel_check.clang.symbolic import kernel_terms, render, symbolic_accesses
from kernel_check.clang.thread_dependence import ThreadDependence
from kernel_check.cli import main
from kernel_check.model import Symbol, SymbolKind, Term
from kernel_check.solver import RLIMIT_PER_SECOND, Budget, Outcome, check, launch_constraints, renamed, within

FIXTURE = FIXTURES / "cpp" / "kc401_unbounded_loaded_index.cuh"
RACES = FIXTURES / "cpp" / "kc402_shared_write_race.cuh"
UNWRITTEN = FIXTURES / "cpp" / "kc403_uninitialised_shared_read.cuh"
READ_RACES = FIXTURES / "cpp" / "kc404_shared_read_write_race.cuh"

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


def test_an_access_in_a_barrier_loop_knows_the_loop_and_its_counter(functions_of) -> None:
    """The loop that reaches a barrier and its counter (KC404 holds both threads at one value of
    it between two of its barriers); an access outside that loop has neither."""
    found = functions_of(SHARED.replace("get_lane()", "threadIdx.x % 32"))
    writes = [a for a in symbolic_accesses(found["k"], ThreadDependence(found["program"])) if a.shared and a.is_write]
    in_loop = writes[2]
    assert len(in_loop.barrier_loops) == 1 and [re.sub(r"#\d+", "", c) for c in in_loop.lockstep] == ["i"]
    assert in_loop.lockstep[0] in {s.name for s in in_loop.symbols}
    assert all(w.barrier_loops == () and w.lockstep == () for w in (*writes[:2], writes[3]))


BARRIERS = """\
#include <cstdint>

__device__ void helper_sync() { __syncthreads(); }

__global__ void k(float* out, uint32_t n) {
  if (threadIdx.x >= n) return;
  if (threadIdx.x == 0) {
    __syncthreads();
    return;
  }
  for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) {
    if (blockIdx.x < i) helper_sync();
  }
  assert(threadIdx.x < 512);
  __syncthreads();
}
"""


def test_barriers_under_their_branches_and_early_exits(functions_of) -> None:
    """KC170's facts: a loop's condition and an assert are not counted, and neither is the
    exit of a branch that synchronizes itself; the first early exit is."""
    found = functions_of(BARRIERS)
    barriers = kernel_terms(found["k"], ThreadDependence(found["program"]))[2]
    rendered = [
        (b.barrier, [re.sub(r"#\d+", "", render(g)) for g in b.branches], [render(g) for g in b.exits])
        for b in barriers
    ]
    exit_guard = "not((n <= threadIdx.x))"
    assert rendered == [
        ("__syncthreads", ["(threadIdx.x == 0)"], [exit_guard]),
        ("helper_sync", ["(blockIdx.x < (threadIdx.x + (i * blockDim.x)))"], [exit_guard]),
        ("__syncthreads", [], [exit_guard]),
    ]


def test_a_shared_write_through_an_unknown_call_is_not_followed(functions_of) -> None:
    source = SHARED.replace("get_lane()", "lane_of(threadIdx.x)")
    found = functions_of("__device__ unsigned lane_of(unsigned t);\n" + source)
    writes = [a for a in symbolic_accesses(found["k"], ThreadDependence(found["program"])) if a.shared and a.is_write]
    assert [w.followed for w in writes] == [True, True, True, False]


VECTORS = """\
#include <cstdint>

__global__ void k(float* out, const float* in) {
  __shared__ float quads[1024];
  __shared__ __nv_bfloat16 halves[2048];
  reinterpret_cast<float4*>(quads)[threadIdx.x] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  *reinterpret_cast<float4*>(halves + 8 * threadIdx.x) = reinterpret_cast<const float4*>(in)[threadIdx.x];
  const float4 next = *reinterpret_cast<const float4*>(halves + 8 * (threadIdx.x + 1));
  reinterpret_cast<unsigned char*>(quads)[1] = 0;
  out[threadIdx.x] = quads[threadIdx.x] + next.x;
}
"""


def _shared_accesses(found: dict) -> list:
    """The shared-memory accesses the rules' walk records for kernel `k` of a parsed source."""
    return [a for a in symbolic_accesses(found["k"], ThreadDependence(found["program"])) if a.shared]


def test_a_cast_to_a_wider_type_covers_the_elements_it_spans(functions_of) -> None:
    """An access through a cast to a wider type (`float4` over floats or bf16s) covers the
    elements it spans from its index times their count: followed, a write where a copy
    assigns it whole; through a narrower type, part of one element: not followed."""
    accesses = _shared_accesses(functions_of(VECTORS))
    assert [(a.pointer, a.is_write, render(a.offset), a.width, a.followed) for a in accesses] == [
        ("quads", True, "(threadIdx.x * 4)", 4, True),
        ("halves", True, "(8 * threadIdx.x)", 8, True),
        ("halves", False, "(8 * (threadIdx.x + 1))", 8, True),
        ("quads", True, "1", 1, False),
        ("quads", False, "threadIdx.x", 1, True),
    ]


LAYOUTS = """\
#include <cstdint>

__device__ float own_slots(float v) {
  __shared__ float slots[16];
  slots[threadIdx.x % 16] = v;
  return v;
}

template <int kRows>
__global__ void k(float* out) {
  extern __shared__ __align__(16) uint8_t smem[];
  __shared__ float tile[kRows][33];
  float* values = reinterpret_cast<float*>(smem);
  float* carved = values + 8;
  carved[threadIdx.x] = 1.0f;
  tile[threadIdx.y][threadIdx.x / 2] = 1.0f;
  float* row = tile[threadIdx.y];
  row[1] = 2.0f;
  out[threadIdx.x] = own_slots(out[0]);
}
"""


def test_dynamic_memory_arrays_of_arrays_and_a_helpers_own_array(functions_of) -> None:
    """A float view of `extern __shared__` bytes (and a region carved from it) spans four
    bytes an element; an array of arrays is followed by its flat offset, each index within
    its row's length; a helper that declares a shared array of its own is walked where the
    kernel calls it."""
    accesses = _shared_accesses(functions_of(LAYOUTS))
    assert [(a.pointer, render(a.offset), a.width, a.extent is None, a.followed) for a in accesses] == [
        ("smem", "((8 * 4) + (threadIdx.x * 4))", 4, True, True),
        ("tile", "((threadIdx.y * 33) + (threadIdx.x / 2))", 1, False, True),
        ("tile", "((threadIdx.y * 33) + 1)", 1, False, True),
        ("slots", "(threadIdx.x % 16)", 1, False, True),
    ]
    assert [[render(c) for c in a.in_rows] for a in accesses] == [
        [],
        ["(0 <= (threadIdx.x / 2))", "((threadIdx.x / 2) < 33)"],
        ["(0 <= 1)", "(1 < 33)"],
        [],
    ]


HELPER_HEADER = """\
#pragma once
__device__ inline float block_max(float v, float* slots) {
  slots[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) v = slots[threadIdx.x];
  return v;
}
"""
HELPERS = """\
#include "helpers.cuh"

__device__ float set_total(float v, float& total, float* moved) {
  moved += 1;
  if (threadIdx.x == 0) total = v;
  return v;
}

__global__ void k(float* out, const float* in) {
  __shared__ float slots[32];
  __shared__ float s_total;
  __shared__ float elsewhere[32];
  const float m = block_max(in[threadIdx.x], slots);
  set_total(m, s_total, elsewhere);
  __syncthreads();
  out[threadIdx.x] = s_total;
}
"""


def test_a_helper_handed_a_shared_array_is_walked_where_it_is_called(functions_of, tmp_path: Path) -> None:
    """A device helper given a shared array or scalar: its accesses are the kernel's, under
    its own barriers (the call adds none), at the call when the helper is in another file; a
    reference parameter writes the scalar it is bound to; a pointer parameter the helper moves
    is a write the walk does not follow."""
    (tmp_path / "helpers.cuh").write_text(HELPER_HEADER)
    accesses = _shared_accesses(functions_of(HELPERS))
    call_line = HELPERS.splitlines().index("  const float m = block_max(in[threadIdx.x], slots);") + 1
    assert [(a.pointer, a.is_write, render(a.offset), a.phase, a.followed) for a in accesses] == [
        ("slots", True, "(threadIdx.x / 32)", 0, True),
        ("slots", False, "threadIdx.x", 1, True),
        ("elsewhere", True, "0", 1, False),
        ("s_total", True, "0", 1, True),
        ("s_total", False, "0", 2, True),
    ]
    assert [a.span.line for a in accesses[:2]] == [call_line, call_line]
    assert [render(g) for g in accesses[1].guards] == ["(threadIdx.x < 32)"]


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
    # every global access, in the body's order; `moved` is assigned after its declaration
    assert [a.pointer for a in accesses] == ["params.loc", "params.out", "ids", "table", "table"]
    moved = accesses[3]
    assert moved.offset.op == "sym" and SymbolKind.OPAQUE in {s.kind for s in moved.symbols}  # not followed
    access = accesses[1]  # the row store, at the id read from `params.loc`
    assert access.is_write
    kinds = {s.text: s.kind for s in access.symbols}
    assert kinds["params.loc[blockIdx.x]"] is SymbolKind.LOAD
    assert kinds["params.d"] is SymbolKind.SCALAR
    assert kinds["j"] is SymbolKind.LOOP
    guards = [render(g) for g in access.guards]
    # the early return; `blockIdx.x >= n` converts the int `n` to unsigned (-1 is 2^32 - 1)
    assert guards[0] == "not((ite((n < 0), (n + 4294967296), n) <= blockIdx.x))"
    assert any("params.d" in g for g in guards)  # the loop's bound


BYTES = """\
#include <cstdint>

struct alignas(16) Vec8 {
  uint16_t lanes[8];
  __device__ void load(const void* ptr, int64_t offset) { *this = reinterpret_cast<const Vec8*>(ptr)[offset]; }
};

__device__ const void* offset(const void* ptr, int64_t bytes) { return static_cast<const char*>(ptr) + bytes; }

struct Params {
  const void* rows;
  int64_t stride_bytes;
};

template <typename T>
__global__ void k(Params params, const uint16_t* x, const T* t, int64_t stride) {
  const auto* row = static_cast<const float*>(offset(params.rows, blockIdx.x * params.stride_bytes));
  float a = row[threadIdx.x];
  Vec8 v;
  v.load(x + blockIdx.x * stride, threadIdx.x);
  T b = t[threadIdx.x];
}
"""


def test_a_global_access_in_bytes_through_casts_offsets_and_vectors(functions_of) -> None:
    found = functions_of(BYTES)
    accesses = {a.pointer: a for a in symbolic_accesses(found["k"], ThreadDependence(found["program"]))}
    # `offset` of a `void*` moves in bytes, the cast to `float*` makes the next steps floats
    row = accesses["params.rows"]
    assert render(row.bytes) == "((blockIdx.x * params.stride_bytes) + (threadIdx.x * 4))"
    assert row.byte_width == 4
    # a vector's `load(p, i)` steps whole vectors (16 bytes) past a `uint16_t` pointer's elements
    vector = accesses["x"]
    assert render(vector.bytes) == "(((blockIdx.x * stride) * 2) + (threadIdx.x * 16))"
    assert vector.byte_width == 16
    # a template's `T` has no size clang tells: its steps are `sizeof(T)`, a symbol the launch binds
    template = accesses["t"]
    assert template.bytes is not None and render(template.bytes) == "(threadIdx.x * sizeof(T))"
    assert [s.kind for s in template.symbols if s.name == "sizeof(T)"] == [SymbolKind.ELEMENT_SIZE]


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


def test_a_budget_counts_z3_resource_units_not_time() -> None:
    """A query spends the same units every time (a loaded machine answers as an idle one),
    and one that needs more than the budget has left answers unknown."""
    hard = [Term("==", (Term("*", (_sym("a"), _sym("b"))), _const(17 * 23)))]  # a factoring
    hard += [Term("<", (_const(1), _sym("a"))), Term("<", (_sym("a"), _sym("b")))]
    spent = []
    for _ in range(2):
        budget = Budget(2.0)
        assert check(hard, budget).outcome is not Outcome.UNKNOWN
        spent.append(budget.spent)
    assert spent[0] == spent[1] > 0
    short = Budget((spent[0] // 2) / RLIMIT_PER_SECOND)
    time.sleep(0.01)  # time passing spends nothing
    assert check(hard, short).outcome is Outcome.UNKNOWN
    assert check([Term("<", (_sym("a"), _sym("b")))], short).outcome is Outcome.UNKNOWN  # spent: nothing left


@pytest.mark.parametrize("fixture", [FIXTURE, RACES, UNWRITTEN, READ_RACES], ids=["KC401", "KC402", "KC403", "KC404"])
def test_unknown_is_never_a_finding(fixture: Path) -> None:
    """With no time for the solver, the fixtures' firing lines give nothing."""
    result = run_one(fixture, solver_budget=1e-9)
    assert not [f for f in result.findings if f.code.startswith("KC4")]


def test_kc170_falls_back_to_the_branch_shape_where_the_solver_cannot_tell() -> None:
    """With no budget for the solver, KC170 flags a barrier in a branch over the thread's
    index, as before the solver decided (the near misses it clears now fire), and no early
    exit (the lines it proves divergent under the contract do not)."""
    fixture = FIXTURES / "cpp" / "kc170_divergence_from_contract.cuh"
    lines = fixture.read_text(encoding="utf-8").splitlines()
    in_branch = [n for n, text in enumerate(lines, 1) if text.strip().startswith("__syncthreads();  // every")]
    in_branch += [lines.index("  if (threadIdx.x < blockDim.x) {") + 2]
    decided = {f.line for f in run_one(fixture).findings if f.code == "KC170"}
    unknown = {f.line for f in run_one(fixture, solver_budget=1e-9).findings if f.code == "KC170"}
    assert decided and not decided & unknown
    assert sorted(unknown) == sorted(in_branch)


def test_select_kc4_runs_the_family_alone(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(FIXTURE), str(RACES), "--select", "KC4", "--no-cache", "--mode", "hermetic", "--exit-zero"]) == 0
    codes = [m.group(1) for m in re.finditer(r"^\S+:\d+:\d+: (KC\d+) ", capsys.readouterr().out, re.MULTILINE)]
    # every KC4 finding the two fixtures expect, in file and line order, and nothing else
    expected = [code for path in (FIXTURE, RACES) for _, code in sorted(expectations(path)) if code.startswith("KC4")]
    assert codes == expected, codes
    assert set(codes) == {"KC401", "KC402"}


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
    assert [r.meta.code for r in family] == ["KC401", "KC402", "KC403", "KC404", "KC405", "KC406", "KC407", "KC408"]
    # KC401's witness reads the launches' contracts, built over the launcher facts; KC401-KC404
    # spend the kernels' shared solver budgets
    assert needs_of(family) == {
        Need.SYMBOLIC,
        Need.CONTRACTS,
        Need.DECLARATIONS,
        Need.LAUNCHES,
        Need.INTERFACE,
        Need.NUMERICS,
        Need.SOLVER,
    }


WITNESS_RE = re.compile(
    r"thread \((\d+), (\d+), (\d+)\) reads `tile\[(\d+)\]` while thread \((\d+), (\d+), (\d+)\) writes it, "
    r"with no barrier between, in a block of \((\d+), (\d+), (\d+)\)"
)
NEIGHBOUR_READS = """\
__global__ void rows(float* out, const float* in) {
  __shared__ float tile[1024];
  const unsigned t = threadIdx.y * blockDim.x + threadIdx.x;
  if (t < 1023) tile[t + 1] = in[t];
  out[t] = tile[t];
}
"""


def test_a_read_write_race_witness_reproduces_the_race(tmp_path: Path) -> None:
    """KC404's witness: two threads of one block of at most 1024 threads, of different warps,
    the writer storing at the element the reader reads (`tile[t + 1]` against `tile[t]`)."""
    source = tmp_path / "rows.cuh"
    source.write_text(NEIGHBOUR_READS)
    [finding] = [f for f in run_one(source).findings if f.code == "KC404"]
    match = WITNESS_RE.search(finding.message)
    assert match, finding.message
    rx, ry, rz, element, wx, wy, wz, bx, by, bz = (int(g) for g in match.groups())
    assert bx * by * bz <= 1024
    assert rx < bx and wx < bx and ry < by and wy < by and rz < bz and wz < bz
    assert element == ry * bx + rx == wy * bx + wx + 1
    assert (rx + bx * (ry + by * rz)) // 32 != (wx + bx * (wy + by * wz)) // 32  # linear index, by warp


CALL_RESULTS = """\
#include <cooperative_groups.h>
#include <cstdint>

struct TileCounter {
  __device__ explicit TileCounter(int* state);
  __device__ int tile() const;
};
__device__ int tile_of(int n) { return n / 4; }
__device__ int div_up(int a, int b);
__device__ int lane() {
  int id;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(id));
  return id;
}
__device__ int row_of(int n) { return n + threadIdx.x; }

__global__ void k(int* state, int* counter, int n) {
  __shared__ int smem[16];
  TileCounter tiles(state);
  auto block = cooperative_groups::this_thread_block();
  if (tiles.tile() > 0) smem[0] = 1;
  if (tile_of(n) > 0) smem[1] = 1;
  if (div_up(n, 4) > 0) smem[2] = 1;
  if (lane() > 0) smem[3] = 1;
  if (atomicAdd(counter, 1) > 0) smem[4] = 1;
  if (block.thread_rank() > 0) smem[5] = 1;
  if (__shfl_sync(0xffffffffu, n, 0) > 0) smem[6] = 1;
  if (clock64() > 0) smem[7] = 1;
  if (row_of(n) > 0) smem[8] = 1;
  if (tile_of(threadIdx.x) > 0) smem[9] = 1;
  if (tile_of(counter[threadIdx.x]) > 0) smem[10] = 1;
}
"""


def test_a_call_is_one_value_for_the_block_only_where_nothing_tells_threads_apart(functions_of) -> None:
    """A call's result the walk does not follow is one value the whole block shares
    (`SymbolKind.UNIFORM`, the same for both threads of a query) when its arguments are so, a
    method's object is built from such values and a body in sight reads no thread index:
    `tiles.tile()`, `tile_of(n)`, `div_up(n, 4)`. A lane read by asm, an atomic, a rank, a
    shuffle, a clock, a helper returning a thread-dependent value, or an argument that is one
    keeps a value per thread (`SymbolKind.OPAQUE`)."""
    found = functions_of(CALL_RESULTS)
    kinds = {
        render(a.offset): {s.kind for s in a.symbols if s.kind in (SymbolKind.UNIFORM, SymbolKind.OPAQUE)}
        for a in _shared_accesses(found)
    }
    uniform, opaque = {SymbolKind.UNIFORM}, {SymbolKind.OPAQUE}
    assert kinds == {"0": uniform, "1": uniform, "2": uniform, **{str(e): opaque for e in range(3, 11)}}
