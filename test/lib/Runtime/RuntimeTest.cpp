//===- RuntimeTest.cpp - unit tests of the attn runtime's C API ----------===//
//
// A fake compiler stands in for the JIT, so every rule of the runtime (spec
// validation, the cache, launch validation, normalization, errors) is tested
// without MLIR. Rejected launches run on poisoned outputs: a failed call must
// leave every output byte as it was.
//
//===----------------------------------------------------------------------===//
#include "FakeCompiler.h"

#include "attn/runtime/attn.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

using namespace attn_test;

#define EXPECT_ERROR_HAS(needle)                                              \
  EXPECT_NE(std::string(attn_last_error()).find(needle), std::string::npos)   \
      << "attn_last_error() = \"" << attn_last_error()                        \
      << "\" does not mention \"" << (needle) << "\""

namespace {

void setContiguous(attn_tensor &t, void *data, int64_t a, int64_t b,
                   int64_t c, int64_t d) {
  t.data = data;
  int64_t shape[4] = {a, b, c, d};
  int64_t strides[4] = {b * c * d, c * d, d, 1};
  std::memcpy(t.shape, shape, sizeof shape);
  std::memcpy(t.strides, strides, sizeof strides);
}

class RuntimeTest : public ::testing::Test {
protected:
  static constexpr int64_t B = 2, Hq = 4, Hkv = 2, Sq = 3, Skv = 5, D = 8;

  void SetUp() override {
    compiler = std::make_shared<FakeCompiler>(record);
    attn::registerCompiler(ATTN_TARGET_CPU, compiler);
    ASSERT_EQ(attn_context_create(&ctx), ATTN_OK);
    attn_spec_init(&spec);
    spec.head_dim = D;
  }

  void TearDown() override {
    attn_context_destroy(ctx);
    attn::registerCompiler(ATTN_TARGET_CPU, nullptr);
  }

  attn_kernel *compileOk() {
    attn_kernel *k = nullptr;
    EXPECT_EQ(attn_compile(ctx, &spec, ATTN_TARGET_CPU, &k), ATTN_OK)
        << attn_last_error();
    return k;
  }

  /// Contiguous BHSD buffers for the current spec; mask and lse when the
  /// spec asks for them, left zeroed otherwise.
  void allocate(int64_t dv = D) {
    q.assign(B * Hq * Sq * D, 0.5f);
    k.assign(B * Hkv * Skv * D, 0.25f);
    v.assign(B * Hkv * Skv * dv, 1.0f);
    out.assign(B * Hq * Sq * dv, 0.0f);
    lse.assign(B * Hq * Sq, 0.0f);
    maskF.assign(B * Hq * Sq * Skv, 0.0f);
    maskB.assign(B * Hq * Sq * Skv, 1);
    std::memset(&args, 0, sizeof args);
    setContiguous(args.q, q.data(), B, Hq, Sq, D);
    setContiguous(args.k, k.data(), B, Hkv, Skv, D);
    setContiguous(args.v, v.data(), B, Hkv, Skv, dv);
    setContiguous(args.out, out.data(), B, Hq, Sq, dv);
    if (spec.return_lse)
      setContiguous(args.lse, lse.data(), B, Hq, Sq, 1);
    if (spec.mask == ATTN_MASK_BOOL)
      setContiguous(args.mask, maskB.data(), B, Hq, Sq, Skv);
    if (spec.mask == ATTN_MASK_ADDITIVE)
      setContiguous(args.mask, maskF.data(), B, Hq, Sq, Skv);
    args.seed = 1234;
  }

  void poison() {
    std::memset(out.data(), 0xff, out.size() * sizeof(float));
    std::memset(lse.data(), 0xff, lse.size() * sizeof(float));
  }

  bool outputsPoisoned() const {
    auto allFF = [](const std::vector<float> &buf) {
      const unsigned char *p =
          reinterpret_cast<const unsigned char *>(buf.data());
      for (size_t i = 0; i < buf.size() * sizeof(float); ++i)
        if (p[i] != 0xff)
          return false;
      return true;
    };
    return allFF(out) && allFF(lse);
  }

  /// Compiles the spec, launches `args` on poisoned outputs and expects a
  /// rejection naming `needle` with nothing run and nothing written.
  void expectRejected(const std::string &needle) {
    attn_kernel *kernel = compileOk();
    ASSERT_NE(kernel, nullptr);
    poison();
    size_t before = record.launches.size();
    EXPECT_EQ(attn_launch(kernel, &args), ATTN_ERROR_INVALID_ARGUMENT);
    EXPECT_ERROR_HAS(needle);
    EXPECT_TRUE(outputsPoisoned()) << "a rejected launch wrote an output";
    EXPECT_EQ(record.launches.size(), before) << "a rejected launch ran";
  }

  /// Compiles the spec and launches `args`; returns what the executable got.
  attn::KernelArgs launchOk() {
    attn_kernel *kernel = compileOk();
    poison();
    EXPECT_EQ(attn_launch(kernel, &args), ATTN_OK) << attn_last_error();
    EXPECT_STREQ(attn_last_error(), "");
    EXPECT_FALSE(record.launches.empty());
    return record.launches.empty() ? attn::KernelArgs() : record.launches.back();
  }

  void expectSpecRejected(const std::string &needle,
                          attn_target target = ATTN_TARGET_CPU) {
    attn_kernel *kernel = nullptr;
    EXPECT_EQ(attn_compile(ctx, &spec, target, &kernel),
              ATTN_ERROR_INVALID_ARGUMENT);
    EXPECT_ERROR_HAS(needle);
    EXPECT_EQ(kernel, nullptr);
    EXPECT_EQ(record.compiles.load(), 0) << "an invalid spec reached the compiler";
    EXPECT_EQ(attn_context_cache_size(ctx), 0u);
  }

