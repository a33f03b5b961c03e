#!/usr/bin/env python3
"""Benchmark of `kernel-check server`: how long after an edit an editor shows the new findings.

    python bench/bench_server.py                  # 10 edits of a ~1,000-line kernel
    python bench/bench_server.py --edits 30 --json figures.json
    python bench/bench_server.py --kernel path/to/kernel.cuh

The server is started as an editor starts it (`python -m kernel_check server`, LSP over
standard input/output) and driven by pygls's language client, with a fresh cache
directory. The document is ~1,000 lines of real kernel code: `csrc/norm/rmsnorm.cuh`'s
header block, then its body twice, in namespaces `sglang::v1` and `sglang::v2` (the
largest kernel of `csrc/`, 516 lines, doubled); `--kernel` checks another file as is.

* cold: `didOpen` to the first diagnostics: libclang and the rules loaded, the
  precompiled preamble built (an empty cache), the first parse;
* warm, one edit: each of `--edits` edits (a comment appended to a line in the middle, so
  that the result cache misses and the whole pipeline runs), sent as `didChange` once the
  previous one's diagnostics arrived, to the diagnostics of that version: an edit after a
  pause, which the server checks at once. The CPU seconds the server's processes used
  over these edits (its own and its forked per-file children's, from /proc) are reported
  beside them;
* warm, end of typing: `--edits` bursts of `KEYSTROKES` changes `KEYSTROKE_S` apart, each
  from the burst's last change to the diagnostics of that version: the server's debounce
  (`DEBOUNCE_S`), plus whatever remains of the check it started for the burst's first
  change, plus the check.

The load average is printed too: on a shared machine the wall-clock figures move with
what else runs; CPU seconds do not. No figure here is an assertion (bench/README.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))  # the server of this checkout, without installing it

from kernel_check.server import DEBOUNCE_S  # noqa: E402 - after sys.path names this checkout's src

BASE_KERNEL = REPO / "csrc" / "norm" / "rmsnorm.cuh"
HEADER_LINES = 22  # rmsnorm.cuh: the comment block and the includes, before `namespace sglang {`
WAIT_S = 600.0
KEYSTROKES = 5
KEYSTROKE_S = 0.04  # ~25 characters a second: brisk typing


def doubled_kernel() -> str:
    """rmsnorm.cuh's includes, then its body twice in namespaces of their own (~1,000 lines)."""
    lines = BASE_KERNEL.read_text(encoding="utf-8").splitlines(keepends=True)
    head, body = "".join(lines[:HEADER_LINES]), "".join(lines[HEADER_LINES:])
    assert body.startswith("namespace sglang {"), "rmsnorm.cuh changed: update HEADER_LINES"
    copies = [body.replace("namespace sglang {", f"namespace sglang::v{n} {{", 1) for n in (1, 2)]
    return head + "".join(copies)


def cpu_seconds(pid: int) -> float:
    """User + system CPU of process `pid` and of its children it has waited for."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    ticks = sum(int(value) for value in fields[11:15])  # utime, stime, cutime, cstime
    return ticks / os.sysconf("SC_CLK_TCK")


class Session:
    """The server process and one open document, with each version's publish time."""

    def __init__(self, client: LanguageClient, uri: str) -> None:
        self.client, self.uri = client, uri
        self.published: dict[int, tuple[float, int]] = {}  # version -> (when, how many diagnostics)
        self.arrived = asyncio.Event()

        @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def publish(params: types.PublishDiagnosticsParams) -> None:
            if params.uri == uri and params.version is not None:
                self.published[params.version] = (time.perf_counter(), len(params.diagnostics))
                self.arrived.set()

    async def until_published(self, version: int) -> tuple[float, int]:
        async def wait() -> tuple[float, int]:
            while version not in self.published:
                self.arrived.clear()
                await self.arrived.wait()
            return self.published[version]

        return await asyncio.wait_for(wait(), WAIT_S)


async def measure(kernel: Path, text: str, edits: int, cache: Path) -> dict:
    client = LanguageClient("bench-server", "1")
    uri = kernel.as_uri()
    session = Session(client, uri)
    await client.start_io(
        sys.executable,
        "-m",
        "kernel_check",
        "server",
        "--cache-dir",
        str(cache),
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    await client.initialize_async(
        types.InitializeParams(capabilities=types.ClientCapabilities(), process_id=os.getpid())
    )
    client.initialized(types.InitializedParams())
    pid = client._server.pid  # the server process (pygls keeps it private), for its CPU time

    started = time.perf_counter()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri=uri, language_id="cuda-cpp", version=1, text=text))
    )
    opened, count = await session.until_published(1)
    cold = opened - started

    lines = text.splitlines(keepends=True)
    middle = len(lines) // 2
    version = 1

    def edit(tag: str) -> float:
        nonlocal version
        version += 1
        edited = lines[:middle] + [lines[middle].rstrip("\n") + f"  // {tag}\n"] + lines[middle + 1 :]
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text="".join(edited))],
            )
        )
        return time.perf_counter()

    single = []
    cpu_before = cpu_seconds(pid)
    for number in range(edits):
        sent = edit(f"edit {number}")
        arrived, _ = await session.until_published(version)
        single.append(arrived - sent)
    cpu = cpu_seconds(pid) - cpu_before
    bursts = []
    for number in range(edits):
        await asyncio.sleep(2 * DEBOUNCE_S)  # a pause before each burst
        for key in range(KEYSTROKES):
            if key:
                await asyncio.sleep(KEYSTROKE_S)
            sent = edit(f"burst {number} key {key}")
        arrived, _ = await session.until_published(version)
        bursts.append(arrived - sent)

    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return {
        "lines": len(lines),
        "findings": count,
        "cold_s": cold,
        "edit_s": single,
        "edit_p50_s": statistics.median(single),
        "edit_max_s": max(single),
        "edit_cpu_s": cpu / edits,
        "burst_s": bursts,
        "burst_p50_s": statistics.median(bursts),
        "burst_max_s": max(bursts),
        "debounce_s": DEBOUNCE_S,
        "load_average": os.getloadavg(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edits", type=int, default=10, help="warm edits, and bursts, to time (default 10)")
    parser.add_argument("--kernel", type=Path, help="check this file instead of the doubled rmsnorm.cuh")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kernel-check-bench-server-"))
    try:
        (work / "kernel-check.toml").write_text('mode = "hermetic"\n')
        kernel = work / (args.kernel.name if args.kernel else "rmsnorm_doubled.cuh")
        text = args.kernel.read_text(encoding="utf-8") if args.kernel else doubled_kernel()
        kernel.write_text(text, encoding="utf-8")
        figures = asyncio.run(measure(kernel, text, args.edits, work / "cache"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"kernel: {figures['lines']} lines, {figures['findings']} findings; "
        f"load average {', '.join(f'{x:.2f}' for x in figures['load_average'])} on {os.cpu_count()} CPUs"
    )
    print(f"cold (open -> diagnostics, preamble built): {figures['cold_s']:.2f} s")
    print(
        f"warm, one edit after a pause ({args.edits}): p50 {figures['edit_p50_s']:.3f} s, "
        f"max {figures['edit_max_s']:.3f} s; server CPU {figures['edit_cpu_s']:.3f} s per edit"
    )
    print(
        f"warm, end of a burst of {KEYSTROKES} keystrokes ({args.edits}): p50 {figures['burst_p50_s']:.3f} s, "
        f"max {figures['burst_max_s']:.3f} s (debounce {figures['debounce_s']:.2f} s included)"
    )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
