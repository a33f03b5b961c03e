"""The code table (`kernel_check.codes`): every code defined once, joined with its rule
module, and named by the stages that report it through the table, never as a literal."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from kernel_check import codes, registry
from kernel_check.codes import Language

CHECKER = Path(codes.__file__).resolve().parent
RULES = CHECKER / "rules"  # a rule module names its own code: @rule("KC101")
CODE_RE = re.compile(r"K[CD]\d{3}")


def test_every_code_has_one_module_with_its_doc_page_and_a_check_where_it_is_static() -> None:
    registered = {r.meta.code: r for r in registry.all_rules()}
    assert registered.keys() == codes.TABLE.keys()
    for code, entry in codes.TABLE.items():
        rule = registered[code]
        assert (rule.meta.name, rule.meta.severity, rule.meta.language) == (entry.name, entry.severity, entry.language)
        assert rule.meta.doc.startswith("## What it does"), code
        static_rule = entry.language in (Language.CPP, Language.PYTHON)
        assert (rule.check is not None) is static_rule, code


def test_stages_and_families() -> None:
    by_stage = {language: sorted(c for c, e in codes.TABLE.items() if e.language is language) for language in Language}
    assert by_stage[Language.META] == ["KC000", "KC001"]
    assert by_stage[Language.BUILD] == ["KC600", "KC601", "KC602"]
    assert all(code.startswith("KD") for code in by_stage[Language.DYNAMIC])
    assert all(code.startswith("KC5") for code in by_stage[Language.PYTHON])
    assert codes.TABLE[codes.MEMCHECK].family == "KD2xx" and codes.lookup("kd201") is codes.TABLE["KD201"]


def test_a_rule_module_for_a_code_outside_the_table_is_refused() -> None:
    registry.load_rules()
    with pytest.raises(RuntimeError, match="KC998 is not in the code table"):
        registry.rule("KC998")(lambda model, ctx: iter(()))
    assert registry.get_rule("KC998") is None


def _code_literals(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and CODE_RE.fullmatch(node.value)
    ]


def test_the_checker_names_codes_only_through_the_table() -> None:
    """Outside `codes.py`, no module of the checker (the harness, the build, the filters)
    spells a code as a string literal: `codes.RESULT_MISMATCH`, not "KD101"."""
    found = {
        str(path.relative_to(CHECKER)): literals
        for path in sorted(CHECKER.rglob("*.py"))
        if path.name != "codes.py" and RULES not in path.parents and (literals := _code_literals(path))
    }
    assert found == {}


READ_ONLY_KERNEL = """\
#include <cstdint>
namespace sglang {
/// \\brief Copy one element.
/// \\param dst Output.
/// \\param src Input, only read.
__global__ void copy_kernel(float* __restrict__ dst, SPELLING) { dst[0] = src[0]; }
}  // namespace sglang
"""


@pytest.mark.parametrize("spelling,code", [("float* src", "KC102"), ("const float* src", "KC101")])
def test_a_read_only_pointer_missing_both_qualifiers_fails_as_one_missing_restrict_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spelling: str, code: str
) -> None:
    """`float* src` lacks `const` and `__restrict__` (KC102), `const float* src` only
    `__restrict__` (KC101): the worse spelling must not be the milder finding."""
    import json

    from kernel_check.cli import main

    kernel = tmp_path / "copy.cuh"
    kernel.write_text(READ_ONLY_KERNEL.replace("SPELLING", spelling))
    status = main([str(kernel), "--mode", "hermetic", "--no-cache", "--output-format", "json"])
    reported = [(f["code"], f["severity"]) for f in json.loads(capsys.readouterr().out)]
    assert (status, reported) == (1, [(code, "error")])
