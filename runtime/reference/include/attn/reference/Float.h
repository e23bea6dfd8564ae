//===- Float.h - f16 / bf16 <-> float conversions for host buffers -*- C++ -*-===//
#ifndef ATTN_REFERENCE_FLOAT_H
#define ATTN_REFERENCE_FLOAT_H

#include "attn/runtime/attn.h"

#include <cstddef>
#include <cstdint>

namespace attn::reference {

/// IEEE binary16 bits of `value`, rounded to nearest even (subnormals,
/// overflow to inf and NaN included).
uint16_t floatToHalfBits(float value);
/// Exact: every binary16 value is a float.
float halfBitsToFloat(uint16_t bits);

/// bfloat16 bits of `value`, rounded to nearest even; NaN stays a quiet NaN.
uint16_t floatToBF16Bits(float value);
float bf16BitsToFloat(uint16_t bits);

/// Bytes per element of a dtype (bool masks: 1).
size_t dtypeSize(attn_dtype dtype);

/// Reads element `index` of a buffer of `dtype` exactly as a double.
double loadElement(attn_dtype dtype, const void *data, int64_t index);
/// Stores `value` rounded (nearest even) to `dtype`; bool stores value != 0.
void storeElement(attn_dtype dtype, void *data, int64_t index, double value);

} // namespace attn::reference

#endif // ATTN_REFERENCE_FLOAT_H