  Record record;
  std::shared_ptr<FakeCompiler> compiler;
  attn_context *ctx = nullptr;
  attn_spec spec;
  attn_launch_args args;
  std::vector<float> q, k, v, out, lse, maskF;
  std::vector<uint8_t> maskB;
};

//===----------------------------------------------------------------------===//
// attn_spec_init and names
//===----------------------------------------------------------------------===//

TEST(SpecInit, Defaults) {
  attn_spec s;
  std::memset(&s, 0x5a, sizeof s);
  attn_spec_init(&s);
  EXPECT_EQ(s.dtype, ATTN_DTYPE_F32);
  EXPECT_EQ(s.batch, ATTN_DYNAMIC);
  EXPECT_EQ(s.heads_q, ATTN_DYNAMIC);
  EXPECT_EQ(s.heads_kv, ATTN_DYNAMIC);
  EXPECT_EQ(s.seq_q, ATTN_DYNAMIC);
  EXPECT_EQ(s.seq_kv, ATTN_DYNAMIC);
  EXPECT_EQ(s.head_dim, 0);
  EXPECT_EQ(s.value_dim, 0);
  EXPECT_EQ(s.causal, 0);
  EXPECT_EQ(s.mask, ATTN_MASK_NONE);
  EXPECT_EQ(s.mask_dtype, ATTN_DTYPE_BOOL);
  EXPECT_EQ(s.scale, 0.0);
  EXPECT_EQ(s.dropout_p, 0.0);
  EXPECT_EQ(s.return_lse, 0);
  EXPECT_EQ(s.variant, ATTN_VARIANT_DEFAULT);
  EXPECT_EQ(s.block_q, 0);
  EXPECT_EQ(s.block_kv, 0);
  EXPECT_EQ(s.kv_splits, 0);
}

TEST(Version, LibraryMatchesHeader) {
  // The library's version is the header's: both come from project(VERSION).
  EXPECT_STREQ(attn_version(), ATTN_VERSION_STRING);
  std::string expected = std::to_string(ATTN_VERSION_MAJOR) + "." +
                         std::to_string(ATTN_VERSION_MINOR) + "." +
                         std::to_string(ATTN_VERSION_PATCH);
  EXPECT_EQ(expected, attn_version());
  EXPECT_EQ(ATTN_VERSION, ATTN_VERSION_MAJOR * 10000 +
                              ATTN_VERSION_MINOR * 100 + ATTN_VERSION_PATCH);
}

TEST(Names, KnownAndUnknown) {
  EXPECT_STREQ(attn_target_name(ATTN_TARGET_CPU), "cpu");
  EXPECT_STREQ(attn_target_name(ATTN_TARGET_CUDA), "cuda");
  EXPECT_STREQ(attn_target_name(ATTN_TARGET_VULKAN), "vulkan");
  EXPECT_STREQ(attn_target_name(static_cast<attn_target>(17)), "unknown");
  EXPECT_STREQ(attn_dtype_name(ATTN_DTYPE_F16), "f16");
  EXPECT_STREQ(attn_dtype_name(ATTN_DTYPE_BF16), "bf16");
  EXPECT_STREQ(attn_dtype_name(ATTN_DTYPE_F32), "f32");
  EXPECT_STREQ(attn_dtype_name(ATTN_DTYPE_BOOL), "bool");
  EXPECT_STREQ(attn_dtype_name(static_cast<attn_dtype>(0)), "unknown");
  EXPECT_STREQ(attn_status_string(ATTN_OK), "ok");
  EXPECT_STREQ(attn_status_string(ATTN_ERROR_INVALID_ARGUMENT),
               "invalid argument");
  EXPECT_STREQ(attn_status_string(ATTN_ERROR_UNSUPPORTED), "unsupported");
  EXPECT_STREQ(attn_status_string(ATTN_ERROR_COMPILE), "compile error");
  EXPECT_STREQ(attn_status_string(ATTN_ERROR_BACKEND), "backend error");
  EXPECT_STREQ(attn_status_string(ATTN_ERROR_UNAVAILABLE), "unavailable");
  EXPECT_STREQ(attn_status_string(ATTN_ERROR_OUT_OF_MEMORY), "out of memory");
  EXPECT_STREQ(attn_status_string(static_cast<attn_status>(99)), "unknown");
}

//===----------------------------------------------------------------------===//
// Spec validation: one rule per test
//===----------------------------------------------------------------------===//

TEST_F(RuntimeTest, SpecDtypeBoolRejected) {
  spec.dtype = ATTN_DTYPE_BOOL;
  expectSpecRejected("spec.dtype is bool, which is for masks only");
}

TEST_F(RuntimeTest, SpecDtypeOutOfRangeRejected) {
  spec.dtype = static_cast<attn_dtype>(9);
  expectSpecRejected("spec.dtype is 9");
}

TEST_F(RuntimeTest, SpecHeadDimUnsetRejected) {
  spec.head_dim = 0;
  expectSpecRejected("spec.head_dim is 0; it must be set");
}

TEST_F(RuntimeTest, SpecHeadDimTooLargeRejected) {
  spec.head_dim = 1025;
  expectSpecRejected("spec.head_dim is 1025; the largest supported is 1024");
}

TEST_F(RuntimeTest, SpecHeadDimLimitAccepted) {
  spec.head_dim = 1024;
  EXPECT_NE(compileOk(), nullptr);
}

TEST_F(RuntimeTest, SpecValueDimNegativeRejected) {
  spec.value_dim = -3;
  expectSpecRejected("spec.value_dim is -3; it must be >= 0");
}

TEST_F(RuntimeTest, SpecDimsMustBePositiveOrDynamic) {
  struct Field {
    int64_t attn_spec::*member;
    const char *name;
  } fields[] = {{&attn_spec::batch, "batch"},
                {&attn_spec::heads_q, "heads_q"},
                {&attn_spec::heads_kv, "heads_kv"},
                {&attn_spec::seq_q, "seq_q"},
                {&attn_spec::seq_kv, "seq_kv"}};
  for (const Field &f : fields) {
    for (int64_t bad : {int64_t(0), int64_t(-2)}) {
      SCOPED_TRACE(std::string(f.name) + " = " + std::to_string(bad));
      attn_spec_init(&spec);
      spec.head_dim = D;
      spec.*f.member = bad;
      expectSpecRejected(std::string("spec.") + f.name + " is " +
                         std::to_string(bad) +
                         "; a dimension must be > 0 or ATTN_DYNAMIC");
    }
  }
}

TEST_F(RuntimeTest, SpecHeadsNotDivisibleRejected) {
  spec.heads_q = 6;
  spec.heads_kv = 4;
  expectSpecRejected("spec.heads_q (6) is not a multiple of spec.heads_kv (4)");
}

TEST_F(RuntimeTest, SpecHeadsDivisibilityNeedsBothStatic) {
  spec.heads_q = 6; // heads_kv dynamic: checked at launch instead
  EXPECT_NE(compileOk(), nullptr);
}

TEST_F(RuntimeTest, SpecMaskKindRejected) {
  spec.mask = static_cast<attn_mask_kind>(7);
  expectSpecRejected("spec.mask is 7");
}

TEST_F(RuntimeTest, SpecBoolMaskNeedsBoolDtype) {
  spec.mask = ATTN_MASK_BOOL;
  spec.mask_dtype = ATTN_DTYPE_F16;
  expectSpecRejected("spec.mask_dtype is f16 but a bool mask");
}

TEST_F(RuntimeTest, SpecAdditiveMaskNeedsFloatDtype) {
  spec.mask = ATTN_MASK_ADDITIVE;
  spec.mask_dtype = ATTN_DTYPE_BOOL;
  expectSpecRejected("spec.mask_dtype is bool but an additive mask");
}

TEST_F(RuntimeTest, SpecScaleNotFiniteRejected) {
  spec.scale = std::numeric_limits<double>::infinity();
  expectSpecRejected("spec.scale is inf; it must be finite");
  spec.scale = std::nan("");
  expectSpecRejected("spec.scale is nan; it must be finite");
}

TEST_F(RuntimeTest, SpecDropoutOutOfRangeRejected) {
  for (double p : {1.0, -0.25, std::nan(""),
                   std::numeric_limits<double>::infinity()}) {
    SCOPED_TRACE(p);
    spec.dropout_p = p;
    expectSpecRejected("; it must be in [0, 1)");
  }
  spec.dropout_p = 1.0;
  expectSpecRejected("spec.dropout_p is 1;");
}

TEST_F(RuntimeTest, SpecVariantRejected) {
  spec.variant = static_cast<attn_variant>(3);
  expectSpecRejected("spec.variant is 3");
}

TEST_F(RuntimeTest, SpecBlocksNegativeRejected) {
  spec.block_q = -1;
  expectSpecRejected("spec.block_q is -1; it must be >= 0");
  spec.block_q = 0;
  spec.block_kv = -64;
  expectSpecRejected("spec.block_kv is -64; it must be >= 0");
  spec.block_kv = 0;
  spec.kv_splits = -2;
  expectSpecRejected("spec.kv_splits is -2; it must be >= 0 (0 = automatic)");
}

// Issue 22, item 1: sizes whose products overflow int64 were accepted and
// killed the compilers; every tensor (and the score count) must fit 2^62
// bytes, checked on the static dimensions at compile time.
TEST_F(RuntimeTest, SpecSizeProductsMustFit) {
  spec.batch = spec.heads_q = spec.seq_q = spec.seq_kv = int64_t(1) << 31;
  spec.heads_kv = 1;
  expectSpecRejected("spec: q = batch (2147483648) x heads_q (2147483648) x "
                     "seq_q (2147483648) x head_dim (8) x 4 bytes is more "
                     "than 2^62 bytes");
  expectSpecRejected("spec: q = ", ATTN_TARGET_VULKAN);
  // k alone: the first tensor too large is named.
  spec.batch = spec.heads_q = spec.seq_q = 1;
  spec.seq_kv = int64_t(1) << 60;
  expectSpecRejected("spec: k = batch (1) x heads_kv (1) x seq_kv "
                     "(1152921504606846976) x head_dim (8) x 4 bytes");
  // No tensor too large, but B*Hq*Sq*Skv scores are (no mask, no lse).
  spec.head_dim = 1;
  spec.batch = spec.heads_kv = 1;
  spec.heads_q = spec.seq_q = int64_t(1) << 28;
  spec.seq_kv = int64_t(1) << 28;
  expectSpecRejected("spec: the scores = batch (1) x heads_q (268435456) x "
                     "seq_q (268435456) x seq_kv (268435456) x 4 bytes");
  // Dynamic dimensions are left to the launch: this spec is fine.
  spec.heads_q = spec.heads_kv = ATTN_DYNAMIC;
  EXPECT_NE(compileOk(), nullptr);
}

TEST_F(RuntimeTest, SpecBlocksBounded) {
  spec.block_kv = int64_t(1) << 62;
  expectSpecRejected("spec.block_kv is 4611686018427387904; the largest "
                     "supported is 2^31 - 1");
  spec.block_kv = 0;
  spec.block_q = int64_t(INT32_MAX) + 1;
  expectSpecRejected("spec.block_q is 2147483648; the largest supported");
  spec.block_q = INT32_MAX;
  EXPECT_NE(compileOk(), nullptr);
}

// Issue 22, item 6: SPIR-V kernels index in 32 bits; larger static sizes
// failed inside the compiler ("failed to legalize 'arith.constant'").
TEST_F(RuntimeTest, VulkanSizesBoundedBy32BitIndices) {
  auto expectUnsupported = [&](const std::string &needle) {
    attn_kernel *kernel = nullptr;
    int before = record.compiles.load();
    EXPECT_EQ(attn_compile(ctx, &spec, ATTN_TARGET_VULKAN, &kernel),
              ATTN_ERROR_UNSUPPORTED);
    EXPECT_ERROR_HAS(needle);
    EXPECT_EQ(record.compiles.load(), before);
  };
  spec.head_dim = 1;
  spec.seq_q = int64_t(1) << 31;
  expectUnsupported("spec.seq_q is 2147483648; the vulkan target's kernels "
                    "use 32-bit indices, so the largest it takes is "
                    "2147483647");
  spec.seq_q = ATTN_DYNAMIC;
  spec.block_kv = INT32_MAX;
  // (a valid block size for cpu)
  EXPECT_NE(compileOk(), nullptr);
  spec.kv_splits = int64_t(1) << 40;
  spec.block_kv = 0;
  expectUnsupported("spec.kv_splits is 1099511627776; the vulkan target");
}

TEST_F(RuntimeTest, SpecTargetRejected) {
  expectSpecRejected("target is 5; expected",
                     static_cast<attn_target>(5));
}

//===----------------------------------------------------------------------===//
// Cache and normalization of the spec
//===----------------------------------------------------------------------===//

TEST_F(RuntimeTest, CacheReturnsSameKernelWithoutRecompiling) {
  attn_kernel *a = compileOk();
  attn_kernel *b = compileOk();
  EXPECT_NE(a, nullptr);
  EXPECT_EQ(a, b);
  EXPECT_EQ(record.compiles.load(), 1);
  EXPECT_EQ(attn_context_cache_size(ctx), 1u);

  spec.causal = 1;
  attn_kernel *c = compileOk();
  EXPECT_NE(c, a);
  EXPECT_EQ(record.compiles.load(), 2);
  EXPECT_EQ(attn_context_cache_size(ctx), 2u);
}

// A compiler whose kernels depend on more than the spec (an environment
// override of the variant, say) names that in configuration(): a kernel
// compiled under one setting is not handed out under another, and each
// setting's kernel stays cached.
TEST_F(RuntimeTest, CacheKeyIncludesCompilerConfiguration) {
  compiler->configurationValue = "ATTN_VULKAN_VARIANT=portable";
  attn_kernel *a = compileOk();
  compiler->configurationValue = "ATTN_VULKAN_VARIANT=coopmat-scalar";
  attn_kernel *b = compileOk();
  EXPECT_NE(a, b);
  EXPECT_EQ(record.compiles.load(), 2);
  EXPECT_EQ(attn_context_cache_size(ctx), 2u);
  compiler->configurationValue = "ATTN_VULKAN_VARIANT=portable";
  EXPECT_EQ(compileOk(), a);
  EXPECT_EQ(record.compiles.load(), 2);
}

TEST_F(RuntimeTest, CacheIsPerContext) {
  attn_kernel *a = compileOk();
  attn_context *other = nullptr;
  ASSERT_EQ(attn_context_create(&other), ATTN_OK);
  attn_kernel *b = nullptr;
  ASSERT_EQ(attn_compile(other, &spec, ATTN_TARGET_CPU, &b), ATTN_OK);
  EXPECT_NE(a, b);
  EXPECT_EQ(record.compiles.load(), 2);
  attn_context_destroy(other);
}

TEST_F(RuntimeTest, ValueDimZeroIsNormalizedBeforeCacheAndCompiler) {
  attn_kernel *implicit = compileOk();
  spec.value_dim = D;
  attn_kernel *explicitDv = compileOk();
  EXPECT_EQ(implicit, explicitDv);
  ASSERT_EQ(record.compiledSpecs.size(), 1u);
  EXPECT_EQ(record.compiledSpecs[0].value_dim, D);
  EXPECT_EQ(attn_kernel_spec(implicit)->value_dim, D);
}

TEST_F(RuntimeTest, TruthyFlagsAndUnusedMaskDtypeShareAnEntry) {
  spec.causal = 1;
  attn_kernel *a = compileOk();
  spec.causal = 7;
  spec.mask_dtype = ATTN_DTYPE_F32; // unused without a mask
  attn_kernel *b = compileOk();
  EXPECT_EQ(a, b);
  EXPECT_EQ(record.compiledSpecs[0].causal, 1);
}

TEST_F(RuntimeTest, KernelKeepsSpecAndSource) {
  spec.dtype = ATTN_DTYPE_BF16;
  spec.seq_kv = 128;
  attn_kernel *kernel = compileOk();
  const attn_spec *kept = attn_kernel_spec(kernel);
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->dtype, ATTN_DTYPE_BF16);
  EXPECT_EQ(kept->seq_kv, 128);
  EXPECT_STREQ(attn_kernel_source(kernel), "// fake kernel D=8");
}

