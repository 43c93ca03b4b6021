// Element and scale formats: E4M3, E2M1, E8M0, and the NVFP4 scale rules.
// Host and device share these functions so that CPU and CUDA agree bit for bit;
// the rules are written out in docs/qext-internals.md.
#pragma once

#include <math.h>
#include <string.h>

#include "common.h"

namespace qext {

QEXT_HD uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  return u;
#endif
}

QEXT_HD float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
#endif
}

QEXT_HD bool is_nan(float f) { return (float_bits(f) & 0x7FFFFFFFu) > 0x7F800000u; }
QEXT_HD bool sign_bit(float f) { return (float_bits(f) >> 31) != 0; }

QEXT_HD float bf16_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

QEXT_HD float fp16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t mant = h & 0x3FFu;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24, exact in fp32.
    const float v = static_cast<float>(mant) * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  if (exp == 0x1F) return bits_float(sign | 0x7F800000u | (mant << 13));
  return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

// ---- E4M3 (fn: no infinities; 0x7F is NaN) ----------------------------------

QEXT_HD uint8_t float_to_e4m3(float f) {
  const uint8_t sign = sign_bit(f) ? 0x80 : 0x00;
  if (is_nan(f)) return 0x7F;
  const float a = fabsf(f);
  if (a >= kE4M3Max) return sign | 0x7E;      // saturate
  if (a < 0.015625f) {                        // below 2^-6: subnormal, step 2^-9
    const float q = rintf(a * 512.0f);        // exact scaling; q in [0, 8]
    return sign | static_cast<uint8_t>(q);    // q == 8 is the smallest normal, 0x08
  }
  const uint32_t bits = float_bits(a);
  const int exp = static_cast<int>((bits >> 23) & 0xFF) - 127;  // -6 .. 8
  const uint32_t mant = bits & 0x7FFFFFu;
  uint32_t keep = mant >> 20;
  const uint32_t rest = mant & 0xFFFFFu;
  if (rest > 0x80000u || (rest == 0x80000u && (keep & 1u))) keep += 1;  // ties to even
  uint32_t code = (static_cast<uint32_t>(exp + 7) << 3) + keep;         // carry ok
  if (code > 0x7Eu) code = 0x7Eu;
  return sign | static_cast<uint8_t>(code);
}

QEXT_HD float e4m3_to_float(uint8_t b) {
  const uint32_t exp = (b >> 3) & 0xFu;
  const uint32_t mant = b & 0x7u;
  float v;
  if ((b & 0x7F) == 0x7F) {
    v = bits_float(0x7FC00000u);
  } else if (exp == 0) {
    v = static_cast<float>(mant) * 0.001953125f;  // 2^-9
  } else {
    v = bits_float(((exp + 120u) << 23) | (mant << 20));
  }
  return (b & 0x80) ? -v : v;
}

// ---- E2M1 -------------------------------------------------------------------

// Magnitude of code 0..7.
QEXT_HD float e2m1_value(uint8_t code) {
  const float table[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float v = table[code & 7];
  return (code & 8) ? -v : v;
}

// Code of a representable magnitude (0, 0.5, ..., 6).
QEXT_HD uint8_t e2m1_code_of_magnitude(float q) {
  if (q < 2.0f) return static_cast<uint8_t>(q * 2.0f);  // 0, .5, 1, 1.5 -> 0..3
  if (q < 4.0f) return static_cast<uint8_t>(q + 2.0f);  // 2, 3 -> 4, 5
  return q < 6.0f ? 6 : 7;                              // 4 -> 6, 6 -> 7
}

// Round to nearest, ties to the even code, saturating at 6.
QEXT_HD uint8_t float_to_e2m1_rn(float v) {
  if (is_nan(v)) return 7;
  const float a = fabsf(v);
  uint8_t code;
  if (a <= 0.25f) code = 0;
  else if (a < 0.75f) code = 1;
  else if (a <= 1.25f) code = 2;
  else if (a < 1.75f) code = 3;
  else if (a <= 2.5f) code = 4;
  else if (a < 3.5f) code = 5;
  else if (a <= 5.0f) code = 6;
  else code = 7;
  return code | (sign_bit(v) ? 8 : 0);
}

QEXT_HD float e2m1_step(float a) { return a < 2.0f ? 0.5f : (a < 4.0f ? 1.0f : 2.0f); }

// Stochastic rounding with one random byte (u = byte / 256).
QEXT_HD uint8_t float_to_e2m1_sr(float v, uint32_t random_byte) {
  if (is_nan(v)) return 7;
  const float a = fabsf(v);
  const float u = static_cast<float>(random_byte) * 0.00390625f;  // exact
  const float t = a + u * e2m1_step(a);                            // u * step is exact
  const float st = e2m1_step(t);
  const float q = fminf(floorf(t / st) * st, kE2M1Max);
  return e2m1_code_of_magnitude(q) | (sign_bit(v) ? 8 : 0);
}

// ---- NVFP4 scales -----------------------------------------------------------

// Per-tensor encode scale S_enc from the tensor's amax.
QEXT_HD float nvfp4_encode_scale(float amax) {
  float s = fminf((kE4M3Max * kE2M1Max) / amax, kFloatMax);
  if (amax == 0.0f || s == 0.0f) s = 1.0f;
  return s;
}

// E4M3 block decode scale from the block amax.
QEXT_HD uint8_t nvfp4_block_scale(float block_amax, float s_enc) {
  return float_to_e4m3(fminf(block_amax * s_enc / kE2M1Max, kFloatMax));
}

// Multiplier applied to each element of a block with scale byte s_b.
QEXT_HD float nvfp4_block_multiplier(uint8_t s_b, float s_dec) {
  return fminf(1.0f / (e4m3_to_float(s_b) * s_dec), kFloatMax);
}

// ---- MXFP8 (E8M0 scales) ----------------------------------------------------

// Unbiased exponent e with 2^e = ratio rounded up to a power of two, clamped.
QEXT_HD int mxfp8_exponent(float block_amax) {
  if (block_amax == 0.0f) return -127;
  const float ratio = block_amax / kE4M3Max;
  const uint32_t bits = float_bits(ratio);
  int biased = static_cast<int>((bits >> 23) & 0xFF);
  uint32_t mant = bits & 0x7FFFFFu;
  int e;
  if (biased == 0) {
    // Subnormal ratio: value = mant * 2^-149.
    int top = 31;
    while (top >= 0 && !((mant >> top) & 1u)) --top;
    if (top < 0) return -127;
    e = top - 149 + ((mant & ((1u << top) - 1u)) ? 1 : 0);
  } else {
    e = biased - 127 + (mant ? 1 : 0);
  }
  if (e < -127) e = -127;
  if (e > 127) e = 127;
  return e;
}

QEXT_HD float exp2_from_bits(int e) {
  if (e <= -127) return bits_float(0x00400000u);  // 2^-127, subnormal
  return bits_float(static_cast<uint32_t>(e + 127) << 23);
}

}  // namespace qext
