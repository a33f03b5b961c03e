"""What src/kernel_check/clang/index_values.py and scope_facts.py extract, pinned on small real sources
(parsed hermetically against the bundled include/sgl_kernel headers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel_check.clang.cursors import MacroRanges, in_file
from kernel_check.clang.extract import extract
from kernel_check.clang.index_values import extract_index_values
from kernel_check.clang.parse import parse_file, resolve_settings
from kernel_check.clang.program import Program, code_declarations
from kernel_check.clang.scope_facts import extract_scope_facts
from kernel_check.model import IntegerDecl, IntegerDeclKind, SourceModel, apply_const_op

PRELUDE = """\
#include <sgl_kernel/tensor.h>
#include <sgl_kernel/utils.cuh>
#include <cstdint>
"""


@pytest.fixture(scope="module")
def settings():
    return resolve_settings("hermetic")


@pytest.fixture
def model_of(tmp_path: Path, settings):
    def build(body: str, prelude: str = PRELUDE) -> SourceModel:
        path = tmp_path / "probe.cuh"
        text = prelude + body
        path.write_text(text)
        unit = parse_file(path, text, settings)
        assert not unit.errors, [e.message for e in unit.errors]
        return extract(unit, text, text.encode())

    return build


def decls(model: SourceModel) -> dict[str, IntegerDecl]:
    return {d.name: d for d in model.integer_facts.integer_decls}


# ---- integer declarations -------------------------------------------------------------------


def test_only_builtin_keyword_spellings_are_recorded(model_of) -> None:
    model = model_of("""
namespace sglang {
template <typename T, int kN>
__global__ void k(T* p, int a, unsigned b, long long c, unsigned long int d, int32_t e, size_t f,
                  short g, char h, T t) {
  auto i = a;
  const uint32_t j = b;
}
}
""")
    found = decls(model)
    assert {n: d.keywords for n, d in found.items()} == {
        "a": "int",
        "b": "unsigned",
        "c": "long long",
        "d": "unsigned long int",
    }
    assert all(d.kind is IntegerDeclKind.PARAM and d.owner == "sglang::k" for d in found.values())


def test_keyword_span_and_declarators(model_of) -> None:
    model = model_of("""
namespace sglang {
struct RowParams {
  const int* __restrict__ ids;
  unsigned counts[4];
  int64_t stride;
};
inline void f(const int& ref) {
  int a = 1, b = 2;
}
}
""")
    found = decls(model)
    assert found["ids"].kind is IntegerDeclKind.FIELD and found["ids"].owner == "sglang::RowParams"
    assert found["ids"].declarator == "pointer"
    assert found["counts"].declarator == "array"
    assert found["ref"].declarator == "reference"
    line = model.line_text(found["ids"].span.line)
    assert line[found["ids"].span.column - 1 : found["ids"].span.end_column - 1] == "int"
    assert found["a"].span == found["b"].span  # `b` shares the type written before `a`
    assert "stride" not in found


def test_exemption_facts(model_of) -> None:
    model = model_of("""
namespace sglang {
template <int kVecN>
__global__ void k(float* p, uint32_t n) {
  for (int i = 0; i < kVecN; ++i) p[i] = 0.0f;
  for (int j = 0; j < 4 * kVecN; ++j) p[j] = 0.0f;
  for (int r = threadIdx.x; r < n; r += blockDim.x) p[r] = 0.0f;
  constexpr int kTile = 8;
  const int kHalf = kTile / 2;
  const int runtime = static_cast<int>(n);
}
inline void host_side() {
  int device;
  CHECK_CUDA(cudaGetDevice(&device));
  int status = atoi("1");
}
}
""")
    found = decls(model)
    assert found["i"].loop_bound_constant is True
    assert found["j"].loop_bound_constant is True
    assert found["r"].loop_bound_constant is False
    assert found["kTile"].is_constexpr
    assert found["kHalf"].has_constant_init and not found["kHalf"].is_constexpr
    assert not found["runtime"].has_constant_init
    assert found["device"].c_api == "cudaGetDevice"
    assert found["status"].c_api == "atoi"


def test_shape_source_lambdas_macros_and_main(model_of) -> None:
    model = model_of("""
#define DECLARE_COUNTER(name) int name = 0;
namespace sglang {
inline void launch(tvm::ffi::TensorView x) {
  int rows = x.size(0);
  auto pick = [](int groups) { return groups; };
  DECLARE_COUNTER(counter)
  (void)pick(rows + counter);
}
}
int main() { int argc_like = 0; return argc_like; }
""")
    found = decls(model)
    assert found["rows"].shape_source == "x.size(0)"
    assert found["groups"].in_lambda and found["groups"].owner == "sglang::launch"
    assert "counter" not in found  # written by the macro, not here
    assert "argc_like" not in found


# ---- narrowing of shapes -------------------------------------------------------------------


def test_size_narrowings_and_their_contexts(model_of) -> None:
    model = model_of("""
