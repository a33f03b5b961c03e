"""`kernel-check spec new`: drafts from real libclang parses of csrc/ and of a small kernel in
the sglang export style; every draft must load as a valid spec."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import drafted_specs
from kernel_check.harness.discover import discover
from kernel_check.harness.draft import MAX_DRAFT_GRID_POINTS, TODO, draft_text
from kernel_check.harness.spec import CURRENT_STREAM, Role

pytestmark = pytest.mark.slow  # each test drafts from real parses of csrc/ or a tree of wrappers

ROOT = Path(__file__).resolve().parent.parent
CSRC = ROOT / "csrc"
SGL_FIXTURE = ROOT / "tests" / "fixtures" / "draft" / "sgl" / "row_scale.cuh"
# Roles a template argument decides: one launcher reads `scale` (static) or writes it
# (dynamic); the draft, one spec for both, takes the union (INPLACE).
ROLE_BY_TEMPLATE = {("per_tensor_quant_fp8_static", "scale")}
# The C++ parameter `in` is a Python keyword: the draft calls it `in_`, the hand-written spec `src`.
RENAMED = {"in_": "src"}


def _draft(cuh: Path, tmp_path: Path) -> list:
    return drafted_specs(cuh, tmp_path)


@pytest.fixture(scope="module")
def csrc_drafts(tmp_path_factory) -> dict[tuple[str, str], object]:
    tmp = tmp_path_factory.mktemp("drafts")
    drafts = {}
    for cuh in sorted(CSRC.rglob("*.cuh")):
        for spec in _draft(cuh, tmp):
            drafts[(cuh.name, spec.export)] = spec
    return drafts


@pytest.mark.skipif(not CSRC.is_dir(), reason="csrc/ is not in this checkout")
def test_every_csrc_kernel_gets_a_loadable_draft(csrc_drafts):
    assert {source for source, _ in csrc_drafts} == {p.name for p in CSRC.rglob("*.cuh")}
    # the wrapper exports the forwarding templates, not the launcher they call
    assert {e for s, e in csrc_drafts if s == "act_and_mul.cuh"} == {"silu_and_mul", "gelu_and_mul"}
    for spec in csrc_drafts.values():
        assert spec.reference is None and spec.instantiations


@pytest.mark.skipif(not CSRC.is_dir(), reason="csrc/ is not in this checkout")
def test_drafts_match_the_hand_written_specs(csrc_drafts):
    compared = 0
    for hand in discover([CSRC]).specs:
        draft = csrc_drafts[(Path(hand.source).name, hand.export)]

        def role(name, t):
            # a scatter target: the draft's OUT with `written_rows` (only the named rows must
            # be written) keeps the other rows as the hand-written INPLACE does
            return Role.INPLACE if (name, t.name) in ROLE_BY_TEMPLATE or t.written_rows else t.role

        assert [(RENAMED.get(t.name, t.name), role(hand.name, t), len(t.shape)) for t in draft.tensors] == [
            (t.name, role(hand.name, t), len(t.shape)) for t in hand.tensors
        ], hand.name
        assert [s.name for s in draft.scalars] == [s.name for s in hand.scalars], hand.name
        drafted = {i.id: i for i in draft.instantiations}
        for inst in hand.instantiations:  # specs split by mode take a part of the wrapper's list
            assert inst.id in drafted, (hand.name, inst.id)
            mine = drafted[inst.id]
            assert mine.template_args == inst.template_args and mine.pdl == inst.pdl
            assert {RENAMED.get(t.name, t.name): draft.tensor_dtype(t, mine) for t in draft.tensors} == {
                t.name: hand.tensor_dtype(t, inst) for t in hand.tensors
            }, (hand.name, inst.id)
        compared += 1
    assert compared == 13


@pytest.mark.skipif(not CSRC.is_dir(), reason="csrc/ is not in this checkout")
def test_widths_and_fixed_sizes_follow_the_template_arguments(csrc_drafts):
    rmsnorm = csrc_drafts[("rmsnorm.cuh", "rmsnorm")]
    inst = next(i for i in rmsnorm.instantiations if i.template_args == ("float16", 4096, True, True))
    assert set(inst.sizes.values()) == {4096}  # the hidden size pins its axis
    assert inst.vector_bytes["input"] == 16  # ensure_alignment(kVecBytes) evaluated for it
    scale = csrc_drafts[("scale.cuh", "scale")]
    assert {t.name: t.vector_bytes for t in scale.tensors} == {"dst": 16, "src": 16}
    store = csrc_drafts[("store_cache.cuh", "store_cache")]
    indices = next(t for t in store.tensors if t.name == "indices")
    assert indices.init == "perm:s" and store.constraint({"s": 3, "n": 32}) is False
    # the caches it scatters into are outputs only the rows of which the indices name are written
    caches = {t.name: (t.role, t.written_rows) for t in store.tensors if t.name.endswith("_cache")}
    assert caches == {"k_cache": (Role.OUT, "indices"), "v_cache": (Role.OUT, "indices")}


def test_sglang_style_launcher_static_member_of_a_class_template(tmp_path):
    (spec,) = _draft(SGL_FIXTURE, tmp_path)
    assert spec.symbol == "RowScale<>::run" and spec.export == "run"  # from the wrapper's load_jit
    assert [(t.name, t.shape, t.role) for t in spec.tensors] == [
        ("out", ("r", "c"), Role.OUT),
        ("in_", ("r", "c"), Role.IN),
        ("scale", ("r",), Role.IN),
    ]
    assert [t.dtype for t in spec.tensors] == ["T", "T", "float32"]
    assert {(i.template_args, i.pdl) for i in spec.instantiations} == {
        ((dtype, pdl), pdl) for dtype in ("float16", "bfloat16", "float32") for pdl in (True, False)
    }
    assert any({1, 127, 4097} <= set(values) for values in spec.grid.values())
    assert spec.launcher(spec.instantiations[0]) == "RowScale<fp16_t, true>::run"


def test_cli_writes_marks_and_never_overwrites(tmp_path):
    cuh = tmp_path / "row_scale.cuh"
    cuh.write_bytes(SGL_FIXTURE.read_bytes())
    command = [sys.executable, "-m", "kernel_check", "spec", "new", str(cuh)]
    first = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    text = (tmp_path / "row_scale_spec.py").read_text()
    assert f"reference=None,  # {TODO}: write the PyTorch reference" in text
    again = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert again.returncode == 2 and "already exists" in again.stderr and "Traceback" not in again.stderr
    assert (tmp_path / "row_scale_spec.py").read_text() == text
    missing = subprocess.run([*command[:-1], str(tmp_path / "nope.cuh")], capture_output=True, text=True)
    assert missing.returncode == 2 and "no such file" in missing.stderr


def test_a_file_without_a_launcher_is_one_line(tmp_path):
    cuh = tmp_path / "plain.cuh"
    cuh.write_text("#pragma once\nnamespace sglang {\ninline int twice(int x) { return 2 * x; }\n}\n")
    done = subprocess.run(
        [sys.executable, "-m", "kernel_check", "spec", "new", str(cuh), "-o", "-"], capture_output=True, text=True
    )
    assert done.returncode == 2 and "no launcher found" in done.stderr and len(done.stderr.splitlines()) == 1


@pytest.mark.skipif(not CSRC.is_dir(), reason="csrc/ is not in this checkout")
def test_a_drafted_spec_with_its_reference_plans_the_hand_written_checks(csrc_drafts):
    """Filled in, a draft runs the same kinds of cases on the same instantiations, and
    attacks the same tensors with the same bad inputs, as the hand-written spec."""
    import dataclasses

    from kernel_check.harness.cases import plan_cases

    def kinds(spec):
        return {
            (c.kind, c.inst, c.bad.tensor if c.bad else "", c.bad.kind if c.bad else None) for c in plan_cases(spec)
        }

    # (qknorm is left out: its ensure_alignment width is a layout struct's static member,
    # which the model does not evaluate; the draft says so, see below)
    for name, export, source in (
        ("scale", "scale", "scale.cuh"),
        ("rmsnorm", "rmsnorm", "rmsnorm.cuh"),
        ("store_cache", "store_cache", "store_cache.cuh"),
    ):
        hand = next(s for s in discover([CSRC]).specs if s.name == name)
        draft = dataclasses.replace(csrc_drafts[(source, export)], reference=hand.reference)
        assert kinds(draft) == kinds(hand), name


def test_an_alignment_the_model_cannot_evaluate_is_a_todo(tmp_path):
    cuh = CSRC / "norm" / "qknorm.cuh"
    out = tmp_path / "qknorm_spec.py"
    text = draft_text(cuh, out)
    assert f"{TODO}: tensor q: ensure_alignment not evaluated; 0 assumed" in text


def test_a_symbolic_dtype_with_options_is_one_build_of_several_runtime_dtypes(tmp_path):
    """`SymbolicDType` options become a dtype tuple: one build, every case once per choice."""
    source = SGL_FIXTURE.read_text()
    source = source.replace("dtype.set_options<T>();", "dtype.set_options<fp16_t, bf16_t>();")
    source = source.replace(
        "auto device = SymbolicDevice{};",
        "auto ids = SymbolicDType{};\n    ids.set_options<int32_t, int64_t>();\n    auto device = SymbolicDevice{};",
    )
    source = source.replace("with_dtype<fp32_t>()", "with_dtype(ids)")
    cuh = tmp_path / "runtime.cuh"
    cuh.write_text(source)
    (spec,) = _draft(cuh, tmp_path)
    assert [t.dtype for t in spec.tensors] == ["out_dtype", "out_dtype", "scale_dtype"]
    inst = spec.instantiations[0]
    assert inst.dtypes["out_dtype"] == ("float16", "bfloat16") and inst.dtypes["scale_dtype"] == ("int32", "int64")
    assert len(inst.variants()) == 4


# ----- a tree laid out like sglang's: kernels, headers and wrappers in folders of their own -----

SECOND_LAUNCHER = """
  static void run_again(tvm::ffi::TensorView out, tvm::ffi::TensorView in, tvm::ffi::TensorView scale) {
    run(out, in, scale);
  }
};
"""
PACKAGE_WRAPPER = """from kernel_check.jit import load_jit, make_cpp_args


