// Helpers shared by the CPU kernels.
#pragma once

#include <stdexcept>
#include <string>

#include "common/formats.h"
#include "common/tensor.h"

namespace qext {
namespace cpu {

// The no-op flag is read where the kernel runs; on the CPU that is here.
inline bool noop_set(const QuantizationConfig& cfg) {
  return !cfg.noop.empty() && *cfg.noop.ptr<const float>() == 1.0f;
}

inline float load(const TensorWrapper& t, size_t idx) {
  switch (t.dtype()) {
    case DType::kFloat32: return t.ptr<const float>()[idx];
    case DType::kBFloat16: return bf16_to_float(t.ptr<const uint16_t>()[idx]);
    case DType::kFloat16: return fp16_to_float(t.ptr<const uint16_t>()[idx]);
    default: break;
  }
  throw std::invalid_argument(std::string("qext cpu kernel: unsupported input dtype ") +
                              dtype_name(t.dtype()));
}

}  // namespace cpu
}  // namespace qext
