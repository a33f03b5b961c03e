/// \file tensor.h
/// \brief Tensor validation: `TensorMatcher` with symbolic sizes, dtypes and devices.
#pragma once

#include <sgl_kernel/bits.h>
#include <sgl_kernel/utils.cuh>
#include <sgl_kernel/utils.h>

#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace sglang::host {

/// \brief The DLPack dtype of a C++ element type (fp16_t, bf16_t, fp32_t, fp8, integers, bool).
/// \tparam T Element type.
/// \return The DLDataType with one lane.
template <typename T>
constexpr DLDataType dl_dtype() {
  if constexpr (std::is_same_v<T, fp16_t>) {
    return {kDLFloat, 16, 1};
  } else if constexpr (std::is_same_v<T, bf16_t>) {
    return {kDLBfloat, 16, 1};
  } else if constexpr (std::is_same_v<T, fp32_t>) {
    return {kDLFloat, 32, 1};
  } else if constexpr (std::is_same_v<T, fp64_t>) {
    return {kDLFloat, 64, 1};
  } else if constexpr (std::is_same_v<T, fp8_e4m3_t>) {
    return {kDLFloat8_e4m3fn, 8, 1};
  } else if constexpr (std::is_same_v<T, fp8_e5m2_t>) {
    return {kDLFloat8_e5m2, 8, 1};
  } else if constexpr (std::is_same_v<T, bool>) {
    return {kDLBool, 8, 1};
  } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    return {kDLInt, static_cast<uint8_t>(sizeof(T) * 8), 1};
  } else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T>) {
    return {kDLUInt, static_cast<uint8_t>(sizeof(T) * 8), 1};
  } else {
    static_assert(sizeof(T) == 0, "dl_dtype: no DLPack dtype for this type");
    return {};
  }
}

/// \brief Whether `dtype` denotes the C++ type `T`.
/// \tparam T Element type (e.g. fp16_t).
/// \param dtype A DLPack dtype.
/// \return True on an exact match (code, bits and lanes).
template <typename T>
constexpr bool is_type(DLDataType dtype) {
  constexpr DLDataType want = dl_dtype<T>();
  return dtype.code == want.code && dtype.bits == want.bits && dtype.lanes == want.lanes;
}

/// \brief A readable name of a DLPack dtype ("float16", "bfloat16", "float8_e4m3fn", ...).
/// \param dtype The dtype.
/// \return The name.
inline std::string dtype_name(DLDataType dtype) {
  std::string base;
  switch (dtype.code) {
    case kDLInt: base = "int"; break;
    case kDLUInt: base = "uint"; break;
    case kDLFloat: base = "float"; break;
    case kDLBfloat: base = "bfloat"; break;
    case kDLBool: return "bool";
    case kDLFloat8_e4m3fn: return "float8_e4m3fn";
    case kDLFloat8_e5m2: return "float8_e5m2";
    default: base = "dtype_code" + std::to_string(static_cast<uint32_t>(dtype.code)) + "_"; break;
  }
  std::string name = base + std::to_string(static_cast<uint32_t>(dtype.bits));
  if (dtype.lanes != 1) name += "x" + std::to_string(static_cast<uint32_t>(dtype.lanes));
  return name;
}

/// \brief A readable name of a device ("cuda:0", "cpu").
/// \param device The device.
/// \return The name.
inline std::string device_name(DLDevice device) {
  switch (device.device_type) {
    case kDLCPU: return "cpu";
    case kDLCUDA: return "cuda:" + std::to_string(device.device_id);
    case kDLCUDAHost: return "cuda_host";
    case kDLCUDAManaged: return "cuda_managed:" + std::to_string(device.device_id);
    default: return "device_type" + std::to_string(static_cast<int32_t>(device.device_type)) + ":" +
                    std::to_string(device.device_id);
  }
}

/// \brief A small fixed-capacity list of trivially copyable values (nvcc's front end cannot
/// instantiate `std::vector` of the anonymous DLPack structs).
/// \tparam T Element type.
/// \tparam kCapacity Maximum number of elements.
template <typename T, int kCapacity = 16>
class SmallList {
 public:
  /// \brief An empty list.
  SmallList() = default;
  /// \brief A list of `values` (at most `kCapacity`).
  /// \param values The elements.
  SmallList(std::initializer_list<T> values) {
    CHECK_HOST(values.size() <= static_cast<size_t>(kCapacity)) << "SmallList: too many options";
    for (const T& v : values) items_[size_++] = v;
  }
  /// \brief Number of elements.
  /// \return The size.
  size_t size() const { return size_; }
  /// \brief Whether the list is empty.
  /// \return True when empty.
  bool empty() const { return size_ == 0; }
  /// \brief Element access.
  /// \param i Index below `size()`.
  /// \return The element.
  const T& operator[](size_t i) const { return items_[i]; }
  /// \brief Start of the elements.
  /// \return A pointer to the first element.
  const T* begin() const { return items_; }
  /// \brief End of the elements.
  /// \return A pointer past the last element.
  const T* end() const { return items_ + size_; }

