"""What checker/clang/launches.py and consteval.py give the rules: one `Launch` per launch with
its kernels, template arguments and PDL flag evaluated (hermetic parse of small real sources)."""

from __future__ import annotations


import pytest

from kernel_check.clang.extract import extract
from kernel_check.clang.parse import parse_file, resolve_settings
from kernel_check.model import ConstExpr, Launch, SourceModel

SOURCE = """
#include <sgl_kernel/utils.cuh>
#include <cstdint>
namespace sglang {

template <typename T, bool kUsePDL>
__global__ void copy_kernel(T* __restrict__ dst, const T* __restrict__ src) {
  device::PDLWaitPrimary<kUsePDL>();
  dst[threadIdx.x] = src[threadIdx.x];
}

template <int kSplit>
__global__ void split_kernel(float* __restrict__ out) { out[threadIdx.x % warpSize] = kSplit; }

constexpr bool kNoPdl = false;
constexpr int kHalf = -7 / 2;

template <typename T, bool kUsePDL>
struct Copy {
  template <int N>
  static constexpr auto kernel = split_kernel<N>;
  static void run(T* dst, const T* src, float* out, bool enable, DLDevice device) {
    host::LaunchKernel(1, 32, device).enable_pdl(kUsePDL)(copy_kernel<T, kUsePDL>, dst, src);
    host::LaunchKernel(1, 32, device).enable_pdl(kNoPdl)(copy_kernel<T, false>, dst, src);
    host::LaunchKernel(1, 32, device).config({.use_pdl = enable})(copy_kernel<T, true>, dst, src);
    host::LaunchKernel(1, 32, device)(enable ? kernel<4> : split_kernel<kHalf>, out);
  }
};

}  // namespace sglang
"""


@pytest.fixture(scope="module")
def launches(tmp_path_factory) -> list[Launch]:
    path = tmp_path_factory.mktemp("launches") / "copy.cuh"
    path.write_text(SOURCE)
    model: SourceModel = extract(parse_file(path, SOURCE, resolve_settings("hermetic")), SOURCE, SOURCE.encode())
    return model.launches


def test_pdl_flags_are_evaluated(launches: list[Launch]) -> None:
    flags = [(launch.pdl.text, launch.pdl.value.op) if launch.pdl else None for launch in launches]
    assert flags == [("kUsePDL", "param"), ("kNoPdl", "int"), ("enable", "param"), None]
    # a constexpr `false` turns PDL off like the literal; a runtime flag is neither on nor off
    assert [launch.pdl_off for launch in launches] == [False, True, False, True]
    assert not launches[2].pdl.always_on


def test_template_arguments_keep_text_and_value(launches: list[Launch]) -> None:
    [kernel] = launches[1].kernels
    assert kernel.template_params == ("T", "kUsePDL")
    assert kernel.template_arg_texts == ("T", "false")
    assert kernel.template_args == (ConstExpr("sizeof", name="T"), ConstExpr("int", 0))
    assert kernel.argument_for("kUsePDL") == ("false", ConstExpr("int", 0))


def test_selection_through_a_member_variable_template(launches: list[Launch]) -> None:
    picked = {(k.name, k.template_arg_texts): k for k in launches[3].kernels}
    # the variable template's own arguments (`kernel<4>`) are not mapped onto the kernel's
    assert set(picked) == {("split_kernel", ()), ("split_kernel", ("kHalf",))}
    # C division truncates toward zero: -7 / 2 is -3, not Python's -4
    assert picked["split_kernel", ("kHalf",)].template_args == (ConstExpr("int", -3),)
    guard = picked["split_kernel", ()].guard
    assert guard is not None and guard.evaluate({"arg:enable": 1}) == 1 and guard.evaluate({"arg:enable": 0}) == 0
