"""Fuzz cases: how one is generated (deterministically from a profile seed and an index),
written into a small tree, run through the real static pipeline, and judged.

The pipeline entry points are the real ones: `kernel_check.engine.check_file` with
`RunOptions` (and a precompiled-preamble cache for header-heavy seeds, as the command
line uses), and `python -m kernel_check` in a subprocess for the CLI batches.

The invariants every case must keep (`judge`):

* no exception escapes `check_file`; the CLI exits 0 or 1 (2 would be an internal error:
  the arguments are valid), without a traceback or an "internal error" line;
* every finding is a well-formed `Finding` for the checked file, with a registered code;
  a file the pipeline could not handle has a `KC000`, never an empty silence;
* no `KC000` says "internal error" (a rule or the engine crashed) or "crashed" (the parser
  died); a timed-out file names the `file-timeout` limit;
* an oversized file (over `max-file-bytes`) and a binary one get exactly one `KC000`;
* Python that `ast` cannot parse gets a `KC000` and no rule finding;
* no rule fires on a line inside a declaration clang marked invalid
  (`clang_isInvalidDeclaration`), and none at all when a header had an error;
* the checked tree is byte-for-byte what the case wrote (no file changed, none added).
"""

from __future__ import annotations

import ast
import contextlib
import ctypes
import io
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel_check.report import STATISTICS_FORMATS

from . import corpus
from .mutate import OPERATORS, Context, mutate

CPP_OPERATORS = [name for name in OPERATORS if name not in ("python-soup", "indentation")]
PY_OPERATORS = [name for name in OPERATORS if name not in ("template-soup", "include-cycle")]
# Operators that keep a heavy file on its precompiled preamble (quick profile): they act
# after the include block only. Everything else may also rewrite the includes.
EXEC_MARKER = Path("/tmp/kc-fuzz-marker")  # python-soup plants code that would create it if run
# KC000 messages that report a bug rather than a bad input (no seed contains these words,
# so in any output format they come from the checker).
_BAD_KC000_RE = re.compile(r"internal error[^\n\"<]*|the static pipeline crashed[^\n\"<]*")


@dataclass(frozen=True)
class Profile:
    name: str
    seed: int
    size: float  # scale of huge lines and deep nesting (1.0: up to 1.5 MB lines, depth 5000)
    max_mutations: int
    python_share: float
    heavy_share: float  # of the C++ cases: seeds that include the sgl_kernel headers
    body_only_heavy: bool  # heavy seeds keep their include block (their parse stays on the PCH)
    cli_every: int  # every Nth case is a CLI batch (0: none)
    system_share: float = 0.0  # of the C++ cases: parse in system mode (real CUDA headers)
    config_variants: bool = True
    heavy_operators: tuple[str, ...] | None = None  # None: every operator
    base_config: str = ""  # [tool.kernel-check] lines every case of the profile gets


# The quick profile keeps most C++ cases on small header-free seeds (one cheap plain parse)
# and gives the header-heavy ones operators that rarely push a file past clang's error limit.
QUICK = Profile(
    "quick",
    seed=20240611,
    size=0.04,
    max_mutations=2,
    python_share=0.45,
    heavy_share=0.04,
    body_only_heavy=True,
    cli_every=75,
    heavy_operators=(
        "delete-tokens",
        "duplicate-tokens",
        "swap-tokens",
        "truncate",
        "random-bytes",
        "flip-bits",
        "non-utf8",
        "huge-line",
        "deep-nesting",
        "suppression-soup",
        "unterminated",
        "comment-out",
        "template-soup",
    ),
    # A generous bound: on a loaded CI machine a 20 s wall-clock limit can fire on a
    # slow-but-fine case; tests/test_time_bound.py covers the bound itself.
    base_config="file-timeout = 60\n",
)
LONG = Profile(
    "long",
    seed=7,
    size=1.0,
    max_mutations=4,
    python_share=0.4,
    heavy_share=0.25,
    body_only_heavy=False,
    cli_every=60,
    system_share=0.03,
)
PROFILES = {p.name: p for p in (QUICK, LONG)}

