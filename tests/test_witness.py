"""Witnesses tied to the launcher's contract (src/kernel_check/witness.py): each launch's
terms (clang/symbolic.py) over real parses, and the KC112 / KC401 witnesses checked by
evaluating the launcher's grid and the kernel's offset at the shape they name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import FIXTURES, run_one
from kernel_check import witness
from kernel_check.clang.extract import extract
from kernel_check.clang.parse import parse_file, resolve_settings
from kernel_check.clang.symbolic import render
from kernel_check.config import load_config
from kernel_check.model import SourceModel
from kernel_check.pipeline import RunOptions, _run_rules
from kernel_check.semantic import SemanticModel
from kernel_check.solver import RLIMIT_PER_SECOND

OVERFLOWS = FIXTURES / "cpp" / "kc112_witness_from_contract.cuh"
IDS = FIXTURES / "cpp" / "kc401_witness_from_contract.cuh"
BLOCK = 256  # kBlockSize of the KC112 fixture
ROOMY = 60.0  # a budget no witness's search runs out of


def _values(message: str) -> dict[str, int]:
    """`N = 4096, blockIdx.x = 3` and the like, from a message."""
    return {name: int(value) for name, value in re.findall(r"`?(\w[\w.\[\]()]*)`? = (-?\d+)", message)}


def _message(path: Path, line: int, code: str) -> str:
    found = [f.message for f in run_one(path, solver_budget=ROOMY).findings if f.line == line and f.code == code]
    assert len(found) == 1, found
    return found[0]


@pytest.fixture(scope="module")
def overflow_messages() -> dict[int, str]:
    return {f.line: f.message for f in run_one(OVERFLOWS, solver_budget=ROOMY).findings if f.code == "KC112"}


def test_kc112_witness_overflows_at_its_shape_and_not_below(overflow_messages) -> None:
    values = _values(overflow_messages[21])  # add_one: grid div_ceil(N, 256), block 256
    n, block_index = values["N"], values["blockIdx.x"]
    assert block_index < -(-n // BLOCK) <= 2**31 - 1  # a block the launch has
    assert block_index * BLOCK >= 2**32  # `blockIdx.x * blockDim.x` in `unsigned int`
    assert (-(-(n - 1) // BLOCK) - 1) * BLOCK < 2**32  # one element fewer: the last block fits


def test_kc112_witness_of_a_signed_product_of_two_sizes(overflow_messages) -> None:
    values = _values(overflow_messages[51])  # fill_rows: one block per row, `int` times `width`
    rows, width, block_index = values["R"], values["W"], values["blockIdx.x"]
    assert block_index < rows and width <= 2**31 - 1  # the width reaches the kernel as `int32_t`
    assert block_index * width >= 2**31


def test_kc112_witness_on_the_grid_y_axis_of_a_dim3_local(overflow_messages) -> None:
    values = _values(overflow_messages[119])  # rows_by_y: `dim3 grid{1, R}`, `int` times `width`
    rows, width, row = values["R"], values["W"], values["blockIdx.y"]
    assert row < rows <= 65535 and width <= 2**31 - 1  # the grid's y limit; `int32_t width`
    assert row * width >= 2**31


def test_kc112_without_witness_where_the_contract_does_not_decide(overflow_messages) -> None:
    # no launch is in the file (line 139): reported as before, with no shape; the capped
    # launches are proven safe: by a RuntimeCheck (line 76), by a count the launcher keeps in
    # 32 bits, wrapped or not (lines 97, 224), by a grid capped at 65535 blocks inside the
    # launcher's lambda (line 149), by a grid of 8 blocks per SM (line 194)
    # a grid capped at 65535 blocks over vectors of `16 / sizeof(T)` elements (line 286),
    # a 32-bit count of channel pairs read back from the params local it fills (line 321),
    # a `cudaLaunchKernelEx` grid of `div_ceil(n, threads)` blocks, `threads` at most 1024
    # whatever the launcher's helper returns (line 412)
    assert sorted(overflow_messages) == [21, 51, 119, 139, 157, 256, 257, 332, 372]
    assert "overflows for" not in overflow_messages[139]


def test_kc112_witness_from_a_launch_config_inside_a_checked_call_macro(overflow_messages) -> None:
    values = _values(overflow_messages[372])  # negate: `config.gridDim = div_ceil(N, 256)`, `cudaLaunchKernelEx`
    n, block_index = values["N"], values["blockIdx.x"]
    assert block_index < -(-n // BLOCK) and block_index * BLOCK >= 2**32


def test_kc112_witness_from_the_fields_of_a_params_local(overflow_messages) -> None:
    values = _values(overflow_messages[332])  # copy_quads: `div_ceil(params.width, 256)` blocks, 4 channels a thread
    width, block_index = values["W"], values["blockIdx.x"]
    assert width <= 2**32 - 1  # `params.width` is a `uint32_t` of the matcher's dim
    assert block_index < -(-width // 256) and block_index * 256 * 4 >= 2**32


def test_kc112_witness_names_the_bytes_of_the_launchers_element_type(overflow_messages) -> None:
    values = _values(overflow_messages[256])  # scale_vectors: `N / (16 / sizeof(T))` vectors, one a thread
    n, size, block_index = values["N"], values["sizeof(T)"], values["blockIdx.x"]
    assert size in (1, 2, 4, 8)  # a dtype's bytes, so the vector's elements are no zero divisor
    vectors = n // (16 // size)
    assert block_index < -(-vectors // BLOCK) <= 2**32 - 1  # a block the launch has, its count a `uint32_t`
    assert block_index * BLOCK >= 2**32


def test_a_spent_budget_keeps_every_kc112_finding_without_a_witness() -> None:
    findings = [f for f in run_one(OVERFLOWS, solver_budget=1e-9).findings if f.code == "KC112"]
    # the capped ones too: not proven
    lines = [21, 51, 76, 97, 119, 139, 149, 157, 194, 224, 256, 257, 286, 321, 332, 372, 412]
    assert sorted(f.line for f in findings) == lines
    assert all("overflows for" not in f.message for f in findings)


def test_kc401_witness_names_the_indexed_tensor_and_goes_past_it() -> None:
    values = _values(_message(IDS, 22, "KC401"))  # gather: `table` is [R, D], guard `id < R`
    rows, width, row, thread = values["R"], values["D"], values["ids[blockIdx.x]"], values["threadIdx.x"]
    assert row < rows and thread < width <= 1024  # every guard and RuntimeCheck holds
    assert row * width + thread < 0  # before `table`
    values = _values(_message(IDS, 50, "KC401"))  # scatter: `cache` is [S, 128]
    slots, slot, thread = values["S"], values["loc[blockIdx.x]"], values["threadIdx.x"]
    assert slot * 128 + thread >= slots * 128  # past `cache`


def _model(path: Path) -> SourceModel:
    text = path.read_text(encoding="utf-8")
    unit = parse_file(path, text, resolve_settings("hermetic"))
    assert not unit.errors
    return extract(unit, text, text.encode())


def test_launch_contracts_over_the_matcher_sizes() -> None:
    model = _model(OVERFLOWS)
    by_kernel = {model.launches[c.launch].kernels[0].name: c for c in model.launch_contracts}
    add_one = by_kernel["add_one_kernel"]
    # div_ceil(num_elements, kBlockSize), an `unsigned int` of the launch's grid
    assert render(add_one.grid[0]) == "wrap((((dim:N + 256) - 1) / 256), 0, 4294967295)"
    assert [render(b) for b in add_one.block[:1]] == ["256"]
    assert add_one.arguments[:2] == (None, None) and render(add_one.arguments[2]) == "dim:N"
    assert [render(g) for g in add_one.guards] == ["not((dim:N == 0))"]  # the early return
    assert [(tensor, [render(d) for d in dims]) for tensor, dims in add_one.extents] == [
        ("dst", ["dim:N"]),
        ("src", ["dim:N"]),
    ]
    fill_rows = by_kernel["fill_rows_kernel"]  # a params struct built with designators
    assert [(p, f, render(t)) for p, f, t in fill_rows.fields] == [
        (0, "num_rows", "dim:R"),
        (0, "width", "wrap(dim:W, -2147483648, 2147483647)"),  # `static_cast<int32_t>(W.unwrap())`
    ]
    small = by_kernel["small_copy_kernel"]  # RuntimeCheck, and a matcher constant
    assert "not(not((dim:N <= 65536)))" in [render(g) for g in small.guards]
    assert [render(d) for d in dict(small.extents)["dst"]] == ["dim:N", "128"]
    wide = by_kernel["fill_wide_kernel"]  # the launcher's 32-bit count must not wrap in a witness
    count = "(wrap(dim:N, 0, 4294967295) * 4)"  # `static_cast<uint32_t>(N.unwrap()) * 4u`
    assert f"and((0 <= {count}), ({count} <= 4294967295))" in [render(f) for f in wide.fits]
    # and where it does wrap (a proof), it stays below 2^32: so does the grid
    assert render(wide.grid[0]) == f"(((wrap({count}, 0, 4294967295) + 256) - 1) / 256)"


def test_a_launcher_local_s_initializer_is_walked_once() -> None:
    """A `dim3` local's and a params-struct local's initializers are walked once: each
    conversion in them is one condition that it keeps its value, not one per walk."""
    model = _model(OVERFLOWS)
    by_kernel = {model.launches[c.launch].kernels[0].name: c for c in model.launch_contracts}
    for kernel in ("rows_by_y_kernel", "fill_rows_kernel"):  # `dim3 grid{1, ...}`, `RowParams{...}`
        fits = [render(f) for f in by_kernel[kernel].fits]
        assert len(fits) == len(set(fits)), (kernel, fits)
    rows_by_y = by_kernel["rows_by_y_kernel"]
    grid = [render(a) if a is not None else None for a in rows_by_y.grid]
    assert grid == ["1", "wrap(dim:R, 0, 4294967295)", "1"]  # a dim3 axis is unsigned: R past 2^32 wraps


SCARCE = 0.09  # seconds: units for the decisions below (~1.5x), not for KC112's search too


def test_one_budget_per_kernel_its_decisions_first(tmp_path: Path) -> None:
    """Every rule's queries about a kernel share one budget, spent on the decisions of all
    the rules before any witness: KC112 comes first in the rules' order and its witness
    search alone needs more than the budget, yet KC401 still decides and reports; the kernel
    spends its one budget, not one a rule; and the findings are the same every time (the
    budget counts z3's resource units, not time; the decisions have room to spare, since a
    hard query's units move with z3's search order from one process to another)."""
    source = tmp_path / "gather.cuh"
    access = "    out[blockIdx.x * d + threadIdx.x] = table[id * d + threadIdx.x];"
    overflowing = (
        "    const int64_t base = blockIdx.x * blockDim.x;\n    out[base + threadIdx.x] = table[id * d + threadIdx.x];"
    )
    source.write_text(IDS.read_text(encoding="utf-8").replace(access, overflowing), encoding="utf-8")
    product_line, access_line = 22, 23
    units = SCARCE * RLIMIT_PER_SECOND

    roomy, spent = _messages_here(source, ROOMY)
    assert "it overflows for" in roomy[product_line, "KC112"] and "for D = 1" in roomy[access_line, "KC401"]
    assert spent["gather_rows_kernel"] > units  # the searches need more than the budget

    for _ in range(2):  # the same findings every time
        scarce, spent = _messages_here(source, SCARCE)
        assert {(product_line, "KC112"), (access_line, "KC401")} <= set(scarce)
        assert "`ids[blockIdx.x]` = -1" in scarce[access_line, "KC401"]  # the decision's own witness
        assert spent["gather_rows_kernel"] <= 1.01 * units  # z3 stops a query a step past its limit


def _messages_here(path: Path, budget: float) -> tuple[dict[tuple[int, str], str], dict[str, int]]:
    """The pipeline's rules run in this process on a fresh model of `path`: each finding's
    message by line and code, and the units each kernel spent."""
    options = RunOptions(load_config(path).with_overrides(solver_budget=budget), resolve_settings("hermetic"))
    model = SemanticModel(_model(path))
    raw = _run_rules(model, path, path.name, options)
    spent = {k.name: model.solver_budget(k.usr, budget).spent for k in model.kernels}
    return {(f.location.line, f.code): f.message for f in raw.findings}, spent


EXTENTS = FIXTURES / "cpp" / "kc406_access_past_tensor_extent.cuh"


def test_a_launchers_own_template_parameters_are_bound_by_what_the_code_states() -> None:
    """A launcher's compile-time parameter its kernel's template argument names (`k<kThreads>`)
    is a TEMPLATE symbol of the contract, held to the places that build the launcher
    (`TileCopyBuilt<128>::run`), its own `static_assert`s and the kernel's with the launch's
    argument put in (`kWarps * 32 <= 256` of `k<kWarps>`), at least 1, and a block of at most
    1024 threads."""
    model = SemanticModel(_model(EXTENTS))
    limits = {}
    for index, launch in enumerate(model.launches):
        contract = model.contract_of(index)
        if launch.kernels[0].name.startswith("tile_copy") and contract is not None:
            found, unstated = witness.template_limits(model, contract)
            assert not unstated
            limits[launch.kernels[0].name] = [render(t) for t in found]
    assert "(host:kThreads <= 256)" in limits["tile_copy_asserted_kernel"]
    assert "((host:kWarps * 32) <= 256)" in limits["tile_copy_checked_kernel"]
    assert "or((host:kThreads == 256), (host:kThreads == 128))" in limits["tile_copy_built_kernel"]
    assert "(1 <= host:kThreads)" in limits["tile_copy_kernel"]
    assert "(wrap(host:kThreads, 0, 4294967295) <= 1024)" in limits["tile_copy_kernel"]
    assert not any("256" in limit for limit in limits["tile_copy_kernel"])  # nothing bounds it but the block
