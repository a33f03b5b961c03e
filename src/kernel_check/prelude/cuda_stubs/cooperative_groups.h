// kernel-check hermetic stub of CUDA's cooperative groups: declarations only, written from
// the documented API (groups, partitions, clusters), precise enough to type kernels.
#pragma once
#include "../kernel_check_cuda_prelude.h"

namespace cooperative_groups {

/// Any group of threads.
class thread_group {
 public:
  __device__ void sync() const;
  __device__ unsigned long long size() const;
  __device__ unsigned long long num_threads() const;
  __device__ unsigned long long thread_rank() const;
};

/// The threads of one block.
class thread_block : public thread_group {
 public:
  __device__ dim3 group_index() const;
  __device__ dim3 thread_index() const;
  __device__ dim3 group_dim() const;
  __device__ dim3 dim_threads() const;
};

/// The blocks of one cluster (sm_90+).
class cluster_group : public thread_group {
 public:
  __device__ void barrier_arrive() const;
  __device__ void barrier_wait() const;
  __device__ unsigned int block_rank() const;
  __device__ unsigned int num_blocks() const;
  __device__ dim3 dim_blocks() const;
  __device__ dim3 block_index() const;
  __device__ unsigned int query_shared_rank(const void* address) const;
  template <typename T>
  __device__ T* map_shared_rank(T* address, int rank) const;
  template <typename T>
  __device__ T& map_shared_rank(T& address, int rank) const;
};

/// Every thread of the grid (cooperative launches).
class grid_group : public thread_group {
 public:
  __device__ bool is_valid() const;
  __device__ unsigned long long block_rank() const;
  __device__ unsigned long long num_blocks() const;
  __device__ dim3 dim_blocks() const;
  __device__ dim3 block_index() const;
};

/// The active threads of a warp.
class coalesced_group : public thread_group {
 public:
  __device__ unsigned int meta_group_rank() const;
  __device__ unsigned int meta_group_size() const;
  template <typename T>
  __device__ T shfl(T value, int source) const;
  __device__ int any(int predicate) const;
  __device__ int all(int predicate) const;
  __device__ unsigned int ballot(int predicate) const;
};

/// A tile of `Size` threads (a power of two up to 32, or larger for block tiles).
template <unsigned int Size, typename ParentT = void>
class thread_block_tile : public thread_group {
 public:
  static constexpr unsigned long long num_threads() { return Size; }
  static constexpr unsigned long long size() { return Size; }
  __device__ unsigned int meta_group_rank() const;
  __device__ unsigned int meta_group_size() const;
  template <typename T>
  __device__ T shfl(T value, int source) const;
  template <typename T>
  __device__ T shfl_up(T value, unsigned int delta) const;
  template <typename T>
  __device__ T shfl_down(T value, unsigned int delta) const;
  template <typename T>
  __device__ T shfl_xor(T value, unsigned int mask) const;
  __device__ int any(int predicate) const;
  __device__ int all(int predicate) const;
  __device__ unsigned int ballot(int predicate) const;
  template <typename T>
  __device__ unsigned int match_any(T value) const;
  __device__ operator thread_block_tile<Size, void>() const;
};

__device__ thread_block this_thread_block();
__device__ grid_group this_grid();
__device__ cluster_group this_cluster();
__device__ coalesced_group coalesced_threads();
__device__ thread_group tiled_partition(const thread_group& parent, unsigned int tile_size);
template <unsigned int Size, typename ParentT>
__device__ thread_block_tile<Size, ParentT> tiled_partition(const ParentT& parent);
template <typename GroupT>
__device__ void sync(const GroupT& group);
// Defined, not only declared: the callable is usually a lambda, and a function whose type
// names one must be defined where it is used.
/// Runs `fn(args...)` on one thread of the group (CUDA 12.1+).
template <typename GroupT, typename Fn, typename... Args>
__device__ void invoke_one(const GroupT&, Fn&& fn, Args&&... args) {
  fn(args...);
}
/// Runs `fn(args...)` on one thread of the group and hands its result to every thread.
template <typename GroupT, typename Fn, typename... Args>
__device__ auto invoke_one_broadcast(const GroupT&, Fn&& fn, Args&&... args) -> decltype(fn(args...)) {
  return fn(args...);
}

}  // namespace cooperative_groups
