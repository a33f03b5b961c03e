"""`kernel-check test --against REV`: REV's tree from a real git repository, spec pairing, the
REV reference on CPU tensors, the comparison; the end-to-end run needs a GPU and skips without."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import git
from kernel_check.harness.cases import CaseKind, plan_cases
from kernel_check.harness.differential import (
    AgainstError,
    RevisionReference,
    against_revision,
    materialize,
    pair_specs,
    repository_root,
)
from kernel_check.harness.discover import discover
from kernel_check.harness.execute import CaseContext, compare, expected_outputs
from kernel_check.harness.spec import TAILS, Instantiation, KernelSpec, Role, Scalar, Tensor

KERNEL = """\
#pragma once
#include <sgl_kernel/tensor.h>
#include <sgl_kernel/utils.cuh>
#include <sgl_kernel/utils.h>
#include <tvm/ffi/container/tensor.h>
#include <cstdint>
namespace sglang {
template <typename T>
__global__ void twice_kernel(T* __restrict__ dst, const T* __restrict__ src, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i] * static_cast<T>(FACTOR);
}
template <typename T>
void twice(tvm::ffi::TensorView dst, tvm::ffi::TensorView src) {
  using namespace host;
  SymbolicSize N{"n"};
  SymbolicDevice device;
  device.set_options<kDLCUDA>();
  TensorMatcher({N}).with_device<kDLCUDA>(device).with_dtype<T>().verify(dst).verify(src);
  const int64_t n = N.unwrap();
  if (n == 0) return;
  LaunchKernel(static_cast<uint32_t>((n + 255) / 256), 256u, device.unwrap())(
      twice_kernel<T>, static_cast<T*>(dst.data_ptr()), static_cast<const T*>(src.data_ptr()), n);
}
}  // namespace sglang
"""
SPEC = """\
from kernel_check.harness.spec import TAILS, Instantiation, KernelSpec, Role, Tensor

SPEC = KernelSpec(name="twice", source="twice.cuh", export="twice", symbol="twice",
                  args=(Tensor("dst", ("n",), role=Role.OUT), Tensor("src", ("n",))),
                  reference=None,
                  instantiations=(Instantiation(("float32",), dtypes={"T": "float32"}),),
                  grid={"n": TAILS + (4096,)})
