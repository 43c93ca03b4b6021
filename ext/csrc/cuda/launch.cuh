// Device helpers shared by the CUDA kernels (internal to csrc/cuda).
//
// Every arithmetic rule comes from common/formats.h (docs/qext-internals.md). The
// few per-element functions below replace a formats.h function on the hot path; each
// one says why it returns the same bits, and they were compared with formats.h over
// every float input (every float x every random byte for stochastic rounding).
// They assume IEEE fp32 with denormals (no --use_fast_math / -ftz=true), as formats.h does.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/common.h"
#include "common/formats.h"
#include "common/philox.h"
#include "common/swizzle.h"
#include "common/tensor.h"

namespace qext {
namespace cuda_detail {

constexpr unsigned kFullMask = 0xFFFFFFFFu;

// ---- host side --------------------------------------------------------------

// x viewed as [rows, cols]: cols is the last dimension.
struct Dims {
  int64_t rows = 0, cols = 0;
};
inline Dims dims2d(const TensorWrapper& t) {
  Dims d;
  if (t.ndim() == 0) return d;
  d.cols = static_cast<int64_t>(t.dim(t.ndim() - 1));
  d.rows = d.cols == 0 ? 0 : static_cast<int64_t>(t.numel()) / d.cols;
  return d;
}

inline bool is_aligned(const void* p, uintptr_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

inline const float* noop_ptr(const QuantizationConfig& cfg) {
  return cfg.noop.empty() ? nullptr : cfg.noop.ptr<const float>();
}
inline const int64_t* rng_ptr(const QuantizationConfig& cfg) {
  return (cfg.stochastic_rounding && !cfg.rng_state.empty()) ? cfg.rng_state.ptr<const int64_t>()
                                                             : nullptr;
}

// Multiprocessors of the current device (sizes grid-stride launches; no sync).
inline int sm_count() {
  int dev = 0, n = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || n <= 0) {
    cudaGetLastError();  // leave no sticky error for the caller's launch check
    return 132;
  }
  return n;
}

inline unsigned grid_for(int64_t work_items, int threads, int max_blocks) {
  int64_t blocks = (work_items + threads - 1) / threads;
  if (blocks > max_blocks) blocks = max_blocks;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks);
}

// ---- no-op flag and RNG state (read on the device, never on the host) ----

__device__ __forceinline__ bool noop_set(const float* flag) {
  return flag != nullptr && *flag == 1.0f;
}

struct RngState {
  uint64_t seed = 0, offset = 0;
};
__device__ __forceinline__ RngState load_rng(const int64_t* state) {
  RngState s;
  if (state != nullptr) {
    s.seed = static_cast<uint64_t>(state[0]);
    s.offset = static_cast<uint64_t>(state[1]);
  }
  return s;
}

// ---- inputs -------------------------------------------------------------------

// Input element types: the storage type and an exact conversion to float.
struct InF32 {
  using storage = float;
  static __device__ __forceinline__ float to_float(float v) { return v; }
};
struct InBF16 {
  using storage = uint16_t;
  static __device__ __forceinline__ float to_float(uint16_t b) { return bf16_to_float(b); }
};
struct InF16 {
  using storage = uint16_t;
  // cvt.f32.f16 is exact (every half is a float); it equals fp16_to_float except
  // for NaN payloads, and NaN inputs are outside the contract.
  static __device__ __forceinline__ float to_float(uint16_t h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
  }
};

// Calls f(DType-specific input traits) for the wrapper's dtype; false if unsupported.
template <typename F>
bool dispatch_input(DType t, F&& f) {
  switch (t) {
    case DType::kFloat32: f(InF32{}); return true;
    case DType::kBFloat16: f(InBF16{}); return true;
    case DType::kFloat16: f(InF16{}); return true;
    default: return false;
  }
}

template <typename In>
__device__ __forceinline__ void unpack2(uint32_t w, float& lo, float& hi) {
  lo = In::to_float(static_cast<uint16_t>(w & 0xFFFFu));
  hi = In::to_float(static_cast<uint16_t>(w >> 16));
}
template <>
__device__ __forceinline__ void unpack2<InBF16>(uint32_t w, float& lo, float& hi) {
  lo = __uint_as_float(w << 16);
  hi = __uint_as_float(w & 0xFFFF0000u);
}

// Raw bits of 16 consecutive input elements, loaded as 16-byte vectors when `vec`
// (the address is then 16-byte aligned). Streaming loads: nothing re-reads them.
template <typename In>
struct Raw16 {
  static constexpr int kWords = 16 * static_cast<int>(sizeof(typename In::storage)) / 16;
  uint4 q[kWords];
};

template <typename In>
__device__ __forceinline__ void load_raw16(const typename In::storage* p, bool vec, Raw16<In>& r) {
  if (vec) {
#pragma unroll
    for (int i = 0; i < Raw16<In>::kWords; ++i) {
      r.q[i] = __ldcs(reinterpret_cast<const uint4*>(p) + i);
    }
  } else {
    typename In::storage tmp[16];
#pragma unroll
    for (int i = 0; i < 16; ++i) tmp[i] = p[i];
    memcpy(&r, tmp, sizeof(tmp));
  }
}

template <typename In>
__device__ __forceinline__ void raw_to_float(const Raw16<In>& r, float (&v)[16]) {
  if constexpr (sizeof(typename In::storage) == 4) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      v[4 * i + 0] = __uint_as_float(r.q[i].x);
      v[4 * i + 1] = __uint_as_float(r.q[i].y);
      v[4 * i + 2] = __uint_as_float(r.q[i].z);
      v[4 * i + 3] = __uint_as_float(r.q[i].w);
    }
  } else {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      unpack2<In>(r.q[i].x, v[8 * i + 0], v[8 * i + 1]);
      unpack2<In>(r.q[i].y, v[8 * i + 2], v[8 * i + 3]);
      unpack2<In>(r.q[i].z, v[8 * i + 4], v[8 * i + 5]);
      unpack2<In>(r.q[i].w, v[8 * i + 6], v[8 * i + 7]);
    }
  }
}