 private:
  T items_[kCapacity]{};
  size_t size_ = 0;
};

/// \brief A named dimension: bound by the first tensor verified, then checked on the others.
class SymbolicSize {
 public:
  /// \brief An unnamed, unbound size.
  SymbolicSize() = default;
  /// \brief A named, unbound size.
  /// \param name Name used in error messages (e.g. "hidden_size").
  SymbolicSize(const char* name) : name_(name) {}  // NOLINT(google-explicit-constructor)
  /// \brief A named, unbound size.
  /// \param name Name used in error messages.
  explicit SymbolicSize(std::string name) : name_(std::move(name)) {}

  /// \brief Pin the value before verification.
  /// \param value The required size.
  /// \return This size.
  SymbolicSize& set_value(int64_t value) {
    value_ = value;
    return *this;
  }
  /// \brief Whether a value is bound.
  /// \return True once bound.
  bool has_value() const { return value_.has_value(); }
  /// \brief The bound value; panics if unbound.
  /// \return The size.
  int64_t unwrap() const {
    CHECK_HOST(value_.has_value()) << "SymbolicSize `" << name_ << "` was never bound";
    return *value_;
  }
  /// \brief The name for messages.
  /// \return The name (may be empty).
  const std::string& name() const { return name_; }

  /// \brief Bind or check `actual` (used by TensorMatcher).
  /// \param actual The observed size.
  /// \return True when it matches (or was just bound).
  bool match(int64_t actual) const {
    if (!value_.has_value()) {
      value_ = actual;
      return true;
    }
    return *value_ == actual;
  }

 private:
  std::string name_;
  mutable std::optional<int64_t> value_;
};

/// \brief A symbolic dtype: restricted to a set of options, bound by the first tensor.
class SymbolicDType {
 public:
  /// \brief Allow exactly the C++ types `Ts`.
  /// \tparam Ts Allowed element types.
  /// \return This dtype.
  template <typename... Ts>
  SymbolicDType& set_options() {
    options_ = {dl_dtype<Ts>()...};
    return *this;
  }
  /// \brief Whether a dtype is bound.
  /// \return True once bound.
  bool has_value() const { return value_.has_value(); }
  /// \brief The bound dtype; panics if unbound.
  /// \return The dtype.
  DLDataType unwrap() const {
    CHECK_HOST(value_.has_value()) << "SymbolicDType was never bound";
    return *value_;
  }
  /// \brief Whether the bound dtype is the C++ type `T`.
  /// \tparam T Element type.
  /// \return True on a match.
  template <typename T>
  bool is_type() const {
    return value_.has_value() && host::is_type<T>(*value_);
  }
  /// \brief The allowed options (empty: any).
  /// \return The options.
  const SmallList<DLDataType>& options() const { return options_; }

  /// \brief Bind or check `actual` against the options and the bound value.
  /// \param actual The observed dtype.
  /// \return True when allowed.
  bool match(DLDataType actual) const {
    if (!options_.empty() && !contains(options_, actual)) return false;
    if (!value_.has_value()) {
      value_ = actual;
      return true;
    }
    return same(*value_, actual);
  }

  /// \brief Dtype equality.
  /// \param a First dtype.
  /// \param b Second dtype.
  /// \return True when equal.
  static bool same(DLDataType a, DLDataType b) { return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes; }
  /// \brief Membership test.
  /// \param set The options.
  /// \param d A dtype.
  /// \return True when `d` is in `set`.
  static bool contains(const SmallList<DLDataType>& set, DLDataType d) {
    for (const DLDataType& x : set) {
      if (same(x, d)) return true;
    }
    return false;
  }

 private:
  SmallList<DLDataType> options_;
  mutable std::optional<DLDataType> value_;
};

