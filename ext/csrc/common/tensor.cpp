#include "tensor.h"

namespace qext {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kFloat32: return "float32";
    case DType::kBFloat16: return "bfloat16";
    case DType::kFloat16: return "float16";
    case DType::kByte: return "uint8";
    case DType::kInt64: return "int64";
  }
  return "unknown";
}

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kFloat32: return 4;
    case DType::kBFloat16: return 2;
    case DType::kFloat16: return 2;
    case DType::kByte: return 1;
    case DType::kInt64: return 8;
  }
  return 0;
}

}  // namespace qext
