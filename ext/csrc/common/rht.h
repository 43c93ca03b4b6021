// Random Hadamard transform on 16-element blocks: W = diag(signs) * H16 / 4.
#pragma once

#include "common.h"

namespace qext {

// Bit i set means signs[i] == -1; signs = [1,1,1,-1,1,-1,-1,-1,-1,-1,-1,1,-1,1,-1,-1].
constexpr uint32_t kRhtSignMask = 0xD7E8u;

QEXT_HD bool hadamard_positive(int i, int j) {
  unsigned x = static_cast<unsigned>(i & j) & 0xFu;  // parity of 4 bits
  x ^= x >> 2;
  x ^= x >> 1;
  return (x & 1u) == 0;
}
QEXT_HD bool rht_sign_negative(int i) { return (kRhtSignMask >> i) & 1u; }

// w[i] for a block v[0..15]; the summation order is part of the contract.
QEXT_HD float rht_row(const float* v, int i) {
  float acc = 0.0f;
  for (int j = 0; j < 16; ++j) acc = acc + (hadamard_positive(i, j) ? v[j] : -v[j]);
  const float w = acc * 0.25f;
  return rht_sign_negative(i) ? -w : w;
}

}  // namespace qext
