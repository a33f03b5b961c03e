// kernel-check hermetic stub of the CUDA toolkit's warp matrix (WMMA) header: the names
// `nvcuda::wmma` code spells (fragments, layouts, the *_sync functions), as templates whose
// bodies parsing never needs.
#pragma once
#include "../kernel_check_cuda_prelude.h"

namespace nvcuda {
namespace wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };
namespace experimental {
namespace precision {
struct u4 {};
struct s4 {};
struct b1 {};
}  // namespace precision
enum bmmaBitOp { bmmaBitOpXOR = 1, bmmaBitOpAND = 2 };
enum bmmaAccumulateOp { bmmaAccumulateOpPOPC = 1 };
}  // namespace experimental
template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment {
  enum { num_elements = 1 };
  T x[1];
};
template <typename Use, int M, int N, int K, typename T, typename Layout, typename Value>
__device__ void fill_fragment(fragment<Use, M, N, K, T, Layout>&, const Value&);
template <typename Use, int M, int N, int K, typename T, typename Layout, typename Pointer>
__device__ void load_matrix_sync(fragment<Use, M, N, K, T, Layout>&, const Pointer*, unsigned);
template <typename Use, int M, int N, int K, typename T, typename Pointer>
__device__ void load_matrix_sync(fragment<Use, M, N, K, T, void>&, const Pointer*, unsigned, layout_t);
template <int M, int N, int K, typename T, typename Pointer>
__device__ void store_matrix_sync(Pointer*, const fragment<accumulator, M, N, K, T, void>&, unsigned, layout_t);
template <typename D, typename A, typename B, typename C>
__device__ void mma_sync(D&, const A&, const B&, const C&, bool = false);
template <typename D, typename A, typename B, typename C>
__device__ void bmma_sync(D&, const A&, const B&, const C&, experimental::bmmaBitOp = experimental::bmmaBitOpXOR,
                          experimental::bmmaAccumulateOp = experimental::bmmaAccumulateOpPOPC);
}  // namespace wmma
}  // namespace nvcuda
