//===- MhaTest.cpp - unit tests of the attention-layer C API (attn_mha_*) -===//
//
// Spec validation and normalization, the per-context cache, launch
// validation and the refusal of a target whose compiler has no layers, with
// a fake layer compiler in place of the JIT.
//
//===----------------------------------------------------------------------===//
#include "attn/runtime/Backend.h"
#include "attn/runtime/attn.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#define EXPECT_ERROR_HAS(needle)                                              \
  EXPECT_NE(std::string(attn_last_error()).find(needle), std::string::npos)   \
      << "attn_last_error() = \"" << attn_last_error()                        \
      << "\" does not mention \"" << (needle) << "\""

namespace {

/// Writes 1.0f to every element of y; counts compiles and runs.
class FakeLayer final : public attn::LayerExecutable {
public:
  FakeLayer(const attn_mha_spec &spec, int &runs) : spec(spec), runs(runs) {}
  attn_status run(const attn_mha_args &a, std::string &) override {
    ++runs;
    float *y = static_cast<float *>(a.y);
    for (int64_t i = 0; i < spec.batch * spec.seq * spec.embed; ++i)
      y[i] = 1.0f;
    return ATTN_OK;
  }
  attn_mha_spec spec;
  int &runs;
};

class FakeLayerCompiler final : public attn::Compiler {
public:
  attn_status available(std::string &) override { return ATTN_OK; }
  attn_status compile(const attn_spec &, attn::CompileResult &,
                      std::string &error) override {
    error = "not used";
    return ATTN_ERROR_COMPILE;
  }
  attn_status compileMha(const attn_mha_spec &spec,
                         attn::LayerCompileResult &result,
                         std::string &) override {
    ++compiles;
    last = spec;
    result.executable = std::make_unique<FakeLayer>(spec, runs);
    result.source = "fake";
    return ATTN_OK;
  }
  int compiles = 0, runs = 0;
  attn_mha_spec last{};
};

/// A compiler without layers (the default compileMha, for a backend that
/// adds none; registered for cuda here, which has layers, to test it).
class NoLayerCompiler final : public attn::Compiler {
public:
  attn_status available(std::string &) override { return ATTN_OK; }
  attn_status compile(const attn_spec &, attn::CompileResult &,
                      std::string &error) override {
    error = "not used";
    return ATTN_ERROR_COMPILE;
  }
};

class MhaTest : public ::testing::Test {
protected:
  void SetUp() override {
    compiler = std::make_shared<FakeLayerCompiler>();
    attn::registerCompiler(ATTN_TARGET_CPU, compiler);
    attn::registerCompiler(ATTN_TARGET_CUDA,
                           std::make_shared<NoLayerCompiler>());
    ASSERT_EQ(attn_context_create(&ctx), ATTN_OK);
    attn_mha_spec_init(&spec);
    spec.batch = 2;
    spec.seq = 3;
    spec.embed = 8;
    spec.heads_q = 2;
  }
  void TearDown() override {
    attn_context_destroy(ctx);
    attn::registerCompiler(ATTN_TARGET_CPU, nullptr);
    attn::registerCompiler(ATTN_TARGET_CUDA, nullptr);
  }
  attn_status compile(attn_target target = ATTN_TARGET_CPU) {
    kernel = nullptr;
    return attn_mha_compile(ctx, &spec, target, &kernel);
  }

