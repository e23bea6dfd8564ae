//===- ReferenceTest.cpp - unit tests of the float64 reference library ----===//
//
// The reference is what every kernel is judged against, so it is checked
// here on its own: conversions bit by bit, Philox against the published
// Random123 known answers, attention on hand-computed cases and properties.
//
//===----------------------------------------------------------------------===//
#include "attn/reference/Check.h"
#include "attn/reference/Dropout.h"
#include "attn/reference/Float.h"
#include "attn/reference/Reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

using namespace attn::reference;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

float bitsToFloat(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

TEST(Float, HalfKnownValues) {
  EXPECT_EQ(floatToHalfBits(1.0f), 0x3C00);
  EXPECT_EQ(floatToHalfBits(-2.0f), 0xC000);
  EXPECT_EQ(floatToHalfBits(0.0f), 0x0000);
  EXPECT_EQ(floatToHalfBits(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalfBits(65504.0f), 0x7BFF);
  EXPECT_EQ(floatToHalfBits(65519.0f), 0x7BFF);
  EXPECT_EQ(floatToHalfBits(65520.0f), 0x7C00); // tie, odd mantissa: up to inf
  EXPECT_EQ(floatToHalfBits(1e10f), 0x7C00);
  EXPECT_EQ(floatToHalfBits(-INFINITY), 0xFC00);
  // Ties to even in the normal range: 1 + 2^-11 is halfway 1 and 1 + 2^-10.
  EXPECT_EQ(floatToHalfBits(1.0f + 0x1p-11f), 0x3C00);
  EXPECT_EQ(floatToHalfBits(1.0f + 3 * 0x1p-11f), 0x3C02);
  EXPECT_EQ(floatToHalfBits(1.0f + 0x1p-11f + 0x1p-20f), 0x3C01);
  // Subnormals: the smallest is 2^-24; 2^-25 is a tie to 0 (even).
  EXPECT_EQ(floatToHalfBits(0x1p-24f), 0x0001);
  EXPECT_EQ(floatToHalfBits(0x1p-25f), 0x0000);
  EXPECT_EQ(floatToHalfBits(0x1p-25f * 1.0001f), 0x0001);
  EXPECT_EQ(floatToHalfBits(3 * 0x1p-25f), 0x0002);
  EXPECT_EQ(floatToHalfBits(5 * 0x1p-25f), 0x0002);
  EXPECT_EQ(floatToHalfBits(-0x1p-24f), 0x8001);
  EXPECT_EQ(floatToHalfBits(0x1p-14f), 0x0400);
  EXPECT_EQ(floatToHalfBits(0x1p-14f - 0x1p-25f), 0x0400); // tie, rounds up
  EXPECT_EQ(floatToHalfBits(1e-30f), 0x0000);
  uint16_t nan = floatToHalfBits(NAN);
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x03FF, 0);
  // A signalling float NaN whose payload sits below bit 13 stays a NaN.
  EXPECT_NE(floatToHalfBits(bitsToFloat(0x7F800001u)) & 0x03FF, 0);
}

TEST(Float, HalfRoundTripsEveryValue) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    float f = halfBitsToFloat(static_cast<uint16_t>(bits));
    if (std::isnan(f)) {
      EXPECT_EQ(bits & 0x7C00, 0x7C00u);
      continue;
    }
    ASSERT_EQ(floatToHalfBits(f), bits) << std::hex << bits;
  }
  EXPECT_EQ(halfBitsToFloat(0x0001), 0x1p-24f);
  EXPECT_EQ(halfBitsToFloat(0x7BFF), 65504.0f);
  EXPECT_EQ(halfBitsToFloat(0x3555), 0.333251953125f);
}

