"""GPU tests of the reference kernels in csrc/ against PyTorch references.

Skipped without a CUDA GPU. All the JIT modules the tests need are built up front,
in parallel, by a session fixture (``_prewarm``), so the tests themselves only run.

Also a script::

    python tests/gpu/test_csrc_kernels.py --build-only   # compile (and load) every module the tests use
    python tests/gpu/test_csrc_kernels.py --bandwidth    # print GB/s of the memory-bound kernels
"""

from __future__ import annotations

import concurrent.futures
import importlib.util
import os
import sys
import time
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

REPO = Path(__file__).resolve().parents[2]
CSRC = REPO / "csrc"

HAS_GPU = torch.cuda.is_available()
needs_gpu = pytest.mark.skipif(not HAS_GPU, reason="no CUDA GPU visible (torch.cuda.is_available() is False)")
pytestmark = [pytest.mark.gpu, needs_gpu]


def _load_wrapper(rel: str):
    path = CSRC / rel
    name = "kc_csrc_" + rel.replace("/", "_").removesuffix(".py")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


add_constant_w = _load_wrapper("add_constant.py")
scale_w = _load_wrapper("elementwise/scale.py")
cast_w = _load_wrapper("elementwise/cast.py")
act_w = _load_wrapper("activation/act_and_mul.py")
rmsnorm_w = _load_wrapper("norm/rmsnorm.py")
qknorm_w = _load_wrapper("norm/qknorm.py")
rope_w = _load_wrapper("rope/rotary_embedding.py")
store_w = _load_wrapper("kvcache/store_cache.py")
quant_w = _load_wrapper("quant/per_tensor_quant_fp8.py")

FLOATS = [torch.float16, torch.bfloat16, torch.float32]
FP8 = torch.float8_e4m3fn
DEV = "cuda"

# ---------------------------------------------------------------------------
# parameter grids (also drive the parallel prebuild)
# ---------------------------------------------------------------------------

SIZES_1D = [1, 127, 4097, 1 << 20]
ACT_D = [1, 127, 2048, 4097]
ACT_ROWS = [1, 127]
NORM_CASES = [(dt, h) for dt in FLOATS for h in (127, 4097)] + [(torch.bfloat16, 1), (torch.bfloat16, 4096)]
NORM_ROWS = [1, 127]
QKNORM_CASES = [(dt, 128) for dt in FLOATS] + [(torch.float16, 64)]
ROPE_CASES = [(dt, 128, 128, neox) for dt in FLOATS for neox in (True, False)] + [
    (torch.float32, 64, 32, True),
    (torch.float16, 80, 18, False),
]
STORE_CASES = [
    (torch.bfloat16, 1024, torch.int64),
    (torch.float16, 4096, torch.int64),
    (torch.float32, 1024, torch.int32),
    (FP8, 576, torch.int64),
    (torch.bfloat16, 127, torch.int32),
]
QUANT_SHAPES = [(1, 1), (127, 127), (33, 4097), (256, 4096)]