  std::shared_ptr<FakeLayerCompiler> compiler;
  attn_context *ctx = nullptr;
  attn_mha_spec spec;
  attn_mha_kernel *kernel = nullptr;
};

TEST_F(MhaTest, DefaultsAreNormalized) {
  spec.heads_q = 4;
  ASSERT_EQ(compile(), ATTN_OK) << attn_last_error();
  const attn_mha_spec *n = attn_mha_kernel_spec(kernel);
  EXPECT_EQ(n->heads_kv, 4);
  EXPECT_EQ(n->head_dim, 2); // embed / heads_q
  EXPECT_EQ(n->value_dim, 2);
  EXPECT_EQ(n->seq_kv, 3);
  EXPECT_EQ(n->kv_embed, 8);
  EXPECT_EQ(compiler->last.head_dim, 2);
  EXPECT_STREQ(attn_mha_kernel_source(kernel), "fake");
}

TEST_F(MhaTest, RequiredFields) {
  for (int64_t attn_mha_spec::*field :
       {&attn_mha_spec::batch, &attn_mha_spec::seq, &attn_mha_spec::embed,
        &attn_mha_spec::heads_q}) {
    attn_mha_spec saved = spec;
    spec.*field = 0;
    EXPECT_EQ(compile(), ATTN_ERROR_INVALID_ARGUMENT);
    EXPECT_ERROR_HAS("must be > 0");
    spec = saved;
  }
  spec.head_dim = -1;
  EXPECT_EQ(compile(), ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_ERROR_HAS("spec.head_dim is -1");
  EXPECT_EQ(compiler->compiles, 0);
}

TEST_F(MhaTest, HeadRules) {
  spec.heads_q = 3; // 8 % 3 != 0 and no head_dim
  EXPECT_EQ(compile(), ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_ERROR_HAS("not a multiple of spec.heads_q");
  spec.head_dim = 4;
  EXPECT_EQ(compile(), ATTN_OK) << attn_last_error();
  spec.heads_kv = 2;
  EXPECT_EQ(compile(), ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_ERROR_HAS("must be a multiple of spec.heads_kv");
  spec.heads_kv = 0;
  spec.head_dim = (int64_t(1) << 20) + 1;
  EXPECT_EQ(compile(), ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_ERROR_HAS("at most 2^20");
}

TEST_F(MhaTest, CrossAndFused) {
  spec.seq_kv = 5; // without cross
  EXPECT_EQ(compile(), ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_ERROR_HAS("set spec.cross");
  spec.cross = 7; // normalized to 1
  ASSERT_EQ(compile(), ATTN_OK) << attn_last_error();
  EXPECT_EQ(attn_mha_kernel_spec(kernel)->cross, 1);
  EXPECT_EQ(attn_mha_kernel_spec(kernel)->seq_kv, 5);
  spec.fused_qkv = 1;
  EXPECT_EQ(compile(), ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_ERROR_HAS("fused_qkv needs self-attention");
}

TEST_F(MhaTest, BadDtypeScaleTarget) {
  spec.dtype = ATTN_DTYPE_BOOL;
  EXPECT_EQ(compile(), ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_ERROR_HAS("spec.dtype");
  spec.dtype = ATTN_DTYPE_F16;
  spec.scale = -1.0;
  EXPECT_EQ(compile(), ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_ERROR_HAS("spec.scale");
  spec.scale = 0.0;
  EXPECT_EQ(compile(static_cast<attn_target>(9)),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_ERROR_HAS("target is 9");
  EXPECT_EQ(attn_mha_compile(ctx, nullptr, ATTN_TARGET_CPU, &kernel),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_ERROR_HAS("spec is NULL");
}

TEST_F(MhaTest, SizesAreOverflowChecked) {
  // Each extent is fine alone; their products are not.
  spec.batch = int64_t(1) << 30;
  spec.seq = int64_t(1) << 30;
  spec.embed = 1 << 10;
  spec.heads_q = 1 << 10;
  EXPECT_EQ(compile(), ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_ERROR_HAS("more than 2^62 bytes");
  spec.batch = 1;
  spec.seq = 1;
  spec.embed = 1;
  spec.heads_q = int64_t(1) << 62;
  spec.head_dim = 1 << 20;
  EXPECT_EQ(compile(), ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_ERROR_HAS("overflow");
  EXPECT_EQ(compiler->compiles, 0);
}

TEST_F(MhaTest, Cache) {
  ASSERT_EQ(compile(), ATTN_OK);
  attn_mha_kernel *first = kernel;
  spec.heads_kv = 2; // the same after normalization
  ASSERT_EQ(compile(), ATTN_OK);
  EXPECT_EQ(kernel, first);
  EXPECT_EQ(compiler->compiles, 1);
  spec.causal = 1;
  ASSERT_EQ(compile(), ATTN_OK);
  EXPECT_NE(kernel, first);
  EXPECT_EQ(compiler->compiles, 2);
}

TEST_F(MhaTest, TargetWithoutLayersRefuses) {
  EXPECT_EQ(compile(ATTN_TARGET_CUDA), ATTN_ERROR_UNSUPPORTED);
  EXPECT_ERROR_HAS("does not compile attention layers");
  EXPECT_EQ(kernel, nullptr);
}

TEST_F(MhaTest, LaunchChecksPointers) {
  spec.bias = 1;
  ASSERT_EQ(compile(), ATTN_OK);
  std::vector<float> x(2 * 3 * 8), w(8 * 8), b(8), y(2 * 3 * 8, -7.0f);
  attn_mha_args a = {};
  a.x = x.data();
  a.w_q = a.w_k = a.w_v = a.w_o = w.data();
  a.b_q = a.b_k = a.b_v = a.b_o = b.data();
  a.y = y.data();
  // A missing bias.
  a.b_v = nullptr;
  EXPECT_EQ(attn_mha_launch(kernel, &a), ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_ERROR_HAS("args.b_v is NULL");
  a.b_v = b.data();
  // A pointer the spec does not use.
  a.w_qkv = w.data();
  EXPECT_EQ(attn_mha_launch(kernel, &a), ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_ERROR_HAS("args.w_qkv is set but the spec does not use it");
  a.w_qkv = nullptr;
  // Misaligned.
  a.x = reinterpret_cast<const char *>(x.data()) + 1;
  EXPECT_EQ(attn_mha_launch(kernel, &a), ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_ERROR_HAS("args.x is not aligned");
  a.x = x.data();
  int stream = 0;
  a.stream = &stream;
  EXPECT_EQ(attn_mha_launch(kernel, &a), ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_ERROR_HAS("args.stream must be NULL");
  a.stream = nullptr;
  // A vulkan device buffer's address (attn_vulkan.h: tag 0xA in the top
  // bits) on a cpu layer: refused, never dereferenced.
  a.w_k = reinterpret_cast<const void *>(uintptr_t(0xAull << 60) |
                                         (uintptr_t(7) << 36));
  EXPECT_EQ(attn_mha_launch(kernel, &a), ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_ERROR_HAS("args.w_k is the address of a vulkan device buffer "
                   "(attn_vulkan_buffer_pointer); the layer is for the cpu "
                   "target");
  a.w_k = w.data();
  // Nothing ran so far: y is untouched.
  EXPECT_EQ(compiler->runs, 0);
  for (float v : y)
    ASSERT_EQ(v, -7.0f);
  ASSERT_EQ(attn_mha_launch(kernel, &a), ATTN_OK) << attn_last_error();
  EXPECT_EQ(compiler->runs, 1);
  EXPECT_EQ(y[0], 1.0f);
}

} // namespace
