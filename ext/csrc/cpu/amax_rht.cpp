// amax and the random Hadamard transform on the CPU.
#include <algorithm>
#include <vector>

#include "common/kernels.h"
#include "common/rht.h"
#include "kernels_util.h"

namespace qext {
namespace cpu {

void amax(const TensorWrapper& x, const TensorWrapper& out_a, const TensorWrapper& out_b,
          const QuantizationConfig& cfg, Stream) {
  if (noop_set(cfg)) return;
  float m = 0.0f;
  const size_t n = x.numel();
  for (size_t i = 0; i < n; ++i) m = std::max(m, fabsf(load(x, i)));
  *out_a.ptr<float>() = m;
  if (!out_b.empty()) *out_b.ptr<float>() = m;
}

namespace {

// Calls f(k, m, value) for every element of RHT(x^T) ([K, M]); x is [M, K] bf16.
template <typename F>
void for_each_rht(const TensorWrapper& x, F&& f) {
  const size_t M = x.dim(0), K = x.dim(1);
  float v[16];
  for (size_t k = 0; k < K; ++k) {
    for (size_t m0 = 0; m0 < M; m0 += 16) {
      for (int j = 0; j < 16; ++j) v[j] = load(x, (m0 + j) * K + k);
      for (int i = 0; i < 16; ++i) f(k, m0 + i, rht_row(v, i));
    }
  }
}

}  // namespace

void rht_transpose(const TensorWrapper& x, const TensorWrapper& out, const QuantizationConfig& cfg,
                   Stream) {
  if (noop_set(cfg)) return;
  const size_t M = x.dim(0);
  float* o = out.ptr<float>();
  for_each_rht(x, [&](size_t k, size_t m, float w) { o[k * M + m] = w; });
}

void rht_amax(const TensorWrapper& x, const TensorWrapper& out, const TensorWrapper& out_x,
              const QuantizationConfig& cfg, Stream stream) {
  if (noop_set(cfg)) return;
  float m = 0.0f;
  for_each_rht(x, [&](size_t, size_t, float w) { m = std::max(m, fabsf(w)); });
  *out.ptr<float>() = m;
  if (!out_x.empty()) amax(x, out_x, TensorWrapper(), cfg, stream);
}

}  // namespace cpu
}  // namespace qext
