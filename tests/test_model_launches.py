"""What src/kernel_check/clang/launches.py and consteval.py give the rules: one `Launch` per launch with
its kernels, template arguments and PDL flag evaluated (hermetic parse of small real sources)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel_check.clang.cursors import MAX_NESTING
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
    # the variable template's own arguments (`kernel<4>`) are mapped onto the kernel's
    assert set(picked) == {("split_kernel", ("4",)), ("split_kernel", ("kHalf",))}
    assert picked["split_kernel", ("4",)].template_args == (ConstExpr("int", 4),)
    # C division truncates toward zero: -7 / 2 is -3, not Python's -4
    assert picked["split_kernel", ("kHalf",)].template_args == (ConstExpr("int", -3),)
    guard = picked["split_kernel", ("4",)].guard
    assert guard is not None and guard.evaluate({"arg:enable": 1}) == 1 and guard.evaluate({"arg:enable": 0}) == 0


SELECTIONS = """
#include <sgl_kernel/utils.cuh>
namespace sglang {

template <int N>
__global__ void wide_kernel(float* __restrict__ out) { out[threadIdx.x] = N; }

template <int N>
__global__ void narrow_kernel(float* __restrict__ out) { out[threadIdx.x] = -N; }

template <int N>
auto pick_kernel(bool wide) {
  if (wide) return wide_kernel<N>;
  return narrow_kernel<N>;
}

#define LAUNCH_NARROW(WIDTH) host::LaunchKernel(1, 32, device)(narrow_kernel<WIDTH>, out)

template <int N>
void run(float* out, bool wide, DLDevice device) {
  auto launch = [&](auto kernel) { host::LaunchKernel(1, 32, device)(kernel, out); };
  launch(wide_kernel<N>);
  launch(narrow_kernel<2 * N>);
  const auto chosen = [] {
    if constexpr (N > 4) return wide_kernel<N>;
    else return narrow_kernel<N>;
  }();
  host::LaunchKernel(1, 32, device)(chosen, out);
  host::LaunchKernel(1, 32, device)(pick_kernel<N>(wide), out);
  narrow_kernel<N><<<1, 32>>>(out);
  LAUNCH_NARROW(N + 1);
}

}  // namespace sglang
"""


@pytest.fixture(scope="module")
def selections(tmp_path_factory) -> list[Launch]:
    path = tmp_path_factory.mktemp("selections") / "pick.cuh"
    path.write_text(SELECTIONS)
    return extract(parse_file(path, SELECTIONS, resolve_settings("hermetic")), SELECTIONS, SELECTIONS.encode()).launches


def test_kernels_a_launch_selects(selections: list[Launch]) -> None:
    assert [launch.syntax for launch in selections] == ["launch_kernel"] * 3 + ["triple_chevron", "launch_kernel"]
    lambda_launch, iife, helper, chevron, macro = selections
    # the lambda's parameter stands for what each call of the lambda passes
    assert {(k.name, k.template_arg_texts) for k in lambda_launch.kernels} == {
        ("wide_kernel", ("N",)),
        ("narrow_kernel", ("2 * N",)),
    }
    # an immediately invoked lambda: each return, guarded by the `if` leading to it
    guards = {k.name: k.guard for k in iife.kernels}
    assert set(guards) == {"wide_kernel", "narrow_kernel"}
    assert guards["wide_kernel"].evaluate({"N": 8}) == 1 and guards["narrow_kernel"].evaluate({"N": 8}) == 0
    # a helper: every kernel it returns (its own conditions are not the launcher's)
    assert {k.name for k in helper.kernels} >= {"wide_kernel", "narrow_kernel"}
    assert all(k.guard is None for k in helper.kernels if k.name.endswith("_kernel"))
    assert [(k.name, k.template_arg_texts) for k in chevron.kernels] == [("narrow_kernel", ("N",))]
    assert chevron.argument_texts == ("out",) and chevron.pdl is None
    # inside a macro's expansion the arguments are read as the macro definition writes them
    assert [(k.name, k.template_arg_texts) for k in macro.kernels] == [("narrow_kernel", ("WIDTH",))]


def test_a_helper_nested_too_deeply_for_tier_1_adds_no_kernel(tmp_path) -> None:
    # a generated `else if` chain deeper than MAX_NESTING in a helper that picks the kernel
    chain = "\n  else ".join(f"if (n == {i}) kernel = pick<{i}>;" for i in range(MAX_NESTING + 20))
    source = f"""