namespace sglang {
inline uint32_t take(uint32_t v) { return v; }
inline uint32_t give(host::SymbolicSize& N) { return N.unwrap(); }
inline void launch(tvm::ffi::TensorView x, host::SymbolicSize& N) {
  const uint32_t a = N.unwrap() * 2;
  uint32_t b = 0;
  b = x.stride(0);
  b += x.numel();
  take(x.shape()[1]);
  const uint32_t fine = static_cast<uint32_t>(N.unwrap());
  const int64_t wide = host::div_ceil(N.unwrap(), 4);
  const uint32_t c = wide;
  dim3 grid(wide);
}
}
""")
    facts = [(n.context, n.target, n.source) for n in model.integer_facts.size_narrowings]
    assert facts == [
        ("return", "", "N.unwrap()"),
        ("initialization", "a", "N.unwrap()"),
        ("assignment", "b", "x.stride(0)"),
        ("compound assignment", "b", "x.numel()"),
        ("argument", "", "x.shape()[1]"),
        ("initialization", "c", "N.unwrap()"),
    ]
    narrowed_a = next(n for n in model.integer_facts.size_narrowings if n.target == "a")
    assert narrowed_a.source_type == "int64_t" and narrowed_a.target_type == "const uint32_t"
    assert model.data[narrowed_a.target_offset : narrowed_a.target_offset + 1] == b"a"


def test_kernel_sizes_are_shape_values_and_launch_arguments(model_of) -> None:
    model = model_of("""
namespace sglang {
struct P { int64_t rows; const float* __restrict__ src; };
__global__ void k(const __grid_constant__ P p, int64_t n, uint32_t m) {
  const uint32_t rows = p.rows;
  const uint32_t count = n;
}
inline void launch(host::SymbolicSize& N, DLDevice device) {
  const int64_t n = N.unwrap();
  host::LaunchKernel(1, 32, device)(k, P{n, nullptr}, n, static_cast<uint32_t>(n));
}
}
""")
    assert [(n.target, n.source) for n in model.integer_facts.size_narrowings] == [("rows", "p.rows"), ("count", "n")]
    assert [(a.text, a.source) for a in model.integer_facts.shape_arguments] == [("n", "N.unwrap()")]


# ---- 32-bit index products -------------------------------------------------------------------


def test_index_products(model_of) -> None:
    model = model_of("""
namespace sglang {
template <uint32_t kBlock>
__global__ void k(float* p, uint32_t heads, int64_t n) {
  const int64_t a = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t b = blockIdx.y * heads * kBlock;
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x;
  const int64_t d = (blockIdx.x * kBlock) * n;
  const uint32_t e = threadIdx.x * 4;
  const uint32_t bid = blockIdx.x;
  const uint32_t f = bid * heads;
  const uint32_t g = gridDim.x * blockDim.x;
  if ((blockIdx.x * blockDim.x + threadIdx.x) / 32 < n) p[0] = 0.0f;
  p[static_cast<size_t>(blockIdx.x * heads)] = 1.0f;
  p[static_cast<uint32_t>(blockIdx.x * heads) + 1u] = 2.0f;
}
}
""")
    products = [
        (x.text, x.builtins, x.constant_factors, x.value_factors, x.widened) for x in model.integer_facts.index_products
    ]
    assert products == [
        ("blockIdx.x * blockDim.x", ("blockIdx.x", "blockDim.x"), 0, (), True),
        ("blockIdx.y * heads * kBlock", ("blockIdx.y",), 1, ("heads",), False),
        ("blockIdx.x * kBlock", ("blockIdx.x",), 1, (), True),
        ("bid * heads", ("blockIdx.x",), 0, ("heads",), False),
        ("gridDim.x * blockDim.x", ("gridDim.x", "blockDim.x"), 0, (), False),
        ("blockIdx.x * blockDim.x", ("blockIdx.x", "blockDim.x"), 0, (), True),
        ("blockIdx.x * heads", ("blockIdx.x",), 0, ("heads",), True),
        ("blockIdx.x * heads", ("blockIdx.x",), 0, ("heads",), False),
    ]
    assert all(x.function_usr == model.kernels[0].usr for x in model.integer_facts.index_products)


# ---- lane modulo -----------------------------------------------------------------------------


def test_lane_modulo_and_its_address_uses(model_of) -> None:
    model = model_of("""
