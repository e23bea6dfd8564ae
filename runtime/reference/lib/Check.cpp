//===- Check.cpp - random inputs, poison, and comparison with the reference -===//
#include "attn/reference/Check.h"

#include "attn/reference/Float.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

namespace attn::reference {

// Why these numbers. The kernel reads the same stored inputs as the
// reference, so input rounding is not an error source; what remains is
//  - f32 arithmetic (scores, exp, the running sums, P.V): relative errors of
//    a few ulp (6e-8) grown by sums over Skv keys and the rescaling of the
//    online softmax: ~1e-6 in practice, so rel_l2 1e-5 leaves 10x margin
//    while any real bug (one wrong key, a missed rescale) costs >= 1e-3;
//  - the final store of out in the dtype: half an ulp relative, i.e. 2^-11
//    (4.9e-4) for f16 and 2^-8 (3.9e-3) for bf16. A uniform rounding error
//    has RMS 1/sqrt(3) of its maximum, so rel_l2 is ~2.8e-4 (f16) and
//    ~2.3e-3 (bf16); the bounds allow 4-7x for targets that also round P to
//    the dtype before P.V as GPU kernels do. max_abs bounds one element:
//    |out| <= max|v| / (1 - p) and the bound scales with max(1, max|ref|).
//  - where out's terms cancel (a sum of w v over many keys with nearly
//    equal weights and values of both signs), the rounding of any summation
//    order is a multiple of the terms' magnitudes, sum_j w |v|, not of
//    |out|: magRel = relL2 / 10 of their norm is added to the bound, which
//    is far above rounding (f32: ~1e-9 of the magnitudes measured at 16M
//    keys, D = 1) and far below a wrong key (1 / Skv of them, i.e. 4e-3 at
//    128 keys).
//  - lse is f32 from exactly-read inputs in every dtype: error ~ ulp of
//    |lse| (lse ~ log Skv + max score) plus the sum's rounding, so the bound
//    is lseAbs + lseRel * |lse|: lseAbs for the usual |lse| < 20, and
//    lseRel = 1e-5 (~80 f32 ulp) for large scores (|lse| ~ 2e4 at scale
//    1000), where an absolute bound would fail on ordinary rounding.
Tolerance toleranceFor(attn_dtype dtype) {
  switch (dtype) {
  case ATTN_DTYPE_F16:
    return {2e-3, 2e-4, 5e-3, 1e-3};
  case ATTN_DTYPE_BF16:
    return {1.6e-2, 1.6e-3, 4e-2, 1e-3};
  case ATTN_DTYPE_F32:
  case ATTN_DTYPE_BOOL:
    break;
  }
  return {1e-5, 1e-6, 1e-4, 2e-4};
}

// The layer rounds four times where attn.sdpa rounds once (q, k, v after
// the projections, the attention output before the output projection; the
// reference rounds nothing), each a relative half ulp (2^-11 f16, 2^-8
// bf16) of a tensor of order one (weights of +-1/sqrt(fan_in)), which the
// softmax and the output projection pass on at about their size. Measured
// (test/Integration/cpu/mha.test's shapes, E up to 256): rel. L2 3e-4 in
// f16, 2e-3 in bf16, 2e-7 in f32, 7-200x inside attn.sdpa's bounds, whose
// magnitude term also grows with the output projection's cancellation. So
// the layer is held to attn.sdpa's bounds, not looser ones.
Tolerance mhaToleranceFor(attn_dtype dtype) { return toleranceFor(dtype); }

void fillRandom(std::mt19937_64 &rng, attn_dtype dtype, void *data,
                size_t count, double scale) {
  if (dtype == ATTN_DTYPE_BOOL) {
    // A kept element is any nonzero byte (attn.h: nonzero attends), not
    // only 1: even bytes and 0xFF too, so a kernel that tests the low bit
    // or compares with 1 fails the checks.
    std::bernoulli_distribution keep(std::clamp(scale, 0.0, 1.0));
    std::uniform_int_distribution<int> byte(1, 255);
    for (size_t n = 0; n < count; ++n)
      static_cast<uint8_t *>(data)[n] =
          keep(rng) ? static_cast<uint8_t>(byte(rng)) : 0;
    return;
  }
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (size_t n = 0; n < count; ++n)
    storeElement(dtype, data, static_cast<int64_t>(n), dist(rng) * scale);
}

void poison(attn_dtype dtype, void *data, size_t count) {
  // Quiet NaNs with a recognizable payload (0xDEAD-ish) for debugging dumps.
  switch (dtype) {
  case ATTN_DTYPE_F16:
    std::fill_n(static_cast<uint16_t *>(data), count, uint16_t(0x7EAD));
    return;
  case ATTN_DTYPE_BF16:
    std::fill_n(static_cast<uint16_t *>(data), count, uint16_t(0x7FAD));
    return;
  case ATTN_DTYPE_F32:
    std::fill_n(static_cast<uint32_t *>(data), count, uint32_t(0x7FC0DEADu));
    return;
  case ATTN_DTYPE_BOOL:
    std::fill_n(static_cast<uint8_t *>(data), count, uint8_t(0xA5));
    return;
  }
}

static std::string where(const char *name, std::initializer_list<int64_t> idx) {
  std::ostringstream os;
  os << name << "[";
  bool first = true;
  for (int64_t x : idx) {
    os << (first ? "" : ",") << x;
    first = false;
  }
  os << "]";
  return os.str();
}

Comparison compare(const Result &ref, attn_dtype dtype, const attn_tensor &out,
                   const attn_tensor *lse, const Tolerance &tol) {
  Comparison c;
  auto fail = [&](const std::string &message) {
    if (c.ok)
      c.message = message;
    c.ok = false;
  };
  if (out.shape[0] != ref.batch || out.shape[1] != ref.headsQ ||
      out.shape[2] != ref.seqQ || out.shape[3] != ref.valueDim) {
    fail("out shape differs from the reference's");
    return c;
  }
  const bool hasMagnitude = ref.magnitude.size() == ref.out.size();
  double diffSq = 0, refSq = 0, magSq = 0, refMax = 0;
  for (int64_t b = 0; b < ref.batch; ++b)
    for (int64_t h = 0; h < ref.headsQ; ++h)
      for (int64_t i = 0; i < ref.seqQ; ++i)
        for (int64_t d = 0; d < ref.valueDim; ++d) {
          const size_t at = static_cast<size_t>(
              ((b * ref.headsQ + h) * ref.seqQ + i) * ref.valueDim + d);
          double r = ref.out[at];
          double o = loadElement(dtype, out.data,
                                 b * out.strides[0] + h * out.strides[1] +
                                     i * out.strides[2] + d * out.strides[3]);
          refSq += r * r;
          double mag = hasMagnitude ? ref.magnitude[at] : 0.0;
          // A non-finite magnitude (a non-finite input the semantics leave
          // unspecified) widens nothing.
          if (std::isfinite(mag))
            magSq += mag * mag;
          refMax = std::max(refMax, std::fabs(r));
          if (!std::isfinite(o)) {
            if (c.badOut++ == 0) {
              std::ostringstream os;
              os << where("out", {b, h, i, d}) << " = " << o
                 << " (unwritten or NaN), reference " << r;
              fail(os.str());
            }
            continue;
          }
          double e = std::fabs(o - r);
          diffSq += e * e;
          c.maxAbsErr = std::max(c.maxAbsErr, e);
        }
  const double refNorm = std::max(std::sqrt(refSq), 1e-30);
  c.relL2Err = std::sqrt(diffSq) / refNorm;
  c.relL2Tol = tol.relL2 + tol.magRel * std::sqrt(magSq) / refNorm;
  if (c.badOut) {
    c.maxAbsErr = c.relL2Err = std::numeric_limits<double>::infinity();
  } else {
    if (!(c.relL2Err <= c.relL2Tol)) {
      std::ostringstream os;
      os << "rel_l2_err " << c.relL2Err << " > " << c.relL2Tol;
      if (c.relL2Tol > tol.relL2)
        os << " (" << tol.relL2 << " + " << tol.magRel
           << " x ||sum w |v||| / ||ref||)";
      fail(os.str());
    }
    if (c.maxAbsErr > tol.maxAbs * std::max(1.0, refMax)) {
      std::ostringstream os;
      os << "max_abs_err " << c.maxAbsErr << " > "
         << tol.maxAbs * std::max(1.0, refMax);
      fail(os.str());
    }
  }
  if (!lse)
    return c;
  for (int64_t b = 0; b < ref.batch; ++b)
    for (int64_t h = 0; h < ref.headsQ; ++h)
      for (int64_t i = 0; i < ref.seqQ; ++i) {
        double r = ref.lse[(b * ref.headsQ + h) * ref.seqQ + i];
        double o = static_cast<const float *>(
            lse->data)[b * lse->strides[0] + h * lse->strides[1] +
                       i * lse->strides[2]];
        bool bad = std::isinf(r) ? o != r : !std::isfinite(o);
        if (bad) {
          if (c.badLse++ == 0) {
            std::ostringstream os;
            os << where("lse", {b, h, i}) << " = " << o << ", reference " << r;
            fail(os.str());
          }
          continue;
        }
        if (!std::isfinite(r))
          continue;
        double err = std::fabs(o - r);
        c.lseMaxAbsErr = std::max(c.lseMaxAbsErr, err);
        double bound = tol.lseAbs + tol.lseRel * std::fabs(r);
        if (err > bound && c.lseOverTol++ == 0) {
          std::ostringstream os;
          os << where("lse", {b, h, i}) << " = " << o << ", reference " << r
             << ": |error| " << err << " > " << tol.lseAbs << " + "
             << tol.lseRel << " x |reference| = " << bound;
          fail(os.str());
        }
      }
  return c;
}

} // namespace attn::reference
