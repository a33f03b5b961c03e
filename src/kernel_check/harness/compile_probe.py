"""Compile probes: does each instantiation of a spec build? nvcc only, no GPU.

``kernel-check spec check PATH`` and the drafter (``draft.py``, which keeps only the
candidate instantiations that build) ask the same question. A probe is the harness's own
build (``build.build_specs``: one module per spec, then one instantiation at a time when
the module fails), so what builds here builds in ``kernel-check test``. Successes are in the
JIT cache already; failures are remembered too, under the same key (the generated source,
every header it reaches through the include directories, the flags, the arch and the nvcc
version: ``runtime.compute_key``) and the include directories searched, so probing an
unchanged draft again costs no compile.
``KERNEL_CHECK_JIT_FORCE_REBUILD=1`` ignores both.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import runtime
from ..build import BuildOutcome, BuildTarget, build_all, ensure_arch_for_compile_only
from .build import build_specs, target_label
from .spec import KernelSpec

FAILURES_FOLDER = "probe-failures"
# nvcc's `FILE(LINE): error: ...`, gcc's `FILE:LINE:COL: error: ...`, ptxas's `ptxas error : ...`
_ERROR_LINE = re.compile(r"(?:\): (?:catastrophic )?error|:\d+:(?:\d+:)? (?:fatal )?error|^ptxas\w* (?:fatal|error))")
# the generated translation unit lives in a temporary build folder: its path says nothing
_GENERATED = re.compile(r"\S*/\.[\w.-]+\.tmp-[\w-]+/")


@dataclass(frozen=True)
class ProbeResult:
    """One instantiation: built, or the compiler's first error line."""

    label: str  # SPEC[ID]
    built: bool
    error: str = ""


def first_error(log: str) -> str:
    """The compiler's first error line (the generated file's temporary folder dropped)."""
    line = next((ln.strip() for ln in log.splitlines() if _ERROR_LINE.search(ln.strip())), "")
    if not line:
        line = next((ln.strip() for ln in log.splitlines() if "error" in ln.lower()), log.strip()[:200])
    return _GENERATED.sub("", line)[:300]


def _failure_file(target: BuildTarget, lineinfo: bool) -> Path | None:
    """Where a failed build of ``target`` is remembered (None: no key, e.g. a missing file)."""
    try:
        key = runtime.compute_key(
            *target.marker,
            cuda_files=target.cuda_files,
            cuda_wrappers=target.wrappers,
            csrc_root=target.csrc_root,
            extra_cuda_cflags=target.extra_cuda_cflags,
            extra_include_paths=target.include_dirs,
            lineinfo=lineinfo,
        )
    except runtime.BuildError:
        return None
    # the JIT key leaves out where headers are searched (what was found is in it by content):
    # a header that was missing may be found once a folder is added
    searched = json.dumps([target.csrc_root, list(target.include_dirs)])
    key = hashlib.sha256(f"{key}\0{searched}".encode()).hexdigest()
    return runtime.jit_cache_root() / FAILURES_FOLDER / f"{key}.json"


def _remembered(path: Path | None) -> runtime.BuildError | None:
    if path is None or not path.is_file() or runtime.env_flag("KERNEL_CHECK_JIT_FORCE_REBUILD"):
        return None
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        return runtime.BuildError(str(saved["message"]), log=str(saved["log"]), name=str(saved["name"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _remember(path: Path | None, error: runtime.BuildError) -> None:
    """Keep a compile error (never an environment failure: the next run may have the tool)."""
    if path is None or error.environment:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
        partial.write_text(json.dumps({"message": str(error), "log": error.log, "name": error.name}), encoding="utf-8")
        os.replace(partial, path)
    except OSError:
        pass  # a read-only cache costs a compile next time, never the probe


def probe_all(
    targets: Sequence[BuildTarget],
    *,
    lineinfo: bool = False,
    jobs: int | None = None,
    on_done: Callable[[BuildOutcome], None] | None = None,
) -> list[BuildOutcome]:
    """``build_all`` that answers a remembered failure without compiling and remembers new ones."""
    files = [_failure_file(t, lineinfo) for t in targets]
    outcomes: list[BuildOutcome | None] = []
    for target, path in zip(targets, files):
        error = _remembered(path)
        remembered = None if error is None else BuildOutcome(target, error=error)
        outcomes.append(remembered)
        if remembered is not None and on_done is not None:
            on_done(remembered)
    missing = [i for i, o in enumerate(outcomes) if o is None]
    built = build_all([targets[i] for i in missing], lineinfo=lineinfo, jobs=jobs, on_done=on_done)
    for index, outcome in zip(missing, built):
        if outcome.error is not None:
            _remember(files[index], outcome.error)
        outcomes[index] = outcome
    return [o for o in outcomes if o is not None]


@dataclass
class CheckResult:
    results: list[ProbeResult]
    environment: list[str]  # builds the machine could not run: no verdict

    @property
    def failed(self) -> list[ProbeResult]:
        return [r for r in self.results if not r.built]


def check_specs(
    specs: Sequence[KernelSpec],
    *,
    include_dirs: tuple[str, ...] = (),
    jobs: int | None = None,
    on_done: Callable[[BuildOutcome], None] | None = None,
    arch: str | None = None,
) -> CheckResult:
    """Whether each instantiation of each spec builds, for ``TVM_FFI_CUDA_ARCH_LIST``, else
    ``arch`` (the configured one, ``"90"``), else sm_90."""
    ensure_arch_for_compile_only(arch)
    builds = build_specs(list(specs), include_dirs=include_dirs, jobs=jobs, on_done=on_done, builder=probe_all)
    results = []
    for spec in specs:
        errors = {f.message.split(" does not compile: ", 1)[0]: f for f in builds.by_spec.get(spec.name, [])}
        module_error = errors.get(spec.name)  # a one-instantiation spec's module is labelled by it
        for inst in spec.instantiations:
            label = target_label(spec, inst)
            if builds.library(spec.name, inst.variants()[0].id) is not None:
                results.append(ProbeResult(label, True))
                continue
            finding = errors.get(label) or module_error
            log = finding.detail if finding is not None else ""
            results.append(ProbeResult(label, False, first_error(log) if log else "not built"))
    return CheckResult(results, list(builds.environment.values()))
