// kernel-check hermetic stub of cooperative groups' asynchronous copies (declarations only,
// written from the documented API): a group copies `bytes` from global to shared memory, then
// waits for its copies.
#pragma once
#include "../cooperative_groups.h"

namespace cooperative_groups {

/// The group's threads together copy `bytes` bytes from `src` to `dst`.
template <typename GroupT>
__device__ void memcpy_async(const GroupT& group, void* dst, const void* src, size_t bytes);
/// The group's threads together copy `count` elements from `src` to `dst`.
template <typename GroupT, typename T>
__device__ void memcpy_async(const GroupT& group, T* dst, const T* src, size_t count);
/// Waits for every copy the group started.
template <typename GroupT>
__device__ void wait(const GroupT& group);
/// Waits for all but the last `Stages` batches of copies the group started.
template <unsigned int Stages, typename GroupT>
__device__ void wait_prior(const GroupT& group);

}  // namespace cooperative_groups
