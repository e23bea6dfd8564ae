//===- Checked.h - overflow-checked size arithmetic ---------------*- C++ -*-===//
//
// The one place the runtime and the JIT form products of sizes (element
// counts, byte sizes, tile, split and workgroup counts): each either fits
// int64_t or says that it does not, so a caller can refuse the input with a
// message instead of computing with a wrapped value.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_CHECKED_H
#define ATTN_RUNTIME_CHECKED_H

#include <cstdint>
#include <initializer_list>

namespace attn {

/// The largest element count or byte size any tensor, workspace or work
/// product (B*Hq*Sq*Skv scores) may have: 2^62, so that the sums and
/// roundings the compilers add on top (ceil-divisions, +1s) cannot overflow
/// int64_t either. docs/Runtime.md, "Limits".
constexpr int64_t kMaxSize = int64_t(1) << 62;

/// The largest block_q / block_kv a spec may ask for (every target).
constexpr int64_t kMaxBlock = (int64_t(1) << 31) - 1;

/// `a * b` into `out`; false (out unspecified) on int64_t overflow.
inline bool checkedMul(int64_t a, int64_t b, int64_t &out) {
  return !__builtin_mul_overflow(a, b, &out);
}

/// `a + b` into `out`; false on int64_t overflow.
inline bool checkedAdd(int64_t a, int64_t b, int64_t &out) {
  return !__builtin_add_overflow(a, b, &out);
}

/// The product of `factors` into `out` when it fits in [0, limit]; false
/// otherwise (overflow, or a negative factor).
inline bool checkedProduct(std::initializer_list<int64_t> factors,
                           int64_t &out, int64_t limit = kMaxSize) {
  int64_t p = 1;
  for (int64_t f : factors)
    if (f < 0 || !checkedMul(p, f, p) || p > limit)
      return false;
  out = p;
  return true;
}

/// ceil(a / b) for a >= 0, b > 0, without forming a + b - 1.
inline int64_t ceilDiv(int64_t a, int64_t b) {
  return a / b + (a % b != 0 ? 1 : 0);
}

} // namespace attn

#endif // ATTN_RUNTIME_CHECKED_H
