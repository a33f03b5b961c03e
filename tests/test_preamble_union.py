"""The shared (union) preamble on trees whose files include different headers.

Real libclang, hermetic mode, small trees written here: every file's findings through the
preamble must equal a plain parse's (`check_file`, no cache), and the cases where the
union could change what a file sees (a macro only the union defines, an error that
involves a header the file does not include, a header without an include guard) must be
noticed and parsed plainly.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from kernel_check.cache import static_root
from kernel_check.clang.parse import parse_file, resolve_settings
from kernel_check.clang.preamble import PreambleCache, _scan_project, _unconditional_includes
from kernel_check.engine import RunStats, run_static
from kernel_check.filter import Selection
from test_cache import ALPHA, BETA, findings, make_tree, options, plain

pytestmark = pytest.mark.slow  # preamble builds, several per test

KERNEL_HEAD = """namespace sglang {{
/// \\brief Copies.
__global__ void copy_{name}(float* __restrict__ dst, const float* src) {{ dst[0] = src[0]; }}
}}  // namespace sglang
"""


def new_tree(tmp_path: Path) -> tuple[Path, Path]:
    """A project with `sgl_kernel/alpha.h` and `beta.h` and no kernels yet; (root, cache)."""
    root = tmp_path / "tree"
    (root / "csrc").mkdir(parents=True)
    make_tree(root, kernels=0)
    return root, tmp_path / "cache"


def kernel(root: Path, name: str, head: str, body: str = "") -> Path:
    path = root / "csrc" / f"{name}.cuh"
    path.write_text(head + "\n" + KERNEL_HEAD.format(name=name) + body)
    return path


def tier(root: Path, cache: Path, path: Path) -> str:
    """Which preamble the file's parse used ("project", "external", "base"), or "plain"."""
    unit = parse_file(
        path, path.read_bytes(), resolve_settings("hermetic"), PreambleCache(static_root(cache) / "preamble")
    )
    return unit.preamble.recipe.tier if unit.preamble is not None else "plain"


def same_as_plain(files: list[Path], root: Path, cache: Path) -> list:
    """Check `files` through the preamble cache; their findings must be a plain parse's
    (returned)."""
    expected = plain(files, root)
    assert findings(run_static(files, options(root, cache))) == expected
    return expected


@pytest.mark.slow
def test_files_with_different_include_sets_share_one_preamble(tmp_path: Path) -> None:
    root, cache = new_tree(tmp_path)
    files = [
        kernel(root, "only_alpha", "#include <sgl_kernel/alpha.h>"),
        kernel(root, "only_beta", "#include <sgl_kernel/beta.h>\n#include <cstddef>"),
        kernel(root, "both", "#include <cstdint>\n#include <sgl_kernel/beta.h>\n#include <sgl_kernel/alpha.h>"),
        kernel(root, "no_project", "#include <cstddef>\n#include <type_traits>"),
        root / "include" / "sgl_kernel" / "alpha.h",  # inside the project preamble itself
    ]
    stats = RunStats()
    results = run_static(files, options(root, cache), stats=stats)
    assert findings(results) == plain(files, root)
    assert stats.preamble_parses == len(files)
    assert stats.preambles_built == 2  # the project union, and one without it
    assert all(any(f.code == "KC101" for f in r.findings) for r in results[:4])


