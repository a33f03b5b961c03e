"""KC403 (uninitialised shared reads): the shared accesses the symbolic layer records for it
(src/kernel_check/clang/symbolic.py) over real parses, and the rule's witness through the
command line (real libclang, real z3)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import FIXTURES
from kernel_check.clang.symbolic import render, symbolic_accesses
from kernel_check.clang.thread_dependence import ThreadDependence
from kernel_check.cli import main
from kernel_check.model import SymbolKind

FIXTURE = FIXTURES / "cpp" / "kc403_uninitialised_shared_read.cuh"

ESCAPES = """\
#include <cstdint>

struct Pair { float a, b; };
__device__ void fill(float* p);

template <typename T, uint32_t kN>
__global__ void k(float* out, uint32_t n) {
  __shared__ float direct[kN];
  __shared__ float called[64];
  __shared__ float in_asm[64];
  __shared__ float captured[64];
  __shared__ float moved[64];
  __shared__ float cast[64];
  __shared__ float grid[8][8];
  __shared__ Pair pairs[64];
  __shared__ T summed[64];
  __shared__ uint32_t s_count;
  __shared__ float s_inv;
  if (threadIdx.x < n) direct[threadIdx.x] = 1.0f;
  fill(called + threadIdx.x);
  asm volatile("st.shared.f32 [%0], %1;" :: "l"(in_asm), "f"(1.0f));
  auto set = [&] { captured[0] = 1.0f; };
  set();
  float* p = moved;
  p = moved + 1;
  uint32_t later;  // declared bare, assigned after
  later = n;
  reinterpret_cast<unsigned char*>(cast)[1] = 0;
  grid[1][2] = 1.0f;
  pairs[threadIdx.x].a = 1.0f;
  summed[threadIdx.x] += T(1);
  atomicAdd(&s_count, 1u);
  if (threadIdx.x == 0) s_inv = 1.0f;
  __syncthreads();
  out[threadIdx.x] = direct[threadIdx.x] + *p + s_inv + later;
}
"""


def test_shared_arrays_handed_away_are_writes_the_walk_does_not_follow(functions_of) -> None:
    found = functions_of(ESCAPES)
    accesses = [a for a in symbolic_accesses(found["k"], ThreadDependence(found["program"])) if a.shared]
    followed = [(a.pointer, a.is_write, a.phase) for a in accesses if a.followed]
    # the array and the scalar accessed by their own elements alone: a write, then a read
    # behind the asm (it may be a barrier) and the barrier; the array of arrays by its flat
    # offset (KC402 compares its writes)
    assert followed == [
        ("direct", True, 0),
        ("grid", True, 1),
        ("s_inv", True, 1),
        ("direct", False, 2),
        ("s_inv", False, 2),
    ]
    unfollowed = {a.pointer for a in accesses if a.is_write and not a.followed}
    # a call's argument, an asm operand, a lambda's capture, a pointer moved after its
    # declaration, a cast to a type narrower than the element, an array of structs, an
    # element an overloaded assignment takes, a scalar whose address is taken
    assert unfollowed == {"called", "in_asm", "captured", "moved", "cast", "pairs", "summed", "s_count"}
    # two dimensions: followed for KC402, but not read-checked (KC403 and KC404 keep to arrays of one)
    assert [a.read_checked for a in accesses if a.pointer == "grid"] == [False]


def test_a_template_argument_is_one_symbol_across_the_kernel(functions_of) -> None:
    found = functions_of(ESCAPES)
    direct = [a for a in symbolic_accesses(found["k"], ThreadDependence(found["program"])) if a.pointer == "direct"]
    # the array's length and every use name the same compile-time argument
    assert {render(a.extent) for a in direct if a.extent is not None} == {"kN"}
    kinds = {s.name: s.kind for a in direct for s in a.symbols}
    assert kinds["kN"] is SymbolKind.SCALAR and kinds["n"] is SymbolKind.SCALAR


def _findings(path: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    main([str(path), "--select", "KC403", "--no-cache", "--mode", "hermetic", "--exit-zero"])
    return re.findall(r"^\S+:\d+:\d+: KC403 .*$", capsys.readouterr().out, re.MULTILINE)


def test_the_witness_reproduces_the_padded_read(capsys: pytest.CaptureFixture[str]) -> None:
    """The witness of the padded loop: a block, a real count and a padded count under which
    the thread's element lies at or past the count (never written) and inside the array."""
    message = next(m for m in _findings(FIXTURE, capsys) if "`scores`" in m)
    found = re.search(
        r"thread \((\d+), 0, 0\) of a block of \((\d+), 1, 1\), kPadded = (\d+), n = (\d+) reads `scores\[(\d+)\]`",
        message,
    )
    assert found, message
    thread, block, padded, count, element = map(int, found.groups())
    assert thread < block and element % block == thread  # the thread's own loop reaches it
    assert count <= element < padded


def test_the_fill_that_covers_the_padding_silences_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The fixture's kernel with its padding filled: the same reads, no finding."""
    source = FIXTURE.read_text()
    fixed = source.replace("if (i < n) scores[i] = in[i];", "scores[i] = i < n ? in[i] : -1e30f;")
    assert fixed != source
    path = tmp_path / "filled.cuh"
    path.write_text(fixed)
    assert not [m for m in _findings(path, capsys) if "`scores`" in m]
