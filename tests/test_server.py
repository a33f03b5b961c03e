"""`kernel-check server`, end to end: the real server process driven by a real LSP client
(pytest-lsp) over standard input/output, on real fixture files, with its cache in a
temporary directory. The expected findings come from the fixtures' `// expect:` markers;
the expected fixes from the command line's own `--fix`."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

from conftest import FIXTURES, expectations
from kernel_check.cli import main

pytestmark = pytest.mark.slow  # each test starts a language server and its checks

in_server_loop = pytest.mark.asyncio(loop_scope="module")  # the module-scoped client's event loop

CACHE = Path(tempfile.gettempdir()) / f"kernel-check-server-tests-{os.getpid()}"  # never the user's cache
SERVER = [sys.executable, "-m", "kernel_check", "server"]
WAIT_S = 300.0  # the first C++ check builds the precompiled preamble
KC101 = FIXTURES / "cpp" / "kc101_restrict_readonly_pointer.cuh"
KC310 = FIXTURES / "cpp" / "kc310_non_ascii_source.cuh"
KC330 = FIXTURES / "cpp" / "kc330_prefer_sgl_device.cuh"
PYTHON_REPO = FIXTURES / "python" / "repo"
RMSNORM_PY = Path("python/sglang/kernels/ops/norm/rmsnorm.py")


class RecordingClient(LanguageClient):
    """pytest-lsp's client, also keeping every publishDiagnostics with its version."""

    def __init__(self) -> None:
        super().__init__(converter_factory=default_converter)
        self.published: list[types.PublishDiagnosticsParams] = []


def recording_client() -> RecordingClient:
    client = RecordingClient()

    def publish(client: RecordingClient, params: types.PublishDiagnosticsParams) -> None:
        client.diagnostics[params.uri] = params.diagnostics
        client.published.append(params)

    register_lsp_features(client, {**DEFAULT_CLIENT_FEATURES, types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: publish})
    return client


@pytest.fixture(scope="module", autouse=True)
def private_cache():
    """The servers' cache, removed once the module's servers are done with it."""
    yield
    shutil.rmtree(CACHE, ignore_errors=True)


