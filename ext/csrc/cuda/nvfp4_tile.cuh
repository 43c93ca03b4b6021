// The NVFP4 tile kernel: rowwise and columnwise operands of one 64x64 tile of x from
// a single read of x (internal to csrc/cuda; used by nvfp4.cu and nvfp4_fused.cu).
//
// Persistent blocks of 256 threads, each walking tiles (one at a time, the next one's
// loads in flight). Thread (warp w, lane l) has minor = 8w + (l & 7) and blk = l >> 3:
//  - as a loader it reads row `minor` of the tile, columns 16*blk..16*blk+15 (two or
//    four 16-byte loads), quantizes that rowwise block from registers, and stores it
//    to shared memory;
//  - as a column reader it takes column `minor`, rows 16*blk..16*blk+15 from shared
//    memory: block blk of row (C0 + minor) of x^T (RHT applied first on the fused path).
// The four threads with the same minor (lanes l, l+8, l+16, l+24) write 32 contiguous
// data bytes and one 4-byte word of scales, so every store fills whole sectors.
#pragma once

#include "common/rht.h"
#include "launch.cuh"

namespace qext {
namespace cuda_detail {

// The per-block quantization; bench/qext_kernels/tile_ceiling.cu defines it to stripped
// variants (no rounding, or Philox alone) to time the rest of the kernel.
#ifndef QEXT_NVFP4_BLOCK
#define QEXT_NVFP4_BLOCK nvfp4_block
#endif

constexpr int kTile = 64;
constexpr int kTileThreads = 256;
constexpr int kTileMinBlocks = 4;  // caps registers at 64 per thread

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

// Shared-memory index of tile element (r, c). Columns are XOR-swizzled in groups of
// four by a function of the row, so that the loaders' 16-byte stores (8 rows per
// quarter-warp) and the column readers' loads (8 columns x 4 row blocks per warp)
// each touch all 32 banks once.
__device__ __forceinline__ int tile_index(int r, int c) {
  const int f = (r & 7) ^ (((r >> 4) & 3) << 1);
  return r * kTile + (c ^ (f << 2));
}

// Quantizes block j of row i of operand op ([R, cols]) from v and stores its 8 data
// bytes; returns the scale byte. `rng`: the operand's state, loaded once per thread.
template <bool kSR>
__device__ __forceinline__ uint32_t quantize_store(const Nvfp4Operand& op, const Nvfp4Consts& c,
                                                   const RngState& rng, int64_t i, int64_t j,
                                                   int64_t cols, const float (&v)[16]) {
  Philox4 rnd{};
  if (kSR) {
    const uint64_t item = op.item_base + static_cast<uint64_t>(i * (cols / 16) + j);
    rnd = philox4x32_10(rng.seed, rng.offset, item);
  }
  uint32_t sb;
  const uint2 d = QEXT_NVFP4_BLOCK<kSR>(v, c, rnd, sb);
  uint8_t* dst = op.data + i * (cols / 2) + j * 8;
  if (op.data_vec) {
    *reinterpret_cast<uint2*>(dst) = d;
  } else {
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      dst[b] = static_cast<uint8_t>(d.x >> (8 * b));
      dst[4 + b] = static_cast<uint8_t>(d.y >> (8 * b));
    }
  }
  return sb;
}

// Scale bytes of blocks j0..j0+3 of row i, held by lanes l, l+8, l+16, l+24 (blk 0..3).
// All lanes of the warp must call it. Compact and swizzled layouts both keep these four
// bytes contiguous and 4-byte aligned (j0 % 4 == 0).
__device__ __forceinline__ void store_scales4(const Nvfp4Operand& op, int64_t i, int64_t j0,
                                              uint32_t s, int blk, bool valid, bool all_valid) {
  const uint32_t s1 = __shfl_down_sync(kFullMask, s, 8);
  const uint32_t s2 = __shfl_down_sync(kFullMask, s, 16);
  const uint32_t s3 = __shfl_down_sync(kFullMask, s, 24);
  if (!valid) return;
  const int64_t off = op.swizzled ? static_cast<int64_t>(swizzle_offset(i, j0, op.scale_cols))
                                  : i * op.scale_cols + j0;
  if (all_valid && op.scale_vec) {
    if (blk == 0) {
      *reinterpret_cast<uint32_t*>(op.scale + off) = s | (s1 << 8) | (s2 << 16) | (s3 << 24);
    }
  } else {
    op.scale[off + blk] = static_cast<uint8_t>(s);
  }
}

// Tile number t (0 .. tiles - 1) of a persistent block's walk -> its first row and column.
// The walk goes backwards through x: the amax pass that precedes this kernel ended at the
// end of x, most likely still in L2.
struct TileOrigin {
  int64_t R0, C0;
};
__device__ __forceinline__ TileOrigin tile_origin(uint32_t t, uint32_t tiles, uint32_t tiles_k) {
  const uint32_t idx = tiles - 1 - t;
  return TileOrigin{static_cast<int64_t>(idx / tiles_k) * kTile,
                    static_cast<int64_t>(idx % tiles_k) * kTile};
}

// row: operand x [M, K]; col: operand x^T [K, M] (RHT(x^T) with kRhtCol). vec: x is
// 16-byte aligned. A persistent block: the per-tensor constants, the RNG states and the
// noop flags are read once, then the block walks tiles blockIdx.x, + gridDim.x, ...,
// each thread loading its part of the next tile before it quantizes the current one.
template <typename In, bool kSrRow, bool kSrCol, bool kRhtCol>
__global__ void __launch_bounds__(kTileThreads, kTileMinBlocks)
    nvfp4_tile_kernel(const typename In::storage* __restrict__ x, int64_t M, int64_t K,
                      uint32_t tiles_k, uint32_t tiles, bool vec, Nvfp4Operand row,
                      Nvfp4Operand col) {
  const bool do_row = row.data != nullptr && !noop_set(row.noop);
  const bool do_col = col.data != nullptr && !noop_set(col.noop);
  if (!do_row && !do_col) return;
  __shared__ __align__(16) float tile[kTile * kTile];
  __shared__ Nvfp4Consts consts[2];  // rowwise, columnwise
  nvfp4_consts(consts, do_row ? row.amax : nullptr, do_col ? col.amax : nullptr, threadIdx.x,
               kTileThreads);
  const RngState rng_row = kSrRow ? load_rng(row.rng) : RngState{};
  const RngState rng_col = kSrCol ? load_rng(col.rng) : RngState{};

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int minor = warp * 8 + (lane & 7);
  const int blk = lane >> 3;
  // Column reads: tile_index(16 blk + j, minor), the row's swizzle split into its
  // per-thread part (blk) and its per-element part (j): 8 distinct column offsets.
  const float* col_base = &tile[16 * blk * kTile];
  const int cb = minor ^ (blk << 3);

  uint32_t t = blockIdx.x;
  if (t >= tiles) return;
  TileOrigin o = tile_origin(t, tiles, tiles_k);
  Raw16<In> next;
  bool next_valid = load_part<In>(x, M, K, o.R0, o.C0, minor, blk, vec, next);
#pragma unroll 1
  for (; t < tiles; t += gridDim.x) {
    const int64_t R0 = o.R0, C0 = o.C0;
    const Raw16<In> raw = next;
    const bool valid = next_valid;
    if (t + gridDim.x < tiles) {
      o = tile_origin(t + gridDim.x, tiles, tiles_k);
      next_valid = load_part<In>(x, M, K, o.R0, o.C0, minor, blk, vec, next);
    }

    {  // loader: row R0 + minor, columns C0 + 16 blk ..; rowwise block from registers
      const int64_t r = R0 + minor, c = C0 + 16 * blk;
      float v[16];
      raw_to_float<In>(raw, v);
      if (do_row) {
        const uint32_t sb =
            valid ? quantize_store<kSrRow>(row, consts[0], rng_row, r, c / 16, K, v) : 0u;
        store_scales4(row, r, C0 / 16, sb, blk, valid, r < M && C0 + kTile <= K);
      }
      if (!do_col) continue;  // the same for the whole block: no barrier skipped
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        *reinterpret_cast<float4*>(&tile[tile_index(minor, 16 * blk + 4 * q)]) =
            make_float4(v[4 * q], v[4 * q + 1], v[4 * q + 2], v[4 * q + 3]);
      }
    }
    __syncthreads();

    {  // column reader: row k = C0 + minor of x^T, its block starting at column m
      const int64_t k = C0 + minor, m = R0 + 16 * blk;
      const bool cvalid = k < K && m < M;
      float v[16];
#pragma unroll
      for (int j = 0; j < 16; ++j) v[j] = col_base[j * kTile + (cb ^ ((j & 7) << 2))];
      uint32_t sb = 0;
      if (cvalid) {
        if (kRhtCol) {
          float w[16];
#pragma unroll
          for (int i = 0; i < 16; ++i) w[i] = rht_row(v, i);
          sb = quantize_store<kSrCol>(col, consts[1], rng_col, k, m / 16, M, w);
        } else {
          sb = quantize_store<kSrCol>(col, consts[1], rng_col, k, m / 16, M, v);
        }
      }
      store_scales4(col, k, R0 / 16, sb, blk, cvalid, k < K && R0 + kTile <= M);
    }
    __syncthreads();  // the next tile's loaders overwrite `tile`
  }
}

