// kernel-check hermetic stub of the CUB collectives kernels use (block reduce/scan/load/store,
// warp reduce, key-value pairs, the reduction functors): declarations written from the
// documented API, enough for libclang to type a kernel. Nothing here is ever compiled.
#pragma once
#include "../kernel_check_cuda_prelude.h"

namespace cub {

/// A key and a value reduced together (ArgMax/ArgMin results).
template <typename K, typename V>
struct KeyValuePair {
  typedef K Key;
  typedef V Value;
  Key key;
  Value value;
  KeyValuePair() = default;
  __host__ __device__ KeyValuePair(const Key& k, const Value& v);
};

/// Binary reduction functors.
struct Sum {
  template <typename T, typename U>
  __host__ __device__ auto operator()(T&& a, U&& b) const -> decltype(a + b);
};
struct Max {
  template <typename T, typename U>
  __host__ __device__ auto operator()(T&& a, U&& b) const -> decltype(a < b ? b : a);
};
struct Min {
  template <typename T, typename U>
  __host__ __device__ auto operator()(T&& a, U&& b) const -> decltype(a < b ? a : b);
};
struct ArgMax {
  template <typename T, typename OffsetT>
  __host__ __device__ KeyValuePair<OffsetT, T> operator()(const KeyValuePair<OffsetT, T>& a,
                                                          const KeyValuePair<OffsetT, T>& b) const;
};
struct ArgMin {
  template <typename T, typename OffsetT>
  __host__ __device__ KeyValuePair<OffsetT, T> operator()(const KeyValuePair<OffsetT, T>& a,
                                                          const KeyValuePair<OffsetT, T>& b) const;
};

/// Opaque shared-memory storage of `Bytes` bytes aligned for `T`.
template <typename T, unsigned long Bytes>
struct alignas(T) KcTempStorage {
  unsigned char bytes[Bytes];
};

enum BlockReduceAlgorithm { BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY, BLOCK_REDUCE_RAKING, BLOCK_REDUCE_WARP_REDUCTIONS };

/// Reduction over the threads of a block.
template <typename T, int BLOCK_DIM_X, BlockReduceAlgorithm ALGORITHM = BLOCK_REDUCE_WARP_REDUCTIONS,
          int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1>
class BlockReduce {
 public:
  struct TempStorage : KcTempStorage<T, sizeof(T) * (BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z / 32 + 1)> {};
  __device__ BlockReduce();
  __device__ explicit BlockReduce(TempStorage& storage);
  template <typename OpT>
  __device__ T Reduce(T input, OpT op);
  template <typename OpT>
  __device__ T Reduce(T input, OpT op, int num_valid);
  template <int N, typename OpT>
  __device__ T Reduce(T (&inputs)[N], OpT op);
  __device__ T Sum(T input);
  __device__ T Sum(T input, int num_valid);
  template <int N>
  __device__ T Sum(T (&inputs)[N]);
};

enum BlockScanAlgorithm { BLOCK_SCAN_RAKING, BLOCK_SCAN_RAKING_MEMOIZE, BLOCK_SCAN_WARP_SCANS };

/// Prefix scans over the threads of a block (one item or `N` items per thread).
template <typename T, int BLOCK_DIM_X, BlockScanAlgorithm ALGORITHM = BLOCK_SCAN_RAKING, int BLOCK_DIM_Y = 1,
          int BLOCK_DIM_Z = 1>
class BlockScan {
 public:
  struct TempStorage : KcTempStorage<T, sizeof(T) * (BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z + 32)> {};
  __device__ BlockScan();
  __device__ explicit BlockScan(TempStorage& storage);
  __device__ void ExclusiveSum(T input, T& output);
  __device__ void ExclusiveSum(T input, T& output, T& block_aggregate);
  template <typename PrefixOpT>
  __device__ void ExclusiveSum(T input, T& output, PrefixOpT& prefix_op);
  template <int N>
  __device__ void ExclusiveSum(T (&inputs)[N], T (&outputs)[N]);
  template <int N>
  __device__ void ExclusiveSum(T (&inputs)[N], T (&outputs)[N], T& block_aggregate);
  __device__ void InclusiveSum(T input, T& output);
  __device__ void InclusiveSum(T input, T& output, T& block_aggregate);
  template <typename PrefixOpT>
  __device__ void InclusiveSum(T input, T& output, PrefixOpT& prefix_op);
  template <int N>
  __device__ void InclusiveSum(T (&inputs)[N], T (&outputs)[N]);
  template <int N>
  __device__ void InclusiveSum(T (&inputs)[N], T (&outputs)[N], T& block_aggregate);
  template <typename OpT>
  __device__ void ExclusiveScan(T input, T& output, T initial, OpT op);
  template <typename OpT>
  __device__ void ExclusiveScan(T input, T& output, T initial, OpT op, T& block_aggregate);
  template <int N, typename OpT>
  __device__ void ExclusiveScan(T (&inputs)[N], T (&outputs)[N], T initial, OpT op);
  template <typename OpT>
  __device__ void InclusiveScan(T input, T& output, OpT op);
  template <typename OpT>
  __device__ void InclusiveScan(T input, T& output, OpT op, T& block_aggregate);
  template <int N, typename OpT>
  __device__ void InclusiveScan(T (&inputs)[N], T (&outputs)[N], OpT op);
};

enum BlockLoadAlgorithm {
  BLOCK_LOAD_DIRECT,
  BLOCK_LOAD_STRIPED,
  BLOCK_LOAD_VECTORIZE,
  BLOCK_LOAD_TRANSPOSE,
  BLOCK_LOAD_WARP_TRANSPOSE,
  BLOCK_LOAD_WARP_TRANSPOSE_TIMESLICED
};

/// A block's cooperative load of `ITEMS_PER_THREAD` items per thread.
template <typename T, int BLOCK_DIM_X, int ITEMS_PER_THREAD, BlockLoadAlgorithm ALGORITHM = BLOCK_LOAD_DIRECT,
          int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1>
class BlockLoad {
 public:
  struct TempStorage
      : KcTempStorage<T, sizeof(T) * (BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z * ITEMS_PER_THREAD + 1)> {};
  __device__ BlockLoad();
  __device__ explicit BlockLoad(TempStorage& storage);
  template <typename InputT>
  __device__ void Load(InputT source, T (&items)[ITEMS_PER_THREAD]);
  template <typename InputT>
  __device__ void Load(InputT source, T (&items)[ITEMS_PER_THREAD], int valid_items);
  template <typename InputT, typename DefaultT>
  __device__ void Load(InputT source, T (&items)[ITEMS_PER_THREAD], int valid_items, DefaultT out_of_bounds);
};

enum BlockStoreAlgorithm {
  BLOCK_STORE_DIRECT,
  BLOCK_STORE_STRIPED,
  BLOCK_STORE_VECTORIZE,
  BLOCK_STORE_TRANSPOSE,
  BLOCK_STORE_WARP_TRANSPOSE,
  BLOCK_STORE_WARP_TRANSPOSE_TIMESLICED
};

/// A block's cooperative store of `ITEMS_PER_THREAD` items per thread.
template <typename T, int BLOCK_DIM_X, int ITEMS_PER_THREAD, BlockStoreAlgorithm ALGORITHM = BLOCK_STORE_DIRECT,
          int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1>
class BlockStore {
 public:
  struct TempStorage
      : KcTempStorage<T, sizeof(T) * (BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z * ITEMS_PER_THREAD + 1)> {};
  __device__ BlockStore();
  __device__ explicit BlockStore(TempStorage& storage);
  template <typename OutputT>
  __device__ void Store(OutputT destination, T (&items)[ITEMS_PER_THREAD]);
  template <typename OutputT>
  __device__ void Store(OutputT destination, T (&items)[ITEMS_PER_THREAD], int valid_items);
};

/// Reduction over the threads of a (logical) warp.
template <typename T, int LOGICAL_WARP_THREADS = 32>
class WarpReduce {
 public:
  struct TempStorage : KcTempStorage<T, sizeof(T) * LOGICAL_WARP_THREADS> {};
  __device__ explicit WarpReduce(TempStorage& storage);
  __device__ T Sum(T input);
  __device__ T Sum(T input, int valid_items);
  template <typename OpT>
  __device__ T Reduce(T input, OpT op);
  template <typename OpT>
  __device__ T Reduce(T input, OpT op, int valid_items);
};

/// Prefix scans over the threads of a (logical) warp.
template <typename T, int LOGICAL_WARP_THREADS = 32>
class WarpScan {
 public:
  struct TempStorage : KcTempStorage<T, sizeof(T) * LOGICAL_WARP_THREADS> {};
  __device__ explicit WarpScan(TempStorage& storage);
  __device__ void InclusiveSum(T input, T& output);
  __device__ void InclusiveSum(T input, T& output, T& warp_aggregate);
  __device__ void ExclusiveSum(T input, T& output);
  __device__ void ExclusiveSum(T input, T& output, T& warp_aggregate);
};

}  // namespace cub
