"""DivergentBarrier facts (checker/clang/divergence_facts.py), pinned on a small real source."""

from __future__ import annotations

import pytest

from kernel_check.clang.extract import extract
from kernel_check.clang.parse import parse_file, resolve_settings
from kernel_check.model import SourceModel

SOURCE = """\
#include <cstdint>

__device__ void sync_helper() { __syncthreads(); }
__device__ void quiet_helper() {}

__global__ void k(float* dst, uint32_t n) {
  const uint32_t tid = threadIdx.x + 1;
  const uint32_t row = blockIdx.x * n;
  if (tid < n) sync_helper();
  if (row < n) __syncthreads();
  if (threadIdx.x == 0) quiet_helper();
  if (threadIdx.x < 32) {
    __syncthreads();
    return;
  }
  __syncthreads();
}
"""


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> SourceModel:
    path = tmp_path_factory.mktemp("divergence") / "sample.cu"
    path.write_text(SOURCE)
    unit = parse_file(path, SOURCE, resolve_settings("hermetic"))
    assert unit.errors == []
    return extract(unit, SOURCE, SOURCE.encode())


def test_barriers_under_thread_dependent_conditions(model: SourceModel) -> None:
    facts = [(b.span.line, b.barrier, b.condition.line, b.source, b.matched_by_rest) for b in model.divergent_barriers]
    assert facts == [
        (9, "sync_helper", 9, "tid", False),  # through a local and a helper that synchronizes
        (13, "__syncthreads", 12, "threadIdx", True),  # a split whose barriers pair up with line 16
    ]
