//===- NumericTest.cpp - compiled cpu kernels vs the float64 reference ----===//
//
// A randomized matrix through the C API: every case compiles a spec with
// dynamic B/H/S (so one kernel serves many shapes, the cache keeps compiles
// few), fills fresh random inputs, poisons the outputs, launches, and
// compares with attn::reference under the per-dtype tolerances.
// ATTN_TEST_SEED=<n> reproduces a run; the seed is printed first.
//
//===----------------------------------------------------------------------===//
#include "attn/reference/Check.h"
#include "attn/reference/Dropout.h"
#include "attn/reference/Float.h"
#include "attn/reference/Reference.h"
#include "attn/runtime/attn.h"
#include "attn/runtime/attn_vulkan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

using namespace attn::reference;

namespace {

uint64_t baseSeed() {
  static const uint64_t seed = [] {
    uint64_t s;
    if (const char *env = std::getenv("ATTN_TEST_SEED"))
      s = std::strtoull(env, nullptr, 0);
    else
      s = std::random_device{}() * 0x9E3779B97F4A7C15ull ^ std::random_device{}();
    std::printf("attn-numeric-tests: ATTN_TEST_SEED=%llu\n",
                static_cast<unsigned long long>(s));
    return s;
  }();
  return seed;
}

/// A generator per test, so one test reproduces alone (--gtest_filter).
std::mt19937_64 testRng() {
  const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "." + info->name();
  return std::mt19937_64(baseSeed() ^ std::hash<std::string>{}(name));
}

attn_context *context() {
  static attn_context *ctx = [] {
    attn_context *c = nullptr;
    if (attn_context_create(&c) != ATTN_OK)
      return static_cast<attn_context *>(nullptr);
    return c;
  }();
  return ctx;
}

/// One case: the spec fields plus the shapes and storage of this launch.
struct Case {
  attn_dtype dtype = ATTN_DTYPE_F32;
  int64_t B = 1, Hq = 1, Hkv = 1, Sq = 16, Skv = 16, D = 64, Dv = 0;
  bool causal = false;
  attn_mask_kind mask = ATTN_MASK_NONE;
  attn_dtype maskDtype = ATTN_DTYPE_F32; // additive masks
  bool maskB1 = true, maskH1 = true;     // broadcast dims
  double dropout = 0.0;
  uint64_t seed = 0;
  bool lse = false;
  double scale = 0.0;
  attn_variant variant = ATTN_VARIANT_DEFAULT;
  int64_t blockQ = 0, blockKv = 0, kvSplits = 0;
  bool bshd = false;
  bool staticShapes = false;
  /// One non-finite element (NaN, +inf or -inf: `nonFiniteValue`) written
  /// into q ('q'), k ('k') or v ('v') at batch 0, head `nonFiniteHead` (a
  /// query head for q, a kv head for k and v), position `nonFinitePos`,
  /// element 0; check() then compares only the rows docs/Semantics.md
  /// specifies for it ("Non-finite inputs"). 0: none.
  char nonFinite = 0;
  double nonFiniteValue = 0.0;
  int64_t nonFiniteHead = 0, nonFinitePos = 0;
  /// Finite scores beyond FLT_MAX / log2 e (docs/Semantics.md): 'm': an
  /// additive mask whose rows cycle through all `lowest` (Hugging Face's
  /// padding: every key equal, the uniform average), `lowest` and -3.0e38
  /// mixed (the -3.0e38 keys only), one key at +2.4e38 (that key only) and
  /// an ordinary row; q is zero on the first two kinds, so that their
  /// scores are the mask exactly in f32 and in the float64 reference
  /// alike. 's': D = 1, scale 1, scores q k up to +-2.4e38 from q = +-1.5e19
  /// and k in +-1.6e19 (one key per row wins). 0: none.
  char extreme = 0;
  attn_target target = ATTN_TARGET_CPU;

  std::string str() const {
    std::ostringstream os;
    os << "dtype=" << attn_dtype_name(dtype) << " B=" << B << " Hq=" << Hq
       << " Hkv=" << Hkv << " Sq=" << Sq << " Skv=" << Skv << " D=" << D
       << " Dv=" << (Dv ? Dv : D) << " causal=" << causal << " mask=" << mask
       << (mask ? std::string(" maskB1=") + std::to_string(maskB1) +
                      " maskH1=" + std::to_string(maskH1)
                : std::string())
       << " dropout=" << dropout << " seed=" << seed << " lse=" << lse
       << " scale=" << scale << " variant=" << variant << " block=" << blockQ
       << "x" << blockKv << " kv_splits=" << kvSplits
       << " layout=" << (bshd ? "bshd" : "bhsd") << " static=" << staticShapes
       << (extreme ? std::string(" extreme=") + extreme : std::string())
       << " target=" << attn_target_name(target);
    return os.str();
  }

  attn_spec spec() const {
    attn_spec s;
    attn_spec_init(&s);
    s.dtype = dtype;
    if (staticShapes) {
      s.batch = B;
      s.heads_q = Hq;
      s.heads_kv = Hkv;
      s.seq_q = Sq;
      s.seq_kv = Skv;
    }
    s.head_dim = D;
    s.value_dim = Dv;
    s.causal = causal;
    s.mask = mask;
    s.mask_dtype = mask == ATTN_MASK_BOOL ? ATTN_DTYPE_BOOL : maskDtype;
    s.scale = scale;
    s.dropout_p = dropout;
    s.return_lse = lse;
    s.variant = variant;
    s.block_q = blockQ;
    s.block_kv = blockKv;
    s.kv_splits = kvSplits;
    return s;
  }
};

/// Host buffers of one launch, in the layout the case asks for.
struct Buffers {
  std::vector<uint8_t> q, k, v, mask, out, lse;
  attn_launch_args args{};
};

attn_tensor tensorOver(std::vector<uint8_t> &buf, int64_t B, int64_t H,
                       int64_t S, int64_t D, bool bshd) {
  attn_tensor t{};
  t.data = buf.data();
  int64_t shape[4] = {B, H, S, D};
  std::memcpy(t.shape, shape, sizeof(shape));
  t.strides[3] = 1;
  if (bshd) {
    t.strides[1] = D;
    t.strides[2] = H * D;
    t.strides[0] = S * H * D;
  } else {
    t.strides[2] = D;
    t.strides[1] = S * D;
    t.strides[0] = H * S * D;
  }
  return t;
}

/// Element `i` of tensor `t` (strides in elements) at (b, h, s, d).
int64_t offsetOf(const attn_tensor &t, int64_t b, int64_t h, int64_t s,
                 int64_t d) {
  return b * t.strides[0] + h * t.strides[1] + s * t.strides[2] +
         d * t.strides[3];
}

/// Overwrites the random inputs of `c` with its `extreme` pattern (see
/// Case::extreme).
void makeExtreme(const Case &c, std::mt19937_64 &rng, Buffers &bufs) {
  attn_launch_args &a = bufs.args;
  if (c.extreme == 's') {
    std::uniform_real_distribution<double> unit(-1.0, 1.0);
    for (int64_t b = 0; b < c.B; ++b) {
      for (int64_t h = 0; h < c.Hq; ++h)
        for (int64_t i = 0; i < c.Sq; ++i)
          storeElement(c.dtype, const_cast<void *>(a.q.data),
                       offsetOf(a.q, b, h, i, 0), i % 2 ? -1.5e19 : 1.5e19);
      for (int64_t h = 0; h < c.Hkv; ++h)
        for (int64_t j = 0; j < c.Skv; ++j)
          storeElement(c.dtype, const_cast<void *>(a.k.data),
                       offsetOf(a.k, b, h, j, 0), 1.6e19 * unit(rng));
    }
    return;
  }
  // 'm': rows of the (possibly broadcast) mask by kind i % 4.
  const double lowest =
      c.maskDtype == ATTN_DTYPE_BF16 ? -3.3895e38 : -3.4028234663852886e38;
  const int64_t Bm = a.mask.shape[0], Hm = a.mask.shape[1];
  std::uniform_int_distribution<int64_t> key(0, c.Skv - 1);
  for (int64_t b = 0; b < Bm; ++b)
    for (int64_t h = 0; h < Hm; ++h)
      for (int64_t i = 0; i < c.Sq; ++i) {
        const int64_t winner = key(rng);
        for (int64_t j = 0; j < c.Skv; ++j) {
          double x;
          switch (i % 4) {
          case 0: x = lowest; break;
          case 1: x = j % 3 == 1 ? -3.0e38 : lowest; break;
          case 2: x = j == winner ? 2.4e38 : 0.5; break;
          default: continue;
          }
          storeElement(c.maskDtype, const_cast<void *>(a.mask.data),
                       offsetOf(a.mask, b, h, i, j), x);
        }
      }
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.Hq; ++h)
      for (int64_t i = 0; i < c.Sq; i += 4)
        for (int64_t r = i; r < std::min(i + 2, c.Sq); ++r)
          for (int64_t d = 0; d < c.D; ++d)
            storeElement(c.dtype, const_cast<void *>(a.q.data),
                         offsetOf(a.q, b, h, r, d), 0.0);
}

