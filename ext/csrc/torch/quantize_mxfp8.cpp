// quantize_impl for MXFP8, and the standalone swizzle entry points.
#include "checks.h"
#include "qext_torch.h"

#ifdef QEXT_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#endif

namespace qext {

void quantize_mxfp8_impl(const at::Tensor& input, const MXFP8Options& opt, QuantizedBuffers& out,
                         const c10::optional<at::Tensor>& noop_flag) {
  const auto [M, K] = check_input(input, "MXFP8", 32);
  TORCH_CHECK_VALUE(opt.rowwise || opt.columnwise,
                    "qext MXFP8: the quantizer needs rowwise=True or columnwise=True");
  check_noop_flag(noop_flag, input);
  if (opt.rowwise) {
    check_buffer(out.rowwise_data, "rowwise_data", {M, K}, at::kByte, input);
    check_buffer(out.rowwise_scale_inv, "rowwise_scale_inv", {round_up(M, 128), round_up(K / 32, 4)},
                 at::kByte, input);
  }
  if (opt.columnwise) {
    check_buffer(out.columnwise_data, "columnwise_data", {M, K}, at::kByte, input);
    check_buffer(out.columnwise_scale_inv, "columnwise_scale_inv",
                 {round_up(M / 32, 4), round_up(K, 128)}, at::kByte, input);
  }
  TORCH_CHECK_VALUE(out.with_gemm_swizzled_scales == opt.optimize_for_gemm,
                    "qext: out holds ", out.with_gemm_swizzled_scales ? "GEMM-swizzled" : "compact",
                    " scales but the quantizer has optimize_for_gemm=",
                    opt.optimize_for_gemm ? "True" : "False",
                    "; update a tensor only with a quantizer of the same settings");

#ifdef QEXT_WITH_CUDA
  const c10::cuda::OptionalCUDAGuard guard(input.is_cuda() ? c10::make_optional(input.device())
                                                            : c10::nullopt);
#endif
  const at::Device dev = input.device();
  const at::Tensor x = input.contiguous().view({M, K});  // owner of what the kernel reads
  QuantizationConfig cfg;
  cfg.noop = noop_flag.has_value() ? wrap(*noop_flag) : TensorWrapper();
  cfg.swizzled_scales = opt.optimize_for_gemm;  // MXFP8 kernels write the GEMM layout directly
  const auto pick = [](bool used, const at::Tensor& t) { return used ? wrap(t) : TensorWrapper(); };
  QEXT_DISPATCH(dev, mxfp8_quantize, wrap(x), pick(opt.rowwise, out.rowwise_data),
                pick(opt.rowwise, out.rowwise_scale_inv), pick(opt.columnwise, out.columnwise_data),
                pick(opt.columnwise, out.columnwise_scale_inv), cfg);
}

at::Tensor swizzle_scales(const at::Tensor& scales, bool transposed, bool inverse) {
  TORCH_CHECK_TYPE(scales.scalar_type() == at::kByte, "qext swizzle: scales must be uint8, got ",
                   scales.scalar_type());
  TORCH_CHECK_VALUE(scales.dim() == 2, "qext swizzle: scales must be 2-D, got shape ",
                    shape_str(scales.sizes()));
  const int64_t rows = transposed ? scales.size(1) : scales.size(0);
  const int64_t cols = transposed ? scales.size(0) : scales.size(1);
  TORCH_CHECK_VALUE(rows % 128 == 0 && cols % 4 == 0, "qext swizzle: scales of shape ",
                    shape_str(scales.sizes()), transposed ? " (transposed)" : "",
                    " need rows padded to a multiple of 128 and columns to a multiple of 4");
#ifdef QEXT_WITH_CUDA
  const c10::cuda::OptionalCUDAGuard guard(scales.is_cuda() ? c10::make_optional(scales.device())
                                                             : c10::nullopt);
#endif
  const at::Tensor in = scales.contiguous();  // owner of what the kernel reads
  at::Tensor out = at::empty_like(in);
  QEXT_DISPATCH(in.device(), swizzle, wrap(in), wrap(out), transposed, inverse,
                QuantizationConfig());
  return out;
}

}  // namespace qext
