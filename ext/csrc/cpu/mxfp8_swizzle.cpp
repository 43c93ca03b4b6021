// MXFP8 quantization and the scale swizzle on the CPU.
#include <algorithm>

#include "common/kernels.h"
#include "common/swizzle.h"
#include "kernels_util.h"

namespace qext {
namespace cpu {

namespace {

// One 32-element block read through get(e); writes codes through put(e, code).
template <typename Get, typename Put>
uint8_t quantize_block(Get&& get, Put&& put) {
  float v[kMxfp8Block];
  float bamax = 0.0f;
  for (int e = 0; e < kMxfp8Block; ++e) {
    v[e] = get(e);
    bamax = std::max(bamax, fabsf(v[e]));
  }
  const int exp = mxfp8_exponent(bamax);
  const float scale = exp2_from_bits(exp);
  for (int e = 0; e < kMxfp8Block; ++e) put(e, float_to_e4m3(v[e] / scale));
  return static_cast<uint8_t>(exp + 127);
}

}  // namespace

void mxfp8_quantize(const TensorWrapper& x, const TensorWrapper& data_r,
                    const TensorWrapper& scale_r, const TensorWrapper& data_c,
                    const TensorWrapper& scale_c, const QuantizationConfig& cfg, Stream) {
  if (noop_set(cfg)) return;
  const size_t M = x.dim(0), K = x.dim(1);
  if (!data_r.empty()) {
    uint8_t* d = data_r.ptr<uint8_t>();
    uint8_t* s = scale_r.ptr<uint8_t>();
    const size_t cols = scale_r.dim(1);
    for (size_t m = 0; m < M; ++m) {
      for (size_t b = 0; b < K / kMxfp8Block; ++b) {
        const size_t base = m * K + b * kMxfp8Block;
        const uint8_t e = quantize_block([&](int i) { return load(x, base + i); },
                                         [&](int i, uint8_t q) { d[base + i] = q; });
        s[cfg.swizzled_scales ? swizzle_offset(m, b, cols) : m * cols + b] = e;
      }
    }
  }
  if (!data_c.empty()) {
    uint8_t* d = data_c.ptr<uint8_t>();
    uint8_t* s = scale_c.ptr<uint8_t>();
    const size_t rows = scale_c.dim(0), cols = scale_c.dim(1);  // [roundup(M/32,4), roundup(K,128)]
    for (size_t b = 0; b < M / kMxfp8Block; ++b) {
      for (size_t k = 0; k < K; ++k) {
        const size_t base = b * kMxfp8Block * K + k;
        const uint8_t e = quantize_block([&](int i) { return load(x, base + i * K); },
                                         [&](int i, uint8_t q) { d[base + i * K] = q; });
        // Swizzled as the transpose: logical (k, b) in a buffer of `rows` columns.
        s[cfg.swizzled_scales ? swizzle_offset(k, b, rows) : b * cols + k] = e;
      }
    }
  }
}

void swizzle(const TensorWrapper& in, const TensorWrapper& out, bool transposed, bool inverse,
             const QuantizationConfig& cfg, Stream) {
  if (noop_set(cfg)) return;
  const size_t R = in.dim(0), C = in.dim(1);
  const uint8_t* src = in.ptr<const uint8_t>();
  uint8_t* dst = out.ptr<uint8_t>();
  for (size_t i = 0; i < R; ++i) {
    for (size_t j = 0; j < C; ++j) {
      const size_t compact = i * C + j;
      const size_t sw = transposed ? swizzle_offset(j, i, R) : swizzle_offset(i, j, C);
      if (inverse) dst[compact] = src[sw];
      else dst[sw] = src[compact];
    }
  }
}

}  // namespace cpu
}  // namespace qext
