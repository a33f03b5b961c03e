"""Drafted inputs that the launcher accepts as they are (issue 29, item 2): rank, dimensions
and dtypes read from a launcher that checks its tensors by hand (no TensorMatcher)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import drafted_specs
from kernel_check.harness.discover import discover
from kernel_check.harness.draft import draft_text
from kernel_check.harness.hand_checks import read_hand_checks

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "draft" / "handcheck"


def _spec(source: Path, tmp_path: Path):
    (spec,) = drafted_specs(source, tmp_path)
    return spec


@pytest.mark.slow
def test_a_hand_checked_launcher_gets_ranks_shared_dims_pins_and_dtypes(tmp_path):
    spec = _spec(FIXTURES / "gather_rows.cu", tmp_path)
    tensors = {t.name: t for t in spec.tensors}
    # CHECK_DIM(3, src); src.size(0) named num_rows; size(2) == kHeadDim (a constexpr: 64)
    assert tensors["src"].shape == ("num_rows", "src_1", 64)
    # CHECK_SHAPE(out, src): the same rank and dimensions
    assert tensors["out"].shape == tensors["src"].shape
    # ids.size(0) == num_rows: the shared symbol
    assert tensors["ids"].shape == ("num_rows",)
    # batch = indptr.size(0) - 1: indptr is one longer than the axis `batch`
    assert tensors["indptr"].shape == ("batch+1",) and tensors["scales"].shape == ("batch",)
    # dtypes: a DISPATCH over fp16 (bf16 also accepted), dl_int32 checks, a float* cast
    assert (tensors["src"].dtype, tensors["src"].accepts) == ("float16", ("bfloat16",))
    assert tensors["out"].dtype == "float16"
    assert tensors["ids"].dtype == tensors["indptr"].dtype == "int32"
    assert tensors["scales"].dtype == "float32"
    # src.size(1) % kBlock == 0: that axis takes multiples of 16 only, never the tails
    assert all(v % 16 == 0 for v in spec.grid["src_1"])
    # an Optional<TensorView> the parse cannot resolve is passed as None, not as an int
    assert {s.name: s.value for s in spec.scalars} == {"mask": None}


def test_the_first_branch_of_a_layout_switch_names_the_dimensions():
    body = """{
      CHECK_DIM(4, cache);
      CHECK_DIM(3, keys);
      unsigned int heads, page;
      if (layout == 0) { heads = cache.size(1); page = cache.size(2); }
      else { page = cache.size(1); heads = cache.size(2); }
      TVM_FFI_ICHECK_EQ(keys.size(1), heads);
      TVM_FFI_ICHECK_EQ(keys.size(-1), cache.size(-1)) << "head_dim == " << 3;
    }"""
    checks = read_hand_checks(body, ["keys", "cache"], {}, set())
    assert checks.shapes["cache"] == ("cache_0", "heads", "page", "keys_2")
    # size(-1) is the last dimension: one symbol, named by the first tensor (argument order)
    assert checks.shapes["keys"] == ("keys_0", "heads", "keys_2")


def test_without_a_rank_check_the_highest_dimension_read_gives_the_rank():
    checks = read_hand_checks("{ int d = x.stride(2); int n = y.size(0); }", ["x", "y", "z"], {}, set())
    assert checks.shapes == {"x": ("x_0", "x_1", "x_2"), "y": ("n",)}


def test_a_template_parameter_and_a_derived_dimension():
    body = """{
      RuntimeCheck(x.size(1) == kDim, "x");
      const int64_t n = x.size(0);
      TVM_FFI_ICHECK(y.ndim() == 2 && y.size(0) == n && y.size(1) == kDim / 2);
    }"""
    checks = read_hand_checks(body, ["x", "y"], {}, {"kDim"})
    assert checks.shapes == {"x": ("n", "kDim"), "y": ("n", "kDim//2")}


@pytest.mark.slow
def test_index_like_inputs_and_an_unordered_output_from_how_the_kernel_uses_loaded_values(tmp_path):
    spec = _spec(FIXTURES / "segment_gather.cu", tmp_path)
    tensors = {t.name: t for t in spec.tensors}
    # table[ids[i] * width + ...]: ids hold rows of table
    assert tensors["ids"].init == "randint:table_0"
    # offsets[segment] .. offsets[segment + 1], and ids[offsets[segment]]: a prefix sum over ids
    assert tensors["offsets"].init == "cumsum:ids_0"
    # picked[atomicAdd(count, 1)]: the order of picked's rows is the atomics' order
    assert spec.canonicalize == {"picked": "sort"}
    # the index profiles (duplicates, edges, out of range) are the attack on both
    from kernel_check.harness.profiles import applicable

    assert applicable(tensors["offsets"].init, "int32") == ("dup", "edge", "oob")


@pytest.mark.slow
def test_ids_read_through_a_params_struct_a_local_and_an_offset_helper_index_the_table(tmp_path):
    """`take_rows` unpacks its params struct (`take_window` one nested in another), casts the
    ids to a template's `T`, keeps `ids[i]` in a local and moves `table` by it through
    `ptr::offset` into a copy helper: ids hold rows of table, and each tensor's role is seen
    through the nested struct (not "out of sight", so not INPLACE). `put_rows` writes the rows
    its ids name (a scatter): distinct ids; the rows none names keep their values, so the
    cache is an output only those ids' rows of which must be written (`written_rows`): the
    harness poisons it, and a row a bug leaves unwritten is seen (KD102)."""
    source = FIXTURES / "struct_gather.cu"
    out = tmp_path / "struct_gather_spec.py"
    text = draft_text(source, out)
    out.write_text(text)
    found = discover([out])
    assert not found.errors, found.errors
    specs = {s.name: s for s in found.specs}
    tensors = {t.name: t for t in specs["struct_gather"].tensors}
    assert tensors["ids"].init == "randint:table_0"
    assert {name: t.role.name for name, t in tensors.items()} == {"table": "IN", "ids": "IN", "out": "OUT"}
    assert "out of sight" not in text
    scatter = {t.name: t for t in specs["struct_scatter"].tensors}
    assert scatter["ids"].init == "perm:cache_0"
    assert {name: t.role.name for name, t in scatter.items()} == {"cache": "OUT", "ids": "IN", "rows": "IN"}
    assert scatter["cache"].written_rows == "ids"


@pytest.mark.slow
def test_a_template_helper_holding_the_launch_is_no_launcher_of_its_own(tmp_path):
    """`halve` dispatches to `halve_impl<T, 256>`, which launches: one spec, for `halve`, its
    tensors read through the helper (a size local is no tensor whose use is out of sight)."""
    source = FIXTURES / "dispatch_helper.cu"
    out = tmp_path / "dispatch_helper_spec.py"
    text = draft_text(source, out)
    out.write_text(text)
    found = discover([out])
    assert not found.errors, found.errors
    assert [s.name for s in found.specs] == ["halve"]
    assert [(t.name, t.shape, t.role.name) for t in found.specs[0].tensors] == [
        ("src", ("n",), "IN"),
        ("dst", ("n",), "OUT"),
    ]
    assert "#0" not in text


@pytest.mark.slow
def test_behind_an_unseen_launch_the_casts_say_which_tensors_are_outputs_and_their_shapes(tmp_path):
    """`merged` is cast to `float*` like the checked `a`: an output beside it, of its shape;
    `order` (a `const int32_t*`) is no output and takes no one's shape."""
    spec = _spec(FIXTURES / "merge_pair.cu", tmp_path)
    tensors = {t.name: t for t in spec.tensors}
    assert tensors["merged"].shape == tensors["a"].shape == ("rows", "a_1")
    assert tensors["order"].shape == ("order_0",)
    assert {n for n, t in tensors.items() if t.written} == {"merged", "slots"}


