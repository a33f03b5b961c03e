"""Tier 1 (src/kernel_check/clang/program.py): statement and expression trees of real parses."""

from __future__ import annotations

import pytest

from kernel_check.clang.cursors import MAX_NESTING, NestedTooDeeply
from kernel_check.clang.program import DeclKind, ExprKind, StmtKind
from kernel_check.model import FunctionKind

SHAPES = """\
#include <cstdint>

__device__ int twice(int x) { return 2 * x; }

__global__ void shapes(float* dst, uint32_t n) {
  const uint32_t tid = threadIdx.x;
  if (tid < n) dst[tid] = 1.0f; else { dst[0] = 0.0f; }
  for (uint32_t i = 0; i < n; ++i) dst[i] += twice(i);
  while (n > 4) n >>= 1;
  do { n--; } while (n);
  switch (n) {
    case 1: dst[1] = 1.0f; break;
    default: break;
  }
  asm volatile("add.u32 %0, %1, 1;" : "=r"(n) : "r"(n) : "memory");
  return;
}

void host_side() {}
"""


def test_statement_tree_shape(functions_of) -> None:
    found = functions_of(SHAPES)
    kernel = found["shapes"]
    assert (kernel.kind, found["twice"].kind, found["host_side"].kind) == (
        FunctionKind.KERNEL,
        FunctionKind.DEVICE,
        FunctionKind.HOST,
    )
    assert [p.name for p in kernel.params] == ["dst", "n"]
    body = kernel.body
    assert body is not None and body.kind is StmtKind.BLOCK
    assert [s.kind for s in body.stmts] == [
        StmtKind.DECL,
        StmtKind.IF,
        StmtKind.FOR,
        StmtKind.WHILE,
        StmtKind.DO,
        StmtKind.SWITCH,
        StmtKind.ASM,
        StmtKind.RETURN,
    ]
    decl, branch, loop, while_loop, do_loop, switch, asm, _return = body.stmts
    assert [v.name for v in decl.variables] == ["tid"]
    assert branch.condition is not None and branch.condition.operator == "<"
    # an expression in a branch's place is an expression statement
    assert branch.then is not None and branch.then.kind is StmtKind.EXPR
    assert branch.orelse is not None and branch.orelse.kind is StmtKind.BLOCK
    assert loop.body is not None and loop.body.kind is StmtKind.EXPR
    assert [v.name for s in loop.stmts for v in s.variables] == ["i"]
    assert while_loop.condition is not None and while_loop.condition.operator == ">"
    assert do_loop.body is not None and do_loop.body.kind is StmtKind.BLOCK
    assert do_loop.condition is not None and do_loop.condition.stripped().name == "n"
    # a case labels one statement: the `break` after it is the block's
    assert switch.body is not None and [s.kind for s in switch.body.stmts] == [
        StmtKind.CASE,
        StmtKind.BREAK,
        StmtKind.CASE,
    ]
    assert switch.body.stmts[0].body is not None and switch.body.stmts[0].body.kind is StmtKind.EXPR
    assert asm.asm is not None and (asm.asm.template, asm.asm.clobbers, asm.asm.is_volatile) == (
        "add.u32 $0, $1, 1;",
        ("memory",),
        True,
    )  # clang spells operands the LLVM way
    assert [e.stripped().name for e in asm.exprs] == ["n", "n"]  # the operands
    assert [c.name for c in body.calls()] == ["twice"]
    assert found["host_side"].body is not None and found["host_side"].body.stmts == ()


def test_expressions_operators_types_and_folded_values(functions_of) -> None:
    found = functions_of("""\
#include <cstdint>
constexpr int kWidth = 8;
__global__ void k(int64_t* dst, uint32_t n) {
  dst[0] = -static_cast<int64_t>(n) + kWidth * 4;
}
""")
    body = found["k"].body
    assert body is not None
    (statement,) = body.stmts
    assignment = statement.exprs[0]
    assert (assignment.kind, assignment.operator) == (ExprKind.BINARY, "=")
    target, value = assignment.children
    assert target.kind is ExprKind.SUBSCRIPT
    assert (target.type.bits, target.type.is_signed, target.type.canonical) == (64, True, "long")
    assert value.stripped().operator == "+"
    negated, product = value.stripped().children
    assert (negated.kind, negated.operator) == (ExprKind.UNARY, "-")
    cast = negated.children[0].stripped()
    assert cast.kind is ExprKind.CAST
    parameter = cast.children[0].stripped()
    assert (parameter.name, parameter.type.bits, parameter.type.is_signed) == ("n", 32, False)
    assert product.stripped().value == 32 and cast.value is None
    pointer = found["k"].params[0]
    assert pointer.type.is_pointer and pointer.type.bits is None


