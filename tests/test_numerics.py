"""KC405 (unguarded narrowing conversions): the range walk (src/kernel_check/clang/numerics.py)
is built only for the rules that read it, and a finding names where its value comes from."""

from __future__ import annotations

from conftest import FIXTURES, run_one
from kernel_check.clang.extract import extract
from kernel_check.clang.parse import parse_file, resolve_settings
from kernel_check.registry import Need, get_rule, needs_of

FIXTURE = FIXTURES / "cpp" / "kc405_unguarded_narrowing_conversion.cuh"


def _line(text: str) -> int:
    """The 1-based line of the fixture that holds `text`."""
    lines = FIXTURE.read_text(encoding="utf-8").splitlines()
    return next(number for number, line in enumerate(lines, 1) if text in line)


def test_the_range_walk_is_built_only_when_a_selected_rule_reads_it() -> None:
    data = FIXTURE.read_bytes()
    unit = parse_file(FIXTURE, data, resolve_settings("hermetic"))
    declarations = extract(unit, data.decode(), data, frozenset({Need.DECLARATIONS}))
    numerics = extract(unit, data.decode(), data, frozenset({Need.DECLARATIONS, Need.NUMERICS}))
    assert declarations.narrowing_conversions == [] and len(numerics.narrowing_conversions) >= 9
    rule = get_rule("KC405")
    assert rule is not None and needs_of([rule]) == {Need.NUMERICS, Need.DECLARATIONS}


def test_a_conversion_in_a_helper_names_the_read_and_the_call_that_feed_it() -> None:
    findings = [f for f in run_one(FIXTURE, select=["KC405"]).findings if f.code == "KC405"]
    helper = next(f for f in findings if f.location.line == _line("return static_cast<int8_t>(roundf(value"))
    assert "`x[i + 3]`" in helper.message
    assert [(r.location.line, r.message) for r in helper.related] == [
        (_line("q[i + 5] = to_int8(x[i + 3], inv_scale);"), "the read of memory it comes from"),
        (_line("q[i + 5] = to_int8(x[i + 3], inv_scale);"), "the call that passes it in"),
    ]
    # the clamped helper is fed the same kind of value and stays quiet
    assert not [f for f in findings if f.location.line == _line("fminf(fmaxf(roundf(value), -128.f), 127.f)")]


HEADER_KERNELS = FIXTURES / "cpp" / "kc405_header_helpers" / "kernels.cuh"


def test_a_conversion_in_a_header_helper_is_reported_at_the_call_that_leads_there() -> None:
    findings = [f for f in run_one(HEADER_KERNELS, select=["KC405"]).findings if f.code == "KC405"]
    lines = HEADER_KERNELS.read_text(encoding="utf-8").splitlines()
    call = next(n for n, line in enumerate(lines, 1) if "q[i] = quant_helpers::round_to_int8(v);" in line)
    read = next(n for n, line in enumerate(lines, 1) if "const float v = x[i] * inv_scale;" in line)
    finding = next(f for f in findings if f.location.line == call)
    helper = (HEADER_KERNELS.parent / "quant_helpers.cuh").read_text(encoding="utf-8").splitlines()
    conversion = next(n for n, line in enumerate(helper, 1) if "static_cast<int8_t>(__float2int_rn(value))" in line)
    assert f"passes a value that quant_helpers.cuh:{conversion} converts to `int8_t`" in finding.message
    assert [(r.location.line, r.message) for r in finding.related] == [(read, "the read of memory it comes from")]
    # a helper that reads and converts by itself is the header's finding, not the call's
    assert not [f for f in findings if "read_to_int8" in lines[f.location.line - 1]]