@pytest_lsp.fixture(
    scope="module",
    config=ClientServerConfig(
        server_command=SERVER,
        client_factory=recording_client,
        server_env={**os.environ, "KERNEL_CHECK_CACHE_DIR": str(CACHE)},
    ),
)
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(
        types.InitializeParams(capabilities=client_capabilities("visual-studio-code"))
    )  # UTF-16 positions
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(
    scope="module",
    config=ClientServerConfig(
        server_command=SERVER,
        client_factory=recording_client,
        server_env={**os.environ, "KERNEL_CHECK_CACHE_DIR": str(CACHE)},
    ),
)
async def neovim(lsp_client: LanguageClient):
    """A second server, for a client that counts columns in UTF-8 (Neovim offers it first)."""
    result = await lsp_client.initialize_session(types.InitializeParams(capabilities=client_capabilities("neovim")))
    assert result.capabilities.position_encoding == types.PositionEncodingKind.Utf8
    yield
    await lsp_client.shutdown_session()


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project of the fixture kernels (hermetic parse) and the miniature Python repository."""
    root = tmp_path_factory.mktemp("server-project")
    (root / "kernel-check.toml").write_text('mode = "hermetic"\n')
    for fixture in (KC101, KC310, KC330):
        shutil.copy(fixture, root / fixture.name)
    shutil.copytree(PYTHON_REPO, root / "repo")
    return root


# ------------------------------------------------------------------------------- helpers


class Opened:
    """One document open in the server, with the version the client last sent."""

    def __init__(self, client: RecordingClient, path: Path, text: str | None = None) -> None:
        self.client, self.path, self.uri = client, path, path.as_uri()
        self.text = path.read_text(encoding="utf-8") if text is None else text
        self.version = 1
        self._since = len(client.published)  # a reopened URI starts over
        language = "python" if path.suffix == ".py" else "cuda-cpp"
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(types.TextDocumentItem(self.uri, language, self.version, self.text))
        )

    def change(self, text: str) -> None:
        self.version += 1
        self.text = text
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=self.uri, version=self.version),
                [types.TextDocumentContentChangeWholeDocument(text)],
            )
        )

    def close(self) -> None:
        self.client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(self.uri)))

    def publications(self) -> list[types.PublishDiagnosticsParams]:
        published = self.client.published[self._since :]
        return [p for p in published if p.uri == self.uri]

    async def diagnostics(self) -> list[types.Diagnostic]:
        """The diagnostics published for the current version (waits for them)."""

        async def published() -> list[types.Diagnostic]:
            while True:
                found = [p for p in self.publications() if p.version == self.version]
                if found:
                    return list(found[-1].diagnostics)
                await asyncio.sleep(0.02)

        return await asyncio.wait_for(published(), WAIT_S)

    async def actions(self, diagnostic: types.Diagnostic, only: list[str] | None = None) -> list[types.CodeAction]:
        result = await self.client.text_document_code_action_async(
            types.CodeActionParams(
                types.TextDocumentIdentifier(self.uri),
                diagnostic.range,
                types.CodeActionContext([diagnostic], only=only),
            )
        )
        return [a for a in result or [] if isinstance(a, types.CodeAction)]

    def apply(self, action: types.CodeAction) -> str:
        """The text with the action's edits applied (the client's side of an edit)."""
        assert action.edit is not None and action.edit.changes is not None
        assert set(action.edit.changes) == {self.uri}
        return apply_edits(self.text, action.edit.changes[self.uri])


def apply_edits(text: str, edits: list[types.TextEdit]) -> str:
    """Apply LSP edits, positions in UTF-16 code units as a VS Code client counts them."""
    starts = [0]
    for index, char in enumerate(text):
        if char == "\n":
            starts.append(index + 1)

    def offset(position: types.Position) -> int:
        start = starts[position.line]
        units = 0
        index = start
        while units < position.character:
            units += 2 if ord(text[index]) > 0xFFFF else 1
            index += 1
        return index

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]
    return text


def found(diagnostics: list[types.Diagnostic]) -> set[tuple[int, str]]:
    """(1-based line, code) of each diagnostic: what `// expect:` markers list."""
    return {(d.range.start.line + 1, str(d.code)) for d in diagnostics}


def cli_fix(path: Path, tmp_path: Path) -> str:
    """What `kernel-check --fix` makes of a copy of `path` (in a project like the server's)."""
    copy = tmp_path / path.name
    (tmp_path / "kernel-check.toml").write_text('mode = "hermetic"\n')
    shutil.copy(path, copy)
    main([str(copy), "--fix", "--quiet", "--no-cache"])
    return copy.read_text(encoding="utf-8")


# ------------------------------------------------------------------------------- tests


@in_server_loop
async def test_open_publishes_the_fixture_findings_and_an_edit_clears_them(
    client: LanguageClient, project: Path
) -> None:
    document = Opened(client, project / KC101.name)
    diagnostics = await document.diagnostics()
    assert found(diagnostics) == expectations(KC101)
    first = next(d for d in diagnostics if d.code == "KC101")
    assert first.severity == types.DiagnosticSeverity.Error and first.source == "kernel-check"
    assert first.code_description is not None and first.code_description.href.endswith("/docs/rules/KC101.md")
    # the defect removed in the buffer only (the file on disk keeps it): the findings go
    document.change(document.text.replace("const float* src;  // expect: KC101", "const float* __restrict__ src;"))
    assert (10, "KC101") not in found(await document.diagnostics())
    assert len(found(await document.diagnostics())) == len(expectations(KC101)) - 1
    document.close()


@in_server_loop
@pytest.mark.parametrize("fixture, code", [(KC101, "KC101"), (KC310, "KC310"), (KC330, "KC330")])
async def test_the_quick_fix_removes_its_finding(
    client: LanguageClient, project: Path, fixture: Path, code: str
) -> None:
    document = Opened(client, project / fixture.name)
    before = await document.diagnostics()
    target = next(d for d in before if d.code == code)
    fixes = [a for a in await document.actions(target) if a.is_preferred]
    assert len(fixes) == 1 and fixes[0].kind == types.CodeActionKind.QuickFix, fixes
    document.change(document.apply(fixes[0]))
    after = await document.diagnostics()
    assert not any(d.code == "KC000" for d in after), after
    on_line = [d for d in after if d.code == code and d.range.start.line == target.range.start.line]
    assert (
        len(on_line) == len([d for d in before if d.code == code and d.range.start.line == target.range.start.line]) - 1
    )
    document.close()


@pytest.mark.parametrize("fixture", [KC101, KC310, KC330])
@in_server_loop
async def test_fix_all_makes_what_the_command_line_fix_makes(
    client: LanguageClient, project: Path, fixture: Path, tmp_path: Path
) -> None:
    document = Opened(client, project / fixture.name)
    first = (await document.diagnostics())[0]
    fix_all = await document.actions(first, only=[types.CodeActionKind.SourceFixAll])
    assert [a.kind for a in fix_all] == ["source.fixAll.kernel-check"]
    assert document.apply(fix_all[0]) == cli_fix(fixture, tmp_path)
    document.close()


@pytest.mark.parametrize(
    "fixture, code, line, place, silenced",
    [
        (KC101, "KC101", 14, "end", 1),  # a struct field: the comment goes at the end of the line
        (KC310, "KC310", 8, "end", 1),  # after a non-ASCII character: UTF-16 columns
        (PYTHON_REPO / RMSNORM_PY, "KC502", 74, "end", 1),  # Python: `#`
        (PYTHON_REPO / RMSNORM_PY, "KC502", 32, "above", 1),  # line 33 has one too: not the next line's
        (PYTHON_REPO / RMSNORM_PY, "KC502", 33, "end", 2),  # 32 and 34 too: one of them goes, and the title says so
    ],
)
@in_server_loop
async def test_the_suppression_action_silences_that_finding(
    client: LanguageClient, project: Path, fixture: Path, code: str, line: int, place: str, silenced: int
) -> None:
    path = project / "repo" / RMSNORM_PY if fixture.suffix == ".py" else project / fixture.name
    document = Opened(client, path)
    before = await document.diagnostics()
    target = next(d for d in before if d.code == code and d.range.start.line + 1 == line)
    title = f"Suppress {code} on this line" + (" (and on line 34)" if silenced == 2 else "")
    suppress = [a for a in await document.actions(target) if a.title == title]
    assert len(suppress) == 1, [a.title for a in await document.actions(target)]
    original = document.text.splitlines()[line - 1]
    document.change(document.apply(suppress[0]))
    after = await document.diagnostics()
    assert len([d for d in after if d.code == code]) == len([d for d in before if d.code == code]) - silenced
    assert not any(d.code == "KC001" for d in after)
    marker = f"{'#' if path.suffix == '.py' else '//'} kernel-check: ignore[{code}]"
    lines = document.text.splitlines()
    if place == "end":
        assert lines[line - 1] == f"{original}  {marker}"
    else:
        assert lines[line - 1].strip() == marker and lines[line] == original
    document.close()


async def columns_of_the_kc310_fix(client: LanguageClient, project: Path, units) -> None:
    """Line 6 of the KC310 fixture: `// Each warp handles one row \u2014 rows \u2265 128`; the
    diagnostic starts at the dash and the fix replaces both characters, the second after the
    first's 3 UTF-8 bytes (1 UTF-16 unit): positions in `units` of the line before them."""
    document = Opened(client, project / KC310.name)
    target = next(d for d in await document.diagnostics() if d.range.start.line == 5)
    fix = next(a for a in await document.actions(target) if a.is_preferred)
    assert fix.edit is not None and fix.edit.changes is not None
    line = document.text.splitlines()[5]
    dash, sign = units(line[: line.index("\u2014")]), units(line[: line.index("\u2265")])
    assert target.range.start.character == dash
    assert sorted(e.range.start.character for e in fix.edit.changes[document.uri]) == [dash, sign]
    document.close()


@in_server_loop
async def test_columns_are_utf16_code_units_by_default(client: LanguageClient, project: Path) -> None:
    await columns_of_the_kc310_fix(client, project, lambda text: len(text.encode("utf-16-le")) // 2)


@in_server_loop
async def test_columns_are_utf8_bytes_for_a_client_that_prefers_them(neovim: LanguageClient, project: Path) -> None:
    await columns_of_the_kc310_fix(neovim, project, lambda text: len(text.encode("utf-8")))


@in_server_loop
async def test_a_second_suppression_joins_the_comment_already_on_the_line(
    client: LanguageClient, project: Path
) -> None:
    path = project / "joined.cuh"
    source = KC101.read_text(encoding="utf-8").replace(
        "const float* src;  // expect: KC101", "const float* src;  // kernel-check: ignore[KC102]"
    )
    path.write_text(source, encoding="utf-8")
    document = Opened(client, path)
    before = await document.diagnostics()
    assert (14, "KC001") in found(before)  # the KC102 suppression suppresses nothing
    target = next(d for d in before if d.code == "KC101" and d.range.start.line == 13)
    suppress = next(a for a in await document.actions(target) if a.title == "Suppress KC101 on this line")
    document.change(document.apply(suppress))
    assert "// kernel-check: ignore[KC102, KC101]" in document.text.splitlines()[13]
    assert (14, "KC101") not in found(await document.diagnostics())
    document.close()


def _header_and_its_user(root: Path) -> tuple[Path, Path]:
    """A header (`kScale`) and a source that includes it, clean, in a hermetic project."""
    (root / "kernel-check.toml").write_text('mode = "hermetic"\n')
    header = root / "scale.h"
    header.write_text("#pragma once\n\nnamespace sglang {\n\n/// \\brief The factor.\nconstexpr int kScale = 2;\n\n}\n")
    kernel = root / "use.cuh"
    kernel.write_text(
        '#include "scale.h"\n\nnamespace sglang {\n\n/// \\brief Twice the factor.\n'
        "constexpr int kTwice = 2 * kScale;\n\n}\n"
    )
    return header, kernel


@in_server_loop
async def test_a_header_changed_on_disk_is_seen_by_the_next_check(client: LanguageClient, tmp_path: Path) -> None:
    """The server keeps its caches warm between checks; a header that changes under them
    must not leave a cached verdict behind (here: the same buffer, checked again)."""
    header, kernel = _header_and_its_user(tmp_path)
    document = Opened(client, kernel)
    assert found(await document.diagnostics()) == set()
    document.change(document.text)  # the same bytes: answered by the result cache, the header hashed
    assert found(await document.diagnostics()) == set()
    header.write_text(header.read_text().replace("kScale", "kFactor"))
    document.change(document.text)
    assert found(await document.diagnostics()) == {(6, "KC000")}
    document.close()


@in_server_loop
async def test_a_suppression_in_a_macro_body_keeps_the_macro_whole(client: LanguageClient, project: Path) -> None:
    path = project / "macro.cuh"
    path.write_text(
        '#pragma once\n\n#define KC_LABEL "na\u00efve" \\\n  "!"\n\nnamespace sglang {\n\n'
        "/// \\brief The label.\ninline const char* kLabel = KC_LABEL;\n\n}  // namespace sglang\n",
        encoding="utf-8",
    )
    document = Opened(client, path)
    assert found(await document.diagnostics()) == {(3, "KC310")}
    target = (await document.diagnostics())[0]
    suppress = next(a for a in await document.actions(target) if a.title == "Suppress KC310 on this line")
    document.change(document.apply(suppress))
    assert document.text.splitlines()[2] == '#define KC_LABEL "na\u00efve" /* kernel-check: ignore[KC310] */ \\'
    assert found(await document.diagnostics()) == set()  # and the macro still parses: no KC000
    document.close()


@in_server_loop
async def test_saving_a_header_rechecks_the_open_sources(client: LanguageClient, tmp_path: Path) -> None:
    header, kernel = _header_and_its_user(tmp_path)
    user = Opened(client, kernel)
    assert found(await user.diagnostics()) == set()
    edited = Opened(client, header)
    await edited.diagnostics()
    header.write_text(edited.text.replace("kScale", "kFactor"))  # the editor writes the file...
    checks = len(user.publications())
    client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(edited.uri)))

    async def rechecked() -> set[tuple[int, str]]:  # ...and the open kernel, unchanged, is checked again
        while len(user.publications()) == checks:
            await asyncio.sleep(0.02)
        return found(list(user.publications()[-1].diagnostics))

    assert await asyncio.wait_for(rechecked(), WAIT_S) == {(6, "KC000")}
    user.close()
    edited.close()


