/// \file runtime.cuh
/// \brief Occupancy and device-count queries (never the architecture: that is compile-time).
#pragma once

#include <sgl_kernel/utils.cuh>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace sglang::host::runtime {

/// \brief Maximum resident blocks per SM for `kernel` at `block_dim` threads.
/// \tparam KernelArgs Parameter types of the kernel.
/// \param kernel The `__global__` function.
/// \param block_dim Threads per block.
/// \param smem Dynamic shared memory per block in bytes.
/// \return The occupancy in blocks.
template <typename... KernelArgs>
inline uint32_t get_blocks_per_sm(void (*kernel)(KernelArgs...), uint32_t block_dim, size_t smem = 0) {
  int32_t blocks = 0;
  CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, static_cast<int32_t>(block_dim), smem))
      << "(block_dim " << block_dim << ", smem " << smem << ")";
  return static_cast<uint32_t>(blocks);
}

/// \brief Number of SMs of device `device_id` (memoized per device ordinal).
/// \param device_id CUDA device ordinal.
/// \param use_cache Whether to reuse an earlier answer.
/// \return The SM count.
inline uint32_t get_sm_count(int32_t device_id, bool use_cache = true) {
  static std::array<std::atomic<uint32_t>, 64> cache{};
  const bool cacheable = device_id >= 0 && static_cast<size_t>(device_id) < cache.size();
  if (use_cache && cacheable) {
    const uint32_t hit = cache[static_cast<size_t>(device_id)].load(std::memory_order_relaxed);
    if (hit != 0) return hit;
  }
  int32_t count = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device_id)) << "(device " << device_id << ")";
  if (cacheable) cache[static_cast<size_t>(device_id)].store(static_cast<uint32_t>(count), std::memory_order_relaxed);
  return static_cast<uint32_t>(count);
}

/// \brief Blocks of a persistent grid: enough for `num_items` work items at `items_per_block`
/// per block and pass, but no more than stay resident on every SM at once (the kernel strides
/// over the rest).
/// \param num_items Work items in all.
/// \param items_per_block Items one block handles per pass.
/// \param blocks_per_sm Resident blocks per SM (from `get_blocks_per_sm`; 0 counts as 1).
/// \param device_id CUDA device ordinal.
/// \return The grid size.
inline uint32_t get_persistent_grid(int64_t num_items, int64_t items_per_block, uint32_t blocks_per_sm,
                                    int32_t device_id) {
  const int64_t needed = (num_items + items_per_block - 1) / items_per_block;
  const int64_t resident =
      static_cast<int64_t>(get_sm_count(device_id)) * static_cast<int64_t>(blocks_per_sm > 0 ? blocks_per_sm : 1);
  return static_cast<uint32_t>(needed < resident ? needed : resident);
}

}  // namespace sglang::host::runtime
