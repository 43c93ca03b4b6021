// MXFP8 quantization on CUDA: rowwise blocks of 32 along K and columnwise blocks of
// 32 along M, both from one read of x, with no shared memory.
//
// Both outputs have x's shape (the columnwise one is not transposed), so a thread can
// quantize both directions of what it loaded, from registers. A warp takes a strip of
// 32 rows: lane l holds kCols = 16 / sizeof(element) consecutive columns (one 16-byte
// load per row) of the kRows rows kRows * (l / kColLanes) .. of the strip, the
// kColLanes lanes l % kColLanes side by side along the rows. So
//  - a rowwise 32-block is kGroup = 32 / kCols adjacent lanes of one row: its amax is
//    a shuffle within the group, and each lane stores its kCols codes;
//  - a columnwise 32-block is one column of the kRowLanes lanes with the same
//    l % kColLanes: its amax is a shuffle across them, and each lane stores its kCols
//    codes of every row it holds.
// Every load is 16 bytes and every data store kCols bytes, both coalesced along rows.
// (Until 2026-12-01 the kernel went through a 64x64 shared-memory tile: bound by
// shared memory, L1 at 84%, at 0.61 of copy.)
#include "common/kernels.h"
#include <type_traits>

#include "launch.cuh"

namespace qext {
namespace cuda {

namespace {

using namespace cuda_detail;

constexpr int kWarps = 4;                  // per block, side by side along K
constexpr int kRows = 16;                  // rows per lane: a part of a columnwise block
constexpr int kRowLanes = 32 / kRows;      // lanes that share a column (its 32-block)
constexpr int kColLanes = 32 / kRowLanes;  // lanes side by side along a row

struct Mxfp8Operand {
  uint8_t* data = nullptr;   // nullptr: direction not produced
  uint8_t* scale = nullptr;
  int64_t scale_cols = 0;    // columns of the compact scale buffer
  int64_t swizzle_cols = 0;  // Cp of the (transposed, for columnwise) GEMM layout
  bool swizzled = false;
};

// mxfp8_exponent (formats.h) of a block amax b >= 0, not NaN. For 2^-116 <= b < inf
// (bits 0x05800000 .. 0x7F7FFFFF) the quotient b / 448 is a normal float, and its
// rounding never reaches a power of two, so e = ceil(log2(b / 448)): the exponent of b
// minus 8, plus one when b's significand exceeds 1.75 (0x600000): one add and a shift.
// Compared with formats.h over every float in that range; the rest takes formats.h.
// (Out of line: the rare case stays out of the unrolled loops' code.)
__device__ __noinline__ int block_exponent_slow(float b) { return mxfp8_exponent(b); }
__device__ __forceinline__ int block_exponent(float b) {
  const uint32_t u = __float_as_uint(b);
  if (u >= 0x05800000u && u < 0x7F800000u) return static_cast<int>((u + 0x1FFFFFu) >> 23) - 135;
  return block_exponent_slow(b);
}

// 2^-e for e in [-127, 127] (exp2_from_bits(-e)): a normal float except 2^-127.
__device__ __forceinline__ float inv_scale(int e) {
  return e >= 127 ? __uint_as_float(0x00400000u) : __uint_as_float(static_cast<uint32_t>(127 - e) << 23);
}

// Codes of kCols values times their inverse scales, as kCols / 4 words (byte j is value j).
// v * 2^-e is the correctly rounded v / 2^e (formats.h divides): the same float.
template <int kCols>
__device__ __forceinline__ void encode(const float (&v)[kCols], const float (&inv)[kCols],
                                       uint32_t (&w)[kCols / 4]) {
#pragma unroll
  for (int i = 0; i < kCols / 4; ++i) {
    w[i] = e4m3x2(v[4 * i] * inv[4 * i], v[4 * i + 1] * inv[4 * i + 1]) |
           (e4m3x2(v[4 * i + 2] * inv[4 * i + 2], v[4 * i + 3] * inv[4 * i + 3]) << 16);
  }
}

template <int kCols, bool kVec>
__device__ __forceinline__ void store_codes(uint8_t* dst, const uint32_t (&w)[kCols / 4]) {
  if constexpr (kVec) {
    if constexpr (kCols == 8) *reinterpret_cast<uint2*>(dst) = make_uint2(w[0], w[1]);
    else *reinterpret_cast<uint32_t*>(dst) = w[0];
  } else {
#pragma unroll
    for (int b = 0; b < kCols; ++b) dst[b] = static_cast<uint8_t>(w[b / 4] >> (8 * (b % 4)));
  }
}

template <typename In, bool kVec>
__device__ __forceinline__ void load16(const typename In::storage* p, uint4& q) {
  if constexpr (kVec) {
    q = __ldcs(reinterpret_cast<const uint4*>(p));  // streaming: nothing re-reads x
  } else {
    typename In::storage tmp[16 / sizeof(typename In::storage)];
#pragma unroll
    for (int i = 0; i < static_cast<int>(16 / sizeof(tmp[0])); ++i) tmp[i] = p[i];
    memcpy(&q, tmp, sizeof(q));
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

// Per-column amax of kCols columns, accumulated row by row. bf16 keeps it packed (one
// HMNMX2 per two elements, no unpacking); other inputs as floats.
template <typename In, int kCols>
struct ColAmax {
  float a[kCols];
  __device__ __forceinline__ void init() {
#pragma unroll
    for (int j = 0; j < kCols; ++j) a[j] = 0.0f;
  }
  __device__ __forceinline__ void add(const float (&v)[kCols], const uint4&) {
#pragma unroll
    for (int j = 0; j < kCols; ++j) a[j] = fmaxf(a[j], fabsf(v[j]));
  }
  __device__ __forceinline__ float get(int j) const { return a[j]; }
};
template <>
struct ColAmax<InBF16, 8> {
  uint32_t w[4];
  __device__ __forceinline__ void init() { w[0] = w[1] = w[2] = w[3] = 0u; }
  __device__ __forceinline__ void add(const float (&)[8], const uint4& q) {
    w[0] = absmax_bf16x2(w[0], q.x), w[1] = absmax_bf16x2(w[1], q.y);
    w[2] = absmax_bf16x2(w[2], q.z), w[3] = absmax_bf16x2(w[3], q.w);
  }
  // The accumulator starts at +0, so a NaN never survives (max returns the other).
  __device__ __forceinline__ float get(int j) const {
    return absmax_value(w[j / 2], j & 1);
  }
};

// amax(|v|) of one row's kCols values (a non-negative float, NaN ignored as fmaxf does).
template <typename In, int kCols>
__device__ __forceinline__ float row_amax(const float (&v)[kCols], const uint4& q) {
  if constexpr (std::is_same<In, InBF16>::value) {
    const uint32_t m = absmax_bf16x2(absmax_bf16x2(q.x, q.y), absmax_bf16x2(q.z, q.w));
    // fmaxf with +0 first: a NaN half (both of its pair NaN) is dropped.
    return fmaxf(fmaxf(0.0f, absmax_value(m, 0)), absmax_value(m, 1));
  } else {
    float b = 0.0f;
#pragma unroll
    for (int j = 0; j < kCols; ++j) b = fmaxf(b, fabsf(v[j]));
    return b;
  }
}

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

// kVec: x is 16-byte aligned, the data buffers 8-byte aligned and the columnwise
// scales too (M % 32 == K % 32 == 0 keeps every row start aligned).
template <typename In, bool kVec>
__global__ void __launch_bounds__(kWarps * 32)
    mxfp8_kernel(const typename In::storage* __restrict__ x, int64_t M, int64_t K,
                 int64_t first_strip, Mxfp8Operand row, Mxfp8Operand col,
                 const float* noop) {
  constexpr int kCols = 16 / static_cast<int>(sizeof(typename In::storage));
  constexpr int kGroup = 32 / kCols;  // lanes of one rowwise block
  static_assert(kGroup <= kColLanes, "a rowwise block must lie in one row of lanes");
  if (noop_set(noop)) return;
  const int lane = threadIdx.x & 31, part = lane / kColLanes;
  const int64_t m0 = (first_strip + blockIdx.y) * 32 + kRows * part;
  const int64_t c = (static_cast<int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5)) * kColLanes * kCols +
                    (lane % kColLanes) * kCols;
  // K % 32 == 0: a rowwise block is all in x or all out; lanes outside load zeros and
  // store nothing, but take part in every shuffle.
  const bool valid = c < K;

  const typename In::storage* src = x + m0 * K + c;
  uint4 raw[kRows];
#pragma unroll
  for (int i = 0; i < kRows; ++i) {
    if (valid) load16<In, kVec>(src + i * K, raw[i]);
    else raw[i] = make_uint4(0u, 0u, 0u, 0u);
  }

  float cinv[kCols];  // columnwise inverse scales
  if (col.data != nullptr) {
    ColAmax<In, kCols> camax;
    camax.init();
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      float v[kCols];
      to_float<In, kCols>(raw[i], v);
      camax.add(v, raw[i]);
    }
    uint32_t sbytes[kCols / 4] = {};
#pragma unroll
    for (int j = 0; j < kCols; ++j) {
      float a = camax.get(j);
#pragma unroll
      for (int s = kColLanes; s < 32; s <<= 1) a = fmaxf(a, __shfl_xor_sync(kFullMask, a, s));
      const int e = block_exponent(a);
      cinv[j] = inv_scale(e);
      sbytes[j / 4] |= static_cast<uint32_t>(e + 127) << (8 * (j % 4));
    }
    if (valid && part == 0) {  // scales [roundup(M/32, 4), roundup(K, 128)], swizzled as the transpose
      const int64_t i = m0 / 32;
      if (col.swizzled) {
#pragma unroll
        for (int j = 0; j < kCols; ++j) {
          col.scale[swizzle_offset(c + j, i, col.swizzle_cols)] =
              static_cast<uint8_t>(sbytes[j / 4] >> (8 * (j % 4)));
        }
      } else {
        store_codes<kCols, kVec>(col.scale + i * col.scale_cols + c, sbytes);
      }
    }
  }

  // Rowwise scale of row m0 + i at rscale + i * rstride: m0 % kRows == 0, so the kRows
  // rows share their 128- and 32-row groups, and the GEMM layout steps 16 bytes a row.
  uint8_t* rscale = nullptr;
  int64_t rstride = 0;
  if (row.data != nullptr) {
    const int64_t j = c / kMxfp8Block;
    rscale = row.scale + (row.swizzled ? static_cast<int64_t>(swizzle_offset(m0, j, row.swizzle_cols))
                                       : m0 * row.scale_cols + j);
    rstride = row.swizzled ? 16 : row.scale_cols;
  }
  uint8_t* rdst = row.data != nullptr ? row.data + m0 * K + c : nullptr;
  uint8_t* cdst = col.data != nullptr ? col.data + m0 * K + c : nullptr;
#pragma unroll
  for (int i = 0; i < kRows; ++i) {
    float v[kCols];
    to_float<In, kCols>(raw[i], v);
    if (row.data != nullptr) {
      float bamax = row_amax<In, kCols>(v, raw[i]);
#pragma unroll
      for (int s = 1; s < kGroup; s <<= 1) bamax = fmaxf(bamax, __shfl_xor_sync(kFullMask, bamax, s));
      const int e = block_exponent(bamax);
      float rinv[kCols];
#pragma unroll
      for (int j = 0; j < kCols; ++j) rinv[j] = inv_scale(e);
      uint32_t w[kCols / 4];
      encode<kCols>(v, rinv, w);
      if (valid) {
        store_codes<kCols, kVec>(rdst + i * K, w);
        if ((lane & (kGroup - 1)) == 0) rscale[i * rstride] = static_cast<uint8_t>(e + 127);
      }
    }
    if (col.data != nullptr && valid) {
      uint32_t w[kCols / 4];
      encode<kCols>(v, cinv, w);
      store_codes<kCols, kVec>(cdst + i * K, w);
    }
  }
}

}  // namespace

void mxfp8_quantize(const TensorWrapper& x, const TensorWrapper& data_r,
                    const TensorWrapper& scale_r, const TensorWrapper& data_c,
                    const TensorWrapper& scale_c, const QuantizationConfig& cfg, Stream stream) {
  const Dims d = dims2d(x);
  const int64_t M = d.rows, K = d.cols;  // both multiples of 32 (checked by the caller)
  Mxfp8Operand row, col;
  if (!data_r.empty()) {
    row.data = data_r.ptr<uint8_t>();
    row.scale = scale_r.ptr<uint8_t>();
    row.scale_cols = static_cast<int64_t>(roundup(static_cast<size_t>(K / kMxfp8Block), 4));
    row.swizzle_cols = row.scale_cols;
    row.swizzled = cfg.swizzled_scales;
  }
  if (!data_c.empty()) {
    // Scales [roundup(M/32, 4), roundup(K, 128)]; the GEMM layout is that of their
    // transpose, whose rows have roundup(M/32, 4) columns.
    col.data = data_c.ptr<uint8_t>();
    col.scale = scale_c.ptr<uint8_t>();
    col.scale_cols = static_cast<int64_t>(roundup(static_cast<size_t>(K), 128));
    col.swizzle_cols = static_cast<int64_t>(roundup(static_cast<size_t>(M / kMxfp8Block), 4));
    col.swizzled = cfg.swizzled_scales;
  }
  if (row.data == nullptr && col.data == nullptr) return;
  const int64_t strips = M / 32;
  if (strips == 0 || K == 0) return;
  dispatch_input(x.dtype(), [&](auto in) {
    using In = decltype(in);
    const typename In::storage* p = x.ptr<const typename In::storage>();
    constexpr int64_t kBlockCols = kWarps * kColLanes * (16 / sizeof(typename In::storage));
    // Codes go out as 4- or 8-byte words, the compact columnwise scales too
    // (scale_cols % 128 == 0 keeps each row's start aligned).
    const bool vec = is_aligned(p, 16) && (row.data == nullptr || is_aligned(row.data, 8)) &&
                     (col.data == nullptr || (is_aligned(col.data, 8) && is_aligned(col.scale, 8)));
    const int64_t blocks_k = (K + kBlockCols - 1) / kBlockCols;
    // gridDim.y is at most 65535: taller inputs go in bands of 32-row strips.
    constexpr int64_t kBand = 65535;
    for (int64_t first = 0; first < strips; first += kBand) {
      const int64_t n = strips - first < kBand ? strips - first : kBand;
      const dim3 grid(static_cast<unsigned>(blocks_k), static_cast<unsigned>(n));
      auto kernel = vec ? mxfp8_kernel<In, true> : mxfp8_kernel<In, false>;
      kernel<<<grid, kWarps * 32, 0, stream>>>(p, M, K, first, row, col, noop_ptr(cfg));
    }
  });
}

}  // namespace cuda
}  // namespace qext