def test_a_header_preprocessed_with_a_macro_of_a_header_the_file_does_not_include(tmp_path: Path) -> None:
    """The union includes beta.h before zeta.h, and zeta.h tests a macro of beta.h: in the
    preamble `src` loses its `__restrict__`, in a plain parse of a file that includes only
    zeta.h it keeps it (a macro-sensitive include)."""
    root, cache = new_tree(tmp_path)
    headers = root / "include" / "sgl_kernel"
    (headers / "beta.h").write_text(BETA + "#define SGL_BETA_FEATURE 1\n")
    (headers / "zeta.h").write_text(
        "#pragma once\n#ifdef SGL_BETA_FEATURE\n#define ZETA_RESTRICT\n#else\n"
        "#define ZETA_RESTRICT __restrict__\n#endif\n"
    )
    body = (
        "namespace sglang {\n/// \\brief Reads through ZETA_RESTRICT.\n"
        "__global__ void zeta_copy(float* __restrict__ dst, const float* ZETA_RESTRICT src) { dst[0] = src[0]; }\n"
        "}  // namespace sglang\n"
    )
    only_zeta = kernel(root, "only_zeta", "#include <sgl_kernel/zeta.h>", body)
    with_beta = kernel(root, "with_beta", "#include <sgl_kernel/beta.h>\n#include <sgl_kernel/zeta.h>", body)
    results = run_static([only_zeta, with_beta], options(root, cache))
    expected = plain([only_zeta, with_beta], root)
    assert findings(results) == expected
    assert sum(f.code == "KC101" for f in expected[0]) == 1  # copy_only_zeta only
    assert sum(f.code == "KC101" for f in expected[1]) == 2  # and zeta_copy
    assert tier(root, cache, only_zeta) == "external"  # not the union that holds beta.h
    assert tier(root, cache, with_beta) == "project"


def test_an_error_that_involves_a_header_the_file_does_not_include_parses_plainly(tmp_path: Path) -> None:
    """beta.h declares sglang::twice(float); a file without beta.h declares its own overload:
    against the union the call is ambiguous, in a plain parse it is not."""
    root, cache = new_tree(tmp_path)
    own = (
        "namespace sglang {\ninline float twice(float x, int scale = 2) { return scale * x; }\n"
        "inline float four() { return twice(2.0f); }\n}  // namespace sglang\n"
    )
    path = kernel(root, "own_twice", "#include <sgl_kernel/alpha.h>", own)
    results = run_static([path], options(root, cache))
    expected = plain([path], root)
    assert findings(results) == expected
    assert not any(f.code == "KC000" for f in expected[0])
    assert tier(root, cache, path) == "external"


def test_a_header_without_include_guard_is_parsed_plainly_when_entered_again(tmp_path: Path) -> None:
    root, cache = new_tree(tmp_path)
    (root / "include" / "sgl_kernel" / "raw.h").write_text(
        "namespace sglang {\n/// \\brief No include guard.\nstruct RawThing {\n  int v;\n};\n}  // namespace sglang\n"
    )
    user = kernel(root, "uses_raw", "#include <sgl_kernel/raw.h>\n#include <sgl_kernel/alpha.h>")
    other = kernel(root, "no_raw", "#include <sgl_kernel/alpha.h>")
    expected = same_as_plain([user, other], root, cache)
    assert not any(f.code == "KC000" for r in expected for f in r)
    assert tier(root, cache, user) == "external"  # in the union raw.h would be defined twice
    assert tier(root, cache, other) == "project"


def test_conditional_and_missing_includes_stay_out_of_the_way(tmp_path: Path) -> None:
    """A header included only under `#ifdef` is not part of the preamble, and one that does
    not exist on this machine does not stop the preamble build."""
    root, cache = new_tree(tmp_path)
    alpha = root / "include" / "sgl_kernel" / "alpha.h"
    alpha.write_text(
        ALPHA.replace("#include <cstdint>", "#include <cstdint>\n#ifdef USE_ROCM\n#include <hip/hip_runtime.h>\n#endif")
    )
    project = _scan_project(str(root / "include"))
    assert "hip/hip_runtime.h" not in project.external and "cstdint" in project.external
    (root / "include" / "sgl_kernel" / "missing.h").write_text("#pragma once\n#include <kc_not_installed/lib.h>\n")
    files = [kernel(root, "k", "#include <sgl_kernel/alpha.h>"), alpha]
    stats = RunStats()
    results = run_static(files, options(root, cache), stats=stats)
    assert findings(results) == plain(files, root)
    assert stats.preamble_parses == 2


def test_unconditional_includes() -> None:
    assert _unconditional_includes(
        b"#pragma once\n#include <a>\n#if X\n#include <b>\n#else\n#include <c>\n#endif\n#include <d>\n"
    ) == ["a", "d"]
    guarded = b"#ifndef G_H\n#define G_H\n#include <a>\n#ifndef W\n#define W 32\n#endif\n#include <d>\n#endif\n"
    assert _unconditional_includes(guarded) == ["a", "d"]
    assert _unconditional_includes(b"#include <a>\n#ifndef W\n#define W 1\n#include <x>\n#endif\n") == ["a"]


