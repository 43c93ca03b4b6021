// The NVFP4 tile kernel: rowwise and columnwise operands of x from a single read of x,
// from registers (internal to csrc/cuda; used by nvfp4.cu and nvfp4_fused.cu).
//
// A warp takes a tile of 64 rows x 8 kCols columns of x, kCols = 16 / sizeof(element)
// (one 16-byte load per row): lane l holds columns kCols * (l % 8) .. of the 16 rows
// 16 * (l / 8) .. of the tile. So
//  - each of its kCols columns is a whole columnwise block (16 rows of x: a block of a
//    row of x^T, RHT applied first on the fused path), quantized in the lane; the four
//    lanes of a column store 32 contiguous bytes of x^T's row and one word of scales;
//  - a rowwise block (16 columns of a row) is kG = 16 / kCols adjacent lanes: its amax
//    is a shuffle, each lane quantizes its kCols elements, and the block's Philox draw
//    is made once, by one of the kG lanes (each draws for one row in kG), and handed
//    to the others by shuffles.
// Persistent blocks of 4 warps, each warp walking tiles on its own. (Until 2026-12-01
// the kernel went through a shared-memory tile: bound by instruction issue, and
// 98 us of its 172 were the tile, loads and stores alone.)
#pragma once

#include <type_traits>

#include "common/rht.h"
#include "launch.cuh"