/// Allocates and fills random inputs (and poisoned outputs) for `c`. Bool
/// masks are random with some rows fully masked.
void makeBuffers(const Case &c, std::mt19937_64 &rng, Buffers &bufs) {
  const int64_t Dv = c.Dv ? c.Dv : c.D;
  const size_t es = dtypeSize(c.dtype);
  auto alloc = [&](std::vector<uint8_t> &buf, size_t elems, size_t size) {
    buf.assign(elems * size + 64, 0); // + 64: never a zero-sized buffer
  };
  alloc(bufs.q, size_t(c.B * c.Hq * c.Sq * c.D), es);
  alloc(bufs.k, size_t(c.B * c.Hkv * c.Skv * c.D), es);
  alloc(bufs.v, size_t(c.B * c.Hkv * c.Skv * Dv), es);
  alloc(bufs.out, size_t(c.B * c.Hq * c.Sq * Dv), es);
  fillRandom(rng, c.dtype, bufs.q.data(), size_t(c.B * c.Hq * c.Sq * c.D), 1.0);
  fillRandom(rng, c.dtype, bufs.k.data(), size_t(c.B * c.Hkv * c.Skv * c.D), 1.0);
  fillRandom(rng, c.dtype, bufs.v.data(), size_t(c.B * c.Hkv * c.Skv * Dv), 1.0);
  bufs.args = attn_launch_args{};
  bufs.args.q = tensorOver(bufs.q, c.B, c.Hq, c.Sq, c.D, c.bshd);
  bufs.args.k = tensorOver(bufs.k, c.B, c.Hkv, c.Skv, c.D, c.bshd);
  bufs.args.v = tensorOver(bufs.v, c.B, c.Hkv, c.Skv, Dv, c.bshd);
  bufs.args.out = tensorOver(bufs.out, c.B, c.Hq, c.Sq, Dv, c.bshd);
  if (c.mask != ATTN_MASK_NONE) {
    const int64_t Bm = c.maskB1 ? 1 : c.B, Hm = c.maskH1 ? 1 : c.Hq;
    const size_t n = size_t(Bm * Hm * c.Sq * c.Skv);
    if (c.mask == ATTN_MASK_BOOL) {
      alloc(bufs.mask, n, 1);
      fillRandom(rng, ATTN_DTYPE_BOOL, bufs.mask.data(), n, 0.7);
      // About 15% of the rows empty, and row Sq / 2 of every (batch,
      // head) of the mask (tests count on one empty row per head).
      std::bernoulli_distribution empty(0.15);
      for (int64_t row = 0; row < Bm * Hm * c.Sq; ++row)
        if (empty(rng) || row % c.Sq == c.Sq / 2)
          std::memset(bufs.mask.data() + row * c.Skv, 0, size_t(c.Skv));
    } else {
      alloc(bufs.mask, n, dtypeSize(c.maskDtype));
      fillRandom(rng, c.maskDtype, bufs.mask.data(), n, 2.0);
    }
    bufs.args.mask = tensorOver(bufs.mask, Bm, Hm, c.Sq, c.Skv, false);
  }
  if (c.extreme)
    makeExtreme(c, rng, bufs);
  if (c.nonFinite) {
    const attn_tensor &t = c.nonFinite == 'q'   ? bufs.args.q
                           : c.nonFinite == 'k' ? bufs.args.k
                                                : bufs.args.v;
    storeElement(c.dtype, const_cast<void *>(t.data),
                 c.nonFiniteHead * t.strides[1] +
                     c.nonFinitePos * t.strides[2],
                 c.nonFiniteValue);
  }
  if (c.lse) {
    alloc(bufs.lse, size_t(c.B * c.Hq * c.Sq), 4);
    attn_tensor &l = bufs.args.lse;
    l.data = bufs.lse.data();
    l.shape[0] = c.B;
    l.shape[1] = c.Hq;
    l.shape[2] = c.Sq;
    l.strides[0] = c.Hq * c.Sq;
    l.strides[1] = c.Sq;
    l.strides[2] = 1;
    poison(ATTN_DTYPE_F32, bufs.lse.data(), size_t(c.B * c.Hq * c.Sq));
  }
  poison(c.dtype, bufs.out.data(), size_t(c.B * c.Hq * c.Sq * Dv));
  bufs.args.seed = c.seed;
}

/// Compiles (cached) and launches `c` on `bufs`; false + failure on error.
bool launch(const Case &c, Buffers &bufs) {
  attn_context *ctx = context();
  if (!ctx) {
    ADD_FAILURE() << "attn_context_create failed: " << attn_last_error();
    return false;
  }
  attn_spec spec = c.spec();
  attn_kernel *kernel = nullptr;
  attn_status st = attn_compile(ctx, &spec, c.target, &kernel);
  if (st != ATTN_OK) {
    ADD_FAILURE() << "attn_compile: " << attn_status_string(st) << ": "
                  << attn_last_error() << "\n  case: " << c.str();
    return false;
  }
  st = attn_launch(kernel, &bufs.args);
  if (st != ATTN_OK) {
    ADD_FAILURE() << "attn_launch: " << attn_status_string(st) << ": "
                  << attn_last_error() << "\n  case: " << c.str();
    return false;
  }
  return true;
}

/// Runs one case on fresh inputs and checks it against the reference.
Comparison check(const Case &c, std::mt19937_64 &rng, Buffers *keep = nullptr) {
  Buffers local;
  Buffers &bufs = keep ? *keep : local;
  makeBuffers(c, rng, bufs);
  Comparison cmp;
  if (!launch(c, bufs)) {
    cmp.ok = false;
    return cmp;
  }
  Result ref;
  std::string error;
  attn_spec spec = c.spec();
  if (!computeReference(spec, bufs.args, ref, error)) {
    ADD_FAILURE() << "reference: " << error << "\n  case: " << c.str();
    cmp.ok = false;
    return cmp;
  }
  if (c.nonFinite) {
    // The rows docs/Semantics.md leaves unspecified for this element: the
    // one row of a non-finite q element; every row of batch 0 whose query
    // head reads kv head nonFiniteHead for k and v. Zeroed in both.
    const int64_t g = c.Hq / c.Hkv, dv = c.Dv ? c.Dv : c.D;
    const attn_tensor &o = bufs.args.out;
    for (int64_t h = 0; h < c.Hq; ++h)
      for (int64_t i = 0; i < c.Sq; ++i) {
        bool unspecified = c.nonFinite == 'q'
                               ? h == c.nonFiniteHead && i == c.nonFinitePos
                               : h / g == c.nonFiniteHead;
        if (!unspecified)
          continue;
        for (int64_t d = 0; d < dv; ++d) {
          ref.out[(h * c.Sq + i) * dv + d] = 0.0;
          ref.magnitude[(h * c.Sq + i) * dv + d] = 0.0;
          storeElement(c.dtype, o.data,
                       h * o.strides[1] + i * o.strides[2] + d * o.strides[3],
                       0.0);
        }
        if (c.lse) {
          ref.lse[h * c.Sq + i] = 0.0;
          storeElement(ATTN_DTYPE_F32, bufs.args.lse.data,
                       h * bufs.args.lse.strides[1] +
                           i * bufs.args.lse.strides[2],
                       0.0);
        }
      }
  }
  cmp = compare(ref, c.dtype, bufs.args.out, c.lse ? &bufs.args.lse : nullptr,
                toleranceFor(c.dtype));
  EXPECT_TRUE(cmp.ok) << cmp.message << "\n  max_abs_err=" << cmp.maxAbsErr
                      << " rel_l2_err=" << cmp.relL2Err
                      << " lse_max_abs_err=" << cmp.lseMaxAbsErr
                      << "\n  case: " << c.str()
                      << "\n  reproduce: ATTN_TEST_SEED=" << baseSeed()
                      << " --gtest_filter="
                      << ::testing::UnitTest::GetInstance()
                             ->current_test_info()
                             ->test_suite_name()
                      << "."
                      << ::testing::UnitTest::GetInstance()
                             ->current_test_info()
                             ->name();
  return cmp;
}

