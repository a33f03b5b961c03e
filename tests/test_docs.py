"""docs/: the generated reference pages equal what scripts/gen_docs.py writes from the code
(config.OPTIONS, the CLI parser, the rule registry), and every link between pages resolves.

When this fails after adding a rule, a config key or a flag, regenerate:

    python scripts/gen_docs.py
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from kernel_check.config import OPTIONS
from kernel_check.registry import all_rules

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
REGENERATE = "stale generated docs: run `python scripts/gen_docs.py` and commit the result"


def load_generator():
    spec = importlib.util.spec_from_file_location("gen_docs", REPO / "scripts" / "gen_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generator():
    return load_generator()


@pytest.fixture(scope="module")
def pages(generator):
    return generator.render_all()


def test_generated_pages_are_committed_and_current(generator, pages):
    stale = generator.outdated(pages)
    assert not stale, f"{REGENERATE}: {', '.join(p.as_posix() for p in stale)}"


def test_every_config_key_is_documented(pages):
    text = pages[Path("docs/configuration.md")]
    for option in OPTIONS:
        assert f"### `{option.key}`" in text
    assert text == (REPO / "docs" / "configuration.md").read_text(encoding="utf-8"), REGENERATE


def test_every_rule_has_a_page_in_the_index(pages):
    index = pages[Path("docs/rules/index.md")]
    for registered in all_rules():
        code = registered.meta.code
        assert f"[{code}]({code}.md)" in index
        assert Path(f"docs/rules/{code}.md") in pages


def test_rule_docs_follow_the_ruff_form():
    for registered in all_rules():
        headings = re.findall(r"^## (.+)$", registered.meta.doc, re.M)
        assert headings[:4] == ["What it does", "Why is this bad?", "Example", "Use instead"], (
            f"{registered.meta.code}: its module docstring needs the four ruff-style sections"
        )


def test_generator_check_mode(generator, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(generator, "REPO", tmp_path)
    monkeypatch.setattr(generator, "RULES_DIR", tmp_path / "docs" / "rules")
    assert generator.main(["--check"]) == 1
    assert "stale: docs/configuration.md" in capsys.readouterr().out
    assert generator.main([]) == 0
    (tmp_path / "docs" / "rules" / "KC998.md").write_text("# a rule that was removed\n")
    assert generator.main(["--check"]) == 1
    assert "stale: docs/rules/KC998.md" in capsys.readouterr().out
    assert generator.main([]) == 0 and not (tmp_path / "docs" / "rules" / "KC998.md").exists()
    assert generator.main(["--check"]) == 0


def test_inline_markdown_escaping(generator):
    assert generator.inline("lacks __restrict__") == r"lacks \_\_restrict\_\_"
    assert generator.inline("use `cache_once` <<<x>>>") == "use `cache_once` &lt;&lt;&lt;x&gt;&gt;&gt;"
    assert generator.table_cell("a | b") == r"a \| b"


# ------------------------------------------------------------------ links


def slug(heading: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)
    return {slug(h) for h in re.findall(r"^#{1,6} (.+)$", text, re.M)}


def links(path: Path) -> list[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)
    text = re.sub(r"`[^`\n]*`", "", text)
    return re.findall(r"\]\(([^)\s]+)\)", text)


PAGES = sorted(DOCS.rglob("*.md"))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(DOCS).as_posix())
def test_links_resolve(page):
    for target in links(page):
        if re.match(r"[a-z]+://", target) or target.startswith("mailto:"):
            continue
        file_part, _, anchor = target.partition("#")
        resolved = (page.parent / file_part).resolve() if file_part else page
        assert resolved.exists(), f"{page.relative_to(REPO)}: broken link {target}"
        if anchor and resolved.suffix == ".md":
            assert anchor in anchors(resolved), f"{page.relative_to(REPO)}: no #{anchor} in {file_part or page.name}"


def test_hand_written_pages_exist_and_are_linked():
    for name in ("getting-started.md", "configuration.md", "adopting.md", "ci.md", "rules/index.md"):
        assert (DOCS / name).is_file(), name
    readme = (DOCS / "README.md").read_text(encoding="utf-8")
    for name in ("getting-started.md", "configuration.md", "adopting.md", "ci.md", "rules/index.md", "architecture.md"):
        assert f"({name})" in readme, f"docs/README.md does not link {name}"
