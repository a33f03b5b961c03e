"""CPU tests of the spec API's host buffers (``Tensor(device="cpu", pinned=True)``) and
returned outputs (``KernelSpec(returns=...)``): validation at load, what the call takes and
gives back, and the bad inputs planned for them. The GPU run is tests/gpu/test_spec_api_gpu.py."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import drafted_specs
from kernel_check import runtime
from kernel_check.harness.cases import BadKind, bad_inputs, base_sizes, plan_cases
from kernel_check.harness.discover import discover
from kernel_check.harness.spec import TAILS, Instantiation, KernelSpec, Role, Scalar, SpecError, Tensor

FIXTURES = Path(__file__).parent / "fixtures" / "spec_api"


def returning_spec(**changes) -> KernelSpec:
    """``sum, diff = sum_diff(a, b, factors, scale)``: two returned outputs, a pinned host buffer."""
    spec = KernelSpec(
        name="sum_diff",
        source="sum_diff.cuh",
        export="sum_diff",
        symbol="sum_diff",
        args=(
            Tensor("a", ("n",), "float32"),
            Tensor("sum", ("n",), "float32", Role.OUT),
            Tensor("b", ("n",), "float32"),
            Tensor("factors", ("n",), "float32", device="cpu", pinned=True),
            Scalar("scale", 2.0),
            Tensor("diff", ("n",), "float32", Role.OUT),
        ),
        returns=("sum", "diff"),
        reference=None,
        instantiations=(Instantiation((), dtypes={"T": "float32"}),),
        grid={"n": TAILS},
    )
    return dataclasses.replace(spec, **changes)


def _two(x: Tensor, y: Tensor, returns: tuple[str, ...] = ()) -> dict:
    return dict(args=(x, y), returns=returns)


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(returns="sum"), r"`returns` must be a tuple of output names, not 'sum'"),
        (dict(returns=("sum", "sum")), "names an output twice"),
        (dict(returns=("total",)), "'total', which is no Tensor of `args`"),
        (dict(returns=("a",)), "'a', whose role is IN: a returned tensor is an OUT"),
        (dict(returns=("scale",)), "'scale', which is no Tensor"),
        (
            _two(Tensor("x", ("n",)), Tensor("y", (2, "n"), role=Role.OUT, strided_rows=True), ("y",)),
            "tensor y: a returned tensor's layout is the launcher's",
        ),
        (_two(Tensor("x", ("n",), device="gpu"), Tensor("y", ("n",), role=Role.OUT)), "device 'gpu' is not one of"),
        (_two(Tensor("x", ("n",), pinned=True), Tensor("y", ("n",), role=Role.OUT)), "pinned=True needs device='cpu'"),
        (
            dict(grid={"n": TAILS, **{f"m{i}": (1, 3, 32) for i in range(11)}}),
            r"the grid has 531,441 points, more than 100,000 \(each is a reference case\)",
        ),
    ],
)
def test_bad_host_buffers_and_returns_are_one_line_errors_at_load(changes, message):
    with pytest.raises(SpecError, match=message) as raised:
        returning_spec(**changes).validate()
    assert str(raised.value).startswith("spec sum_diff: ") and "\n" not in str(raised.value)


def test_a_broken_returns_in_a_spec_file_is_reported_by_discovery(tmp_path):
    (tmp_path / "k_spec.py").write_text(
        "from kernel_check.harness.spec import TAILS, Instantiation, KernelSpec, Role, Tensor\n"
        "SPEC = KernelSpec(name='k', source='k.cuh', export='k', symbol='k',\n"
        "    args=(Tensor('x', ('n',), 'float32'), Tensor('y', ('n',), 'float32', Role.OUT)),\n"
        "    returns=('z',), reference=None, instantiations=(Instantiation(()),), grid={'n': TAILS})\n"
    )
    found = discover([tmp_path])
    assert not found.specs
    assert found.errors == [
        f"{tmp_path / 'k_spec.py'}: SpecError: spec k: `returns` names 'z', which is no Tensor of `args` "
        "(declare its shape and dtype there)"
    ]


def test_the_fixture_specs_load():
    found = discover([FIXTURES])
    assert not found.errors
    by_name = {s.name: s for s in found.specs}
    assert by_name["fixture_sum_diff"].returns == ("sum", "diff")
    assert by_name["fixture_doubled"].returns == ("out",)
    (factors,) = [t for t in by_name["fixture_pinned_scale"].tensors if t.name == "factors"]
    assert (factors.device, factors.pinned) == ("cpu", True)


def test_returned_outputs_are_not_passed_and_come_back_by_name():
    spec = returning_spec()
    spec.validate()
    assert [a.name for a in spec.passed_args] == ["a", "b", "factors", "scale"]
    first, second = torch.zeros(3), torch.ones(3)
    assert spec.returned((first, second)) == {"sum": first, "diff": second}
    assert spec.returned([first, second]) == {"sum": first, "diff": second}
    single = dataclasses.replace(spec, returns=("sum",))
    assert single.returned(first) == {"sum": first}  # a tensor is one output, not a sequence of rows
    with pytest.raises(ValueError, match=r"returned 1 value\(s\) for the outputs \['sum', 'diff'\]"):
        spec.returned((first,))
    with pytest.raises(ValueError, match="returned NoneType, not the outputs"):
        spec.returned(None)
    assert dataclasses.replace(spec, returns=()).returned(None) == {}


def test_a_host_buffer_made_bad_is_handed_over_as_a_device_tensor():
    """The "cuda tensor" variant of a host buffer is the buffer on the GPU: before, it fell
    through to a padded-row copy on the host, which a launcher rightly accepts (a false KD301
    on an H100). Without a GPU the move itself must fail, not quietly give a host copy."""
    from kernel_check.harness.cases import BadInput
    from kernel_check.harness.execute import _apply_bad

    factors = torch.ones(8)
    if torch.cuda.is_available():
        assert _apply_bad(factors, BadInput("factors", BadKind.CUDA)).is_cuda
    else:
        with pytest.raises((RuntimeError, AssertionError)):
            _apply_bad(factors, BadInput("factors", BadKind.CUDA))


def test_bad_inputs_skip_returned_outputs_and_move_host_buffers_to_the_gpu():
    spec = returning_spec()
    inst = spec.instantiations[0]
    found = {(b.tensor, b.kind) for b in bad_inputs(spec, inst, base_sizes(spec, inst))}
    assert not {name for name, _ in found} & {"sum", "diff"}
    assert ("factors", BadKind.CUDA) in found and ("factors", BadKind.CPU) not in found
    assert ("a", BadKind.CPU) in found
    # `n` is shared by a, b and factors: a wrong size is one the launcher must catch
    assert ("a", BadKind.SHAPE) in found


def test_a_size_only_a_returned_output_shares_is_no_size_the_launcher_must_check():
    spec = returning_spec(
        args=(Tensor("x", ("n",), "float32"), Tensor("y", ("n",), "float32", Role.OUT)), returns=("y",)
    )
    spec.validate()
    kinds = {b.kind for b in bad_inputs(spec, spec.instantiations[0], {"n": 127})}
    assert BadKind.SHAPE not in kinds  # x alone sizes n: any length is valid
    assert {c.kind.value for c in plan_cases(spec)} >= {"reference", "graph", "stream", "bad-input"}


# ----- drafts (real libclang parses) -----

HOST_CHECK = """\
#include <sgl_kernel/tensor.h>
#include <sgl_kernel/utils.cuh>
#include <sgl_kernel/utils.h>