int64_t uniform(std::mt19937_64 &rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

// Shapes: one dynamic f32 spec serves odd lengths, Sq != Skv both ways,
// Sq = 1, GQA 8:1 and 4:2, MQA, and both layouts; GQA decode steps (Sq = 1)
// go to the kernel's packed-decode variants (one per head count), past
// 2^16 keys split.
TEST(Numeric, ShapesF32) {
  auto rng = testRng();
  struct Shape {
    int64_t B, Hq, Hkv, Sq, Skv;
  };
  const Shape shapes[] = {{1, 1, 1, 1, 1},    {2, 3, 3, 17, 33},
                          {1, 2, 2, 33, 17},  {2, 2, 2, 1, 257},
                          {1, 8, 1, 37, 45},  {1, 4, 2, 63, 129},
                          {1, 6, 1, 5, 300},  {3, 2, 1, 129, 65},
                          {1, 8, 2, 1, 300},  {2, 6, 3, 1, 70001},
                          {1, 8, 2, 1, 1},    {1, 6, 1, 1, 129}};
  for (bool bshd : {false, true})
    for (const Shape &s : shapes) {
      Case c;
      c.B = s.B;
      c.Hq = s.Hq;
      c.Hkv = s.Hkv;
      c.Sq = s.Sq;
      c.Skv = s.Skv;
      c.bshd = bshd;
      c.lse = true;
      check(c, rng);
    }
}

// Random shapes over a few specs per dtype, with causal both ways.
TEST(Numeric, RandomShapesAllDtypes) {
  auto rng = testRng();
  for (attn_dtype dt : {ATTN_DTYPE_F16, ATTN_DTYPE_BF16, ATTN_DTYPE_F32})
    for (bool causal : {false, true})
      for (int n = 0; n < 5; ++n) {
        Case c;
        c.dtype = dt;
        c.causal = causal;
        c.lse = true;
        const int64_t ratios[][2] = {{1, 1}, {8, 1}, {4, 2}, {3, 1}};
        const auto *r = ratios[uniform(rng, 0, 3)];
        c.Hq = r[0];
        c.Hkv = r[1];
        c.B = uniform(rng, 1, 2);
        c.Sq = uniform(rng, 1, 200) | 1; // odd lengths
        c.Skv = n == 0 ? c.Sq : uniform(rng, 1, 300);
        c.bshd = uniform(rng, 0, 1);
        check(c, rng);
      }
}

// Causal alignment at the edges: Sq < Skv, Sq > Skv (rows with no key:
// out 0, lse -inf), Sq = Skv, Sq = 1.
TEST(Numeric, CausalEdges) {
  auto rng = testRng();
  const int64_t shapes[][2] = {{7, 50}, {50, 7}, {64, 64}, {1, 99}, {99, 1}};
  for (attn_variant var : {ATTN_VARIANT_DEFAULT, ATTN_VARIANT_MATH})
    for (const auto &s : shapes) {
      Case c;
      c.causal = true;
      c.lse = true;
      c.Hq = 2;
      c.Sq = s[0];
      c.Skv = s[1];
      c.variant = var;
      check(c, rng);
    }
}

// Masks: bool (with fully masked rows) and additive, every broadcast form,
// with and without causal; additive masks in each float type.
TEST(Numeric, Masks) {
  auto rng = testRng();
  for (attn_mask_kind kind : {ATTN_MASK_BOOL, ATTN_MASK_ADDITIVE})
    for (int bcast = 0; bcast < 4; ++bcast) {
      Case c;
      c.mask = kind;
      c.maskB1 = bcast & 1;
      c.maskH1 = bcast & 2;
      c.B = 2;
      c.Hq = 4;
      c.Hkv = 2;
      c.Sq = uniform(rng, 1, 90);
      c.Skv = uniform(rng, 1, 130);
      c.causal = bcast == 3;
      c.lse = true;
      check(c, rng);
    }
  for (attn_dtype dt : {ATTN_DTYPE_F16, ATTN_DTYPE_BF16})
    for (attn_dtype mdt : {dt, ATTN_DTYPE_F32}) {
      Case c;
      c.dtype = dt;
      c.mask = ATTN_MASK_ADDITIVE;
      c.maskDtype = mdt;
      c.maskH1 = false;
      c.Hq = 2;
      c.Sq = 41;
      c.Skv = 77;
      c.lse = true;
      check(c, rng);
    }
  Case c;
  c.dtype = ATTN_DTYPE_F16;
  c.mask = ATTN_MASK_BOOL;
  c.maskB1 = false;
  c.B = 2;
  c.Sq = 33;
  c.Skv = 200;
  c.lse = true;
  c.bshd = true;
  check(c, rng);
}

/// The n-th case of the small edge-value matrices below (non-finite
/// inputs, extreme scores): B 2, GQA 4:2, D 16, key blocks of 16, lse,
/// causal every third case, and on the cpu the math variant every other.
Case edgeMatrixCase(std::mt19937_64 &rng, attn_target target, int n,
                    int64_t minSq) {
  Case c;
  c.target = target;
  c.variant = target == ATTN_TARGET_CPU && n % 2 ? ATTN_VARIANT_MATH
                                                 : ATTN_VARIANT_DEFAULT;
  c.B = 2;
  c.Hq = 4;
  c.Hkv = 2;
  c.Sq = uniform(rng, minSq, 40);
  c.Skv = uniform(rng, 20, 200);
  c.D = 16;
  c.causal = n % 3 == 1;
  c.lse = true;
  c.blockKv = 16;
  return c;
}

// Non-finite inputs (docs/Semantics.md, "Non-finite inputs"): a NaN, +inf
// or -inf in q, k or v at a random place (keys a bool mask hides
// included, with causal, split-KV and GQA) leaves every row it does not
// touch exact; the rows it may reach are left out of the comparison. Every
// cpu variant; Vulkan.NonFiniteInputs runs the same on the Vulkan device.
/// Makes `c` carry one `value` in q, k or v (`where`) at a random head and
/// position (Case::nonFinite).
void placeNonFinite(Case &c, std::mt19937_64 &rng, char where, double value) {
  c.nonFinite = where;
  c.nonFiniteValue = value;
  c.nonFiniteHead = where == 'q' ? uniform(rng, 0, c.Hq - 1)
                                 : uniform(rng, 0, c.Hkv - 1);
  c.nonFinitePos = uniform(rng, 0, (where == 'q' ? c.Sq : c.Skv) - 1);
}

void nonFiniteMatrix(std::mt19937_64 &rng, attn_target target) {
  const double values[] = {std::nan(""), INFINITY, -INFINITY};
  const attn_dtype dtypes[] = {ATTN_DTYPE_F32, ATTN_DTYPE_F16,
                               ATTN_DTYPE_BF16};
  int n = 0;
  for (char where : {'q', 'k', 'v'})
    for (double value : values) {
      Case c = edgeMatrixCase(rng, target, n, /*minSq=*/1);
      c.dtype = dtypes[n % 3];
      c.mask = ATTN_MASK_BOOL;
      c.maskB1 = false;
      c.maskH1 = false;
      // Tiled cases (even n) both unsplit and split.
      c.kvSplits = (n / 2) % 2 ? 3 : 1;
      placeNonFinite(c, rng, where, value);
      check(c, rng);
      ++n;
    }
}

TEST(Numeric, NonFiniteInputs) {
  auto rng = testRng();
  nonFiniteMatrix(rng, ATTN_TARGET_CPU);
}

// The same for bf16 with D = 64 on the tiled variant, whose Q·Kᵀ tiles a
// host with AVX512-BF16 contracts with dot products (bf16-dot).
TEST(Numeric, NonFiniteInputsBf16Dot) {
  auto rng = testRng();
  const double values[] = {std::nan(""), INFINITY, -INFINITY};
  int n = 0;
  for (char where : {'q', 'k', 'v'})
    for (double value : values) {
      Case c = edgeMatrixCase(rng, ATTN_TARGET_CPU, 0, /*minSq=*/1);
      c.dtype = ATTN_DTYPE_BF16;
      c.D = 64;
      c.kvSplits = n % 2 ? 3 : 1;
      placeNonFinite(c, rng, where, value);
      check(c, rng);
      ++n;
    }
}

// Finite scores beyond FLT_MAX / log2 e (docs/Semantics.md, "Scores near
// the f32 range"): additive masks with finfo(f32).min rows (the uniform
// average, not out = 0 / lse = -inf), -3.0e38 among them, one +2.4e38
// key; raw scores up to +-2.4e38 at scale 1. Every mask dtype that holds
// them, GQA, causal, split-KV (the chunks' max and sum carry these
// scores to the merge), both cpu variants; Vulkan.ExtremeScores runs the
// same on the Vulkan device.
void extremeMatrix(std::mt19937_64 &rng, attn_target target) {
  int n = 0;
  for (attn_dtype dt : {ATTN_DTYPE_F32, ATTN_DTYPE_F16, ATTN_DTYPE_BF16})
    for (attn_dtype mdt : {ATTN_DTYPE_F32, ATTN_DTYPE_BF16}) {
      Case c = edgeMatrixCase(rng, target, n, /*minSq=*/5);
      c.dtype = dt;
      c.extreme = 'm';
      c.mask = ATTN_MASK_ADDITIVE;
      c.maskDtype = mdt;
      c.maskB1 = n % 3 != 0;
      c.maskH1 = n % 2 == 0;
      // Tiled cases (even n) both unsplit and split.
      c.kvSplits = (n / 2) % 2 ? 1 : 3;
      check(c, rng);
      ++n;
    }
  for (int64_t splits : {1, 3}) {
    Case c;
    c.target = target;
    c.extreme = 's';
    c.D = 1;
    c.scale = 1.0;
    c.Hq = 2;
    c.Sq = uniform(rng, 2, 40);
    c.Skv = uniform(rng, 20, 200);
    c.causal = splits == 3;
    c.lse = true;
    c.blockKv = 16;
    c.kvSplits = splits;
    check(c, rng);
  }
}

TEST(Numeric, ExtremeScores) {
  auto rng = testRng();
  extremeMatrix(rng, ATTN_TARGET_CPU);
}

// Head dims 32..256, and Dv != D both ways.
TEST(Numeric, HeadDims) {
  auto rng = testRng();
  const int64_t dims[][2] = {{32, 32}, {80, 80}, {128, 128}, {256, 256},
                             {64, 32}, {32, 128}};
  for (const auto &d : dims) {
    Case c;
    c.dtype = d[0] == 256 ? ATTN_DTYPE_F16 : ATTN_DTYPE_F32;
    c.D = d[0];
    c.Dv = d[1];
    c.Hq = 2;
    c.Hkv = 1;
    c.Sq = 45;
    c.Skv = 67;
    c.causal = d[0] == 80;
    c.lse = true;
    check(c, rng);
  }
}

// Tilings: block sizes that divide the lengths and that do not, split-KV
// off / explicit / automatic; causal + mask so tail tiles are masked too.
TEST(Numeric, Tilings) {
  auto rng = testRng();
  const int64_t tiles[][3] = {{16, 16, 1}, {32, 64, 1}, {24, 40, 1},
                              {16, 32, 3}, {64, 16, 2}, {0, 0, 0}};
  for (const auto &t : tiles) {
    Case c;
    c.blockQ = t[0];
    c.blockKv = t[1];
    c.kvSplits = t[2];
    c.Hq = 2;
    c.Hkv = 1;
    c.D = 32;
    c.Sq = 64;  // divides every block_q above but 24
    c.Skv = 160; // divides 16, 32; not 40 (4 blocks), not 64
    c.causal = true;
    c.mask = ATTN_MASK_ADDITIVE;
    c.lse = true;
    check(c, rng);
    c.Sq = uniform(rng, 1, 100);
    c.Skv = uniform(rng, 1, 250);
    check(c, rng);
  }
}

// The math variant through the same matrix corners.
TEST(Numeric, MathVariant) {
  auto rng = testRng();
  for (attn_dtype dt : {ATTN_DTYPE_F32, ATTN_DTYPE_F16, ATTN_DTYPE_BF16}) {
    Case c;
    c.variant = ATTN_VARIANT_MATH;
    c.dtype = dt;
    c.B = 2;
    c.Hq = 4;
    c.Hkv = 2;
    c.Sq = 31;
    c.Skv = 47;
    c.causal = true;
    c.mask = ATTN_MASK_BOOL;
    c.lse = true;
    c.dropout = 0.2;
    c.seed = 99;
    check(c, rng);
  }
}

// Static shapes and an explicit scale.
TEST(Numeric, StaticShapesAndScale) {
  auto rng = testRng();
  Case c;
  c.staticShapes = true;
  c.B = 2;
  c.Hq = 2;
  c.Sq = 19;
  c.Skv = 23;
  c.scale = 0.3;
  c.lse = true;
  check(c, rng);
}

// GQA decode steps, which the cpu target tiles with a group's query heads
// as one tile's rows (pack-decode-heads; a dynamic-shape kernel through its
// packed-decode variant for the launch's heads and query length): one
// query row, or 2-16 (speculative decode: packed without causal), group
// sizes 2-8 (3 too, an odd tile), every dtype, causal (no effect on one
// row; unpacked for more),
// dropout (whose decision follows each row's own head), lse, both layouts,
// automatic and given splits, key lengths from 1 past a key block.
TEST(Numeric, PackedDecodeHeads) {
  auto rng = testRng();
  const int64_t ratios[][2] = {{8, 1}, {4, 2}, {6, 2}, {32, 8}};
  int n = 0;
  for (attn_dtype dt : {ATTN_DTYPE_F32, ATTN_DTYPE_F16, ATTN_DTYPE_BF16})
    for (const auto &r : ratios) {
      Case c;
      c.dtype = dt;
      c.B = uniform(rng, 1, 2);
      c.Hq = r[0];
      c.Hkv = r[1];
      c.Skv = n % 4 == 0 ? 1 : uniform(rng, 2, 700);
      c.D = n % 2 ? 128 : 64;
      c.causal = n % 3 == 1;
      // Speculative-decode steps (2-16 rows a head) pack without causal;
      // with causal they run unpacked (the same check either way).
      c.Sq = n % 2 == 0 ? 1 : uniform(rng, 2, 16);
      c.lse = true;
      c.bshd = n % 2 == 1;
      c.kvSplits = n % 5 == 2 ? 3 : 0;
      // Dynamic shapes every third case: the kernel's packed-decode
      // variant for the launch's heads.
      c.staticShapes = n % 3 != 2;
      if (n % 4 == 3) {
        c.dropout = 0.25;
        c.seed = 7 + n;
      }
      check(c, rng);
      ++n;
    }
}

// Dropout reveals its kept pattern: with q = k = 0 every probability is
// 1/Skv and with one-hot V rows out[i, j] = keep(i, j) / (Skv (1 - p)), so
// the test reads the exact decision of every element back.
std::vector<uint8_t> keptPattern(const Case &base, int64_t *kept) {
  Case c = base;
  c.dtype = ATTN_DTYPE_F32;
  EXPECT_EQ(c.Hkv, 1); // one-hot V rows below are per kv head
  c.D = 32;
  c.Dv = c.Skv;
  auto rng = testRng();
  Buffers bufs;
  makeBuffers(c, rng, bufs);
  std::fill(bufs.q.begin(), bufs.q.end(), 0);
  std::fill(bufs.k.begin(), bufs.k.end(), 0);
  std::fill(bufs.v.begin(), bufs.v.end(), 0);
  auto *v = reinterpret_cast<float *>(bufs.v.data());
  for (int64_t bh = 0; bh < c.B * c.Hkv; ++bh)
    for (int64_t j = 0; j < c.Skv; ++j)
      v[(bh * c.Skv + j) * c.Skv + j] = 1.0f;
  std::vector<uint8_t> pattern;
  if (!launch(c, bufs))
    return pattern;
  const auto *out = reinterpret_cast<const float *>(bufs.out.data());
  const double keptValue = 1.0 / (c.Skv * (1.0 - c.dropout));
  *kept = 0;
  for (int64_t n = 0; n < c.B * c.Hq * c.Sq * c.Skv; ++n) {
    bool isKept = std::fabs(out[n] - keptValue) < 1e-6;
    EXPECT_TRUE(isKept || out[n] == 0.0f) << "element " << n << " = " << out[n];
    pattern.push_back(isKept);
    *kept += isKept;
  }
  return pattern;
}

TEST(Dropout, KeptPatternMatchesPhiloxAndTiling) {
  Case c;
  c.B = 2;
  c.Hq = 2;
  c.Sq = 50;
  c.Skv = 96;
  c.dropout = 0.25;
  c.seed = 0x5EED0123456789ull;
  // The expected pattern: the reference's Philox decision per element.
  std::vector<uint8_t> expected;
  for (uint32_t b = 0; b < c.B; ++b)
    for (uint32_t h = 0; h < c.Hq; ++h)
      for (uint32_t i = 0; i < c.Sq; ++i)
        for (uint32_t j = 0; j < c.Skv; ++j)
          expected.push_back(dropoutKeep(c.seed, b, h, i, j, c.dropout));
  auto expectPattern = [&](const Case &run, const char *what) {
    int64_t kept = 0;
    std::vector<uint8_t> got = keptPattern(run, &kept);
    if (got.empty())
      return; // launch() already failed the test
    size_t mismatches = 0;
    for (size_t n = 0; n < expected.size(); ++n)
      mismatches += got[n] != expected[n];
    EXPECT_EQ(mismatches, 0u) << what << " dropped other elements than Philox";
    // Kept fraction within 5 binomial standard deviations of 1 - p.
    const double total = double(got.size()), p = run.dropout;
    EXPECT_NEAR(double(kept), total * (1 - p),
                5 * std::sqrt(total * p * (1 - p)))
        << what;
  };
  Case m = c;
  m.variant = ATTN_VARIANT_MATH;
  expectPattern(m, "the math variant");
  c.blockQ = 16;
  c.blockKv = 32;
  c.kvSplits = 1;
  expectPattern(c, "tiling 16x32");
  c.blockQ = 32;
  c.blockKv = 16;
  c.kvSplits = 3;
  expectPattern(c, "tiling 32x16, 3 kv splits");
}

TEST(Dropout, TilingsAgreeAndSeedMatters) {
  auto rng = testRng();
  Case c;
  c.dtype = ATTN_DTYPE_F32;
  c.B = 1;
  c.Hq = 4;
  c.Hkv = 2;
  c.Sq = 45;
  c.Skv = 83;
  c.causal = true;
  c.dropout = 0.3;
  c.seed = 7;
  c.lse = true;
  c.blockQ = 16;
  c.blockKv = 16;
  Buffers a;
  check(c, rng, &a);
  // The same inputs, another tiling: same result to tolerance.
  Buffers b = a;
  b.args.q.data = b.q.data();
  b.args.k.data = b.k.data();
  b.args.v.data = b.v.data();
  b.args.out.data = b.out.data();
  b.args.lse.data = b.lse.data();
  poison(c.dtype, b.out.data(), b.out.size() / 4);
  Case c2 = c;
  c2.blockQ = 32;
  c2.blockKv = 64;
  c2.kvSplits = 2;
  const auto *oa = reinterpret_cast<const float *>(a.out.data());
  const size_t n = size_t(c.B * c.Hq * c.Sq * c.D);
  // launch() reports its own failure; the seed checks below still run.
  if (launch(c2, b)) {
    const auto *ob = reinterpret_cast<const float *>(b.out.data());
    double maxDiff = 0;
    for (size_t e = 0; e < n; ++e)
      maxDiff = std::max(maxDiff, double(std::fabs(oa[e] - ob[e])));
    EXPECT_LE(maxDiff, toleranceFor(c.dtype).maxAbs * 4)
        << "two tilings with dropout disagree";
  }

  // Another seed: a different output (and still right).
  Buffers s = a;
  s.args.q.data = s.q.data();
  s.args.k.data = s.k.data();
  s.args.v.data = s.v.data();
  s.args.out.data = s.out.data();
  s.args.lse.data = s.lse.data();
  s.args.seed = c.seed + 1;
  poison(c.dtype, s.out.data(), s.out.size() / 4);
  ASSERT_TRUE(launch(c, s));
  const auto *os = reinterpret_cast<const float *>(s.out.data());
  double seedDiff = 0, norm = 0;
  for (size_t e = 0; e < n; ++e) {
    seedDiff += (oa[e] - os[e]) * double(oa[e] - os[e]);
    norm += double(oa[e]) * oa[e];
  }
  EXPECT_GT(std::sqrt(seedDiff / norm), 0.05) << "a new seed did not change out";
  Case cs = c;
  cs.seed = c.seed + 1;
  Result ref;
  std::string error;
  attn_spec spec = cs.spec();
  ASSERT_TRUE(computeReference(spec, s.args, ref, error)) << error;
  Comparison cmp = compare(ref, cs.dtype, s.args.out, &s.args.lse,
                           toleranceFor(cs.dtype));
  EXPECT_TRUE(cmp.ok) << cmp.message;

  // Without dropout the output is far from the dropout one.
  Case nd = c;
  nd.dropout = 0.0;
  spec = nd.spec();
  ASSERT_TRUE(computeReference(spec, a.args, ref, error)) << error;
  Comparison far = compare(ref, c.dtype, a.args.out, nullptr,
                           toleranceFor(c.dtype));
  EXPECT_GT(far.relL2Err, 0.05);
}

// Dropout together with the rest of the matrix, each dtype.
TEST(Dropout, WithMasksAndDtypes) {
  auto rng = testRng();
  for (attn_dtype dt : {ATTN_DTYPE_F16, ATTN_DTYPE_BF16, ATTN_DTYPE_F32}) {
    Case c;
    c.dtype = dt;
    c.B = 2;
    c.Hq = 2;
    c.Sq = uniform(rng, 1, 80);
    c.Skv = uniform(rng, 1, 160);
    c.mask = ATTN_MASK_BOOL;
    c.maskB1 = false;
    c.dropout = 0.1;
    c.seed = rng();
    c.lse = true;
    check(c, rng);
  }
}

} // namespace

