// Kernel entry points. Each is implemented twice, in cpu/ and in cuda/, with the
// same semantics (docs/qext-internals.md). They see only non-owning wrappers; every
// kernel returns without writing when cfg.noop holds 1.0.
#pragma once

#include "tensor.h"

struct CUstream_st;

namespace qext {

using Stream = CUstream_st*;  // ignored by the CPU kernels

#define QEXT_KERNEL_API(NS)                                                                    \
  namespace NS {                                                                               \
  /* amax(|x|) of x [M, K] into out_a (and out_b when not empty); float32 [1] each. */         \
  void amax(const TensorWrapper& x, const TensorWrapper& out_a, const TensorWrapper& out_b,   \
            const QuantizationConfig& cfg, Stream stream);                                     \
  /* out[K, M] (float32) = RHT applied to 16-blocks of the rows of x^T; x bf16 [M, K]. */       \
  void rht_transpose(const TensorWrapper& x, const TensorWrapper& out,                          \
                     const QuantizationConfig& cfg, Stream stream);                            \
  /* amax of RHT(x^T) into out, without materialising it; and amax(|x|) into out_x when */    \
  /* out_x is not empty (the fused path: one read of x gives both). */                         \
  void rht_amax(const TensorWrapper& x, const TensorWrapper& out, const TensorWrapper& out_x,  \
                const QuantizationConfig& cfg, Stream stream);                                 \
  /* NVFP4 of one operand A = x (transpose=false) or x^T (transpose=true); x [M, K]. */        \
  void nvfp4_quantize(const TensorWrapper& x, bool transpose, const TensorWrapper& amax,        \
                      const TensorWrapper& data, const TensorWrapper& scale,                   \
                      const QuantizationConfig& cfg, Stream stream);                           \
  /* Both operands of x (no RHT) in one pass; each with its own config (RNG state). */         \
  void nvfp4_quantize_both(const TensorWrapper& x, const TensorWrapper& amax_r,                 \
                           const TensorWrapper& data_r, const TensorWrapper& scale_r,           \
                           const QuantizationConfig& cfg_r, const TensorWrapper& amax_c,        \
                           const TensorWrapper& data_c, const TensorWrapper& scale_c,           \
                           const QuantizationConfig& cfg_c, Stream stream);                    \
  /* Fused SR + RHT path: rowwise x and columnwise RHT(x^T) from one RNG state. */            \
  void nvfp4_quantize_fused(const TensorWrapper& x, const TensorWrapper& amax_r,                \
                            const TensorWrapper& data_r, const TensorWrapper& scale_r,          \
                            const TensorWrapper& amax_c, const TensorWrapper& data_c,           \
                            const TensorWrapper& scale_c, const QuantizationConfig& cfg,        \
                            Stream stream);                                                    \
  /* MXFP8; an empty data wrapper skips that direction. */                                     \
  void mxfp8_quantize(const TensorWrapper& x, const TensorWrapper& data_r,                      \
                      const TensorWrapper& scale_r, const TensorWrapper& data_c,                \
                      const TensorWrapper& scale_c, const QuantizationConfig& cfg,              \
                      Stream stream);                                                          \
  /* Compact <-> GEMM layout of a uint8 scale buffer [R, C] (R % 128 == 0, C % 4 == 0), */     \
  /* or of its transpose when `transposed` (MXFP8 columnwise scales). */                       \
  void swizzle(const TensorWrapper& in, const TensorWrapper& out, bool transposed,             \
               bool inverse, const QuantizationConfig& cfg, Stream stream);                    \
  }

QEXT_KERNEL_API(cpu)
QEXT_KERNEL_API(cuda)

#undef QEXT_KERNEL_API

}  // namespace qext