def _module(dtype, pdl):
    args = make_cpp_args(dtype, pdl)
    return load_jit("row_scale", *args, cuda_files=["elementwise/row_scale.cuh"],
                    cuda_wrappers=[("scale_rows", f"RowScale<{args}>::run"),
                                   ("scale_rows_again", f"RowScale<{args}>::run_again")])
"""
# sorted first, and names a file whose name merely ends like the kernel's
DECOY_WRAPPER = """from kernel_check.jit import load_jit


def _module():
    return load_jit("decoy", cuda_files=["elementwise/fused_row_scale.cuh"], cuda_wrappers=[("decoy", "Decoy::run")])
"""


@pytest.fixture
def package_tree(tmp_path) -> Path:
    """tree/jit/{include,csrc/elementwise}/ and the wrappers in tree/ops/: nothing beside the kernel."""
    import shutil

    from kernel_check.includes import bundled_include_dir

    tree = tmp_path / "tree"
    shutil.copytree(bundled_include_dir(), tree / "jit" / "include")
    kernels = tree / "jit" / "csrc" / "elementwise"
    kernels.mkdir(parents=True)
    source = SGL_FIXTURE.read_text()
    (kernels / "row_scale.cuh").write_text(
        source[: source.rindex("};")] + SECOND_LAUNCHER + source[source.rindex("};") + 2 :]
    )
    (tree / "ops" / "elementwise").mkdir(parents=True)
    (tree / "ops" / "a_decoy.py").write_text(DECOY_WRAPPER)
    (tree / "ops" / "elementwise" / "row_scale_ops.py").write_text(PACKAGE_WRAPPER)
    return tree


def test_a_tree_with_its_wrappers_elsewhere_drafted_through_an_environment_variable(
    package_tree, tmp_path, monkeypatch
):
    """The wrapper is found in the package by the kernel's path (not a look-alike name), each
    member launcher gets its own export, and a spec kept outside the tree names it through
    $KC_TREE: its source and the tree's include/ as paths below it, no machine path."""
    cuh = package_tree / "jit" / "csrc" / "elementwise" / "row_scale.cuh"
    out = tmp_path / "specs" / "row_scale_spec.py"
    out.parent.mkdir()
    text = draft_text(cuh, out, tree=("KC_TREE", package_tree))
    assert "TREE = tree_path('KC_TREE')" in text and str(package_tree) not in text
    out.write_text(text)
    monkeypatch.setenv("KC_TREE", str(package_tree))
    found = discover([out])
    assert not found.errors, found.errors
    assert {(s.export, s.symbol) for s in found.specs} == {
        ("scale_rows", "RowScale<>::run"),
        ("scale_rows_again", "RowScale<>::run_again"),
    }
    for spec in found.specs:
        assert spec.source == str(cuh) and spec.include_dirs == (str(package_tree / "jit" / "include"),)
    monkeypatch.delenv("KC_TREE")
    again = out.with_name("row_scale_again_spec.py")  # a fresh import: the first one is cached
    again.write_text(text)
    unset = discover([again])
    assert not unset.specs and "set KC_TREE to the kernel tree" in unset.errors[0]


