"""compute-sanitizer: run a command under each tool and turn its reports into findings.

Two users: the harness (a spec's small cases in a child process, one per tool, built
with ``-lineinfo``) and ``kernel-check sanitize -- <command>`` (an existing test command).
Both run with ``PYTORCH_NO_CUDA_MEMORY_CACHING=1``: the caching allocator's slabs hide an
out-of-bounds access of a few hundred bytes from memcheck, and reuse initialized memory
under initcheck.

The text report is a sequence of blocks, each a header line after ``=========`` followed
by indented detail lines; a block's first ``at <function>+0x.. in <file>:<line>`` frame
locates it. Identical reports (same tool, kind, kernel, line) collapse into one finding.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .. import codes, runtime
from ..build import kernel_identifier
from ..finding import Finding, Location
from ..paths import display_path
from ..registry import get_rule
from .protocol import CASE_MARKER

TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")
TOOL_CODE = {
    "memcheck": codes.MEMCHECK,
    "racecheck": codes.RACECHECK,
    "initcheck": codes.INITCHECK,
    "synccheck": codes.SYNCCHECK,
}
ERROR_EXITCODE = 86
PRINT_LIMIT = 64
# initcheck watches every kernel (PyTorch's too, so that their writes count as initializing):
# reports from library kernels, dropped later, must not use up the printed reports
PRINT_LIMIT_UNFILTERED = {"initcheck": 1000}
SANITIZER_ENV = {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1", "KERNEL_CHECK_LINEINFO": "1"}

_LINE = re.compile(r"^=========(?P<indent>\s*)(?P<text>.*)$")
# a frame: the demangled function, its code offset, and the source line with -lineinfo
_FRAME_BODY = r"(?P<function>.+?)(?:\+0x[0-9a-fA-F]+)?(?: in (?P<path>\S+?):(?P<line>\d+))?"
_FRAME = re.compile(rf"\bat {_FRAME_BODY}(?: \[|$)")
# a device call-stack line under a report whose first frame is a device function the kernel
# called (not inlined): the last such line is the ``__global__`` function itself
_DEVICE_FRAME = re.compile(rf"^Device Frame: {_FRAME_BODY}$")
_THREAD = re.compile(r"by thread \((?P<thread>[\d,\s]+)\) in block \((?P<block>[\d,\s]+)\)")
_HAZARDS = re.compile(r"\[(\d+) hazards?\]")
_NOT_A_REPORT = re.compile(
    r"^(COMPUTE-SANITIZER|ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY|Target application returned|"
    r"This tool|Note:|Internal Sanitizer Error: |Saved host backtrace|Host Frame)"
)


@dataclass(frozen=True)
class SanitizerReport:
    """One report block of compute-sanitizer's text output."""

    tool: str
    kind: str  # the header, without its location ("Invalid __global__ write of size 4 bytes")
    function: str = ""  # the kernel: the outermost device frame's function, demangled
    path: str = ""  # where in the kernel: the access itself, or the call that led to it
    line: int = 0
    callee: str = ""  # "function at file:line" of the access, when a device function made it
    thread: str = ""
    block: str = ""
    hazards: int = 1
    text: str = ""
    case: str = ""  # the harness case running when it was reported (its CASE_MARKER line)

    @property
    def kernel(self) -> str:
        return kernel_identifier(self.function) if self.function else ""

    def key(self) -> tuple[str, str, str, str, int]:
        return (self.tool, self.kind, self.kernel, self.path, self.line)


def _blocks(output: str) -> Iterable[tuple[str, list[str]]]:
    """Header-plus-detail groups of the ``=========``-prefixed lines, each with the case
    (the last CASE_MARKER line before it) that was running."""
    block: list[str] = []
    case = current = ""
    for raw in output.splitlines():
        if raw.startswith(CASE_MARKER):
            current = raw[len(CASE_MARKER) :].strip()
            continue
        match = _LINE.match(raw)
        if not match:
            continue
        text = match["text"].rstrip()
        if not text:
            if block:
                yield case, block
            block = []
        elif not match["indent"].startswith(" " * 2) or not block:
            if block:
                yield case, block
            block, case = [text], current
        else:
            block.append(text.strip())
    if block:
        yield case, block