"""


def make_repo(tmp_path: Path, factors: tuple[str, ...]) -> Path:
    """A repository with one commit per factor; the working tree holds the last."""
    repo = tmp_path / "repo"
    (repo / "kernels").mkdir(parents=True)
    git(repo, "init", "-q")
    for factor in factors:
        (repo / "kernels" / "twice.cuh").write_text(KERNEL.replace("FACTOR", factor))
        (repo / "kernels" / "twice_spec.py").write_text(SPEC)
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", f"factor {factor}")
    return repo


def test_rev_tree_is_materialized_without_touching_the_checkout(tmp_path):
    repo = make_repo(tmp_path, ("2", "3"))
    (repo / "kernels" / "twice.cuh").write_text("// uncommitted edit\n")
    tree = materialize(repository_root(repo / "kernels"), "HEAD~1", tmp_path / "scratch")
    assert "static_cast<T>(2)" in (tree / "kernels" / "twice.cuh").read_text()
    assert (repo / "kernels" / "twice.cuh").read_text() == "// uncommitted edit\n"
    head = subprocess.run(["git", "log", "-1", "--format=%s"], cwd=repo, capture_output=True, text=True).stdout
    assert "factor 3" in head
    with pytest.raises(AgainstError, match="cannot read revision"):
        materialize(repo, "no-such-rev", tmp_path / "other")
    with pytest.raises(AgainstError, match="not inside a git checkout"):
        repository_root(tmp_path / "scratch")


FLOAT32 = (Instantiation(("float32",), dtypes={"T": "float32"}),)


def _spec(name: str, args, insts=FLOAT32) -> KernelSpec:
    return KernelSpec(
        name=name,
        source="k.cuh",
        export=name,
        symbol=name,
        args=args,
        reference=None,
        instantiations=insts,
        grid={"n": TAILS},
        spec_path="/x/k_spec.py",
    )


def test_specs_pair_by_name_and_signature():
    io = (Tensor("dst", ("n",), role=Role.OUT), Tensor("src", ("n",)))
    new = [
        _spec("same", io),
        _spec("fresh", io),
        _spec("changed", io + (Scalar("f", 1.0),)),
        _spec("other_inst", io, (Instantiation(("float16",), dtypes={"T": "float16"}),)),
    ]
    old = [_spec("same", io), _spec("changed", io), _spec("other_inst", io)]
    pairing = pair_specs(new, old, "HEAD~1")
    assert [(a.name, b.name) for a, b in pairing.pairs] == [("same", "same")]
    assert [s.split(":")[0] for s in pairing.skipped] == ["fresh", "changed", "other_inst"]


def test_rev_reference_allocates_outputs_runs_the_instantiations_build_and_compares():
    spec = _spec(
        "scale2",
        (
            Tensor("dst", ("m", "n"), role=Role.OUT),
            Tensor("src", ("m", "n")),
            Tensor("acc", ("m",), role=Role.INPLACE),
            Scalar("factor", 2.0),
        ),
        (Instantiation(("float16",), dtypes={"T": "float16"}), Instantiation(("float32",), dtypes={"T": "float32"})),
    )
    calls = []

    def loader(library: str, export: str):
        def old_kernel(dst, src, acc, factor):  # what REV's build does, on the CPU
            calls.append((library, export, tuple(dst.shape)))
            dst.copy_(src * factor)
            acc.add_(1)

        return old_kernel

    reference = RevisionReference(spec, {"float16": "old16.so", "float32": "old32.so"}, "scale2", "HEAD~1", loader)
    src = torch.arange(6, dtype=torch.float32).view(2, 3)
    out = reference.for_instantiation(spec.variant("float32"))(src=src, acc=torch.zeros(2), factor=2.0)
    assert calls == [("old32.so", "scale2", (2, 3))]
    assert torch.equal(out["dst"], src * 2) and torch.equal(out["acc"], torch.ones(2))
    assert compare(out["dst"], src * 2, 1.3e-6, 1e-5) is None
    changed = compare(src * 2 + 0.5, out["dst"], 1.3e-6, 1e-5)
    assert changed is not None and changed.count == 6
    one = against_revision(spec, {"float32": "old32.so"}, "scale2", "HEAD~1", loader)
    assert [i.id for i in one.instantiations] == ["float32"] and Path(one.source).is_absolute()
    with pytest.raises(ValueError, match=r"scale2\[float16\]: not in HEAD~1"):
        one.reference_for(spec.variant("float16"))


# ----- pairing by the full key, on the bundled fp8 quantization specs -----

CSRC = Path(__file__).resolve().parents[1] / "csrc"
QUANT_SPEC = CSRC / "quant" / "per_tensor_quant_fp8_spec.py"
# The working tree's edit of the dynamic spec: its instantiations reordered, one dropped
# (float16), one PDL flag flipped (bfloat16: a different key) and one added (k=126)
REORDERED = """

