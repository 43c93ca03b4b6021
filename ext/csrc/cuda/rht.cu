// The random Hadamard transform of x^T on CUDA: materialised (unfused path) or only
// its amax (fused path). One thread per 16-block of a column of x: a warp reads 32
// neighbouring columns, so every row access is coalesced.
#include "common/kernels.h"
#include "common/rht.h"
#include "reduce.cuh"

namespace qext {
namespace cuda {

namespace {

using namespace cuda_detail;

constexpr int kThreads = 256;
constexpr int kBlocksPerSm = 8;

// v[j] = x[16 g + j, k]: block g of row k of x^T.
template <typename In>
__device__ __forceinline__ void load_column_block(const typename In::storage* __restrict__ x,
                                                  int64_t K, int64_t k, int64_t g,
                                                  float (&v)[16]) {
  const typename In::storage* p = x + 16 * g * K + k;
#pragma unroll
  for (int j = 0; j < 16; ++j) v[j] = In::to_float(p[j * K]);
}

template <typename In>
__global__ void __launch_bounds__(kThreads)
    rht_transpose_kernel(const typename In::storage* __restrict__ x, int64_t M, int64_t K,
                         float* __restrict__ out, bool vec, const float* noop) {
  if (noop_set(noop)) return;
  const int64_t blocks = K * (M / 16);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; idx < blocks;
       idx += stride) {
    const int64_t k = idx % K, g = idx / K;
    float v[16], w[16];
    load_column_block<In>(x, K, k, g, v);
#pragma unroll
    for (int i = 0; i < 16; ++i) w[i] = rht_row(v, i);
    float* dst = out + k * M + 16 * g;
    if (vec) {
#pragma unroll
      for (int i = 0; i < 4; ++i)
        reinterpret_cast<float4*>(dst)[i] =
            make_float4(w[4 * i], w[4 * i + 1], w[4 * i + 2], w[4 * i + 3]);
    } else {
#pragma unroll
      for (int i = 0; i < 16; ++i) dst[i] = w[i];
    }
  }
}

// kPlain: also amax(|x|) into out_x, from the same loads (the fused path's rowwise amax).
template <typename In, bool kPlain>
__global__ void __launch_bounds__(kThreads)
    rht_amax_kernel(const typename In::storage* __restrict__ x, int64_t M, int64_t K, float* out,
                    float* out_x, const float* noop) {
  if (noop_set(noop)) return;
  const int64_t blocks = K * (M / 16);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  float m = 0.0f, mx = 0.0f;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; idx < blocks;
       idx += stride) {
    float v[16];
    load_column_block<In>(x, K, idx % K, idx / K, v);
#pragma unroll
    for (int i = 0; i < 16; ++i) m = fmaxf(m, fabsf(rht_row(v, i)));
    if (kPlain) {
#pragma unroll
      for (int j = 0; j < 16; ++j) mx = fmaxf(mx, fabsf(v[j]));
    }
  }
  block_max_to<kThreads>(m, out, nullptr);
  if (kPlain) {
    __syncthreads();  // block_max_to's partials are reused
    block_max_to<kThreads>(mx, out_x, nullptr);
  }
}

}  // namespace

void rht_transpose(const TensorWrapper& x, const TensorWrapper& out, const QuantizationConfig& cfg,
                   Stream stream) {
  const Dims d = dims2d(x);
  const int64_t blocks = d.cols * (d.rows / 16);
  if (blocks == 0) return;
  float* o = out.ptr<float>();
  const unsigned grid = grid_for(blocks, kThreads, sm_count() * kBlocksPerSm);
  dispatch_input(x.dtype(), [&](auto in) {
    using In = decltype(in);
    rht_transpose_kernel<In><<<grid, kThreads, 0, stream>>>(
        x.ptr<const typename In::storage>(), d.rows, d.cols, o, is_aligned(o, 16), noop_ptr(cfg));
  });
}

void rht_amax(const TensorWrapper& x, const TensorWrapper& out, const TensorWrapper& out_x,
              const QuantizationConfig& cfg, Stream stream) {
  const Dims d = dims2d(x);
  float* o = out.ptr<float>();
  float* ox = out_x.empty() ? nullptr : out_x.ptr<float>();
  amax_init_kernel<<<1, 1, 0, stream>>>(o, ox, noop_ptr(cfg));
  const int64_t blocks = d.cols * (d.rows / 16);
  if (blocks == 0) return;
  const unsigned grid = grid_for(blocks, kThreads, sm_count() * kBlocksPerSm);
  dispatch_input(x.dtype(), [&](auto in) {
    using In = decltype(in);
    const auto* p = x.ptr<const typename In::storage>();
    if (ox != nullptr) {
      rht_amax_kernel<In, true><<<grid, kThreads, 0, stream>>>(p, d.rows, d.cols, o, ox,
                                                               noop_ptr(cfg));
    } else {
      rht_amax_kernel<In, false><<<grid, kThreads, 0, stream>>>(p, d.rows, d.cols, o, nullptr,
                                                                noop_ptr(cfg));
    }
  });
}

}  // namespace cuda
}  // namespace qext
