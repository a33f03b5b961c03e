"""What a drafted spec holds: the drafter's output (``draft.py``), the renderer's input
(``draft_render.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model import ConstExpr
from .spec import DTYPES, Role

TODO = "TODO(kernel-check)"  # marks each guess a user has to check

# C++ spellings of element types -> the harness's dtype names (the project's aliases come
# from DTYPES; the rest are the CUDA and standard spellings kernels use directly)
CPP_DTYPES: dict[str, str] = {
    **{alias: name for name, (_, alias) in DTYPES.items()},
    "float": "float32",
    "double": "float64",
    "half": "float16",
    "__half": "float16",
    "nv_bfloat16": "bfloat16",
    "__nv_bfloat16": "bfloat16",
    "__nv_fp8_e4m3": "float8_e4m3fn",
    "fp8_e4m3fn_t": "float8_e4m3fn",
    "int": "int32",
    "int32_t": "int32",
    "int64_t": "int64",
    "uint8_t": "uint8",
    "int8_t": "int8",
    "int16_t": "int16",
    "bool": "bool",
}


@dataclass
class DraftTensor:
    name: str
    shape: tuple[str | int, ...]
    dtype: str  # a DTYPES name or a type variable
    role: Role
    strided_rows: bool = False
    alignment: ConstExpr | None = None
    init: str = ""  # "" : the default (randn); ``randint:n``, ``cumsum:n``, ``perm:n`` for index-like inputs
    runtime: tuple[str, ...] = ()  # the dtypes one build takes at run time (``dtype`` is then a variable)
    accepts: tuple[str, ...] = ()  # further dtypes the launcher's own checks allow
    device: str = "cuda"  # "cpu": a host buffer (always drafted pinned: it serves a kernel reading it too)
    written_rows: str = ""  # an OUT tensor scattered into: the ids naming the rows the kernel writes


@dataclass
class DraftScalar:
    name: str
    value: object
    comment: str = ""
    axis: str = ""  # the grid axis whose size it passes (``value`` then unused)


@dataclass
class DraftInstantiation:
    template_args: tuple[str | int | bool, ...]
    dtypes: dict[str, str | tuple[str, ...]]
    pdl: bool
    sizes: dict[str, int]
    vector_bytes: dict[str, int]


@dataclass
class Draft:
    """One drafted ``KernelSpec`` and the guesses a user has to check."""

    name: str
    source: str
    export: str
    symbol: str
    args: list[DraftTensor | DraftScalar]
    instantiations: list[DraftInstantiation]
    grid: dict[str, tuple[int, ...]]
    notes: list[str] = field(default_factory=list)
    # (rows, ids) axis pairs: a grid point needs sizes[rows] >= sizes[ids] (distinct ids)
    constraint: list[tuple[str, str]] = field(default_factory=list)
    # outputs whose order the kernel does not fix -> "sort" (the spec's ``canonicalize``)
    canonicalize: dict[str, str] = field(default_factory=dict)
    extra_cuda_cflags: tuple[str, ...] = ()
    # the kernel tree's own include/ when the spec's location would not find it
    include_dirs: tuple[str, ...] = ()
    # ``source`` and ``include_dirs`` are relative to the folder this environment variable
    # names (``--tree-env``) instead of to the spec
    tree_variable: str = ""
    # the outputs the launcher returns, in order (OUT tensors of ``args``)
    returns: tuple[str, ...] = ()
    # the oldest architecture its kernels run on (sm_NN), where one traps below it
    min_arch: int | None = None