_CONFIGS = (
    "",
    "strict = true\n",
    "max-file-bytes = 4096\n",
    'select = ["KC1", "KC3", "KC5"]\n',
    'ignore = ["KC310"]\nper-file-ignores = { "csrc/**" = ["KC101"] }\n',
    'severity = { KC101 = "info", KC130 = "warning" }\n',
)


@dataclass
class Case:
    index: int
    kind: str  # "cpp", "python" or "cli"
    seed: str
    relpath: str
    data: bytes
    mutations: list[str]
    extra_files: dict[str, bytes] = field(default_factory=dict)
    config: str = ""
    mode: str = "hermetic"
    use_preamble: bool = True
    batch: list[tuple[str, bytes]] = field(default_factory=list)  # cli: (relpath, bytes)
    cli_args: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"#{self.index} {self.kind} {self.seed} [{', '.join(self.mutations)}]"

    def files(self) -> dict[str, bytes]:
        tree = {"pyproject.toml": b"[tool.kernel-check]\n" + self.config.encode()}
        tree.update(self.extra_files)
        if self.kind == "cli":
            tree.update(dict(self.batch))
        else:
            tree[self.relpath] = self.data
        return tree


def _mutated(seed: corpus.Seed, rng: random.Random, profile: Profile, count: int) -> tuple[bytes, list[str], dict]:
    ctx = Context(
        name=seed.relpath.rsplit("/", 1)[-1],
        relpath=seed.relpath,
        language=seed.language,
        size=profile.size,
        body_only=profile.body_only_heavy and seed.heavy,
    )
    pool = CPP_OPERATORS if seed.language == "cpp" else PY_OPERATORS
    if seed.heavy and profile.heavy_operators:
        pool = [name for name in pool if name in profile.heavy_operators]
    names = [rng.choice(pool) for _ in range(count)]
    data = mutate(seed.data, names, rng, ctx)
    return data, names, ctx.extra_files


def make_case(profile: Profile, index: int) -> Case:
    rng = random.Random(f"{profile.name}:{profile.seed}:{index}")
    config = profile.base_config + (rng.choice(_CONFIGS) if profile.config_variants and rng.random() < 0.3 else "")
    if profile.cli_every and index % profile.cli_every == profile.cli_every - 1:
        return _cli_case(profile, index, rng, config)
    if rng.random() < profile.python_share:
        seed = rng.choice(corpus.by_kind("python"))
        kind = "python"
    else:
        heavy = rng.random() < profile.heavy_share
        candidates = corpus.by_kind("cpp", heavy=heavy, small=True if profile.name == "quick" else None)
        seed = rng.choice(candidates or corpus.by_kind("cpp"))
        kind = "cpp"
    data, names, extra = _mutated(seed, rng, profile, rng.randint(1, profile.max_mutations))
    mode = "system" if kind == "cpp" and rng.random() < profile.system_share else "hermetic"
    use_preamble = seed.heavy or rng.random() < 0.5
    return Case(index, kind, seed.name, seed.relpath, data, names, extra, config, mode, use_preamble)


def _cli_case(profile: Profile, index: int, rng: random.Random, config: str) -> Case:
    pool = [s for s in corpus.seeds() if s.small] if profile.name == "quick" else list(corpus.seeds())
    batch: list[tuple[str, bytes]] = []
    extra: dict[str, bytes] = {}
    names: list[str] = []
    for seed in rng.sample(pool, k=min(len(pool), rng.randint(2, 5))):
        data, ops, more = _mutated(seed, rng, profile, rng.randint(1, profile.max_mutations))
        batch.append((seed.relpath, data))
        extra.update(more)
        names.extend(ops)
    fmt = rng.choice(("json", "json", "sarif", "text", "github", "junit"))
    args = ["--format", fmt, "-j", str(rng.choice((1, 2)))]
    if rng.random() < 0.3 and fmt in STATISTICS_FORMATS:  # the others refuse it: a usage error, no case
        args.append("--statistics")
    if rng.random() < 0.2:
        args.append("--strict")
    return Case(
        index,
        "cli",
        "batch:" + ",".join(p for p, _ in batch),
        "",
        b"",
        names,
        extra,
        config,
        batch=batch,
        cli_args=args,
    )