def test_tree_env_on_the_command_line_is_checked(package_tree, tmp_path):
    cuh = package_tree / "jit" / "csrc" / "elementwise" / "row_scale.cuh"
    command = [sys.executable, "-m", "kernel_check", "spec", "new", "--tree-env", "KC_TREE", "-o", "-"]
    env = {k: v for k, v in __import__("os").environ.items() if k != "KC_TREE"}
    unset = subprocess.run([*command, str(cuh)], capture_output=True, text=True, env=env)
    assert unset.returncode == 2 and "set KC_TREE" in unset.stderr and len(unset.stderr.splitlines()) == 1
    outside = subprocess.run(
        [*command, str(SGL_FIXTURE)], capture_output=True, text=True, env={**env, "KC_TREE": str(package_tree)}
    )
    assert outside.returncode == 2 and "not inside $KC_TREE" in outside.stderr and "Traceback" not in outside.stderr


def test_which_wrapper_entries_name_the_kernel_and_which_strides_pad_rows():
    from kernel_check.harness.draft import names_file, padded_rows

    kernel = "/tree/jit/csrc/elementwise/rmsnorm.cuh"
    assert names_file("elementwise/rmsnorm.cuh", kernel) and names_file("rmsnorm.cuh", "rmsnorm.cuh")
    assert not names_file("elementwise/fused_add_rmsnorm.cuh", kernel)
    assert not names_file("fused_add_rmsnorm.cuh", "rmsnorm.cuh")
    assert not padded_rows("TensorMatcher({N, D}).with_strides({D, 1}).verify(x)", ("N", "D"))
    assert padded_rows("TensorMatcher({N, D}).with_strides({S, 1}).verify(x)", ("N", "D"))
    assert not padded_rows("TensorMatcher({N, D}).verify(x)", ("N", "D"))


