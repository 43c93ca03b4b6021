// NVFP4 quantization on CUDA (unfused path): one operand (x or x^T), or both from a
// single read of x. See nvfp4_tile.cuh for the kernel.
#include "common/kernels.h"
#include "nvfp4_tile.cuh"

namespace qext {
namespace cuda {

using namespace cuda_detail;

void nvfp4_quantize(const TensorWrapper& x, bool transpose, const TensorWrapper& amax,
                    const TensorWrapper& data, const TensorWrapper& scale,
                    const QuantizationConfig& cfg, Stream stream) {
  const Dims d = dims2d(x);
  // Operand A = x [M, K] is the tile kernel's rowwise output; A = x^T its columnwise one.
  const Nvfp4Operand op = make_operand(amax, data, scale, cfg, transpose ? d.rows : d.cols);
  const Nvfp4Operand none;
  dispatch_input(x.dtype(), [&](auto in) {
    using In = decltype(in);
    launch_nvfp4_tiles<In, false>(x.ptr<const typename In::storage>(), d.rows, d.cols,
                                  transpose ? none : op, transpose ? op : none, stream);
  });
}

void nvfp4_quantize_both(const TensorWrapper& x, const TensorWrapper& amax_r,
                         const TensorWrapper& data_r, const TensorWrapper& scale_r,
                         const QuantizationConfig& cfg_r, const TensorWrapper& amax_c,
                         const TensorWrapper& data_c, const TensorWrapper& scale_c,
                         const QuantizationConfig& cfg_c, Stream stream) {
  const Dims d = dims2d(x);
  const Nvfp4Operand row = make_operand(amax_r, data_r, scale_r, cfg_r, d.cols);
  const Nvfp4Operand col = make_operand(amax_c, data_c, scale_c, cfg_c, d.rows);
  dispatch_input(x.dtype(), [&](auto in) {
    using In = decltype(in);
    launch_nvfp4_tiles<In, false>(x.ptr<const typename In::storage>(), d.rows, d.cols, row, col,
                                  stream);
  });
}

}  // namespace cuda
}  // namespace qext