@pytest.mark.slow
def test_a_helper_whose_call_the_parse_lost_is_read_through_its_caller(tmp_path):
    """`scale_f32` calls `scale_impl<float, float32_code>` (a constant the parse cannot see):
    one spec, for `scale_f32`, with the shapes `scale_impl` checks."""
    spec = _spec(FIXTURES / "lost_call.cu", tmp_path)
    assert spec.name == "scale_f32"
    assert [t.shape for t in spec.tensors] == [("x_0", "x_1"), ("x_0", "x_1")]


def test_a_dispatch_over_two_families_drafts_the_first_and_accepts_the_rest():
    checks = read_hand_checks(
        "{ DISPATCH_DLPACK_DTYPE_TO_CTYPE_FP16_FP8(k.dtype(), c_type, [&] {}); "
        "DISPATCH_DLPACK_IDTYPE_TO_CTYPE(ids.dtype(), i_type, [&] {}); }",
        ["k", "ids"],
        {},
        set(),
    )
    assert checks.dtypes == {
        "k": ("float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"),
        "ids": ("int32", "int64"),
    }


def test_a_multiple_required_of_a_derived_dimension_falls_on_its_axis():
    body = "{ const int K = x.size(1) * 2; TVM_FFI_ICHECK(x.ndim() == 2); TVM_FFI_ICHECK(K % kBlock == 0); }"
    checks = read_hand_checks(body, ["x"], {"kBlock": 16}, set())
    assert checks.shapes["x"] == ("x_0", "x_1") and checks.divisible == {"x_1": 8}


def test_a_rank_switch_is_read_in_its_first_branch():
    """`if (x.ndim() == 2) {...} else if (x.ndim() == 3) {...}`: the 2-D branch's dimensions."""
    body = """{
      if (x.ndim() == 2) { unsigned int rows = x.size(0); TVM_FFI_ICHECK_EQ(y.size(0), x.size(1)); }
      else if (x.ndim() == 3) { TVM_FFI_ICHECK_EQ(y.size(0), x.size(2)); }
    }"""
    checks = read_hand_checks(body, ["x", "y"], {}, set())
    assert checks.shapes == {"x": ("rows", "x_1"), "y": ("x_1",)}