TEST(Float, BF16KnownValuesAndRoundTrip) {
  EXPECT_EQ(floatToBF16Bits(1.0f), 0x3F80);
  EXPECT_EQ(floatToBF16Bits(1.0f + 0x1p-8f), 0x3F80); // tie to even
  EXPECT_EQ(floatToBF16Bits(1.0f + 3 * 0x1p-8f), 0x3F82);
  EXPECT_EQ(floatToBF16Bits(1.0f + 0x1p-8f + 0x1p-20f), 0x3F81);
  EXPECT_EQ(floatToBF16Bits(3.4028235e38f), 0x7F80); // rounds past max: inf
  EXPECT_EQ(floatToBF16Bits(-INFINITY), 0xFF80);
  uint16_t nan = floatToBF16Bits(bitsToFloat(0x7F800001u));
  EXPECT_EQ(nan & 0x7F80, 0x7F80);
  EXPECT_NE(nan & 0x007F, 0);
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    float f = bf16BitsToFloat(static_cast<uint16_t>(bits));
    if (!std::isnan(f)) {
      ASSERT_EQ(floatToBF16Bits(f), bits) << std::hex << bits;
    }
  }
}

// The Random123 known-answer vectors for philox4x32_10 (kat_vectors):
// an independent check that rounds, constants and key schedule are right.
TEST(Dropout, PhiloxRandom123KnownAnswers) {
  using A4 = std::array<uint32_t, 4>;
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}),
            (A4{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                          {0xffffffff, 0xffffffff}),
            (A4{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                          {0xa4093822, 0x299f31d0}),
            (A4{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

// Known answers of the attn dropout decision itself. The MLIR path
// (attn-opt / the compiled kernels) must reproduce exactly these; the
// words are philox4x32_10({j, i, h, b}, {seed lo, seed hi})[0].
TEST(Dropout, KeepKnownAnswers) {
  const uint64_t seed = 0x0123456789ABCDEFull;
  struct Case {
    uint32_t b, h, i, j, word;
  };
  const Case cases[] = {
      {0, 0, 0, 0, 0xb850222e}, {0, 0, 0, 1, 0xadca1466},
      {0, 0, 1, 0, 0xd9412d6a}, {0, 1, 0, 0, 0xfa9dff5e},
      {1, 0, 0, 0, 0xd0e1fe69}, {3, 7, 100, 200, 0x24d8aac8},
  };
  for (const Case &c : cases) {
    uint32_t word = philox4x32_10({c.j, c.i, c.h, c.b},
                                  {uint32_t(seed), uint32_t(seed >> 32)})[0];
    EXPECT_EQ(word, c.word) << c.b << " " << c.h << " " << c.i << " " << c.j;
    for (double p : {0.0, 0.1, 0.5, 0.9})
      EXPECT_EQ(dropoutKeep(seed, c.b, c.h, c.i, c.j, p),
                uint64_t(c.word) >= uint64_t(std::ceil(p * 4294967296.0)));
  }
  EXPECT_EQ(dropoutThreshold(0.0), 0u);
  EXPECT_EQ(dropoutThreshold(0.5), 0x80000000u);
  EXPECT_EQ(dropoutThreshold(0.1), 429496730u); // ceil(429496729.6)
}

TEST(Dropout, KeptFractionAndSeedDependence) {
  const double p = 0.3;
  int64_t kept = 0, differ = 0, n = 0;
  for (uint32_t i = 0; i < 100; ++i)
    for (uint32_t j = 0; j < 1000; ++j, ++n) {
      bool k1 = dropoutKeep(42, 1, 2, i, j, p);
      kept += k1;
      differ += k1 != dropoutKeep(43, 1, 2, i, j, p);
    }
  // Binomial: sd = sqrt(n p (1-p)) = 145; allow 6 sd.
  EXPECT_NEAR(double(kept), n * (1 - p), 6 * std::sqrt(n * p * (1 - p)));
  // Independent seeds differ in 2 p (1 - p) of the decisions.
  EXPECT_NEAR(double(differ), n * 2 * p * (1 - p), 6 * std::sqrt(n * 0.25));
}

// A dense BHSD f32 tensor owned by a test.
struct Tensor {
  std::vector<float> data;
  attn_tensor t{};
  Tensor(int64_t a, int64_t b, int64_t c, int64_t d,
         std::vector<float> values = {}) {
    data = values.empty() ? std::vector<float>(size_t(a * b * c * d), 0.0f)
                          : values;
    t.data = data.data();
    int64_t shape[4] = {a, b, c, d};
    int64_t stride = 1;
    for (int k = 3; k >= 0; --k) {
      t.shape[k] = shape[k];
      t.strides[k] = stride;
      stride *= shape[k];
    }
  }
};

attn_spec f32Spec() {
  attn_spec s{};
  s.dtype = ATTN_DTYPE_F32;
  s.mask = ATTN_MASK_NONE;
  return s;
}

Result run(const attn_spec &spec, Tensor &q, Tensor &k, Tensor &v,
           Tensor *mask = nullptr, uint64_t seed = 0) {
  attn_launch_args args{};
  args.q = q.t;
  args.k = k.t;
  args.v = v.t;
  if (mask)
    args.mask = mask->t;
  args.seed = seed;
  Result r;
  std::string error;
  EXPECT_TRUE(computeReference(spec, args, r, error)) << error;
  return r;
}

TEST(Reference, HandComputedSoftmax) {
  // Scores 0 and ln 2: probabilities 1/3, 2/3; out = 3/3 + 2*6/3 = 5.
  attn_spec s = f32Spec();
  s.scale = 1.0;
  Tensor q(1, 1, 1, 1, {1.0f}), k(1, 1, 2, 1, {0.0f, float(std::log(2.0))}),
      v(1, 1, 2, 1, {3.0f, 6.0f});
  Result r = run(s, q, k, v);
  EXPECT_NEAR(r.out[0], 5.0, 1e-6);
  EXPECT_NEAR(r.lse[0], std::log(3.0), 1e-7);
}

TEST(Reference, DefaultScaleIsInverseSqrtD) {
  attn_spec s = f32Spec(); // scale 0
  Tensor q(1, 1, 1, 4, {1, 1, 1, 1}), k(1, 1, 2, 4, {1, 1, 1, 1, 0, 0, 0, 0}),
      v(1, 1, 2, 1, {1.0f, 0.0f});
  // dot = 4, scaled by 1/2: scores 2 and 0.
  Result r = run(s, q, k, v);
  EXPECT_NEAR(r.out[0], std::exp(2.0) / (std::exp(2.0) + 1.0), 1e-12);
  EXPECT_NEAR(r.lse[0], std::log(std::exp(2.0) + 1.0), 1e-12);
}

TEST(Reference, CausalBottomRightAndEmptyRows) {
  // Sq = 2, Skv = 3: row 0 sees keys 0..1, row 1 sees 0..2.
  attn_spec s = f32Spec();
  s.causal = 1;
  s.scale = 1.0;
  Tensor q(1, 1, 2, 1, {0, 0}), k(1, 1, 3, 1, {0, 0, 0}),
      v(1, 1, 3, 1, {1, 2, 6});
  Result r = run(s, q, k, v);
  EXPECT_NEAR(r.out[0], 1.5, 1e-12);
  EXPECT_NEAR(r.out[1], 3.0, 1e-12);
  EXPECT_NEAR(r.lse[0], std::log(2.0), 1e-12);
  // Sq = 3 > Skv = 1: rows 0 and 1 see nothing, row 2 sees key 0.
  Tensor q3(1, 1, 3, 1, {0, 0, 0}), k1(1, 1, 1, 1, {0}), v1(1, 1, 1, 1, {7});
  r = run(s, q3, k1, v1);
  EXPECT_EQ(r.out[0], 0.0);
  EXPECT_EQ(r.out[1], 0.0);
  EXPECT_EQ(r.lse[0], -kInf);
  EXPECT_EQ(r.lse[1], -kInf);
  EXPECT_NEAR(r.out[2], 7.0, 1e-12);
  EXPECT_NEAR(r.lse[2], 0.0, 1e-12);
}

TEST(Reference, BoolMaskWithFullyMaskedRowAndBroadcast) {
  attn_spec s = f32Spec();
  s.mask = ATTN_MASK_BOOL;
  s.mask_dtype = ATTN_DTYPE_BOOL;
  s.scale = 1.0;
  // B = 2, H = 2, mask [1, 1, 2, 2] broadcast: row 0 keeps key 1, row 1 none.
  Tensor q(2, 2, 2, 1), k(2, 2, 2, 1), v(2, 2, 2, 1);
  for (int n = 0; n < 8; ++n)
    v.data[n] = float(n + 1);
  std::vector<uint8_t> bytes = {0, 1, 0, 0};
  attn_tensor m{bytes.data(), {1, 1, 2, 2}, {0, 0, 2, 1}};
  attn_launch_args args{};
  args.q = q.t;
  args.k = k.t;
  args.v = v.t;
  args.mask = m;
  Result r;
  std::string error;
  ASSERT_TRUE(computeReference(s, args, r, error)) << error;
  for (int bh = 0; bh < 4; ++bh) {
    EXPECT_EQ(r.out[bh * 2 + 0], v.data[bh * 2 + 1]);
    EXPECT_NEAR(r.lse[bh * 2 + 0], 0.0, 1e-12);
    EXPECT_EQ(r.out[bh * 2 + 1], 0.0);
    EXPECT_EQ(r.lse[bh * 2 + 1], -kInf);
  }
  // A mask that does not broadcast is an error, not a crash.
  attn_tensor bad{bytes.data(), {3, 1, 2, 2}, {0, 0, 2, 1}};
  args.mask = bad;
  EXPECT_FALSE(computeReference(s, args, r, error));
  EXPECT_NE(error.find("does not broadcast"), std::string::npos);
}

TEST(Reference, AdditiveMaskPerHead) {
  attn_spec s = f32Spec();
  s.mask = ATTN_MASK_ADDITIVE;
  s.mask_dtype = ATTN_DTYPE_F32;
  s.scale = 1.0;
  // Hq = 2, mask [1, 2, 1, 2]: head 0 adds (0, ln 3), head 1 adds (ln 3, 0).
  Tensor q(1, 2, 1, 1), k(1, 1, 2, 1), v(1, 1, 2, 1, {0, 4});
  Tensor m(1, 2, 1, 2,
           {0.0f, float(std::log(3.0)), float(std::log(3.0)), 0.0f});
  Result r = run(s, q, k, v, &m);
  EXPECT_NEAR(r.out[0], 3.0, 1e-6);
  EXPECT_NEAR(r.out[1], 1.0, 1e-6);
  EXPECT_NEAR(r.lse[0], std::log(4.0), 1e-6);
}

TEST(Reference, GQAReadsHeadOverGroup) {
  // Hq = 4, Hkv = 2: heads 0, 1 read kv head 0; heads 2, 3 read kv head 1.
  attn_spec s = f32Spec();
  Tensor q(1, 4, 1, 1), k(1, 2, 1, 1), v(1, 2, 1, 1, {5, 9});
  Result r = run(s, q, k, v);
  EXPECT_EQ(r.out, (std::vector<double>{5, 5, 9, 9}));
  // Hq not a multiple of Hkv is an error.
  Tensor q3(1, 3, 1, 1);
  attn_launch_args args{};
  args.q = q3.t;
  args.k = k.t;
  args.v = v.t;
  std::string error;
  EXPECT_FALSE(computeReference(s, args, r, error));
}

TEST(Reference, RowsSumToOneAndStridesDoNotMatter) {
  // V = ones: every row that sees a key outputs exactly its row sum, 1.
  std::mt19937_64 rng(7);
  const int64_t B = 2, Hq = 4, Hkv = 2, Sq = 5, Skv = 7, D = 3;
  Tensor q(B, Hq, Sq, D), k(B, Hkv, Skv, D), v(B, Hkv, Skv, 2),
      m(B, 1, Sq, Skv);
  fillRandom(rng, ATTN_DTYPE_F32, q.data.data(), q.data.size(), 2.0);
  fillRandom(rng, ATTN_DTYPE_F32, k.data.data(), k.data.size(), 2.0);
  fillRandom(rng, ATTN_DTYPE_F32, m.data.data(), m.data.size(), 3.0);
  std::fill(v.data.begin(), v.data.end(), 1.0f);
  attn_spec s = f32Spec();
  s.causal = 1;
  s.mask = ATTN_MASK_ADDITIVE;
  s.mask_dtype = ATTN_DTYPE_F32;
  Result r = run(s, q, k, v, &m);
  for (double o : r.out)
    EXPECT_NEAR(o, 1.0, 1e-12);

  // The same q in BSHD storage (strides only) gives the same result.
  std::vector<float> qs(q.data.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t i = 0; i < Sq; ++i)
        for (int64_t d = 0; d < D; ++d)
          qs[((b * Sq + i) * Hq + h) * D + d] =
              q.data[((b * Hq + h) * Sq + i) * D + d];
  fillRandom(rng, ATTN_DTYPE_F32, v.data.data(), v.data.size(), 1.0);
  Result dense = run(s, q, k, v, &m);
  Tensor qb = q;
  qb.data = qs;
  qb.t.data = qb.data.data();
  qb.t.strides[0] = Sq * Hq * D;
  qb.t.strides[1] = D;
  qb.t.strides[2] = Hq * D;
  Result strided = run(s, qb, k, v, &m);
  EXPECT_EQ(dense.out, strided.out);
  EXPECT_EQ(dense.lse, strided.lse);
}

TEST(Reference, DropoutScalesKeptProbabilitiesOnly) {
  attn_spec s = f32Spec();
  s.dropout_p = 0.5;
  const int64_t Skv = 64;
  Tensor q(1, 1, 1, 1), k(1, 1, Skv, 1), v(1, 1, Skv, Skv);
  // One-hot V rows: out[j] reveals the weight of key j.
  for (int64_t j = 0; j < Skv; ++j)
    v.data[j * Skv + j] = 1.0f;
  const uint64_t seed = 1234;
  Result r = run(s, q, k, v, nullptr, seed);
  int kept = 0;
  for (int64_t j = 0; j < Skv; ++j) {
    bool keep = dropoutKeep(seed, 0, 0, 0, uint32_t(j), 0.5);
    kept += keep;
    EXPECT_NEAR(r.out[j], keep ? (1.0 / Skv) / 0.5 : 0.0, 1e-15);
  }
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, Skv);
  EXPECT_NEAR(r.lse[0], std::log(double(Skv)), 1e-12); // lse ignores dropout
}

TEST(Reference, HalfInputsReadExactly) {
  attn_spec s{};
  s.dtype = ATTN_DTYPE_F16;
  s.scale = 1.0;
  std::vector<uint16_t> q = {floatToHalfBits(0.1f)}, k = {floatToHalfBits(1)},
                        v = {floatToHalfBits(0.1f)};
  attn_launch_args args{};
  args.q = {q.data(), {1, 1, 1, 1}, {1, 1, 1, 1}};
  args.k = {k.data(), {1, 1, 1, 1}, {1, 1, 1, 1}};
  args.v = {v.data(), {1, 1, 1, 1}, {1, 1, 1, 1}};
  Result r;
  std::string error;
  ASSERT_TRUE(computeReference(s, args, r, error)) << error;
  EXPECT_EQ(r.out[0], double(halfBitsToFloat(floatToHalfBits(0.1f))));
  EXPECT_EQ(r.lse[0], double(halfBitsToFloat(floatToHalfBits(0.1f))));
}

TEST(Check, ToleranceOrdering) {
  Tolerance f32 = toleranceFor(ATTN_DTYPE_F32), f16 = toleranceFor(ATTN_DTYPE_F16),
            bf16 = toleranceFor(ATTN_DTYPE_BF16);
  EXPECT_LT(f32.relL2, f16.relL2);
  EXPECT_LT(f16.relL2, bf16.relL2);
  // f16 rounding of out alone (RMS ~2.8e-4) must pass, bf16's (~2.3e-3) too.
  EXPECT_GT(f16.relL2, 2.8e-4 * 3);
  EXPECT_GT(bf16.relL2, 2.3e-3 * 3);
}

TEST(Check, CompareCatchesNaNAndLseMismatch) {
  Result ref;
  ref.batch = ref.headsQ = 1;
  ref.seqQ = 2;
  ref.valueDim = 2;
  ref.out = {0.5, -0.25, 0.0, 0.0};
  ref.lse = {1.5, -kInf};
  std::vector<uint16_t> out(4);
  poison(ATTN_DTYPE_F16, out.data(), out.size());
  attn_tensor ot{out.data(), {1, 1, 2, 2}, {4, 4, 2, 1}};
  std::vector<float> lse = {1.5f, -INFINITY};
  attn_tensor lt{lse.data(), {1, 1, 2, 0}, {2, 2, 1, 0}};
  Tolerance tol = toleranceFor(ATTN_DTYPE_F16);

  Comparison c = compare(ref, ATTN_DTYPE_F16, ot, &lt, tol);
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.badOut, 4);
  EXPECT_NE(c.message.find("unwritten"), std::string::npos) << c.message;

  for (int n = 0; n < 4; ++n)
    storeElement(ATTN_DTYPE_F16, out.data(), n, ref.out[n]);
  c = compare(ref, ATTN_DTYPE_F16, ot, &lt, tol);
  EXPECT_TRUE(c.ok) << c.message;
  EXPECT_EQ(c.maxAbsErr, 0.0);

  // One unwritten element among written ones still fails.
  out[3] = 0x7EAD;
  EXPECT_FALSE(compare(ref, ATTN_DTYPE_F16, ot, &lt, tol).ok);
  storeElement(ATTN_DTYPE_F16, out.data(), 3, 0.0);

  // A small error passes, a larger one fails.
  storeElement(ATTN_DTYPE_F16, out.data(), 0, 0.5 + 1e-3);
  EXPECT_TRUE(compare(ref, ATTN_DTYPE_F16, ot, &lt, tol).ok);
  storeElement(ATTN_DTYPE_F16, out.data(), 0, 0.52);
  c = compare(ref, ATTN_DTYPE_F16, ot, &lt, tol);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.message.find("rel_l2_err"), std::string::npos) << c.message;
  storeElement(ATTN_DTYPE_F16, out.data(), 0, 0.5);

  // lse: -inf must be exactly -inf; a finite row must be close.
  lse[1] = -1e30f;
  c = compare(ref, ATTN_DTYPE_F16, ot, &lt, tol);
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.badLse, 1);
  lse[1] = -INFINITY;
  lse[0] = 1.6f;
  EXPECT_FALSE(compare(ref, ATTN_DTYPE_F16, ot, &lt, tol).ok);
  lse[0] = NAN;
  EXPECT_FALSE(compare(ref, ATTN_DTYPE_F16, ot, &lt, tol).ok);
}

