// GEMM (cuBLAS block-scaling-factor) layout of scale buffers.
#pragma once

#include "common.h"

namespace qext {

// Offset of compact element (i, j) in a swizzled buffer of `cols` columns
// (cols % 4 == 0, rows padded to 128).
QEXT_HD size_t swizzle_offset(size_t i, size_t j, size_t cols) {
  return ((i / 128) * (cols / 4) + j / 4) * 512 + (i % 32) * 16 + ((i % 128) / 32) * 4 + (j % 4);
}

}  // namespace qext