namespace qext {
namespace cuda_detail {

constexpr int kTileRows = 64;
constexpr int kTileWarps = 4;
constexpr int kTileThreads = 32 * kTileWarps;
constexpr int kTileMinBlocks = 4;  // caps registers at 128 per thread: 16 warps per SM

// Columns per lane, lanes and Philox words (per lane) of a rowwise block, tile width.
template <typename In>
struct TileShape {
  static constexpr int kCols = 16 / static_cast<int>(sizeof(typename In::storage));
  static constexpr int kG = 16 / kCols;
  static constexpr int kW = 4 / kG;
  static constexpr int kTileCols = 8 * kCols;
};

// One output operand [R, C] of the tile kernel; data == nullptr: not produced.
struct Nvfp4Operand {
  uint8_t* data = nullptr;
  uint8_t* scale = nullptr;
  const float* amax = nullptr;
  const float* noop = nullptr;
  const int64_t* rng = nullptr;  // [seed, offset]; nullptr: round to nearest
  uint64_t item_base = 0;        // Philox item of block 0 of row 0
  int64_t scale_cols = 0;        // roundup(C / 16, 4)
  bool swizzled = false;         // scales in the GEMM layout
  bool data_vec = false;         // data is 8-byte aligned
  bool scale_vec = false;        // scale is 4-byte aligned
};

inline Nvfp4Operand make_operand(const TensorWrapper& amax, const TensorWrapper& data,
                                 const TensorWrapper& scale, const QuantizationConfig& cfg,
                                 int64_t cols) {
  Nvfp4Operand op;
  if (data.empty()) return op;
  op.data = data.ptr<uint8_t>();
  op.scale = scale.ptr<uint8_t>();
  op.amax = amax.ptr<const float>();
  op.noop = noop_ptr(cfg);
  op.rng = rng_ptr(cfg);
  op.item_base = cfg.rng_item_base;
  op.scale_cols = static_cast<int64_t>(roundup(static_cast<size_t>(cols / 16), 4));
  op.swizzled = cfg.swizzled_scales;
  op.data_vec = is_aligned(op.data, 8);
  op.scale_vec = is_aligned(op.scale, 4);
  return op;
}

// Stores the n = 2, 4 or 8 data bytes in w0, w1: one store when kVec (aligned).
template <int n, bool kVec>
__device__ __forceinline__ void store_data(uint8_t* dst, uint32_t w0, uint32_t w1) {
  if constexpr (kVec && n == 8) {
    *reinterpret_cast<uint2*>(dst) = make_uint2(w0, w1);
  } else if constexpr (kVec && n == 4) {
    *reinterpret_cast<uint32_t*>(dst) = w0;
  } else if constexpr (kVec) {
    *reinterpret_cast<uint16_t*>(dst) = static_cast<uint16_t>(w0);
  } else {
#pragma unroll 1
    for (int b = 0; b < n; ++b) dst[b] = static_cast<uint8_t>((b < 4 ? w0 : w1) >> (8 * (b & 3)));
  }
}

// Scale bytes of blocks j0 .. j0 + n - 1 of row i (byte b of s; j0 % n == 0, n = 2 or
// 4), of which the first `valid` exist. Compact and GEMM layouts keep them contiguous.
template <int n, bool kVec>
__device__ __forceinline__ void store_scales(const Nvfp4Operand& op, int64_t i, int64_t j0,
                                             uint32_t s, int valid) {
  uint8_t* dst = op.scale + (op.swizzled ? static_cast<int64_t>(swizzle_offset(i, j0, op.scale_cols))
                                         : i * op.scale_cols + j0);
  if (kVec && valid >= n) {
    if constexpr (n == 4) *reinterpret_cast<uint32_t*>(dst) = s;
    else *reinterpret_cast<uint16_t*>(dst) = static_cast<uint16_t>(s);
  } else {
#pragma unroll 1
    for (int b = 0; b < n && b < valid; ++b) dst[b] = static_cast<uint8_t>(s >> (8 * b));
  }
}

// Word u of a Philox draw, u known only at run time (selects, no local memory).
__device__ __forceinline__ uint32_t pick_word(const Philox4& d, int u) {
  return u == 0 ? d.w[0] : u == 1 ? d.w[1] : u == 2 ? d.w[2] : d.w[3];
}

// Tile number t of the walk -> its first row and column. The walk goes backwards
// through x: the amax pass that precedes this kernel ended at the end of x, most
// likely still in L2.
struct TileOrigin {
  int64_t R0, C0;
};
__device__ __forceinline__ TileOrigin tile_origin(uint32_t t, uint32_t tiles, uint32_t tiles_k,
                                                  int tile_cols) {
  const uint32_t idx = tiles - 1 - t;
  return TileOrigin{static_cast<int64_t>(idx / tiles_k) * kTileRows,
                    static_cast<int64_t>(idx % tiles_k) * tile_cols};
}

// row: operand x [M, K]; col: operand x^T [K, M] (RHT(x^T) with kRhtCol). kVec: x is
// 16-byte aligned, the data 8-byte and the scales 4-byte aligned (the other kernel
// takes byte loads and stores, out of the fast one's code). kQuantize = false: bench/qext_kernels/tile_ceiling.cu's stripped
// kernel (no amax, scale or rounding: each value's bits XORed into the same stores).
template <typename In, bool kVec, bool kSrRow, bool kSrCol, bool kRhtCol, bool kQuantize = true>
__global__ void __launch_bounds__(kTileThreads, kTileMinBlocks)
    nvfp4_tile_kernel(const typename In::storage* __restrict__ x, int64_t M, int64_t K,
                      uint32_t tiles_k, uint32_t tiles, Nvfp4Operand row, Nvfp4Operand col) {
  using S = TileShape<In>;
  constexpr int kCols = S::kCols, kG = S::kG, kW = S::kW;
  const bool do_row = row.data != nullptr && !noop_set(row.noop);
  const bool do_col = col.data != nullptr && !noop_set(col.noop);
  if (!do_row && !do_col) return;
  __shared__ Nvfp4Consts consts[2];  // rowwise, columnwise
  nvfp4_consts(consts, do_row ? row.amax : nullptr, do_col ? col.amax : nullptr, threadIdx.x,
               kTileThreads);
  const RngState rng_row = kSrRow ? load_rng(row.rng) : RngState{};
  const RngState rng_col = kSrCol ? load_rng(col.rng) : RngState{};
  const uint32_t magic = consts[do_row ? 0 : 1].magic;  // (set only for a produced operand)

  const int lane = threadIdx.x & 31, rq = lane >> 3, cl = lane & 7;
  const int part = cl % kG;  // this lane's part of a rowwise block
#pragma unroll 1
  for (uint32_t t = blockIdx.x * kTileWarps + (threadIdx.x >> 5); t < tiles;
       t += gridDim.x * kTileWarps) {
    const TileOrigin o = tile_origin(t, tiles, tiles_k, S::kTileCols);
    const int64_t m0 = o.R0 + 16 * rq, c = o.C0 + kCols * cl;
    // M % 16 == K % 16 == 0: a lane's rows, and a block's columns, are all in x or all out.
    const bool rows_in = m0 < M, cols_in = c < K, valid = rows_in && cols_in;
    uint4 raw[16];
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      raw[i] = valid ? load16<In>(x + (m0 + i) * K + c, kVec) : make_uint4(0u, 0u, 0u, 0u);
    }

    if (do_col) {  // the same for the whole block
      const Nvfp4Consts& cc = consts[1];
      uint32_t pamax[4] = {0u, 0u, 0u, 0u};  // bf16 without RHT: column amaxes, packed
      if constexpr (std::is_same<In, InBF16>::value && !kRhtCol && kQuantize) {
#pragma unroll
        for (int i = 0; i < 16; ++i) {
          pamax[0] = absmax_bf16x2(pamax[0], raw[i].x), pamax[1] = absmax_bf16x2(pamax[1], raw[i].y);
          pamax[2] = absmax_bf16x2(pamax[2], raw[i].z), pamax[3] = absmax_bf16x2(pamax[3], raw[i].w);
        }
      }
      uint32_t sbytes[kCols];
#pragma unroll
      for (int j = 0; j < kCols; ++j) {
        const int64_t k = c + j;  // row of x^T
        float v[16];
#pragma unroll
        for (int i = 0; i < 16; ++i) {
          float r[kCols];
          to_float<In, kCols>(raw[i], r);
          v[i] = r[j];
        }
        if constexpr (kRhtCol) {
          float w[16];
#pragma unroll
          for (int i = 0; i < 16; ++i) w[i] = rht_row(v, i);
#pragma unroll
          for (int i = 0; i < 16; ++i) v[i] = w[i];
        }
        Philox4 d{};
        if (kSrCol) d = philox4x32_10(rng_col.seed, rng_col.offset,
                                      col.item_base + static_cast<uint64_t>(k * (M / 16) + m0 / 16));
        uint32_t lo, hi, sb;
        if constexpr (kQuantize) {
          float bamax = 0.0f;
          if constexpr (std::is_same<In, InBF16>::value && !kRhtCol) {
            bamax = absmax_value(pamax[j / 2], j & 1);
          } else {
#pragma unroll
            for (int i = 0; i < 16; ++i) bamax = fmaxf(bamax, fabsf(v[i]));
          }
          const float m = nvfp4_scale(bamax, cc, sb);
          lo = e2m1_pack<kSrCol, 8>(v, m, d.w, magic);
          hi = e2m1_pack<kSrCol, 8>(v + 8, m, d.w + 2, magic);
        } else {
          lo = d.w[0] ^ d.w[1], hi = d.w[2] ^ d.w[3];
#pragma unroll
          for (int i = 0; i < 8; ++i) lo ^= float_bits(v[i]), hi ^= float_bits(v[8 + i]);
          sb = lo & 0x7Fu;
        }
        if (valid) store_data<8, kVec>(col.data + k * (M / 2) + m0 / 2, lo, hi);
        sbytes[j] = sb;
      }
      // Column k's four blocks are held by lanes cl, cl + 8, cl + 16, cl + 24.
#pragma unroll
      for (int j = 0; j < kCols; ++j) {
        uint32_t s = sbytes[j] << (8 * rq);
        s |= __shfl_xor_sync(kFullMask, s, 8);
        s |= __shfl_xor_sync(kFullMask, s, 16);
        if (rq == 0 && cols_in) {
          const int64_t nb = (M - o.R0) / 16;  // blocks of the column in x
          store_scales<4, kVec>(col, c + j, o.R0 / 16, s, nb < 4 ? static_cast<int>(nb) : 4);
        }
      }
    }

    if (do_row) {
      const Nvfp4Consts& rc = consts[0];
      const int64_t jb = c / 16;  // this lane's block of its rows
      const int64_t item0 = static_cast<int64_t>(row.item_base) + m0 * (K / 16) + jb;
#pragma unroll
      for (int i0 = 0; i0 < 16; i0 += kG) {
        // Words kW * part .. of the draws of rows i0 .. i0 + kG - 1: this lane draws for
        // row i0 + part; in round s the lane part ^ s hands over its words for our part.
        uint32_t rw[kG][kW];
        if (kSrRow) {
          const Philox4 d = philox4x32_10(rng_row.seed, rng_row.offset,
                                          static_cast<uint64_t>(item0 + (i0 + part) * (K / 16)));
#pragma unroll
          for (int s = 0; s < kG; ++s) {
#pragma unroll
            for (int u = 0; u < kW; ++u) {
              const uint32_t send = pick_word(d, (part ^ s) * kW + u);
              const uint32_t got = s == 0 ? send : __shfl_xor_sync(kFullMask, send, s);
#pragma unroll
              for (int g = 0; g < kG; ++g) {
                if ((part ^ s) == g) rw[g][u] = got;  // the draw of row i0 + (part ^ s)
              }
            }
          }
        }
#pragma unroll
        for (int g = 0; g < kG; ++g) {
          const int64_t r = m0 + i0 + g;
          float v[kCols];
          to_float<In, kCols>(raw[i0 + g], v);
          uint32_t bits, sb;
          if constexpr (kQuantize) {
            float bamax = 0.0f;
            if constexpr (std::is_same<In, InBF16>::value) {
              const uint4& q = raw[i0 + g];
              const uint32_t pm = absmax_bf16x2(absmax_bf16x2(q.x, q.y), absmax_bf16x2(q.z, q.w));
              // fmaxf with +0 first: a NaN half (both of its pair NaN) is dropped, as fmaxf would.
              bamax = fmaxf(fmaxf(0.0f, absmax_value(pm, 0)), absmax_value(pm, 1));
            } else {
#pragma unroll
              for (int e = 0; e < kCols; ++e) bamax = fmaxf(bamax, fabsf(v[e]));
            }
#pragma unroll
            for (int s = 1; s < kG; s <<= 1) bamax = fmaxf(bamax, __shfl_xor_sync(kFullMask, bamax, s));
            const float m = nvfp4_scale(bamax, rc, sb);
            bits = e2m1_pack<kSrRow, kCols>(v, m, rw[g], magic);
          } else {
            bits = kSrRow ? rw[g][0] : 0u;
#pragma unroll
            for (int e = 0; e < kCols; ++e) bits ^= float_bits(v[e]);
            sb = bits & 0x7Fu;
          }
          if (valid) store_data<kCols / 2, kVec>(row.data + r * (K / 2) + c / 2, bits, 0u);
          // Row r's 8 / kG blocks in this tile are held by lanes kG apart.
          uint32_t s = sb << (8 * (cl / kG));
#pragma unroll
          for (int sh = kG; sh < 8; sh <<= 1) s |= __shfl_xor_sync(kFullMask, s, sh);
          if (cl == 0 && rows_in) {
            const int64_t nb = (K - o.C0) / 16;  // blocks of the row in x
            store_scales<8 / kG, kVec>(row, r, o.C0 / 16, s, nb < 8 / kG ? static_cast<int>(nb) : 8 / kG);
          }
        }
      }
    }
  }
}

// Blocks of the persistent tile kernel: as many as fit on the device at once (at most
// one warp per tile).
template <typename Kernel>
unsigned tile_blocks(Kernel kernel, int64_t tiles) {
  int per_sm = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kTileThreads, 0) !=
          cudaSuccess ||
      per_sm <= 0) {
    cudaGetLastError();  // leave no sticky error for the caller's launch check
    per_sm = kTileMinBlocks;
  }
  const int64_t most = static_cast<int64_t>(sm_count()) * per_sm;
  const int64_t need = (tiles + kTileWarps - 1) / kTileWarps;
  return static_cast<unsigned>(need < most ? need : most);
}

