"""Rules whose fix names a header-library API say what works with the user's own
`sgl_kernel/` (found on the include path): the model records which names it has."""

from __future__ import annotations

from pathlib import Path

from conftest import run_one
from kernel_check.includes import library_names

# An older, smaller header library: no get_lane_id, no ensure_alignment, no CHECK_HOST.
_OLD_UTILS = """\
#pragma once
#include <cstdint>
#define SGL_DEVICE __forceinline__ __device__
/* get_lane_id would go here one day; a comment is not a declaration. */
namespace sglang::host {
inline void RuntimeCheck(bool ok, const char* what = "CHECK_HOST") { if (!ok) throw what; }
}  // namespace sglang::host
"""

_KERNEL = """\
#include <sgl_kernel/utils.cuh>

namespace sglang {

/// \\brief Copies one word per lane.
/// \\param dst Output.
/// \\param src Input.
__global__ void lane_copy(float* __restrict__ dst, const float* __restrict__ src) {
  const uint32_t lane = threadIdx.x % 32;
  dst[lane] = src[lane];
}

/// \\brief A host-side check.
/// \\param n A count.
inline void check_count(int64_t n) { host::RuntimeCheck(n > 0, "n must be positive"); }

}  // namespace sglang
"""


def _old_tree(tmp_path: Path) -> Path:
    library = tmp_path / "repo" / "include" / "sgl_kernel"
    library.mkdir(parents=True)
    (library / "utils.cuh").write_text(_OLD_UTILS)
    kernel = tmp_path / "repo" / "csrc" / "lane_copy.cuh"
    kernel.parent.mkdir()
    kernel.write_text(_KERNEL)
    return kernel


def test_library_names_skip_comments_and_strings(tmp_path: Path) -> None:
    names = library_names(_old_tree(tmp_path).parents[1] / "include")
    assert {"RuntimeCheck", "SGL_DEVICE", "sglang"} <= names
    assert "get_lane_id" not in names and "CHECK_HOST" not in names


def test_fixes_follow_the_users_header_library(tmp_path: Path) -> None:
    result = run_one(_old_tree(tmp_path))
    by_code = {f.code: f for f in result.findings}
    assert "KC160" not in by_code  # CHECK_HOST is not there to prefer
    message = by_code["KC151"].message
    assert "no `get_lane_id`" in message and "%laneid" in message and "sgl_kernel/utils.cuh" in message


def test_fixes_name_the_guide_api_when_the_library_has_it() -> None:
    fixture = Path(__file__).parent / "fixtures" / "cpp" / "kc151_lane_id_modulo.cuh"
    messages = [f.message for f in run_one(fixture).findings if f.code == "KC151"]
    assert messages and all("use `device::get_lane_id" in m and "%laneid" not in m for m in messages)


# A library whose RuntimeCheck is a struct (its constructor throws), with CHECK_HOST beside it.
_STRUCT_CHECK_UTILS = """\
#pragma once
#include <cstdint>
namespace sglang::host {
struct RuntimeCheck {
  template <typename... Args>
  explicit RuntimeCheck(bool ok, Args&&...) { if (!ok) throw 1; }
};
}  // namespace sglang::host
#define CHECK_HOST(cond) if (!(cond)) throw 2; std::int32_t{}
"""


def test_a_check_spelled_as_a_struct_is_still_the_library_check(tmp_path: Path) -> None:
    kernel = _old_tree(tmp_path)
    (kernel.parents[1] / "include" / "sgl_kernel" / "utils.cuh").write_text(_STRUCT_CHECK_UTILS)
    kernel.write_text(
        "#include <sgl_kernel/utils.cuh>\n\nnamespace sglang {\n\n"
        "/// \\brief A host-side check.\n/// \\param n A count.\n"
        "inline void check_count(int64_t n) {\n"
        '  host::RuntimeCheck(n > 0, "n must be positive, got ", n);\n}\n\n'
        "}  // namespace sglang\n"
    )
    assert [(f.code, f.line) for f in run_one(kernel).findings] == [("KC160", 8)]
