//===- Float.cpp - f16 / bf16 <-> float conversions, typed element access -===//
#include "attn/reference/Float.h"

#include <cstring>

namespace attn::reference {

static uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

static float floatOf(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// Rounds `q` (the truncated result) up when the discarded `rem` is above
// half of `unit`, or exactly half and q is odd: round to nearest even.
static uint32_t roundNearestEven(uint32_t q, uint32_t rem, uint32_t half) {
  if (rem > half || (rem == half && (q & 1u)))
    ++q;
  return q;
}

uint16_t floatToHalfBits(float value) {
  uint32_t x = bitsOf(value);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx > 0x7f800000u) // NaN: keep it quiet and keep the top payload bits.
    return static_cast<uint16_t>(sign | 0x7e00u | ((absx >> 13) & 0x3ffu));
  // 65520 is halfway between 65504 (max, odd mantissa) and 2^16: rounds to inf.
  if (absx >= 0x477ff000u)
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (absx < 0x38800000u) { // below 2^-14: a half subnormal or zero
    uint32_t e = absx >> 23;
    if (e < 102) // below 2^-25, at most half of the smallest subnormal
      return static_cast<uint16_t>(sign);
    uint32_t m = (absx & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e; // value * 2^24 = m >> shift; shift in [14, 24]
    uint32_t q = roundNearestEven(m >> shift, m & ((1u << shift) - 1),
                                  1u << (shift - 1));
    return static_cast<uint16_t>(sign | q); // q == 0x400 is the min normal
  }
  // Normal: rebias 127 -> 15; a mantissa carry correctly bumps the exponent.
  uint32_t h = roundNearestEven((absx - 0x38000000u) >> 13, absx & 0x1fffu,
                                0x1000u);
  return static_cast<uint16_t>(sign | h);
}

float halfBitsToFloat(uint16_t bits) {
  uint32_t sign = (static_cast<uint32_t>(bits) & 0x8000u) << 16;
  uint32_t e = (bits >> 10) & 0x1fu;
  uint32_t m = bits & 0x3ffu;
  if (e == 0x1f) // inf / NaN
    return floatOf(sign | 0x7f800000u | (m << 13));
  if (e == 0) { // zero / subnormal: m * 2^-24, exact in float
    float v = static_cast<float>(m) * 0x1p-24f;
    return sign ? -v : v;
  }
  return floatOf(sign | ((e + 112) << 23) | (m << 13));
}

uint16_t floatToBF16Bits(float value) {
  uint32_t x = bitsOf(value);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40u);
  // Overflow past the largest bf16 carries into the exponent: inf, as RNE says.
  return static_cast<uint16_t>(roundNearestEven(x >> 16, x & 0xffffu, 0x8000u));
}

float bf16BitsToFloat(uint16_t bits) {
  return floatOf(static_cast<uint32_t>(bits) << 16);
}

size_t dtypeSize(attn_dtype dtype) {
  switch (dtype) {
  case ATTN_DTYPE_F16:
  case ATTN_DTYPE_BF16:
    return 2;
  case ATTN_DTYPE_F32:
    return 4;
  case ATTN_DTYPE_BOOL:
    return 1;
  }
  return 0;
}

double loadElement(attn_dtype dtype, const void *data, int64_t index) {
  switch (dtype) {
  case ATTN_DTYPE_F16:
    return halfBitsToFloat(static_cast<const uint16_t *>(data)[index]);
  case ATTN_DTYPE_BF16:
    return bf16BitsToFloat(static_cast<const uint16_t *>(data)[index]);
  case ATTN_DTYPE_F32:
    return static_cast<const float *>(data)[index];
  case ATTN_DTYPE_BOOL:
    return static_cast<const uint8_t *>(data)[index] != 0 ? 1.0 : 0.0;
  }
  return 0.0;
}

void storeElement(attn_dtype dtype, void *data, int64_t index, double value) {
  switch (dtype) {
  case ATTN_DTYPE_F16:
    static_cast<uint16_t *>(data)[index] =
        floatToHalfBits(static_cast<float>(value));
    return;
  case ATTN_DTYPE_BF16:
    static_cast<uint16_t *>(data)[index] =
        floatToBF16Bits(static_cast<float>(value));
    return;
  case ATTN_DTYPE_F32:
    static_cast<float *>(data)[index] = static_cast<float>(value);
    return;
  case ATTN_DTYPE_BOOL:
    static_cast<uint8_t *>(data)[index] = value != 0.0 ? 1 : 0;
    return;
  }
}

} // namespace attn::reference
