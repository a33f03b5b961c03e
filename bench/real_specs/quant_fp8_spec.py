"""sglang jit/csrc/gemm/per_tensor_quant_fp8.cuh and per_token_quant_fp8.cuh: fp8 e4m3 quantization
with a dynamic scale absmax / 448 (per tensor: atomic max into a caller-zeroed scale)."""

from kernel_check.harness.spec import TAILS, Instantiation, KernelSpec, Role, Tensor, tree_path

TREE = tree_path("SGLANG_TREE")  # the kernel tree: set $SGLANG_TREE
JIT = TREE / "python/sglang/kernels/jit"
FP8_MAX = 448.0
# fp8: the default relative step, and one e4m3 subnormal step (2^-9) absolute; the scale exact
TOLERANCE = {"float8_e4m3fn": (0.125, 2e-3), "float32": (1e-6, 1e-6)}


def _quantize(x, scale):
    import torch

    inverse = torch.where(scale > 0, 1.0 / scale, torch.zeros_like(scale))
    return (x * inverse).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)


def per_tensor(input, output_s):
    x = input.float()
    scale = (x.abs().max() / FP8_MAX).reshape(1)
    return {"output_q": _quantize(x, scale), "output_s": scale}


def per_token(input):
    x = input.float()
    scale = x.abs().amax(-1, keepdim=True) / FP8_MAX
    return {"output_q": _quantize(x, scale), "output_s": scale}


SPECS = [
    KernelSpec(
        name="sgl_per_tensor_quant_fp8",
        source=str(JIT / "csrc/gemm/per_tensor_quant_fp8.cuh"),
        export="per_tensor_quant_fp8",
        symbol="per_tensor_quant_fp8<>",
        args=(
            Tensor("input", ("n",), dtype="DType"),
            Tensor("output_q", ("n",), dtype="float8_e4m3fn", role=Role.OUT),
            # the atomic-max accumulator: the caller zeroes it (the wrapper's contract)
            Tensor(
                "output_s",
                (1,),
                dtype="float32",
                role=Role.INPLACE,
                init="zeros",
                profiles=dict.fromkeys(("equal", "huge", "inf", "nan", "subnormal"), "off"),
            ),
        ),
        reference=per_tensor,
        instantiations=(Instantiation((False, "bfloat16"), dtypes={"DType": "bfloat16"}),),
        grid={"n": TAILS + (1 << 20,)},
        tolerance=TOLERANCE,
        include_dirs=(str(JIT / "include"),),
    ),
    KernelSpec(
        name="sgl_per_token_quant_fp8",
        source=str(JIT / "csrc/gemm/per_token_quant_fp8.cuh"),
        export="per_token_quant_fp8",
        symbol="per_token_quant_fp8<>",
        args=(
            Tensor("input", ("m", "k")),
            Tensor("output_q", ("m", "k"), dtype="float8_e4m3fn", role=Role.OUT),
            Tensor("output_s", ("m", 1), dtype="float32", role=Role.OUT),
        ),
        reference=per_token,
        instantiations=(Instantiation(("bfloat16",), dtypes={"T": "bfloat16"}),),
        # k: a multiple of 4 (the launcher's rule); 12 takes the 4-wide path, 4096 the 16-byte one
        grid={"m": TAILS, "k": (4, 12, 4096)},
        tolerance=TOLERANCE,
        include_dirs=(str(JIT / "include"),),
    ),
]
