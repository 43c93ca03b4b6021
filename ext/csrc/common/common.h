// Shared definitions for host and device code. No torch, no CUDA runtime headers.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define QEXT_HD __host__ __device__ __forceinline__
#else
#define QEXT_HD inline
#endif

namespace qext {

constexpr int kNvfp4Block = 16;   // elements per NVFP4 scale block
constexpr int kMxfp8Block = 32;   // elements per MXFP8 scale block
constexpr int kScaleRowAlign = 128;
constexpr int kScaleColAlign = 4;
constexpr float kFloatMax = 3.402823466e+38f;
constexpr float kE4M3Max = 448.0f;
constexpr float kE2M1Max = 6.0f;

QEXT_HD size_t roundup(size_t x, size_t m) { return (x + m - 1) / m * m; }

}  // namespace qext