DYNAMIC = dataclasses.replace(
    DYNAMIC,
    instantiations=(
        DYNAMIC.instantiations[3],
        DYNAMIC.instantiations[2],
        instantiation("float16", 4, False, False, k=126),
        dataclasses.replace(DYNAMIC.instantiations[1], pdl=False),
    ),
)
SPECS = [STATIC, DYNAMIC]
"""


def test_instantiations_pair_by_their_full_key_whatever_the_order(tmp_path):
    """REV holds the bundled spec; the working tree lists the instantiations in another
    order, without one, with one changed and one new: each pairs with REV's of the same
    key, and the others are named "not in REV" and never compared."""
    repo = tmp_path / "repo"
    (repo / "quant").mkdir(parents=True)
    spec_file = repo / "quant" / QUANT_SPEC.name
    spec_file.write_text(QUANT_SPEC.read_text())
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "rev")
    spec_file.write_text(QUANT_SPEC.read_text() + REORDERED)
    tree = materialize(repository_root(repo), "HEAD", tmp_path / "scratch")
    new = discover([repo]).specs
    old = discover([tree]).specs
    assert (
        [s.name for s in new]
        == [s.name for s in old]
        == ["per_tensor_quant_fp8_static", "per_tensor_quant_fp8_dynamic"]
    )

    pairing = pair_specs(new, old, "HEAD")
    dynamic = pairing.instantiations["per_tensor_quant_fp8_dynamic"]
    assert [(a.key, b.key) for a, b in dynamic.pairs] == [(a.key, a.key) for a, _ in dynamic.pairs]
    assert [a.id for a, _ in dynamic.pairs] == ["float32-4-false-false", "float32-16-false-true-pdl"]
    assert [b.sizes for _, b in dynamic.pairs] == [{"k": 127}, {}]  # the fixed-size build with its like
    assert [i.id for i in dynamic.unpaired] == ["float16-4-false-false", "bfloat16-16-false-true"]
    assert pairing.skipped == [
        "per_tensor_quant_fp8_dynamic[float16-4-false-false]: not in HEAD",
        "per_tensor_quant_fp8_dynamic[bfloat16-16-false-true]: not in HEAD",
    ]
    static = pairing.instantiations["per_tensor_quant_fp8_static"]
    assert not static.unpaired and len(static.pairs) == 2

    # what prepare() hands the run: REV's builds of the paired instantiations only
    spec = next(s for s in new if s.name == "per_tensor_quant_fp8_dynamic")
    rev_builds = {b.id: f"rev-{b.id}.so" for _, b in dynamic.pairs}
    compared = against_revision(spec, rev_builds, spec.export, "HEAD")
    assert [i.id for i in compared.instantiations] == ["float32-4-false-false", "float32-16-false-true-pdl"]


def test_a_case_is_compared_with_revs_build_of_its_own_instantiation():
    """The dynamic fp8 spec has a size-generic float32 build and one pinned to k=127: a case
    of the pinned one runs REV's pinned build (the former reference took the first build
    that accepts float32 inputs, the size-generic one)."""
    spec = next(s for s in discover([QUANT_SPEC]).specs if s.name == "per_tensor_quant_fp8_dynamic")
    calls = []

    def loader(library: str, export: str):
        def old_kernel(out, input, scale):
            calls.append(library)
            scale.fill_(1.0)

        return old_kernel

    libraries = {v.id: f"rev-{v.id}.so" for v in spec.variants}
    compared = against_revision(spec, libraries, spec.export, "HEAD~1", loader)
    case = next(c for c in plan_cases(compared) if c.inst == "float32-4-false-false" and c.kind is CaseKind.REFERENCE)
    sizes = case.size_map
    initial = {"input": torch.randn(sizes["m"], sizes["k"]), "scale": torch.zeros(1)}
    expected = expected_outputs(CaseContext(spec=compared, kernels={}), case, initial)
    assert calls == ["rev-float32-4-false-false.so"]
    assert expected["out"].shape == (sizes["m"], 127) and expected["scale"].item() == 1.0


HAS_GPU = torch.cuda.is_available()
HAS_NVCC = shutil.which("nvcc") is not None or Path("/usr/local/cuda/bin/nvcc").exists()


@pytest.mark.skipif(not (HAS_GPU and HAS_NVCC), reason="needs a CUDA GPU and nvcc")
@pytest.mark.parametrize("factors, expected", [(("2", "3"), 1), (("2", "2.0f"), 0)])
def test_against_flags_a_changed_result_and_passes_an_unchanged_one(tmp_path, factors, expected):
    repo = make_repo(tmp_path, factors)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kernel_check",
            "test",
            "kernels",
            "--against",
            "HEAD~1",
            "--no-sanitize",
            "--no-bandwidth",
        ],
        capture_output=True,
        text=True,
        cwd=repo,
    )
    assert done.returncode == expected, done.stdout + done.stderr
    assert ("KD101" in done.stdout) == bool(expected)
    if expected:
        assert "differs from the build at HEAD~1" in done.stdout