// Raw bits of row R0 + minor, columns C0 + 16 blk.. of x [M, K] (zeros outside x), the
// part of a 64 x 64 tile one thread of the tile kernels loads; whether the 16 elements
// are inside x (K % 16 == 0: a part is all in or all out).
template <typename In>
__device__ __forceinline__ bool load_part(const typename In::storage* __restrict__ x, int64_t M,
                                          int64_t K, int64_t R0, int64_t C0, int minor, int blk,
                                          bool vec, Raw16<In>& raw) {
  const int64_t r = R0 + minor, c = C0 + 16 * blk;
  if (r < M && c < K) {
    load_raw16<In>(x + r * K + c, vec, raw);
    return true;
  }
#pragma unroll
  for (int i = 0; i < Raw16<In>::kWords; ++i) raw.q[i] = make_uint4(0u, 0u, 0u, 0u);
  return false;
}

// ---- E2M1 codes on the hot path ----------------------------------------------
// The magnitude code (0..7) of v = element * multiplier; the sign goes in bit 3 (see
// e2m1_code_*). v is the result of an fp32 multiply: on the GPU a NaN there is the
// canonical positive NaN, which formats.h maps to code 7 as well. Both clamp |v| to
// 6 first (min.f32 returns 6 for a NaN): every |v| >= 6 gives 7 in formats.h, as does 6.

QEXT_HD int imax(int a, int b) { return a > b ? a : b; }

// The code of the E2M1 grid point at or below t, for 0 <= t < 8 (E2M1 is a float with
// one mantissa bit whose subnormals are 0 and 0.5): t * 2^-126 rounded toward zero has
// the code in bits 22-24. For t >= 1 the product is exact and normal, t = 2^E * 1.f
// (E = 0..2) giving exponent field E + 1, so bits >> 22 = 2E + 2 + f's first bit, the
// code of 1, 1.5, 2, 3, 4, 6; for t < 1 it is subnormal with bits floor(t * 2^23), so
// bits >> 22 = floor(2t), the code of 0 or 0.5. The shift is a multiply-high, so that
// it runs on the FMA pipe beside the ALU work of the callers.
__device__ __forceinline__ uint32_t e2m1_code_at_or_below(float t) {
  return __umulhi(float_bits(__fmul_rz(t, 0x1p-126f)), 1u << 10);  // bits >> 22
}