def test_selected_rules_that_read_no_cpp_skip_cpp_files(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    root.mkdir()
    files = make_tree(root, kernels=1)
    files[0].write_text("this is not C++ {{{\n")
    opts = options(root, None)
    stats = RunStats()
    skipped = run_static(files, replace(opts, selected=Selection.of(opts.config, ["KC5"])), stats=stats)
    assert stats.skipped == 1 and stats.checked == 1
    assert findings(skipped) == [[], []]
    stats = RunStats()
    checked = run_static(files, replace(opts, selected=Selection.of(opts.config, ["KC1"])), stats=stats)
    assert stats.skipped == 1  # now the Python file
    assert any(f.code == "KC000" for f in checked[0].findings)  # a parse error is still reported


def test_a_missing_header_is_reported_from_the_preamble_parse(tmp_path: Path) -> None:
    """A file that includes a header nobody installed fails the same way with and without
    the preamble, so it is not parsed a second time (plainly) to find that out."""
    root, cache = new_tree(tmp_path)
    path = kernel(root, "needs_cutlass", "#include <sgl_kernel/alpha.h>\n#include <kc_not_installed/lib.h>")
    results = run_static([path], options(root, cache))
    expected = plain([path], root)
    assert findings(results) == expected
    assert "kc_not_installed/lib.h" in next(f.message for f in expected[0] if f.code == "KC000")
    assert tier(root, cache, path) == "project"


def test_a_header_that_is_not_self_contained_is_parsed_in_the_files_own_order(tmp_path: Path) -> None:
    """`order.h` calls `std::tuple_cat` and leaves `<tuple>` to its includer (as a real
    tree's `scalar_type.hpp` does). The union enters alpha.h (which includes `<tuple>`)
    first, so it compiles there; a file that includes order.h before anything with `<tuple>`
    does not compile plainly, and must not compile through the preamble either."""
    root, cache = new_tree(tmp_path)
    headers = root / "include" / "sgl_kernel"
    (headers / "alpha.h").write_text(ALPHA.replace("#include <cstdint>", "#include <cstdint>\n#include <tuple>"))
    (headers / "order.h").write_text(
        "#pragma once\nnamespace sglang {\n/// \\brief Joins.\n"
        "template <typename A, typename B>\ninline auto join(A a, B b) { return std::tuple_cat(a, b); }\n"
        "}  // namespace sglang\n"
    )
    first = kernel(root, "order_first", "#include <sgl_kernel/order.h>\n#include <sgl_kernel/alpha.h>")
    after = kernel(root, "order_after", "#include <sgl_kernel/alpha.h>\n#include <sgl_kernel/order.h>")
    expected = same_as_plain([first, after], root, cache)
    assert any(f.code == "KC000" and "tuple_cat" in f.message for f in expected[0])
    assert not any(f.code == "KC000" for f in expected[1])
    assert tier(root, cache, first) == "base"  # the external union enters <tuple> first too
    assert tier(root, cache, after) == "project"


def test_system_headers_the_file_enters_itself_keep_the_union(tmp_path: Path) -> None:
    """A file that includes a library header the preamble does not hold (`<map>`, whose
    templates list the union's overloads as candidates of their dependent calls) still
    parses against the union: only its own code's references are checked."""
    root, cache = new_tree(tmp_path)
    headers = root / "include" / "sgl_kernel"
    (headers / "alpha.h").write_text(ALPHA.replace("#include <cstdint>", "#include <cstdint>\n#include <vector>"))
    path = kernel(
        root,
        "with_map",
        "#include <sgl_kernel/alpha.h>\n#include <map>\n#include <mutex>",
        "namespace sglang {\ninline int size_of(const std::map<int, int>& m) { return int(m.size()); }\n}\n",
    )
    same_as_plain([path], root, cache)
    assert tier(root, cache, path) == "project"


def test_a_file_whose_own_headers_reach_no_project_header_skips_the_project_preamble(tmp_path: Path) -> None:
    """`"local.h"` includes only the standard library: the file is planned straight onto the
    preamble without `sgl_kernel/` (the union would only add what it cannot use); through
    `"bridge.h"`, which includes `sgl_kernel/alpha.h`, it needs the project preamble."""
    root, cache = new_tree(tmp_path)
    (root / "csrc" / "local.h").write_text("#pragma once\n#include <cstddef>\ninline int local_one() { return 1; }\n")
    (root / "csrc" / "bridge.h").write_text("#pragma once\n#include <sgl_kernel/alpha.h>\n")
    local = kernel(root, "uses_local", '#include "local.h"')
    bridged = kernel(root, "uses_bridge", '#include "bridge.h"')
    same_as_plain([local, bridged], root, cache)
    assert tier(root, cache, local) == "external"
    assert tier(root, cache, bridged) == "project"


DEVICE_ONLY_BODY = """namespace sglang {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
/// \\brief Device-only: reads an `Alpha` (from a header the file includes) and has an `int` parameter.
__global__ void arch_kernel(float* __restrict__ dst, Alpha a, int n) { dst[n] = static_cast<float>(a.v); }
#endif
}  // namespace sglang
"""


def test_the_device_pass_of_a_file_parsed_against_a_preamble_has_a_device_mode_preamble(
    tmp_path: Path, monkeypatch
) -> None:
    """A file parsed against a host preamble gets its device pass (device_pass.py) from a
    device-mode preamble of its own (another recipe: the host PCH is another mode) that
    holds the file's headers as dependencies, the findings equal a plain parse's, and a
    path relative to the working directory (as a run from a tree's root names files)
    parses alike."""
    root, cache = new_tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    path = kernel(root, "arch", "#include <sgl_kernel/alpha.h>", DEVICE_ONLY_BODY)
    for named in (path, path.relative_to(tmp_path)):
        unit = parse_file(
            named, path.read_bytes(), resolve_settings("hermetic"), PreambleCache(static_root(cache) / "preamble")
        )
        assert unit.preamble is not None and unit.preamble.recipe.tier == "project"
        [device] = unit.device_passes
        assert "--cuda-device-only" in device.unit.args and device.unit.errors == []
        assert device.unit.preamble is not None and device.unit.preamble.recipe.tier == "project"
        assert "--cuda-device-only" in device.unit.preamble.recipe.args
        assert device.unit.preamble.pch != unit.preamble.pch
        assert any(dep.endswith("sgl_kernel/alpha.h") for dep, _ in device.unit.preamble.deps)
    [found] = same_as_plain([path], root, cache)
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if "void arch_kernel" in text)
    assert ("KC110", line) in {(f.code, f.line) for f in found}


