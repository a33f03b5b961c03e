#!/usr/bin/env python3
"""Benchmark of the static check: cold, warm, one changed file, against the parse floor.

    python bench/bench_static.py                 # generate a 136-file tree, run everything
    python bench/bench_static.py --tree DIR --mode system   # a real tree, checked whole
    python bench/bench_static.py --json out.json --compare-exact

What one run reports (every figure from this run, on this machine):

* cold full check: `kernel-check` on the tree with an empty cache directory (builds the
  precompiled preamble, parses every file against it, fills the result cache);
* warm full check: the same command again, nothing changed;
* one changed file: a kernel file edited, then `kernel-check FILE` as pre-commit runs it
  (a new process; start-up, imports, preamble load and parse included), median of 3;
* floor: the same files parsed by a bare serial libclang loop with the same flags and no
  preamble (what every file costs without this work);
* preamble-only: the same files parsed, serially and with `--jobs` processes, against the
  preamble the cold run built, with nothing else (no model, rules, cache or pool); and the
  same including the build of those preambles (into an empty cache, one process per
  preamble, `--jobs` at a time), which a bare loop has to pay as the cold run does;
* peak memory: the largest resident set of any one process (`getrusage` of the
  children) and the largest sum over the run's live processes (proportional set size,
  sampled from /proc every 20 ms, so pages that forked workers share count once).

The generated tree is `include/` (a copy of the repository's `include/sgl_kernel/`) and
`csrc/`: variants of `csrc/**/*.cuh` and `tests/fixtures/cpp/**/*.cuh` with their kernels
renamed, spread over subdirectories. `--tree DIR` copies an existing tree (a real one:
sglang's `python/sglang/kernels/jit`) and checks all of it, C++ and Python files, as a
user would (`--mode` is passed to every command and loop); the edits of the "one changed
file" row go to the copy. Each row reports CPU seconds beside wall seconds (CPU does not
move with what else the machine runs), and the cold run's KC000 count, so that a parse
failure is not mistaken for speed. No timing here is an assertion; see bench/README.md.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GLOBAL_RE = re.compile(r"__global__\s+(?:[\w:<>,*&\s]+?\s)?(\w+)\s*\(")
QUOTED_INCLUDE_RE = re.compile(r'^(\s*#\s*include\s*)"([^"]+)"', re.M)


# -- the tree ---------------------------------------------------------------------------------
def sources() -> list[Path]:
    found = sorted((REPO / "csrc").rglob("*.cuh")) + sorted((REPO / "tests" / "fixtures" / "cpp").rglob("*.cuh"))
    return [p for p in found if p.is_file() and not p.name.endswith(".fixed.cuh")]  # a fixture's --fix twin


def generate_tree(root: Path, count: int, mode: str) -> Path:
    """`count` kernel variants under root/csrc plus root/include; returns the directory to check."""
    shutil.copytree(REPO / "include", root / "include")
    (root / "pyproject.toml").write_text(f'[tool.kernel-check]\nmode = "{mode}"\n')
    originals = sources()
    if not originals:
        raise SystemExit("no kernel sources found in csrc/ or tests/fixtures/cpp/")
    groups = ("elementwise", "norm", "rope", "quant", "kvcache", "activation", "attention", "moe")
    shared = root / "include" / "kc_bench_local"
    for index in range(count):
        original = originals[index % len(originals)]
        text = original.read_text(encoding="utf-8", errors="replace")
        for name in sorted(set(GLOBAL_RE.findall(text)), key=len, reverse=True):
            text = re.sub(rf"\b{re.escape(name)}\b", f"{name}_v{index}", text)
        text = QUOTED_INCLUDE_RE.sub(functools.partial(_local_include, original=original, shared=shared), text)
        target = root / "csrc" / groups[index % len(groups)] / f"{original.stem}_v{index}.cuh"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return root / "csrc"


def _local_include(match: re.Match, original: Path, shared: Path) -> str:
    """A variant keeps its original's `#include "sibling.cuh"`: the sibling is copied (once,
    outside the checked directory) and included by absolute path."""
    source = (original.parent / match.group(2)).resolve()
    if not source.is_file():
        return match.group(0)
    copy = shared / source.relative_to(REPO)
    if not copy.exists():
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, copy)
    return f'{match.group(1)}"{copy}"'


def kernel_files(target: Path, root: Path) -> list[Path]:
    """The C++ files kernel-check checks under `target` (its own discovery and excludes)."""
    from kernel_check.config import load_config
    from kernel_check.discover import discover, is_python

    return [p for p in discover([target], load_config(root)) if not is_python(p)]


# -- measuring a child process --------------------------------------------------------------------
class TreeRss:
    """Samples the summed RSS of a process and its descendants (Linux /proc)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak_kb = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak_kb = max(self.peak_kb, _tree_rss_kb(self.pid))
            self._stop.wait(0.02)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak_kb