def _report(tool: str, block: list[str], case: str = "") -> SanitizerReport | None:
    header = block[0].removeprefix("Error: ").removeprefix("Warning: ")
    if _NOT_A_REPORT.match(block[0]) or _NOT_A_REPORT.match(header):
        return None
    frame = None
    for text in block:
        if text.startswith(("Saved host backtrace", "Host Frame")):
            continue
        frame = _FRAME.search(text)
        if frame:
            break
    thread = next((m for m in map(_THREAD.search, block) if m), None)
    hazards = next((int(m.group(1)) for m in map(_HAZARDS.search, block) if m), 1)
    kind = re.sub(r"\s+at .*$", "", header)  # racecheck puts the first frame in the header
    if len(block) > 1 and block[1].startswith("and "):  # ... and the second access on the next line
        kind += " " + re.sub(r"\s+at .*$", "", block[1])
    kernel = next((m for m in map(_DEVICE_FRAME.match, reversed(block)) if m), None)
    callee = ""
    if frame and kernel:  # the access sits in a helper: name the kernel and its call, keep the helper
        where = f" at {frame['path']}:{frame['line']}" if frame["path"] and frame["line"] else ""
        callee, frame = frame["function"].strip() + where, kernel
    return SanitizerReport(
        tool=tool,
        kind=kind,
        function=frame["function"].strip() if frame else "",
        path=frame["path"] or "" if frame else "",
        line=int(frame["line"]) if frame and frame["line"] else 0,
        callee=callee,
        thread=thread["thread"].replace(" ", "") if thread else "",
        block=thread["block"].replace(" ", "") if thread else "",
        hazards=hazards,
        text="\n".join(block),
        case=case,
    )


def parse_output(tool: str, output: str) -> list[SanitizerReport]:
    """Every report block of ``output`` (compute-sanitizer's text) for ``tool``."""
    reports = (_report(tool, block, case) for case, block in _blocks(output))
    return [r for r in reports if r is not None]


@dataclass
class ReportGroup:
    first: SanitizerReport
    count: int = 0
    hazards: int = 0


def group_reports(reports: Iterable[SanitizerReport]) -> list[ReportGroup]:
    groups: dict[tuple, ReportGroup] = {}
    for report in reports:
        group = groups.setdefault(report.key(), ReportGroup(report))
        group.count += 1
        group.hazards += report.hazards
    return list(groups.values())


def resolve_source(path: str, search: Sequence[Path]) -> str:
    """The file a report names: ``-lineinfo`` records the name as the compiler saw it
    (often bare, ``scale.cuh``), so try it as is, then under each search folder."""
    candidate = Path(path)
    if candidate.is_absolute() and candidate.exists():
        return display_path(candidate)
    for folder in search:
        if (folder / path).is_file():
            return display_path(folder / path)
    return path


def report_findings(
    reports: Iterable[SanitizerReport],
    *,
    fallback: Location,
    context: str = "",
    kernels: Sequence[str] = (),
    search: Sequence[Path] = (),
) -> list[Finding]:
    """One finding per distinct report; ``kernels`` (when given) keeps only those kernels'.

    ``search`` holds the folders where a report's bare file name is looked up.
    """
    findings = []
    for group in group_reports(reports):
        report = group.first
        if kernels and report.kernel not in kernels:
            continue
        rule = get_rule(TOOL_CODE[report.tool])
        assert rule is not None
        location = fallback
        if report.path and report.line:
            location = Location(resolve_source(report.path, search), report.line)
        where = f" in {report.kernel}" if report.kernel else ""
        if report.callee:
            where += f" (through {report.callee})"
        thread = f"; e.g. thread ({report.thread}) block ({report.block})" if report.thread else ""
        repeats = f" ({group.count} reports)" if group.count > 1 else ""
        hazards = f", {group.hazards} hazards" if report.tool == "racecheck" else ""
        message = f"{report.tool}: {report.kind}{where}{repeats}{hazards}{thread}"
        scope = "; ".join(part for part in (context, report.case) if part)
        if scope:
            message += f" [{scope}]"
        findings.append(Finding(rule.meta.code, message, location, rule.meta.severity, (), None, report.text))
    return findings


