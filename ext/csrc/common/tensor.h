// Non-owning views and the per-call configuration that kernels see.
// Nothing here owns memory: the at::Tensor behind every pointer must outlive the
// kernels that read it (see csrc/torch/quantize.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace qext {

enum class DType : int { kFloat32 = 0, kBFloat16 = 1, kFloat16 = 2, kByte = 3, kInt64 = 4 };

const char* dtype_name(DType t);
size_t dtype_size(DType t);

class TensorWrapper {
 public:
  TensorWrapper() = default;
  TensorWrapper(void* data, std::vector<size_t> shape, DType dtype)
      : data_(data), shape_(std::move(shape)), dtype_(dtype) {}

  void* data() const { return data_; }
  template <typename T>
  T* ptr() const { return static_cast<T*>(data_); }
  const std::vector<size_t>& shape() const { return shape_; }
  size_t dim(size_t i) const { return shape_.at(i); }
  size_t ndim() const { return shape_.size(); }
  DType dtype() const { return dtype_; }
  bool empty() const { return data_ == nullptr; }
  size_t numel() const {
    size_t n = 1;
    for (size_t s : shape_) n *= s;
    return n;
  }

 private:
  void* data_ = nullptr;
  std::vector<size_t> shape_;
  DType dtype_ = DType::kFloat32;
};

// Carries per-call options and non-owning views of the RNG state and noop flag.
struct QuantizationConfig {
  bool stochastic_rounding = false;
  TensorWrapper rng_state;        // int64 [2] = [seed, offset], read by the kernels
  uint64_t rng_item_base = 0;     // first Philox work item (see docs/qext-internals.md)
  TensorWrapper noop;             // float32 [1]; 1.0 makes every kernel a no-op
  bool swizzled_scales = false;   // write scales in the GEMM layout directly
};

}  // namespace qext
