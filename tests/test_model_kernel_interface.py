"""What src/kernel_check/clang/kernel_interface.py extracts, pinned on small real sources."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel_check.clang.extract import extract
from kernel_check.clang.parse import parse_file, resolve_settings
from kernel_check.model import ConstExpr, SourceModel

HEADERS = """
#include <sgl_kernel/tensor.h>
#include <sgl_kernel/tile.cuh>
#include <sgl_kernel/utils.cuh>
#include <sgl_kernel/vec.cuh>
#include <sgl_kernel/warp.cuh>
#include <tvm/ffi/container/tensor.h>
#include <cstdint>
"""


def model_of(tmp_path: Path, body: str, name: str = "probe.cuh") -> SourceModel:
    path = tmp_path / name
    text = HEADERS + "namespace sglang {\n" + body + "\n}  // namespace sglang\n"
    path.write_text(text)
    unit = parse_file(path, text, resolve_settings("hermetic"))
    assert not unit.errors, [e.message for e in unit.errors]
    return extract(unit, text, text.encode())


def line_of(model: SourceModel, needle: str) -> int:
    return next(i for i, line in enumerate(model.text.splitlines(), start=1) if needle in line)


def usr_of(model: SourceModel, name: str) -> str:
    return next(f.usr for f in model.functions if f.name == name)


LAUNCHER = """
template <typename T, int kVec>
__global__ void copy_kernel(T* __restrict__ dst, const T* __restrict__ src, int64_t n) {
  device::AlignedVector<T, kVec> v;
  v.load(src, threadIdx.x);
  v.store(dst, threadIdx.x);
}

template <typename T>
void copy(tvm::ffi::TensorView dst, tvm::ffi::TensorView src, tvm::ffi::TensorView ids) {
  using namespace host;
  auto n = SymbolicSize{"n"};
  constexpr int kVec = 16 / sizeof(T);
  TensorMatcher({n, 8})
      .with_device<kDLCUDA>()
      .with_dtype<T>()
      .verify(ids)
      .ensure_alignment(kVec * sizeof(T))
      .verify(dst)
      .verify(src);
  const T* src_ptr = static_cast<const T*>(src.data_ptr());
  LaunchKernel(1, 32, dst.device())(copy_kernel<T, kVec>, static_cast<T*>(dst.data_ptr()), src_ptr, n.unwrap());
}
"""


def test_matcher_chain_records_dims_dtypes_and_the_alignment_in_effect_per_verify(tmp_path: Path) -> None:
    model = model_of(tmp_path, LAUNCHER)
    [chain] = model.launcher_facts.matcher_chains
    assert chain.function == usr_of(model, "copy")
    assert chain.dims == ("n", "8")
    assert [(d.text, d.canonical, d.size) for d in chain.dtypes] == [("T", "T", ConstExpr("sizeof", name="T"))]
    assert [v.name for v in chain.verified] == ["ids", "dst", "src"]
    ids, dst, src = chain.verified
    assert ids.alignment is None  # verified before ensure_alignment
    assert dst.alignment == src.alignment == chain.alignments[0]
    request = chain.alignments[0]
    assert request.text == "kVec * sizeof(T)"
    assert model.data[request.span.start : request.span.end] == b"ensure_alignment(kVec * sizeof(T))"
    assert request.value.free_names() == {"T"}
    assert [request.value.evaluate({"T": size}) for size in (1, 2, 4)] == [16, 16, 16]
    assert chain.span.line == line_of(model, "TensorMatcher({n, 8})")


BUILTIN_DTYPES = """
inline void pick(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  using namespace host;
  auto n = SymbolicSize{"n"};
  auto dtype = SymbolicDType{};
  dtype.set_options<double, fp16_t>();
  TensorMatcher({n}).with_dtype<float>().verify(a);
  TensorMatcher({n}).with_dtype<fp32_t, unsigned int, bf16_t>().verify(b);
  TensorMatcher({n}).with_dtype(dtype).verify(c);
}
"""


def test_built_in_dtypes_of_a_matcher_have_their_sizes_and_aliases_their_canonical_type(tmp_path: Path) -> None:
    """`with_dtype<float>()` spells a built-in type, which has no cursor of its own: it is read
    from the argument list, in its place among the named ones, and `fp32_t` is `float`."""
    model = model_of(tmp_path, BUILTIN_DTYPES)
    a, b, c = model.launcher_facts.matcher_chains
    assert [(d.text, d.canonical, d.size) for d in a.dtypes] == [("float", "float", ConstExpr("int", 4))]
    assert [(d.text, d.canonical, d.size.value) for d in b.dtypes] == [
        ("fp32_t", "float", 4),
        ("unsigned int", "unsigned int", 4),
        ("bf16_t", "__nv_bfloat16", 2),
    ]
    assert [(d.text, d.size.value) for d in c.dtypes] == [("double", 8), ("fp16_t", 2)]


def test_launch_binds_template_args_and_the_tensors_behind_each_argument(tmp_path: Path) -> None:
    model = model_of(tmp_path, LAUNCHER)
    [launch] = model.launches
    [kernel] = launch.kernels
    assert kernel.name == "copy_kernel" and kernel.usr == usr_of(model, "copy_kernel")
    assert kernel.template_params == ("T", "kVec")
    size, count = kernel.template_args
    assert size == ConstExpr("sizeof", name="T")
    assert count.evaluate({"T": 4}) == 4
    assert kernel.guard is None
    bound = {(a.argument, a.field, a.tensor) for a in launch.tensors}
    assert bound == {(0, "", "dst"), (1, "", "src")}  # src through the local `src_ptr`
    uses = {u.tensor for u in model.launcher_facts.tensor_data_uses}
    assert uses == {"dst", "src"}


def test_a_params_field_handed_on_its_own_carries_that_fields_tensor_alone(tmp_path: Path) -> None:
    model = model_of(
        tmp_path,
        """
