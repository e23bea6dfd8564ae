//===- LimitsTest.cpp - extreme sizes through the C API, real compilers ---===//
//
// Issue 22: specs and launches whose size products overflow int64 (or the
// targets' index types) passed validation and killed attn_compile or
// attn_launch (SIGILL, SIGFPE, SIGSEGV). Each case here must come back as
// a status with a message naming the field, on every target that is here.
// None of these launches touches its tensors: a refused launch reads
// nothing, so small buffers stand behind huge shapes.
//
//===----------------------------------------------------------------------===//
#include "attn/runtime/attn.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

#define EXPECT_ERROR_HAS(needle)                                              \
  EXPECT_NE(std::string(attn_last_error()).find(needle), std::string::npos)   \
      << "attn_last_error() = \"" << attn_last_error()                        \
      << "\" does not mention \"" << (needle) << "\""

class Limits : public ::testing::TestWithParam<attn_target> {
protected:
  void SetUp() override {
    ASSERT_EQ(attn_context_create(&ctx), ATTN_OK);
    if (attn_target_available(ctx, GetParam()) != ATTN_OK)
      GTEST_SKIP() << attn_target_name(GetParam())
                   << " is not available: " << attn_last_error();
    attn_spec_init(&spec);
    spec.head_dim = 16;
  }
  void TearDown() override { attn_context_destroy(ctx); }

  attn_status compile(attn_kernel **kernel) {
    return attn_compile(ctx, &spec, GetParam(), kernel);
  }

  /// Dense [b, h, s, d] over `buf` (which may be much smaller: these
  /// launches are refused before any element is read).
  static attn_tensor tensor(void *buf, int64_t b, int64_t h, int64_t s,
                            int64_t d) {
    attn_tensor t{};
    t.data = buf;
    int64_t shape[4] = {b, h, s, d};
    int64_t strides[4] = {h * s * d, s * d, d, 1};
    for (int i = 0; i < 4; ++i) {
      t.shape[i] = shape[i];
      t.strides[i] = strides[i];
    }
    return t;
  }

  attn_context *ctx = nullptr;
  attn_spec spec;
  std::vector<float> q = std::vector<float>(64), k = std::vector<float>(64),
                     v = std::vector<float>(64), out = std::vector<float>(64);
};

// B = Hq = Sq = Skv = 2^31 (Hkv = 1): validation accepted it and the
// compilers' tile and split counts overflowed.
TEST_P(Limits, HugeStaticSpecRefusedAtCompile) {
  spec.batch = spec.heads_q = spec.seq_q = spec.seq_kv = int64_t(1) << 31;
  spec.heads_kv = 1;
  attn_kernel *kernel = nullptr;
  EXPECT_EQ(compile(&kernel), ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_ERROR_HAS("spec: q = batch (2147483648) x heads_q (2147483648)");
  EXPECT_EQ(kernel, nullptr);
}

// block_kv = 2^62 with dynamic sizes: 4 * block_kv overflowed in the
// launch-time split rule (a division by zero).
TEST_P(Limits, HugeBlockRefusedAtCompile) {
  spec.block_kv = int64_t(1) << 62;
  attn_kernel *kernel = nullptr;
  EXPECT_EQ(compile(&kernel), ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_ERROR_HAS("spec.block_kv is 4611686018427387904; the largest "
                   "supported is 2^31 - 1");
}

// The largest block accepted, with dynamic sizes, runs (it is clamped to
// the sequence on cpu; vulkan's tiles must fit shared memory).
TEST_P(Limits, LargestBlockWithDynamicSizes) {
  spec.block_kv = INT32_MAX;
  attn_kernel *kernel = nullptr;
  attn_status st = compile(&kernel);
  if (GetParam() == ATTN_TARGET_VULKAN) {
    EXPECT_EQ(st, ATTN_ERROR_UNSUPPORTED) << attn_last_error();
    return;
  }
  ASSERT_EQ(st, ATTN_OK) << attn_last_error();
  attn_launch_args a{};
  a.q = tensor(q.data(), 1, 1, 4, 16);
  a.k = tensor(k.data(), 1, 1, 4, 16);
  a.v = tensor(v.data(), 1, 1, 4, 16);
  a.out = tensor(out.data(), 1, 1, 4, 16);
  EXPECT_EQ(attn_launch(kernel, &a), ATTN_OK) << attn_last_error();
}

// [2^32, 2^32, 64, 16] with unit strides spans little memory: the span
// check passed it and the launch died.
TEST_P(Limits, HugeLaunchShapeRefused) {
  attn_kernel *kernel = nullptr;
  ASSERT_EQ(compile(&kernel), ATTN_OK) << attn_last_error();
  attn_launch_args a{};
  std::vector<float> *bufs[] = {&q, &k, &v, &out};
  attn_tensor *ts[] = {&a.q, &a.k, &a.v, &a.out};
  for (int i = 0; i < 4; ++i) {
    *ts[i] = tensor(bufs[i]->data(), int64_t(1) << 32, int64_t(1) << 32, 64,
                    16);
    for (int d = 0; d < 4; ++d)
      ts[i]->strides[d] = 1;
  }
  EXPECT_EQ(attn_launch(kernel, &a), ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_ERROR_HAS("attn_launch: q = batch (4294967296) x heads_q "
                   "(4294967296) x seq_q (64) x head_dim (16) x 4 bytes is "
                   "more than 2^62 bytes");
  // A zero extent of a dynamic dimension is refused like a static one.
  a.q = tensor(q.data(), 1, 1, 0, 16);
  a.out = tensor(out.data(), 1, 1, 0, 16);
  a.k = tensor(k.data(), 1, 1, 4, 16);
  a.v = tensor(v.data(), 1, 1, 4, 16);
  EXPECT_EQ(attn_launch(kernel, &a), ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_ERROR_HAS("q.shape[2] (Sq) is 0; every dimension must be > 0");
}

// kv_splits far beyond the key blocks of a dynamic launch: the cpu kernel
// sized its split partials by kv_splits (37 x 300 with 10^6 used 3.3 GB,
// 10^7 exhausted memory); it is clamped to the key blocks there are.
TEST_P(Limits, HugeKvSplitsClampedAtLaunch) {
  spec.kv_splits = 10000000;
  attn_kernel *kernel = nullptr;
  ASSERT_EQ(compile(&kernel), ATTN_OK) << attn_last_error();
  const int64_t sq = 37, skv = 300, h = 16;
  std::vector<float> qq(h * sq * 16, 0.5f), kk(skv * 16, 0.25f),
      vv(skv * 16, 1.0f), oo(h * sq * 16, -1.0f);
  attn_launch_args a{};
  a.q = tensor(qq.data(), 1, h, sq, 16);
  a.k = tensor(kk.data(), 1, 1, skv, 16);
  a.v = tensor(vv.data(), 1, 1, skv, 16);
  a.out = tensor(oo.data(), 1, h, sq, 16);
  ASSERT_EQ(attn_launch(kernel, &a), ATTN_OK) << attn_last_error();
  // Every key has the same score and v = 1: out is 1 everywhere.
  for (float o : oo)
    ASSERT_NEAR(o, 1.0f, 1e-5f);
}

INSTANTIATE_TEST_SUITE_P(Targets, Limits,
                         ::testing::Values(ATTN_TARGET_CPU,
                                           ATTN_TARGET_VULKAN),
                         [](const auto &info) {
                           return std::string(attn_target_name(info.param));
                         });

} // namespace