/// \brief A symbolic device: restricted to device types, bound (type and ordinal) by the first tensor.
class SymbolicDevice {
 public:
  /// \brief Allow exactly the device types `kTypes` (e.g. `kDLCUDA`).
  /// \tparam kTypes Allowed DLPack device types.
  /// \return This device.
  template <DLDeviceType... kTypes>
  SymbolicDevice& set_options() {
    options_ = {kTypes...};
    return *this;
  }
  /// \brief Whether a device is bound.
  /// \return True once bound.
  bool has_value() const { return value_.has_value(); }
  /// \brief The bound device; panics if unbound.
  /// \return The device.
  DLDevice unwrap() const {
    CHECK_HOST(value_.has_value()) << "SymbolicDevice was never bound";
    return *value_;
  }
  /// \brief The allowed device types (empty: any).
  /// \return The options.
  const SmallList<DLDeviceType>& options() const { return options_; }

  /// \brief Whether `actual` is one of the allowed types.
  /// \param actual The observed device.
  /// \return True when allowed.
  bool allows(DLDevice actual) const {
    if (options_.empty()) return true;
    for (DLDeviceType t : options_) {
      if (t == actual.device_type) return true;
    }
    return false;
  }
  /// \brief Bind or check `actual` (type and ordinal).
  /// \param actual The observed device.
  /// \return True when allowed and equal to the bound device.
  bool match(DLDevice actual) const {
    if (!allows(actual)) return false;
    if (!value_.has_value()) {
      value_ = actual;
      return true;
    }
    return value_->device_type == actual.device_type && value_->device_id == actual.device_id;
  }

 private:
  SmallList<DLDeviceType> options_;
  mutable std::optional<DLDevice> value_;
};

/// \brief One expected dimension (or stride): a fixed integer or a `SymbolicSize`.
class DimSpec {
 public:
  /// \brief A fixed value.
  /// \param value The required size.
  DimSpec(int64_t value) : fixed_(value) {}  // NOLINT(google-explicit-constructor)
  /// \brief A symbolic value, bound or checked during verification.
  /// \param sym The symbol (must outlive the matcher).
  DimSpec(const SymbolicSize& sym) : sym_(&sym) {}  // NOLINT(google-explicit-constructor)

  /// \brief Check (and maybe bind) `actual`.
  /// \param actual The observed value.
  /// \return True on a match.
  bool match(int64_t actual) const { return sym_ != nullptr ? sym_->match(actual) : fixed_ == actual; }
  /// \brief What was expected, for messages.
  /// \return A description like "128" or "`hidden_size` = 128".
  std::string describe() const {
    if (sym_ == nullptr) return std::to_string(fixed_);
    std::string s = sym_->name().empty() ? std::string("a symbolic size") : "`" + sym_->name() + "`";
    if (sym_->has_value()) s += " = " + std::to_string(sym_->unwrap());
    return s;
  }

 private:
  int64_t fixed_ = 0;
  const SymbolicSize* sym_ = nullptr;
};

/// \brief Fluent tensor validation: shape, dtype, device, strides and alignment.
///
/// `TensorMatcher({N, 128}).with_dtype<fp16_t>().with_device<kDLCUDA>(dev).verify(x, "x")`
/// checks the rank, each dimension (binding symbolic ones on first sight), the dtype, the
/// device, the strides (contiguous unless `with_strides` is given) and, after
/// `ensure_alignment(w)`, that the data pointer and every stride but the innermost are
/// multiples of `w` bytes. `verify` is chainable: later tensors must agree with the symbols
/// the earlier ones bound. A failure throws a `PanicError` naming the tensor, the dimension,
/// and the expected and actual values.
///
/// Inside a template, `.with_dtype<T>()` with a dependent `T` makes the rest of the chain
/// dependent, so call the other `<...>` members (`with_device<kDLCUDA>`) before it, or use
/// the non-template `with_device(sym)`, or spell `.template with_device<...>`.
class TensorMatcher {
 public:
  /// \brief Expect a tensor with these dimensions.
  /// \param dims One entry per dimension: an integer or a `SymbolicSize`.
  explicit TensorMatcher(std::initializer_list<DimSpec> dims) : dims_(dims) {}

  /// \brief Require the dtype to be one of the C++ types `Ts`.
  /// \tparam Ts Allowed element types.
  /// \return This matcher.
  template <typename... Ts>
  TensorMatcher& with_dtype() {
    static_assert(sizeof...(Ts) > 0, "with_dtype: name at least one type");
    own_dtype_.set_options<Ts...>();
    dtype_ = &own_dtype_;
    return *this;
  }
  /// \brief Require the dtype to match `dtype` (its options, then its bound value).
  /// \param dtype The symbolic dtype (must outlive the matcher).
  /// \return This matcher.
  TensorMatcher& with_dtype(const SymbolicDType& dtype) {
    dtype_ = &dtype;
    return *this;
  }
  /// \brief Require one of the types `T0, Ts...` and bind `dtype` to it.
  /// \tparam T0 First allowed element type.
  /// \tparam Ts Further allowed element types.
  /// \param dtype The symbolic dtype to bind or check.
  /// \return This matcher.
  template <typename T0, typename... Ts>
  TensorMatcher& with_dtype(const SymbolicDType& dtype) {
    own_dtype_.set_options<T0, Ts...>();
    dtype_ = &own_dtype_;
    extra_dtype_ = &dtype;
    return *this;
  }