// The randomized matrix: 200 draws over every axis at once (dtype, D and
// Dv from 16 to 256, Sq / Skv including 1 and both orders, GQA ratios and
// MQA, causal, both masks and their broadcasts, dropout, lse, tile sizes
// that divide and that don't, split-KV on and off, both variants, both
// layouts). Fresh inputs and poisoned outputs per draw (check()).
TEST(Numeric, RandomMatrix200) {
  auto rng = testRng();
  const attn_dtype dtypes[] = {ATTN_DTYPE_F16, ATTN_DTYPE_BF16, ATTN_DTYPE_F32};
  const int64_t dims[] = {16, 32, 48, 64, 80, 96, 128, 160, 256};
  const int64_t ratios[][2] = {{1, 1}, {2, 1}, {8, 1}, {4, 2}, {6, 3}, {4, 1}};
  const int64_t blocks[] = {0, 7, 16, 32, 50, 64};
  int cases = 0;
  for (int n = 0; n < 200; ++n) {
    Case c;
    c.dtype = dtypes[uniform(rng, 0, 2)];
    c.D = dims[uniform(rng, 0, 8)];
    c.Dv = uniform(rng, 0, 3) == 0 ? dims[uniform(rng, 0, 8)] : 0;
    const auto *r = ratios[uniform(rng, 0, 5)];
    c.Hq = r[0];
    c.Hkv = r[1];
    c.B = uniform(rng, 1, 2);
    // Large head dims get shorter sequences so the sweep stays quick.
    int64_t maxS = c.D >= 160 ? 70 : 150;
    c.Sq = uniform(rng, 0, 5) == 0 ? 1 : uniform(rng, 1, maxS);
    c.Skv = uniform(rng, 0, 7) == 0 ? 1 : uniform(rng, 1, maxS + 50);
    c.causal = uniform(rng, 0, 2) == 0;
    int m = static_cast<int>(uniform(rng, 0, 3));
    c.mask = m == 1 ? ATTN_MASK_BOOL : m == 2 ? ATTN_MASK_ADDITIVE : ATTN_MASK_NONE;
    c.maskDtype = dtypes[uniform(rng, 0, 2)];
    c.maskB1 = uniform(rng, 0, 1);
    c.maskH1 = uniform(rng, 0, 1);
    if (uniform(rng, 0, 4) == 0) {
      c.dropout = 0.05 * uniform(rng, 1, 10);
      c.seed = static_cast<uint64_t>(rng());
    }
    c.lse = uniform(rng, 0, 1);
    c.variant = uniform(rng, 0, 5) == 0 ? ATTN_VARIANT_MATH : ATTN_VARIANT_DEFAULT;
    c.blockQ = blocks[uniform(rng, 0, 5)];
    c.blockKv = blocks[uniform(rng, 0, 5)];
    c.kvSplits = uniform(rng, 0, 2) == 0 ? uniform(rng, 2, 4) : uniform(rng, 0, 1);
    c.bshd = uniform(rng, 0, 1);
    check(c, rng);
    ++cases;
  }
  EXPECT_EQ(cases, 200);
}

