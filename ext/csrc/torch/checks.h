// Input checks shared by the quantize entry points. Messages name the argument and
// say what is allowed.
//
// Integers go into messages through std::to_string, never streamed: on the GPU machine's
// build, streaming an integer from this library (c10::str -> ostream::_M_insert<long>)
// segfaulted inside libstdc++'s locale code (seen on the H200; strings were fine).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Optional.h>

#include <string>
#include <vector>

namespace qext {

inline std::string shape_str(at::IntArrayRef s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// Checks the input's dtype and rank; returns its flattened [M, K].
inline std::pair<int64_t, int64_t> check_input(const at::Tensor& x, const char* format,
                                               int64_t multiple) {
  TORCH_CHECK_TYPE(x.scalar_type() == at::kFloat || x.scalar_type() == at::kBFloat16 ||
                       x.scalar_type() == at::kHalf,
                   "qext ", format, ": input dtype ", x.scalar_type(),
                   " is not supported; use float32, bfloat16 or float16");
  TORCH_CHECK_VALUE(x.dim() >= 2, "qext ", format, ": input must have at least 2 dimensions, got shape ",
                    shape_str(x.sizes()));
  const int64_t K = x.size(-1);
  const int64_t M = x.numel() / (K == 0 ? 1 : K);
  TORCH_CHECK_VALUE(M > 0 && K > 0 && M % multiple == 0 && K % multiple == 0, "qext ", format,
                    ": the input flattened to [M, K] = [", std::to_string(M), ", ",
                    std::to_string(K), "] must have M and K positive multiples of ",
                    std::to_string(multiple), " (input shape ",
                    shape_str(x.sizes()), ")");
  return {M, K};
}

inline void check_noop_flag(const c10::optional<at::Tensor>& flag, const at::Tensor& x) {
  if (!flag.has_value()) return;
  const at::Tensor& f = *flag;
  TORCH_CHECK_TYPE(f.scalar_type() == at::kFloat, "qext: noop_flag must be float32, got ",
                   f.scalar_type());
  TORCH_CHECK_VALUE(f.dim() == 1 && f.size(0) == 1, "qext: noop_flag must have shape [1], got ",
                    shape_str(f.sizes()));
  TORCH_CHECK_TYPE(f.device() == x.device(), "qext: noop_flag is on ", f.device(),
                   " but the input is on ", x.device(), "; put the noop flag on the input's device");
}

// Checks that an output buffer of `out` exists with the expected shape, dtype and device.
inline void check_buffer(const at::Tensor& t, const char* name, std::vector<int64_t> shape,
                         at::ScalarType dtype, const at::Tensor& x) {
  TORCH_CHECK_VALUE(t.defined(), "qext: out.", name,
                    " is missing; `out` was made for other usages than this quantizer's");
  TORCH_CHECK_VALUE(t.sizes() == at::IntArrayRef(shape), "qext: out.", name, " has shape ",
                    shape_str(t.sizes()), ", expected ", shape_str(shape), " for an input of shape ",
                    shape_str(x.sizes()), "; `out` was made for another shape");
  TORCH_CHECK_TYPE(t.scalar_type() == dtype, "qext: out.", name, " has dtype ", t.scalar_type(),
                   ", expected ", dtype);
  TORCH_CHECK_TYPE(t.device() == x.device(), "qext: out.", name, " is on ", t.device(),
                   " but the input is on ", x.device());
  TORCH_CHECK_VALUE(t.is_contiguous(), "qext: out.", name, " must be contiguous");
}

inline int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

}  // namespace qext