  /// \brief Require one of the device types `kTypes` and bind `device` (type and ordinal).
  /// \tparam kTypes Allowed device types (e.g. `kDLCUDA`).
  /// \param device The symbolic device to bind or check (must outlive the matcher).
  /// \return This matcher.
  template <DLDeviceType... kTypes>
  TensorMatcher& with_device(const SymbolicDevice& device) {
    if constexpr (sizeof...(kTypes) > 0) own_device_.set_options<kTypes...>();
    device_types_ = sizeof...(kTypes) > 0 ? &own_device_ : nullptr;
    device_ = &device;
    return *this;
  }
  /// \brief Require the device to match `device` (its options, then its bound value).
  ///
  /// Needs no template arguments, so it may follow `.with_dtype<T>()` inside a template.
  /// \param device The symbolic device to bind or check (must outlive the matcher).
  /// \return This matcher.
  TensorMatcher& with_device(const SymbolicDevice& device) {
    device_types_ = nullptr;
    device_ = &device;
    return *this;
  }
  /// \brief Require one of the device types `kTypes` (no binding).
  /// \tparam kTypes Allowed device types.
  /// \return This matcher.
  template <DLDeviceType... kTypes>
  TensorMatcher& with_device() {
    static_assert(sizeof...(kTypes) > 0, "with_device: name at least one device type");
    own_device_.set_options<kTypes...>();
    device_types_ = &own_device_;
    device_ = nullptr;
    return *this;
  }

  /// \brief Expect these strides (in elements) instead of a contiguous layout.
  /// \param strides One entry per dimension: an integer or a `SymbolicSize`.
  /// \return This matcher.
  TensorMatcher& with_strides(std::initializer_list<DimSpec> strides) {
    strides_ = std::vector<DimSpec>(strides);
    return *this;
  }

  /// \brief Require the data pointer and every stride except the innermost (size-1 dims
  /// skipped) to be multiples of `bytes`, the vector width the kernel uses.
  /// \param bytes A power of two.
  /// \return This matcher.
  TensorMatcher& ensure_alignment(int64_t bytes) {
    CHECK_HOST(bytes > 0 && is_pow2(static_cast<uint64_t>(bytes)))
        << "ensure_alignment: " << bytes << " is not a power of two";
    alignment_ = bytes;
    return *this;
  }

  /// \brief Check `view` against every expectation; throws `PanicError` on a mismatch.
  /// \param view The tensor.
  /// \param name The tensor's name for messages (default: its position in the chain).
  /// \return This matcher, to verify the next tensor.
  TensorMatcher& verify(const tvm::ffi::TensorView& view, const char* name = nullptr) {
    ++position_;
    const std::string who = name != nullptr ? "tensor `" + std::string(name) + "`"
                                            : "tensor #" + std::to_string(position_) + " of the verify chain";
    const int64_t ndim = view.ndim();
    const int64_t want_ndim = static_cast<int64_t>(dims_.size());
    if (ndim != want_ndim) {
      fail(who, "expected a " + std::to_string(want_ndim) + "-D tensor, got " + std::to_string(ndim) +
                    "-D with shape " + shape_text(view));
    }
    for (int64_t i = 0; i < ndim; ++i) {
      const int64_t actual = view.size(i);
      if (!dims_[static_cast<size_t>(i)].match(actual)) {
        fail(who, "dim " + std::to_string(i) + ": expected " + dims_[static_cast<size_t>(i)].describe() +
                      ", got " + std::to_string(actual) + " (shape " + shape_text(view) + ")");
      }
    }
    check_dtype(who, view.dtype());
    check_device(who, view.device());
    check_strides(who, view);
    if (alignment_ > 0) check_alignment(who, view);
    return *this;
  }

 private:
  [[noreturn]] static void fail(const std::string& who, const std::string& what) {
    throw PanicError("TensorMatcher: " + who + ": " + what);
  }

  static std::string shape_text(const tvm::ffi::TensorView& view) {
    std::ostringstream os;
    os << "[";
    for (int64_t i = 0; i < view.ndim(); ++i) os << (i ? ", " : "") << view.size(i);
    os << "]";
    return os.str();
  }

