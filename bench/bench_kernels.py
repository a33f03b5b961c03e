"""Bandwidth of the in-place q/k kernels (``qknorm``, ``rotary_embedding``) at large sizes.

Each kernel is timed against the device's copy bandwidth (a 512 MiB device-to-device copy,
counting bytes read plus bytes written), on data several times the L2, and each timed module
is first checked against a float32 PyTorch reference on fresh random inputs (rope: with a few
positions outside the cache, whose heads must stay as they were).

    python bench/bench_kernels.py                          # the kernels in csrc/
    python bench/bench_kernels.py --baseline OLD_CSRC      # and an earlier csrc/ tree beside them
    python bench/bench_kernels.py --json figures.json      # also write every figure as JSON
    python bench/bench_kernels.py --build-only             # compile every module (no GPU needed)

A baseline tree is any earlier ``csrc/`` (``git archive REV csrc | tar -x -C DIR`` gives
``DIR/csrc``); it builds against this repository's ``include/``. Timing: per shape, 5
warm-up calls, then 15 batches of 10 back-to-back calls between two CUDA events; the figure is
the median batch's time per call. Bytes moved are counted as the harness's KD501 counts them:
every in-place tensor read and written once, every input read once.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from kernel_check.runtime import build_jit, load_jit, make_cpp_args

REPO = Path(__file__).resolve().parents[1]
# q + k data of the "large" shape: more than four times an H200's 60 MB L2
LARGE_DATA_BYTES = 256 << 20
Q_HEADS, K_HEADS, V_HEADS = 32, 8, 8
ROPE_MAX_POSITION = 4096
WARMUP, BATCHES, BATCH = 5, 15, 10
COPY_BYTES = 1 << 30
TOLERANCE = {torch.float16: 1e-2, torch.bfloat16: 2e-2, torch.float32: 1e-5}
CPP_DTYPE = {torch.float16: "fp16_t", torch.bfloat16: "bf16_t", torch.float32: "fp32_t"}

QKNORM_CASES = [
    (torch.float16, 64),
    (torch.bfloat16, 128),
    (torch.float32, 128),
    (torch.bfloat16, 256),
    (torch.float16, 127),
]
ROPE_CASES = [
    (dtype, 128, 128, neox) for neox in (True, False) for dtype in (torch.float16, torch.bfloat16, torch.float32)
] + [(torch.float32, 64, 64, True)]


@dataclass(frozen=True)
class Variant:
    """One build of the kernels: a csrc tree."""

    label: str
    csrc_root: Path


@dataclass(frozen=True)
class Kernel:
    """One instantiation: how to build it and how to call it on a shape."""

    name: str  # "qknorm" or "rotary_embedding"
    dtype: torch.dtype
    head_dim: int
    rotary_dim: int = 0
    neox: bool = True

    @property
    def label(self) -> str:
        dt = CPP_DTYPE[self.dtype].removesuffix("_t")
        if self.name == "qknorm":
            return f"qknorm {dt} d={self.head_dim}"
        layout = "neox" if self.neox else "interleaved"
        return f"rope {layout} {dt} d={self.head_dim} r={self.rotary_dim}"

    def template_args(self) -> str:
        if self.name == "qknorm":
            return str(make_cpp_args(self.dtype, self.head_dim, True))
        return str(make_cpp_args(self.dtype, self.head_dim, self.rotary_dim, self.neox, True))

    def build_kwargs(self, variant: Variant) -> dict:
        source = "norm/qknorm.cuh" if self.name == "qknorm" else "rope/rotary_embedding.cuh"
        symbol = f"{self.name}<{self.template_args()}>"
        return dict(cuda_files=[source], cuda_wrappers=[(self.name, symbol)], csrc_root=str(variant.csrc_root))

    def marker(self, variant: Variant) -> tuple:
        return ("bench", self.name, variant.label, self.template_args().replace(", ", "_"))


def kernels() -> list[Kernel]:
    return [Kernel("qknorm", dt, d) for dt, d in QKNORM_CASES] + [
        Kernel("rotary_embedding", dt, d, r, neox) for dt, d, r, neox in ROPE_CASES
    ]


# ----- inputs -----


def heads(kernel: Kernel, tokens: int, layout: str) -> tuple[torch.Tensor, torch.Tensor]:
    """q ``[tokens, 32, d]`` and k ``[tokens, 8, d]``: contiguous, or views of a fused qkv."""
    d = kernel.head_dim
    if layout == "qkv":
        qkv = torch.randn(tokens, (Q_HEADS + K_HEADS + V_HEADS) * d, device="cuda").to(kernel.dtype)
        return (
            qkv[:, : Q_HEADS * d].view(tokens, Q_HEADS, d),
            qkv[:, Q_HEADS * d : (Q_HEADS + K_HEADS) * d].view(tokens, K_HEADS, d),
        )
    return (
        torch.randn(tokens, Q_HEADS, d, device="cuda").to(kernel.dtype),
        torch.randn(tokens, K_HEADS, d, device="cuda").to(kernel.dtype),
    )


def shapes(kernel: Kernel) -> list[tuple[str, int, str]]:
    """(name, tokens, layout): the large shape, contiguous and as qkv views, and the harness's KD501 shape."""
    per_token = (Q_HEADS + K_HEADS) * kernel.head_dim * kernel.dtype.itemsize
    large = LARGE_DATA_BYTES // per_token
    harness = 8192 if kernel.name == "qknorm" else 16384
    return [("large", large, "contiguous"), ("large qkv view", large, "qkv"), ("harness KD501", harness, "contiguous")]


