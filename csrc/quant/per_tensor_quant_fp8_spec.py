"""Harness specs for quant/per_tensor_quant_fp8: fp8 e4m3 quantization with one scale.

Static: ``out = saturate(x * (1 / scale))`` with a given scale (only read). Dynamic: first
``scale = max(scale, absmax(x) / 448)`` (scale holds 0 before the call), then the same.
The arithmetic is exact fp32 (IEEE division, round to nearest even into fp8), so the
reference must match bit for bit. The input is a contiguous ``[rows, cols]`` tensor; the
access width is a template argument that must divide a row (the wrapper picks it per shape).

Note the reference divides tensor by tensor: ``tensor / 448.0`` (a Python scalar) is
computed by PyTorch as ``tensor * (1 / 448)``, which can be one ulp off the division.
"""

import dataclasses

from kernel_check.harness.spec import TAILS, Instantiation, KernelSpec, Role, Tensor

FLOATS = ("float16", "bfloat16", "float32")
ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2}
FP8_MAX = 448.0
STATIC_SCALE = 0.05


def static_scale(shape, dtype, device, gen, sizes):
    import torch

    return torch.full(shape, STATIC_SCALE, dtype=dtype, device=device)


def spread(shape, dtype, device, gen, sizes):
    """|x| / 0.05 beyond 448 for about one element in six: saturation is exercised too."""
    import torch

    return (torch.randn(shape, generator=gen, device=device) * 16).to(dtype)


def _quantize(x, scale):
    import torch

    inverse = torch.where(scale > 0, torch.ones_like(scale) / scale, torch.zeros_like(scale))
    return (x.float() * inverse).clamp(-FP8_MAX, FP8_MAX)  # the harness rounds it into fp8


def static_reference(input, scale):
    return _quantize(input, scale)


def dynamic_reference(input, scale):
    import torch

    absmax = input.float().abs().amax().reshape(1)
    new_scale = torch.maximum(scale, absmax / torch.full_like(absmax, FP8_MAX))
    return {"out": _quantize(input, new_scale), "scale": new_scale}


def instantiation(dtype: str, width: int, is_static: bool, pdl: bool, k: int | None = None) -> Instantiation:
    """``width``: input access bytes, the wrapper's pick (the widest of 16/8/4/2 dividing a
    row); a narrow one is pinned to a row length ``k`` for which the wrapper picks it."""
    count = width // ITEMSIZE[dtype]  # elements per input vector; as many fp8 bytes out
    return Instantiation(
        (dtype, width, is_static, pdl),
        dtypes={"T": dtype},
        pdl=pdl,
        sizes={} if k is None else {"k": k},
        vector_bytes={"input": width, "out": count},
    )


def bandwidth_rows(fixed):
    """About 128M elements, on the instantiation's row length (8192 where it has none)."""
    return {"m": (1 << 27) // fixed.get("k", 8192), "k": fixed.get("k", 8192)}


STATIC = KernelSpec(
    name="per_tensor_quant_fp8_static",
    source="per_tensor_quant_fp8.cuh",
    export="per_tensor_quant_fp8",
    symbol="per_tensor_quant_fp8",
    args=(
        Tensor("out", ("m", "k"), "float8_e4m3fn", Role.OUT),
        Tensor("input", ("m", "k"), init=spread),
        Tensor("scale", (1,), "float32", init=static_scale),
    ),
    reference=static_reference,
    # (dtype, vector width, static, PDL): the wrapper's INSTANTIATIONS
    instantiations=(
        instantiation("float16", 2, True, False, k=127),  # 254-byte rows
        instantiation("bfloat16", 8, True, False, k=132),  # 264-byte rows
    ),
    grid={"m": TAILS, "k": (64, 8192)},
    tolerance={"float8_e4m3fn": (0.0, 0.0), "float32": (0.0, 0.0)},
    memory_bound=True,
    bandwidth_sizes=bandwidth_rows,
    bytes_moved=lambda args: args["input"].nbytes + args["out"].nbytes,
)

DYNAMIC = dataclasses.replace(
    STATIC,
    name="per_tensor_quant_fp8_dynamic",
    args=(
        Tensor("out", ("m", "k"), "float8_e4m3fn", Role.OUT),
        Tensor("input", ("m", "k"), init=spread),
        Tensor("scale", (1,), "float32", Role.INPLACE, init="zeros"),
    ),
    reference=dynamic_reference,
    instantiations=(
        *(instantiation(dtype, 16, False, True) for dtype in FLOATS),
        instantiation("float32", 4, False, False, k=127),  # 508-byte rows
    ),
    # two passes: the input is read twice
    bytes_moved=lambda args: 2 * args["input"].nbytes + args["out"].nbytes,
)

SPECS = [STATIC, DYNAMIC]
