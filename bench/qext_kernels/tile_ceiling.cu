// The NVFP4 tile kernel (ext/csrc/cuda/nvfp4_tile.cuh) timed alone, with its per-block
// quantization as in qext (VARIANT 0) or stripped (VARIANT 1), on bf16 8192 x 8192,
// rowwise + columnwise: what the rounding itself costs, and what the rest of the kernel
// (loads, the shared-memory transpose, the stores) allows.
//  VARIANT 0: "SR" and "RN", the kernels of qext;
//  VARIANT 1: "stripped" (each block's 8 data bytes and scale byte are an XOR of its
//             values' bits: the same loads and stores, no rounding, no Philox) and
//             "philox only" (the same, XORed with the block's Philox draw).
// Also the amax pass that precedes the tile kernel in every NVFP4 call, and a
// device-to-device copy of the same bytes (half read, half written) as in
// bench/bench_qext.py. CUDA events, 5 warm-ups, median of 50.
//
//   nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 --fmad=false -I ext/csrc \
//        -DVARIANT=1 bench/qext_kernels/tile_ceiling.cu ext/csrc/cuda/amax.cu \
//        ext/csrc/common/tensor.cpp -o tile_ceiling1
#include "common/kernels.h"
#include "cuda/launch.cuh"
#include "timing.cuh"

#ifndef VARIANT
#define VARIANT 0
#endif

namespace qext {
namespace cuda_detail {
// Keeps every value (and with kSR the draw) live; no rounding.
template <bool kSR>
__device__ __forceinline__ uint2 stripped_block(const float (&v)[16], const Nvfp4Consts&,
                                                const Philox4& rnd, uint32_t& scale_byte) {
  uint32_t p0 = 0u, p1 = 0u;
#pragma unroll
  for (int e = 0; e < 8; ++e) p0 ^= float_bits(v[e]), p1 ^= float_bits(v[8 + e]);
  if (kSR) p0 ^= rnd.w[0] ^ rnd.w[1], p1 ^= rnd.w[2] ^ rnd.w[3];
  scale_byte = p0 & 0x7Fu;
  return make_uint2(p0, p1);
}
}  // namespace cuda_detail
}  // namespace qext

#if VARIANT == 1
#define QEXT_NVFP4_BLOCK stripped_block
#endif
#include "cuda/nvfp4_tile.cuh"

using namespace qext;
using namespace qext::cuda_detail;

// Normal-ish bf16 test data from a hash (never zeros: they would hide unwritten work).
__global__ void fill(uint16_t* x, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const Philox4 r = philox4x32_10(7, 0, static_cast<uint64_t>(i));
    const float u = (r.w[0] >> 8) * 0x1p-24f, w = (r.w[1] >> 8) * 0x1p-24f;
    const float g = (u + w + (r.w[2] >> 8) * 0x1p-24f - 1.5f) * 2.0f;  // ~N(0, 1)
    x[i] = static_cast<uint16_t>(__float_as_uint(g) >> 16);
  }
}

int main() {
  const int64_t M = 8192, K = 8192;
  const size_t n = static_cast<size_t>(M * K);
  uint16_t* x;
  uint8_t *dr, *sr, *dc, *sc;
  float* amax;
  int64_t* states;
  const size_t sr_bytes = roundup(M, 128) * roundup(K / 16, 4);
  const size_t sc_bytes = roundup(K, 128) * roundup(M / 16, 4);
  CHECK(cudaMalloc(&x, n * 2));
  CHECK(cudaMalloc(&dr, n / 2));
  CHECK(cudaMalloc(&dc, n / 2));
  CHECK(cudaMalloc(&sr, sr_bytes));
  CHECK(cudaMalloc(&sc, sc_bytes));
  CHECK(cudaMalloc(&amax, 2 * sizeof(float)));
  CHECK(cudaMalloc(&states, 4 * sizeof(int64_t)));
  const int64_t h_states[4] = {42, 0, 43, 1024};
  CHECK(cudaMemcpy(states, h_states, sizeof(h_states), cudaMemcpyHostToDevice));
  fill<<<1024, 256>>>(x, static_cast<int64_t>(n));
  CHECK(cudaGetLastError());

  const TensorWrapper xw(x, {static_cast<size_t>(M), static_cast<size_t>(K)}, DType::kBFloat16);
  const TensorWrapper a0(amax, {1}, DType::kFloat32), a1(amax + 1, {1}, DType::kFloat32);
  const TensorWrapper st0(states, {2}, DType::kInt64), st1(states + 2, {2}, DType::kInt64);
  QuantizationConfig plain, cfg_r, cfg_c;
  cfg_r.stochastic_rounding = cfg_c.stochastic_rounding = true;
  cfg_r.rng_state = st0;
  cfg_c.rng_state = st1;
  const TensorWrapper wdr(dr, {static_cast<size_t>(M), static_cast<size_t>(K / 2)}, DType::kByte);
  const TensorWrapper wdc(dc, {static_cast<size_t>(K), static_cast<size_t>(M / 2)}, DType::kByte);
  const TensorWrapper wsr(sr, {sr_bytes}, DType::kByte), wsc(sc, {sc_bytes}, DType::kByte);
  const Nvfp4Operand row_sr = make_operand(a0, wdr, wsr, cfg_r, K);
  const Nvfp4Operand col_sr = make_operand(a1, wdc, wsc, cfg_c, M);
  const Nvfp4Operand row_rn = make_operand(a0, wdr, wsr, plain, K);
  const Nvfp4Operand col_rn = make_operand(a1, wdc, wsc, plain, M);

  const double bytes = n * 2.0 + n + sr_bytes + sc_bytes + 8;  // as bench_qext.py counts
  const size_t copy_bytes = static_cast<size_t>(bytes / 2);
  void *cs, *cd;
  CHECK(cudaMalloc(&cs, copy_bytes));
  CHECK(cudaMalloc(&cd, copy_bytes));
  CHECK(cudaMemset(cs, 1, copy_bytes));
  const float copy_us = median_us([&] { cudaMemcpyAsync(cd, cs, copy_bytes, cudaMemcpyDeviceToDevice); });
  const float amax_us = median_us([&] { cuda::amax(xw, a0, a1, plain, nullptr); });
  CHECK(cudaGetLastError());

  struct Case {
    const char* name;
    Nvfp4Operand r, c;
  };
  const Case cases[2] = {{VARIANT == 1 ? "philox only" : "SR", row_sr, col_sr},
                         {VARIANT == 1 ? "stripped" : "RN", row_rn, col_rn}};
  printf("tile_ceiling VARIANT=%d, bf16 %lldx%lld row+col, %.1f MB; copy %.1f us (%.0f GB/s), amax %.1f us\n",
         VARIANT, static_cast<long long>(M), static_cast<long long>(K), bytes / 1e6, copy_us,
         bytes / copy_us / 1e3, amax_us);
  for (const Case& cs_ : cases) {
    const float us = median_us([&] {
      launch_nvfp4_tiles<InBF16, false>(x, M, K, cs_.r, cs_.c, nullptr);
    });
    CHECK(cudaGetLastError());
    printf("  %-12s tile %7.1f us (%.3f x copy); with amax %7.1f us (%.3f x copy)\n", cs_.name, us,
           copy_us / us, us + amax_us, copy_us / (us + amax_us));
  }
  CHECK(cudaDeviceSynchronize());
  return 0;
}
