"""What src/kernel_check/clang/pointer_accesses.py extracts from small real sources (hermetic parse)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel_check.clang.extract import extract
from kernel_check.clang.parse import parse_file, resolve_settings
from kernel_check.model import AccessKind, FunctionDataflow, PdlCallKind, SourceModel

PRELUDE = """
#include <sgl_kernel/atomic.cuh>
#include <sgl_kernel/tile.cuh>
#include <sgl_kernel/utils.cuh>
#include <sgl_kernel/vec.cuh>
#include <sgl_kernel/warp.cuh>
#include <cstdint>
namespace sglang {
"""


def build(tmp_path: Path, body: str, *, prelude: bool = True) -> SourceModel:
    text = (PRELUDE + body + "\n}  // namespace sglang\n") if prelude else body
    path = tmp_path / "subject.cuh"
    path.write_text(text)
    return extract(parse_file(path, text, resolve_settings("hermetic")), text, text.encode())


def flow(model: SourceModel, name: str) -> FunctionDataflow:
    return next(f for f in model.dataflow_facts.functions if f.qualified_name.split("::")[-1] == name)


def events(model: SourceModel, name: str) -> list[tuple]:
    """(kind, root-or-via, source line offset from the function's first line) in order."""
    facts = flow(model, name)
    first = facts.body.line
    items = [(c.order, c.kind.value, c.via, c.span.line - first) for c in facts.pdl_calls]
    items += [(a.order, a.kind.value, a.root, a.span.line - first) for a in facts.accesses]
    placed = sorted((i for i in items if i[0] is not None), key=lambda i: i[0])
    return [i[1:] for i in placed] + [i[1:] for i in items if i[0] is None]


def test_reads_through_every_loader_are_ordered_against_the_wait(tmp_path: Path) -> None:
    model = build(
        tmp_path,
        """
template <typename T, int kN, bool kUsePDL>
__global__ void k(T* __restrict__ dst, const T* __restrict__ src, uint32_t n) {
  device::AlignedVector<T, kN> v;
  v.load(src, 1);
  const T a = __ldg(src) + *device::pointer::offset(src, n);
  const auto row = device::warp::load_bytes<64>(src);
  device::PDLWaitPrimary<kUsePDL>();
  dst[0] = a + src[2];
}
""",
    )
    assert events(model, "k") == [
        ("read", "src", 2),
        ("read", "src", 3),
        ("read", "src", 3),
        ("read", "src", 4),
        ("wait", "PDLWaitPrimary", 5),
        ("read", "src", 6),
        ("write", "dst", 6),
    ]
    wait = flow(model, "k").pdl_calls[0]
    assert (wait.flag, wait.leads_body) == ("kUsePDL", False)


def test_params_struct_fields_scalars_and_pointer_arrays(tmp_path: Path) -> None:
    model = build(
        tmp_path,
        """
template <typename T> struct Params { const T* src; T* dst; const T* parts[2]; uint32_t n; float eps; };
template <typename T>
__global__ void k(const __grid_constant__ Params<T> p) {
  const uint32_t n = p.n;
  const float e = p.eps;
  const T* part = p.parts[1];
  const T* q = p.src + n;
  const auto& alias = p;
  p.dst[0] = part[0] + q[0] + alias.src[1] + static_cast<T>(e);
}
""",
    )
    assert events(model, "k") == [  # the right-hand side is evaluated before the store
        ("read", "p.parts", 6),
        ("read", "p.src", 6),
        ("read", "p.src", 6),
        ("write", "p.dst", 6),
    ]


def test_shared_memory_locals_and_addresses_are_not_reads(tmp_path: Path) -> None:
    model = build(
        tmp_path,
        """
__global__ void k(float* __restrict__ out, const float* __restrict__ in, float s) {
  __shared__ float smem[32];
  float local[2] = {s, s};
  smem[threadIdx.x] = local[1];
  const float* address = &in[threadIdx.x];
  const size_t bytes = sizeof(in[0]);
  out[0] = smem[0] + static_cast<float>(bytes) + (address != nullptr);
}
""",
    )
    assert events(model, "k") == [("write", "out", 6)]
    assert flow(model, "k").referenced_params == frozenset({"out", "in", "s"})


def test_loop_parts_run_in_execution_order(tmp_path: Path) -> None:
    model = build(
        tmp_path,
        """
__global__ void k(float* dst, const float* src, int n) {
  int i = 0;
  do {
    dst[i] = 0.0f;
  } while (src[i++] > 0.0f);
  for (int j = static_cast<int>(src[0]);
       j < src[1];
       j += static_cast<int>(src[2])) {
    dst[j] = 1.0f;
  }
  auto put = [&](int a, int b, int m) { dst[m + a + b] = 2.0f; };
  put(0, 1, 2);
}
""",
    )
    # a `do` body before its condition; a `for`'s init, condition and increment before its body
    assert events(model, "k") == [
        ("write", "dst", 3),
        ("read", "src", 4),
        ("read", "src", 5),
        ("read", "src", 6),
        ("read", "src", 7),
        ("write", "dst", 8),
        ("write", "dst", 10),
    ]
    assert flow(model, "k").referenced_params == frozenset({"dst", "src"})  # the lambda's third is not `n`


def test_device_function_summaries_map_reads_writes_and_returns(tmp_path: Path) -> None:
    model = build(
        tmp_path,
        """
SGL_DEVICE float sum2(const float* p) { return p[0] + p[1]; }
SGL_DEVICE void put(float* q, float v) { *q = v; }
SGL_DEVICE const float* row(const float* base, uint32_t i) { return base + i; }
SGL_DEVICE float recurse(const float* p, uint32_t n) { return n == 0 ? p[0] : recurse(p, n - 1); }
__global__ void k(float* out, const float* in) {
  const float* r = row(in, 3);
  put(out, sum2(r));
  out[1] = recurse(in, 4);
}
""",
    )
    assert events(model, "sum2") == [("read", "p", 0), ("read", "p", 0)]
    assert events(model, "put") == [("write", "q", 0)]
    assert events(model, "k") == [
        ("read", "in", 2),
        ("write", "out", 2),
        ("read", "in", 3),
        ("write", "out", 3),
    ]
    how = {a.how for a in flow(model, "k").accesses}
    assert {"sum2()", "put()"} <= how


def test_lambdas_are_placed_where_they_run(tmp_path: Path) -> None:
    model = build(
        tmp_path,
        """
template <bool kUsePDL>
__global__ void k(float* __restrict__ out, const float* __restrict__ in) {
  auto later = [&](uint32_t i) { return in[i]; };
  auto now = [in](uint32_t i) { return in[i]; };
  auto stored = [&] { out[3] = in[3]; };
  const float a = now(0);
  device::PDLWaitPrimary<kUsePDL>();
  out[0] = later(1) + a;
  [&] { out[2] = in[2]; }();
  (void)stored;
}
""",
    )
    assert events(model, "k") == [  # `stored` never runs where we can see: no order
        ("read", "in", 2),
        ("wait", "PDLWaitPrimary", 5),
        ("read", "in", 1),
        ("write", "out", 6),
        ("read", "in", 7),
        ("write", "out", 7),
        ("read", "in", 3),
        ("write", "out", 3),
    ]
    unplaced = [a for a in flow(model, "k").accesses if a.order is None]
    assert {a.kind for a in unplaced} == {AccessKind.WRITE, AccessKind.READ}


def test_pdl_spellings_helpers_and_leading_wait(tmp_path: Path) -> None:
    model = build(
        tmp_path,
        """
template <bool kOn> SGL_DEVICE void wait_first() { device::PDLWaitPrimary<kOn>(); }
template <bool kUsePDL>
__global__ void k(float* __restrict__ out) {
  using T = float;
  static_assert(sizeof(T) == 4, "");
  constexpr uint32_t kN = 4;
  wait_first<kUsePDL>();
  asm volatile("griddepcontrol.launch_dependents;");
  out[0] = kN;
}
__global__ void raw(float* out) {
  out[0] = 1.0f;
  asm volatile("griddepcontrol.wait;");
}
""",
    )
    calls = flow(model, "k").pdl_calls
    assert [(c.kind, c.via, c.leads_body) for c in calls] == [
        (PdlCallKind.WAIT, "wait_first()", True),
        (PdlCallKind.TRIGGER, "asm", False),
    ]
    raw = flow(model, "raw").pdl_calls
    assert [(c.kind, c.via, c.flag, c.leads_body) for c in raw] == [(PdlCallKind.WAIT, "asm", "", False)]
    asm = [(a.template, a.clobbers, a.function.split("::")[-1]) for a in model.dataflow_facts.inline_asm]
    assert ("griddepcontrol.wait;", (), "raw") in asm


def test_writes_escapes_and_element_references(tmp_path: Path) -> None:
    model = build(
        tmp_path,
        """
SGL_DEVICE void opaque(float* p);
__global__ void k(float* a, float* b, float* c, float* d, void* e, float* f, float* g) {
  a[0] += 1.0f;
  atomicAdd(b, 1.0f);
  opaque(c);
  float& ref = d[2];
  ref = 3.0f;
  static_cast<float*>(e)[0] = 4.0f;
  device::atomic::max(f, 5.0f);
  float* copies[1] = {g};
  copies[0][0] = 6.0f;
}
""",
    )
    kinds = {(a.root, a.kind) for a in flow(model, "k").accesses}
    assert {
        ("a", AccessKind.READ),
        ("a", AccessKind.WRITE),
        ("b", AccessKind.WRITE),
        ("c", AccessKind.ESCAPE),
        ("d", AccessKind.WRITE),
        ("e", AccessKind.WRITE),
        ("f", AccessKind.WRITE),
        ("g", AccessKind.ESCAPE),
    } <= kinds
    assert ("d", AccessKind.READ) not in kinds  # binding the reference touches nothing


def test_inline_asm_operands_and_clobbers(tmp_path: Path) -> None:
    model = build(
        tmp_path,
        """
__global__ void k(float* out, const float* in) {
  float x;
  asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(x) : "l"(in));
  asm volatile("st.global.f32 [%0], %1;" :: "l"(out), "f"(x) : "memory");
}
""",
    )
    assert [(a.root, a.kind.value, a.how) for a in flow(model, "k").accesses] == [
        ("in", "read", "asm"),
        ("out", "write", "asm"),
    ]
    assert [a.clobbers for a in model.dataflow_facts.inline_asm] == [(), ("memory",)]


def test_inactive_preprocessor_regions_are_recorded(tmp_path: Path) -> None:
    model = build(
        tmp_path,
        """
__global__ void k(float* out, float* dbg) {
#ifdef KC_NOT_DEFINED
  dbg[0] = 1.0f;
#endif
  out[0] = 2.0f;
}
""",
    )
    facts = flow(model, "k")
    assert len(facts.inactive_spans) == 1
    assert b"dbg[0]" in model.data[facts.inactive_spans[0].start : facts.inactive_spans[0].end]
    assert "dbg" not in facts.referenced_params


@pytest.mark.parametrize(
    "source",
    [
        "__global__ void k(float* out) { out[0] = undefined_thing(out); missing->x = 1; }\n",
        "template <typename T> __global__ void k(T* out) { out->template f<int>(); (*out)(1); }\n",
        "__global__ void k(float* out) {\n"
        "  auto f = [&](auto self, int n) -> float { return n ? self(self, n - 1) : out[0]; };\n"
        "  out[1] = f(f, 3);\n"
        "}\n",
    ],
)
def test_odd_and_broken_sources_do_not_crash(tmp_path: Path, source: str) -> None:
    model = build(tmp_path, source, prelude=False)
    assert flow(model, "k").function_usr


def test_bodiless_helpers_are_known_by_name(tmp_path: Path) -> None:
    model = build(
        tmp_path,
        """
SGL_DEVICE void __pipeline_memcpy_async(void* dst, const void* src, size_t n);
struct Loader { SGL_DEVICE void Load(const float* src, float (&items)[4]); };
__global__ void k(float* out, const float* in) {
  __shared__ float stage[32];
  float items[4];
  __pipeline_memcpy_async(stage, in + 4, 16);
  Loader{}.Load(in, items);
  __pipeline_memcpy_async(out, stage, 16);
}
""",
    )
    assert [(a.kind.value, a.root, a.how) for a in flow(model, "k").accesses] == [
        ("read", "in", "__pipeline_memcpy_async()"),
        ("read", "in", "Load()"),
        ("write", "out", "__pipeline_memcpy_async()"),
    ]


def test_launch_candidates_follow_variables_and_selections(tmp_path: Path) -> None:
    model = build(
        tmp_path,
        """
template <bool kPDL> __global__ void a_kernel(float* out) { out[0] = 1.0f; }
template <bool kPDL> __global__ void b_kernel(float* out) { out[0] = 2.0f; }
__device__ void not_a_kernel(float* out);
template <bool kUsePDL>
struct Launcher {
  static constexpr auto kernel = a_kernel<kUsePDL>;
  static void run(float* out, DLDevice device, bool wide) {
    host::LaunchKernel(1, 32, device).enable_pdl(kUsePDL)(kernel, out);
    const auto picked = [] { if constexpr (kUsePDL) { return a_kernel<true>; } else { return b_kernel<false>; } }();
    host::LaunchKernel(1, 32, device)(picked, out);
    host::LaunchKernel(1, 32, device)(wide ? a_kernel<kUsePDL> : b_kernel<kUsePDL>, out);
  }
};
""",
    )
    found = [sorted((k.name, k.template_arg_texts) for k in launch.kernels) for launch in model.launches]
    assert found == [
        [("a_kernel", ("kUsePDL",))],
        [("a_kernel", ("true",)), ("b_kernel", ("false",))],
        [("a_kernel", ("kUsePDL",)), ("b_kernel", ("kUsePDL",))],
    ]


def test_structured_bindings_name_the_fields_and_elements_they_bind(tmp_path: Path) -> None:
    """`const auto& [input, ...] = params;` reads as `params.input`; a decomposed array of
    pointers gives its elements; a copy of a struct still holds its pointers; a binding by
    reference to memory behind a pointer is an access where it is used."""
    model = build(
        tmp_path,
        """
template <typename T> struct Params { const T* src; const T* parts[2]; T* dst; uint32_t n; };
struct Pair { const float* a; float* b; };
struct Entry { int32_t row; int32_t col; };
template <typename T>
__global__ void k(const __grid_constant__ Params<T> p, const Pair q, const Entry* __restrict__ plan) {
  const auto& [src, parts, dst, n] = p;
  const auto& [first, second] = parts;
  auto [a, b] = q;
  const auto& [row, col] = plan[blockIdx.x];
  const T* shifted = src + n;
  dst[row] = shifted[0] + first[1] + static_cast<T>(a[col]);
}
""",
    )
    # nothing is read where the names are bound; `row` and `col` read `plan` where used
    assert events(model, "k") == [
        ("read", "p.src", 6),
        ("read", "p.parts", 6),
        ("read", "plan", 6),
        ("read", "q.a", 6),
        ("read", "plan", 6),
        ("write", "p.dst", 6),
    ]


def test_a_wait_inside_a_static_member_of_a_class_template_is_the_kernels(tmp_path: Path) -> None:
    """`Pdl<kUsePDL>::wait()` in a template names no function until instantiation: the class
    template's member of that name is the callee, through traits structs too."""
    model = build(
        tmp_path,
        """
template <bool kUsePDL> struct Pdl {
  static SGL_DEVICE void wait() { device::PDLWaitPrimary<kUsePDL>(); }
};
template <typename T, bool kUsePDL> struct Traits {
  static SGL_DEVICE void wait_primary() { Pdl<kUsePDL>::template wait(); }
};
template <typename T, bool kUsePDL>
__global__ void k(T* __restrict__ out, const T* __restrict__ in) {
  const T x = in[0];
  Pdl<kUsePDL>::wait();
  Traits<T, kUsePDL>::wait_primary();
  out[0] = x;
}
""",
    )
    assert events(model, "k") == [
        ("read", "in", 1),
        ("wait", "wait()", 2),
        ("wait", "wait_primary()", 3),
        ("write", "out", 4),
    ]
