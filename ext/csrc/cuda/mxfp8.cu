// MXFP8 quantization on CUDA: rowwise blocks of 32 along K and columnwise blocks of
// 32 along M, both from one read of a 64x64 tile of x.
//
// Thread (warp w, lane l): minor = 8w + (l & 7), blk = l >> 3, as in nvfp4_tile.cuh.
// A block walks kTilesPerBlock tiles along K, the next one's loads issued first.
// A loader holds 16 elements of row `minor`; the 32-block is completed with lane
// l ^ 8 (blk ^ 1). A column reader holds rows 16*blk.. of column `minor`, pairs with
// lane l ^ 8 likewise, and writes its codes into a byte tile that is then stored row
// by row with 16-byte stores (columnwise data has x's shape).
#include "common/kernels.h"
#include "launch.cuh"

namespace qext {
namespace cuda {

namespace {

using namespace cuda_detail;

constexpr int kTile = 64;
constexpr int kThreads = 256;
constexpr int kTilesPerBlock = 2;  // along K
constexpr int kMinBlocksPerSm = 4;  // caps registers at 64: half the warps resident

struct Mxfp8Operand {
  uint8_t* data = nullptr;   // nullptr: direction not produced
  uint8_t* scale = nullptr;
  int64_t scale_cols = 0;    // columns of the compact scale buffer
  int64_t swizzle_cols = 0;  // Cp of the (transposed, for columnwise) GEMM layout
  bool swizzled = false;
};

__device__ __forceinline__ int ftile_index(int r, int c) {  // see nvfp4_tile.cuh
  const int f = (r & 7) ^ (((r >> 4) & 3) << 1);
  return r * kTile + (c ^ (f << 2));
}
// Byte tile: 16-byte column groups XOR-swizzled by the row's 16-row block, so the
// column readers' byte stores and the row writers' 16-byte loads avoid conflicts.
__device__ __forceinline__ int btile_index(int r, int c) {
  return r * kTile + (c ^ (((r >> 4) & 3) << 4));
}

// Scale exponent of the 32-block split between this lane and lane ^ 8 (all lanes call).
__device__ __forceinline__ int block_exponent(const float (&v)[16]) {
  float bamax = 0.0f;
#pragma unroll
  for (int e = 0; e < 16; ++e) bamax = fmaxf(bamax, fabsf(v[e]));
  bamax = fmaxf(bamax, __shfl_xor_sync(kFullMask, bamax, 8));
  return mxfp8_exponent(bamax);
}

// e4m3(v / 2^e) for 16 values. 2^-e is exact for e in [-127, 127], so v * 2^-e is
// the correctly rounded v / 2^e, the same float.
__device__ __forceinline__ uint4 encode16(const float (&v)[16], int e) {
  const float inv = exp2_from_bits(-e);
  uint32_t w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    w[i] = e4m3x2(v[4 * i] * inv, v[4 * i + 1] * inv) |
           (e4m3x2(v[4 * i + 2] * inv, v[4 * i + 3] * inv) << 16);
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// Byte b of the 16 codes in q (little-endian words, as a 16-byte store lays them out).
__device__ __forceinline__ uint8_t code_byte(const uint4& q, int b) {
  const uint32_t w = b < 4 ? q.x : b < 8 ? q.y : b < 12 ? q.z : q.w;
  return static_cast<uint8_t>(w >> (8 * (b % 4)));
}

// 16 codes to global memory: one 16-byte store where the buffers are aligned (vec).
__device__ __forceinline__ void store16(uint8_t* dst, const uint4& q, bool vec) {
  if (vec) {
    *reinterpret_cast<uint4*>(dst) = q;
  } else {
#pragma unroll
    for (int b = 0; b < 16; ++b) dst[b] = code_byte(q, b);
  }
}

// vec: x and both data buffers are 16-byte aligned. Each block quantizes kTilesPerBlock
// tiles along K, loading the next tile's part before it works on the current one, so
// that every thread keeps a load in flight while it computes (the kernel is bound by
// memory latency, not by instructions).
template <typename In>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm)
    mxfp8_tile_kernel(const typename In::storage* __restrict__ x, int64_t M, int64_t K,
                      int64_t first_tile_row, bool vec, Mxfp8Operand row, Mxfp8Operand col,
                      const float* noop) {
  if (noop_set(noop)) return;
  __shared__ __align__(16) float tile[kTile * kTile];
  __shared__ __align__(16) uint8_t codes[kTile * kTile];
  const int64_t R0 = (first_tile_row + blockIdx.y) * kTile;
  const int64_t C0first = static_cast<int64_t>(blockIdx.x) * kTilesPerBlock * kTile;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int minor = warp * 8 + (lane & 7);
  const int blk = lane >> 3;

  Raw16<In> next;
  bool next_valid = load_part<In>(x, M, K, R0, C0first, minor, blk, vec, next);
#pragma unroll 1
  for (int t = 0; t < kTilesPerBlock; ++t) {
    const int64_t C0 = C0first + t * kTile;
    if (C0 >= K) break;  // the same for the whole block
    const Raw16<In> raw = next;
    const bool valid = next_valid;
    if (t + 1 < kTilesPerBlock && C0 + kTile < K) {
      next_valid = load_part<In>(x, M, K, R0, C0 + kTile, minor, blk, vec, next);
    }

    {  // loader and rowwise
      const int64_t r = R0 + minor, c = C0 + 16 * blk;
      float v[16];
      raw_to_float<In>(raw, v);
      if (row.data != nullptr) {
        const int e = block_exponent(v);
        if (valid) {
          store16(row.data + r * K + c, encode16(v, e), vec);
          if ((blk & 1) == 0) {
            const int64_t j = c / kMxfp8Block;
            row.scale[row.swizzled ? static_cast<int64_t>(swizzle_offset(r, j, row.swizzle_cols))
                                   : r * row.scale_cols + j] = static_cast<uint8_t>(e + 127);
          }
        }
      }
      if (col.data == nullptr) continue;  // the same for the whole block: no barrier skipped
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        *reinterpret_cast<float4*>(&tile[ftile_index(minor, 16 * blk + 4 * q)]) =
            make_float4(v[4 * q], v[4 * q + 1], v[4 * q + 2], v[4 * q + 3]);
      }
    }
    // Also orders the previous tile's reads of `codes` before this tile's writes.
    __syncthreads();

    {  // column reader: column k, rows m..m+15 (half of the 32-block with lane ^ 8)
      const int64_t k = C0 + minor, m = R0 + 16 * blk;
      float v[16];
#pragma unroll
      for (int j = 0; j < 16; ++j) v[j] = tile[ftile_index(16 * blk + j, minor)];
      const int e = block_exponent(v);
      if (k < K && m < M) {
        const uint4 q = encode16(v, e);
#pragma unroll
        for (int j = 0; j < 16; ++j) codes[btile_index(16 * blk + j, minor)] = code_byte(q, j);
        if ((blk & 1) == 0) {
          const int64_t i = m / kMxfp8Block;
          col.scale[col.swizzled ? static_cast<int64_t>(swizzle_offset(k, i, col.swizzle_cols))
                                 : i * col.scale_cols + k] = static_cast<uint8_t>(e + 127);
        }
      }
    }
    // Also orders this tile's reads of `tile` before the next tile's writes.
    __syncthreads();

    {  // columnwise data, row by row: thread -> row rr of the tile, 16-byte chunk cq
      const int rr = warp * 8 + (lane >> 2), cq = lane & 3;
      const int64_t r = R0 + rr, c = C0 + 16 * cq;
      if (r < M && c < K) {  // K % 32 == 0: a chunk is inside x when its start is
        store16(col.data + r * K + c,
                *reinterpret_cast<const uint4*>(&codes[btile_index(rr, 16 * cq)]), vec);
      }
    }
  }
}

}  // namespace

void mxfp8_quantize(const TensorWrapper& x, const TensorWrapper& data_r,
                    const TensorWrapper& scale_r, const TensorWrapper& data_c,
                    const TensorWrapper& scale_c, const QuantizationConfig& cfg, Stream stream) {
  const Dims d = dims2d(x);
  const int64_t M = d.rows, K = d.cols;
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
  const int64_t tiles_m = (M + kTile - 1) / kTile, tiles_k = (K + kTile - 1) / kTile;
  if (tiles_m == 0 || tiles_k == 0) return;
  const int64_t blocks_k = (tiles_k + kTilesPerBlock - 1) / kTilesPerBlock;
  dispatch_input(x.dtype(), [&](auto in) {
    using In = decltype(in);
    const typename In::storage* p = x.ptr<const typename In::storage>();
    const bool vec = is_aligned(p, 16) && (row.data == nullptr || is_aligned(row.data, 16)) &&
                     (col.data == nullptr || is_aligned(col.data, 16));
    // gridDim.y is at most 65535: taller inputs go in bands of tile rows.
    constexpr int64_t kBand = 65535;
    for (int64_t first = 0; first < tiles_m; first += kBand) {
      const int64_t n = tiles_m - first < kBand ? tiles_m - first : kBand;
      const dim3 grid(static_cast<unsigned>(blocks_k), static_cast<unsigned>(n));
      mxfp8_tile_kernel<In><<<grid, kThreads, 0, stream>>>(p, M, K, first, vec, row, col,
                                                           noop_ptr(cfg));
    }
  });
}

}  // namespace cuda
}  // namespace qext