#include <sgl_kernel/utils.cuh>
namespace sglang {{
template <int N>
__global__ void pick(float* __restrict__ out) {{ out[threadIdx.x] = N; }}
using Kernel = void (*)(float*);
Kernel select_kernel(int n) {{
  Kernel kernel = nullptr;
  {chain}
  return kernel;
}}
void run(float* out, int n, DLDevice device) {{
  host::LaunchKernel(1, 32, device)(select_kernel(n), out);
  host::LaunchKernel(1, 32, device)(pick<3>, out);
}}
}}  // namespace sglang
"""
    path = tmp_path / "deep.cuh"
    path.write_text(source)
    unit = parse_file(path, source, resolve_settings("hermetic"))
    assert not unit.errors, [e.message for e in unit.errors]
    model = extract(unit, source, source.encode())
    deep, direct = model.launches
    # the launch itself is kept; only what the helper returns is out of reach
    assert [k.name for k in deep.kernels] == ["select_kernel"]
    assert [(k.name, k.template_arg_texts) for k in direct.kernels] == [("pick", ("3",))]


def test_values_assigned_to_a_kernel_variable_are_launched_too(tmp_path) -> None:
    source = """
#include <sgl_kernel/utils.cuh>
namespace sglang {
template <typename T>
__global__ void first(T* __restrict__ out) { out[threadIdx.x] = 1; }
template <typename T>
__global__ void second(T* __restrict__ out) { out[threadIdx.x] = 2; }
template <typename T>
__global__ void third(T* __restrict__ out) { out[threadIdx.x] = 3; }
template <typename T>
void run(T* out, bool a, bool b, DLDevice device) {
  auto kernel = a ? first<T> : second<T>;
  if (b) kernel = third<T>;
  host::LaunchKernel(1, 32, device)(kernel, out);
}
}  // namespace sglang
"""
    path = tmp_path / "assigned.cuh"
    path.write_text(source)
    unit = parse_file(path, source, resolve_settings("hermetic"))
    assert not unit.errors, [e.message for e in unit.errors]
    (launch,) = extract(unit, source, source.encode()).launches
    picked = {k.name: k for k in launch.kernels}
    assert set(picked) == {"first", "second", "third"}
    assert picked["third"].template_arg_texts == ("T",) and picked["third"].template_args[0].op == "sizeof"
    # the initializer's own selection keeps its guard
    assert picked["first"].guard is not None and picked["first"].guard.evaluate({"arg:a": 1}) == 1


def test_variable_template_arguments_are_bound_at_each_use(tmp_path) -> None:
    source = """
#include <sgl_kernel/utils.cuh>
namespace sglang {
template <int kDim, bool kWrite, bool kUsePDL>
__global__ void prefill(float* __restrict__ out) { out[threadIdx.x] = kDim; }

template <int kHeads, bool kUsePDL = false>
constexpr auto ns_kernel = prefill<kHeads * 2, true, kUsePDL>;

template <int kDim, bool kUsePDL>
struct Attention {
  template <bool kWrite>
  static constexpr auto prefill_kernel = prefill<kDim, kWrite, kUsePDL>;
  static constexpr auto read_only_kernel = prefill_kernel</*kWrite=*/false>;
  static void run(float* out, DLDevice device) {
    host::LaunchKernel(1, 32, device).enable_pdl(kUsePDL)(prefill_kernel<true>, out);
    host::LaunchKernel(1, 32, device).enable_pdl(kUsePDL)(read_only_kernel, out);
    host::LaunchKernel(1, 32, device)(ns_kernel<0x10>, out);
  }
};
}  // namespace sglang
"""
    path = tmp_path / "variable_template.cuh"
    path.write_text(source)
    unit = parse_file(path, source, resolve_settings("hermetic"))
    assert not unit.errors, [e.message for e in unit.errors]
    written, through_variable, namespace_scope = extract(unit, source, source.encode()).launches
    [kernel] = written.kernels
    assert kernel.template_arg_texts == ("kDim", "true", "kUsePDL")
    assert kernel.template_args == (
        ConstExpr("param", name="kDim"),
        ConstExpr("int", 1),
        ConstExpr("param", name="kUsePDL"),
    )
    assert kernel.argument_for("kUsePDL") == ("kUsePDL", ConstExpr("param", name="kUsePDL"))
    # a variable initialized with a use of the template; the use's comment is not an argument
    assert [k.template_arg_texts for k in through_variable.kernels] == [("kDim", "false", "kUsePDL")]
    # a namespace-scope template: an expression keeps its text, a default fills what is not given
    [kernel] = namespace_scope.kernels
    assert kernel.template_arg_texts == ("kHeads * 2", "true", "false")
    assert kernel.template_args[0].op == "unknown"
    assert kernel.template_args[1:] == (ConstExpr("int", 1), ConstExpr("int", 0))


def test_a_named_launch_object_takes_the_flag_its_methods_set_before_the_launch(tmp_path) -> None:
    """`auto launch = LaunchKernel{...}; launch.enable_pdl(x); launch(kernel, ...);`: the flag
    set between construction and launch is the launch's; one set after it, or only under a
    condition of the launcher's, is not known to apply."""
    source = """
#include <sgl_kernel/utils.cuh>
namespace sglang {
template <bool kUsePDL>
__global__ void k(float* __restrict__ out) {
  device::PDLWaitPrimary<kUsePDL>();
  out[threadIdx.x] = 1.0f;
}
template <bool kUsePDL>
void run(float* out, bool pdl, cudaStream_t stream) {
  auto launch = host::LaunchKernel{dim3(1), dim3(32), stream};
  launch.enable_pdl(kUsePDL);
  launch(k<kUsePDL>, out);
  host::LaunchKernel plain(dim3(1), dim3(32), stream);
  plain(k<kUsePDL>, out);
  plain.enable_pdl(true);
  host::LaunchKernel maybe(dim3(1), dim3(32), stream);
  if (pdl) maybe.enable_pdl();
  maybe(k<kUsePDL>, out);
  host::LaunchKernel chained(dim3(1), dim3(32), stream);
  chained.config({.use_pdl = false});
  chained.enable_pdl(true)(k<kUsePDL>, out);
}
}  // namespace sglang
"""
    path = tmp_path / "named.cuh"
    path.write_text(source)
    unit = parse_file(path, source, resolve_settings("hermetic"))
    assert not unit.errors, [e.message for e in unit.errors]
    named, plain, maybe, chained = extract(unit, source, source.encode()).launches
    assert [k.name for launch in (named, plain, maybe, chained) for k in launch.kernels] == ["k"] * 4
    assert named.pdl is not None and (named.pdl.text, named.pdl.value.op) == ("kUsePDL", "param")
    assert plain.pdl is None and plain.pdl_off
    assert maybe.pdl is not None and not maybe.pdl_off and not maybe.pdl.always_on
    assert chained.pdl is not None and chained.pdl.always_on  # the launch's own expression wins