def cos_sin_cache(rotary_dim: int) -> torch.Tensor:
    inv_freq = 1.0 / (10000 ** (torch.arange(0, rotary_dim, 2, device="cuda", dtype=torch.float32) / rotary_dim))
    freqs = torch.outer(torch.arange(ROPE_MAX_POSITION, device="cuda", dtype=torch.float32), inv_freq)
    return torch.cat([freqs.cos(), freqs.sin()], dim=-1).contiguous()


@dataclass
class Call:
    """A prepared call: the function, the bytes it moves, and its float32 reference check."""

    run: Callable[[], None]
    moved: int
    check: Callable[[], float]  # runs once on fresh inputs, returns the max error over the tolerance


def qknorm_call(module, kernel: Kernel, tokens: int, layout: str) -> Call:
    q, k = heads(kernel, tokens, layout)
    # weights near 1: repeated in-place calls keep the values in range
    qw = (1 + 0.01 * torch.randn(kernel.head_dim, device="cuda")).to(kernel.dtype)
    kw = (1 + 0.01 * torch.randn(kernel.head_dim, device="cuda")).to(kernel.dtype)

    def reference(x, w):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).to(x.dtype)

    def check() -> float:
        q.copy_(torch.randn(q.shape, device="cuda"))
        k.copy_(torch.randn(k.shape, device="cuda"))
        expected = reference(q, qw), reference(k, kw)
        module.qknorm(q, k, qw, kw, 1e-6)
        return max(_error(got, want) for got, want in zip((q, k), expected))

    moved = 2 * (q.numel() + k.numel()) * q.element_size() + 2 * qw.nbytes
    return Call(lambda: module.qknorm(q, k, qw, kw, 1e-6), moved, check)


def rope_call(module, kernel: Kernel, tokens: int, layout: str) -> Call:
    q, k = heads(kernel, tokens, layout)
    cache = cos_sin_cache(kernel.rotary_dim)
    positions = torch.randint(0, ROPE_MAX_POSITION, (tokens,), device="cuda")

    def reference(x, pos):
        r = kernel.rotary_dim
        cos, sin = cache[pos.clamp(0, ROPE_MAX_POSITION - 1)].chunk(2, dim=-1)
        cos, sin = cos[:, None, :], sin[:, None, :]
        xf = x.float().clone()
        rot = xf[..., :r]
        if kernel.neox:
            a, b = rot[..., : r // 2], rot[..., r // 2 :]
            out = torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)
        else:
            a, b = rot[..., 0::2], rot[..., 1::2]
            out = torch.stack([a * cos - b * sin, b * cos + a * sin], dim=-1).flatten(-2)
        inside = ((pos >= 0) & (pos < ROPE_MAX_POSITION))[:, None, None]
        xf[..., :r] = torch.where(inside, out, rot)
        return xf.to(x.dtype)

    def check() -> float:
        q.copy_(torch.randn(q.shape, device="cuda"))
        k.copy_(torch.randn(k.shape, device="cuda"))
        pos = torch.randint(0, ROPE_MAX_POSITION, (tokens,), device="cuda")
        pos[::97] = -1  # outside the cache: left unrotated
        pos[1::89] = ROPE_MAX_POSITION
        expected = reference(q, pos), reference(k, pos)
        module.rotary_embedding(pos, q, k, cache)
        return max(_error(got, want) for got, want in zip((q, k), expected))

    moved = 2 * (q.numel() + k.numel()) * q.element_size() + positions.nbytes + cache.nbytes
    return Call(lambda: module.rotary_embedding(positions, q, k, cache), moved, check)