  static std::string options_text(const SmallList<DLDataType>& options) {
    std::string s;
    for (size_t i = 0; i < options.size(); ++i) s += (i ? ", " : "") + dtype_name(options[i]);
    return s;
  }

  void check_dtype(const std::string& who, DLDataType actual) const {
    if (dtype_ != nullptr && !dtype_->match(actual)) {
      const std::string want = dtype_->has_value() && SymbolicDType::contains(dtype_->options(), actual)
                                   ? dtype_name(dtype_->unwrap()) + " (the dtype bound earlier)"
                                   : "one of [" + options_text(dtype_->options()) + "]";
      fail(who, "dtype mismatch: expected " + want + ", got " + dtype_name(actual));
    }
    if (extra_dtype_ != nullptr && !extra_dtype_->match(actual)) {
      fail(who, "dtype mismatch: expected " +
                    (extra_dtype_->has_value() ? dtype_name(extra_dtype_->unwrap())
                                               : "one of [" + options_text(extra_dtype_->options()) + "]") +
                    ", got " + dtype_name(actual));
    }
  }

  void check_device(const std::string& who, DLDevice actual) const {
    const SymbolicDevice* types = device_types_;
    if (types != nullptr && !types->allows(actual)) {
      fail(who, "must be on a " + std::string(types->options().size() == 1 && types->options()[0] == kDLCUDA
                                                  ? "CUDA"
                                                  : "supported") +
                    " device, got " + device_name(actual));
    }
    if (device_ != nullptr && !device_->match(actual)) {
      if (!device_->allows(actual)) {
        fail(who, "device type not allowed by the symbolic device, got " + device_name(actual));
      }
      fail(who, "device mismatch: expected " + device_name(device_->unwrap()) + " (the device bound earlier), got " +
                    device_name(actual));
    }
  }

  void check_strides(const std::string& who, const tvm::ffi::TensorView& view) const {
    const int64_t ndim = view.ndim();
    if (strides_.has_value()) {
      if (static_cast<int64_t>(strides_->size()) != ndim) {
        fail(who, "with_strides lists " + std::to_string(strides_->size()) + " strides for a " +
                      std::to_string(ndim) + "-D tensor");
      }
      for (int64_t i = 0; i < ndim; ++i) {
        const int64_t actual = view.stride(i);
        if (!(*strides_)[static_cast<size_t>(i)].match(actual)) {
          fail(who, "stride of dim " + std::to_string(i) + ": expected " +
                        (*strides_)[static_cast<size_t>(i)].describe() + ", got " + std::to_string(actual));
        }
      }
      return;
    }
    int64_t expected = 1;
    for (int64_t i = ndim - 1; i >= 0; --i) {
      const int64_t size = view.size(i);
      if (size != 1 && view.stride(i) != expected) {
        fail(who, "must be contiguous: stride of dim " + std::to_string(i) + " is " + std::to_string(view.stride(i)) +
                      ", expected " + std::to_string(expected));
      }
      expected *= size;
    }
  }

  void check_alignment(const std::string& who, const tvm::ffi::TensorView& view) const {
    const uint64_t address = reinterpret_cast<uint64_t>(view.data_ptr()) + view.byte_offset();
    if (address % static_cast<uint64_t>(alignment_) != 0) {
      fail(who, "misaligned: data pointer " + std::to_string(address) + " is not a multiple of " +
                    std::to_string(alignment_) + " bytes (needed by the kernel's vector width)");
    }
    const int64_t elem_bits = static_cast<int64_t>(view.dtype().bits) * view.dtype().lanes;
    const int64_t ndim = view.ndim();
    for (int64_t i = 0; i + 1 < ndim; ++i) {
      if (view.size(i) == 1) continue;
      const int64_t stride_bytes = view.stride(i) * elem_bits / 8;
      if (stride_bytes % alignment_ != 0) {
        fail(who, "misaligned: stride of dim " + std::to_string(i) + " is " + std::to_string(stride_bytes) +
                      " bytes, not a multiple of " + std::to_string(alignment_) +
                      " bytes (needed by the kernel's vector width)");
      }
    }
  }

  std::vector<DimSpec> dims_;
  std::optional<std::vector<DimSpec>> strides_;
  SymbolicDType own_dtype_;
  const SymbolicDType* dtype_ = nullptr;
  const SymbolicDType* extra_dtype_ = nullptr;
  SymbolicDevice own_device_;
  const SymbolicDevice* device_types_ = nullptr;
  const SymbolicDevice* device_ = nullptr;
  int64_t alignment_ = 0;
  int64_t position_ = 0;
};

}  // namespace sglang::host