@in_server_loop
async def test_python_wrapper_findings(client: LanguageClient, project: Path) -> None:
    source = PYTHON_REPO / RMSNORM_PY
    document = Opened(client, project / "repo" / RMSNORM_PY)
    diagnostics = await document.diagnostics()
    assert found(diagnostics) == expectations(source)
    assert {str(d.code) for d in diagnostics} == {"KC502"}
    document.close()


@in_server_loop
async def test_rapid_changes_publish_only_the_newest_version(client: LanguageClient, project: Path) -> None:
    document = Opened(client, project / KC330.name)
    await document.diagnostics()
    clean = KC101.read_text(encoding="utf-8")
    for _ in range(5):  # faster than the debounce: one check, of the last version
        document.change(clean + f"// edit {document.version}\n")
    diagnostics = await document.diagnostics()
    assert found(diagnostics) == expectations(KC101)
    assert [p.version for p in document.publications()] == [1, document.version]
    document.close()


@in_server_loop
async def test_closing_clears_the_diagnostics(client: LanguageClient, project: Path) -> None:
    document = Opened(client, project / KC101.name)
    assert await document.diagnostics()
    document.close()

    async def cleared() -> None:
        while document.publications()[-1].diagnostics:
            await asyncio.sleep(0.02)

    await asyncio.wait_for(cleared(), WAIT_S)