def _tree_rss_kb(root: int) -> int:
    """Proportional set size (shared pages split among their sharers, so forked children
    are not counted twice) summed over `root` and its descendants; RSS where PSS is not
    available."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return 0
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += _pss_kb(pid)
        stack.extend(children.get(pid, ()))
    return total


def _pss_kb(pid: int) -> int:
    for name, key in (("smaps_rollup", "Pss:"), ("status", "VmRSS:")):
        try:
            with open(f"/proc/{pid}/{name}") as handle:
                for line in handle:
                    if line.startswith(key):
                        return int(line.split()[1])
        except (OSError, ValueError):
            continue
    return 0


def run_timed(command: list[str], env: dict[str, str], cwd: Path) -> dict:
    """Wall time (process start included), the largest process's peak RSS (`wait4`: the
    child and the descendants it waited for) and the sampled peak of the whole tree."""
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    sampler = TreeRss(process.pid)
    out: dict[str, bytes] = {}
    readers = [
        threading.Thread(target=lambda n=n, s=s: out.__setitem__(n, s.read()))
        for n, s in (("stdout", process.stdout), ("stderr", process.stderr))
    ]
    for reader in readers:
        reader.start()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    for reader in readers:
        reader.join()
    process.returncode = os.waitstatus_to_exitcode(status)
    tree_kb = sampler.stop()
    stdout, stderr = out["stdout"].decode(errors="replace"), out["stderr"].decode(errors="replace")
    if process.returncode not in (0, 1):
        raise SystemExit(f"command failed ({process.returncode}): {' '.join(command)}\n{stderr[-3000:]}")
    stats = next((line for line in stderr.splitlines() if "stats:" in line), "")
    return {
        "seconds": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "tree_rss_mb": tree_kb / 1024,
        "process_rss_mb": usage.ru_maxrss / 1024,
        "stats": stats,
        "stdout": stdout,
    }


def kernel_check_command(args: list[str]) -> list[str]:
    executable = shutil.which("kernel-check")
    real = Path(sys.executable).with_name("kernel-check")
    if real.is_file():
        executable = str(real)  # the console script itself, not a version-manager shim
    return [executable or sys.executable, *args] if executable else [sys.executable, "-m", "kernel_check", *args]


# -- the bare loops -------------------------------------------------------------------------------
BARE_LOOP = r"""
import json, resource, sys, time
from pathlib import Path
from kernel_check.clang.parse import compile_args, resolve_settings, get_index, PARSE_OPTIONS
from kernel_check.config import load_config
spec = json.loads(sys.argv[1])
config = load_config(Path(spec["root"]))
settings = resolve_settings(spec["mode"], tuple(config.get("include-dirs")), tuple(config.get("defines")),
                            config.get("arch"))
index = get_index()
preamble = None
if spec["pch"]:
    from kernel_check.clang.preamble import PreambleCache
    preamble = PreambleCache(Path(spec["cache"]) / "static-v1" / "preamble")
def cpu_with_children():  # a preamble is built in a child process (watchdog.run_bounded)
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
jobs = []
started, cpu = time.perf_counter(), cpu_with_children()
for name in spec["files"]:
    path = Path(name)
    text = path.read_text(encoding="utf-8", errors="replace")
    args = compile_args(path, settings)
    if preamble is not None:
        chosen = None
        for recipe in preamble.recipes(path, text, args):
            found = preamble.get(recipe)
            if found is not None and preamble._real(name) not in found.realpaths:
                chosen = found  # as kernel-check picks: never a preamble that holds the file
                break
        if chosen is not None:
            args = args + ["-include-pch", str(chosen.pch)]
    jobs.append((name, text, args))