/// The Vulkan tests: skipped where there is no Vulkan device.
class Vulkan : public ::testing::Test {
protected:
  void SetUp() override {
    attn_context *ctx = context();
    ASSERT_NE(ctx, nullptr);
    if (attn_target_available(ctx, ATTN_TARGET_VULKAN) != ATTN_OK)
      GTEST_SKIP() << "no Vulkan device: " << attn_last_error();
  }
};

/// Sets ATTN_VULKAN_VARIANT for a test's lifetime (the JIT reads it per
/// compile and keys its cache on it).
struct VulkanVariantGuard {
  explicit VulkanVariantGuard(const char *variant) {
    setenv("ATTN_VULKAN_VARIANT", variant, 1);
  }
  ~VulkanVariantGuard() { unsetenv("ATTN_VULKAN_VARIANT"); }
};

/// `cases` random draws of the portable variant on the Vulkan device: f16,
/// bf16 and f32, head dims 8..128 (Dv too, so Dv that the subgroup size
/// does not divide), odd lengths (Sq = 1 included), GQA, causal, bool and
/// additive masks broadcast or not, lse, dropout with random 64-bit seeds,
/// both layouts, default and explicit block sizes (`blockQs`: rows per
/// workgroup), split-KV off, automatic (0) or forced to 2, 3 or 5 chunks
/// (clamped to the key blocks); a third of the draws with dynamic sizes
/// (one kernel per spec, the sizes read at launch; such draws that share
/// a spec share the kernel) and the automatic split count.
static void portableRandomMatrix(std::mt19937_64 &rng, int cases,
                                 const std::vector<int64_t> &blockQs) {
  const attn_dtype dtypes[] = {ATTN_DTYPE_F16, ATTN_DTYPE_BF16,
                               ATTN_DTYPE_F32};
  const int64_t dims[] = {8, 16, 24, 32, 48, 64, 80, 96, 128};
  const int64_t ratios[][2] = {{1, 1}, {2, 1}, {8, 1}, {4, 2}, {6, 3}};
  const int64_t blockKvs[] = {0, 0, 8, 16, 32};
  const int64_t kvSplits[] = {0, 1, 2, 3, 5};
  for (int n = 0; n < cases; ++n) {
    Case c;
    c.target = ATTN_TARGET_VULKAN;
    c.staticShapes = uniform(rng, 0, 2) != 0;
    c.dtype = dtypes[uniform(rng, 0, 2)];
    c.D = dims[uniform(rng, 0, 8)];
    c.Dv = uniform(rng, 0, 3) == 0 ? dims[uniform(rng, 0, 8)] : 0;
    const auto *r = ratios[uniform(rng, 0, 4)];
    c.Hq = r[0];
    c.Hkv = r[1];
    c.B = uniform(rng, 1, 2);
    c.Sq = uniform(rng, 0, 5) == 0 ? 1 : uniform(rng, 1, 130);
    c.Skv = uniform(rng, 0, 7) == 0 ? 1 : uniform(rng, 1, 300);
    c.causal = uniform(rng, 0, 2) == 0;
    int m = static_cast<int>(uniform(rng, 0, 3));
    c.mask = m == 1 ? ATTN_MASK_BOOL : m == 2 ? ATTN_MASK_ADDITIVE : ATTN_MASK_NONE;
    c.maskDtype = dtypes[uniform(rng, 0, 2)];
    c.maskB1 = uniform(rng, 0, 1);
    c.maskH1 = uniform(rng, 0, 1);
    c.lse = uniform(rng, 0, 1);
    if (uniform(rng, 0, 3) == 0)
      c.scale = 0.05 * uniform(rng, 1, 20);
    if (uniform(rng, 0, 3) == 0) {
      c.dropout = 0.05 * uniform(rng, 1, 12);
      c.seed = static_cast<uint64_t>(rng());
    }
    c.blockQ = blockQs[uniform(rng, 0, int64_t(blockQs.size()) - 1)];
    c.blockKv = blockKvs[uniform(rng, 0, 4)];
    c.kvSplits = kvSplits[uniform(rng, 0, 4)];
    // Dynamic sizes with the automatic split count: on a device with a
    // loop budget a forced count may leave a largest size below the
    // lengths drawn here (a correct refusal at launch;
    // DynamicShapesOneKernel forces counts on lengths that fit).
    if (!c.staticShapes)
      c.kvSplits = 0;
    c.bshd = uniform(rng, 0, 1);
    check(c, rng);
  }
}