@in_server_loop
async def test_a_broken_configuration_is_one_message(client: LanguageClient, tmp_path: Path) -> None:
    (tmp_path / "kernel-check.toml").write_text('select = ["KX9"]\n')
    path = tmp_path / "k.cuh"
    path.write_text("namespace sglang {}\n")
    document = Opened(client, path)

    async def shown() -> types.ShowMessageParams:
        while not any("KX9" in m.message for m in client.messages):
            await asyncio.sleep(0.02)
        return next(m for m in client.messages if "KX9" in m.message)

    message = await asyncio.wait_for(shown(), WAIT_S)
    assert message.type == types.MessageType.Error and "unknown rule code" in message.message
    assert "\n" not in message.message
    document.close()


def test_a_bounded_check_leaves_the_servers_objects_to_the_server() -> None:
    """Each check runs in a child forked from the long-lived server: its cycle collector must
    not walk (and copy) the objects inherited from the server, only its own."""
    import gc

    from kernel_check.watchdog import run_bounded

    inherited = len(gc.get_objects())
    frozen = run_bounded(gc.get_freeze_count, timeout=60)
    assert isinstance(frozen, int) and frozen >= inherited // 2, frozen


def test_without_pygls_the_server_is_a_one_line_error(tmp_path: Path) -> None:
    blocked = "import sys; sys.modules['pygls'] = None; from kernel_check.cli import main; sys.exit(main(['server']))"
    result = subprocess.run(
        [sys.executable, "-c", blocked], check=False, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        "kernel-check: error: the language server needs pygls: pip install 'pygls>=2,<3' (the `server` extra)"
    ]