// Launches the tile kernel over x [M, K] (M % 16 == K % 16 == 0) for the operands
// present, picking rounding per operand from whether it has an RNG state.
template <typename In, bool kRhtCol, bool kQuantize = true>
void launch_nvfp4_tiles(const typename In::storage* x, int64_t M, int64_t K,
                        const Nvfp4Operand& row, const Nvfp4Operand& col, cudaStream_t stream) {
  constexpr int64_t kTileCols = TileShape<In>::kTileCols;
  const int64_t tiles_m = (M + kTileRows - 1) / kTileRows, tiles_k = (K + kTileCols - 1) / kTileCols;
  if (tiles_m == 0 || tiles_k == 0 || (row.data == nullptr && col.data == nullptr)) return;
  // Tile numbers are 32-bit, with room for the walk's last step: 2^31 tiles would be
  // 2^42 elements.
  const int64_t tiles = tiles_m * tiles_k;
  if (tiles > (int64_t{1} << 31)) return;
  const auto aligned = [](const Nvfp4Operand& op) {
    return op.data == nullptr || (op.data_vec && op.scale_vec);
  };
  const bool vec = is_aligned(x, 16) && aligned(row) && aligned(col);
  const bool sr_r = row.data != nullptr && row.rng != nullptr;
  const bool sr_c = col.data != nullptr && col.rng != nullptr;
  const auto pick = [&](auto kv) {
    constexpr bool kV = decltype(kv)::value;
    auto k = nvfp4_tile_kernel<In, kV, false, false, kRhtCol, kQuantize>;
    if (sr_r && sr_c) k = nvfp4_tile_kernel<In, kV, true, true, kRhtCol, kQuantize>;
    else if (sr_r) k = nvfp4_tile_kernel<In, kV, true, false, kRhtCol, kQuantize>;
    else if (sr_c) k = nvfp4_tile_kernel<In, kV, false, true, kRhtCol, kQuantize>;
    return k;
  };
  auto kernel = vec ? pick(std::true_type{}) : pick(std::false_type{});
  kernel<<<tile_blocks(kernel, tiles), kTileThreads, 0, stream>>>(
      x, M, K, static_cast<uint32_t>(tiles_k), static_cast<uint32_t>(tiles), row, col);
}

}  // namespace cuda_detail
}  // namespace qext
