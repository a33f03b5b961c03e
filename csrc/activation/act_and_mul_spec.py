"""Harness specs for activation/act_and_mul: out = act(in[:, :d]) * in[:, d:] (SiLU, GELU-erf).

The wrapper picks the access width from ``d``: the 16-byte PDL instantiations run on the grid's
``d``; each narrower one (its own template argument) runs on a ``d`` that selects it.
"""

import dataclasses

from kernel_check.harness.spec import TAILS, Instantiation, KernelSpec, Role, Tensor


def silu_and_mul(src):
    x, gate = src.float().chunk(2, dim=-1)
    return (x * x.sigmoid() * gate).to(src.dtype)


def gelu_and_mul(src):
    import torch

    x, gate = src.float().chunk(2, dim=-1)
    return (torch.nn.functional.gelu(x) * gate).to(src.dtype)


def narrow(dtype: str, width: int, d: int) -> Instantiation:
    """A non-PDL instantiation with a ``width``-byte access, on a half row ``d`` that the
    wrapper gives it (the widest of 16/8/4/2 bytes dividing ``d`` elements)."""
    return Instantiation(
        (dtype, width, False),
        dtypes={"T": dtype},
        sizes={"d": d, "d2": 2 * d},
        vector_bytes={"out": width, "src": width},
    )


SILU = KernelSpec(
    name="silu_and_mul",
    source="act_and_mul.cuh",
    export="silu_and_mul",
    symbol="silu_and_mul",
    args=(
        Tensor("out", ("m", "d"), role=Role.OUT, vector_bytes=16),
        Tensor("src", ("m", "d2"), vector_bytes=16, strided_rows=True),
    ),
    reference=silu_and_mul,
    instantiations=tuple(
        Instantiation((dtype, 16, True), dtypes={"T": dtype}, pdl=True) for dtype in ("float16", "bfloat16", "float32")
    )
    + tuple(
        narrow(dtype, width, d) for dtype, width, d in (("float16", 2, 127), ("bfloat16", 8, 132), ("float32", 4, 127))
    ),
    grid={"m": TAILS, "d": (64, 1024), "d2": (128, 2048)},
    constraint=lambda sizes: sizes["d2"] == 2 * sizes["d"],
    tolerance={"float16": (2e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2), "float32": (1e-5, 1e-5)},
    memory_bound=True,
    # the narrow widths exist for odd half rows: timing them says little
    bandwidth_sizes=lambda fixed: None if fixed else {"m": 16384, "d": 4096, "d2": 8192},
)

SPECS = [
    SILU,
    dataclasses.replace(
        SILU,
        name="gelu_and_mul",
        export="gelu_and_mul",
        symbol="gelu_and_mul",
        reference=gelu_and_mul,
        instantiations=SILU.instantiations[:3]
        + tuple(
            narrow(dtype, width, d)
            for dtype, width, d in (("float16", 4, 130), ("bfloat16", 2, 127), ("float32", 8, 130))
        ),
    ),
]
