// Compact <-> GEMM layout of a uint8 scale buffer on CUDA. The map is a bijection of
// the whole buffer (padding to padding), so the output is written everywhere.
#include "common/kernels.h"
#include "launch.cuh"

namespace qext {
namespace cuda {

namespace {

using namespace cuda_detail;

constexpr int kThreads = 256;

// in/out are [R, C]. Compact (i, j) is i * C + j; its GEMM offset is swizzle_offset
// (i, j, C), or for a transposed buffer swizzle_offset(j, i, R) (docs: the transpose
// T[j][i] = S[i][j] has R columns). blockIdx.x covers j, blockIdx.y strides over i.
__global__ void __launch_bounds__(kThreads)
    swizzle_kernel(const uint8_t* __restrict__ in, uint8_t* __restrict__ out, int64_t R,
                   int64_t C, bool transposed, bool inverse, const float* noop) {
  if (noop_set(noop)) return;
  const int64_t j = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (j >= C) return;
  for (int64_t i = blockIdx.y; i < R; i += gridDim.y) {
    const int64_t compact = i * C + j;
    const int64_t sw =
        static_cast<int64_t>(transposed ? swizzle_offset(j, i, R) : swizzle_offset(i, j, C));
    if (inverse) {
      out[compact] = in[sw];
    } else {
      out[sw] = in[compact];
    }
  }
}

}  // namespace

void swizzle(const TensorWrapper& in, const TensorWrapper& out, bool transposed, bool inverse,
             const QuantizationConfig& cfg, Stream stream) {
  const Dims d = dims2d(in);
  if (d.rows == 0 || d.cols == 0) return;
  const unsigned gx = static_cast<unsigned>((d.cols + kThreads - 1) / kThreads);
  const unsigned gy = static_cast<unsigned>(d.rows < 4096 ? d.rows : 4096);
  swizzle_kernel<<<dim3(gx, gy), kThreads, 0, stream>>>(in.ptr<const uint8_t>(), out.ptr<uint8_t>(),
                                                        d.rows, d.cols, transposed, inverse,
                                                        noop_ptr(cfg));
}

}  // namespace cuda
}  // namespace qext