if spec.get("build"):  # the preambles were not there: this loop built them
    print(json.dumps({"seconds": time.perf_counter() - started, "cpu": cpu_with_children() - cpu,
                      "files": len(jobs)}))
    sys.exit(0)
started, cpu = time.perf_counter(), time.process_time()
for name, text, args in jobs:
    tu = index.parse(name, args=args, unsaved_files=[(name, text)], options=PARSE_OPTIONS)
    del tu
print(json.dumps({"seconds": time.perf_counter() - started, "cpu": time.process_time() - cpu,
                  "files": len(jobs)}))
"""


def bare_loop(
    files: list[Path], root: Path, cache: Path, pch: bool, jobs: int, env: dict, mode: str, build: bool = False
) -> dict:
    """Parse `files` in `jobs` bare processes (split evenly); wall time of the slowest.
    `build`: only find their preambles in `cache`, building the missing ones (timed)."""
    chunks = [files[i::jobs] for i in range(jobs)]
    started = time.perf_counter()
    processes = []
    for chunk in chunks:
        spec = json.dumps(
            {
                "root": str(root),
                "cache": str(cache),
                "pch": pch,
                "build": build,
                "mode": mode,
                "files": [str(p) for p in chunk],
            }
        )
        processes.append(
            subprocess.Popen(
                [sys.executable, "-c", BARE_LOOP, spec],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    parse_seconds, cpu_seconds = [], []
    for process in processes:
        stdout, stderr = process.communicate()
        if process.returncode != 0:
            raise SystemExit(f"bare loop failed:\n{stderr[-3000:]}")
        reported = json.loads(stdout.strip().splitlines()[-1])
        parse_seconds.append(reported["seconds"])
        cpu_seconds.append(reported["cpu"])
    return {"seconds": max(parse_seconds), "wall": time.perf_counter() - started, "cpu": sum(cpu_seconds)}


def build_preambles(files: list[Path], root: Path, cache: Path, jobs: int, env: dict, mode: str) -> dict:
    """What a bare loop parsing against preambles pays first: building them, into the empty
    `cache`, one process per preamble (`jobs` of them at a time, as kernel-check's pool does).
    Wall seconds of all builds, CPU seconds of each process (its build child included)."""
    representatives = list(_one_file_per_preamble(files, root, cache, mode).values())
    return bare_loop(
        representatives,
        root,
        cache,
        pch=True,
        jobs=min(jobs, len(representatives)) or 1,
        env=env,
        mode=mode,
        build=True,
    )


def _one_file_per_preamble(files: list[Path], root: Path, cache: Path, mode: str) -> dict[str, Path]:
    """recipe group -> the first file that uses it (planned as the engine's pool plans;
    planning writes nothing to `cache`)."""
    from kernel_check.clang.parse import compile_args, resolve_settings
    from kernel_check.clang.preamble import PreambleCache
    from kernel_check.config import load_config

    config = load_config(root)
    settings = resolve_settings(
        mode, tuple(config.get("include-dirs")), tuple(config.get("defines")), config.get("arch")
    )
    planner = PreambleCache(cache / "static-v1" / "preamble")
    found: dict[str, Path] = {}
    for path in files:
        recipes = planner.recipes(path, path.read_bytes(), compile_args(path, settings))
        if recipes:
            found.setdefault(recipes[0].group, path)
    return found


def import_time(env: dict) -> dict:
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import kernel_check.cli"], capture_output=True, text=True, env=env
    )
    cumulative = 0
    for line in out.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[2].strip() == "kernel_check.cli":
            cumulative = int(parts[1])
    started = time.perf_counter()
    subprocess.run(kernel_check_command(["--version"]), capture_output=True, env=env)
    return {"import_cli_ms": cumulative / 1000, "version_process_s": time.perf_counter() - started}


# -- the benchmark --------------------------------------------------------------------------------
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, help="an existing tree, copied and checked whole (default: generate one)")
    parser.add_argument("--files", type=int, default=136, help="kernel files to generate (default 136)")
    parser.add_argument("--mode", default="auto", choices=("auto", "system", "hermetic"))
    parser.add_argument("--jobs", type=int, default=None, help="--jobs for kernel-check (default: its default)")
    parser.add_argument(
        "--floor-sample",
        type=int,
        default=0,
        help="parse only N evenly spaced files in the floor loop and scale up (0: all)",
    )
    parser.add_argument(
        "--compare-exact", action="store_true", help="also run a cold check with one preamble per distinct include list"
    )
    parser.add_argument("--json", type=Path, help="also write the figures as JSON to this file")
    parser.add_argument(
        "--report", type=Path, help="also write the cold run's findings (`--format json`) to this file, to compare runs"
    )
    parser.add_argument("--keep", action="store_true", help="keep the generated tree and caches")
    parser.add_argument(
        "--no-bytecode",
        action="store_true",
        help="keep PYTHONDONTWRITEBYTECODE as set (default: compile .pyc files once, as pip does)",
    )
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="kc-bench-"))
    try:
        root = workdir / "tree"
        if args.tree:
            shutil.copytree(args.tree.resolve(), root, symlinks=True)
            target = root
        else:
            target = generate_tree(root, args.files, args.mode)
        files = kernel_files(target, root)
        jobs = args.jobs or len(os.sched_getaffinity(0))
        figures = measure(root, target, files, workdir, jobs, args)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"kept {workdir}")
    print_table(figures)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


def _compile_bytecode(env: dict) -> None:
    """Write the package's .pyc files once, as `pip install` does: with
    PYTHONDONTWRITEBYTECODE set, every start would compile every module from source."""
    import kernel_check

    package = Path(kernel_check.__file__).resolve().parent
    import kernel_check.rules as rules

    for directory in {package, *(Path(p).resolve() for p in rules.__path__)}:
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", str(directory)], env=env, stdout=subprocess.DEVNULL, check=False
        )


def measure(root: Path, target: Path, files: list[Path], workdir: Path, jobs: int, args) -> dict:
    cache = workdir / "cache"
    env = {**os.environ, "KERNEL_CHECK_STATS": "1"}
    env.pop("KERNEL_CHECK_CACHE_DIR", None)
    if not args.no_bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        _compile_bytecode(env)
    common = [
        "-q",
        "--exit-zero",
        "--format",
        "json",
        "--mode",
        args.mode,
        "--cache-dir",
        str(cache),
        "--jobs",
        str(jobs),
    ]
    figures: dict = {
        "files": len(files),
        "jobs": jobs,
        "cpus": len(os.sched_getaffinity(0)),
        "mode": args.mode,
        "python": sys.version.split()[0],
        "bytecode": not args.no_bytecode,
        "load_before": os.getloadavg()[0],
    }
    figures["import"] = import_time(env)

    cold = run_timed(kernel_check_command([str(target), *common]), env, root)
    warm = run_timed(kernel_check_command([str(target), *common]), env, root)
    if json.loads(cold["stdout"] or "[]") != json.loads(warm["stdout"] or "[]"):
        print("warning: the warm run reported different findings than the cold run", file=sys.stderr)
    one = []
    for n, path in enumerate(files[:: max(1, len(files) // 3)][:3]):
        original = path.read_text(encoding="utf-8")
        path.write_text(original + f"\n// edited {n}\n", encoding="utf-8")
        one.append(run_timed(kernel_check_command([str(path), *common]), env, root))
        path.write_text(original, encoding="utf-8")
    figures["cold"] = _figure(cold)
    figures["warm"] = _figure(warm)
    if args.report:
        args.report.write_text(cold["stdout"])
    figures["cold"]["kc000_files"] = _kc000_files(cold["stdout"])
    figures["cold"]["timed_out_files"] = _kc000_files(cold["stdout"], "took longer than file-timeout")
    figures["one_changed"] = {
        "seconds": statistics.median(r["seconds"] for r in one),
        "cpu": statistics.median(r["cpu"] for r in one),
        "runs": [round(r["seconds"], 3) for r in one],
        "stats": one[0]["stats"],
    }

    if args.compare_exact:
        exact_env = {**env, "KERNEL_CHECK_PREAMBLE": "exact"}
        exact = run_timed(
            kernel_check_command(
                [str(target), *common[:-4], "--cache-dir", str(workdir / "cache-exact"), "--jobs", str(jobs)]
            ),
            exact_env,
            root,
        )
        figures["cold_exact"] = _figure(exact)
        if json.loads(exact["stdout"] or "[]") != json.loads(cold["stdout"] or "[]"):
            figures["cold_exact"]["findings_differ_from_union"] = True

    sample = files
    if args.floor_sample and args.floor_sample < len(files):
        step = len(files) / args.floor_sample
        sample = [files[int(i * step)] for i in range(args.floor_sample)]
    floor = bare_loop(sample, root, cache, pch=False, jobs=1, env=env, mode=args.mode)
    scale = len(files) / len(sample)
    figures["floor_serial"] = {
        "seconds": floor["seconds"] * scale,
        "cpu": floor["cpu"] * scale,
        "sampled_files": len(sample),
        "extrapolated": scale != 1,
    }
    serial = bare_loop(files, root, cache, pch=True, jobs=1, env=env, mode=args.mode)
    parallel = bare_loop(files, root, cache, pch=True, jobs=jobs, env=env, mode=args.mode)
    figures["pch_only_serial"] = {"seconds": serial["seconds"], "cpu": serial["cpu"]}
    figures["pch_only_parallel"] = {"seconds": parallel["seconds"], "cpu": parallel["cpu"], "jobs": jobs}
    builds = build_preambles(files, root, workdir / "cache-bare-build", jobs, env, args.mode)
    figures["pch_builds"] = {"seconds": builds["seconds"], "cpu": builds["cpu"], "jobs": jobs}
    figures["pch_only_with_builds_serial"] = {
        "seconds": serial["seconds"] + builds["seconds"],
        "cpu": serial["cpu"] + builds["cpu"],
    }
    figures["pch_only_with_builds_parallel"] = {
        "seconds": parallel["seconds"] + builds["seconds"],
        "cpu": parallel["cpu"] + builds["cpu"],
        "jobs": jobs,
    }
    figures["load_after"] = os.getloadavg()[0]
    runs = [cold, warm, *one]
    figures["peak_process_rss_mb"] = max(r["process_rss_mb"] for r in runs)
    figures["peak_run_rss_mb"] = max(r["tree_rss_mb"] for r in runs)
    # CPU seconds do not move with what else the machine runs: the same ratios from them
    # (cold spread over `jobs` CPUs) say what a quiet machine of this speed would show.
    figures["cpu_ratios"] = {
        "floor_over_cold_per_cpu": figures["floor_serial"]["cpu"] / (cold["cpu"] / jobs),
        "cold_over_pch_only": cold["cpu"] / figures["pch_only_serial"]["cpu"],
        "cold_over_pch_only_with_builds": cold["cpu"] / figures["pch_only_with_builds_serial"]["cpu"],
    }
    figures["ratios"] = {
        "floor_over_cold": figures["floor_serial"]["seconds"] / cold["seconds"],
        "cold_over_pch_only_serial": cold["seconds"] / figures["pch_only_serial"]["seconds"],
        "cold_over_pch_only_parallel": cold["seconds"] / figures["pch_only_parallel"]["seconds"],
        "cold_over_pch_only_with_builds_serial": cold["seconds"] / figures["pch_only_with_builds_serial"]["seconds"],
        "cold_over_pch_only_with_builds_parallel": cold["seconds"]
        / figures["pch_only_with_builds_parallel"]["seconds"],
        "floor_over_warm": figures["floor_serial"]["seconds"] / warm["seconds"],
    }
    return figures


def _kc000_files(report: str, containing: str = "") -> int:
    """Files with a KC000 (not parsed, or not checked) in a `--format json` report."""
    found = json.loads(report or "[]")
    return len({f["path"] for f in found if f["code"] == "KC000" and containing in f["message"]})


def _figure(run: dict) -> dict:
    return {
        "seconds": run["seconds"],
        "cpu": run["cpu"],
        "tree_rss_mb": run["tree_rss_mb"],
        "process_rss_mb": run["process_rss_mb"],
        "stats": run["stats"],
    }


def print_table(f: dict) -> None:
    r = f["ratios"]
    rows = [
        (
            "cold full check",
            f["cold"]["seconds"],
            f"{r['floor_over_cold']:.1f}x faster than the floor; "
            f"{r['cold_over_pch_only_serial']:.2f}x preamble-only serial, "
            f"{r['cold_over_pch_only_parallel']:.2f}x preamble-only parallel; "
            f"with the builds: {r['cold_over_pch_only_with_builds_serial']:.2f}x "
            f"serial, {r['cold_over_pch_only_with_builds_parallel']:.2f}x parallel",
        ),
        (
            "warm full check (nothing changed)",
            f["warm"]["seconds"],
            f"{r['floor_over_warm']:.0f}x faster than the floor",
        ),
        (
            "one changed file, new process",
            f["one_changed"]["seconds"],
            "median of " + ", ".join(map(str, f["one_changed"]["runs"])),
        ),
        (
            "floor: bare serial libclang loop",
            f["floor_serial"]["seconds"],
            f"{f['floor_serial']['sampled_files']} files parsed"
            + (", scaled" if f["floor_serial"]["extrapolated"] else ""),
        ),
        ("preamble-only parse, serial", f["pch_only_serial"]["seconds"], ""),
        (f"preamble-only parse, {f['pch_only_parallel']['jobs']} processes", f["pch_only_parallel"]["seconds"], ""),
        (
            f"building the preambles, {f['pch_builds']['jobs']} processes",
            f["pch_builds"]["seconds"],
            "what a bare loop pays before it can parse against them",
        ),
        ("preamble-only incl. builds, serial", f["pch_only_with_builds_serial"]["seconds"], "builds + serial parse"),
        (
            f"preamble-only incl. builds, {f['pch_only_with_builds_parallel']['jobs']} processes",
            f["pch_only_with_builds_parallel"]["seconds"],
            "builds + parallel parse",
        ),
    ]
    if "cold_exact" in f:
        rows.insert(
            1,
            (
                "cold, one preamble per include list",
                f["cold_exact"]["seconds"],
                "findings differ" if f["cold_exact"].get("findings_differ_from_union") else "same findings",
            ),
        )
    print(
        f"\nkernel-check static benchmark: {f['files']} C++ files, --jobs {f['jobs']}, {f['cpus']} CPUs, "
        f"mode {f['mode']}, Python {f['python']}, load average {f['load_before']:.1f} at start, "
        f"{f['load_after']:.1f} at the end"
    )
    print(
        f"cold run: KC000 on {f['cold']['kc000_files']} files ({f['cold']['timed_out_files']} of them "
        f"over the per-file time bound)"
    )
    cpu = {
        "cold full check": f["cold"]["cpu"],
        "warm full check (nothing changed)": f["warm"]["cpu"],
        "one changed file, new process": f["one_changed"]["cpu"],
        "floor: bare serial libclang loop": f["floor_serial"]["cpu"],
        "preamble-only parse, serial": f["pch_only_serial"]["cpu"],
        f"building the preambles, {f['pch_builds']['jobs']} processes": f["pch_builds"]["cpu"],
        "preamble-only incl. builds, serial": f["pch_only_with_builds_serial"]["cpu"],
    }
    print(f"{'measurement':40s} {'seconds':>9s} {'CPU s':>8s}  notes")
    for name, seconds, note in rows:
        used = f"{cpu[name]:8.2f}" if name in cpu else " " * 8
        print(f"{name:40s} {seconds:9.2f} {used}  {note}")
    c = f["cpu_ratios"]
    print(
        f"{'from CPU seconds':40s}  floor / (cold / {f['jobs']} CPUs) = {c['floor_over_cold_per_cpu']:.1f}x; "
        f"cold / preamble-only = {c['cold_over_pch_only']:.2f}x, "
        f"incl. builds = {c['cold_over_pch_only_with_builds']:.2f}x"
    )
    print(f"{'peak memory, largest process':40s} {f['peak_process_rss_mb']:8.0f}M")
    print(f"{'peak memory, whole run (sum)':40s} {f['peak_run_rss_mb']:8.0f}M")
    print(
        f"{'import kernel_check.cli':40s} {f['import']['import_cli_ms'] / 1000:9.3f}  "
        f"`kernel-check --version` process: {f['import']['version_process_s']:.2f} s"
    )
    for name in ("cold", "warm"):
        if f[name]["stats"]:
            print(f"  {name}: {f[name]['stats'].split('stats: ', 1)[-1]}")


if __name__ == "__main__":
    sys.exit(main())