def test_references_resolve_to_declarations(functions_of) -> None:
    found = functions_of("""\
__device__ float scale(float x) { return x; }
__device__ int scale(int x) { return x; }
__device__ float only(float x) { return x; }
template <typename T>
__device__ T generic(T x) { return scale(x); }
__global__ void k(float* dst) {
  const float local = dst[0];
  dst[1] = only(local) + scale(local);
  dst[2] = threadIdx.x;
}
""")
    body = found["k"].body
    assert body is not None
    local = body.stmts[0].variables[0]
    references = {e.name: e.ref for e in body.expressions() if e.kind is ExprKind.REF and e.ref is not None}
    assert references["local"].kind is DeclKind.VARIABLE and references["local"].key == local.key
    assert references["dst"].kind is DeclKind.PARAMETER
    assert references["only"].kind is DeclKind.FUNCTION
    calls = {c.name: c for c in body.calls()}
    (only,) = calls["only"].callees
    assert only is found["only"]  # one Function per declaration
    assert only.body is not None and only.body.stmts[0].kind is StmtKind.RETURN
    assert [f.params[0].type.spelling for f in calls["scale"].callees] == ["float"]  # the overload chosen
    generic = found["generic"].body
    assert generic is not None
    (dependent,) = generic.calls()  # a dependent call: every candidate of the overload set
    assert sorted(f.params[0].type.spelling for f in dependent.callees) == ["float", "int"]
    members = [e for e in body.expressions() if e.kind is ExprKind.MEMBER]
    assert [[c.stripped().name for c in m.children] for m in members] == [["threadIdx"]]  # `threadIdx.x`


def test_if_constexpr_resolved_when_its_condition_folds(functions_of) -> None:
    found = functions_of("""\
constexpr bool kSync = false;
template <bool kFlag>
__device__ void templated() {
  if constexpr (kFlag) { __syncthreads(); }
}
__device__ void resolved() {
  if constexpr (kSync) { __syncthreads(); } else { __threadfence(); }
  if (kSync) { __syncwarp(); }
}
""")
    resolved = found["resolved"].body
    templated = found["templated"].body
    assert resolved is not None and templated is not None
    folded, plain = resolved.stmts
    assert (folded.is_constexpr, folded.taken) == (True, False)
    assert (plain.is_constexpr, plain.taken) == (False, None)  # a plain `if` keeps both branches
    assert templated.stmts[0].is_constexpr and templated.stmts[0].taken is None  # dependent
    assert [c.name for c in resolved.calls()] == ["__threadfence", "__syncwarp"]
    assert [c.name for c in templated.calls()] == ["__syncthreads"]


def test_spans_are_the_source_positions(functions_of) -> None:
    source = "__global__ void k(int* dst) {\n  if (dst) {\n    dst[0] = 1;\n  }\n}\n"
    found = functions_of(source)
    body = found["k"].body
    assert body is not None
    branch = body.stmts[0]
    assert (branch.span.line, branch.span.column, branch.span.end_line) == (2, 3, 4)
    assert branch.condition is not None
    assert source.encode()[branch.condition.span.start : branch.condition.span.end] == b"dst"
    (assignment,) = branch.then.stmts if branch.then is not None else ()
    assert (assignment.span.line, assignment.span.column) == (3, 5)


def test_bodies_are_built_only_when_read(functions_of) -> None:
    found = functions_of("__device__ int f(int x) { return x + 1; }\n")
    function = found["f"]
    assert "body" not in function.__dict__  # nothing read yet
    assert function.body is function.body  # built once