# ----- running -----


def find_sanitizer() -> str | None:
    """compute-sanitizer on PATH, beside nvcc, or in the toolkit's own folder."""
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    nvcc = runtime.find_nvcc()
    homes = [Path(os.environ[v]) for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    if nvcc is not None:
        homes.append(nvcc.parent.parent)
    for home in homes:
        for candidate in (home / "bin" / "compute-sanitizer", home / "compute-sanitizer" / "compute-sanitizer"):
            if candidate.is_file():
                return str(candidate)
    return None


def sanitizer_command(
    sanitizer: str, tool: str, command: Sequence[str], *, kernels: Sequence[str] = (), api_errors: bool = True
) -> list[str]:
    """The compute-sanitizer command line for one tool around ``command``.

    ``kernels`` limits checking to kernels whose name contains one of them (the filters
    are additive); the others run uninstrumented, which matters most for racecheck.
    """
    limit = PRINT_LIMIT if kernels else PRINT_LIMIT_UNFILTERED.get(tool, PRINT_LIMIT)
    args = [
        sanitizer,
        "--tool",
        tool,
        "--error-exitcode",
        str(ERROR_EXITCODE),
        "--print-limit",
        str(limit),
        "--target-processes",
        "all",
    ]
    if not api_errors:
        args += ["--report-api-errors", "no"]
    for kernel in kernels:
        args += ["--kernel-name", f"kns={kernel}"]
    return args + list(command)


def sanitizer_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env.update(SANITIZER_ENV)
    return env


@dataclass
class ToolRun:
    """One tool's run of a command: the reports it printed and how the command ended."""

    tool: str
    returncode: int | None
    timed_out: bool
    reports: list[SanitizerReport] = field(default_factory=list)
    output: str = ""
    stopped: bool = False  # the run was stopped (signal, overall time limit) before the tool ended
    # the error of a case that poisoned the CUDA context (the harness child's "fatal" event),
    # "" when none did: the kernel faulted, so the child ended early with no report of the tool
    fault: str = ""
    events: list[dict] = field(default_factory=list)  # the harness child's events (`child.py`)

    @property
    def command_failed(self) -> bool:
        return self.timed_out or self.returncode not in (0, ERROR_EXITCODE)


def run_tool(
    tool: str,
    command: Sequence[str],
    *,
    timeout: float,
    kernels: Sequence[str] = (),
    api_errors: bool = True,
    env: Mapping[str, str] | None = None,
) -> ToolRun:
    """Run ``command`` under one tool (a timeout kills the whole process group)."""
    from .process import run_child

    sanitizer = find_sanitizer()
    if sanitizer is None:
        raise FileNotFoundError("compute-sanitizer not found (it ships with the CUDA toolkit)")
    try:
        exit_ = run_child(
            sanitizer_command(sanitizer, tool, command, kernels=kernels, api_errors=api_errors),
            sanitizer_env(env),
            startup_timeout=timeout,
            case_timeout=timeout,
            keep_output=True,
        )
    except OSError as error:  # not executable, or a broken interpreter line: it never started
        return ToolRun(tool, None, False, output=f"cannot run {sanitizer}: {error}")
    output = "\n".join(exit_.output)
    fault = next((str(e.get("error") or "the kernel faulted") for e in exit_.events if e["event"] == "fatal"), "")
    reports = parse_output(tool, output)
    return ToolRun(tool, exit_.returncode, exit_.timed_out, reports, output, exit_.stopped, fault, exit_.events)


def sanitize_command(
    command: Sequence[str], tools: Sequence[str], *, timeout: float, root: Path
) -> tuple[list[Finding], list[ToolRun]]:
    """``kernel-check sanitize -- <command>``: every tool in turn, findings from all."""
    fallback = Location(display_path(root / "pyproject.toml") if (root / "pyproject.toml").exists() else ".", 1)
    findings: list[Finding] = []
    runs = []
    for tool in tools:
        run = run_tool(tool, command, timeout=timeout)
        runs.append(run)
        findings.extend(
            report_findings(run.reports, fallback=fallback, context=" ".join(command)[:120], search=(Path.cwd(), root))
        )
    return findings, runs
