"""The semantic model rules query (src/kernel_check/semantic.py) over real hermetic parses,
and the analyses a run skips when no selected rule needs them (`registry.Need`)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from conftest import FIXTURES, run_one
from kernel_check.clang.extract import extract
from kernel_check.clang.parse import parse_file, resolve_settings
from kernel_check.config import load_config
from kernel_check.engine import CacheOptions, RunOptions, RunStats, run_static
from kernel_check.filter import Selection
from kernel_check.model import FunctionKind, SourceModel
from kernel_check.registry import Language, Need, all_rules, get_rule, needs_of, rules_for
from kernel_check.semantic import SemanticModel

SOURCE = """\
#include <sgl_kernel/tensor.h>
#include <sgl_kernel/utils.cuh>
#include <sgl_kernel/vec.cuh>

#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>

#include <cstdint>

namespace sglang {

struct CopyParams {
  const float* src;
  float* dst;
  int64_t n;
};

template <typename T>
__device__ void load_row(const T* src, uint32_t i) {
  device::AlignedVector<T, 16 / sizeof(T)> v;
  v.load(src, i);
}

template <typename T>
__global__ void vec_kernel(T* dst, const T* src, uint32_t n);

template <typename T>
__global__ void vec_kernel(T* dst, const T* src, uint32_t n) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    load_row(src, i);
    dst[i] = T{};
  }
}

__global__ void copy_kernel(const CopyParams params) {
  params.dst[threadIdx.x] = params.src[threadIdx.x];
}

template <typename T>
void launch_vec(tvm::ffi::TensorView dst, tvm::ffi::TensorView src) {
  using namespace host;
  auto n = SymbolicSize{"n"};
  TensorMatcher({n}).with_device<kDLCUDA>().with_dtype<T>().verify(dst).verify(src);
  const auto count = static_cast<uint32_t>(n.unwrap());
  LaunchKernel(1, 256, dst.device())(
      vec_kernel<T>, static_cast<T*>(dst.data_ptr()), static_cast<const T*>(src.data_ptr()), count);
}

