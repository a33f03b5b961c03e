"""scripts/new_rule.py: the scaffold writes a rule that imports and registers, and a fixture
the fixture test picks up; it refuses bad or taken codes and names and never overwrites."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import expectations, run_one

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "new_rule.py"


@pytest.fixture()
def layout(tmp_path: Path) -> Path:
    """A temp checkout shaped like this one: the real src/kernel_check/rules/ and code table, an empty
    fixture folder."""
    shutil.copytree(
        REPO / "src" / "kernel_check" / "rules",
        tmp_path / "src" / "kernel_check" / "rules",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    (tmp_path / "src" / "kernel_check").mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "src" / "kernel_check" / "codes.py", tmp_path / "src" / "kernel_check" / "codes.py")
    (tmp_path / "tests" / "fixtures" / "cpp").mkdir(parents=True)
    return tmp_path


def scaffold(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args, "--root", str(root)], capture_output=True, text=True, timeout=60
    )


def test_writes_a_rule_that_registers_and_a_fixture_the_fixture_test_collects(layout: Path) -> None:
    done = scaffold(layout, "KC199", "demo-rule")
    assert done.returncode == 0, done.stderr
    module = layout / "src" / "kernel_check" / "rules" / "kc199_demo_rule.py"
    fixture = layout / "tests" / "fixtures" / "cpp" / "kc199_demo_rule.cuh"
    assert module.is_file() and fixture.is_file()
    # Imported in a fresh interpreter as part of the rule pack, with the scaffolded code table in
    # place of the installed one, so this session's registry stays as it is.
    table = layout / "src" / "kernel_check" / "codes.py"
    probe = (
        "import importlib.util, sys\n"
        f"table = importlib.util.spec_from_file_location('kernel_check.codes', {str(table)!r})\n"
        "codes = sys.modules[table.name] = importlib.util.module_from_spec(table)\n"
        "table.loader.exec_module(codes)\n"
        "from kernel_check.registry import get_rule, Language\n"
        f"spec = importlib.util.spec_from_file_location('kernel_check.rules.kc199_demo_rule', {str(module)!r})\n"
        "mod = sys.modules[spec.name] = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)\n"
        "meta = get_rule('KC199').meta\n"
        "print(meta.name, meta.language is Language.CPP, meta.doc.startswith('## What it does'))\n"
        "print(len(list(mod.check(None, None))))\n"
    )
    ran = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == ["demo-rule", "True", "True", "0"]
    collected = sorted(
        p for p in (layout / "tests" / "fixtures" / "cpp").rglob("*") if p.suffix in (".cuh", ".cu", ".h")
    )
    assert collected == [fixture]  # the glob of tests/test_fixtures.py
    firing_line = next(
        n for n, line in enumerate(fixture.read_text().splitlines(), 1) if line.endswith("// expect: KC199")
    )
    assert expectations(fixture) == {(firing_line, "KC199")}  # one firing line; the near miss has none
    # The rest of the catalog is silent on it: until the check is written, the one failure is the missing KC199.
    assert run_one(fixture).findings == []


@pytest.mark.parametrize(
    "code, name, why",
    [
        ("KC130", "brand-new", "code KC130 is already used by"),
        ("KC198", "kernel-fault", "name 'kernel-fault' is already used by"),
        ("KC198", "raw-kernel-launch", "name 'raw-kernel-launch' is already used by"),
        ("KC17", "brand-new", "malformed code 'KC17'"),
        ("kc198", "brand-new", "malformed code 'kc198'"),
        ("KC198", "Brand_New", "malformed name 'Brand_New'"),
    ],
)
def test_refuses_with_one_line_and_exit_2(layout: Path, code: str, name: str, why: str) -> None:
    before = sorted(p.name for p in (layout / "src" / "kernel_check" / "rules").iterdir())
    table = (layout / "src" / "kernel_check" / "codes.py").read_text()
    done = scaffold(layout, code, name)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and why in done.stderr and "Traceback" not in done.stderr
    assert sorted(p.name for p in (layout / "src" / "kernel_check" / "rules").iterdir()) == before
    assert (layout / "src" / "kernel_check" / "codes.py").read_text() == table
    assert not any((layout / "tests" / "fixtures" / "cpp").iterdir())


def test_never_overwrites_an_existing_fixture(layout: Path) -> None:
    fixture = layout / "tests" / "fixtures" / "cpp" / "kc198_brand_new.cuh"
    fixture.write_text("// mine\n")
    done = scaffold(layout, "KC198", "brand-new")
    assert done.returncode == 2 and "already exists; not overwriting it" in done.stderr
    assert fixture.read_text() == "// mine\n"
    assert not (layout / "src" / "kernel_check" / "rules" / "kc198_brand_new.py").exists()
