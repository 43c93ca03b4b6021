// quantize_impl for NVFP4: amax, RNG reservation, wrappers, config, dispatch.
#include <string>

#include "checks.h"
#include "qext_torch.h"

#ifdef QEXT_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#endif

namespace qext {

namespace {

void check_nvfp4_out(const QuantizedBuffers& out, const NVFP4Options& opt, const at::Tensor& x,
                     int64_t M, int64_t K) {
  if (opt.rowwise) {
    check_buffer(out.rowwise_data, "rowwise_data", {M, K / 2}, at::kByte, x);
    check_buffer(out.rowwise_scale_inv, "rowwise_scale_inv",
                 {round_up(M, 128), round_up(K / 16, 4)}, at::kByte, x);
    check_buffer(out.rowwise_amax, "rowwise_amax", {1}, at::kFloat, x);
  }
  if (opt.columnwise) {
    check_buffer(out.columnwise_data, "columnwise_data", {K, M / 2}, at::kByte, x);
    check_buffer(out.columnwise_scale_inv, "columnwise_scale_inv",
                 {round_up(K, 128), round_up(M / 16, 4)}, at::kByte, x);
    check_buffer(out.columnwise_amax, "columnwise_amax", {1}, at::kFloat, x);
  }
  TORCH_CHECK_VALUE(out.with_gemm_swizzled_scales == opt.optimize_for_gemm,
                    "qext: out holds ", out.with_gemm_swizzled_scales ? "GEMM-swizzled" : "compact",
                    " scales but the quantizer has optimize_for_gemm=",
                    opt.optimize_for_gemm ? "True" : "False",
                    "; update a tensor only with a quantizer of the same settings");
}

}  // namespace

void quantize_nvfp4_impl(const at::Tensor& input, const NVFP4Options& opt, QuantizedBuffers& out,
                         const c10::optional<at::Tensor>& noop_flag,
                         const std::vector<at::Tensor>& rng_states) {
  const auto [M, K] = check_input(input, "NVFP4", 16);
  TORCH_CHECK_VALUE(opt.rowwise || opt.columnwise,
                    "qext NVFP4: the quantizer needs rowwise=True or columnwise=True");
  TORCH_CHECK_VALUE(!(opt.with_rht && opt.columnwise) || input.scalar_type() == at::kBFloat16,
                    "qext NVFP4: RHT (with_rht=True) needs a bfloat16 input, got ",
                    input.scalar_type());
  check_noop_flag(noop_flag, input);
  check_nvfp4_out(out, opt, input, M, K);

  const bool rht = opt.with_rht && opt.columnwise;
  const bool fused = opt.stochastic_rounding && rht && opt.rowwise &&
                     input.scalar_type() == at::kBFloat16 && M % 64 == 0 && K % 128 == 0;
  const bool two_states = opt.stochastic_rounding && !fused && opt.rowwise && opt.columnwise;
  if (!rng_states.empty()) {
    TORCH_CHECK_VALUE(opt.stochastic_rounding,
                      "qext NVFP4: rng_states were given but stochastic_rounding is off");
    const size_t needed = two_states ? 2 : 1;
    TORCH_CHECK_VALUE(rng_states.size() == needed, "qext NVFP4: this call needs ",
                      std::to_string(needed), " rng_states (",
                      two_states ? "rowwise then columnwise" : "one for the call", "), got ",
                      std::to_string(rng_states.size()));
    for (const auto& s : rng_states) {
      TORCH_CHECK_TYPE(s.scalar_type() == at::kLong && s.dim() == 1 && s.size(0) == 2 &&
                           s.device() == input.device() && s.is_contiguous(),
                       "qext NVFP4: each rng_state must be an int64 tensor of shape [2] ",
                       "([seed, offset]) on the input's device");
    }
  }

#ifdef QEXT_WITH_CUDA
  const c10::cuda::OptionalCUDAGuard guard(input.is_cuda() ? c10::make_optional(input.device())
                                                            : c10::nullopt);
#endif
  const at::Device dev = input.device();
  // Owner of the flattened input the kernels read (a copy when input is not contiguous).
  const at::Tensor x = input.contiguous().view({M, K});
  const TensorWrapper xw = wrap(x);

  QuantizationConfig base;
  base.noop = noop_flag.has_value() ? wrap(*noop_flag) : TensorWrapper();
  base.swizzled_scales = fused && opt.optimize_for_gemm;

  // amax, per direction. With RHT the columnwise amax is that of RHT(x^T).
  const TensorWrapper row_amax = wrap(out.rowwise_amax), col_amax = wrap(out.columnwise_amax);
  at::Tensor rht_t;  // owner of the unfused path's RHT(x^T): read by the columnwise kernel
  if (fused) {
    // One read of x for both: amax(RHT(x^T)) and the rowwise amax(x).
    QEXT_DISPATCH(dev, rht_amax, xw, col_amax, row_amax, base);
  } else if (opt.rowwise || !rht) {
    QEXT_DISPATCH(dev, amax, xw, opt.rowwise ? row_amax : col_amax,
                  opt.rowwise && opt.columnwise && !rht ? col_amax : TensorWrapper(), base);
  }
  if (rht && !fused) {
    rht_t = at::empty({K, M}, x.options().dtype(at::kFloat));
    QEXT_DISPATCH(dev, rht_transpose, xw, wrap(rht_t), base);
    QEXT_DISPATCH(dev, amax, wrap(rht_t), col_amax, TensorWrapper(), base);
  }

  // RNG states. The configs hold only non-owning wrappers: these owners are
  // load-bearing and must live until every kernel below has been dispatched.
  QuantizationConfig row_cfg = base, col_cfg = base;
  at::Tensor rng_state_fused, rng_state_row, rng_state_col;
  size_t next_state = 0;
  const auto take_state = [&]() {
    return rng_states.empty() ? reserve_rng_state(dev) : rng_states.at(next_state++);
  };
  if (opt.stochastic_rounding) {
    row_cfg.stochastic_rounding = col_cfg.stochastic_rounding = true;
    if (fused) {
      rng_state_fused = take_state();
      row_cfg.rng_state = wrap(rng_state_fused);
    } else {
      if (opt.rowwise) {
        rng_state_row = take_state();
        row_cfg.rng_state = wrap(rng_state_row);
      }
      if (opt.columnwise) {
        rng_state_col = take_state();
        col_cfg.rng_state = wrap(rng_state_col);
      }
    }
  }

  if (fused) {
    QEXT_DISPATCH(dev, nvfp4_quantize_fused, xw, row_amax, wrap(out.rowwise_data),
                  wrap(out.rowwise_scale_inv), col_amax, wrap(out.columnwise_data),
                  wrap(out.columnwise_scale_inv), row_cfg);
    return;
  }

  // Unfused kernels write compact scales. For the GEMM layout they go to zeroed
  // scratch buffers (owners below) and the swizzle kernels write the output's own
  // buffers, which keep their addresses; under the noop flag the swizzle is a no-op too.
  at::Tensor scratch_row, scratch_col;
  if (opt.optimize_for_gemm) {
    if (opt.rowwise) scratch_row = at::zeros_like(out.rowwise_scale_inv);
    if (opt.columnwise) scratch_col = at::zeros_like(out.columnwise_scale_inv);
  }
  const TensorWrapper row_scale = wrap(opt.optimize_for_gemm ? scratch_row : out.rowwise_scale_inv);
  const TensorWrapper col_scale =
      wrap(opt.optimize_for_gemm ? scratch_col : out.columnwise_scale_inv);

  if (opt.rowwise && opt.columnwise && !rht) {
    QEXT_DISPATCH(dev, nvfp4_quantize_both, xw, row_amax, wrap(out.rowwise_data), row_scale,
                  row_cfg, col_amax, wrap(out.columnwise_data), col_scale, col_cfg);
  } else {
    if (opt.rowwise) {
      QEXT_DISPATCH(dev, nvfp4_quantize, xw, false, row_amax, wrap(out.rowwise_data), row_scale,
                    row_cfg);
    }
    if (opt.columnwise) {
      QEXT_DISPATCH(dev, nvfp4_quantize, rht ? wrap(rht_t) : xw, !rht, col_amax,
                    wrap(out.columnwise_data), col_scale, col_cfg);
    }
  }
  if (opt.optimize_for_gemm) {
    if (opt.rowwise) {
      QEXT_DISPATCH(dev, swizzle, row_scale, wrap(out.rowwise_scale_inv), false, false, base);
    }
    if (opt.columnwise) {
      QEXT_DISPATCH(dev, swizzle, col_scale, wrap(out.columnwise_scale_inv), false, false, base);
    }
  }
}

}  // namespace qext