/// The first line of the kernel IR the vulkan JIT builds for a small spec
/// (it names the variant and the portable kernel).
static std::string vulkanVariantLine(attn_dtype dtype) {
  Case c;
  c.target = ATTN_TARGET_VULKAN;
  c.staticShapes = true;
  c.dtype = dtype;
  c.Sq = 8;
  c.Skv = 8;
  c.D = 16;
  attn_spec spec = c.spec();
  attn_kernel *kernel = nullptr;
  if (attn_compile(context(), &spec, c.target, &kernel) != ATTN_OK)
    return std::string("compile failed: ") + attn_last_error();
  const char *source = attn_kernel_source(kernel);
  std::string text = source ? source : "";
  return text.substr(0, text.find('\n'));
}

// The portable variant as the JIT picks it on the Vulkan device found here
// (lavapipe in CI: subgroup arithmetic and shuffle, so the subgroup
// kernel, a subgroup of 8 lanes per row) over the random matrix. Rows per
// workgroup (block_q) up to 16, within the invocations and subgroups a
// workgroup may have on devices with subgroups of up to 64; with block_q =
// 1 a workgroup is one subgroup.
TEST_F(Vulkan, PortableRandomMatrix) {
  std::string line = vulkanVariantLine(ATTN_DTYPE_F32);
  std::cout << "[ variant  ] " << line << "\n";
  auto rng = testRng();
  portableRandomMatrix(rng, 40, {0, 0, 1, 2, 5, 12, 16});
}

// The same matrix on the invocation-per-row kernel (forced: what a device
// without subgroup arithmetic or shuffle gets). Rows per workgroup from 2:
// with block_q = 1 one invocation loads whole K/V tiles, D + Dv loop
// iterations per key, and lavapipe's loop budget (65535 per invocation)
// refuses D = Dv = 128 from ~250 keys on, a correct refusal
// (loop-budget.test) that a random draw must not hit.
TEST_F(Vulkan, PortableRowsRandomMatrix) {
  VulkanVariantGuard guard("portable-rows");
  std::string line = vulkanVariantLine(ATTN_DTYPE_F32);
  EXPECT_NE(line.find("kernel: an invocation per row"), std::string::npos)
      << line;
  auto rng = testRng();
  portableRandomMatrix(rng, 20, {0, 0, 2, 16, 33, 64, 128});
}

// The subgroup kernel forced (refused where the device lacks subgroup
// arithmetic or shuffle): the edges of its work split over the random
// matrix's other axes. Head dims around the subgroup size (Dv = 20 and 12
// are not multiples of 8: the last lanes' columns are masked), Sq = 1
// (decode: one subgroup per workgroup row), lengths at and around
// multiples of the key block (the last slots of a block empty).
TEST_F(Vulkan, PortableSubgroupEdges) {
  VulkanVariantGuard guard("portable-subgroup");
  std::string line = vulkanVariantLine(ATTN_DTYPE_F16);
  if (line.find("compile failed") != std::string::npos)
    GTEST_SKIP() << line;
  EXPECT_NE(line.find("kernel: a subgroup of"), std::string::npos) << line;
  // ATTN_VULKAN_SUBGROUP_SIZE is part of the cache key: the same spec with
  // a size no device has (3) compiles anew, and is refused.
  setenv("ATTN_VULKAN_SUBGROUP_SIZE", "3", 1);
  std::string bad = vulkanVariantLine(ATTN_DTYPE_F16);
  unsetenv("ATTN_VULKAN_SUBGROUP_SIZE");
  EXPECT_NE(bad.find("ATTN_VULKAN_SUBGROUP_SIZE=3"), std::string::npos) << bad;
  auto rng = testRng();
  const int64_t dvs[] = {4, 12, 20, 72};
  const int64_t skvs[] = {1, 8, 9, 63, 64, 65, 129};
  for (int64_t dv : dvs)
    for (int64_t skv : skvs) {
      Case c;
      c.target = ATTN_TARGET_VULKAN;
      c.staticShapes = true;
      c.dtype = skv % 2 ? ATTN_DTYPE_F16 : ATTN_DTYPE_BF16;
      c.D = dv == 4 ? 8 : 32;
      c.Dv = dv;
      c.Hq = 4;
      c.Hkv = 2;
      c.Sq = skv % 3 == 0 ? 1 : uniform(rng, 2, 40);
      c.Skv = skv;
      c.causal = skv % 2 == 1;
      c.mask = skv == 64 ? ATTN_MASK_BOOL : ATTN_MASK_NONE;
      c.maskB1 = true;
      c.lse = true;
      if (dv == 20) {
        c.dropout = 0.25;
        c.seed = static_cast<uint64_t>(rng());
      }
      c.blockKv = skv > 64 ? 16 : 0;
      c.kvSplits = skv == 129 ? 3 : 1;
      check(c, rng);
    }
}

// Numeric.NonFiniteInputs on the Vulkan device (its default variant).
TEST_F(Vulkan, NonFiniteInputs) {
  auto rng = testRng();
  nonFiniteMatrix(rng, ATTN_TARGET_VULKAN);
}

// Numeric.ExtremeScores on the Vulkan device, default and both portable
// kernels.
TEST_F(Vulkan, ExtremeScores) {
  auto rng = testRng();
  extremeMatrix(rng, ATTN_TARGET_VULKAN);
  for (const char *variant : {"portable-rows", "portable-subgroup"}) {
    VulkanVariantGuard guard(variant);
    extremeMatrix(rng, ATTN_TARGET_VULKAN);
  }
}

// Dynamic sizes (ATTN_DYNAMIC batch, heads and lengths): one kernel,
// compiled once, launched on many shapes, each against the reference on
// fresh inputs with poisoned outputs; the sizes, the grid and split-KV's
// workspaces follow each launch. Then a size above the largest the kernel
// was built for (ATTN_VULKAN_MAX_DYNAMIC_EXTENT; by default 16384 on a
// device with a loop budget such as lavapipe's) is refused, the outputs
// untouched.
TEST_F(Vulkan, DynamicShapesOneKernel) {
  auto rng = testRng();
  struct Shape {
    int64_t B, Hq, Hkv, Sq, Skv;
  };
  const Shape shapes[] = {{1, 1, 1, 1, 1},    {2, 4, 2, 37, 91},
                          {1, 8, 1, 1, 300},  {3, 2, 2, 64, 17},
                          {1, 6, 3, 130, 129}, {2, 1, 1, 9, 1000}};
  struct Flavor {
    attn_dtype dtype;
    bool causal, lse;
    attn_mask_kind mask;
    double dropout;
    int64_t kvSplits;
  };
  const Flavor flavors[] = {
      {ATTN_DTYPE_F16, true, true, ATTN_MASK_NONE, 0.0, 0},
      {ATTN_DTYPE_BF16, false, true, ATTN_MASK_BOOL, 0.0, 1},
      {ATTN_DTYPE_F32, true, false, ATTN_MASK_ADDITIVE, 0.2, 3}};
  for (const Flavor &f : flavors) {
    size_t before = attn_context_cache_size(context());
    for (const Shape &sh : shapes) {
      Case c;
      c.target = ATTN_TARGET_VULKAN;
      c.staticShapes = false;
      c.dtype = f.dtype;
      c.B = sh.B;
      c.Hq = sh.Hq;
      c.Hkv = sh.Hkv;
      c.Sq = sh.Sq;
      c.Skv = sh.Skv;
      c.D = 32;
      c.Dv = f.dtype == ATTN_DTYPE_F32 ? 24 : 0;
      c.causal = f.causal;
      c.lse = f.lse;
      c.mask = f.mask;
      c.maskB1 = sh.B > 2;
      c.maskH1 = false;
      c.dropout = f.dropout;
      c.seed = static_cast<uint64_t>(rng());
      c.kvSplits = f.kvSplits;
      c.bshd = sh.Hq % 2 == 0;
      check(c, rng);
    }
    // One compile per flavor, whatever the shapes.
    EXPECT_EQ(attn_context_cache_size(context()), before + 1)
        << "dtype " << attn_dtype_name(f.dtype);
  }

  // The size limit: a kernel built for sizes up to 48.
  setenv("ATTN_VULKAN_MAX_DYNAMIC_EXTENT", "48", 1);
  Case c;
  c.target = ATTN_TARGET_VULKAN;
  c.dtype = ATTN_DTYPE_F16;
  c.Hq = 2;
  c.Sq = 16;
  c.Skv = 48;
  c.D = 16;
  c.lse = true;
  check(c, rng); // at the limit: runs
  c.Skv = 49;
  Buffers bufs;
  makeBuffers(c, rng, bufs);
  std::vector<uint8_t> poisoned = bufs.out;
  attn_spec spec = c.spec();
  attn_kernel *kernel = nullptr;
  ASSERT_EQ(attn_compile(context(), &spec, c.target, &kernel), ATTN_OK)
      << attn_last_error();
  attn_status st = attn_launch(kernel, &bufs.args);
  unsetenv("ATTN_VULKAN_MAX_DYNAMIC_EXTENT");
  EXPECT_EQ(st, ATTN_ERROR_UNSUPPORTED);
  std::string message = attn_last_error();
  EXPECT_NE(message.find("a size of 49 is above the 48 this kernel was "
                         "built for"),
            std::string::npos)
      << message;
  EXPECT_EQ(bufs.out, poisoned) << "a refused launch wrote its output";
}