void entry(tvm::ffi::TensorView dst, tvm::ffi::TensorView src) {
  launch_vec<float>(dst, src);
}

}  // namespace sglang
"""


def _model(tmp_path: Path, needs: frozenset[Need] | None = None) -> SourceModel:
    path = tmp_path / "semantic.cuh"
    path.write_text(SOURCE)
    unit = parse_file(path, SOURCE, resolve_settings("hermetic"))
    assert not unit.errors, [e.message for e in unit.errors]
    return extract(unit, SOURCE, SOURCE.encode()) if needs is None else extract(unit, SOURCE, SOURCE.encode(), needs)


@pytest.fixture(scope="module")
def semantic(tmp_path_factory: pytest.TempPathFactory) -> SemanticModel:
    return SemanticModel(_model(tmp_path_factory.mktemp("semantic")))


def _named(model: SemanticModel, name: str) -> list:
    return [f for f in model.functions if f.name == name]


def test_function_is_the_definition_of_a_declared_then_defined_kernel(semantic: SemanticModel) -> None:
    declaration, definition = _named(semantic, "vec_kernel")
    assert declaration.body is None and definition.body is not None
    assert semantic.function(declaration.usr) is definition
    assert semantic.function("c:@no-such-usr") is None
    assert [group for group in semantic.function_groups() if group[0].name == "vec_kernel"] == [
        [declaration, definition]
    ]


def test_launches_are_indexed_by_launcher_and_by_kernel(semantic: SemanticModel) -> None:
    (launcher,) = _named(semantic, "launch_vec")
    _, kernel = _named(semantic, "vec_kernel")
    (launch,) = semantic.launches_in(launcher)
    assert [k.name for k in launch.kernels] == ["vec_kernel"]
    assert semantic.launches_of(kernel) == [(launch, launch.kernels[0])]
    assert semantic.launching_usrs == {launcher.usr}
    assert semantic.is_launcher(launcher)
    (entry,) = _named(semantic, "entry")
    assert not semantic.is_launcher(entry) and semantic.launches_in(entry) == []


def test_facts_dataflow_and_callers_belong_to_their_function(semantic: SemanticModel) -> None:
    (launcher,) = _named(semantic, "launch_vec")
    (entry,) = _named(semantic, "entry")
    facts = semantic.facts_of(launcher.usr)
    assert [v.name for chain in facts.matcher_chains for v in chain.verified] == ["dst", "src"]
    assert {use.tensor for use in facts.tensor_data_uses} == {"dst", "src"}
    assert semantic.facts_of(entry.usr).matcher_chains == []
    assert semantic.tensor_callers(launcher) == {entry.usr}
    (copy,) = _named(semantic, "copy_kernel")
    flow = semantic.dataflow(copy)
    assert flow is not None and {a.root for a in flow.accesses} == {"params.src", "params.dst"}
    declaration, _ = _named(semantic, "vec_kernel")
    assert semantic.dataflow(declaration) is None


def test_params_structs_and_vector_feeds(semantic: SemanticModel) -> None:
    (copy,) = _named(semantic, "copy_kernel")
    struct = semantic.struct_of(copy.params[0].type)
    assert struct is not None and struct.name == "CopyParams"
    assert semantic.params_struct_names() == {"sglang::CopyParams"}
    (launcher,) = _named(semantic, "launch_vec")
    feeds = semantic.vector_feeds(launcher)
    # src reaches the AlignedVector load of load_row through vec_kernel
    assert {(f.tensor, f.kernel, f.access.kind) for f in feeds} == {("src", "vec_kernel", "aligned_vector")}
    assert semantic.vector_feeds(launcher) is feeds  # asked once per launcher
    _, kernel = _named(semantic, "vec_kernel")
    assert set(semantic.vector_uses(kernel.usr)) == {(1, "")}
    assert kernel.kind is FunctionKind.KERNEL


def test_extract_runs_only_the_analyses_asked_for(tmp_path: Path) -> None:
    declarations_only = _model(tmp_path, frozenset({Need.DECLARATIONS}))
    assert {f.name for f in declarations_only.functions} >= {"vec_kernel", "launch_vec", "copy_kernel"}
    assert declarations_only.launches == []
    assert declarations_only.launcher_facts.matcher_chains == []
    assert declarations_only.dataflow_facts.functions == []
    assert declarations_only.integer_facts.index_products == []
    launches_only = _model(tmp_path, frozenset({Need.DECLARATIONS, Need.LAUNCHES}))
    assert len(launches_only.launches) == 1 and launches_only.launcher_facts.matcher_chains == []


def test_every_cpp_rule_declares_what_it_reads() -> None:
    for registered in all_rules():
        if registered.check is not None and registered.meta.code.startswith("KC") and registered.meta.code < "KC500":
            assert registered.needs and Need.PYTHON not in registered.needs, registered.meta.code
    kc310 = next(r for r in all_rules() if r.meta.code == "KC310")
    assert needs_of([kc310]) == {Need.TEXT}
    kc120 = next(r for r in all_rules() if r.meta.code == "KC120")
    assert needs_of([kc120]) == {Need.INTERFACE, Need.LAUNCHES, Need.DECLARATIONS}


NON_ASCII_LAUNCH = """\
#include <cstdint>
// a launch with a non-ASCII comment \u2014 here
__global__ void k(float* out) { out[0] = 1.0f; }
void launch(float* out) { k<<<1, 1>>>(out); }
"""


def _run(root: Path, cache: Path | None, *select: str) -> tuple[list[str], RunStats]:
    config = load_config(root)
    options = RunOptions(
        config, resolve_settings("hermetic"), Selection.of(config, select), cache=CacheOptions(root=cache)
    )
    stats = RunStats()
    results = run_static([root / "launch.cuh"], options, stats=stats)
    return sorted(f.code for r in results for f in r.findings), stats


def test_select_of_a_text_rule_parses_nothing_and_keeps_its_own_cached_result(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text("[tool.kernel-check]\n")
    (root / "launch.cuh").write_text(NON_ASCII_LAUNCH, encoding="utf-8")
    cache = tmp_path / "cache"
    codes, stats = _run(root, cache, "KC310")
    assert codes == ["KC310"]
    assert (stats.text_only, stats.plain_parses, stats.preamble_parses, stats.preambles_built) == (1, 0, 0, 0)
    # the same cache, every rule: the text-only result is not taken for the full one
    codes, stats = _run(root, cache)
    assert "KC130" in codes and "KC310" in codes
    assert stats.cached == 0 and stats.text_only == 0
    # a selection is answered by its own result, else by the full run's (which any selection filters)
    assert _run(root, cache, "KC310")[1].cached == 1
    codes, stats = _run(root, cache, "KC1")
    assert codes == ["KC130"] and stats.cached == 1
    # KC000 is reported by the parse: selecting it parses the file
    codes, stats = _run(root, None, "KC310", "KC000")
    assert codes == ["KC310"] and stats.text_only == 0 and stats.plain_parses == 1


def _rule_fixture(code: str) -> Path | None:
    """The fixture named after the rule (`kc120_vector_alignment_unchecked.cuh`), if any."""
    registered = next(r for r in all_rules() if r.meta.code == code)
    path = FIXTURES / "cpp" / f"{code.lower()}_{registered.meta.name.replace('-', '_')}.cuh"
    return path if path.is_file() else None


@pytest.mark.parametrize(
    "code", [r.meta.code for r in rules_for(Language.CPP) if _rule_fixture(r.meta.code) is not None]
)
def test_a_rule_selected_alone_finds_what_a_full_run_finds(code: str) -> None:
    """Its declared needs are all it reads: built for them alone, it misses nothing."""
    path = _rule_fixture(code)
    assert path is not None
    full = [(f.location, f.witness is None) for f in run_one(path).findings if f.code == code]
    alone = [(f.location, f.witness is None) for f in run_one(path, select=[code]).findings if f.code == code]
    # compared by place and whether a witness came, not by message: where a witness leaves a
    # thread free, z3 names one that follows where its terms lie in memory (solver.py), so
    # two processes can name different threads of the same defect
    assert full and alone == full


# Where extraction builds each analysis (clang/extract.py), instrumented by the test below.
_ANALYSES = {
    Need.LAUNCHES: ("LaunchResolver", "launches"),
    Need.INTERFACE: (None, "collect_function_facts"),
    Need.DATAFLOW: ("DataflowExtractor", "add_function"),
    Need.THREADS: ("ThreadDependence", "divergent_barriers"),
    Need.INTEGERS: (None, "extract_index_values"),
    Need.SCOPE: (None, "extract_scope_facts"),
    Need.SYMBOLIC: (None, "kernel_terms"),
    Need.CONTRACTS: (None, "launch_contracts"),
    Need.NUMERICS: ("Numerics", "add_function"),
}


def _instrumented(monkeypatch: pytest.MonkeyPatch) -> dict[str, set[str]]:
    """Record which analyses extraction builds, which rule checks run and which callee
    summaries the rules ask for, in this process."""
    from kernel_check import pipeline
    from kernel_check.clang import extract as extraction

    seen: dict[str, set[str]] = {"analyses": set(), "rules": set(), "queries": set()}

    def recording(kind: str, name: str, original):
        def call(*args, **kwargs):
            seen[kind].add(name)
            return original(*args, **kwargs)

        return call

    for need, (owner, attribute) in _ANALYSES.items():
        target = getattr(extraction, owner) if owner else extraction
        monkeypatch.setattr(target, attribute, recording("analyses", need.value, getattr(target, attribute)))
    monkeypatch.setattr(SemanticModel, "vector_feeds", recording("queries", "vector_feeds", SemanticModel.vector_feeds))
    every = list(rules_for(Language.CPP))

    def recorded_rules(language: Language):
        for registered in every if language is Language.CPP else []:
            assert registered.check is not None
            yield replace(registered, check=recording("rules", registered.meta.code, registered.check))

    monkeypatch.setattr(pipeline, "rules_for", recorded_rules)
    return seen


def _check_here(path: Path, *select: str) -> list[str]:
    """The whole pipeline on `path` in this process (its bound runs the file here, not in a
    child), for `--select select`; the codes it reports."""
    from kernel_check.pipeline import check

    config = load_config(path)
    options = RunOptions(config, resolve_settings("hermetic"), Selection.of(config, select))
    result, _ = check(path, options, bound=lambda function, args, seconds: function(*args))
    return sorted({f.code for f in result.findings})


def test_a_selection_builds_and_runs_only_what_its_rules_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """`--select KC402` on a file with launches and vector accesses: the extraction builds
    the analyses KC402 reads and no other, and the only other checks that run are those of
    the rules that spend the same solver budgets (their spending decides what is left for
    KC402's), not KC120's (nor the callee summaries it asks for), KC130's or KC406's,
    although the model built would serve them as well."""
    fixture = FIXTURES / "cpp" / "kc120_vector_alignment_unchecked.cuh"
    seen = _instrumented(monkeypatch)
    _check_here(fixture, "KC402")
    kc402 = get_rule("KC402")
    assert kc402 is not None
    assert seen["analyses"] == {need.value for need in needs_of([kc402]) if need in _ANALYSES}
    assert seen["rules"] == {"KC401", "KC402", "KC403", "KC404"} and seen["queries"] == set()
    # the same file, every rule: each analysis is built and the summaries are asked for
    seen["analyses"].clear()
    seen["rules"].clear()
    assert "KC120" in _check_here(fixture)
    assert seen["analyses"] == {need.value for need in _ANALYSES} and "KC120" in seen["rules"]
    assert seen["queries"] == {"vector_feeds"}


def test_a_text_rule_selected_alone_starts_no_worker(tmp_path: Path) -> None:
    """`--select KC310` reads each C++ file's text: a worker process would cost more to start
    than the files take, so none starts, however many jobs are allowed; nor does a run whose
    every file is answered by the cache."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text("[tool.kernel-check]\n")
    files = [root / f"k{n}.cuh" for n in range(4)]
    for path in files:
        path.write_text(NON_ASCII_LAUNCH, encoding="utf-8")
    config = load_config(root)
    cache = CacheOptions(root=tmp_path / "cache")
    for select, checked in ((["KC310"], 4), ([], 4), ([], 0)):
        options = RunOptions(config, resolve_settings("hermetic"), Selection.of(config, select), cache=cache, jobs=2)
        stats = RunStats()
        results = run_static(files, options, stats=stats)
        assert all("KC310" in {f.code for f in r.findings} for r in results)
        assert stats.checked == checked
        assert stats.workers == (2 if select == [] and checked else 0), (select, checked)
