"""Harness specs for quant/per_tensor_quant_fp8: fp8 e4m3 quantization with one scale.

Static: ``out = saturate(x * (1 / scale))`` with a given scale (only read). Dynamic: first
``scale = max(scale, absmax(x) / 448)`` (scale holds 0 before the call), then the same.
The arithmetic is exact fp32 (IEEE division, round to nearest even into fp8), so the
reference must match bit for bit. The input is a contiguous ``[rows, cols]`` tensor of any
shape: the kernels walk it flat.

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


def instantiation(dtype: str, is_static: bool, pdl: bool) -> Instantiation:
    count = 16 // ITEMSIZE[dtype]  # elements per 16-byte input vector; as many fp8 bytes out
    return Instantiation((dtype, is_static, pdl), dtypes={"T": dtype}, pdl=pdl,
                         vector_bytes={"input": 16, "out": count})


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
    # (dtype, static, PDL): the wrapper's INSTANTIATIONS
    instantiations=tuple(instantiation(dtype, True, False) for dtype in FLOATS),
    grid={"m": TAILS, "k": (1, 64, 127, 8192)},
    tolerance={"float8_e4m3fn": (0.0, 0.0), "float32": (0.0, 0.0)},
    memory_bound=True,
    bandwidth_sizes={"m": 16384, "k": 8192},
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
    instantiations=tuple(instantiation(dtype, False, True) for dtype in FLOATS),
    # two passes: the input is read twice
    bytes_moved=lambda args: 2 * args["input"].nbytes + args["out"].nbytes,
)

SPECS = [STATIC, DYNAMIC]
