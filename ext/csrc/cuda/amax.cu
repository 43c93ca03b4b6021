// amax(|x|) on CUDA: a one-thread zeroing kernel, then a grid-stride reduction with
// 16-byte loads and one atomicMax per block and output.
#include "common/kernels.h"
#include <utility>

#include "reduce.cuh"

namespace qext {
namespace cuda {

namespace {

using namespace cuda_detail;

constexpr int kThreads = 512;
constexpr int kUnroll = 4;  // independent 16-byte loads in flight per thread
constexpr int kBlocksPerSm = 4;

template <typename In>
__device__ __forceinline__ float max_abs_16B(const uint4& q, float m) {
  const uint32_t w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (sizeof(typename In::storage) == 4) {
      m = fmaxf(m, fabsf(__uint_as_float(w[i])));
    } else {
      float lo, hi;
      unpack2<In>(w[i], lo, hi);
      m = fmaxf(m, fmaxf(fabsf(lo), fabsf(hi)));
    }
  }
  return m;
}

// kVec: x is 16-byte aligned. The walk runs from the start of x to its end, so the
// tail of x is what sits in L2 when a quantize kernel (which starts there) follows.
template <typename In, bool kVec>
__global__ void __launch_bounds__(kThreads)
    amax_kernel(const typename In::storage* __restrict__ x, int64_t n, float* out_a, float* out_b,
                const float* noop) {
  if (noop_set(noop)) return;
  float m = 0.0f;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  int64_t scalar_from = 0;
  if (kVec) {
    constexpr int64_t kPer = 16 / sizeof(typename In::storage);
    const uint4* xv = reinterpret_cast<const uint4*>(x);
    const int64_t nv = n / kPer;
    int64_t i = tid;
    for (; i + (kUnroll - 1) * stride < nv; i += kUnroll * stride) {
      uint4 q[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) q[u] = __ldcg(xv + i + u * stride);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) m = max_abs_16B<In>(q[u], m);
    }
    for (; i < nv; i += stride) m = max_abs_16B<In>(__ldcg(xv + i), m);
    scalar_from = nv * kPer;
  }
  for (int64_t j = scalar_from + tid; j < n; j += stride) m = fmaxf(m, fabsf(In::to_float(x[j])));
  block_max_to<kThreads>(m, out_a, out_b);
}

}  // namespace

void amax(const TensorWrapper& x, const TensorWrapper& out_a, const TensorWrapper& out_b,
          const QuantizationConfig& cfg, Stream stream) {
  float* a = out_a.empty() ? nullptr : out_a.ptr<float>();
  float* b = out_b.empty() ? nullptr : out_b.ptr<float>();
  if (a == nullptr) std::swap(a, b);
  if (a == nullptr) return;
  const float* noop = noop_ptr(cfg);
  amax_init_kernel<<<1, 1, 0, stream>>>(a, b, noop);
  const int64_t n = static_cast<int64_t>(x.numel());
  if (n == 0) return;
  dispatch_input(x.dtype(), [&](auto in) {
    using In = decltype(in);
    using T = typename In::storage;
    const T* p = x.ptr<const T>();
    const int64_t per = 16 / sizeof(T);
    const unsigned grid = grid_for((n + per * kUnroll - 1) / (per * kUnroll), kThreads,
                                   sm_count() * kBlocksPerSm);
    if (is_aligned(p, 16)) {
      amax_kernel<In, true><<<grid, kThreads, 0, stream>>>(p, n, a, b, noop);
    } else {
      amax_kernel<In, false><<<grid, kThreads, 0, stream>>>(p, n, a, b, noop);
    }
  });
}

}  // namespace cuda
}  // namespace qext