#include <tvm/ffi/container/tensor.h>

#include <cstdint>

namespace sglang {

__global__ void fill_lens_kernel(float* out, const int32_t* lens, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = static_cast<float>(lens[0]);
}

inline bool is_cpu(const tvm::ffi::TensorView& t) { return t.device().device_type == kDLCPU; }

void fill_lens(tvm::ffi::TensorView out, tvm::ffi::TensorView lens, tvm::ffi::TensorView ids) {
  using namespace host;
  RuntimeCheck(lens.device().device_type == kDLCPU, "lens must be on the host");
  RuntimeCheck(is_cpu(ids), "ids must be on the host");
  auto n = SymbolicSize{"n"};
  TensorMatcher({n}).with_dtype<float>().with_device<kDLCUDA>().verify(out);
  LaunchKernel(1, 256, out.device())(fill_lens_kernel, static_cast<float*>(out.data_ptr()),
                                     static_cast<const int32_t*>(lens.data_ptr()), n.unwrap());
}

}  // namespace sglang
"""


def _drafted(cuh: Path, tmp_path: Path, launcher: str | None = None) -> KernelSpec:
    return drafted_specs(cuh, tmp_path, launcher)[0]


@pytest.mark.slow
def test_drafts_of_launchers_that_return_their_outputs_name_them(tmp_path):
    pair = _drafted(FIXTURES / "sum_diff.cuh", tmp_path, "sum_diff")  # returns an alias of a Tuple
    assert pair.returns == ("out0", "out1") and [a.name for a in pair.passed_args] == ["a", "b"]
    assert all(t.role is Role.OUT and t.shape == ("n",) for t in pair.tensors if t.name in pair.returns)
    single = _drafted(FIXTURES / "sum_diff.cuh", tmp_path, "doubled")
    assert single.returns == ("out",) and [a.name for a in single.passed_args] == ["x"]
    assert "doubled returns out: shape ('n',) and dtype float32 assumed" in (tmp_path / "doubled_spec.py").read_text()


@pytest.mark.slow
def test_drafts_take_a_tensor_checked_to_be_on_the_host_as_a_pinned_host_buffer(tmp_path):
    matcher = _drafted(FIXTURES / "pinned_scale.cuh", tmp_path)  # with_device<kDLCPU>()
    placed = {t.name: (t.device, t.pinned) for t in matcher.tensors}
    assert placed == {"out": ("cuda", False), "x": ("cuda", False), "factors": ("cpu", True)}
    (tmp_path / "host_lens.cuh").write_text(HOST_CHECK)  # a device() check, an is_cpu() check
    checked = _drafted(tmp_path / "host_lens.cuh", tmp_path)
    assert {t.name: t.device for t in checked.tensors} == {"out": "cuda", "lens": "cpu", "ids": "cpu"}
    assert checked.returns == ()


@pytest.mark.nvcc
@pytest.mark.skipif(runtime.find_nvcc() is None, reason="nvcc not found (install the CUDA toolkit or set CUDA_HOME)")
def test_the_fixture_launchers_build_as_exported_with_no_shim(tmp_path):
    """The generated export of a launcher that returns a tuple, one that returns a tensor and
    one that takes a host buffer compiles as it is (no GPU: `kernel-check spec check`)."""
    env = {**os.environ, "KERNEL_CHECK_JIT_CACHE": str(tmp_path / "jit"), "TVM_FFI_CUDA_ARCH_LIST": "9.0"}
    run = subprocess.run(
        [sys.executable, "-m", "kernel_check", "spec", "check", str(FIXTURES)],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert sorted(run.stdout.splitlines()) == [
        "built   fixture_doubled[default]",
        "built   fixture_pinned_scale[default]",
        "built   fixture_sum_diff[default]",
    ]
