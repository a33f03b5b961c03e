"""The benchmarks' in-process loops on a small tree: bench/profile_static.py's stages and
solver share, bench/bench_static.py's bare libclang loop. They call the pipeline's own
functions, so a renamed one breaks this test, not the next measurement."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import bench_static

REPO = Path(__file__).resolve().parents[1]

# KC402's proof asks the solver about the write; the second file has no kernel to ask about
RACY = """\
#include <cstdint>
__global__ void pair_sum(float* out, const float* in) {
  __shared__ float partial[128];
  partial[threadIdx.x / 2] = in[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = partial[threadIdx.x];
}
"""
NO_KERNEL = "#include <cstdint>\ninline int32_t twice(int32_t x) { return 2 * x; }\n"


@pytest.mark.slow
def test_profile_reports_solver_time_of_the_files_that_ask(tmp_path: Path) -> None:
    (tmp_path / "racy.cuh").write_text(RACY)
    (tmp_path / "plain.cuh").write_text(NO_KERNEL)
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "profile_static.py"), str(tmp_path), "--cache-dir", str(tmp_path / "c")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    solver = re.search(r"solver CPU s per file, all (\d+):.*the (\d+) that asked \((\d+) queries\)", done.stdout)
    assert solver is not None, done.stdout
    assert (int(solver[1]), int(solver[2])) == (2, 1)
    assert int(solver[3]) > 0
    assert "racy.cuh" in done.stdout.split("most solver time:")[1]


@pytest.mark.slow
def test_bare_loop_parses_each_file_it_is_given(tmp_path: Path) -> None:
    (tmp_path / "racy.cuh").write_text(RACY)
    (tmp_path / "plain.cuh").write_text(NO_KERNEL)
    files = sorted(tmp_path.glob("*.cuh"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    figures = bench_static.bare_loop(files, tmp_path, tmp_path / "c", pch=False, jobs=2, env=env, mode="hermetic")
    assert figures["cpu"] > 0 and figures["seconds"] > 0