@pytest.mark.slow
def test_launchers_a_macro_defines_are_drafted_from_its_expansion(tmp_path):
    """`SCALE_OP(_f32, float)` defines `scale_f32`: found as a launcher (tvm::ffi resolved as the
    build includes it), its launch's arguments told apart though they share the macro's
    extent, and its checks and casts read from the macro's expansion."""
    specs = {s.name: s for s in drafted_specs(FIXTURES / "macro_launcher.cu", tmp_path)}
    assert set(specs) == {"scale_f32", "scale_i8"}
    tensors = {t.name: t for t in specs["scale_i8"].tensors}
    assert (tensors["x"].shape, tensors["x"].dtype, tensors["x"].role.name) == (("rows", "cols"), "int8", "IN")
    # written by the kernel (not a guess): OUT, shaped as its twin `x`
    assert (tensors["y"].shape, tensors["y"].dtype, tensors["y"].role.name) == (("rows", "cols"), "int8", "OUT")
    assert "no tensor is seen written" not in (tmp_path / "macro_launcher_spec.py").read_text()


@pytest.mark.slow
def test_guards_on_thread_indices_a_macro_body_reads_size_the_unchecked_tensors(tmp_path):
    """`threadIdx.x` and `blockIdx.y` are spelled in the kernel macro's body (their tokens run
    on to the end of the expansion): followed all the same, `c < n_cols` sizes `flags` and
    `r < n_rows` sizes `bias`; a byte tensor (on/off flags) is no row ids."""
    (spec,) = drafted_specs(FIXTURES / "macro_guarded.cu", tmp_path)
    tensors = {t.name: t for t in spec.tensors}
    assert tensors["out"].shape == ("n_rows", "n_cols")
    assert tensors["flags"].shape == ("n_cols",) and tensors["bias"].shape == ("n_rows",)
    assert (tensors["flags"].dtype, tensors["flags"].init) == ("int8", "randn")
    assert spec.constraint is None


@pytest.mark.slow
def test_a_kernel_that_traps_below_an_architecture_is_named_and_a_scalar_read_is_no_guarded_length(tmp_path):
    """`pack_new_format` is `__trap()` unless `__CUDA_ARCH__ >= 1000`: the draft says every
    case faults below sm_100. `*scale_ptr` under `if (row >= rows) return;` reads one element:
    its tensor is not sized by the guard."""
    (spec,) = drafted_specs(FIXTURES / "arch_trap.cu", tmp_path)
    text = (tmp_path / "arch_trap_spec.py").read_text()
    assert "pack_rows_kernel calls pack_new_format, which traps (`__trap()`) below sm_100" in text
    assert spec.min_arch == 100  # an older card runs none of its cases
    tensors = {t.name: t for t in spec.tensors}
    assert tensors["scale"].shape == ("scale_0",)


def test_the_architecture_a_preprocessor_branch_traps_below():
    from kernel_check.harness.arch_guards import trapped_below

    assert trapped_below("#if __CUDA_ARCH__ >= 900\n  fast();\n#else\n  __trap();\n#endif") == 900
    assert trapped_below('#if __CUDA_ARCH__ < 800\n  asm volatile("trap;");\n#endif') == 800
    # the trap of the new cards' branch, or one no architecture guards: no requirement
    assert trapped_below("#if __CUDA_ARCH__ >= 900\n  __trap();\n#endif") is None
    assert trapped_below("#ifdef DEBUG\n  __trap();\n#endif") is None


@pytest.mark.slow
def test_sizes_and_size_scalars_from_the_guards_of_kernels_a_header_helper_launches(tmp_path):
    """The launchers hand raw pointers to helpers of a header (one launching with <<<>>>,
    one with cudaLaunchKernel and an argument array): the roles come from those kernels, and
    each unchecked tensor holds what their guards let them reach, over the scalar that bounds
    it (then passed as that axis's size) or over the 1-D tensor whose numel() it is."""
    specs = {s.name: s for s in drafted_specs(FIXTURES / "bounded_ops.cu", tmp_path)}
    close = {t.name: t for t in specs["close_segments"].tensors}
    # `if (s <= count) ends[s] = ...`: count + 1 entries; starts[s] only for s < count
    assert (close["ends"].shape, close["ends"].role.name) == (("count+1",), "OUT")
    assert (close["starts"].shape, close["starts"].role.name) == (("count",), "IN")
    (count,) = specs["close_segments"].scalars
    assert count.resolve({"count": 5}) == 5
    pack = {t.name: t for t in specs["pack_flags"].tensors}
    # `if (first + lane * 8 < n) packed[first / 8 + lane]`, n = flags.numel(): ceil(n / 8) bytes
    assert (pack["packed"].shape, pack["packed"].role.name) == (("(flags_0+7)//8",), "OUT")
    assert pack["flags"].role.name == "IN"
    # table[rows[i] * width + cols[i]] in a device function the kernel calls: two loaded
    # values add up to one index, so each stays below half of table's length
    gather = {t.name: t for t in specs["gather_picks"].tensors}
    assert gather["rows"].init == gather["cols"].init == "randint:(table_0+1)//2"
    assert (gather["out"].shape, gather["out"].role.name) == (("count",), "OUT")