// float_to_e2m1_rn. Adding M = 2^22, 2^23 or 2^24 (2^22 times the binade of |v|,
// at least 1) rounds |v| to a multiple of the E2M1 spacing of its range (0.5 below 2,
// 1 below 4, 2 above) with ties to the even multiple, which is the even code: the
// thresholds and ties of formats.h exactly. Subtracting M again is exact and leaves
// that grid point (at most 6), whose code e2m1_code_at_or_below reads.
__device__ __forceinline__ uint32_t e2m1_mag_rn(float v) {
  const float a = fminf(fabsf(v), 6.0f);
  const int binade = static_cast<int>(float_bits(a) & 0x7F800000u);
  const float mf = bits_float(static_cast<uint32_t>(imax(binade + (22 << 23), 0x3F800000 + (22 << 23))));
  return e2m1_code_at_or_below((a + mf) - mf);
}

// float_to_e2m1_sr, given r = bits of the float 2^23 + 256 * byte (sr_random_bits).
// u * step(|v|) is formed exactly as (256 * byte) * (step * 2^-16), step read off the
// binade of |v|, and t = |v| + u * step is one fused multiply-add: the product is
// exact, so fma rounds the same sum formats.h rounds. Then
// min(floor(t / step(t)) * step(t), 6) is the E2M1 grid point at or below t (t < 8
// after the clamp). (Both compared with formats.h over every float x every random byte:
// bench/qext_kernels/exhaustive.cu.)
__device__ __forceinline__ uint32_t e2m1_mag_sr(float v, uint32_t r) {
  const float a = fminf(fabsf(v), 6.0f);
  const int binade = static_cast<int>(float_bits(a) & 0x7F800000u);
  const int step16 = imax(binade - 0x08800000, 0x37000000);  // step(a) * 2^-16
  const float t = fmaf(bits_float(r) - 8388608.0f, bits_float(static_cast<uint32_t>(step16)), a);
  return e2m1_code_at_or_below(t);
}

QEXT_HD uint32_t e2m1_sign(float v) { return (float_bits(v) >> 28) & 8u; }
__device__ __forceinline__ uint32_t e2m1_code_rn(float v) { return e2m1_mag_rn(v) | e2m1_sign(v); }
__device__ __forceinline__ uint32_t e2m1_code_sr(float v, uint32_t r) {
  return e2m1_mag_sr(v, r) | e2m1_sign(v);
}

// Bits of the float 2^23 + 256 * byte, for random byte k (0..3) of word w. `magic` is
// 0x4B000000, passed in a register (Nvfp4Consts::magic): with both operands constant
// the compiler keeps the selector in a register and rebuilds it for every element.
__device__ __forceinline__ uint32_t sr_random_bits(uint32_t w, int k, uint32_t magic) {
  return __byte_perm(w, magic, 0x7504u | (k << 4));
}

// ---- E4M3 ----------------------------------------------------------------------

// float_to_e4m3 for two values, packed (lo in byte 0). On sm_89+ the hardware
// conversion rounds to nearest even and saturates to +-448 exactly as formats.h does
// (compared over every float; a NaN in is canonical here and gives 0x7F as well).
__device__ __forceinline__ uint32_t e4m3x2(float lo, float hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  uint16_t r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
  return r;
#else
  return static_cast<uint32_t>(float_to_e4m3(lo)) |
         (static_cast<uint32_t>(float_to_e4m3(hi)) << 8);
#endif
}

// e4m3_to_float of a non-negative, non-NaN code without branches: the code's bits
// shifted into a float's exponent and mantissa are 2^-120 times its value (a
// denormal float when the code is subnormal), and scaling by 2^120 is exact.
__device__ __forceinline__ float e4m3_positive_to_float(uint32_t b) {
  return __uint_as_float(b << 20) * 0x1p120f;
}

