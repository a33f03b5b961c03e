"""`kernel-check test --shard K/N` (and `build --shard`): a fixed split of the run's
instantiations over N CI runners, on the real specs of tests/fixtures/harness and csrc.

Discovery needs no GPU; the split, the child's view of a sharded spec, the empty shard, the
refusals and the report run here. What a non-empty shard runs needs a GPU (tests/gpu)."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kernel_check import codes
from kernel_check.config import load_config
from kernel_check.finalize import TEST_STAGES
from kernel_check.harness import cli as harness_cli
from kernel_check.harness.cases import plan_cases
from kernel_check.harness.child import Job, load_spec
from kernel_check.harness.discover import discover
from kernel_check.harness.run import make_finding
from kernel_check.harness.shard import Shard, instantiation_name, parse_shard, shard_specs
from kernel_check.harness.spec import KernelSpec
from kernel_check.registry import load_rules
from markdown_blocks import file_blocks

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "harness"
CSRC = ROOT / "csrc"
SPECS = discover([FIXTURES, CSRC]).specs
SRC = str(ROOT / "src")
# the source first, then whatever the run was given (dependencies installed with --target)
PYTHONPATH = os.pathsep.join(filter(None, [SRC, os.environ.get("PYTHONPATH")]))


def names(specs: list[KernelSpec]) -> list[str]:
    """Every instantiation of `specs`, by what places it in a shard (spec name and key)."""
    return [instantiation_name(spec, inst) for spec in specs for inst in spec.instantiations]


def shard_of(specs: list[KernelSpec], count: int) -> dict[str, int]:
    """Which shard (1-based) each instantiation of `specs` falls in, out of `count`."""
    return {name: k for k in range(1, count + 1) for name in names(shard_specs(specs, Shard(k, count)))}


def test_the_real_specs_are_many_and_distinct():
    everything = names(SPECS)
    assert len(SPECS) > 30 and len(everything) > 80
    assert len(set(everything)) == len(everything)


@pytest.mark.parametrize("count", [1, 2, 3, 4, 7, 16])
def test_shards_are_disjoint_and_cover_every_instantiation_once(count):
    everything = names(SPECS)
    shards = [names(shard_specs(SPECS, Shard(k, count))) for k in range(1, count + 1)]
    assert sorted(name for shard in shards for name in shard) == sorted(everything)
    assert sum(len(shard) for shard in shards) == len(everything)  # no instantiation twice
    if count <= 4:  # about 1/N each, never empty, on ~100 instantiations
        assert all(len(shard) > len(everything) / (2 * count) for shard in shards)


def test_a_build_stays_whole_and_in_its_declared_order():
    """The run-time dtype choices of one build (`dtypes={"I": ("int32", "int64")}`) never
    land in two shards, and a sharded spec lists its instantiations in the declared order."""
    several = [s for s in SPECS if any(len(i.variants()) > 1 for i in s.instantiations)]
    assert several, "a fixture or csrc spec with run-time dtype choices"
    builds = {(s.name, i.build_id): len(i.variants()) for s in several for i in s.instantiations}
    for count in (2, 3, 4):
        placed: dict[tuple[str, str], set[int]] = {}
        for k in range(1, count + 1):
            for spec in shard_specs(several, Shard(k, count)):
                whole = next(s for s in several if s.name == spec.name)
                assert spec.instantiation_keys == [
                    key for key in whole.instantiation_keys if key in spec.instantiation_keys
                ]
                for variant in spec.variants:
                    placed.setdefault((spec.name, variant.build_id), set()).add(k)
        assert set(placed) == set(builds) and all(len(shards) == 1 for shards in placed.values())


def test_adding_a_spec_moves_no_other_instantiation(tmp_path):
    """A new spec file beside the real ones: every instantiation that was there stays in its
    shard (a sorted round-robin would move about half of them)."""
    extra = tmp_path / "extra"
    extra.mkdir()
    for name in ("vector_scale.cuh", "vector_scale_spec.py"):
        shutil.copy(FIXTURES / name, extra / name)
    spec_file = extra / "vector_scale_spec.py"
    spec_file.write_text(spec_file.read_text().replace('name="fixture_', 'name="added_'))
    more = discover([FIXTURES, CSRC, extra])
    assert not more.errors and len(more.specs) > len(SPECS)
    for count in (2, 4, 7):
        before, after = shard_of(SPECS, count), shard_of(more.specs, count)
        assert {name: after[name] for name in before} == before
        assert len(after) > len(before)


def test_the_split_is_the_same_in_every_python_process():
    """Another interpreter, with another string-hash seed, places every instantiation in the
    same shard: the split is a SHA-256 of the name, modulo N, as docs/harness.md says."""
    script = (
        "import json, sys\n"
        "from kernel_check.harness.discover import discover\n"
        "from kernel_check.harness.shard import Shard, instantiation_name, shard_specs\n"
        "specs = discover(sys.argv[1:]).specs\n"
        "print(json.dumps({instantiation_name(s, i): k for k in (1, 2, 3)"
        " for s in shard_specs(specs, Shard(k, 3)) for i in s.instantiations}))\n"
    )
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": PYTHONPATH}
        done = subprocess.run(
            [sys.executable, "-c", script, str(FIXTURES), str(CSRC)],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        assert json.loads(done.stdout) == shard_of(SPECS, 3)
    documented = {name: int(hashlib.sha256(name.encode()).hexdigest(), 16) % 3 + 1 for name in names(SPECS)}
    assert shard_of(SPECS, 3) == documented


def test_a_child_plans_the_same_cases_as_the_parent_of_a_shard(tmp_path):
    """The child reloads the spec from its file: the job carries the shard's instantiations,
    or its case numbers would be those of the whole spec."""
    for spec in shard_specs(SPECS, Shard(2, 3)):
        whole = next(s for s in SPECS if s.name == spec.name)
        job = Job.of(spec, "cases", {})
        job.write(tmp_path / "job.json")
        read = Job.read(tmp_path / "job.json")
        child = load_spec(read.spec_path, read.spec_name, read.instantiations)
        assert plan_cases(child) == plan_cases(spec)
        if len(spec.instantiations) < len(whole.instantiations):
            assert plan_cases(whole) != plan_cases(spec)


@pytest.mark.parametrize("value", ["0/4", "5/4", "1/0", "x", "1/", "/4", "1/4/2", "1.5/4", ""])
def test_a_bad_shard_is_refused(value):
    with pytest.raises(Exception, match="K"):
        parse_shard(value)


@pytest.mark.parametrize("value", ["0/4", "5/4", "four"])
def test_a_bad_shard_is_one_usage_line_and_exit_2(value):
    done = kernel_check("test", "csrc", "--shard", value)
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("kernel-check: error: argument --shard:") and "K/N" in line


def test_parse_reads_k_of_n():
    assert parse_shard("2/4") == Shard(2, 4) and str(parse_shard(" 4/4 ")) == "4/4"


def kernel_check(*argv: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": PYTHONPATH}
    return subprocess.run(
        [sys.executable, "-m", "kernel_check", *argv], capture_output=True, text=True, cwd=cwd, env=env, timeout=300
    )


def empty_shard(specs: list[KernelSpec], count: int) -> int:
    return next(k for k in range(1, count + 1) if not shard_specs(specs, Shard(k, count)))


@pytest.mark.parametrize("command", ["test", "build"])
def test_a_shard_without_instantiations_runs_nothing_and_passes(command, tmp_path):
    """More shards than instantiations: an empty one says so, writes its (empty) report with
    the shard named, and exits 0 before it looks for nvcc or a GPU."""
    fixtures = discover([FIXTURES]).specs
    k = empty_shard(fixtures, 200)
    done = kernel_check(command, str(FIXTURES), "--shard", f"{k}/200")
    assert done.returncode == 0, done.stderr
    total = sum(len(s.instantiations) for s in fixtures)
    assert done.stderr.splitlines()[-1] == (
        f"kernel-check: shard {k}/200: none of the {total} instantiations; nothing to run"
    )
    assert done.stdout.splitlines()[0] == f"Shard {k}/200: only this shard's instantiations ran."
    report = tmp_path / "kd.json"
    done = kernel_check(command, str(FIXTURES), "--shard", f"{k}/200", "--format", "json", "-o", str(report))
    assert done.returncode == 0 and json.loads(report.read_text()) == []


def test_writing_a_baseline_from_a_shard_is_refused(tmp_path):
    done = kernel_check("test", "csrc", "--shard", "1/2", "--write-baseline", str(tmp_path / "kc.json"))
    assert done.returncode == 2 and not (tmp_path / "kc.json").exists()
    (line,) = done.stderr.splitlines()
    assert line.startswith("kernel-check: error: --write-baseline cannot be combined with --shard")


@pytest.fixture
def project(tail_overrun_project: Path) -> Path:
    load_rules()
    return tail_overrun_project


def test_a_shard_counts_no_baseline_entry_fixed_and_names_itself(project, capsys):
    """A baseline entry that a shard does not hit may belong to another shard's
    instantiation: hidden findings are still hidden, but nothing counts as fixed. The text
    report's first line and each JSON finding name the shard."""
    spec = discover([project / "kernels"]).specs[0]
    mismatch = make_finding(spec, codes.RESULT_MISMATCH, f"{spec.name}[x]: result differs from the reference")
    hang = make_finding(spec, codes.KERNEL_HANG, f"{spec.name}[y]: no progress")
    parser = harness_cli.subcommand_parsers()["test"]
    config = load_config(project)
    sources = harness_cli._sources([spec])

    def emit(*argv: str, findings: list) -> str:
        args = parser.parse_args(["kernels", *argv])
        harness_cli._emit(findings, args, harness_cli._policy(args, config, TEST_STAGES), sources)
        return capsys.readouterr().out

    emit("--write-baseline", "kc.json", findings=[mismatch, hang])
    whole = emit("--baseline", "kc.json", findings=[hang])
    assert "1 hidden by the baseline, 1 baseline entry fixed" in whole
    shard = emit("--baseline", "kc.json", "--shard", "2/3", findings=[hang])
    assert shard.splitlines()[0] == "Shard 2/3: only this shard's instantiations ran."
    assert "1 hidden by the baseline." in shard and "fixed" not in shard
    rows = json.loads(emit("--shard", "2/3", "--format", "json", findings=[hang]))
    assert [(row["code"], row["shard"]) for row in rows] == [("KD002", "2/3")]
    assert json.loads(emit("--format", "json", findings=[hang]))[0]["shard"] is None


def test_the_ci_matrix_example_covers_every_shard_once():
    """docs/ci.md's matrix: each entry's command parses with the real `test` parser, and the
    entries are the shards 1..N of the N the command names."""
    (block,) = [b for b in file_blocks(ROOT / "docs" / "ci.md", ("yaml",)) if "--shard" in b]
    job = yaml.safe_load(block)["gpu"]
    matrix = job["strategy"]["matrix"]["shard"]
    (command,) = [step["run"] for step in job["steps"] if "--shard" in step.get("run", "")]
    parser = harness_cli.subcommand_parsers()["test"]
    shards = []
    for value in matrix:
        words = shlex.split(command.replace("${{ matrix.shard }}", str(value)))
        assert words[:2] == ["kernel-check", "test"]
        shards.append(parser.parse_args(words[2:]).shard)
    assert shards == [Shard(k, len(matrix)) for k in range(1, len(matrix) + 1)]