struct Pair {
  float* __restrict__ out;
  const float* __restrict__ in;
  int64_t n;
};
__global__ void scale_kernel(float* out, const float* in, int64_t n) {}
void run(tvm::ffi::TensorView out, tvm::ffi::TensorView in, int64_t n) {
  const auto pair = Pair{.out = static_cast<float*>(out.data_ptr()),
                         .in = static_cast<const float*>(in.data_ptr()), .n = n};
  host::LaunchKernel(1, 128, out.device())(scale_kernel, pair.out, pair.in, pair.n);
}
""",
    )
    [launch] = model.launches
    assert {(a.argument, a.field, a.tensor) for a in launch.tensors} == {(0, "", "out"), (1, "", "in")}


def test_kernel_vector_accesses_carry_width_over_template_params(tmp_path: Path) -> None:
    model = model_of(tmp_path, LAUNCHER)
    accesses = model.launcher_facts.vector_accesses
    assert {(a.param_index, a.kind) for a in accesses} == {(0, "aligned_vector"), (1, "aligned_vector")}
    width = accesses[0].width
    assert width.evaluate({"T": 2, "kVec": 8}) == 16
    assert all(a.function == usr_of(model, "copy_kernel") and not a.path for a in accesses)


def test_params_struct_fields_pointer_offset_tile_memory_and_static_kernel_member(tmp_path: Path) -> None:
    model = model_of(
        tmp_path,
        """
struct Params {
  const void* __restrict__ src;
  void* __restrict__ dst;
  const int32_t* __restrict__ ids;
};

template <typename T, int kVec>
__global__ void rows_kernel(const __grid_constant__ Params params) {
  using vec_t = device::AlignedVector<T, kVec>;
  const int32_t row = params.ids[blockIdx.x];
  const auto* src = device::pointer::offset(static_cast<const T*>(params.src), row * 64);
  const auto mem = device::tile::Memory<vec_t>::cta(blockDim.x);
  mem.store(params.dst, mem.load(src));
}

template <typename T, int kVec>
struct Rows {
  static constexpr auto kernel = rows_kernel<T, kVec>;
  static void run(tvm::ffi::TensorView dst, tvm::ffi::TensorView src, tvm::ffi::TensorView ids) {
    const auto params = Params{.src = src.data_ptr(), .dst = dst.data_ptr(),
                               .ids = static_cast<const int32_t*>(ids.data_ptr())};
    host::LaunchKernel(1, 128, dst.device())(kernel, params);
  }
};
""",
    )
    facts = model.launcher_facts
    assert {(a.param_index, a.field, a.kind) for a in facts.vector_accesses} == {
        (0, "src", "tile_memory"),
        (0, "dst", "tile_memory"),
    }
    width = facts.vector_accesses[0].width
    assert width.evaluate({"T": 4, "kVec": 4}) == 16
    [launch] = model.launches
    assert {(a.field, a.tensor) for a in launch.tensors} == {("src", "src"), ("dst", "dst"), ("ids", "ids")}
    [kernel] = launch.kernels
    assert kernel.name == "rows_kernel"
    assert kernel.template_args == (ConstExpr("sizeof", name="T"), ConstExpr("param", name="kVec"))


def test_vector_kinds_and_scalar_accesses(tmp_path: Path) -> None:
    model = model_of(
        tmp_path,
        """
