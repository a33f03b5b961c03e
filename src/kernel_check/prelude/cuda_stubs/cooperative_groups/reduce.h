// kernel-check hermetic stub of cooperative groups' collective reductions (declarations only).
#pragma once
#include "../cooperative_groups.h"

namespace cooperative_groups {

/// The reduction operators `reduce` takes.
#define KC_CG_OPERATOR(NAME)                          \
  template <typename T>                               \
  struct NAME {                                       \
    __device__ T operator()(T a, T b) const;          \
  };
KC_CG_OPERATOR(plus)
KC_CG_OPERATOR(less)
KC_CG_OPERATOR(greater)
KC_CG_OPERATOR(bit_and)
KC_CG_OPERATOR(bit_or)
KC_CG_OPERATOR(bit_xor)
#undef KC_CG_OPERATOR

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