// Split-KV on the portable kernel where rows see no key at all: rows fully
// masked by a bool mask, and (causal, Sq > Skv) the first rows. The merge
// must give out = 0 and lse = -inf there, as the unsplit kernel does,
// whatever the chunks' own partials were; other rows match the reference.
TEST_F(Vulkan, SplitKVEmptyRowsAndLse) {
  auto rng = testRng();
  for (int64_t splits : {2, 3, 5})
    for (bool causal : {false, true}) {
      Case c;
      c.target = ATTN_TARGET_VULKAN;
      c.staticShapes = true;
      c.dtype = causal ? ATTN_DTYPE_F16 : ATTN_DTYPE_F32;
      c.B = 2;
      c.Hq = 2;
      c.Hkv = 1;
      c.Sq = causal ? 40 : 9;
      c.Skv = causal ? 24 : 70;
      c.D = 16;
      c.mask = ATTN_MASK_BOOL;
      c.maskB1 = false;
      c.maskH1 = false;
      c.causal = causal;
      c.lse = true;
      c.blockQ = 4;
      c.blockKv = 8;
      c.kvSplits = splits;
      Buffers bufs;
      if (!check(c, rng, &bufs).ok)
        continue;
      // Which rows see no key: the mask's empty rows (row Sq / 2 always)
      // and, causal bottom-right, rows i < Sq - Skv.
      int64_t empty = 0;
      const float *lse = reinterpret_cast<const float *>(bufs.lse.data());
      for (int64_t b = 0; b < c.B; ++b)
        for (int64_t h = 0; h < c.Hq; ++h)
          for (int64_t i = 0; i < c.Sq; ++i) {
            const uint8_t *m =
                bufs.mask.data() + ((b * c.Hq + h) * c.Sq + i) * c.Skv;
            bool any = false;
            for (int64_t j = 0; j < c.Skv; ++j)
              any |= m[j] && (!causal || j <= i + c.Skv - c.Sq);
            if (any)
              continue;
            ++empty;
            float l = lse[(b * c.Hq + h) * c.Sq + i];
            EXPECT_TRUE(std::isinf(l) && l < 0)
                << "lse " << l << " at " << b << "," << h << "," << i
                << "\n  case: " << c.str();
            for (int64_t d = 0; d < c.D; ++d) {
              size_t at = size_t(((b * c.Hq + h) * c.Sq + i) * c.D + d);
              double o =
                  c.dtype == ATTN_DTYPE_F32
                      ? reinterpret_cast<const float *>(bufs.out.data())[at]
                      : halfBitsToFloat(reinterpret_cast<const uint16_t *>(
                            bufs.out.data())[at]);
              EXPECT_EQ(o, 0.0) << "out at " << b << "," << h << "," << i << ","
                                << d << "\n  case: " << c.str();
            }
          }
      EXPECT_GE(empty, c.B * c.Hq) << c.str();
    }
}

// The coopmat kernel's structure (ATTN_VULKAN_VARIANT=coopmat-scalar: the
// same kernel with scalar products, as lavapipe has no cooperative
// matrices) over a random matrix: f16 and bf16, D and Dv multiples of 16,
// any lengths (Sq = 1 too) and default or explicit blocks, GQA, causal,
// bool and additive masks, lse, custom scales, dropout, BSHD, split-KV auto
// or 2-4 chunks.
TEST_F(Vulkan, CoopMatScalarRandomMatrix) {
  struct VariantGuard {
    VariantGuard() { setenv("ATTN_VULKAN_VARIANT", "coopmat-scalar", 1); }
    ~VariantGuard() { unsetenv("ATTN_VULKAN_VARIANT"); }
  } guard;
  auto rng = testRng();
  const int64_t dims[] = {16, 32, 48, 64};
  const int64_t ratios[][2] = {{1, 1}, {2, 1}, {4, 2}};
  // No forced 1: with scalar products an invocation loops enough that
  // lavapipe's loop budget refuses some unsplit shapes (a correct refusal,
  // loop-budget.test); 0 (auto) splits until the kernel fits.
  const int64_t kvSplits[] = {0, 0, 2, 3, 4};
  const int64_t blockQs[] = {0, 16, 32};
  const int64_t blockKvs[] = {0, 0, 16, 32};
  for (int n = 0; n < 16; ++n) {
    Case c;
    c.target = ATTN_TARGET_VULKAN;
    c.staticShapes = true;
    c.dtype = uniform(rng, 0, 1) ? ATTN_DTYPE_F16 : ATTN_DTYPE_BF16;
    c.D = dims[uniform(rng, 0, 3)];
    c.Dv = uniform(rng, 0, 2) == 0 ? dims[uniform(rng, 0, 3)] : 0;
    const auto *r = ratios[uniform(rng, 0, 2)];
    c.Hq = r[0];
    c.Hkv = r[1];
    c.B = uniform(rng, 1, 2);
    // Any lengths (the last tiles are zero-padded), Sq = 1 included.
    c.Sq = uniform(rng, 0, 4) == 0 ? 1 : uniform(rng, 1, 70);
    c.Skv = uniform(rng, 1, 120);
    c.blockQ = blockQs[uniform(rng, 0, 2)];
    c.blockKv = blockKvs[uniform(rng, 0, 3)];
    c.causal = uniform(rng, 0, 2) == 0;
    int m = static_cast<int>(uniform(rng, 0, 2));
    c.mask = m == 1 ? ATTN_MASK_BOOL : m == 2 ? ATTN_MASK_ADDITIVE : ATTN_MASK_NONE;
    // An additive mask of the data's type or f32 (what the kernel takes).
    c.maskDtype = uniform(rng, 0, 1) ? c.dtype : ATTN_DTYPE_F32;
    c.maskB1 = uniform(rng, 0, 1);
    c.maskH1 = uniform(rng, 0, 1);
    c.lse = uniform(rng, 0, 1);
    if (uniform(rng, 0, 3) == 0)
      c.scale = 0.05 * uniform(rng, 1, 20);
    if (uniform(rng, 0, 2) == 0) {
      c.dropout = 0.05 * uniform(rng, 1, 12);
      c.seed = static_cast<uint64_t>(rng());
    }
    c.kvSplits = kvSplits[uniform(rng, 0, 4)];
    // Dynamic sizes with the automatic split count: on a device with a
    // loop budget a forced count may leave a largest size below the
    // lengths drawn here (a correct refusal at launch;
    // DynamicShapesOneKernel forces counts on lengths that fit).
    if (!c.staticShapes)
      c.kvSplits = 0;
    c.bshd = uniform(rng, 0, 1);
    check(c, rng);
  }
  // A 16-bit additive mask of the other 16-bit type is refused by name.
  Case mixed;
  mixed.target = ATTN_TARGET_VULKAN;
  mixed.staticShapes = true;
  mixed.dtype = ATTN_DTYPE_BF16;
  mixed.Sq = mixed.Skv = 32;
  mixed.D = 16;
  mixed.mask = ATTN_MASK_ADDITIVE;
  mixed.maskDtype = ATTN_DTYPE_F16;
  attn_spec spec = mixed.spec();
  attn_kernel *kernel = nullptr;
  EXPECT_EQ(attn_compile(context(), &spec, ATTN_TARGET_VULKAN, &kernel),
            ATTN_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(attn_last_error())
                .find("the coopmat kernel takes an additive mask of the "
                      "data's type or f32"),
            std::string::npos)
      << attn_last_error();
}