// Issue 22, item 7: lse ~ the largest scaled score, so at scale 1000 it
// is ~2e4, where f32 rounds it by ~2e-3; an absolute 2e-4 failed correct
// kernels. The bound is lseAbs + lseRel * |ref|.
TEST(Check, LseToleranceIsRelativeWhereLarge) {
  Result ref;
  ref.batch = ref.headsQ = ref.seqQ = 1;
  ref.valueDim = 1;
  ref.out = {0.5};
  ref.lse = {20000.0};
  std::vector<float> out = {0.5f};
  attn_tensor ot{out.data(), {1, 1, 1, 1}, {1, 1, 1, 1}};
  std::vector<float> lse = {20000.0f + 0.004f};
  attn_tensor lt{lse.data(), {1, 1, 1, 0}, {1, 1, 1, 0}};
  Tolerance tol = toleranceFor(ATTN_DTYPE_F32);
  EXPECT_DOUBLE_EQ(tol.lseRel, 1e-5);
  // One f32 ulp at 2e4 (~2e-3) and a few more pass...
  Comparison c = compare(ref, ATTN_DTYPE_F32, ot, &lt, tol);
  EXPECT_TRUE(c.ok) << c.message;
  // ...an error of 1 (5e-5 relative) does not, and is named.
  lse[0] = 20001.0f;
  c = compare(ref, ATTN_DTYPE_F32, ot, &lt, tol);
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.lseOverTol, 1);
  EXPECT_NE(c.message.find("lse[0,0,0]"), std::string::npos) << c.message;
  // Small |lse| keeps the absolute bound.
  ref.lse = {1.5};
  lse[0] = 1.5f + 1e-4f;
  EXPECT_TRUE(compare(ref, ATTN_DTYPE_F32, ot, &lt, tol).ok);
  lse[0] = 1.5f + 5e-4f;
  EXPECT_FALSE(compare(ref, ATTN_DTYPE_F32, ot, &lt, tol).ok);
}