def _elem(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


def build_jobs():
    """(factory, args) for every module the tests call."""
    jobs = [
        (add_constant_w._jit_add_constant_module, (torch.int32, 1)),
        (add_constant_w._jit_add_constant_module, (torch.float32, 3)),
    ]
    jobs += [(scale_w._jit_scale_module, (dt,)) for dt in FLOATS]
    jobs += [(cast_w._jit_cast_module, (dt, FP8)) for dt in FLOATS]
    jobs += [(cast_w._jit_cast_module, (FP8, dt)) for dt in FLOATS]
    for name in ("silu_and_mul", "gelu_and_mul"):
        for dt in FLOATS:
            for d in ACT_D:
                jobs.append((act_w._jit_act_module, (name, dt, 2 * d)))
    for name in ("rmsnorm", "fused_add_rmsnorm"):
        jobs += [(rmsnorm_w._jit_rmsnorm_module, (name, dt, h)) for dt, h in NORM_CASES]
    jobs += [(qknorm_w._jit_qknorm_module, (dt, d)) for dt, d in QKNORM_CASES]
    jobs += [(rope_w._jit_rope_module, case) for case in ROPE_CASES]
    jobs += [(store_w._jit_store_cache_module, case) for case in STORE_CASES]
    jobs += [
        (quant_w._jit_quant_module, (dt, static, shape[-1]))
        for dt in FLOATS
        for static in (False, True)
        for shape in QUANT_SHAPES + [(1 << 14, 1 << 14), (4, 64)]
    ]
    jobs.append((rmsnorm_w._jit_rmsnorm_module, ("rmsnorm", torch.bfloat16, 128)))  # bandwidth run
    return jobs


def prebuild(max_workers: int | None = None) -> float:
    """Build (and load) every module the tests use, in parallel; returns the wall time."""
    start = time.time()
    workers = max_workers or max(2, min(16, os.cpu_count() or 2))
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        futures = [pool.submit(fn, *args) for fn, args in build_jobs()]
        for fut in futures:
            fut.result()
    return time.time() - start


@pytest.fixture(scope="session", autouse=True)
def _prewarm():
    if HAS_GPU:
        took = prebuild()
        print(f"\n[test_csrc_kernels] built {len(build_jobs())} modules in {took:.1f}s")
    yield


def _tol(dtype):
    return {
        torch.float16: dict(rtol=1e-2, atol=1e-2),
        torch.bfloat16: dict(rtol=2e-2, atol=2e-2),
        torch.float32: dict(rtol=1e-5, atol=1e-5),
    }[dtype]


def _padded_rows(rows: int, cols: int, pad: int, dtype) -> torch.Tensor:
    """A `[rows, cols]` view with row stride `cols + pad` (pad keeps 16-byte alignment when it is a
    multiple of 16 bytes)."""
    base = torch.randn(rows, cols + pad, device=DEV).to(dtype)
    return base[:, :cols]


# ---------------------------------------------------------------------------
# add_constant, scale, cast
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype,constant", [(torch.int32, 1), (torch.float32, 3)])
@pytest.mark.parametrize("n", SIZES_1D)
def test_add_constant(dtype, constant, n):
    x = torch.randint(-100, 100, (n,), device=DEV).to(dtype)
    torch.testing.assert_close(add_constant_w.add_constant(x, constant), x + constant, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", SIZES_1D)
def test_scale(dtype, n):
    x = torch.randn(n, device=DEV).to(dtype)
    out = scale_w.scale(x, 2.5)
    torch.testing.assert_close(out, (x.float() * 2.5).to(dtype), **_tol(dtype))


def test_scale_out_param_and_side_stream():
    x = torch.randn(1 << 16, device=DEV, dtype=torch.float16)
    out = torch.empty_like(x)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        torch.cuda._sleep(1_000_000)  # delay the side stream: a kernel on the wrong stream would run early
        res = scale_w.scale(x, -1.5, out=out)
    stream.synchronize()
    assert res is out
    torch.testing.assert_close(out, (x.float() * -1.5).half(), **_tol(torch.float16))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", SIZES_1D)
def test_cast_to_fp8_saturates(dtype, n):
    x = (torch.randn(n, device=DEV) * 300).to(dtype)
    if n > 3:
        x[0], x[1], x[2] = 1e4, -1e4, 448.0
    out = cast_w.cast(x, FP8)
    assert out.dtype == FP8
    ref = x.float().clamp(-448.0, 448.0).to(FP8)
    torch.testing.assert_close(out.float(), ref.float(), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", SIZES_1D)
def test_cast_from_fp8(dtype, n):
    x = (torch.randn(n, device=DEV) * 50).to(FP8)
    out = cast_w.cast(x, dtype)
    torch.testing.assert_close(out, x.float().to(dtype), rtol=0, atol=0)


# ---------------------------------------------------------------------------
# activations
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("act", ["silu_and_mul", "gelu_and_mul"])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("d", ACT_D)
@pytest.mark.parametrize("rows", ACT_ROWS)
@pytest.mark.parametrize("strided", [False, True])
def test_act_and_mul(act, dtype, d, rows, strided):
    x = _padded_rows(rows, 2 * d, 16, dtype) if strided else torch.randn(rows, 2 * d, device=DEV).to(dtype)
    out = getattr(act_w, act)(x)
    xf = x.float()
    a = F.silu(xf[:, :d]) if act == "silu_and_mul" else F.gelu(xf[:, :d])
    torch.testing.assert_close(out, (a * xf[:, d:]).to(dtype), **_tol(dtype))


# ---------------------------------------------------------------------------
# norms
# ---------------------------------------------------------------------------


def _rms_ref(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    xf = x.float()
    return xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()


@pytest.mark.parametrize("dtype,hidden", NORM_CASES)
@pytest.mark.parametrize("rows", NORM_ROWS)
@pytest.mark.parametrize("strided", [False, True])
def test_rmsnorm(dtype, hidden, rows, strided):
    x = _padded_rows(rows, hidden, 16, dtype) if strided else torch.randn(rows, hidden, device=DEV).to(dtype)
    w = torch.randn(hidden, device=DEV).to(dtype)
    out = rmsnorm_w.rmsnorm(x, w, 1e-6)
    torch.testing.assert_close(out, _rms_ref(x, w, 1e-6).to(dtype), **_tol(dtype))


@pytest.mark.parametrize("dtype,hidden", NORM_CASES)
@pytest.mark.parametrize("rows", NORM_ROWS)
@pytest.mark.parametrize("strided", [False, True])
def test_fused_add_rmsnorm(dtype, hidden, rows, strided):
    if strided:
        x = _padded_rows(rows, hidden, 16, dtype)
        r = _padded_rows(rows, hidden, 32, dtype)
    else:
        x = torch.randn(rows, hidden, device=DEV).to(dtype)
        r = torch.randn(rows, hidden, device=DEV).to(dtype)
    w = torch.randn(hidden, device=DEV).to(dtype)
    new_r = (x.float() + r.float()).to(dtype)
    ref = _rms_ref(new_r, w, 1e-5).to(dtype)
    rmsnorm_w.fused_add_rmsnorm(x, r, w, 1e-5)
    torch.testing.assert_close(r, new_r, rtol=0, atol=0)
    torch.testing.assert_close(x, ref, **_tol(dtype))


def _qkv(tokens, hq, hk, d, dtype):
    qkv = torch.randn(tokens, (hq + 2 * hk) * d, device=DEV).to(dtype)
    q = qkv[:, : hq * d].view(tokens, hq, d)
    k = qkv[:, hq * d : (hq + hk) * d].view(tokens, hk, d)
    return qkv, q, k


@pytest.mark.parametrize("dtype,d", QKNORM_CASES)
@pytest.mark.parametrize("tokens", [1, 127, 4097])
def test_qknorm(dtype, d, tokens):
    qkv, q, k = _qkv(tokens, 8, 2, d, dtype)
    qw = torch.randn(d, device=DEV).to(dtype)
    kw = torch.randn(d, device=DEV).to(dtype)
    q_ref = _rms_ref(q, qw, 1e-6).to(dtype)
    k_ref = _rms_ref(k, kw, 1e-6).to(dtype)
    v_before = qkv[:, 10 * d :].clone()
    qknorm_w.qknorm(q, k, qw, kw, 1e-6)
    torch.testing.assert_close(q, q_ref, **_tol(dtype))
    torch.testing.assert_close(k, k_ref, **_tol(dtype))
    torch.testing.assert_close(qkv[:, 10 * d :], v_before, rtol=0, atol=0)


# ---------------------------------------------------------------------------
# rotary embedding
# ---------------------------------------------------------------------------


def _cos_sin_cache(max_pos: int, rot: int) -> torch.Tensor:
    inv_freq = 1.0 / (10000 ** (torch.arange(0, rot, 2, device=DEV, dtype=torch.float32) / rot))
    freqs = torch.outer(torch.arange(max_pos, device=DEV, dtype=torch.float32), inv_freq)
    return torch.cat([freqs.cos(), freqs.sin()], dim=-1).contiguous()


def _rope_ref(x, positions, cache, rot, neox):
    xf = x.float().clone()
    cos, sin = cache[positions].chunk(2, dim=-1)  # [T, rot/2]
    cos, sin = cos[:, None, :], sin[:, None, :]
    r = xf[..., :rot]
    if neox:
        a, b = r[..., : rot // 2], r[..., rot // 2 :]
        out = torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)
    else:
        a, b = r[..., 0::2], r[..., 1::2]
        out = torch.stack([a * cos - b * sin, b * cos + a * sin], dim=-1).flatten(-2)
    xf[..., :rot] = out
    return xf.to(x.dtype)


@pytest.mark.parametrize("dtype,head,rot,neox", ROPE_CASES)
@pytest.mark.parametrize("tokens", [1, 127, 4097])
def test_rotary_embedding(dtype, head, rot, neox, tokens):
    _, q, k = _qkv(tokens, 4, 2, head, dtype)
    cache = _cos_sin_cache(8192, rot)
    positions = torch.randint(0, 8192, (tokens,), device=DEV, dtype=torch.int64)
    q_ref = _rope_ref(q, positions, cache, rot, neox)
    k_ref = _rope_ref(k, positions, cache, rot, neox)
    rope_w.rotary_embedding(positions, q, k, cache, neox)
    torch.testing.assert_close(q, q_ref, **_tol(dtype))
    torch.testing.assert_close(k, k_ref, **_tol(dtype))


# ---------------------------------------------------------------------------
# store_cache
# ---------------------------------------------------------------------------


def _rand(shape, dtype):
    return torch.randn(shape, device=DEV).to(dtype)


@pytest.mark.parametrize("dtype,row,index_dtype", STORE_CASES)
@pytest.mark.parametrize("tokens", [1, 127, 4097])
@pytest.mark.parametrize("strided", [False, True])
def test_store_cache(dtype, row, index_dtype, tokens, strided):
    slots = 8192
    pad = 64 // _elem(dtype)
    if strided:
        k = _rand((tokens, row + pad), dtype)[:, :row]
        v = _rand((tokens, row + 2 * pad), dtype)[:, :row]
        kc = _rand((slots, row + pad), dtype)[:, :row]
        vc = _rand((slots, row + pad), dtype)[:, :row]
    else:
        k, v = _rand((tokens, row), dtype), _rand((tokens, row), dtype)
        kc, vc = _rand((slots, row), dtype), _rand((slots, row), dtype)
    idx = torch.randperm(slots, device=DEV)[:tokens].to(index_dtype)
    raw = (lambda t: t.view(torch.uint8)) if dtype == FP8 else (lambda t: t)  # fp8 has no index_put
    kc_ref, vc_ref = raw(kc).clone(), raw(vc).clone()
    kc_ref[idx.long()] = raw(k)
    vc_ref[idx.long()] = raw(v)
    store_w.store_cache(k, v, kc, vc, idx)
    assert torch.equal(raw(kc), kc_ref)
    assert torch.equal(raw(vc), vc_ref)


# ---------------------------------------------------------------------------
# per-tensor fp8 quantization
# ---------------------------------------------------------------------------


def _quant_ref(x, scale):
    inv = torch.where(scale > 0, 1.0 / scale, torch.zeros_like(scale))
    return (x.float() * inv).clamp(-448.0, 448.0).to(FP8)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", QUANT_SHAPES)
def test_per_tensor_quant_fp8_dynamic(dtype, shape):
    x = (torch.randn(shape, device=DEV) * 7).to(dtype)
    out, scale = quant_w.per_tensor_quant_fp8(x)
    # torch divides by a Python scalar through a reciprocal multiply: allow 2 ulp on the scale;
    # the quantized values are then compared exactly against the kernel's own scale.
    ref_scale = x.float().abs().max() / 448.0
    torch.testing.assert_close(scale, ref_scale.reshape(1), rtol=2.5e-7, atol=0)
    torch.testing.assert_close(out.float(), _quant_ref(x, scale).float(), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", QUANT_SHAPES)
def test_per_tensor_quant_fp8_static(dtype, shape):
    x = (torch.randn(shape, device=DEV) * 30).to(dtype)
    scale = torch.tensor([0.05], device=DEV)
    out, s = quant_w.per_tensor_quant_fp8(x, scale)
    assert s is scale
    torch.testing.assert_close(out.float(), _quant_ref(x, scale).float(), rtol=0, atol=0)


def test_per_tensor_quant_fp8_zero_input():
    x = torch.zeros(4, 64, device=DEV, dtype=torch.bfloat16)
    out, scale = quant_w.per_tensor_quant_fp8(x)
    assert scale.item() == 0.0
    assert torch.equal(out.float(), torch.zeros(4, 64, device=DEV))


# ---------------------------------------------------------------------------
# bad inputs: rejected on the host with a message naming the tensor
# ---------------------------------------------------------------------------


def _bad_cases():
    h = torch.float16

    def x(*s):
        return torch.randn(*s, device=DEV).to(h)

    cases = {
        "scale_cpu": (lambda: scale_w.scale(torch.randn(64, dtype=h), 2.0), r"`dst`.*CUDA|CUDA"),
        "scale_misaligned": (lambda: scale_w.scale(x(65)[1:], 2.0), r"`src`.*misaligned"),
        "scale_noncontig": (lambda: scale_w.scale(x(128)[::2], 2.0), r"`src`.*contiguous"),
        "scale_wrong_out_dtype": (lambda: scale_w.scale(x(64), 2.0, out=torch.empty(64, device=DEV)), r"`dst`.*dtype"),
        "scale_wrong_out_shape": (lambda: scale_w.scale(x(64), 2.0, out=x(63)), r"`src`.*dim 0"),
        "scale_bad_dtype": (lambda: scale_w.scale(torch.ones(8, device=DEV, dtype=torch.int32), 2.0), "dtype"),
        "cast_misaligned": (lambda: cast_w.cast(x(65)[1:], FP8), r"`src`.*misaligned"),
        "act_odd_width": (lambda: act_w.silu_and_mul(x(4, 7)), "even"),
        "act_misaligned_rows": (lambda: act_w.silu_and_mul(x(4, 2 * 64 + 1)[:, :128]), r"`input`.*misaligned"),
        "act_wrong_rank": (lambda: act_w.silu_and_mul(x(128)), r"2-D|`input`"),
        "rmsnorm_weight_shape": (lambda: rmsnorm_w.rmsnorm(x(4, 128), x(127)), r"`weight`.*dim 0"),
        "rmsnorm_weight_dtype": (
            lambda: rmsnorm_w.rmsnorm(x(4, 128), torch.randn(128, device=DEV)),
            r"`weight`.*dtype",
        ),
        "rmsnorm_cpu_weight": (lambda: rmsnorm_w.rmsnorm(x(4, 128), torch.randn(128, dtype=h)), r"`weight`.*CUDA"),
        "rmsnorm_padded_stride": (lambda: rmsnorm_w.rmsnorm(x(4, 129)[:, :128], x(128)), r"`input`.*misaligned"),
        "fused_residual_shape": (
            lambda: rmsnorm_w.fused_add_rmsnorm(x(4, 128), x(3, 128), x(128)),
            r"`residual`.*dim 0",
        ),
        "qknorm_k_dtype": (
            lambda: qknorm_w.qknorm(x(2, 4, 128), torch.randn(2, 4, 128, device=DEV), x(128), x(128)),
            r"`k`.*dtype",
        ),
        "qknorm_inner_stride": (
            lambda: qknorm_w.qknorm(x(2, 4, 256)[..., ::2], x(2, 4, 128), x(128), x(128)),
            r"`q`.*stride",
        ),
        "rope_positions_dtype": (
            lambda: rope_w.rotary_embedding(
                torch.zeros(2, device=DEV, dtype=torch.int32), x(2, 4, 128), x(2, 4, 128), _cos_sin_cache(16, 128)
            ),
            r"`positions`.*dtype",
        ),
        "rope_cache_dtype": (
            lambda: rope_w.rotary_embedding(
                torch.zeros(2, device=DEV, dtype=torch.int64),
                x(2, 4, 128),
                x(2, 4, 128),
                _cos_sin_cache(16, 128).half(),
            ),
            r"`cos_sin_cache`.*dtype",
        ),
        "store_cache_padded_cache": (
            lambda: store_w.store_cache(
                x(4, 1024), x(4, 1024), x(64, 1025)[:, :1024], x(64, 1024), torch.arange(4, device=DEV)
            ),
            r"`k_cache`.*misaligned",
        ),
        "store_cache_index_count": (
            lambda: store_w.store_cache(x(4, 1024), x(4, 1024), x(64, 1024), x(64, 1024), torch.arange(3, device=DEV)),
            r"`indices`.*dim 0",
        ),
        "store_cache_misaligned_base": (
            lambda: store_w.store_cache(
                x(4 * 1024 + 1)[1:].view(4, 1024), x(4, 1024), x(64, 1024), x(64, 1024), torch.arange(4, device=DEV)
            ),
            r"`k`.*misaligned",
        ),
        "quant_scale_shape": (
            lambda: quant_w.per_tensor_quant_fp8(x(4, 64), torch.zeros(2, device=DEV)),
            r"`scale`.*dim 0",
        ),
        "quant_noncontig": (lambda: quant_w.per_tensor_quant_fp8(x(64, 4).t()), r"`input`.*contiguous"),
    }
    return cases


BAD_CASES = list(_bad_cases()) if HAS_GPU else []


@pytest.mark.parametrize("case", BAD_CASES)
def test_bad_input_rejected(case):
    fn, pattern = _bad_cases()[case]
    with pytest.raises(RuntimeError, match=pattern):
        fn()
    torch.cuda.synchronize()  # and no CUDA error was left behind


# ---------------------------------------------------------------------------
# bandwidth (reported, not asserted)
# ---------------------------------------------------------------------------


def _time_ms(fn, *args, iters: int = 20, **kwargs) -> float:
    """Milliseconds per `fn(*args, **kwargs)`, averaged over `iters` calls after 3 warm-up calls."""
    for _ in range(3):
        fn(*args, **kwargs)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn(*args, **kwargs)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / iters


def measure_bandwidth() -> list[tuple[str, float, float]]:
    """(name, GB/s, ms) for the memory-bound kernels at large sizes, plus a torch copy for reference."""
    results = []
    n = 1 << 28  # 256M elements
    bf = torch.bfloat16
    x = torch.randn(n, device=DEV, dtype=bf)
    y = torch.empty_like(x)
    ms = _time_ms(y.copy_, x)
    results.append(("torch copy bf16 (reference)", 2 * x.numel() * 2 / ms / 1e6, ms))
    ms = _time_ms(scale_w.scale, x, 2.0, out=y)
    results.append(("scale bf16 256M", 2 * n * 2 / ms / 1e6, ms))
    ms = _time_ms(cast_w.cast, x, FP8)
    results.append(("cast bf16->fp8 256M", n * 3 / ms / 1e6, ms))
    x2 = x.view(1 << 14, 1 << 14)
    ms = _time_ms(quant_w.per_tensor_quant_fp8, x2)
    results.append(("per_tensor_quant_fp8 dynamic bf16 256M (2 passes: 5 B/elem)", n * 5 / ms / 1e6, ms))
    del y
    act_in = x.view(1 << 15, 1 << 13)  # rows, 2 * d with d = 4096
    ms = _time_ms(act_w.silu_and_mul, act_in)
    results.append(("silu_and_mul bf16 [32768, 2*4096]", act_in.numel() * 2 * 1.5 / ms / 1e6, ms))
    h = x.view(1 << 16, 1 << 12)  # 65536 x 4096
    w = torch.randn(1 << 12, device=DEV, dtype=bf)
    out = torch.empty_like(h)
    ms = _time_ms(rmsnorm_w.rmsnorm, h, w, 1e-6, out=out)
    results.append(("rmsnorm bf16 [65536, 4096] (cta)", 2 * h.numel() * 2 / ms / 1e6, ms))
    r = torch.randn_like(h)
    ms = _time_ms(rmsnorm_w.fused_add_rmsnorm, h, r, w, 1e-6)
    results.append(("fused_add_rmsnorm bf16 [65536, 4096]", 4 * h.numel() * 2 / ms / 1e6, ms))
    hs = x.view(1 << 21, 128)
    outs = torch.empty_like(hs)
    ws = torch.randn(128, device=DEV, dtype=bf)
    ms = _time_ms(rmsnorm_w.rmsnorm, hs, ws, 1e-6, out=outs)
    results.append(("rmsnorm bf16 [2M, 128] (warp)", 2 * hs.numel() * 2 / ms / 1e6, ms))
    del out, r, outs
    qkv = x.view(1 << 17, 2048)[:, : (8 + 2 + 2) * 128]  # 131072 tokens, 8 q + 2 k + 2 v heads of 128
    q = qkv[:, : 8 * 128].view(-1, 8, 128)
    k = qkv[:, 8 * 128 : 10 * 128].view(-1, 2, 128)
    ms = _time_ms(qknorm_w.qknorm, q, k, ws, ws, 1e-6)
    results.append(("qknorm bf16 131072 tok x (8+2) heads x 128", 2 * (q.numel() + k.numel()) * 2 / ms / 1e6, ms))
    cache = _cos_sin_cache(8192, 128)
    pos = torch.randint(0, 8192, (q.shape[0],), device=DEV)
    ms = _time_ms(rope_w.rotary_embedding, pos, q, k, cache, True)
    moved = 2 * (q.numel() + k.numel()) * 2 + q.shape[0] * 128 * 4
    results.append(("rotary_embedding neox bf16 131072 tok x (8+2) heads", moved / ms / 1e6, ms))
    del x, x2, act_in, h, hs, qkv, q, k
    torch.cuda.empty_cache()
    tokens, row, slots = 1 << 16, 1024, 1 << 17
    kv = torch.randn(2, tokens, row, device=DEV, dtype=bf)
    kc = torch.empty(slots, row, device=DEV, dtype=bf)
    vc = torch.empty_like(kc)
    idx = torch.randperm(slots, device=DEV)[:tokens]
    ms = _time_ms(store_w.store_cache, kv[0], kv[1], kc, vc, idx)
    results.append(("store_cache bf16 65536 tok x 1024 (2 KiB rows)", 4 * tokens * row * 2 / ms / 1e6, ms))
    return results


def test_bandwidth_report(capsys):
    """Prints GB/s (run with -s to see it); never fails on a number."""
    results = measure_bandwidth()
    lines = [f"{name:60s} {gbps:8.1f} GB/s  {ms:8.3f} ms" for name, gbps, ms in results]
    with capsys.disabled():
        print("\n" + "\n".join(lines))
    out = os.environ.get("KERNEL_CHECK_BANDWIDTH_OUT")
    if out:
        Path(out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    if "--build-only" in sys.argv:
        jobs = build_jobs()
        print(f"building {len(jobs)} modules ...", flush=True)
        print(f"done in {prebuild():.1f}s")
    elif "--bandwidth" in sys.argv:
        for name, gbps, ms in measure_bandwidth():
            print(f"{name:60s} {gbps:8.1f} GB/s  {ms:8.3f} ms")
    else:
        sys.exit(pytest.main([__file__, "-v", "-s"]))