TEST_F(RuntimeTest, KernelInfoComesFromTheExecutable) {
  attn_kernel *kernel = compileOk();
  attn_kernel_info info;
  ASSERT_EQ(attn_kernel_get_info(kernel, &info), ATTN_OK) << attn_last_error();
  EXPECT_STREQ(info.variant, "fake");
  EXPECT_STREQ(info.device, "fake device");
  EXPECT_EQ(info.block_q, 32);
  EXPECT_EQ(info.block_kv, 16);
  EXPECT_EQ(info.kv_splits, 0); // no launch yet
  allocate();
  launchOk();
  launchOk();
  ASSERT_EQ(attn_kernel_get_info(kernel, &info), ATTN_OK);
  EXPECT_EQ(info.kv_splits, 2); // the fake's count: its launches
  EXPECT_EQ(attn_kernel_get_info(nullptr, &info),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_ERROR_HAS("attn_kernel_get_info: kernel is NULL");
  EXPECT_EQ(attn_kernel_get_info(kernel, nullptr),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_ERROR_HAS("attn_kernel_get_info: info is NULL");
}

TEST_F(RuntimeTest, FailedCompileIsNotCached) {
  compiler->compileStatus = ATTN_ERROR_COMPILE;
  compiler->compileError = "cpu: the pipeline failed: boom";
  attn_kernel *kernel = nullptr;
  EXPECT_EQ(attn_compile(ctx, &spec, ATTN_TARGET_CPU, &kernel),
            ATTN_ERROR_COMPILE);
  EXPECT_ERROR_HAS("cpu: the pipeline failed: boom");
  EXPECT_EQ(kernel, nullptr);
  EXPECT_EQ(attn_context_cache_size(ctx), 0u);

  compiler->compileStatus = ATTN_OK;
  EXPECT_NE(compileOk(), nullptr);
  EXPECT_EQ(record.compiles.load(), 2);
  EXPECT_EQ(attn_context_cache_size(ctx), 1u);
}

// Issue 22, item 2: a failed host allocation is a status, never a crash.
TEST_F(RuntimeTest, HugeHostAllocationIsOutOfMemory) {
  compiler->growHugeVector = true;
  attn_kernel *kernel = nullptr;
  EXPECT_EQ(attn_compile(ctx, &spec, ATTN_TARGET_CPU, &kernel),
            ATTN_ERROR_OUT_OF_MEMORY);
  EXPECT_ERROR_HAS("attn_compile: out of memory");
  EXPECT_EQ(attn_context_cache_size(ctx), 0u);
}

TEST_F(RuntimeTest, CompilerExceptionBecomesBackendError) {
  compiler->throwOnCompile = true;
  attn_kernel *kernel = nullptr;
  EXPECT_EQ(attn_compile(ctx, &spec, ATTN_TARGET_CPU, &kernel),
            ATTN_ERROR_BACKEND);
  EXPECT_ERROR_HAS("fake compiler exploded");
  EXPECT_EQ(attn_context_cache_size(ctx), 0u);
}

TEST_F(RuntimeTest, ConcurrentCompilesOfOneSpecCompileOnce) {
  std::vector<attn_kernel *> kernels(4, nullptr);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < kernels.size(); ++t)
    threads.emplace_back([&, t] {
      attn_compile(ctx, &spec, ATTN_TARGET_CPU, &kernels[t]);
    });
  for (std::thread &t : threads)
    t.join();
  for (attn_kernel *kernel : kernels)
    EXPECT_EQ(kernel, kernels[0]);
  EXPECT_NE(kernels[0], nullptr);
  EXPECT_EQ(record.compiles.load(), 1);
}

//===----------------------------------------------------------------------===//
// The compiler registry and target availability
//===----------------------------------------------------------------------===//

TEST_F(RuntimeTest, TargetWithoutCompilerIsUnavailable) {
  EXPECT_EQ(attn_target_available(ctx, ATTN_TARGET_VULKAN),
            ATTN_ERROR_UNAVAILABLE);
  EXPECT_ERROR_HAS("no compiler for target 'vulkan' is linked into this program");
  attn_kernel *kernel = nullptr;
  EXPECT_EQ(attn_compile(ctx, &spec, ATTN_TARGET_VULKAN, &kernel),
            ATTN_ERROR_UNAVAILABLE);
  EXPECT_ERROR_HAS("no compiler for target 'vulkan'");
  EXPECT_EQ(kernel, nullptr);
}

TEST_F(RuntimeTest, RegisteredTargetIsAvailable) {
  EXPECT_EQ(attn_target_available(ctx, ATTN_TARGET_CPU), ATTN_OK);
  EXPECT_STREQ(attn_last_error(), "");
}

TEST_F(RuntimeTest, CompilerSaysUnavailable) {
  compiler->availableStatus = ATTN_ERROR_UNAVAILABLE;
  compiler->availableError = "cpu: no JIT in this build";
  EXPECT_EQ(attn_target_available(ctx, ATTN_TARGET_CPU),
            ATTN_ERROR_UNAVAILABLE);
  EXPECT_ERROR_HAS("cpu: no JIT in this build");
}

TEST_F(RuntimeTest, UnregisteringRemovesTheCompiler) {
  attn::registerCompiler(ATTN_TARGET_CPU, nullptr);
  EXPECT_EQ(attn_target_available(ctx, ATTN_TARGET_CPU),
            ATTN_ERROR_UNAVAILABLE);
  EXPECT_ERROR_HAS("no compiler for target 'cpu'");
}

TEST_F(RuntimeTest, AvailabilityOfInvalidTarget) {
  EXPECT_EQ(attn_target_available(ctx, static_cast<attn_target>(-1)),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_ERROR_HAS("target is -1");
}

//===----------------------------------------------------------------------===//
// Launch validation: one rule per test, outputs poisoned and checked
//===----------------------------------------------------------------------===//

TEST_F(RuntimeTest, LaunchValidRunsAndWrites) {
  allocate();
  attn::KernelArgs a = launchOk();
  EXPECT_EQ(out[((1 * Hq + 2) * Sq + 1) * D + 3], pattern(1, 2, 1, 3));
  EXPECT_EQ(a.seed, 1234u);
  EXPECT_EQ(a.mask.data, nullptr);
  EXPECT_EQ(a.lse.data, nullptr);
}

TEST_F(RuntimeTest, LaunchNullKernelOrArgs) {
  allocate();
  EXPECT_EQ(attn_launch(nullptr, &args), ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_ERROR_HAS("kernel is NULL");
  attn_kernel *kernel = compileOk();
  EXPECT_EQ(attn_launch(kernel, nullptr), ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_ERROR_HAS("args is NULL");
}

TEST_F(RuntimeTest, LaunchNullRequiredPointers) {
  spec.mask = ATTN_MASK_ADDITIVE;
  spec.mask_dtype = ATTN_DTYPE_F32;
  spec.return_lse = 1;
  allocate();
  attn_tensor attn_launch_args::*tensors[] = {
      &attn_launch_args::q, &attn_launch_args::k, &attn_launch_args::v,
      &attn_launch_args::mask, &attn_launch_args::out, &attn_launch_args::lse};
  const char *names[] = {"q", "k", "v", "mask", "out", "lse"};
  for (int i = 0; i < 6; ++i) {
    SCOPED_TRACE(names[i]);
    void *saved = (args.*tensors[i]).data;
    (args.*tensors[i]).data = nullptr;
    expectRejected(std::string(names[i]) + ".data is NULL");
    (args.*tensors[i]).data = saved;
  }
}

// A vulkan device buffer's address (attn_vulkan.h: tag 0xA in the top
// bits) handed to another target's kernel is refused, never dereferenced.
TEST_F(RuntimeTest, LaunchVulkanDeviceAddressOnAnotherTarget) {
  allocate();
  void *saved = args.k.data;
  args.k.data = reinterpret_cast<void *>(uintptr_t(0xAull << 60) |
                                         (uintptr_t(7) << 36));
  expectRejected("k.data is the address of a vulkan device buffer "
                 "(attn_vulkan_buffer_pointer); the kernel is for the cpu "
                 "target");
  args.k.data = saved;
}

TEST_F(RuntimeTest, LaunchAbsentTensorsMayBeAnything) {
  allocate();
  // Neither mask nor lse is in the spec: garbage there must not matter.
  std::memset(&args.mask, 0xab, sizeof args.mask);
  std::memset(&args.lse, 0xcd, sizeof args.lse);
  attn::KernelArgs a = launchOk();
  EXPECT_EQ(a.mask.data, nullptr);
  EXPECT_EQ(a.lse.data, nullptr);
}

TEST_F(RuntimeTest, LaunchZeroDimension) {
  allocate();
  args.k.shape[2] = 0;
  expectRejected("k.shape[2] (Skv) is 0; every dimension must be > 0");
}

// A zero extent of a dynamic dimension is refused like a static one.
TEST_F(RuntimeTest, LaunchZeroDynamicExtent) {
  for (int d = 0; d < 3; ++d) {
    allocate();
    args.q.shape[d] = 0;
    expectRejected("q.shape[" + std::to_string(d) + "]");
    EXPECT_ERROR_HAS("is 0; every dimension must be > 0");
  }
}

// Issue 22, item 1: [2^32, 2^32, 64, 16] with unit strides spans little
// memory, so the span check passed it, and the kernel's sizes overflowed.
TEST_F(RuntimeTest, LaunchSizeProductsMustFit) {
  spec.head_dim = 16;
  allocate();
  for (attn_tensor *t : {&args.q, &args.k, &args.v, &args.out}) {
    t->shape[0] = t->shape[1] = int64_t(1) << 32;
    t->shape[2] = 64;
    t->shape[3] = 16;
    for (int d = 0; d < 4; ++d)
      t->strides[d] = 1;
  }
  expectRejected("q = batch (4294967296) x heads_q (4294967296) x seq_q (64) "
                 "x head_dim (16) x 4 bytes is more than 2^62 bytes");
  // Tensors that fit, whose B*Hq*Sq*Skv scores do not (checked before the
  // strides, so these need not describe real buffers).
  spec.head_dim = 1;
  for (attn_tensor *t : {&args.q, &args.k, &args.v, &args.out}) {
    t->shape[0] = 1;
    t->shape[1] = int64_t(1) << 20;
    t->shape[2] = int64_t(1) << 22;
    t->shape[3] = 1;
  }
  expectRejected("the scores = batch (1) x heads_q (1048576) x seq_q "
                 "(4194304) x seq_kv (4194304) x 4 bytes");
}

// Issue 22, item 8: an output whose elements share addresses made the
// result depend on write order.
TEST_F(RuntimeTest, LaunchOutputOverlappingItselfRejected) {
  allocate();
  // Rows of D = 8 elements 4 apart.
  args.out.strides[2] = 4;
  expectRejected("out overlaps itself: out.strides[2] (Sq) is 4, within the "
                 "8 elements the smaller strides span");
  // Two dimensions of stride 1 (the issue's {32, 8, 1, 1}).
  allocate();
  args.out.strides[2] = 1;
  expectRejected("out overlaps itself: out.strides[");
  // lse with every stride 1.
  spec.return_lse = 1;
  allocate();
  for (int d = 0; d < 3; ++d)
    args.lse.strides[d] = 1;
  expectRejected("lse overlaps itself: lse.strides[");
  // A padded layout (gaps between rows) is fine (BSHD: below).
  allocate();
  std::vector<float> padded(B * Hq * Sq * 2 * D);
  args.out.data = padded.data();
  args.out.strides[2] = 2 * D;
  args.out.strides[1] = Sq * 2 * D;
  args.out.strides[0] = Hq * Sq * 2 * D;
  launchOk();
}

TEST_F(RuntimeTest, LaunchStaticSpecDimsMustMatch) {
  struct Case {
    int64_t attn_spec::*member;
    int64_t specValue;
    const char *expected;
  } cases[] = {
      {&attn_spec::batch, 3, "q.shape[0] (B) is 2 but the kernel was compiled for spec.batch = 3"},
      {&attn_spec::heads_q, 8, "q.shape[1] (Hq) is 4 but the kernel was compiled for spec.heads_q = 8"},
      {&attn_spec::seq_q, 7, "q.shape[2] (Sq) is 3 but the kernel was compiled for spec.seq_q = 7"},
      {&attn_spec::heads_kv, 1, "k.shape[1] (Hkv) is 2 but the kernel was compiled for spec.heads_kv = 1"},
      {&attn_spec::seq_kv, 9, "k.shape[2] (Skv) is 5 but the kernel was compiled for spec.seq_kv = 9"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.expected);
    attn_spec_init(&spec);
    spec.head_dim = D;
    spec.*c.member = c.specValue;
    allocate();
    expectRejected(c.expected);
  }
}

TEST_F(RuntimeTest, LaunchStaticSpecDimsMatching) {
  spec.batch = B;
  spec.heads_q = Hq;
  spec.heads_kv = Hkv;
  spec.seq_q = Sq;
  spec.seq_kv = Skv;
  allocate();
  launchOk();
}

TEST_F(RuntimeTest, LaunchHeadDimMismatch) {
  allocate();
  args.q.shape[3] = 16;
  expectRejected("q.shape[3] (D) is 16 but the kernel was compiled for spec.head_dim = 8");
  allocate();
  args.k.shape[3] = 4;
  expectRejected("k.shape[3] (D) is 4 but the kernel was compiled for spec.head_dim = 8");
}

TEST_F(RuntimeTest, LaunchValueDimMismatch) {
  spec.value_dim = 4;
  allocate(/*dv=*/4);
  args.v.shape[3] = 8;
  expectRejected("v.shape[3] (Dv) is 8 but the kernel was compiled for spec.value_dim = 4");
  allocate(4);
  args.out.shape[3] = 8;
  expectRejected("out.shape[3] (Dv) is 8 but the kernel was compiled for spec.value_dim = 4");
}

TEST_F(RuntimeTest, LaunchValueDimDiffersFromHeadDim) {
  spec.value_dim = 4;
  allocate(4);
  attn::KernelArgs a = launchOk();
  EXPECT_EQ(a.v.shape[3], 4);
  EXPECT_EQ(a.out.shape[3], 4);
  EXPECT_EQ(a.q.shape[3], D);
}

TEST_F(RuntimeTest, LaunchInconsistentBatch) {
  allocate();
  args.k.shape[0] = 1;
  expectRejected("k.shape[0] (B) is 1 but q.shape[0] (B) is 2");
  allocate();
  args.v.shape[0] = 1;
  expectRejected("v.shape[0] (B) is 1 but q.shape[0] (B) is 2");
  allocate();
  args.out.shape[0] = 1;
  expectRejected("out.shape[0] (B) is 1 but q.shape[0] (B) is 2");
}

TEST_F(RuntimeTest, LaunchInconsistentHeadsAndSequences) {
  allocate();
  args.v.shape[1] = 1;
  expectRejected("v.shape[1] (Hkv) is 1 but k.shape[1] (Hkv) is 2");
  allocate();
  args.v.shape[2] = 4;
  expectRejected("v.shape[2] (Skv) is 4 but k.shape[2] (Skv) is 5");
  allocate();
  args.out.shape[1] = 2;
  expectRejected("out.shape[1] (Hq) is 2 but q.shape[1] (Hq) is 4");
  allocate();
  args.out.shape[2] = 1;
  expectRejected("out.shape[2] (Sq) is 1 but q.shape[2] (Sq) is 3");
}

TEST_F(RuntimeTest, LaunchHeadsNotDivisible) {
  allocate();
  args.k.shape[1] = 3;
  args.v.shape[1] = 3;
  expectRejected("q.shape[1] (Hq) = 4 is not a multiple of k.shape[1] (Hkv) = 3");
}

TEST_F(RuntimeTest, LaunchLseShape) {
  spec.return_lse = 1;
  allocate();
  args.lse.shape[2] = 2;
  expectRejected("lse.shape[2] (Sq) is 2 but q.shape[2] (Sq) is 3");
}

TEST_F(RuntimeTest, LaunchLseIgnoresFourthDimension) {
  spec.return_lse = 1;
  allocate();
  args.lse.shape[3] = -7;
  args.lse.strides[3] = 0;
  attn::KernelArgs a = launchOk();
  EXPECT_EQ(a.lse.rank, 3);
  EXPECT_EQ(a.lse.shape[2], Sq);
  EXPECT_EQ(a.lse.strides[2], 1);
  EXPECT_EQ(a.lse.shape[3], 0);
  EXPECT_EQ(lse[5], -1.5f);
}

TEST_F(RuntimeTest, LaunchMaskShape) {
  spec.mask = ATTN_MASK_BOOL;
  allocate();
  args.mask.shape[0] = 3;
  expectRejected("mask.shape[0] (B) is 3; expected 1 (broadcast) or 2");
  allocate();
  args.mask.shape[1] = 2;
  expectRejected("mask.shape[1] (Hq) is 2; expected 1 (broadcast) or 4");
  allocate();
  args.mask.shape[2] = 1;
  expectRejected("mask.shape[2] (Sq) is 1 but q.shape[2] (Sq) is 3");
  allocate();
  args.mask.shape[3] = 1;
  expectRejected("mask.shape[3] (Skv) is 1 but k.shape[2] (Skv) is 5");
}

TEST_F(RuntimeTest, LaunchInnerStrideMustBeOne) {
  allocate();
  args.v.strides[3] = 2;
  expectRejected("v.strides[3] is 2; the last dimension must be contiguous");
  spec.return_lse = 1;
  allocate();
  args.lse.strides[2] = 3;
  expectRejected("lse.strides[2] is 3; the last dimension must be contiguous");
}

TEST_F(RuntimeTest, LaunchOuterStridesMustBePositive) {
  allocate();
  args.q.strides[1] = 0;
  expectRejected("q.strides[1] (Hq) is 0; strides must be >= 1");
  allocate();
  args.out.strides[0] = -4;
  expectRejected("out.strides[0] (B) is -4; strides must be >= 1");
}

TEST_F(RuntimeTest, LaunchMaskBroadcastBecomesStrideZero) {
  spec.mask = ATTN_MASK_ADDITIVE;
  spec.mask_dtype = ATTN_DTYPE_F32;
  allocate();
  // One [Sq, Skv] slice for every (b, h); its B and H strides are unused.
  args.mask.shape[0] = 1;
  args.mask.shape[1] = 1;
  args.mask.strides[0] = -99;
  args.mask.strides[1] = 0;
  attn::KernelArgs a = launchOk();
  EXPECT_EQ(a.mask.data, maskF.data());
  EXPECT_EQ(a.mask.rank, 4);
  EXPECT_EQ(a.mask.shape[0], B);
  EXPECT_EQ(a.mask.shape[1], Hq);
  EXPECT_EQ(a.mask.strides[0], 0);
  EXPECT_EQ(a.mask.strides[1], 0);
  EXPECT_EQ(a.mask.shape[2], Sq);
  EXPECT_EQ(a.mask.strides[2], Skv);
  EXPECT_EQ(a.mask.strides[3], 1);
}

TEST_F(RuntimeTest, LaunchMaskNonBroadcastStrideChecked) {
  spec.mask = ATTN_MASK_BOOL;
  allocate();
  args.mask.strides[1] = 0; // H has extent Hq, so this is not a broadcast
  expectRejected("mask.strides[1] (Hq) is 0; strides must be >= 1");
}

TEST_F(RuntimeTest, LaunchBSHDStridesPassThrough) {
  allocate();
  // q stored [B, Sq, Hq, D]: logical [B, Hq, Sq, D] with permuted strides.
  int64_t qStrides[4] = {Sq * Hq * D, D, Hq * D, 1};
  std::memcpy(args.q.strides, qStrides, sizeof qStrides);
  int64_t oStrides[4] = {Sq * Hq * D, D, Hq * D, 1};
  std::memcpy(args.out.strides, oStrides, sizeof oStrides);
  attn::KernelArgs a = launchOk();
  for (int d = 0; d < 4; ++d) {
    EXPECT_EQ(a.q.strides[d], qStrides[d]);
    EXPECT_EQ(a.q.shape[d], args.q.shape[d]);
    EXPECT_EQ(a.out.strides[d], oStrides[d]);
  }
  EXPECT_EQ(a.q.rank, 4);
  // The fake wrote out[b=1, h=2, i=1, e=3] at its BSHD address.
  EXPECT_EQ(out[1 * Sq * Hq * D + 1 * Hq * D + 2 * D + 3], pattern(1, 2, 1, 3));
}

TEST_F(RuntimeTest, LaunchMisalignedData) {
  allocate();
  args.q.data = reinterpret_cast<char *>(q.data()) + 2;
  expectRejected("is not aligned to 4 bytes, the size of one f32 element");
}

TEST_F(RuntimeTest, LaunchHalfPrecisionNeedsTwoByteAlignment) {
  spec.dtype = ATTN_DTYPE_F16;
  allocate();
  args.k.data = reinterpret_cast<char *>(k.data()) + 1;
  expectRejected("k.data (");
  EXPECT_ERROR_HAS("not aligned to 2 bytes, the size of one f16 element");
}

TEST_F(RuntimeTest, LaunchBoolMaskAnyAlignment) {
  spec.mask = ATTN_MASK_BOOL;
  allocate();
  maskB.push_back(1);
  args.mask.data = maskB.data() + 1;
  launchOk();
}

TEST_F(RuntimeTest, LaunchStreamMustBeNullOnCpu) {
  allocate();
  int dummy;
  args.stream = &dummy;
  expectRejected("stream is 0x");
  EXPECT_ERROR_HAS("it must be NULL for the cpu target");
}

TEST_F(RuntimeTest, LaunchOutputOverlappingInput) {
  allocate();
  args.out.data = q.data(); // same size, same place
  expectRejected("out [0x");
  EXPECT_ERROR_HAS(") overlaps q [0x");
}

TEST_F(RuntimeTest, LaunchOutputOverlappingInputPartially) {
  allocate();
  std::vector<float> shared(q.size() + 10, 0.0f);
  args.q.data = shared.data();
  // out starts at q's last element.
  args.out.data = shared.data() + q.size() - 1;
  expectRejected(") overlaps q [");
}

TEST_F(RuntimeTest, LaunchAdjacentBuffersDoNotOverlap) {
  allocate();
  std::vector<float> shared(q.size() + out.size(), 0.0f);
  args.q.data = shared.data();
  args.out.data = shared.data() + q.size();
  launchOk();
}

TEST_F(RuntimeTest, LaunchLseOverlappingOutOrInput) {
  spec.return_lse = 1;
  allocate();
  args.lse.data = out.data() + 4;
  expectRejected("lse [");
  EXPECT_ERROR_HAS(") overlaps out [");
  allocate();
  args.lse.data = k.data();
  expectRejected(") overlaps k [");
}

TEST_F(RuntimeTest, LaunchOutputOverlappingMask) {
  spec.mask = ATTN_MASK_ADDITIVE;
  spec.mask_dtype = ATTN_DTYPE_F32;
  allocate();
  args.mask.data = out.data();
  expectRejected("out [");
  EXPECT_ERROR_HAS(") overlaps mask [");
}

TEST_F(RuntimeTest, LaunchSpanOverflowRejected) {
  allocate();
  args.k.strides[0] = std::numeric_limits<int64_t>::max() / 2;
  expectRejected("k: its shape and strides span more memory than can be addressed");
}

TEST_F(RuntimeTest, LaunchExecutableErrorPropagates) {
  allocate();
  record.runStatus = ATTN_ERROR_BACKEND;
  record.runError = "cuda: launch failed: out of resources";
  attn_kernel *kernel = compileOk();
  EXPECT_EQ(attn_launch(kernel, &args), ATTN_ERROR_BACKEND);
  EXPECT_ERROR_HAS("cuda: launch failed: out of resources");
}

//===----------------------------------------------------------------------===//
// Errors and NULL handling
//===----------------------------------------------------------------------===//

TEST_F(RuntimeTest, LastErrorIsThreadLocalAndClearedOnSuccess) {
  spec.head_dim = 0;
  attn_kernel *kernel = nullptr;
  EXPECT_EQ(attn_compile(ctx, &spec, ATTN_TARGET_CPU, &kernel),
            ATTN_ERROR_INVALID_ARGUMENT);
  std::string here = attn_last_error();
  EXPECT_NE(here, "");

  std::string there = "not run";
  std::thread([&] {
    there = attn_last_error();
    attn_kernel *k2 = nullptr;
    attn_compile(ctx, nullptr, ATTN_TARGET_CPU, &k2);
  }).join();
  EXPECT_EQ(there, "");
  // The other thread's failure did not replace ours.
  EXPECT_EQ(std::string(attn_last_error()), here);

  spec.head_dim = D;
  EXPECT_NE(compileOk(), nullptr);
  EXPECT_STREQ(attn_last_error(), "");
}

TEST_F(RuntimeTest, SetLastErrorFromOutside) {
  attn::setLastError("jit: something");
  EXPECT_STREQ(attn_last_error(), "jit: something");
  attn::setLastError("");
  EXPECT_STREQ(attn_last_error(), "");
}

TEST_F(RuntimeTest, NullPointersAreRejected) {
  attn_kernel *kernel = nullptr;
  EXPECT_EQ(attn_context_create(nullptr), ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_ERROR_HAS("ctx is NULL");
  EXPECT_EQ(attn_compile(nullptr, &spec, ATTN_TARGET_CPU, &kernel),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_ERROR_HAS("attn_compile: ctx is NULL");
  EXPECT_EQ(attn_compile(ctx, nullptr, ATTN_TARGET_CPU, &kernel),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_ERROR_HAS("attn_compile: spec is NULL");
  EXPECT_EQ(attn_compile(ctx, &spec, ATTN_TARGET_CPU, nullptr),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_ERROR_HAS("attn_compile: kernel is NULL");
  EXPECT_EQ(attn_target_available(nullptr, ATTN_TARGET_CPU),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_ERROR_HAS("attn_target_available: ctx is NULL");
  EXPECT_EQ(attn_kernel_spec(nullptr), nullptr);
  EXPECT_ERROR_HAS("attn_kernel_spec: kernel is NULL");
  EXPECT_EQ(attn_kernel_source(nullptr), nullptr);
  EXPECT_ERROR_HAS("attn_kernel_source: kernel is NULL");
  EXPECT_EQ(attn_context_cache_size(nullptr), 0u);
  EXPECT_ERROR_HAS("attn_context_cache_size: ctx is NULL");
  attn_spec_init(nullptr);
  EXPECT_ERROR_HAS("attn_spec_init: spec is NULL");
  attn_context_destroy(nullptr);
  EXPECT_EQ(record.compiles.load(), 0);
}

} // namespace

extern "C" int attn_c_api_check(void);

TEST(CApi, HeaderIsValidC) { EXPECT_EQ(attn_c_api_check(), 0); }