@pytest.mark.slow
def test_a_header_only_the_device_preamble_holds_is_a_dependency_of_the_cached_result(tmp_path: Path) -> None:
    """A project header that includes one from outside `sgl_kernel/` only under `#ifdef
    __CUDA_ARCH__`: the host preamble does not hold that one, the device pass's preamble does
    (and the pass does not enter it itself); the cached result must depend on it all the same."""
    root, cache = new_tree(tmp_path)
    headers = root / "include" / "sgl_kernel"
    (headers / "alpha.h").write_text(
        "#pragma once\n#include <cstdint>\n#ifdef __CUDA_ARCH__\n"
        '#include "../alpha_device.h"\n#endif\nnamespace sglang {\n'
        "/// \\brief A value.\nstruct Alpha {\n  int32_t v;\n};\n}\n"
    )
    device_only = root / "include" / "alpha_device.h"
    device_only.write_text("#pragma once\nusing AlphaScale = float;\n")
    body = (
        "namespace sglang {\n#ifdef __CUDA_ARCH__\n/// \\brief Device-only.\n"
        "__device__ AlphaScale scale(AlphaScale v) { return 2 * v; }\n#endif\n}  // namespace sglang\n"
    )
    path = kernel(root, "dev", "#include <sgl_kernel/alpha.h>", body)
    unit = parse_file(
        path, path.read_bytes(), resolve_settings("hermetic"), PreambleCache(static_root(cache) / "preamble")
    )
    [device] = unit.device_passes
    assert device.unit.preamble is not None and device.unit.errors == []
    assert not any(dep.endswith("alpha_device.h") for dep in (*unit.deps, *device.unit.deps))
    assert not any(dep.endswith("alpha_device.h") for dep, _ in unit.preamble.deps)
    rechecked_after_edit(path, root, cache, device_only, "#pragma once\nusing AlphaScale = double;\n")