template <uint32_t kRow>
__global__ void kinds_kernel(const float* __restrict__ a, const void* __restrict__ b, float* __restrict__ c,
                             const float4* __restrict__ d, const float* __restrict__ e) {
  const int4 raw = reinterpret_cast<const int4*>(a)[threadIdx.x];
  const auto frag = device::warp::load_bytes<kRow>(b);
  device::store_as<float2>(c, make_float2(1.0f, 2.0f), threadIdx.x);
  const float scalar = device::load_as<float>(e, threadIdx.x) + e[1] + d[0].x;
  c[0] = scalar + static_cast<float>(raw.x) + static_cast<float>(sizeof(frag));
}
""",
    )
    found = {a.param_index: (a.kind, a.width) for a in model.launcher_facts.vector_accesses}
    assert found[0] == ("cast", ConstExpr("int", 16))
    assert found[1][0] == "warp_bytes"
    assert found[1][1].evaluate({"kRow": 1024}) == 16  # WARP_UNIFORM_16B: 32 lanes x 16 bytes fit
    assert found[1][1].evaluate({"kRow": 64}) == 4  # two bytes per lane: the 4-byte fallback
    assert found[2] == ("store_as", ConstExpr("int", 8))
    assert found[3] == ("vector_param", ConstExpr("int", 16))
    assert 4 not in found  # scalar load_as and subscripts are not vectorized


def test_device_helper_of_an_included_header_is_followed(tmp_path: Path) -> None:
    (tmp_path / "helper.cuh").write_text("""
