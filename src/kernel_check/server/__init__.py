"""`kernel-check server`: a language server (LSP over standard input/output, pygls).

Each open `.cuh`/`.cu`/`.py` document (any source `discover.is_source` accepts) is checked
the way `kernel-check --stdin-filename PATH --force-exclude < buffer` checks it
(`cli.check_document`, which `kernel-check server` hands to `serve`: the project's
configuration found from PATH, its baseline, its per-file-ignores and excludes) on open,
on save and on every change -- a burst of typing once it stops (`DEBOUNCE_S`) -- and the
findings are published as diagnostics. Code
actions (`actions.py`) offer each finding's safe fix, all of them at once, and a
suppression comment.

Speed: the process stays up, so everything a check loads once is loaded once for the
session: libclang, the rules, the precompiled preamble and the memoized header hashes
(`cache_session.WarmSessions`; a header that changes on disk starts a fresh session).
Checks run one at a time on a worker thread, never on the event loop, so requests keep
being answered; a change arriving while a check runs makes that check's result stale
(dropped), and only the newest version of a document is checked next. Each check still
runs under the pipeline's per-file bounds (`watchdog.run_bounded`, a forked child): a
source that crashes or hangs libclang costs a KC000, not the server.
"""

from __future__ import annotations

import asyncio
import logging
import os
import queue
import sys
import threading
import traceback
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from .. import __version__
from ..cli_common import user_errors
from ..discover import is_source
from ..finding import Finding
from .actions import FIX_ALL, Document
from .positions import UTF16, encode

if TYPE_CHECKING:  # the caches load with the first check
    from ..cache_session import WarmSessions

# The check of one document: its path, its bytes and the warm caches -> the findings the
# command line reports for them (`cli.check_document`; the command line starts the server).
CheckDocument = Callable[[Path, bytes, "WarmSessions"], list[Finding]]
DEBOUNCE_S = 0.15  # changes less than this apart are one burst of typing: checked once it stops
log = logging.getLogger("kernel-check.server")


