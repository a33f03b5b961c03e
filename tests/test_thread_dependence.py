"""Tier 2 thread-dependence (src/kernel_check/clang/thread_dependence.py) over real parses."""

from __future__ import annotations

from kernel_check.clang.program import StmtKind
from kernel_check.clang.thread_dependence import MAX_CALL_DEPTH, ThreadDependence

VALUES = """\
#include <cstdint>

__device__ uint32_t my_lane() { return threadIdx.x & 31u; }
__device__ uint32_t through(uint32_t x) { return x; }
__device__ uint32_t lane_twice() { const uint32_t lane = my_lane(); return lane * 2; }

__global__ void k(float* dst, uint32_t n) {
  const uint32_t tid = threadIdx.x + 1;
  const uint32_t derived = tid * 2;
  const uint32_t row = blockIdx.x * n;
  const uint32_t copied = through(row);
  const uint32_t passed = through(derived);
  const uint32_t helper = my_lane();
  const uint32_t nested = lane_twice();
  uint32_t assigned = 0;
  assigned = threadIdx.x;
  auto later = [&]() { return threadIdx.x; };
  dst[0] = row + copied + passed + helper + nested + assigned + later();
}
"""


def test_values_derived_from_the_thread_index(functions_of) -> None:
    found = functions_of(VALUES)
    analysis = ThreadDependence(found["program"])
    body = found["k"].body
    assert body is not None
    names = set(analysis.locals(body).values())
    # a uniform argument makes `through` uniform; a helper that returns the lane does not;
    # assignments and lambdas are not followed
    assert names == {"tid", "derived", "passed", "helper", "nested"}
    assert analysis.returns(found["my_lane"], 0) == "threadIdx"
    assert analysis.returns(found["through"], 0) == ""
    assert analysis.returns(found["lane_twice"], 0) == "lane"


BRANCHES = """\
#include <cstdint>

__device__ uint32_t lane_of() { return threadIdx.x % 32; }

__global__ void k(float* dst, uint32_t n) {
  const uint32_t warp = threadIdx.x / 32;
  if (warp == 0) dst[0] = 1.0f;
  if (blockIdx.x < n) dst[1] = 1.0f;
  while (lane_of() < n) { n -= 1; }
  switch (n) { default: break; }
  if (n > 1) { if (threadIdx.y == 0) dst[2] = 1.0f; }
}
"""


def test_thread_dependent_branches(functions_of) -> None:
    found = functions_of(BRANCHES)
    body = found["k"].body
    assert body is not None
    branches = [
        (b.statement.kind, b.statement.span.line, b.source) for b in ThreadDependence(found["program"]).branches(body)
    ]
    assert branches == [(StmtKind.IF, 7, "warp"), (StmtKind.WHILE, 9, "lane_of()"), (StmtKind.IF, 11, "threadIdx")]


def _chain(length: int) -> str:
    """`level_0` synchronizes; `level_i` calls `level_{i-1}`."""
    lines = ["__device__ void level_0() { __syncthreads(); }"]
    lines += [f"__device__ void level_{i}() {{ level_{i - 1}(); }}" for i in range(1, length)]
    return "\n".join(lines) + "\n"


def test_barriers_reached_through_callees(functions_of) -> None:
    found = functions_of(
        _chain(MAX_CALL_DEPTH + 2)
        + """\
__device__ void recursive(int n) { if (n > 0) recursive(n - 1); }
__device__ void sync_or_not(float) { __syncthreads(); }
__device__ void sync_or_not(int) {}
template <typename T>
__device__ void dependent(T x) { sync_or_not(x); }
"""
    )
    deepest, too_deep = f"level_{MAX_CALL_DEPTH}", f"level_{MAX_CALL_DEPTH + 1}"
    # a fresh analysis per question: a kept summary answers at any depth
    reached = {
        name: ThreadDependence(found["program"]).reaches(found[name], 0)
        for name in ("level_0", "level_1", deepest, too_deep, "recursive", "dependent")
    }
    assert reached == {
        "level_0": "__syncthreads",
        "level_1": "level_0",  # the call in its body that reaches one
        deepest: f"level_{MAX_CALL_DEPTH - 1}",  # MAX_CALL_DEPTH calls down to the barrier
        too_deep: "",
        "recursive": "",
        "dependent": "",  # only one overload of the set synchronizes
    }


DIVERGENT = """\
constexpr bool kSync = false;
__device__ uint32_t my_lane() { return threadIdx.x & 31u; }
__device__ void sync_helper() { __syncthreads(); }

__global__ void k(float* dst, unsigned n) {
  if (threadIdx.x == 0) {
    if constexpr (kSync) { __syncthreads(); }
  }
  if (my_lane() < 16) {
    if (n > 2) sync_helper();
  } else {
    __syncthreads();
  }
  if (n > 3) __syncthreads();
}
"""


def test_divergent_barriers(functions_of) -> None:
    found = functions_of(DIVERGENT)
    body = found["k"].body
    assert body is not None
    facts = [
        (b.span.line, b.barrier, b.condition.line, b.source)
        for b in ThreadDependence(found["program"]).divergent_barriers(body)
    ]
    # the discarded `if constexpr` branch is not code; both branches of line 9's `if` diverge
    assert facts == [(10, "sync_helper", 9, "my_lane()"), (12, "__syncthreads", 9, "my_lane()")]