BUILTIN_ARGUMENTS = """
#include <sgl_kernel/utils.cuh>
namespace sglang {
template <typename T, int kScale>
__global__ void scale_kernel(T* __restrict__ out) { out[threadIdx.x] *= kScale; }

void scale(float* out, DLDevice device) {
  host::LaunchKernel(1, 32, device)(scale_kernel<float, 2>, out);
}

template <int kScale>
void scale_by(float* out, DLDevice device) {
  host::LaunchKernel(1, 32, device)(scale_kernel<float, kScale>, out);
}
}  // namespace sglang
"""


def test_a_builtin_type_argument_keeps_the_others_in_place(tmp_path: Path) -> None:
    path = tmp_path / "scale.cuh"
    path.write_text(BUILTIN_ARGUMENTS)
    model = extract(
        parse_file(path, BUILTIN_ARGUMENTS, resolve_settings("hermetic")), BUILTIN_ARGUMENTS, BUILTIN_ARGUMENTS.encode()
    )
    concrete, in_template = ([k for k in launch.kernels if k.name == "scale_kernel"] for launch in model.launches)
    # the specialization's arguments: `float` is its 4 bytes, 2 stays the second
    assert concrete[0].template_args == (ConstExpr("int", 4), ConstExpr("int", 2))
    # in a template clang lists no node for `float`: `kScale` is not taken for `T`
    assert in_template[0].template_args == ()
    assert in_template[0].argument_for("T") == ("float", ConstExpr("unknown", text="float"))


