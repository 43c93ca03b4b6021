// The torch binding layer: owners, input checks, RNG reservation, kernel dispatch.
#pragma once

// Only the pieces of ATen that are used: <ATen/ATen.h> (every operator) tripled the
// compile time of each torch-layer file, and every variant csorch builds pays it.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/zeros_like.h>
#include <c10/util/Optional.h>

#include <vector>

#include "common/kernels.h"
#include "common/tensor.h"

namespace qext {

// The buffers of a quantized tensor, as the binding reads them from (and writes them
// back to) the Python object. Undefined tensors mean "usage not present".
struct QuantizedBuffers {
  at::Tensor rowwise_data, rowwise_scale_inv, rowwise_amax;
  at::Tensor columnwise_data, columnwise_scale_inv, columnwise_amax;
  bool with_gemm_swizzled_scales = false;
};

struct NVFP4Options {
  bool rowwise = true;
  bool columnwise = true;
  bool stochastic_rounding = false;
  bool with_rht = false;
  bool optimize_for_gemm = false;
};

struct MXFP8Options {
  bool rowwise = true;
  bool columnwise = true;
  bool optimize_for_gemm = false;
};

void quantize_nvfp4_impl(const at::Tensor& input, const NVFP4Options& opt, QuantizedBuffers& out,
                         const c10::optional<at::Tensor>& noop_flag,
                         const std::vector<at::Tensor>& rng_states);

void quantize_mxfp8_impl(const at::Tensor& input, const MXFP8Options& opt, QuantizedBuffers& out,
                         const c10::optional<at::Tensor>& noop_flag);

at::Tensor swizzle_scales(const at::Tensor& scales, bool transposed, bool inverse);

// A fresh int64 [2] = [seed, offset] state on `device`, drawn from the default generator.
at::Tensor reserve_rng_state(const at::Device& device);
#ifdef QEXT_WITH_CUDA
at::Tensor reserve_rng_state_cuda(const at::Device& device);
#endif

// ---- helpers shared by the torch-layer sources ----

TensorWrapper wrap(const at::Tensor& t);  // empty wrapper for an undefined tensor
Stream current_stream(const at::Device& device);

// Runs kernel `fn` of the CPU or CUDA implementation, whichever `device` names, and
// checks the launch.
#ifdef QEXT_WITH_CUDA
void check_cuda_launch();
#define QEXT_DISPATCH(device, fn, ...)                                   \
  do {                                                                   \
    if ((device).is_cuda()) {                                            \
      ::qext::cuda::fn(__VA_ARGS__, ::qext::current_stream(device));     \
      ::qext::check_cuda_launch();                                       \
    } else {                                                             \
      ::qext::cpu::fn(__VA_ARGS__, nullptr);                             \
    }                                                                    \
  } while (0)
#else
#define QEXT_DISPATCH(device, fn, ...)                                                   \
  do {                                                                                   \
    TORCH_CHECK_TYPE(!(device).is_cuda(), "qext was built without CUDA support; move " \
                     "the input to the CPU or rebuild qext where nvcc is available");    \
    ::qext::cpu::fn(__VA_ARGS__, nullptr);                                               \
  } while (0)
#endif

}  // namespace qext