# -- running ----------------------------------------------------------------------------------
@dataclass
class Outcome:
    index: int
    label: str
    seconds: float
    codes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    timed_out: bool = False
    note: str = ""
    cpu: float = 0.0  # CPU seconds of this process and the children it waited for

    @property
    def signatures(self) -> list[str]:
        """Each problem's first line with paths and numbers blurred, to group alike failures."""
        return sorted({_signature(p) for p in self.problems})

    @property
    def new_problems(self) -> list[str]:
        """The problems no known open bug explains (see known.py)."""
        from .known import unexplained

        return unexplained(self.problems)


def _signature(problem: str) -> str:
    line = problem.splitlines()[0] if problem else ""
    line = re.sub(r"/\S+", "<path>", line)
    line = re.sub(r"'[^']*'", "'…'", line)
    return re.sub(r"\d+", "N", line)[:160]


def _cpu_seconds() -> float:
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class ParseSpy:
    """Records, for every translation unit `kernel_check.clang.parse.parse_file` returns,
    what the erroneous-declaration invariant needs: clang's errors and the main-file
    declarations clang marked invalid. The unit itself is returned untouched. Records go
    to files (outside the checked tree) because the parse may run in the watchdog's child."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def install(self) -> None:
        import kernel_check.clang.parse as parse_module

        original = parse_module.parse_file
        if getattr(original, "fuzz_spy", None) is not None:
            original = original.fuzz_spy

        def parse_file(path, source, settings, preamble=None):
            unit = original(path, source, settings, preamble)
            self._record(path, unit)
            return unit

        # the spy keeps the original, so that installing it again wraps that (mypy types no function attributes)
        parse_file.fuzz_spy = original  # type: ignore[attr-defined]
        parse_module.parse_file = parse_file

    def _file(self, path: Path | str) -> Path:
        import hashlib

        return self.directory / (hashlib.sha1(str(path).encode()).hexdigest() + ".json")

    def _record(self, path: Path, unit: Any) -> None:
        try:
            record: dict[str, Any] = {
                "errors": len(unit.errors),
                "header_error": any(not e.in_main_file for e in unit.errors),
                "invalid": invalid_declaration_lines(unit) if unit.errors else [],
            }
        except Exception as error:  # the spy must never change the pipeline's behaviour
            record = {"spy_error": f"{type(error).__name__}: {error}"}
        try:
            self._file(path).write_text(json.dumps(record))
        except OSError:
            pass

    def take(self, path: Path | str) -> dict[str, Any] | None:
        target = self._file(path)
        try:
            record = json.loads(target.read_text())
        except (OSError, ValueError):
            return None
        target.unlink()
        return record


class Environment:
    """What a process running cases keeps between them: rules, settings, preamble cache."""

    def __init__(self, workdir: Path, cache_dir: Path) -> None:
        from kernel_check.clang.parse import resolve_settings
        from kernel_check.registry import all_rules, load_rules

        load_rules()
        self.workdir = Path(workdir)
        self.cache_dir = Path(cache_dir)
        self.spy = ParseSpy(self.workdir / "spy")
        self.spy.install()
        self.codes = {r.meta.code for r in all_rules()}
        self.settings = {"hermetic": resolve_settings("hermetic")}
        try:
            self.settings["system"] = resolve_settings("system")
        except Exception:  # no CUDA install: system cases run hermetic
            self.settings["system"] = self.settings["hermetic"]
        self._preamble: Any = None

    @property
    def preamble(self) -> Any:
        if self._preamble is None:
            from kernel_check.cache import static_root
            from kernel_check.clang.preamble import PreambleCache

            # The layout the command line uses, so the CLI batches reuse the same PCH.
            self._preamble = PreambleCache(static_root(self.cache_dir) / "preamble", "union")
        return self._preamble


def materialize(case: Case, root: Path) -> dict[str, bytes]:
    if root.exists():
        shutil.rmtree(root)
    tree = case.files()
    for rel, data in tree.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return tree


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def run_case(case: Case, env: Environment) -> Outcome:
    root = env.workdir / f"case-{os.getpid()}"
    tree = materialize(case, root)
    started, cpu = time.perf_counter(), _cpu_seconds()
    outcome = Outcome(case.index, case.label, 0.0)
    try:
        if case.kind == "cli":
            _run_cli(case, root, env, outcome)
        else:
            _run_file(case, root, env, outcome)
    except BaseException as error:  # an escaped exception is the finding
        import traceback

        outcome.problems.append(f"exception escaped: {type(error).__name__}: {error}\n" + traceback.format_exc(limit=8))
    outcome.seconds = time.perf_counter() - started
    outcome.cpu = _cpu_seconds() - cpu
    after = snapshot(root)
    if after != tree:
        changed = sorted(set(after) ^ set(tree) | {k for k in tree if k in after and after[k] != tree[k]})
        outcome.problems.append(f"the checked tree changed: {changed[:5]}")
    if EXEC_MARKER.exists():
        outcome.problems.append(f"checked code was executed: {EXEC_MARKER} exists")
    return outcome


def _run_file(case: Case, root: Path, env: Environment, outcome: Outcome) -> None:
    from kernel_check.config import load_config
    from kernel_check.engine import RunOptions, check_file

    path = root / case.relpath
    config = load_config(path)
    settings = env.settings[case.mode]
    options = RunOptions(config, settings)
    preamble = env.preamble if case.kind == "cpp" and case.use_preamble else None
    env.spy.take(path)
    captured = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stderr(captured):
        warnings.simplefilter("ignore")
        result = check_file(path, options, preamble)
    noise = captured.getvalue()
    for marker in ("Traceback (most recent call last)", "Exception ignored", "RecursionError"):
        if marker in noise:
            outcome.problems.append(f"the pipeline wrote {marker!r} to stderr:\n{noise[:1500]}")
            break
    judge_file(case, path, config, result, env, outcome, preamble)
    env.spy.take(path)
    if (
        result.findings
        and not any(f.code == "KC000" for f in result.findings)
        and any(f.fix is not None for f in result.findings)
    ):
        _check_fixes(case, root, env, outcome, options, preamble)


def _check_fixes(case: Case, root: Path, env: Environment, outcome: Outcome, options: Any, preamble: Any) -> None:
    """`--fix` on a copy of the tree: a file clang parsed cleanly must still parse cleanly
    after its safe fixes, and the fixed findings must be gone (a misplaced edit shows here)."""
    from kernel_check.engine import check_file
    from kernel_check.fix import apply_fixes

    copy = env.workdir / f"fix-{os.getpid()}"
    materialize(case, copy)
    path = copy / case.relpath
    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        before = check_file(path, options, preamble).findings
        if any(f.code == "KC000" for f in before):
            return  # the copy parses differently (a path-dependent include): nothing to judge
        applied = apply_fixes(before)
        after = check_file(path, options, preamble).findings
    if not applied:
        return
    try:
        case.data.decode("utf-8")
        encoding = ""
    except UnicodeDecodeError:
        encoding = " (file is not valid UTF-8)"
    if any(f.code == "KC000" for f in after):
        broken = next(f for f in after if f.code == "KC000")
        outcome.problems.append(
            f"--fix broke a file that parsed cleanly: {broken.message} "
            f"(line {broken.line}; {sum(applied.values())} fixes applied){encoding}"
        )

    def fixable(findings: list) -> int:
        return sum(1 for f in findings if f.fix is not None)

    if fixable(after) >= fixable(before):
        outcome.problems.append(
            f"--fix applied {sum(applied.values())} fixes but {fixable(after)} of "
            f"{fixable(before)} fixable findings remain{encoding}"
        )


def judge_file(
    case: Case, path: Path, config: Any, result: Any, env: Environment, outcome: Outcome, preamble: Any
) -> None:
    from kernel_check.engine import FileResult
    from kernel_check.finding import Finding, Severity

    problems = outcome.problems
    if not isinstance(result, FileResult) or result.path != str(path):
        problems.append(f"not a FileResult for the file: {result!r:.200}")
        return
    findings = result.findings
    outcome.codes = sorted({f.code for f in findings})
    line_count = case.data.count(b"\n") + case.data.count(b"\r") + 2
    for f in findings:
        if not isinstance(f, Finding) or not isinstance(f.severity, Severity):
            problems.append(f"malformed finding {f!r:.200}")
            continue
        if f.code not in env.codes:
            problems.append(f"unregistered code {f.code}")
        if f.path != str(path):
            problems.append(f"{f.code} reported on another file: {f.path}")
        if not (1 <= f.line <= line_count) or f.location.column < 1:
            problems.append(
                f"{f.code} at an impossible position {f.line}:{f.location.column} (file has {line_count - 2}+ lines)"
            )
        if not isinstance(f.message, str) or not f.message.strip():
            problems.append(f"{f.code} with an empty message")
    kc000 = [f for f in findings if f.code == "KC000"]
    for f in kc000:
        if "internal error" in f.message:
            problems.append(f"{f.message}\n{f.detail[-1500:]}")
        elif "crashed" in f.message:
            problems.append(f"parser crash: {f.message}\n{f.detail[-1500:]}")
        elif "ran out of memory" in f.message:
            outcome.note = "out of memory (bounded)"
        elif "file-timeout" in f.message:
            outcome.timed_out = True
    limit = config.get("max-file-bytes")
    if len(case.data) > limit or b"\x00" in case.data:
        if len(findings) != 1 or not kc000:
            problems.append(f"oversized/binary file: expected one KC000, got {outcome.codes}")
        elif len(case.data) > limit and "max-file-bytes" not in kc000[0].message:
            problems.append(f"oversized file's KC000 does not name the limit: {kc000[0].message}")
        return
    rule_findings = [f for f in findings if f.code not in ("KC000", "KC001")]
    kc000_suppressed = b"KC000" in case.data.upper() or "KC000" in case.config  # an inline ignore[KC000]
    if case.kind == "python":
        if _python_unparsable(case.data):
            if not kc000 and not kc000_suppressed:
                problems.append("python that ast cannot parse has no KC000")
            if rule_findings:
                problems.append(f"rules fired on unparsable python: {[f.code for f in rule_findings]}")
        return
    # rules that read the text alone report on every file, whatever clang made of it
    model_findings = [f for f in rule_findings if not _reads_text_alone(f.code)]
    if model_findings and any(f.message.startswith("clang could not parse") for f in kc000):
        _check_erroneous_declarations(path, case, env, model_findings, problems, preamble)


def _reads_text_alone(code: str) -> bool:
    from kernel_check.pipeline import reads_text_alone
    from kernel_check.registry import get_rule

    registered = get_rule(code)
    return registered is not None and reads_text_alone(registered)


def _python_unparsable(data: bytes) -> bool:
    text = data.decode("utf-8", errors="replace")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    return False


def _invalid_declaration_fn() -> Any:
    from kernel_check.clang.parse import cindex

    ci = cindex()
    function = ci.conf.lib.clang_isInvalidDeclaration
    function.argtypes = [ci.Cursor]
    function.restype = ctypes.c_uint
    return function


def invalid_declaration_lines(unit: Any) -> list[tuple[int, int]]:
    """(first, last) lines of every main-file declaration clang marked invalid."""
    is_invalid = _invalid_declaration_fn()
    main = unit.path
    spans = []
    stack = [c for c in unit.tu.cursor.get_children() if c.location.file and c.location.file.name == main]
    while stack:
        cursor = stack.pop()
        try:
            if cursor.kind.is_declaration() and is_invalid(cursor):
                spans.append((cursor.extent.start.line, cursor.extent.end.line))
        except ValueError:  # a cursor kind these bindings do not know
            pass
        stack.extend(cursor.get_children())
    return spans


def _check_erroneous_declarations(
    path: Path, case: Case, env: Environment, rule_findings: list, problems: list[str], preamble: Any
) -> None:
    record = env.spy.take(path)
    if record is None:  # the engine parsed without `parse_file` (or not at all): parse again
        from kernel_check.clang.parse import parse_file

        parse = getattr(parse_file, "fuzz_spy", parse_file)
        unit = parse(path, case.data, env.settings[case.mode], preamble)  # the bytes, as the engine does
        record = {
            "errors": len(unit.errors),
            "header_error": any(not e.in_main_file for e in unit.errors),
            "invalid": invalid_declaration_lines(unit),
        }
    if "spy_error" in record:
        problems.append(f"cannot check the erroneous-declaration invariant: {record['spy_error']}")
        return
    if not record["errors"]:
        return
    if record["header_error"]:
        problems.append(f"rules fired although a header had an error: {[(f.code, f.line) for f in rule_findings]}")
        return
    for f in rule_findings:
        for first, last in record["invalid"]:
            if first <= f.line <= last:
                problems.append(
                    f"{f.code} fired on line {f.line}, inside a declaration clang marked "
                    f"invalid (lines {first}-{last}): {f.message}"
                )
                break


# -- the command line ---------------------------------------------------------------------------
def _run_cli(case: Case, root: Path, env: Environment, outcome: Outcome) -> None:
    # as pre-commit runs it (not `-m`, which puts cwd on sys.path)
    script = Path(sys.executable).with_name("kernel-check")
    command = [str(script)] if script.is_file() else [sys.executable, "-P", "-m", "kernel_check"]
    argv = [*command, str(root), "--mode", "hermetic", "--cache-dir", str(env.cache_dir), *case.cli_args]
    environ = {k: v for k, v in os.environ.items() if not k.startswith("KERNEL_CHECK_")}
    proc = subprocess.run(argv, capture_output=True, timeout=600, cwd=root, env=environ, stdin=subprocess.DEVNULL)
    out = proc.stdout.decode("utf-8", errors="replace")
    err = proc.stderr.decode("utf-8", errors="replace")
    outcome.note = f"cli rc={proc.returncode} {' '.join(case.cli_args)}"
    if proc.returncode not in (0, 1):
        outcome.problems.append(f"exit code {proc.returncode} (expected 0 or 1)\nstderr: {err[-2000:]}")
    for marker in ("Traceback (most recent call last)", "internal error", "crashed"):
        if marker in err:
            outcome.problems.append(f"stderr contains {marker!r}\nstderr: {err[-2000:]}")
    for match in _BAD_KC000_RE.finditer(out):
        outcome.problems.append(f"output reports {match.group(0)!r}")
    fmt = case.cli_args[case.cli_args.index("--format") + 1]
    if fmt in ("json", "sarif") and "--statistics" not in case.cli_args:
        try:
            document = json.loads(out)
        except ValueError as error:
            outcome.problems.append(f"{fmt} output is not JSON: {error}: {out[:300]!r}")
            return
        if fmt == "json":
            strict = "--strict" in case.cli_args or "strict = true" in case.config
            failing = {"error", "warning"} if strict else {"error"}
            gate = any(item["severity"] in failing for item in document)
            outcome.codes = sorted({item["code"] for item in document})
            if proc.returncode in (0, 1) and gate != (proc.returncode == 1):
                outcome.problems.append(
                    f"exit code {proc.returncode} disagrees with the findings (gate {'fails' if gate else 'passes'})"
                )
            unknown = {item["code"] for item in document} - env.codes
            if unknown:
                outcome.problems.append(f"unregistered codes {sorted(unknown)}")
        for item in document if fmt == "json" else []:
            if item["code"] == "KC000" and "file-timeout" in item["message"]:
                outcome.timed_out = True
