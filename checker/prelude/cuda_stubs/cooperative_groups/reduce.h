// kernel-check hermetic stub of cooperative groups' collective reductions (declarations only).
#pragma once
#include "../cooperative_groups.h"

namespace cooperative_groups {

/// The reduction operators `reduce` takes.
template <typename T>
struct plus {
  __device__ T operator()(T a, T b) const;
};
template <typename T>
struct less {
  __device__ T operator()(T a, T b) const;
};
template <typename T>
struct greater {
  __device__ T operator()(T a, T b) const;
};
template <typename T>
struct bit_and {
  __device__ T operator()(T a, T b) const;
};
template <typename T>
struct bit_or {
  __device__ T operator()(T a, T b) const;
};
template <typename T>
struct bit_xor {
  __device__ T operator()(T a, T b) const;
};

/// The value combined over the group with `op` (returned to every thread).
template <typename GroupT, typename T, typename OpT>
__device__ T reduce(const GroupT& group, T value, OpT&& op);

/// Running combinations over the group's threads in rank order.
template <typename GroupT, typename T, typename OpT>
__device__ T inclusive_scan(const GroupT& group, T value, OpT&& op);
template <typename GroupT, typename T>
__device__ T inclusive_scan(const GroupT& group, T value);
template <typename GroupT, typename T, typename OpT>
__device__ T exclusive_scan(const GroupT& group, T value, OpT&& op);
template <typename GroupT, typename T>
__device__ T exclusive_scan(const GroupT& group, T value);

}  // namespace cooperative_groups