class Worker:
    """One daemon thread that runs the checks in the order asked (libclang work stays on one
    thread, and a check in progress does not keep the process alive after `exit`)."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Future[Any], Callable[..., Any], tuple[Any, ...]]] = queue.SimpleQueue()
        threading.Thread(target=self._run, name="kernel-check-worker", daemon=True).start()

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        self._jobs.put((future, fn, args))
        return future

    def _run(self) -> None:
        while True:
            future, fn, args = self._jobs.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args))
            except BaseException as error:  # handed to whoever awaits it
                future.set_exception(error)


class CheckFailed(Exception):
    """A check that produced no findings: the project's configuration is wrong (one line, for
    the user) or the checker failed (with its traceback, for the log)."""


class KernelCheckServer(LanguageServer):
    """The language server: the open documents' check state on top of pygls."""

    def __init__(self, check: CheckDocument) -> None:
        super().__init__("kernel-check", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full)
        from ..cache_session import WarmSessions

        self.check = check
        self.sessions = WarmSessions()
        self.worker = Worker()
        self.wanted: dict[str, int | None] = {}  # uri -> the version to check next (open documents)
        self.checked: dict[str, Document] = {}  # uri -> the published check
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._last_change: dict[str, float] = {}  # uri -> when (event loop time) it last changed
        self._errors: dict[str, str] = {}  # uri -> the configuration error last shown for it

    # -- scheduling (event loop) ------------------------------------------------------------
    def request(self, uri: str, delay: float = 0.0) -> None:
        """Check the document's current version after `delay` seconds (restarted by a newer
        request for the same document)."""
        path = _path(uri)
        if path is None or not is_source(path):
            return
        document = self.workspace.get_text_document(uri)
        self.wanted[uri] = document.version
        if (timer := self._timers.pop(uri, None)) is not None:
            timer.cancel()
        loop = asyncio.get_running_loop()
        self._timers[uri] = loop.call_later(delay, lambda: loop.create_task(self._refresh(uri, path)))

    def changed(self, uri: str) -> None:
        """A change after a pause is checked at once; one that follows another within
        `DEBOUNCE_S` is part of a burst of typing, checked once the burst stops (a check
        already started for the burst's first change is dropped when it ends: stale)."""
        now = asyncio.get_running_loop().time()
        paused = now - self._last_change.get(uri, float("-inf")) >= DEBOUNCE_S
        self._last_change[uri] = now
        self.request(uri, 0.0 if paused else DEBOUNCE_S)

    def forget(self, uri: str) -> None:
        """The document was closed: stop checking it and clear its diagnostics."""
        if (timer := self._timers.pop(uri, None)) is not None:
            timer.cancel()
        self.wanted.pop(uri, None)
        self._last_change.pop(uri, None)
        self.checked.pop(uri, None)
        self._errors.pop(uri, None)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    async def _refresh(self, uri: str, path: Path) -> None:
        self._timers.pop(uri, None)
        if uri not in self.wanted:
            return
        document = self.workspace.get_text_document(uri)
        version, text = document.version, document.source
        try:
            findings = await asyncio.wrap_future(self.worker.submit(self._check, uri, version, path, text))
        except CheckFailed as error:
            self._failed(uri, str(error))
            return
        if findings is None or uri not in self.wanted or self.wanted[uri] != version:
            return  # a newer version is on its way (or the document was closed)
        self._errors.pop(uri, None)
        checked = Document(uri, path, text, findings, self.workspace.position_encoding or UTF16)
        self.checked[uri] = checked
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=checked.diagnostics())
        )

    def _failed(self, uri: str, message: str) -> None:
        """Say once per document and message what stops its check (a broken kernel-check.toml)."""
        if self._errors.get(uri) == message:
            return
        self._errors[uri] = message
        self.window_show_message(types.ShowMessageParams(types.MessageType.Error, message))

    # -- checking (worker thread) -----------------------------------------------------------
    def _check(self, uri: str, version: int | None, path: Path, text: str) -> list[Finding] | None:
        """The findings `kernel-check --stdin-filename PATH` reports for `text`; None when a
        newer version of the document was asked for meanwhile (not worth checking)."""
        if self.wanted.get(uri, -1) != version:
            return None
        try:
            return self.check(path, encode(text), self.sessions)
        except user_errors() as error:
            raise CheckFailed(f"kernel-check: {path.name}: {error}") from None
        except Exception as error:  # one message for the user, the traceback in the log
            log.error("checking %s failed:\n%s", path, traceback.format_exc())
            raise CheckFailed(
                f"kernel-check: internal error checking {path.name}: {type(error).__name__}: {error}"
            ) from None


def _path(uri: str) -> Path | None:
    """The file a `file:` URI names; None for any other scheme (an unsaved buffer)."""
    from pygls.uris import to_fs_path

    if not uri.startswith("file:"):
        return None
    path = to_fs_path(uri)
    return Path(path) if path else None


def build_server(check: CheckDocument) -> KernelCheckServer:
    server = KernelCheckServer(check)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: KernelCheckServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.request(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: KernelCheckServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.changed(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: KernelCheckServer, params: types.DidSaveTextDocumentParams) -> None:
        # a saved header can change what every other open C++ document sees: check them all
        saved = params.text_document.uri
        ls.request(saved)
        if not saved.endswith(".py"):
            for uri in list(ls.wanted):
                if uri != saved and not uri.endswith(".py"):
                    ls.request(uri, DEBOUNCE_S)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: KernelCheckServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.forget(params.text_document.uri)

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL]),
    )
    def code_action(ls: KernelCheckServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        uri = params.text_document.uri
        checked = ls.checked.get(uri)
        if checked is None or checked.text != ls.workspace.get_text_document(uri).source:
            return None  # findings of another version: their positions and edits would be wrong
        return checked.actions(params.range, params.context.only) or None

    return server


def serve(check: CheckDocument) -> int:
    """Run the server on standard input/output until the client says `exit`; `check` checks
    a document (`cli.check_document`, with the server's own flags)."""
    # The protocol gets a private copy of standard output; the descriptor itself now leads
    # to standard error, so nothing else (a library's print, libclang, a forked child) can
    # write into the protocol stream.
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="kernel-check server: %(message)s")
    build_server(check).start_io(sys.stdin.buffer, protocol_out)
    return 0
