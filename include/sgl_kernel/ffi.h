/// \file ffi.h
/// \brief Producing `tvm::ffi::Tensor` values: environment allocation and blob wrapping.
#pragma once

#include <sgl_kernel/tensor.h>
#include <sgl_kernel/utils.h>

#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/extra/c_env_api.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <utility>
#include <vector>

namespace sglang::host::ffi {

/// \brief An uninitialized tensor from the environment allocator (PyTorch's caching allocator
/// when called from PyTorch).
/// \param shape The shape.
/// \param dtype The element type.
/// \param device Where to allocate.
/// \return The new contiguous tensor.
inline tvm::ffi::Tensor empty(const std::vector<int64_t>& shape, DLDataType dtype, DLDevice device) {
  return tvm::ffi::Tensor::FromEnvAlloc(TVMFFIEnvTensorAlloc, tvm::ffi::ShapeView(shape.data(), shape.size()), dtype,
                                        device);
}

/// \brief An uninitialized tensor with a braced shape, e.g. `empty({rows, 16}, dtype, device)`.
/// \param shape The shape.
/// \param dtype The element type.
/// \param device Where to allocate.
/// \return The new contiguous tensor.
inline tvm::ffi::Tensor empty(std::initializer_list<int64_t> shape, DLDataType dtype, DLDevice device) {
  return empty(std::vector<int64_t>(shape), dtype, device);
}

/// \brief An uninitialized contiguous tensor with the shape, dtype and device of `like`.
/// \param like The template tensor.
/// \return The new tensor.
inline tvm::ffi::Tensor empty_like(const tvm::ffi::TensorView& like) {
  std::vector<int64_t> shape(static_cast<size_t>(like.ndim()));
  for (int64_t i = 0; i < like.ndim(); ++i) shape[static_cast<size_t>(i)] = like.size(i);
  return empty(shape, like.dtype(), like.device());
}

/// \brief Called when a `from_blob` tensor is freed; receives the data pointer.
using BlobDeleter = std::function<void(void*)>;

namespace details {

struct BlobAlloc {
  void* data;
  BlobDeleter deleter;
  uint64_t byte_offset;
  void AllocData(DLTensor* tensor) {
    tensor->data = data;
    tensor->byte_offset = byte_offset;
  }
  void FreeData(DLTensor* tensor) {
    if (deleter) deleter(tensor->data);
  }
};

}  // namespace details

/// \brief View memory the caller owns as a `Tensor`, without copying.
/// \param data The memory.
/// \param shape The shape.
/// \param dtype The element type.
/// \param device Where `data` lives.
/// \param deleter Called with `data` when the tensor is freed (default: nothing, the caller keeps ownership).
/// \param strides Strides in elements (empty: contiguous).
/// \param byte_offset Offset of the first element from `data`, in bytes.
/// \return The tensor.
inline tvm::ffi::Tensor from_blob(void* data, const std::vector<int64_t>& shape, DLDataType dtype, DLDevice device,
                                  BlobDeleter deleter = nullptr, const std::vector<int64_t>& strides = {},
                                  uint64_t byte_offset = 0) {
  details::BlobAlloc alloc{data, std::move(deleter), byte_offset};
  const tvm::ffi::ShapeView shape_view(shape.data(), shape.size());
  if (strides.empty()) {
    return tvm::ffi::Tensor::FromNDAlloc(std::move(alloc), shape_view, dtype, device);
  }
  CHECK_HOST(strides.size() == shape.size()) << "from_blob: " << strides.size() << " strides for " << shape.size()
                                             << " dims";
  return tvm::ffi::Tensor::FromNDAllocStrided(std::move(alloc), shape_view,
                                              tvm::ffi::ShapeView(strides.data(), strides.size()), dtype, device);
}

/// \brief `from_blob` with the shape, dtype and device of `like`.
/// \param data The memory.
/// \param like The template tensor.
/// \param deleter Called with `data` when the tensor is freed (default: nothing).
/// \return The tensor (contiguous).
inline tvm::ffi::Tensor from_blob_like(void* data, const tvm::ffi::TensorView& like, BlobDeleter deleter = nullptr) {
  std::vector<int64_t> shape(static_cast<size_t>(like.ndim()));
  for (int64_t i = 0; i < like.ndim(); ++i) shape[static_cast<size_t>(i)] = like.size(i);
  return from_blob(data, shape, like.dtype(), like.device(), std::move(deleter));
}

}  // namespace sglang::host::ffi
