"""Harness spec for elementwise/cast: fp32/fp16/bf16 -> fp8 e4m3 (saturating at +-448) and back.

The conversion is exact arithmetic (through fp32, round to nearest even), so the results must
match the reference bit for bit.
"""

from kernel_check.harness.spec import TAILS, Instantiation, KernelSpec, Role, Tensor

FLOATS = ("float32", "float16", "bfloat16")
FP8 = "float8_e4m3fn"
FP8_MAX = 448.0


def wide_range(shape, dtype, device, gen, sizes):
    """Values from fp8 subnormals (2^-9) to past the fp8 maximum (saturation), both signs."""
    import torch

    mantissa = torch.randn(shape, generator=gen, device=device)
    exponent = torch.randint(-12, 10, shape, generator=gen, device=device).float()
    values = mantissa * torch.exp2(exponent)
    limit = FP8_MAX if dtype == torch.float8_e4m3fn else 600.0
    return values.clamp(-limit, limit).to(dtype)


def cast_reference(src):
    values = src.float()
    if src.element_size() == 1:
        return values  # every fp8 value is exact in fp32, fp16 and bf16
    # the harness rounds this to the fp8 output (nearest even); the kernel saturates
    return values.clamp(-FP8_MAX, FP8_MAX)


PAIRS = [(f, FP8) for f in FLOATS] + [(FP8, f) for f in FLOATS]
ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2, FP8: 1}


def access_widths(src: str, dst: str) -> dict[str, int]:
    """cast_vec_size: 16 bytes of the wider type per vector, the same count of the other."""
    count = 16 // max(ITEMSIZE[src], ITEMSIZE[dst])
    return {"src": count * ITEMSIZE[src], "dst": count * ITEMSIZE[dst]}


SPEC = KernelSpec(
    name="cast",
    source="cast.cuh",
    export="cast",
    symbol="cast",
    args=(
        Tensor("dst", ("n",), "TOut", Role.OUT, vector_bytes=16),
        Tensor("src", ("n",), "TIn", vector_bytes=16, init=wide_range),
    ),
    reference=cast_reference,
    instantiations=tuple(
        Instantiation((src, dst, pdl), dtypes={"TIn": src, "TOut": dst}, pdl=pdl, vector_bytes=access_widths(src, dst))
        for pdl in (True, False)
        for src, dst in PAIRS
    ),
    grid={"n": TAILS + (1000, 1 << 20)},
    tolerance=dict.fromkeys((*FLOATS, FP8), (0.0, 0.0)),
    memory_bound=True,
    bandwidth_sizes={"n": 1 << 27},
)