def test_the_wrapper_search_never_reads_a_fifo(tmp_path):
    """A FIFO named like a wrapper in the searched package would block a read forever."""
    import os
    import threading

    from kernel_check.harness.draft import find_wrapper

    kernel = tmp_path / "pkg" / "csrc" / "row_scale.cuh"
    kernel.parent.mkdir(parents=True)
    kernel.write_bytes(SGL_FIXTURE.read_bytes())
    os.mkfifo(tmp_path / "pkg" / "pipe.py")
    found: list = []
    search = threading.Thread(target=lambda: found.append(find_wrapper(kernel)), daemon=True)
    search.start()
    search.join(timeout=60)
    assert found == [None]


def test_spec_new_on_a_folder_drafts_each_kernel_and_tables_the_guesses(tmp_path):
    tree = tmp_path / "kernels"
    (tree / "rows").mkdir(parents=True)
    (tree / "rows" / "row_scale.cuh").write_bytes(SGL_FIXTURE.read_bytes())
    (tree / "plain.cuh").write_text("#pragma once\ninline int twice(int x) { return 2 * x; }\n")
    (tree / "kept.cuh").write_bytes(SGL_FIXTURE.read_bytes())
    (tree / "kept_spec.py").write_text("# the user's own spec\n")
    done = subprocess.run(
        [sys.executable, "-m", "kernel_check", "spec", "new", "kernels", "--no-probe"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line for line in done.stdout.splitlines()[1:]}
    assert set(rows) == {"kernels/kept.cuh", "kernels/plain.cuh", "kernels/rows/row_scale.cuh"}
    assert "exists, kept" in rows["kernels/kept.cuh"] and "no launcher found" in rows["kernels/plain.cuh"]
    drafted = rows["kernels/rows/row_scale.cuh"].split()
    assert drafted[1:4] == ["row_scale_spec.py", "run", "6"]  # RowScale<>::run; 3 dtypes x PDL on/off
    assert drafted[5] in ("high", "medium", "low")
    assert (tree / "kept_spec.py").read_text() == "# the user's own spec\n"
    assert not (tree / "plain_spec.py").exists()
    assert discover([tree / "rows" / "row_scale_spec.py"]).specs[0].symbol == "RowScale<>::run"
    assert "wrote 1 spec file(s)" in done.stderr


def test_template_values_come_from_the_dispatch_in_the_source(tmp_path):
    """No wrapper: the values the source's own calls pass, as the source spells them (a tree
    without the project's headers has no `fp32_t`), each binding its dtype."""
    source = ROOT / "tests" / "fixtures" / "draft" / "own_tree" / "csrc" / "dispatch.cu"
    out = tmp_path / "dispatch_spec.py"
    out.write_text(draft_text(source, out, launcher="fill_rows"))
    spec = discover([out]).specs[0]
    assert [(i.template_args, dict(i.dtypes)) for i in spec.instantiations] == [
        (("float", 4, 128), {"T": "float32"}),
        (("__nv_bfloat16", 8, 256), {"T": "bfloat16"}),
        (("__nv_bfloat16", 8, 64), {"T": "bfloat16"}),
    ]
    assert spec.launcher(spec.instantiations[1]) == "fill_rows<__nv_bfloat16, 8, 256>"
    assert "from the calls that dispatch to it" in out.read_text()


ARG_KINDS_FIXTURE = ROOT / "tests" / "fixtures" / "draft" / "argtree" / "csrc" / "scale.cu"


def test_optional_tensors_and_strings_are_drafted_as_the_launcher_accepts_them(tmp_path):
    """An ``Optional<TensorView>`` tested with ``has_value()`` is left out (None), one used
    untested is a tensor; a string gets the first literal the launcher compares it with, ""
    where it compares it with none. The types come from a header of the tree's own
    ``include/``, so the parse must search it as the build does."""
    (spec,) = _draft(ARG_KINDS_FIXTURE, tmp_path)
    kinds = [(type(a).__name__, a.name, getattr(a, "value", None)) for a in spec.args]
    assert kinds == [
        ("Tensor", "x", None),
        ("Tensor", "y", None),
        ("Scalar", "bias", None),
        ("Tensor", "gain", None),
        ("Scalar", "order", "forward"),
        ("Scalar", "label", ""),
    ]
    text = (tmp_path / "scale_spec.py").read_text()
    assert "it also compares it with 'reversed'" in text
    assert "compares label with no string literal" in text


HELPER_LAUNCH_FIXTURE = ROOT / "tests" / "fixtures" / "draft" / "own_tree" / "csrc" / "helper_launch.cu"


def test_roles_follow_the_data_into_a_host_helper_that_launches(tmp_path):
    """The launcher's own body launches nothing: it hands `out`'s and `in`'s data to a host
    helper (from a lambda inside a dispatch macro), whose launch writes one and reads the
    other. The roles come from that launch, not from the "nothing seen written" guess."""
    (spec,) = _draft(HELPER_LAUNCH_FIXTURE, tmp_path)
    roles = {a.name: a.role for a in spec.args if hasattr(a, "role")}
    assert roles == {"out": Role.OUT, "in_": Role.IN}
    assert "no tensor is seen written" not in (tmp_path / "helper_launch_spec.py").read_text()


UNSEEN_HELPER_FIXTURE = ROOT / "tests" / "fixtures" / "draft" / "own_tree" / "csrc" / "unseen_helper.cu"


def test_a_tensor_named_as_an_output_is_guessed_out_where_no_access_is_seen(tmp_path):
    """Nothing says which tensor the out-of-sight helper writes: `out` (named as an output,
    its data cast to a non-const pointer) is guessed OUT, so the harness poisons it and sees
    an element never written; `stats`, also cast to a non-const pointer but not named so, may
    be written: INPLACE (compared, never poisoned), never an input; `in` is cast to const."""
    (spec,) = _draft(UNSEEN_HELPER_FIXTURE, tmp_path)
    roles = {a.name: a.role for a in spec.args if hasattr(a, "role")}
    assert roles == {"out": Role.OUT, "in_": Role.IN, "stats": Role.INPLACE}
    assert "out assumed OUT (named as outputs)" in (tmp_path / "unseen_helper_spec.py").read_text()


ROW_BYTES_FIXTURE = ROOT / "tests" / "fixtures" / "draft" / "sgl" / "row_bytes.cuh"


def test_a_runtime_check_pins_a_dimension_per_instantiation(tmp_path):
    """`RuntimeCheck(element_bytes(dtype) * D == kRowBytes)`: each drafted instantiation fixes
    `D` at its row bytes over the element bytes (fp32: 4), and one whose row bytes no whole
    `D` gives is left out, so every drafted case passes the launcher's own check."""
    (spec,) = _draft(ROW_BYTES_FIXTURE, tmp_path)
    assert spec.instantiations, (tmp_path / "row_bytes_spec.py").read_text()
    for inst in spec.instantiations:
        (row_bytes,) = inst.template_args
        assert row_bytes % 4 == 0 and dict(inst.sizes) == {"d": row_bytes // 4}


STREAM_HANDLE_FIXTURE = ROOT / "tests" / "fixtures" / "draft" / "own_tree" / "csrc" / "stream_handle.cu"


def test_a_stream_handle_the_launcher_launches_on_is_the_calls_stream(tmp_path):
    """`int64_t stream` cast to `cudaStream_t` and launched on: drafted CURRENT_STREAM (the
    handle of the stream the harness runs the call on, read at the call), so the stream and
    graph checks see the launch where they put it; `offset`, an integer it does not cast, is
    still a value to pick: 0, as for every integer named as a shift (one past 0 would move
    the largest in-range id or row past its tensor's end)."""
    (spec,) = _draft(STREAM_HANDLE_FIXTURE, tmp_path)
    scalars = {a.name: a.value for a in spec.args if not hasattr(a, "role")}
    assert scalars == {"offset": 0, "stream": CURRENT_STREAM}
    text = (tmp_path / "stream_handle_spec.py").read_text()
    assert "Scalar('stream', CURRENT_STREAM)" in text and "Scalar('offset', 0)" in text


WIDE_GRID_FIXTURE = ROOT / "tests" / "fixtures" / "draft" / "sgl" / "wide_grid.cuh"


def test_a_launcher_with_many_independent_lengths_gets_a_grid_of_bounded_size(tmp_path):
    """Seven tensors of seven lengths: varying each over its values would plan 2,916
    reference cases; the draft varies the tail axis and the first free axes while the grid
    stays within MAX_DRAFT_GRID_POINTS, holds the rest at one value, and says which."""
    (spec,) = _draft(WIDE_GRID_FIXTURE, tmp_path)
    (inst,) = spec.instantiations
    points = list(spec.grid_points(inst))
    assert 1 < len(points) <= MAX_DRAFT_GRID_POINTS
    held = [axis for axis, values in spec.grid.items() if len(values) == 1]
    assert held == ["n3", "n4", "n5"] and all(spec.grid[axis] == (3,) for axis in held)
    assert f"{TODO}: axes n3, n4, n5 hold one value each" in (tmp_path / "wide_grid_spec.py").read_text()
