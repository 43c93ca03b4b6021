// The fused NVFP4 path on CUDA: rowwise x and columnwise RHT(x^T) from one read of x
// and one RNG state. RHT(x^T) exists only in registers: each column reader of the
// tile kernel transforms its 16-element block before quantizing it.
#include "common/kernels.h"
#include "nvfp4_tile.cuh"

namespace qext {
namespace cuda {

using namespace cuda_detail;

void nvfp4_quantize_fused(const TensorWrapper& x, const TensorWrapper& amax_r,
                          const TensorWrapper& data_r, const TensorWrapper& scale_r,
                          const TensorWrapper& amax_c, const TensorWrapper& data_c,
                          const TensorWrapper& scale_c, const QuantizationConfig& cfg,
                          Stream stream) {
  const Dims d = dims2d(x);
  const Nvfp4Operand row = make_operand(amax_r, data_r, scale_r, cfg, d.cols);
  Nvfp4Operand col = make_operand(amax_c, data_c, scale_c, cfg, d.rows);
  // One state for both operands: the columnwise items follow the rowwise ones.
  col.item_base = cfg.rng_item_base + static_cast<uint64_t>(d.rows) * d.cols / kNvfp4Block;
  dispatch_input(x.dtype(), [&](auto in) {
    using In = decltype(in);
    launch_nvfp4_tiles<In, true>(x.ptr<const typename In::storage>(), d.rows, d.cols, row, col,
                                 stream);
  });
}

}  // namespace cuda
}  // namespace qext