def test_deep_nesting_is_reported_not_a_recursion_error(functions_of) -> None:
    terms = " + ".join(["1"] * (MAX_NESTING + 10))
    found = functions_of(f"__device__ int f() {{ return {terms}; }}\n")
    with pytest.raises(NestedTooDeeply):
        _ = found["f"].body


def test_declaration_facts_of_references_and_variables(functions_of) -> None:
    found = functions_of("""\
#include <cstdint>
#include <cuda_runtime.h>
const int kGlobal = 4;
struct Shape {
  Shape(int n) : n(n) {}
  int64_t size(int i) const { return n * i; }
  int n;
};
template <typename T>
__device__ int twice(T x) { return T::kSize * sizeof(T); }
void host(int64_t* out) {
  int device = 0;
  cudaGetDevice(&device);
  const Shape shape(kGlobal);
  uint32_t table[4] = {1, 2, 3, 4};
  unsigned* row = table;
  auto add = [](int a, int64_t b) { return a + b; };
  out[0] = shape.size(device) + add(table[0], *row);
}
""")
    body = found["host"].body
    assert body is not None
    calls = {c.name: c for c in body.calls()}
    c_api = calls["cudaGetDevice"]
    callee = c_api.ref
    assert (callee.has_c_linkage, callee.result_type, callee.file.endswith(".h")) == (True, "cudaError_t", True)
    assert [a.operator for a in c_api.arguments] == ["&"]  # the callee expression is not an argument
    size = calls["size"]
    assert (size.ref.is_method, size.ref.owner, size.ref.has_c_linkage) == (True, "Shape", False)
    assert [a.stripped().name for a in size.arguments] == ["device"]
    construction = next(e for e in body.expressions() if e.kind is ExprKind.CALL and e.name == "Shape")
    assert construction.ref.is_constructor and [a.stripped().name for a in construction.arguments] == ["kGlobal"]
    refs = {e.name: e.ref for e in body.expressions() if e.kind is ExprKind.REF and e.ref is not None}
    assert (refs["kGlobal"].is_const, refs["kGlobal"].is_local, refs["kGlobal"].type.bits) == (True, False, 32)
    assert (refs["device"].is_const, refs["device"].is_local, refs["device"].owner) == (False, True, "host")
    variables = {v.name: v for s in body.walk() for v in s.variables}
    table, row = variables["table"], variables["row"]
    assert (table.declarator, table.element_type.bits, table.element_type.is_signed) == ("array", 32, False)
    assert (row.declarator, row.element_type.bits) == ("pointer", 32)
    source = found["program"].path
    assert (table.name_file, table.name_offset) == (source, table.span.start + len("uint32_t "))
    lambda_ = next(e for e in body.expressions() if e.kind is ExprKind.LAMBDA)
    assert [(p.name, p.type.bits) for p in lambda_.lambda_params] == [("a", 32), ("b", 64)]
    assert lambda_.lambda_body is not None and lambda_.lambda_body.stmts[0].kind is StmtKind.RETURN
    generic = found["twice"].body
    assert generic is not None
    product = generic.stmts[0].exprs[0].stripped()  # dependent: operand, `operator*`, operand
    member, size_query = (product.children[0].stripped(), product.children[2].stripped())
    assert (member.ref, member.names_type_member, size_query.is_size_query) == (None, True, True)
    assert not product.is_size_query and not lambda_.names_type_member


INTERFACE_FACTS = """\
#include <stdexcept>
namespace ns {
struct Pair { Pair(int a, int b) : a(a), b(b) {} int a, b; };
enum class Status { ok, bad };
Status probe(int);
Status probe(float);
}  // namespace ns
template <typename T>
ns::Status dependent(T x) { return ns::probe(x); }
int host_side(const float* p, int n, ns::Status s) {
  auto a = static_cast<const void*>(p);
  auto b = reinterpret_cast<const int*>(p);
  auto c = (const int*)p;
  auto d = const_cast<float*>(p);
  auto e = ns::Pair(n, 2);
  auto f = [&](int x) { return x + n; };
  if (n < 0) throw std::runtime_error("negative");
  return f(n) + int(s == ns::Status::ok) + e.a + int(ns::probe(1.0f));
}
"""