// A device without shaderInt16 (made so with ATTN_VULKAN_HIDE_FEATURES=
// shaderInt16, as numeric.test runs this binary; skipped otherwise): bf16
// buffers are emulated in 32-bit words, two elements per word, and must
// still match the reference; a bf16 kernel with an f16 additive mask (two
// 16-bit types, one of them without 16-bit storage) is refused by name.
/// A layer (attn.mha: GQA, biases, causal, f32) on device buffers gives
/// the bits it gives on host memory; mixed memory, another context's
/// buffer and a buffer too small for its tensor are refused with nothing
/// written.
TEST_F(Vulkan, LayerOnDeviceBuffers) {
  attn_context *ctx = context();
  attn_mha_spec spec;
  attn_mha_spec_init(&spec);
  spec.dtype = ATTN_DTYPE_F32;
  spec.batch = 2;
  spec.seq = 17;
  spec.embed = 32;
  spec.heads_q = 4;
  spec.heads_kv = 2;
  spec.bias = 1;
  spec.causal = 1;
  attn_mha_kernel *layer = nullptr;
  ASSERT_EQ(attn_mha_compile(ctx, &spec, ATTN_TARGET_VULKAN, &layer), ATTN_OK)
      << attn_last_error();
  const attn_mha_spec &n = *attn_mha_kernel_spec(layer);
  std::mt19937_64 rng = testRng();
  std::uniform_real_distribution<float> dist(-0.5f, 0.5f);

  attn_mha_args host{}, dev{};
  std::vector<std::vector<float>> data;
  std::vector<attn_vulkan_buffer *> buffers;
  struct Guard {
    std::vector<attn_vulkan_buffer *> &b;
    ~Guard() {
      for (attn_vulkan_buffer *x : b)
        attn_vulkan_buffer_destroy(x);
    }
  } guard{buffers};
  // The layer's tensors (attn.h: separate weights [out, in], biases), y
  // last and poisoned.
  const size_t B = n.batch, S = n.seq, E = n.embed,
               qw = n.heads_q * n.head_dim, kw = n.heads_kv * n.head_dim;
  const std::pair<const void **, size_t> tensors[] = {
      {&host.x, B * S * E}, {&host.w_q, qw * E}, {&host.w_k, kw * E},
      {&host.w_v, kw * E},  {&host.w_o, E * qw}, {&host.b_q, qw},
      {&host.b_k, kw},      {&host.b_v, kw},     {&host.b_o, E},
      {const_cast<const void **>(&host.y), B * S * E}};
  for (const auto &[field, count] : tensors) {
    const bool output = field == const_cast<const void **>(&host.y);
    data.emplace_back(count, NAN);
    if (!output)
      for (float &v : data.back())
        v = dist(rng);
    *field = data.back().data();
    attn_vulkan_buffer *b = nullptr;
    ASSERT_EQ(attn_vulkan_buffer_create(ctx, count * 4, &b), ATTN_OK)
        << attn_last_error();
    buffers.push_back(b);
    ASSERT_EQ(attn_vulkan_buffer_upload(b, 0, data.back().data(), count * 4),
              ATTN_OK)
        << attn_last_error();
    // The same field of dev.
    *reinterpret_cast<const void **>(
        reinterpret_cast<char *>(&dev) +
        (reinterpret_cast<char *>(field) - reinterpret_cast<char *>(&host))) =
        attn_vulkan_buffer_pointer(b);
  }
  attn_vulkan_buffer *yBuffer = buffers.back();
  ASSERT_EQ(attn_mha_launch(layer, &host), ATTN_OK) << attn_last_error();
  const std::vector<float> yHost = data.back();
  for (float v : yHost)
    ASSERT_TRUE(std::isfinite(v));

  ASSERT_EQ(attn_mha_launch(layer, &dev), ATTN_OK) << attn_last_error();
  std::vector<float> yDev(yHost.size(), NAN);
  ASSERT_EQ(attn_vulkan_buffer_download(yBuffer, 0, yDev.data(),
                                        yDev.size() * 4),
            ATTN_OK)
      << attn_last_error();
  EXPECT_EQ(std::memcmp(yDev.data(), yHost.data(), yDev.size() * 4), 0);

  // Refusals: y's buffer is poisoned first and must stay so.
  std::vector<float> poison(yHost.size(), NAN);
  ASSERT_EQ(attn_vulkan_buffer_upload(yBuffer, 0, poison.data(),
                                      poison.size() * 4),
            ATTN_OK);
  auto expectRefused = [&](const attn_mha_args &a, const std::string &what) {
    EXPECT_EQ(attn_mha_launch(layer, &a), ATTN_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(attn_last_error()).find(what), std::string::npos)
        << attn_last_error();
    std::vector<float> y(yHost.size(), 0.0f);
    ASSERT_EQ(attn_vulkan_buffer_download(yBuffer, 0, y.data(),
                                          y.size() * 4),
              ATTN_OK);
    for (float v : y)
      ASSERT_TRUE(std::isnan(v)) << "y written by a refused launch";
  };
  attn_mha_args mixed = dev;
  mixed.w_k = host.w_k;
  expectRefused(mixed, "a layer takes either host memory or device buffers "
                       "for all its tensors; ");
  attn_context *other = nullptr;
  ASSERT_EQ(attn_context_create(&other), ATTN_OK);
  attn_vulkan_buffer *foreign = nullptr;
  ASSERT_EQ(attn_vulkan_buffer_create(other, 4096, &foreign), ATTN_OK);
  attn_mha_args alien = dev;
  alien.b_o = attn_vulkan_buffer_pointer(foreign);
  expectRefused(alien, "args.b_o is in a device buffer of another context");
  attn_vulkan_buffer_destroy(foreign);
  attn_context_destroy(other);
  attn_vulkan_buffer *tiny = nullptr;
  ASSERT_EQ(attn_vulkan_buffer_create(ctx, 16, &tiny), ATTN_OK);
  buffers.push_back(tiny);
  attn_mha_args small = dev;
  small.x = attn_vulkan_buffer_pointer(tiny);
  expectRefused(small, "bytes at offset 0 of a device buffer of 16");
}

TEST(VulkanWithoutInt16, Bf16InWords) {
  const char *hidden = std::getenv("ATTN_VULKAN_HIDE_FEATURES");
  if (!hidden || !std::strstr(hidden, "shaderInt16"))
    GTEST_SKIP() << "run with ATTN_VULKAN_HIDE_FEATURES=shaderInt16";
  attn_context *ctx = context();
  ASSERT_NE(ctx, nullptr);
  if (attn_target_available(ctx, ATTN_TARGET_VULKAN) != ATTN_OK)
    GTEST_SKIP() << "no Vulkan device: " << attn_last_error();
  auto rng = testRng();
  for (int n = 0; n < 6; ++n) {
    Case c;
    c.target = ATTN_TARGET_VULKAN;
    c.staticShapes = true;
    c.dtype = ATTN_DTYPE_BF16;
    c.B = uniform(rng, 1, 2);
    c.Hq = 2;
    c.Hkv = uniform(rng, 1, 2);
    // Odd lengths and head dims: elements straddle 32-bit words.
    c.Sq = uniform(rng, 1, 40);
    c.Skv = uniform(rng, 1, 90);
    c.D = 8 * uniform(rng, 1, 5) + (n % 2);
    c.causal = n % 3 == 0;
    c.mask = n % 2 ? ATTN_MASK_ADDITIVE : ATTN_MASK_BOOL;
    c.maskDtype = ATTN_DTYPE_BF16;
    c.maskB1 = false;
    c.lse = true;
    c.kvSplits = n % 3;
    check(c, rng);
  }
  Case mixed;
  mixed.target = ATTN_TARGET_VULKAN;
  mixed.staticShapes = true;
  mixed.dtype = ATTN_DTYPE_BF16;
  mixed.mask = ATTN_MASK_ADDITIVE;
  mixed.maskDtype = ATTN_DTYPE_F16;
  attn_spec spec = mixed.spec();
  attn_kernel *kernel = nullptr;
  EXPECT_EQ(attn_compile(ctx, &spec, ATTN_TARGET_VULKAN, &kernel),
            ATTN_ERROR_UNSUPPORTED);
  EXPECT_EQ(kernel, nullptr);
  EXPECT_NE(std::string(attn_last_error())
                .find("a bf16 kernel with an f16 mask needs shaderInt16"),
            std::string::npos)
      << attn_last_error();
}

// Decode shapes with split-KV left automatic on a dynamic-shape kernel: the
// JIT applies the split rule at launch (a split variant on any machine with
// more than one core) and the merged result must match the reference.
TEST(Numeric, AutoSplitDecode) {
  auto rng = testRng();
  for (attn_dtype dt : {ATTN_DTYPE_F16, ATTN_DTYPE_F32})
    for (int64_t sq : {1, 3})
      for (bool causal : {false, true}) {
        Case c;
        c.dtype = dt;
        c.B = 1;
        c.Hq = 2;
        c.Hkv = 1;
        c.Sq = sq;
        c.Skv = uniform(rng, 700, 1600);
        c.causal = causal;
        c.lse = true;
        c.kvSplits = 0;
        check(c, rng);
      }
}