// Blocks of the persistent tile kernel: as many as fit on the device at once (at most
// one per tile).
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
  return static_cast<unsigned>(tiles < most ? tiles : most);
}

// Launches the tile kernel over x [M, K] (M % 16 == K % 16 == 0) for the operands
// present, picking rounding per operand from whether it has an RNG state.
template <typename In, bool kRhtCol>
void launch_nvfp4_tiles(const typename In::storage* x, int64_t M, int64_t K,
                        const Nvfp4Operand& row, const Nvfp4Operand& col, cudaStream_t stream) {
  const int64_t tiles_m = (M + kTile - 1) / kTile, tiles_k = (K + kTile - 1) / kTile;
  if (tiles_m == 0 || tiles_k == 0 || (row.data == nullptr && col.data == nullptr)) return;
  // Tile numbers are 32-bit: 2^32 tiles of 64 x 64 would be 16 Ti elements.
  const int64_t tiles = tiles_m * tiles_k;
  if (tiles > static_cast<int64_t>(UINT32_MAX)) return;
  const bool vec = is_aligned(x, 16);
  const bool sr_r = row.data != nullptr && row.rng != nullptr;
  const bool sr_c = col.data != nullptr && col.rng != nullptr;
  auto kernel = nvfp4_tile_kernel<In, false, false, kRhtCol>;
  if (sr_r && sr_c) kernel = nvfp4_tile_kernel<In, true, true, kRhtCol>;
  else if (sr_r) kernel = nvfp4_tile_kernel<In, true, false, kRhtCol>;
  else if (sr_c) kernel = nvfp4_tile_kernel<In, false, true, kRhtCol>;
  kernel<<<tile_blocks(kernel, tiles), kTileThreads, 0, stream>>>(
      x, M, K, static_cast<uint32_t>(tiles_k), static_cast<uint32_t>(tiles), vec, row, col);
}

}  // namespace cuda_detail
}  // namespace qext