BOTH_ARCHS_BODY = """namespace sglang {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
/// \\brief The sm_75 stub: no `__restrict__`, an `int` count.
__global__ void scaled(float* dst, Alpha a, int n) {}
#else
/// \\brief The real kernel.
__global__ void scaled(float* __restrict__ dst, Alpha a, uint32_t n) {
  if (threadIdx.x < n) dst[threadIdx.x] = static_cast<float>(a.v);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (threadIdx.x == 0) __syncthreads();
#endif
}
#endif
#ifdef __CUDA_ARCH__
/// \\brief Device-only: reads an `Alpha`.
__device__ float lane(const Alpha* src) { return static_cast<float>(src[threadIdx.x % 32].v); }
#endif
}  // namespace sglang
"""


@pytest.mark.slow
def test_device_passes_through_a_preamble_give_the_model_of_plain_device_parses(tmp_path: Path) -> None:
    """Both device passes (sm_90, and sm_75 for the `< 800` stub) parsed against device-mode
    preambles give the same model as plain device parses: every function, the barrier seen
    by the sm_90 pass only, the stub's parameters, the integer facts."""
    from kernel_check.clang.extract import extract

    root, cache = new_tree(tmp_path)
    path = kernel(root, "both", "#include <sgl_kernel/alpha.h>", BOTH_ARCHS_BODY)
    data = path.read_bytes()
    settings = resolve_settings("hermetic")
    fast = parse_file(path, data, settings, PreambleCache(static_root(cache) / "preamble"))
    slow = parse_file(path, data, settings)
    assert [(p.arch, p.regions) for p in fast.device_passes] == [(p.arch, p.regions) for p in slow.device_passes]
    assert [p.arch for p in fast.device_passes] == ["90", "75"]
    assert all(p.unit.preamble is not None and p.unit.errors == [] for p in fast.device_passes)
    assert all(p.unit.preamble is None for p in slow.device_passes)
    fast_model, slow_model = extract(fast, data.decode(), data), extract(slow, data.decode(), data)
    assert len({(f.name, f.span.line) for f in slow_model.functions}) == 4  # both `scaled`
    assert [b.span.line for b in slow_model.divergent_barriers] != []
    # the headers: one entry each through a preamble (its closure), repeats in a plain parse
    assert set(fast_model.scope_facts.included_files) == set(slow_model.scope_facts.included_files)
    fast_model.scope_facts.included_files = slow_model.scope_facts.included_files = ()
    assert fast_model == slow_model


def rechecked_after_edit(path: Path, root: Path, cache: Path, header: Path, text: str) -> None:
    """`path` checks as a plain parse does, is answered from the cache next time, and is
    checked again once `header` holds `text`."""
    same_as_plain([path], root, cache)
    stats = RunStats()
    run_static([path], options(root, cache), stats=stats)
    assert stats.cached == 1
    header.write_text(text)
    stats = RunStats()
    run_static([path], options(root, cache), stats=stats)
    assert stats.cached == 0


def test_a_header_only_the_device_pass_enters_is_a_dependency_of_the_cached_result(tmp_path: Path) -> None:
    """The result cache keys a file by the headers its parses entered: one included only
    under `#ifdef __CUDA_ARCH__` (entered by the device pass alone) counts too."""
    root, cache = new_tree(tmp_path)
    header = root / "csrc" / "device_side.h"
    header.write_text("#pragma once\nusing Index = unsigned;\n")
    body = (
        'namespace sglang {\n#ifdef __CUDA_ARCH__\n#include "device_side.h"\n'
        "/// \\brief Device-only.\n__device__ Index twice(Index v) { return 2 * v; }\n#endif\n"
        "}  // namespace sglang\n"
    )
    path = kernel(root, "dev", "#include <sgl_kernel/alpha.h>", body)
    rechecked_after_edit(path, root, cache, header, "#pragma once\nusing Index = int;\n")