// ---- NVFP4 block ----------------------------------------------------------------

// Per-tensor constants of one operand, made once per thread block (nvfp4_consts): the
// encode scale, and the element multiplier m for every scale byte, since
// m = min(1 / (float(s_b) * S_dec), FLT_MAX) depends only on s_b and S_dec. The table
// turns two IEEE divisions per 16-block into one shared-memory load.
struct Nvfp4Consts {
  float s_enc, s_dec;
  uint32_t magic;   // 0x4B000000, see sr_random_bits
  float mult[128];  // s_b is a non-negative E4M3 code: 0..0x7E
};

// Fills c[0] and c[1] for the tensor amax at amax0 and amax1 (nullptr: that operand is
// not produced). Every thread of the block calls it; it synchronises the block twice.
__device__ __forceinline__ void nvfp4_consts(Nvfp4Consts (&c)[2], const float* amax0,
                                             const float* amax1, int tid, int threads) {
  if (tid < 2) {
    const float* amax = tid == 0 ? amax0 : amax1;
    if (amax != nullptr) {
      c[tid].s_enc = nvfp4_encode_scale(*amax);
      c[tid].s_dec = 1.0f / c[tid].s_enc;
      c[tid].magic = 0x4B000000u;
    }
  }
  __syncthreads();
  for (int i = tid; i < 256; i += threads) {
    const int which = i >> 7, b = i & 127;
    if ((which == 0 ? amax0 : amax1) != nullptr) {
      c[which].mult[b] = fminf(
          1.0f / (e4m3_positive_to_float(static_cast<uint32_t>(b)) * c[which].s_dec), kFloatMax);
    }
  }
  __syncthreads();
}

// Quantizes one 16-element block: returns the 8 packed bytes (element 2i in the low
// nibble of byte i) and the E4M3 scale byte. `rnd` is used only with kSR.
// Same arithmetic as nvfp4_block_scale / nvfp4_block_multiplier in formats.h; the
// scale is non-negative, so its encode takes the branch-free form above.
template <bool kSR>
__device__ __forceinline__ uint2 nvfp4_block(const float (&v)[16], const Nvfp4Consts& c,
                                             const Philox4& rnd, uint32_t& scale_byte) {
  float bamax = 0.0f;
#pragma unroll
  for (int e = 0; e < 16; ++e) bamax = fmaxf(bamax, fabsf(v[e]));
  const uint32_t s_b = e4m3x2(fminf(bamax * c.s_enc / kE2M1Max, kFloatMax), 0.0f) & 0xFFu;
  const float m = c.mult[s_b & 0x7Fu];
  scale_byte = s_b;
  const uint32_t magic = c.magic;
  uint32_t packed[2] = {0u, 0u};
  float x[16];
#pragma unroll
  for (int e = 0; e < 16; ++e) {
    x[e] = v[e] * m;
    const uint32_t mag =
        kSR ? e2m1_mag_sr(x[e], sr_random_bits(rnd.w[e >> 2], e & 3, magic)) : e2m1_mag_rn(x[e]);
    packed[e >> 3] += mag << (4 * (e & 7));  // nibble e: the magnitude in bits 0-2
  }
  // Bit 3 of nibble e is the sign bit of x[e], the top bit of its byte 3: gathered four
  // at a time (odd nibbles end a byte, even ones sit 4 bits lower).
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float* y = x + 8 * h;
    const uint32_t odd = __byte_perm(__byte_perm(float_bits(y[1]), float_bits(y[3]), 0x0073u),
                                     __byte_perm(float_bits(y[5]), float_bits(y[7]), 0x0073u),
                                     0x5410u);
    const uint32_t even = __byte_perm(__byte_perm(float_bits(y[0]), float_bits(y[2]), 0x0073u),
                                      __byte_perm(float_bits(y[4]), float_bits(y[6]), 0x0073u),
                                      0x5410u);
    packed[h] |= (odd & 0x80808080u) | ((even >> 4) & 0x08080808u);
  }
  return make_uint2(packed[0], packed[1]);
}

}  // namespace cuda_detail
}  // namespace qext
