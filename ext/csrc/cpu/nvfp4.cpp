// NVFP4 quantization on the CPU: the same rules as the CUDA kernels, one block at a time.
#include <algorithm>
#include <vector>

#include "common/kernels.h"
#include "common/philox.h"
#include "common/rht.h"
#include "common/swizzle.h"
#include "kernels_util.h"

namespace qext {
namespace cpu {

namespace {

// Quantizes operand A [R, C], read through get(r, c), into packed data and scales.
template <typename Get>
void quantize_operand(Get&& get, size_t R, size_t C, const TensorWrapper& amax,
                      const TensorWrapper& data, const TensorWrapper& scale,
                      const QuantizationConfig& cfg) {
  const float s_enc = nvfp4_encode_scale(*amax.ptr<const float>());
  const float s_dec = 1.0f / s_enc;
  const size_t nb = C / kNvfp4Block;
  const size_t scale_cols = scale.dim(1);
  uint8_t* out = data.ptr<uint8_t>();
  uint8_t* sc = scale.ptr<uint8_t>();
  uint64_t seed = 0, offset = 0;
  if (cfg.stochastic_rounding) {
    const int64_t* state = cfg.rng_state.ptr<const int64_t>();
    seed = static_cast<uint64_t>(state[0]);
    offset = static_cast<uint64_t>(state[1]);
  }
  float v[kNvfp4Block];
  for (size_t r = 0; r < R; ++r) {
    for (size_t b = 0; b < nb; ++b) {
      float bamax = 0.0f;
      for (int e = 0; e < kNvfp4Block; ++e) {
        v[e] = get(r, b * kNvfp4Block + e);
        bamax = std::max(bamax, fabsf(v[e]));
      }
      const uint8_t s_b = nvfp4_block_scale(bamax, s_enc);
      const float mult = nvfp4_block_multiplier(s_b, s_dec);
      sc[cfg.swizzled_scales ? swizzle_offset(r, b, scale_cols) : r * scale_cols + b] = s_b;
      Philox4 rnd{};
      if (cfg.stochastic_rounding) rnd = philox4x32_10(seed, offset, cfg.rng_item_base + r * nb + b);
      uint8_t* dst = out + r * (C / 2) + b * (kNvfp4Block / 2);
      for (int e = 0; e < kNvfp4Block; e += 2) {
        uint8_t q[2];
        for (int h = 0; h < 2; ++h) {
          const float s = v[e + h] * mult;
          q[h] = cfg.stochastic_rounding ? float_to_e2m1_sr(s, philox_byte(rnd, e + h))
                                         : float_to_e2m1_rn(s);
        }
        dst[e / 2] = static_cast<uint8_t>(q[0] | (q[1] << 4));
      }
    }
  }
}

}  // namespace

void nvfp4_quantize(const TensorWrapper& x, bool transpose, const TensorWrapper& amax,
                    const TensorWrapper& data, const TensorWrapper& scale,
                    const QuantizationConfig& cfg, Stream) {
  if (noop_set(cfg)) return;
  const size_t M = x.dim(0), K = x.dim(1);
  if (transpose) {
    quantize_operand([&](size_t r, size_t c) { return load(x, c * K + r); }, K, M, amax, data,
                     scale, cfg);
  } else {
    quantize_operand([&](size_t r, size_t c) { return load(x, r * K + c); }, M, K, amax, data,
                     scale, cfg);
  }
}

void nvfp4_quantize_both(const TensorWrapper& x, const TensorWrapper& amax_r,
                         const TensorWrapper& data_r, const TensorWrapper& scale_r,
                         const QuantizationConfig& cfg_r, const TensorWrapper& amax_c,
                         const TensorWrapper& data_c, const TensorWrapper& scale_c,
                         const QuantizationConfig& cfg_c, Stream stream) {
  nvfp4_quantize(x, false, amax_r, data_r, scale_r, cfg_r, stream);
  nvfp4_quantize(x, true, amax_c, data_c, scale_c, cfg_c, stream);
}

void nvfp4_quantize_fused(const TensorWrapper& x, const TensorWrapper& amax_r,
                          const TensorWrapper& data_r, const TensorWrapper& scale_r,
                          const TensorWrapper& amax_c, const TensorWrapper& data_c,
                          const TensorWrapper& scale_c, const QuantizationConfig& cfg, Stream) {
  if (noop_set(cfg)) return;
  const size_t M = x.dim(0), K = x.dim(1);
  quantize_operand([&](size_t r, size_t c) { return load(x, r * K + c); }, M, K, amax_r, data_r,
                   scale_r, cfg);
  // The columnwise operand RHT(x^T) is built in kernel-private memory, block by block.
  std::vector<float> t(K * M);
  float v[kNvfp4Block];
  for (size_t k = 0; k < K; ++k) {
    for (size_t m0 = 0; m0 < M; m0 += kNvfp4Block) {
      for (int j = 0; j < kNvfp4Block; ++j) v[j] = load(x, (m0 + j) * K + k);
      for (int i = 0; i < kNvfp4Block; ++i) t[k * M + m0 + i] = rht_row(v, i);
    }
  }
  QuantizationConfig col = cfg;
  col.rng_item_base = cfg.rng_item_base + M * K / kNvfp4Block;
  quantize_operand([&](size_t r, size_t c) { return t[r * M + c]; }, K, M, amax_c, data_c, scale_c,
                   col);
}

}  // namespace cpu
}  // namespace qext
