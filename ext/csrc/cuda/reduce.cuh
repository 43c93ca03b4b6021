// Max-reductions for the amax kernels (internal to csrc/cuda).
#pragma once

#include "launch.cuh"

namespace qext {
namespace cuda_detail {

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, o));
  return v;
}

// Block-wide max of non-negative v, then one atomicMax per output: for non-negative
// floats the order of the bit patterns as integers is the order of the values.
template <int kThreads>
__device__ __forceinline__ void block_max_to(float v, float* out_a, float* out_b) {
  __shared__ float part[kThreads / 32];
  v = warp_max(v);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kThreads / 32 ? part[lane] : 0.0f;
    v = warp_max(v);
    if (lane == 0) {
      atomicMax(reinterpret_cast<int*>(out_a), __float_as_int(v));
      if (out_b != nullptr) atomicMax(reinterpret_cast<int*>(out_b), __float_as_int(v));
    }
  }
}

// Zeroes amax outputs before a reduction, unless the call is a no-op. (Internal
// linkage: each translation unit that launches it has its own copy.)
namespace {
__global__ void amax_init_kernel(float* out_a, float* out_b, const float* noop) {
  if (noop_set(noop)) return;
  *out_a = 0.0f;
  if (out_b != nullptr) *out_b = 0.0f;
}
}  // namespace

}  // namespace cuda_detail
}  // namespace qext
