//===- Check.h - random inputs, poisoned outputs, result comparison -*- C++ -*-===//
#ifndef ATTN_REFERENCE_CHECK_H
#define ATTN_REFERENCE_CHECK_H

#include "attn/reference/Reference.h"
#include "attn/runtime/attn.h"

#include <cstdint>
#include <random>
#include <string>

namespace attn::reference {

/// How far a kernel result may be from the float64 reference.
struct Tolerance {
  /// ||out - ref||_2 <= relL2 * ||ref||_2 + magRel * ||magnitude||_2, with
  /// magnitude the reference's sum_j w |v| per element: relative to out
  /// where its terms do not cancel, and never below what rounding the
  /// terms can cost where they do (a single-key-dim output of millions of
  /// nearly equal weights sums to ~1e-4 from terms of ~0.5).
  double relL2;
  double magRel;
  double maxAbs; ///< max |out - ref|, times max(1, max |ref|)
  double lseAbs; ///< |lse - ref| <= lseAbs + lseRel * |ref| per finite row:
  double lseRel = 1e-5; ///< f32 rounds lse relative to its size (|lse| ~
                        ///< the largest scaled score, 2e4 at scale 1000)
};

/// The per-dtype tolerances (the one place they are stated; Check.cpp and
/// docs/Testing.md say why).
Tolerance toleranceFor(attn_dtype dtype);

/// The layer's (attn.mha) tolerances for y against computeMhaReference:
/// attn.sdpa's, though the kernel rounds q, k, v and the attention output
/// to the element type between its stages (Check.cpp says why they hold).
Tolerance mhaToleranceFor(attn_dtype dtype);

/// Fills `count` elements of a dense buffer of `dtype` with values uniform
/// in [-scale, scale], rounded to the dtype. Bool buffers get 0 or a
/// nonzero byte (uniform in 1-255: any nonzero byte attends), nonzero with
/// probability `scale` clamped to [0, 1].
void fillRandom(std::mt19937_64 &rng, attn_dtype dtype, void *data,
                size_t count, double scale);

/// Overwrites `count` elements with NaN bit patterns (f16/bf16/f32) so an
/// element the kernel never wrote cannot pass.
void poison(attn_dtype dtype, void *data, size_t count);

/// The outcome of one comparison.
struct Comparison {
  double maxAbsErr = 0;
  double relL2Err = 0; ///< ||out - ref||_2 / ||ref||_2
  /// What relL2Err may be: relL2 + magRel * ||magnitude||_2 / ||ref||_2.
  double relL2Tol = 0;
  double lseMaxAbsErr = 0;
  int64_t badOut = 0; ///< NaN / inf in out where the reference is finite
  int64_t badLse = 0; ///< NaN, or -inf mismatch, in lse
  int64_t lseOverTol = 0; ///< finite lse beyond lseAbs + lseRel * |ref|
  bool ok = true;
  std::string message; ///< first problem found, empty when ok
};

/// Compares `out` (a strided [B, Hq, Sq, Dv] tensor of `dtype`) and, when
/// `lse` is non-null, the lse tensor ([B, Hq, Sq] f32, strided) with `ref`
/// under `tol`.
Comparison compare(const Result &ref, attn_dtype dtype, const attn_tensor &out,
                   const attn_tensor *lse, const Tolerance &tol);

} // namespace attn::reference

#endif // ATTN_REFERENCE_CHECK_H
