"""pytest plugin: ``pytest --kernel-check csrc/`` collects kernel specs as test items.

Each ``*_spec.py`` under the collected paths becomes one item per spec; the item runs the
whole harness for that spec (build, cases, sanitizers, bandwidth) and fails with the
findings that would fail ``kernel-check test``: the same back end (``finalize.py``) under
the ``[tool.kernel-check]`` configuration that governs the spec file (``select``,
``ignore``, ``per-file-ignores``, ``severity``, ``strict``, ``baseline``) and the inline
suppressions in the kernel source. Without a GPU the items skip, with the reason;
``--kernel-check-compile-only`` builds them instead.

Several GPUs: with pytest-xdist installed and no ``-n`` given, one worker per visible GPU
is started, and each worker sees only its own GPU (``CUDA_VISIBLE_DEVICES``), which its
harness children inherit.

Registered through the ``pytest11`` entry point; inert unless ``--kernel-check`` is given.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..finding import Finding
from .discover import SPEC_GLOB, load_module, specs_in_module
from .spec import KernelSpec

if TYPE_CHECKING:  # the back end loads when an item runs, not in every pytest session
    # pytest's own names for what repr_failure takes and gives (not exported by `pytest`)
    from _pytest._code.code import TerminalRepr, TracebackStyle

    from ..finalize import Policy


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kernel-check")
    group.addoption("--kernel-check", action="store_true", help="collect kernel specs (*_spec.py) as tests")
    group.addoption("--kernel-check-compile-only", action="store_true", help="only build the specs")
    group.addoption("--kernel-check-timeout", type=float, default=60.0, help="seconds one case may run")
    group.addoption(
        "--kernel-check-sanitize",
        default="memcheck,racecheck,initcheck,synccheck",
        help="compute-sanitizer tools, comma-separated ('' for none)",
    )


def _enabled(config: pytest.Config) -> bool:
    return bool(config.getoption("kernel_check", default=False))


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """One xdist worker per GPU, when xdist is there and the user chose no worker count."""
    from .run import visible_gpus

    if not _enabled(config) or not config.pluginmanager.hasplugin("xdist"):
        return
    if getattr(config.option, "numprocesses", None) is None and len(visible_gpus()) > 1:
        config.option.numprocesses = len(visible_gpus())


def pytest_configure(config: pytest.Config) -> None:
    """Pin an xdist worker (gwN) to the N-th visible GPU before anything touches CUDA."""
    from .run import visible_gpus

    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not _enabled(config) or not worker.startswith("gw"):
        return
    gpus = visible_gpus()
    if gpus:
        os.environ["CUDA_VISIBLE_DEVICES"] = gpus[int(worker[2:]) % len(gpus)]


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> SpecFile | None:
    if _enabled(parent.config) and file_path.match(SPEC_GLOB):
        return SpecFile.from_parent(parent, path=file_path)
    return None


class SpecFile(pytest.File):
    def collect(self) -> Iterator[SpecItem]:
        for spec in specs_in_module(load_module(self.path), self.path):
            spec.validate()
            yield SpecItem.from_parent(self, name=spec.name, spec=spec)


class KernelCheckFailure(Exception):
    """The findings that fail a spec item (rendered as the item's failure)."""


class SpecItem(pytest.Item):
    def __init__(self, *, spec: KernelSpec, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec = spec
        # A spec item takes no fixtures. Plugins that wrap every test call read `item.funcargs`
        # as pytest's own test functions have it (pytest-lsp 1.0 fails a run without it).
        self.funcargs: dict[str, object] = {}

    def runtest(self) -> None:
        from ..build import ensure_arch_for_compile_only
        from ..finalize import BUILD_STAGES, TEST_STAGES
        from .build import build_specs
        from .report import Progress
        from .run import RunOptions, run_specs, visible_gpus

        config = self.config
        if config.getoption("kernel_check_compile_only"):
            policy = self.policy(BUILD_STAGES)
            ensure_arch_for_compile_only()
            findings = build_specs([self.spec]).findings
        else:
            policy = self.policy(TEST_STAGES)
            if not visible_gpus():
                pytest.skip("no CUDA GPU visible (use --kernel-check-compile-only to build only)")
            tools = tuple(t for t in config.getoption("kernel_check_sanitize").split(",") if t)
            options = RunOptions(timeout=config.getoption("kernel_check_timeout"), sanitize=tools)
            result = run_specs([self.spec], options, Progress(enabled=False))
            if result.environment:  # the machine failed, not the kernel: no verdict
                pytest.skip("environment error: " + "; ".join(result.environment))
            if result.not_run:  # the kernel needs a newer GPU than this one: no verdict
                pytest.skip("; ".join(result.not_run))
            findings = result.findings
        self.judge(findings, policy)

    def policy(self, stages: frozenset) -> Policy:
        """What ``kernel-check test`` would use in the spec's project, run with no flags."""
        from ..baseline import BaselineError
        from ..cli_common import UsageError, make_policy
        from ..config import ConfigError, load_config
        from ..diff import DiffError
        from ..registry import load_rules

        try:
            load_rules()
            return make_policy(load_config(self.path.parent), stages, paths=(self.path,))
        except (ConfigError, BaselineError, DiffError, UsageError) as error:  # one line, not a traceback
            raise KernelCheckFailure(f"kernel-check: error: {error}") from None

    def judge(self, findings: list[Finding], policy: Policy) -> None:
        """Fail with the findings that fail the gate, after the filters and the baseline."""
        from ..finalize import filter_results, finalize
        from .run import launcher_location

        results = filter_results(findings, policy, [launcher_location(self.spec).path])
        verdict = finalize(results, policy)
        if verdict.fails:
            raise KernelCheckFailure("\n".join(f"{f.path}:{f.line}: {f.code} {f.message}" for f in verdict.failing))

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: TracebackStyle | None = None
    ) -> str | TerminalRepr:
        if isinstance(excinfo.value, KernelCheckFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"kernel spec {self.spec.name}"