// The magnitude sum_j w |v| is what the reference reports next to out:
// equal weights on v = 3 and -3 give out 0 and magnitude 3.
TEST(Reference, MagnitudeIsTheSumOfAbsoluteTerms) {
  attn_spec s = f32Spec();
  s.scale = 1.0;
  Tensor q(1, 1, 1, 1, {1.0f}), k(1, 1, 2, 1, {0.5f, 0.5f}),
      v(1, 1, 2, 1, {3.0f, -3.0f});
  Result r = run(s, q, k, v);
  ASSERT_EQ(r.magnitude.size(), 1u);
  EXPECT_NEAR(r.out[0], 0.0, 1e-12);
  EXPECT_NEAR(r.magnitude[0], 3.0, 1e-12);
}

// Issue 22, item 3: an output whose terms cancel (one column of millions of
// nearly equal weights on values of both signs sums to ~1e-4 from terms of
// ~0.5) carries the rounding of its terms, not of its value; relative to
// |out| alone correct kernels failed. The bound adds magRel times the
// magnitudes' norm, and still catches an error far above rounding.
TEST(Check, RelL2BoundCountsCancellingTerms) {
  Result ref;
  ref.batch = ref.headsQ = ref.seqQ = ref.valueDim = 1;
  ref.out = {1e-4};
  ref.magnitude = {0.5};
  ref.lse = {16.6};
  std::vector<float> out = {float(1e-4 + 3e-9)};
  attn_tensor ot{out.data(), {1, 1, 1, 1}, {1, 1, 1, 1}};
  Tolerance tol = toleranceFor(ATTN_DTYPE_F32);
  EXPECT_DOUBLE_EQ(tol.magRel, 1e-6);
  // 3e-5 of |out| (beyond relL2 = 1e-5), 6e-9 of the magnitudes: passes.
  Comparison c = compare(ref, ATTN_DTYPE_F32, ot, nullptr, tol);
  EXPECT_TRUE(c.ok) << c.message;
  EXPECT_GT(c.relL2Err, tol.relL2);
  EXPECT_NEAR(c.relL2Tol, 1e-5 + 1e-6 * 0.5 / 1e-4, 1e-9);
  // Without the magnitudes the plain bound applies and the same error fails.
  Result plain = ref;
  plain.magnitude.clear();
  c = compare(plain, ATTN_DTYPE_F32, ot, nullptr, tol);
  EXPECT_FALSE(c.ok);
  EXPECT_DOUBLE_EQ(c.relL2Tol, tol.relL2);
  // 2e-6 absolute (4e-6 of the magnitudes, a wrong key among 10^5): fails,
  // and the message states the bound.
  out[0] = float(1e-4 + 2e-6);
  c = compare(ref, ATTN_DTYPE_F32, ot, nullptr, tol);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.message.find("||sum w |v|||"), std::string::npos) << c.message;
}

TEST(Check, FillRandomRange) {
  std::mt19937_64 rng(1);
  std::vector<uint16_t> h(1000);
  fillRandom(rng, ATTN_DTYPE_BF16, h.data(), h.size(), 0.5);
  double lo = 1, hi = -1;
  for (uint16_t x : h) {
    double v = bf16BitsToFloat(x);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_GE(lo, -0.5);
  EXPECT_LE(hi, 0.5);
  EXPECT_LT(lo, -0.4);
  EXPECT_GT(hi, 0.4);
}

} // namespace