def test_facts_read_on_demand_for_the_interface_walk(functions_of) -> None:
    found = functions_of(INTERFACE_FACTS)
    host = found["host_side"].body
    assert host is not None
    exprs = list(host.expressions())
    casts = [e.cast_kind for e in exprs if e.kind is ExprKind.CAST]
    assert casts == ["static", "reinterpret", "c_style", "const", "functional", "functional", "functional"]
    assert all(e.cast_kind == "" for e in exprs if e.kind is not ExprKind.CAST)
    assert [e.is_throw for e in exprs].count(True) == 1
    constructions = [e.name for e in exprs if e.is_construction]
    assert constructions == ["Pair", "runtime_error"]
    probe = next(e for e in exprs if e.kind is ExprKind.CALL and e.name == "probe")
    assert not probe.is_construction and probe.is_arithmetic  # an enum
    assert probe.ref is not None and probe.ref.qualified_name == "ns::probe"
    pointer = next(e for e in exprs if e.kind is ExprKind.REF and e.name == "p")
    assert not pointer.is_arithmetic and pointer.ref is not None
    assert (pointer.ref.type.spelling, pointer.ref.type.is_pointer) == ("const float *", True)
    assert probe.candidate_result_types == ()  # its type is known
    (lambda_,) = (e for e in exprs if e.kind is ExprKind.LAMBDA)
    assert lambda_.children == () and lambda_.lambda_body is not None
    (returned,) = lambda_.lambda_body.stmts
    assert returned.kind is StmtKind.RETURN and returned.exprs[0].operator == "+"
    assert probe.lambda_body is None
    dependent = found["dependent"].body
    assert dependent is not None
    (call,) = dependent.calls()
    assert {t.canonical for t in call.candidate_result_types} == {"ns::Status"}  # both overloads'
    assert call.children[0].stripped().ref is not None
    assert call.children[0].stripped().ref.qualified_name == ""  # an overload set names no one function


def test_an_else_if_chain_is_a_sequence_not_nesting(functions_of) -> None:
    links = MAX_NESTING + 20  # as generated dispatch code writes them
    chain = " else ".join(f"if (n == {i}) return {i};" for i in range(links))
    found = functions_of(f"int pick(int n) {{ {chain} else return -1; }}\n")
    body = found["pick"].body
    assert body is not None
    (head,) = body.stmts
    seen = []
    node = head
    while node is not None and node.kind is StmtKind.IF:
        assert node.condition is not None and node.then is not None and node.then.kind is StmtKind.RETURN
        seen.append(node.condition.children[1].value)
        node = node.orelse
    assert seen == list(range(links))
    assert node is not None and node.kind is StmtKind.RETURN  # the final `else`
    deep = " ".join(f"if (n > {i}) {{" for i in range(MAX_NESTING)) + "return 1;" + "}" * MAX_NESTING
    with pytest.raises(NestedTooDeeply):  # real nesting still stops at the limit
        _ = functions_of(f"int nest(int n) {{ {deep} return 0; }}\n")["nest"].body


