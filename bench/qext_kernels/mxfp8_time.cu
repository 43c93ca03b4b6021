// qext's MXFP8 kernel (ext/csrc/cuda/mxfp8.cu, linked in) timed alone: bf16 and fp32
// 8192 x 8192, rowwise + columnwise, compact scales, against a device-to-device copy of
// the same bytes (half read, half written) as in bench/bench_qext.py. CUDA events,
// 5 warm-ups, median of 50. Build beside the kernel it times, so that two checkouts
// (before / after a change) give comparable binaries:
//
//   nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 --fmad=false -I ext/csrc \
//        bench/qext_kernels/mxfp8_time.cu ext/csrc/cuda/mxfp8.cu ext/csrc/common/tensor.cpp \
//        -o mxfp8_time
#include "common/common.h"
#include "common/kernels.h"
#include "timing.cuh"

using namespace qext;

// Random normal-ish values (never zeros), as float or as bf16.
__global__ void fill(void* x, int64_t n, bool bf16) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ static_cast<uint32_t>(i >> 32);
    h ^= h >> 15, h *= 2246822519u, h ^= h >> 13;
    const float g = (static_cast<float>(h & 0xFFFFFF) * 0x1p-24f - 0.5f) * 6.0f + 1e-3f;
    if (bf16) static_cast<uint16_t*>(x)[i] = static_cast<uint16_t>(__float_as_uint(g) >> 16);
    else static_cast<float*>(x)[i] = g;
  }
}

int main(int argc, char** argv) {
  const char* label = argc > 1 ? argv[1] : "mxfp8";
  const size_t M = 8192, K = 8192, n = M * K;
  void* x;
  uint8_t *dr, *dc, *sr, *sc;
  const size_t sr_bytes = roundup(M, 128) * roundup(K / 32, 4);
  const size_t sc_bytes = roundup(M / 32, 4) * roundup(K, 128);
  CHECK(cudaMalloc(&x, n * 4));
  CHECK(cudaMalloc(&dr, n));
  CHECK(cudaMalloc(&dc, n));
  CHECK(cudaMalloc(&sr, sr_bytes));
  CHECK(cudaMalloc(&sc, sc_bytes));
  const TensorWrapper wdr(dr, {M, K}, DType::kByte), wdc(dc, {M, K}, DType::kByte);
  const TensorWrapper wsr(sr, {roundup(M, 128), roundup(K / 32, 4)}, DType::kByte);
  const TensorWrapper wsc(sc, {roundup(M / 32, 4), roundup(K, 128)}, DType::kByte);
  const QuantizationConfig cfg;
  for (const bool bf16 : {true, false}) {
    fill<<<1024, 256>>>(x, static_cast<int64_t>(n), bf16);
    CHECK(cudaGetLastError());
    const TensorWrapper xw(x, {M, K}, bf16 ? DType::kBFloat16 : DType::kFloat32);
    const double bytes = n * (bf16 ? 2.0 : 4.0) + 2.0 * n + sr_bytes + sc_bytes;
    const size_t copy_bytes = static_cast<size_t>(bytes / 2);
    void *cs, *cd;
    CHECK(cudaMalloc(&cs, copy_bytes));
    CHECK(cudaMalloc(&cd, copy_bytes));
    CHECK(cudaMemset(cs, 1, copy_bytes));
    const float copy_us =
        median_us([&] { cudaMemcpyAsync(cd, cs, copy_bytes, cudaMemcpyDeviceToDevice); });
    const float us = median_us([&] { cuda::mxfp8_quantize(xw, wdr, wsr, wdc, wsc, cfg, nullptr); });
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    printf("%s %s: %.1f MB, %7.1f us = %.3f x copy (copy %.1f us)\n", label, bf16 ? "bf16" : "fp32",
           bytes / 1e6, us, copy_us / us, copy_us);
    cudaFree(cs);
    cudaFree(cd);
  }
  return 0;
}
