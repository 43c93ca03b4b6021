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

// 16 bytes of x (8 or 4 consecutive elements of one row) as raw bits: one 16-byte load
// when `vec` (the address is then 16-byte aligned). Streaming: nothing re-reads x.
template <typename In>
__device__ __forceinline__ uint4 load16(const typename In::storage* p, bool vec) {
  if (vec) return __ldcs(reinterpret_cast<const uint4*>(p));
  typename In::storage tmp[16 / sizeof(typename In::storage)];
#pragma unroll
  for (int i = 0; i < static_cast<int>(16 / sizeof(tmp[0])); ++i) tmp[i] = p[i];
  uint4 q;
  memcpy(&q, tmp, sizeof(q));
  return q;
}

// The kCols = 16 / sizeof(element) values of a load16.
template <typename In, int kCols>
__device__ __forceinline__ void to_float(const uint4& q, float (&v)[kCols]) {
  if constexpr (kCols == 4) {
    v[0] = __uint_as_float(q.x), v[1] = __uint_as_float(q.y);
    v[2] = __uint_as_float(q.z), v[3] = __uint_as_float(q.w);
  } else {
    unpack2<In>(q.x, v[0], v[1]);
    unpack2<In>(q.y, v[2], v[3]);
    unpack2<In>(q.z, v[4], v[5]);
    unpack2<In>(q.w, v[6], v[7]);
  }
}

// max(|a|, |b|) of each bf16 half, with the xor of the two signs as its sign (one
// HMNMX2; absmax_value drops the sign). Exact, and like fmaxf it returns the other
// operand where one is NaN: a NaN only where both are.
__device__ __forceinline__ uint32_t absmax_bf16x2(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("max.xorsign.abs.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
// |half h| of a packed absmax result as a float.
__device__ __forceinline__ float absmax_value(uint32_t m, int h) {
  return __uint_as_float(h ? m & 0x7FFF0000u : (m << 16) & 0x7FFF0000u);
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

// The E4M3 scale byte of a block with amax bamax and its element multiplier (formats.h's
// nvfp4_block_scale and nvfp4_block_multiplier; the scale is non-negative, so its
// encode takes the branch-free form above, and the multiplier comes from the table).
__device__ __forceinline__ float nvfp4_scale(float bamax, const Nvfp4Consts& c, uint32_t& s_b) {
  s_b = e4m3x2(fminf(bamax * c.s_enc / kE2M1Max, kFloatMax), 0.0f) & 0xFFu;
  return c.mult[s_b & 0x7Fu];
}

// E2M1 codes of N = 4 or 8 values of a block times its multiplier m, packed: element
// 2i in the low nibble of byte i. With kSR, element e takes random byte e & 3 of
// rw[e >> 2] (the block's Philox words for these elements).
template <bool kSR, int N>
__device__ __forceinline__ uint32_t e2m1_pack(const float* v, float m, const uint32_t* rw,
                                              uint32_t magic) {
  static_assert(N == 4 || N == 8, "4 or 8 values");
  uint32_t packed = 0u;
  uint32_t b[N];  // bits of the scaled values: their signs
#pragma unroll
  for (int e = 0; e < N; ++e) {
    const float x = v[e] * m;
    b[e] = float_bits(x);
    const uint32_t mag =
        kSR ? e2m1_mag_sr(x, sr_random_bits(rw[e >> 2], e & 3, magic)) : e2m1_mag_rn(x);
    packed += mag << (4 * e);  // nibble e: the magnitude in bits 0-2
  }
  // Bit 3 of nibble e is the sign bit of x[e], the top bit of its byte 3: gathered four
  // at a time (odd nibbles end a byte, even ones sit 4 bits lower).
  uint32_t odd = __byte_perm(b[1], b[3], 0x0073u), even = __byte_perm(b[0], b[2], 0x0073u);
  if constexpr (N == 8) {
    odd = __byte_perm(odd, __byte_perm(b[5], b[7], 0x0073u), 0x5410u);
    even = __byte_perm(even, __byte_perm(b[4], b[6], 0x0073u), 0x5410u);
    return packed | (odd & 0x80808080u) | ((even >> 4) & 0x08080808u);
  }
  return packed | (odd & 0x8080u) | ((even >> 4) & 0x0808u);
}

}  // namespace cuda_detail
}  // namespace qext