def test_facts_the_pointer_access_walk_reads(functions_of) -> None:
    source = """\
#include <cstdint>
struct Counter {
  __device__ void inc(int v) { value += v; }
  __device__ int get() const { return value; }
  int value;
};
template <typename Trait, typename T>
__device__ void f(T* dst, const float& ref, Counter* counters, int n) {
  Counter local(counters[0]);
  auto twice = [&](int i) { dst[i] = i; };
  twice(sizeof(T));
  counters[0].inc(1);
  Trait::template forward<T>(dst);
  asm volatile("st.global.u32 [%1], %0;" : "=r"(n) : "l"(dst), "r"(n));
}
"""
    found = functions_of(source)
    f = found["f"]
    body = f.body
    assert body is not None
    dst, ref, _counters, n = f.params
    assert (dst.is_reference, ref.is_reference, ref.canonical_kind, dst.canonical_kind) == (
        False,
        True,
        "LValueReference",
        "Pointer",
    )
    local_decl, lambda_decl, call, method_call, trait_call, asm = body.stmts
    (local,) = local_decl.variables
    assert local.canonical_kind == "Record" and local.file == found["program"].path
    assert source.encode()[local.name_offset : local.name_offset + 5] == b"local"
    (closure,) = [e for e in lambda_decl.variables[0].exprs[0].walk() if e.kind is ExprKind.LAMBDA]
    assert [p.name for p in closure.lambda_params] == ["i"]
    assert closure.lambda_body is not None and closure.lambda_body.stmts[0].kind is StmtKind.EXPR
    unevaluated = [e for e in call.expressions() if e.is_unevaluated]
    assert (
        len(unevaluated) == 1 and source.encode()[unevaluated[0].span.start : unevaluated[0].span.end] == b"sizeof(T)"
    )
    construct = local.exprs[0].stripped()
    assert construct.kind is ExprKind.CALL and construct.ref is not None and construct.ref.is_constructor
    member = method_call.exprs[0].children[0].stripped()
    assert member.kind is ExprKind.MEMBER and member.ref is not None and member.ref.is_mutating_method
    (inc,) = member.children[0].record_methods("inc") or ()
    assert [p.name for p in inc.params] == ["v"] and inc.parent_name == "Counter"
    assert (ref.pointee_is_const, dst.pointee_is_const, n.pointee_is_const) == (True, False, False)
    assert [g.name for g in member.children[0].record_methods("get") or ()] == ["get"]
    assert dst.type.is_pointer and member.children[0].record_methods("missing") == ()
    callee = trait_call.exprs[0].children[0].stripped()
    assert callee.qualifier is not None and callee.qualifier.kind is DeclKind.TEMPLATE_PARAMETER
    assert callee.names_type_parameter and not member.names_type_parameter
    assert construct.part_count == 1  # `local(counters[0])`: one argument, no written type
    assert trait_call.exprs[0].children[0].part_count > len(trait_call.exprs[0].children[0].children)  # `Trait::`
    assert [e.stripped().name for e in asm.asm_outputs] == ["n"] and len(asm.exprs) == 3


def test_lambdas_candidates_designators_tokens_and_definitions(functions_of) -> None:
    found = functions_of("""\
struct Config { int use_pdl; int blocks; };
inline int configure(Config c) { return c.use_pdl + c.blocks; }
template <typename T> T pick(T x) { return x; }
template <typename T> T pick(T x, T y) { return y; }
int declared_only(int x);
template <typename T>
T generic(T x) { return pick<T>(x); }
int host(int n) {
  auto twice = [&](int k) { return 2 * k + n; };
  return twice(n) + configure({.use_pdl = 1, .blocks = n}) + declared_only(n);
}
""")
    program, body = found["program"], found["host"].body
    assert body is not None
    lam = next(e for e in body.expressions() if e.kind is ExprKind.LAMBDA)
    assert not lam.children and [p.name for p in lam.lambda_params] == ["k"]
    assert lam.lambda_body is not None and lam.lambda_body.stmts[0].kind is StmtKind.RETURN
    # the lambda's body refers to its own parameter: the same key
    inner = [e for e in lam.lambda_body.expressions() if e.kind is ExprKind.REF and e.name == "k"]
    assert inner and inner[0].ref is not None and inner[0].ref.key == lam.lambda_params[0].key
    assert body.stmts[0].variables[0].exprs[0].stripped().lambda_body is not None
    designated = {e.designator: e.children[0].stripped() for e in body.expressions() if e.designator}
    assert set(designated) == {"use_pdl", "blocks"} and designated["use_pdl"].value == 1
    twice = next(c for c in body.calls() if c.name == "twice" or c.children[0].stripped().name == "twice")
    assert [t.spelling for t in twice.tokens] == ["twice", "(", "n", ")"]
    assert {t.file for t in twice.tokens} == {program.path}
    assert [t.start - twice.span.start for t in twice.tokens] == [0, 5, 6, 7]  # byte offsets in the file
    generic = found["generic"].body
    assert generic is not None
    (call,) = generic.calls()
    callee = call.children[0].stripped()
    assert sorted(c.name for c in callee.candidates) == ["pick", "pick"]  # a dependent name: every candidate
    assert all(not e.candidates for e in body.expressions())  # names clang resolved
    calls = {c.name: c for c in body.calls()}
    assert program.definition(calls["configure"].ref) is found["configure"]
    assert program.definition(calls["declared_only"].ref) is None  # no body in sight
    assert program.definition(inner[0].ref) is None  # not a function: the lambda's parameter