def _error(got: torch.Tensor, want: torch.Tensor) -> float:
    """Largest |got - want| / (tol * (1 + |want|)): at most 1 passes; NaN never does."""
    tol = TOLERANCE[got.dtype]
    err = ((got.float() - want.float()).abs() / (tol * (1 + want.float().abs()))).max().item()
    return float("inf") if err != err else err


# ----- timing -----


def time_per_call(fn: Callable[[], None]) -> float:
    """Seconds per call: the median over batches of back-to-back calls between CUDA events."""
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(BATCHES):
        start.record()
        for _ in range(BATCH):
            fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / 1e3 / BATCH)
    return statistics.median(times)


def copy_bandwidth() -> float:
    src = torch.empty(COPY_BYTES // 2, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    return COPY_BYTES / time_per_call(lambda: dst.copy_(src))


# ----- driver -----


def build_all(variants: list[Variant], load: bool) -> dict[tuple[str, str], object]:
    """Build (and, with ``load``, load) every (variant, kernel) module in parallel."""
    jobs = [(v, k) for v in variants for k in kernels()]
    factory = load_jit if load else build_jit
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        futures = {(v.label, k.label): pool.submit(factory, *k.marker(v), **k.build_kwargs(v)) for v, k in jobs}
        return {key: fut.result() for key, fut in futures.items()}


def measure(variants: list[Variant]) -> list[dict]:
    modules = build_all(variants, load=True)
    peak = copy_bandwidth()
    print(f"device copy bandwidth (read + write): {peak / 1e9:.0f} GB/s", flush=True)
    rows = []
    for kernel in kernels():
        for shape, tokens, layout in shapes(kernel):
            for variant in variants:
                module = modules[(variant.label, kernel.label)]
                make = qknorm_call if kernel.name == "qknorm" else rope_call
                call = make(module, kernel, tokens, layout)
                error = call.check()
                seconds = time_per_call(call.run)
                row = dict(
                    kernel=kernel.label,
                    shape=shape,
                    tokens=tokens,
                    variant=variant.label,
                    moved_mb=call.moved / 1e6,
                    us=seconds * 1e6,
                    gbps=call.moved / seconds / 1e9,
                    fraction=call.moved / seconds / peak,
                    error=error,
                    ok=error <= 1.0,
                )
                rows.append(row)
                print(
                    f"{kernel.label:34s} {shape:16s} {variant.label:10s} {row['moved_mb']:8.1f} MB "
                    f"{row['us']:9.1f} us {row['gbps']:7.0f} GB/s {row['fraction']:6.1%}  "
                    f"{'ok' if row['ok'] else 'WRONG'} (err {error:.2f})",
                    flush=True,
                )
                del call
                torch.cuda.empty_cache()
    return [dict(copy_gbps=peak / 1e9)] + rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="an earlier csrc/ tree to time beside this one")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--build-only", action="store_true", help="compile every module, run nothing")
    args = parser.parse_args(argv)
    variants = [Variant("current", REPO / "csrc")]
    if args.baseline is not None:
        root = args.baseline / "csrc" if (args.baseline / "csrc").is_dir() else args.baseline
        variants.insert(0, Variant("baseline", root.resolve()))
    if args.build_only:
        for (variant, kernel), result in build_all(variants, load=False).items():
            regs = ", ".join(f"{r.registers} regs, {r.spill_stores} B spilled" for r in result.resources)
            print(f"{variant:10s} {kernel:34s} {regs}")
        return 0
    if not torch.cuda.is_available():
        print("bench_kernels: no CUDA GPU visible (use --build-only to compile)", file=sys.stderr)
        return 2
    rows = measure(variants)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0 if all(row.get("ok", True) for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