namespace sglang {
__global__ void k(float* __restrict__ p, const float* __restrict__ q) {
  const uint32_t lane = threadIdx.x % device::kWarpThreads;
  const uint32_t idx = lane * 4 + 1;
  p[idx] = q[0];
  const float* r = q + (threadIdx.x & 63);
  const uint32_t group = threadIdx.x % 128;
  if (group == 0) p[0] = *r;
  const uint32_t quad = threadIdx.x % 4;
  p[quad] = device::load_as<float>(q, threadIdx.x % 32);
}
}
""")
    lanes = [(m.text, m.width, m.address_kind, m.via) for m in model.integer_facts.lane_modulos]
    assert lanes == [
        ("threadIdx.x % device::kWarpThreads", 32, "subscript", "idx"),
        ("threadIdx.x & 63", 64, "pointer arithmetic", ""),
        ("threadIdx.x % 128", 128, "", ""),
        ("threadIdx.x % 32", 32, "load/store offset", ""),
    ]


def test_constant_widths_fold_with_cpp_division(model_of) -> None:
    """A width computed by a constant expression folds the way C++ computes it: `(0 - 65) / 2`
    is -32 (division truncates toward zero), so `0 - (0 - 65) / 2` is a warp of 32, not 33."""
    model = model_of("""
namespace sglang {
constexpr uint32_t kLanes = 0 - (0 - 65) / 2;
__global__ void k(float* __restrict__ p) {
  p[threadIdx.x % kLanes] = 0.0f;
}
}
""")
    assert [(m.text, m.width) for m in model.integer_facts.lane_modulos] == [("threadIdx.x % kLanes", 32)]


def test_constant_operators_follow_cpp_semantics() -> None:
    assert [apply_const_op("/", [-7, 2]), apply_const_op("%", [-7, 2]), apply_const_op("/", [7, -2])] == [-3, -1, -3]
    big = 2**62 + 1  # past a double's 53-bit mantissa: the quotient must stay exact
    assert apply_const_op("/", [big, 3]) == big // 3
    assert [apply_const_op("/", [1, 0]), apply_const_op("%", [1, 0]), apply_const_op("<<", [1, 64])] == [None] * 3


# ---- scope facts -----------------------------------------------------------------------------


def test_global_declarations(model_of) -> None:
    model = model_of("""
#define MAKE_FN(name) inline int name() { return 0; }
static_assert(sizeof(int) == 4, "int");
__global__ void stray(float* p) {}
namespace sglang { struct Key { int64_t v; int64_t get() const; }; }
int64_t sglang::Key::get() const { return v; }
namespace std { inline int kc_extra() { return 1; } }
namespace helpers {}
namespace {}
using namespace sglang;
MAKE_FN(made)
""")
    found = [(g.kind, g.name, g.macro, g.redeclares_external) for g in model.scope_facts.global_declarations]
    assert found == [
        ("static_assert", "", "", False),
        ("function", "stray", "", False),
        ("namespace", "sglang", "", True),
        ("namespace", "std", "", True),
        ("namespace", "helpers", "", False),
        ("namespace", "", "", False),
        ("using", "", "", False),
        ("function", "made", "MAKE_FN", False),
    ]
    assert any(p.endswith("sgl_kernel/utils.h") for p in model.scope_facts.included_files)


def test_details_references(model_of) -> None:
    model = model_of("""
namespace sglang {
namespace details { inline int own() { return 1; } }
inline int uses() { return details::own(); }
template <typename T> std::string dependent(const T& t) { return host::details::concat(t); }
inline std::string direct() { return host::details::concat(1); }
using namespace details;
}
""")
    refs = [
        (
            r.namespace,
            r.target,
            Path(r.target_path).name if r.target_path else "",
            r.is_using_directive,
            r.namespace_opened_here,
        )
        for r in model.scope_facts.details_references
    ]
    assert refs == [
        ("sglang::details", "sglang::details::own", "probe.cuh", False, True),
        ("sglang::host::details", "sglang::host::details::concat", "utils.h", False, False),
        ("sglang::host::details", "sglang::host::details::concat", "utils.h", False, False),
        ("sglang::details", "", "", True, True),
    ]


def test_pathologically_deep_expressions_do_not_break_the_walk(tmp_path: Path, settings) -> None:
    """Called directly: a body nested deeper than tier 1 builds is left out (its facts lost,
    none made up) and the declarations around it keep theirs; the scope facts' own walk
    stops at its cap. (Through extract(), other passes report the file as too deep.)"""
    terms = " + ".join(f"v{i}" for i in range(600))
    params = ", ".join(f"uint32_t v{i}" for i in range(600))
    text = (
        PRELUDE
        + f"""
namespace sglang {{
__global__ void k(float* p, int m, {params}) {{
  int tail = 0;
  p[blockIdx.x * ({terms})] = 0.0f;
}}
__global__ void shallow(int rows) {{
  int head = 0;
}}
}}
"""
    )
    path = tmp_path / "deep.cuh"
    path.write_text(text)
    unit = parse_file(path, text, settings)
    top_level = [c for c in unit.tu.cursor.get_children() if in_file(c, str(path))]
    model = SourceModel(path=str(path), text=text, data=text.encode())
    declarations = code_declarations(top_level)
    extract_index_values(Program(str(path)), declarations, MacroRanges(top_level), text.encode(), model)
    assert sorted(decls(model)) == ["head", "m", "rows"]
    extract_scope_facts(top_level, unit, model)
    assert [g.name for g in model.scope_facts.global_declarations] == ["sglang"]