#pragma once
#include <sgl_kernel/vec.cuh>
namespace sglang {
template <typename T, int kVec>
SGL_DEVICE void copy_vec(T* dst, const T* src) {
  device::AlignedVector<T, kVec> v;
  v.load(src);
  v.store(dst);
}
}  // namespace sglang
""")
    model = model_of(
        tmp_path,
        """
}  // namespace sglang
#include "helper.cuh"
namespace sglang {
template <typename T>
__global__ void outer_kernel(T* __restrict__ dst, const T* __restrict__ src) {
  copy_vec<T, 16 / sizeof(T)>(dst + threadIdx.x, src + threadIdx.x);
}
""",
    )
    facts = model.launcher_facts
    [helper_usr] = facts.foreign_functions
    accesses = [a for a in facts.vector_accesses if a.function == helper_usr]
    assert {a.param_index for a in accesses} == {0, 1}
    assert all(a.path.endswith("helper.cuh") for a in accesses)
    passes = {(p.argument, p.param_index) for p in facts.pointer_passes if p.callee_usr == helper_usr}
    assert passes == {(0, 0), (1, 1)}
    [handoff] = [p for p in facts.pointer_passes if p.argument == 1]
    assert handoff.callee_template_params == ("T", "kVec")
    assert handoff.template_args[1].evaluate({"T": 2}) == 8


def test_inspection_contexts(tmp_path: Path) -> None:
    model = model_of(
        tmp_path,
        """
inline void f(tvm::ffi::TensorView x) {
  CHECK_HOST(x.ndim() == 2) << "rank";
  host::RuntimeCheck(x.size(0) > 0, "rows");
  if (x.dtype().bits != 16) host::Panic("bits");
  if (x.stride(0) == 0) return;
  const int64_t rows = x.size(0);
  static_cast<void>(rows);
  while (const int64_t n = x.numel()) { static_cast<void>(n); break; }
}
""",
    )
    contexts = {(i.method, i.context) for i in model.launcher_facts.tensor_inspections}
    assert contexts == {
        ("ndim", "check"),
        ("size", "check"),
        ("dtype", "check"),
        ("stride", "condition"),
        ("size", "value"),
        ("numel", "condition"),
    }  # a condition variable's initializer


def test_api_call_result_use_and_argument_names(tmp_path: Path) -> None:
    model = model_of(
        tmp_path,
        """
inline cudaError_t f(void* p, cudaStream_t s) {
  cudaMemsetAsync(p, 0, 4, s);
  (void)cudaGetLastError();
  CHECK_CUDA(cudaStreamSynchronize(s));
  int32_t major = 0;
  const cudaError_t err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
  if (err != cudaSuccess) return err;
  return cudaFree(p);
}
""",
    )
    calls = {c.name: c for c in model.launcher_facts.api_calls}
    assert calls["cudaMemsetAsync"].result_use == "discarded"
    assert calls["cudaGetLastError"].result_use == "void_cast"
    assert calls["cudaStreamSynchronize"].result_use == "used"
    assert calls["cudaFree"].result_use == "used"
    assert calls["cudaFree"].returns_cuda_error
    assert not calls["cudaGetErrorString"].returns_cuda_error  # from CHECK_CUDA's failure path
    assert "cudaDevAttrComputeCapabilityMajor" in calls["cudaDeviceGetAttribute"].argument_names


def test_kernel_selected_by_an_immediately_invoked_lambda_carries_guards(tmp_path: Path) -> None:
    model = model_of(
        tmp_path,
        """
template <bool kWide>
__global__ void wide_kernel(float4* __restrict__ out) { out[0] = float4{}; }
__global__ void narrow_kernel(float* __restrict__ out) { out[0] = 0.0f; }

template <bool kWide>
void pick(tvm::ffi::TensorView out) {
  const auto kernel = [] {
    if constexpr (kWide) {
      return wide_kernel<true>;
    } else {
      return wide_kernel<false>;
    }
  }();
  host::LaunchKernel(1, 1, out.device())(kernel, static_cast<float4*>(out.data_ptr()));
}
""",
    )
    [launch] = model.launches
    guards = [(k.template_args, k.guard) for k in launch.kernels]
    assert [g[0] for g in guards] == [(ConstExpr("int", 1),), (ConstExpr("int", 0),)]
    assert guards[0][1].evaluate({"kWide": 1}) == 1 and guards[1][1].evaluate({"kWide": 1}) == 0


def test_helper_functions_are_inlined_into_constants(tmp_path: Path) -> None:
    model = model_of(
        tmp_path,
        """
template <typename T, uint32_t kDim, bool kWarp>
SGL_DEVICE_HOST constexpr uint32_t vec_bytes_of() {
  constexpr uint32_t kBytes = kDim * static_cast<uint32_t>(sizeof(T));
  if constexpr (kWarp) {
    return device::LoadStorePattern::get_vec_bytes<kBytes, device::LoadStorePattern::WARP_UNIFORM_16B>();
  } else {
    return kBytes % 16 == 0 ? 16 : 4;
  }
}

template <typename T, uint32_t kDim>
void launch(tvm::ffi::TensorView x) {
  host::TensorMatcher({kDim}).with_dtype<T>().ensure_alignment(vec_bytes_of<T, kDim, true>()).verify(x);
}
""",
    )
    value = model.launcher_facts.matcher_chains[0].alignments[0].value
    assert value.evaluate({"T": 2, "kDim": 512}) == 16
    assert value.evaluate({"T": 2, "kDim": 32}) == 4


@pytest.mark.parametrize(
    ("row", "pattern", "width"),
    [
        (1024, -16, 16),
        (256, -16, 8),
        (64, -16, 4),
        (6, -16, 2),
        (48, 16, 16),
        (24, 16, 8),
        (1024, -32, 32),
    ],
)
def test_vec_bytes_follows_warp_cuh(row: int, pattern: int, width: int) -> None:
    expr = ConstExpr("vec_bytes", args=(ConstExpr("int", row), ConstExpr("int", pattern)))
    assert expr.evaluate({}) == width


def test_const_expr_substitute_and_unknowns() -> None:
    width = ConstExpr("*", args=(ConstExpr("sizeof", name="T"), ConstExpr("param", name="kVec")))
    bound = width.substitute({"T": ConstExpr("int", 2)})
    assert bound.free_names() == {"kVec"}
    assert bound.evaluate({"kVec": 8}) == 16
    assert ConstExpr("/", args=(ConstExpr("int", 1), ConstExpr("int", 0))).evaluate({}) is None
    assert ConstExpr("unknown", text="f()").evaluate({}) is None


def test_a_constructed_check_lists_every_argument(tmp_path: Path) -> None:
    # A check spelled as a struct whose constructor throws: `ns::Check(info, cond, ...)` builds a
    # temporary, and libclang lists the type it names among the call's parts before the arguments.
    model = model_of(
        tmp_path,
        """
namespace checks {
struct DebugInfo { int line = 0; };
struct RuntimeCheck {
  template <typename... Args>
  explicit RuntimeCheck(DebugInfo info, bool cond, Args&&... args) { if (!cond) throw info.line; }
};
}  // namespace checks
inline void g(int64_t n, checks::DebugInfo info = {}) {
  checks::RuntimeCheck(info, n > 0, "n must be positive, got ", n);
}
""",
    )
    calls = [(c.argument_names, c.result_use) for c in model.launcher_facts.api_calls if c.name == "RuntimeCheck"]
    assert calls == [(("info", "n > 0", '"n must be positive, got "', "n"), "discarded")]


def test_parameter_tests_of_optional_and_string_parameters(tmp_path: Path) -> None:
    """`has_value()` / `defined()` of a parameter and `==` / `!=` of one with a string literal,
    in source order; a comparison with a local or with no literal is not one."""
    model = model_of(
        tmp_path,
        """
        void launch(tvm::ffi::TensorView x, tvm::ffi::Optional<tvm::ffi::TensorView> bias,
                    std::string order, tvm::ffi::String mode, int n) {
          std::string local = "a";
          if (bias.has_value()) { n += 1; }
          if (order != "up" && local == "b") { n += 2; }
          if (mode == tvm::ffi::String("fast") || order == "down" || order == mode) { n += 3; }
        }
        """,
    )
    found = [(t.parameter, t.test, t.literal) for t in model.launcher_facts.parameter_tests]
    assert found == [
        ("bias", "present", ""),
        ("order", "equals", "up"),
        ("mode", "equals", "fast"),
        ("order", "equals", "down"),
    ]
    assert {t.function for t in model.launcher_facts.parameter_tests} == {usr_of(model, "launch")}


DISPATCH_MACRO_LAUNCH = """
template <typename T>
__global__ void scale_kernel(const T* __restrict__ src, T* __restrict__ dst, float* __restrict__ norm, int n) {}

#define DISPATCH_FLOATS(is_half, T, ...) \\
  [&] {                                  \\
    if (is_half) {                       \\
      using T = __half;                  \\
      return __VA_ARGS__();              \\
    }                                    \\
    using T = float;                     \\
    return __VA_ARGS__();                \\
  }()

void scale(tvm::ffi::TensorView src, tvm::ffi::TensorView dst, tvm::ffi::TensorView norm) {
  const int n = static_cast<int>(src.size(0));
  DISPATCH_FLOATS(src.dtype().bits == 16, T, [&] {
    scale_kernel<T><<<1, 128>>>(static_cast<const T*>(src.data_ptr()), static_cast<T*>(dst.data_ptr()),
                                static_cast<float*>(norm.data_ptr()), n);
    return true;
  });
}
"""


def test_a_launch_in_a_lambda_handed_to_a_dispatch_macro_binds_each_argument(tmp_path: Path) -> None:
    # inside a macro's arguments every cursor's expansion location is the macro's start; the
    # launch's arguments are told apart by where they are written
    model = model_of(tmp_path, DISPATCH_MACRO_LAUNCH)
    bound = {(a.argument, a.tensor) for launch in model.launches for a in launch.tensors if a.tensor[0] != "#"}
    assert bound == {(0, "src"), (1, "dst"), (2, "norm")}
    assert {launch.span.line for launch in model.launches} == {line_of(model, "scale_kernel<T><<<")}


DEDUCED_CHECK = """
namespace mini {
template <typename... Args>
struct RuntimeCheck {
  template <typename T>
  explicit RuntimeCheck(T&& condition, Args&&... args) {}
};
template <typename T, typename... Args>
explicit RuntimeCheck(T&&, Args&&...) -> RuntimeCheck<Args...>;
}  // namespace mini

template <int kBytes>
void copy_rows(tvm::ffi::TensorView out) {
  const int64_t row = out.size(1) * 4;
  mini::RuntimeCheck(row == kBytes);
  mini::RuntimeCheck(row >= kBytes, "with a message");
}
"""


def test_a_runtime_check_of_a_deduced_class_template_is_a_template_check(tmp_path: Path) -> None:
    # `RuntimeCheck(ok)` with the condition alone is a functional cast in a template, not a call
    model = model_of(tmp_path, DEDUCED_CHECK)
    checks = sorted(c.text for c in model.launcher_facts.template_checks)
    assert checks == ["row == kBytes", "row >= kBytes"]