RUNTIME_API_LAUNCHES = """
#include <cstdint>
#include <cuda_runtime.h>
#define CHECK_CUDA(call) { cudaError_t e = (call); if (e != cudaSuccess) return e; }
namespace sglang {
__global__ void zero_kernel(float* __restrict__ out, int32_t n) {
  if (threadIdx.x < n) out[threadIdx.x] = 0.0f;
}

cudaError_t zero(float* out, int32_t n, bool pdl, bool chained, cudaStream_t stream) {
  cudaLaunchConfig_t config = {};
  config.gridDim = 1;
  config.blockDim = 32;
  config.stream = stream;
  CHECK_CUDA(cudaLaunchKernelEx(&config, zero_kernel, out, n));
  cudaLaunchAttribute attrs[1];
  attrs[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attrs[0].val.programmaticStreamSerializationAllowed = pdl;
  config.attrs = attrs;
  config.numAttrs = 1;
  CHECK_CUDA(cudaLaunchKernelEx(&config, zero_kernel, out, n));
  if (chained) attrs[0].val.programmaticStreamSerializationAllowed = 1;
  CHECK_CUDA(cudaLaunchKernelEx(&config, zero_kernel, out, n));
  void* args[] = {&out, &n};
  return cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(zero_kernel), args);
}

cudaError_t zero_with(float* out, int32_t n, const cudaLaunchAttribute* attrs, int32_t count) {
  cudaLaunchConfig_t config = {};
  config.gridDim = 1;
  config.blockDim = 32;
  cudaLaunchAttribute cluster[1];
  cluster[0].id = cudaLaunchAttributeClusterDimension;
  config.attrs = cluster;
  config.numAttrs = 1;
  CHECK_CUDA(cudaLaunchKernelEx(&config, zero_kernel, out, n));
  cudaLaunchAttribute cooperative{};
  cooperative.id = cudaLaunchAttributeCooperative;
  config.attrs = &cooperative;
  CHECK_CUDA(cudaLaunchKernelEx(&config, zero_kernel, out, n));
  config.attrs = const_cast<cudaLaunchAttribute*>(attrs);
  config.numAttrs = count;
  return cudaLaunchKernelEx(&config, zero_kernel, out, n);
}
}  // namespace sglang
"""


def test_runtime_api_launches_take_the_pdl_attribute_set_before_them(tmp_path: Path) -> None:
    """`cudaLaunchKernelEx(&config, kernel, args...)` inside a checked-call macro, and the C
    form with an array of the arguments' addresses: each launches the kernel with its
    arguments, PDL as the launch attribute last set before it (none: off; under a
    condition, or attributes the launcher does not fill: not known)."""
    path = tmp_path / "zero.cuh"
    path.write_text(RUNTIME_API_LAUNCHES)
    text = RUNTIME_API_LAUNCHES
    model = extract(parse_file(path, text, resolve_settings("hermetic")), text, text.encode())
    assert [[k.name for k in launch.kernels] for launch in model.launches] == [["zero_kernel"]] * 7
    assert all(launch.syntax == "runtime_api" for launch in model.launches)
    assert [launch.argument_texts for launch in model.launches[:3]] == [("out", "n")] * 3
    flags = [(launch.pdl.text, launch.pdl.value.op) if launch.pdl else None for launch in model.launches]
    assert flags[:4] == [None, ("pdl", "param"), ("1", "unknown"), ("1", "unknown")]
    # attributes of a local array the body fills (a cluster shape): no PDL; the caller's
    # attributes (a parameter): it may turn PDL on
    assert flags[4:] == [None, None, ("const_cast<cudaLaunchAttribute*>(attrs)", "unknown")]


DESIGNATED_LAUNCH_CONFIG = """
#include <cstdint>
#include <cuda_runtime.h>
namespace sglang {
__global__ void zero_kernel(float* __restrict__ out, int32_t n) {
  if (threadIdx.x < n) out[threadIdx.x] = 0.0f;
}

cudaError_t zero(float* out, int32_t n, bool pdl) {
  cudaLaunchAttribute attrs[1] = {{.id = cudaLaunchAttributeProgrammaticStreamSerialization,
                                   .val = {.programmaticStreamSerializationAllowed = pdl}}};
  cudaLaunchConfig_t config = {.gridDim = 2, .blockDim = 64, .attrs = attrs, .numAttrs = 1};
  return cudaLaunchKernelEx(&config, zero_kernel, out, n);
}

cudaError_t zero_with(float* out, int32_t n, const cudaLaunchAttribute* given) {
  cudaLaunchConfig_t config = {.gridDim = 1, .blockDim = 32, .attrs = const_cast<cudaLaunchAttribute*>(given)};
  return cudaLaunchKernelEx(&config, zero_kernel, out, n);
}
}  // namespace sglang
"""


def test_designated_launch_attributes_and_config_fields_are_read(tmp_path: Path) -> None:
    """The PDL attribute and the config's fields written as designated initializers: the
    flag the attribute names, and unknown for the caller's attributes; the grid and block
    the config's initializer gives."""
    path = tmp_path / "designated.cuh"
    path.write_text(DESIGNATED_LAUNCH_CONFIG)
    text = DESIGNATED_LAUNCH_CONFIG
    model = extract(parse_file(path, text, resolve_settings("hermetic")), text, text.encode())
    flags = [(launch.pdl.text, launch.pdl.value.op) if launch.pdl else None for launch in model.launches]
    assert flags == [("pdl", "param"), ("const_cast<cudaLaunchAttribute*>(given)", "unknown")]
    first = next(c for c in model.launch_contracts if c.launch == 0)
    assert [t.value if t is not None else None for t in (*first.grid, *first.block)] == [2, 1, 1, 64, 1, 1]
