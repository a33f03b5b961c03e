"""The GitHub workflows (this repository's and the template in docs/ci.md) and every
`kernel-check ...` command they or the docs run: YAML parses, the keys GitHub requires are
there, and each command parses with the real CLI parser."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest
import yaml

from conftest import RELEASE_TAG
from kernel_check import cli
from markdown_blocks import fenced_blocks, file_blocks

REPO = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.y*ml"))
DOCS = REPO / "docs"
PLACEHOLDER = "main"  # what `${{ ... }}` and `$VAR` stand for when a command is parsed


def load_workflow(text: str) -> dict:
    document = yaml.safe_load(text)
    assert isinstance(document, dict)
    if True in document:  # YAML 1.1 reads a bare `on` key as the boolean true
        document["on"] = document.pop(True)
    return document


def template_workflows() -> list[tuple[str, dict]]:
    blocks = [b for b in file_blocks(DOCS / "ci.md", ("yaml", "yml")) if re.search(r"^jobs:", b, re.M)]
    return [(f"docs/ci.md block {i}", load_workflow(b)) for i, b in enumerate(blocks, start=1)]


def all_workflows() -> list[tuple[str, dict]]:
    mine = [(p.relative_to(REPO).as_posix(), load_workflow(p.read_text(encoding="utf-8"))) for p in WORKFLOWS]
    return mine + template_workflows()


def shell_commands(script: str) -> list[list[str]]:
    """Simple commands of a shell snippet, with GitHub expressions and variables replaced."""
    script = re.sub(r"\$\{\{.*?\}\}", PLACEHOLDER, script)
    script = re.sub(r"\$\{(\w+)\}|\$(\w+)", PLACEHOLDER, script)
    script = script.replace("\\\n", " ")
    commands = []
    for line in script.splitlines():
        line = line.split(" #", 1)[0] if not line.lstrip().startswith("#") else ""
        for part in re.split(r"&&|\|\||;|\|", line):
            words = shlex.split(part, comments=True)
            if words:
                commands.append(words)
    return commands


def kernel_check_commands(script: str) -> list[list[str]]:
    return [words for words in shell_commands(script) if words[0] == "kernel-check"]


def workflow_commands(workflow: dict) -> list[tuple[str, list[str]]]:
    found = []
    for job_name, job in workflow["jobs"].items():
        for step in job["steps"]:
            for words in kernel_check_commands(step.get("run", "")):
                found.append((job_name, words))
    return found


def harness_parser():
    try:
        from kernel_check.harness import cli as harness_cli
    except ImportError:
        return None
    factory = getattr(harness_cli, "build_parser", None) or getattr(harness_cli, "_parser", None)
    return factory() if factory else None


def assert_parses(words: list[str]) -> None:
    """`kernel-check ARGS` is a command the real CLI accepts."""
    assert words[0] == "kernel-check"
    args = words[1:]
    if args and args[0] in cli.HARNESS_COMMANDS:
        parser = harness_parser()
        if parser is None:
            pytest.skip(f"kernel_check.harness.cli is not importable yet: cannot parse {shlex.join(words)}")
        try:
            parser.parse_args(args)
        except SystemExit as exit_:
            raise AssertionError(f"the harness CLI rejects: {shlex.join(words)}") from exit_
        return
    if args and args[0] in cli.SUBCOMMANDS and args[0] != "check":
        try:
            cli.all_parsers()[args[0]].parse_args(args[1:])
        except SystemExit as exit_:  # --help exits 0: a command the CLI takes
            if exit_.code:
                raise AssertionError(f"kernel-check {args[0]} rejects: {shlex.join(words)}") from exit_
        except cli.UsageError as error:
            raise AssertionError(f"kernel-check {args[0]} rejects: {shlex.join(words)}") from error
        return
    if args and args[0] == "check":
        args = args[1:]
    try:
        cli.build_check_parser().parse_args(args)
    except cli.UsageError as error:
        raise AssertionError(f"kernel-check rejects `{shlex.join(words)}`: {error}") from None


# ------------------------------------------------------------------ structure


def test_this_repository_has_a_workflow():
    assert [p.name for p in WORKFLOWS] == ["kernel-check.yml"]


@pytest.mark.parametrize("name, workflow", all_workflows(), ids=lambda v: v if isinstance(v, str) else "")
def test_required_keys(name, workflow):
    assert workflow.get("on"), f"{name}: no `on:` triggers"
    assert isinstance(workflow.get("jobs"), dict) and workflow["jobs"], f"{name}: no jobs"
    for job_name, job in workflow["jobs"].items():
        assert re.fullmatch(r"[A-Za-z_][\w-]*", job_name), f"{name}: bad job id {job_name!r}"
        assert job.get("runs-on"), f"{name}: job {job_name} has no runs-on"
        steps = job.get("steps")
        assert isinstance(steps, list) and steps, f"{name}: job {job_name} has no steps"
        for step in steps:
            assert ("uses" in step) != ("run" in step), f"{name}: {job_name} step needs one of uses/run: {step}"
            if "uses" in step:
                assert re.fullmatch(r"[\w.-]+/[\w./-]+@[\w.-]+", step["uses"]), f"{name}: unpinned {step['uses']}"
        needs = job.get("needs", [])
        for need in [needs] if isinstance(needs, str) else needs:
            assert need in workflow["jobs"], f"{name}: {job_name} needs unknown job {need}"


@pytest.mark.parametrize("name, workflow", all_workflows(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_kernel_check_command_parses(name, workflow):
    commands = workflow_commands(workflow)
    assert commands, f"{name} runs no kernel-check command"
    for _, words in commands:
        assert_parses(words)


@pytest.mark.parametrize("name, workflow", all_workflows(), ids=lambda v: v if isinstance(v, str) else "")
def test_static_job_gates_on_the_diff_and_uploads_sarif(name, workflow):
    triggers = workflow["on"]
    assert "pull_request" in triggers, f"{name}: the static check must run on pull requests"
    static = [
        (job_name, job)
        for job_name, job in workflow["jobs"].items()
        if any("--diff" in words for words in _job_commands(job))
    ]
    assert len(static) == 1, f"{name}: one job should run `kernel-check --diff`"
    _job_name, job = static[0]
    commands = _job_commands(job)
    diff = next(words for words in commands if "--diff" in words)
    args = cli.build_check_parser().parse_args(diff[1:])
    assert args.format == "github" and args.diff.startswith("origin/")
    sarif = [cli.build_check_parser().parse_args(words[1:]) for words in commands if "sarif" in words]
    assert sarif and sarif[0].output is not None, f"{name}: SARIF must go to a file for the upload"
    uploads = [s for s in job["steps"] if s.get("uses", "").startswith("github/codeql-action/upload-sarif@")]
    assert len(uploads) == 1 and uploads[0]["with"]["sarif_file"] == str(sarif[0].output)
    permissions = job.get("permissions") or workflow.get("permissions") or {}
    assert permissions.get("security-events") == "write", f"{name}: upload-sarif needs security-events: write"
    # the base branch must be fetched before a shallow checkout can diff against it
    steps_text = "\n".join(s.get("run", "") for s in job["steps"])
    assert "git fetch" in steps_text or _fetch_depth(job) == 0, f"{name}: base branch never fetched"


def _job_commands(job: dict) -> list[list[str]]:
    return [words for step in job["steps"] for words in kernel_check_commands(step.get("run", ""))]


def _fetch_depth(job: dict) -> int | None:
    for step in job["steps"]:
        if step.get("uses", "").startswith("actions/checkout@"):
            return (step.get("with") or {}).get("fetch-depth")
    return None


def test_this_repository_runs_tests_build_and_gpu_jobs():
    (path,) = WORKFLOWS
    workflow = load_workflow(path.read_text(encoding="utf-8"))
    jobs = workflow["jobs"]
    assert {"tests", "static", "build", "gpu"} <= set(jobs)
    # tests: exactly what .ci/run (the README's test command) runs
    runs = [s.get("run", "") for s in jobs["tests"]["steps"]]
    ci_run = REPO / ".ci" / "run"
    if ci_run.exists():
        assert os.access(ci_run, os.X_OK) and ".ci/run" in runs
        script = ci_run.read_text(encoding="utf-8")
        assert "pip install" in script and "pytest" in script
    else:
        assert "python -m pytest -q" in runs
    # build: `kernel-check build` where nvcc exists
    build = _job_commands(jobs["build"])
    assert [w[:2] for w in build] == [["kernel-check", "build"]]
    assert "cuda" in str(jobs["build"].get("container", "")) or "nvcc" in str(jobs["build"])
    # gpu: `kernel-check test` on a self-hosted runner, by hand or on a label
    gpu = jobs["gpu"]
    assert "self-hosted" in gpu["runs-on"] and "gpu" in gpu["runs-on"]
    assert [w[:2] for w in _job_commands(gpu)] == [["kernel-check", "test"]]
    assert "workflow_dispatch" in workflow["on"]
    assert "labeled" in workflow["on"]["pull_request"]["types"]
    assert "github.event.label.name == 'gpu'" in gpu["if"] and "workflow_dispatch" in gpu["if"]
    # a label re-runs only the gpu job
    for name in ("tests", "static", "build"):
        assert jobs[name]["if"] == "github.event.action != 'labeled'"


def test_paths_the_workflow_checks_exist():
    (path,) = WORKFLOWS
    for _, words in workflow_commands(load_workflow(path.read_text(encoding="utf-8"))):
        args = words[1:]
        if args and args[0] in cli.HARNESS_COMMANDS:
            args = args[1:]
        for word in args:
            if word.endswith("/") and not word.startswith("-"):
                assert (REPO / word).is_dir(), f"the workflow checks {word}, which does not exist"


# ------------------------------------------------------------------ commands in the docs


def doc_commands() -> list[tuple[str, list[str]]]:
    found = []
    for page in sorted(DOCS.rglob("*.md")):
        for block in file_blocks(page, ("sh", "bash", "console", "shell")):
            block = "\n".join(line.removeprefix("$ ") for line in block.splitlines())
            for words in kernel_check_commands(block):
                found.append((page.relative_to(REPO).as_posix(), words))
    return found


def test_docs_commands_parse():
    commands = doc_commands()
    assert len(commands) >= 10
    for page, words in commands:
        try:
            assert_parses(words)
        except AssertionError as error:
            raise AssertionError(f"{page}: {error}") from None


def test_precommit_snippet_names_real_hooks():
    hooks_file = REPO / ".pre-commit-hooks.yaml"
    if not hooks_file.exists():
        pytest.skip(".pre-commit-hooks.yaml not written yet")
    hooks = {hook["id"]: hook for hook in yaml.safe_load(hooks_file.read_text(encoding="utf-8"))}
    pages = (DOCS / "ci.md", DOCS / "getting-started.md", DOCS / "adopting.md", REPO / "README.md")
    text = "".join(page.read_text(encoding="utf-8") for page in pages)
    configs = [yaml.safe_load(b) for b in fenced_blocks(text, ("yaml", "yml")) if "repos:" in b]
    assert configs, "no .pre-commit-config.yaml snippet in the docs"
    for config in configs:
        for repo in config["repos"]:
            # the release tag, the same `rev:` the hook tests (test_precommit, test_wheel) install from
            assert repo["repo"] == "local" or repo["rev"] == RELEASE_TAG, repo
            for hook in repo["hooks"]:
                if repo["repo"] != "local":
                    assert hook["id"] in hooks, f"docs name an unknown hook {hook['id']}"
                for arg in hook.get("args", []):
                    assert not arg.startswith("--") or arg.split("=")[0] in _check_flags(), arg


def _check_flags() -> set[str]:
    parser = cli.build_check_parser()
    return {flag for action in parser._actions for flag in action.option_strings}


def test_command_extraction():
    script = 'git fetch x && kernel-check --diff "origin/${BASE}" \\\n  --format github csrc/  # gate\necho ok'
    assert kernel_check_commands(script) == [["kernel-check", "--diff", "origin/main", "--format", "github", "csrc/"]]
    assert kernel_check_commands("kernel-check --diff origin/${{ github.base_ref }} -q") == [
        ["kernel-check", "--diff", "origin/main", "-q"]
    ]
