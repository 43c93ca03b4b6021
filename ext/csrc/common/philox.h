// Philox4x32-10 counter-based generator (Salmon et al., 2011).
#pragma once

#include "common.h"

namespace qext {

struct Philox4 {
  uint32_t w[4];
};

QEXT_HD void philox_mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
#if defined(__CUDA_ARCH__)
  // The same product as the 64-bit form below; written as two 32-bit halves, ptxas
  // makes one IMAD.WIDE per multiply (the 64-bit form also cost an add of zero).
  hi = __umulhi(a, b);
  lo = a * b;
#else
  const uint64_t p = static_cast<uint64_t>(a) * static_cast<uint64_t>(b);
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
#endif
}

// One 128-bit draw. Counter = (offset lo, offset hi, item lo, item hi).
QEXT_HD Philox4 philox4x32_10(uint64_t seed, uint64_t offset, uint64_t item) {
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  uint32_t c0 = static_cast<uint32_t>(offset), c1 = static_cast<uint32_t>(offset >> 32);
  uint32_t c2 = static_cast<uint32_t>(item), c3 = static_cast<uint32_t>(item >> 32);
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    philox_mulhilo(0xD2511F53u, c0, hi0, lo0);
    philox_mulhilo(0xCD9E8D57u, c2, hi1, lo1);
    const uint32_t n0 = hi1 ^ c1 ^ k0;
    const uint32_t n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return Philox4{{c0, c1, c2, c3}};
}

// Random byte for element e (0..15) of a block, per docs/qext-internals.md.
QEXT_HD uint32_t philox_byte(const Philox4& r, int e) { return (r.w[e >> 2] >> (8 * (e & 3))) & 0xFFu; }

}  // namespace qext
