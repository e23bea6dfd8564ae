//===- CppApiTest.cpp - unit tests of the header-only C++ wrapper --------===//
#include "FakeCompiler.h"

#include "attn/runtime/attn.hpp"

#include <gtest/gtest.h>

#include <type_traits>
#include <vector>

using namespace attn_test;

namespace {

static_assert(!std::is_copy_constructible<attn::Context>::value,
              "a context owns its kernels: copying would double-free");
static_assert(std::is_nothrow_move_constructible<attn::Context>::value, "");

class CppApiTest : public ::testing::Test {
protected:
  void SetUp() override {
    compiler = std::make_shared<FakeCompiler>(record);
    attn::registerCompiler(ATTN_TARGET_CPU, compiler);
  }
  void TearDown() override { attn::registerCompiler(ATTN_TARGET_CPU, nullptr); }

  Record record;
  std::shared_ptr<FakeCompiler> compiler;
};

TEST(CppHelpers, ContiguousStridesAndMakeTensor) {
  auto strides = attn::contiguousStrides({2, 3, 5, 7});
  EXPECT_EQ(strides, (std::array<int64_t, 4>{105, 35, 7, 1}));
  float x;
  attn_tensor t = attn::makeTensor(&x, {2, 5, 3, 7}, {105, 7, 35, 1});
  EXPECT_EQ(t.data, &x);
  EXPECT_EQ(t.shape[1], 5);
  EXPECT_EQ(t.strides[2], 35);
  attn_tensor c = attn::makeTensor(&x, {1, 2, 3, 4});
  EXPECT_EQ(c.strides[0], 24);
  EXPECT_EQ(c.strides[3], 1);
}

TEST_F(CppApiTest, CompileLaunchAndCache) {
  attn::Context ctx;
  attn_spec spec;
  attn_spec_init(&spec);
  spec.head_dim = 4;
  attn::Kernel kernel = ctx.compile(spec);
  EXPECT_TRUE(kernel);
  EXPECT_EQ(kernel.spec().value_dim, 4);
  EXPECT_EQ(kernel.source(), "// fake kernel D=4");
  EXPECT_EQ(ctx.compile(spec).get(), kernel.get());
  EXPECT_EQ(ctx.cacheSize(), 1u);

  std::vector<float> q(24), k(24), v(24), out(24, -1.0f);
  attn_launch_args args = {};
  args.q = attn::makeTensor(q.data(), {1, 2, 3, 4});
  args.k = attn::makeTensor(k.data(), {1, 2, 3, 4});
  args.v = attn::makeTensor(v.data(), {1, 2, 3, 4});
  args.out = attn::makeTensor(out.data(), {1, 2, 3, 4});
  kernel.launch(args);
  EXPECT_EQ(out[23], pattern(0, 1, 2, 3));
}

TEST_F(CppApiTest, ErrorsThrowWithStatusAndMessage) {
  attn::Context ctx;
  attn_spec spec;
  attn_spec_init(&spec); // head_dim unset
  try {
    ctx.compile(spec);
    FAIL() << "compile of an invalid spec did not throw";
  } catch (const attn::Error &e) {
    EXPECT_EQ(e.status(), ATTN_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("spec.head_dim is 0"),
              std::string::npos)
        << e.what();
  }
  spec.head_dim = 4;
  attn::Kernel kernel = ctx.compile(spec);
  attn_launch_args args = {};
  EXPECT_THROW(kernel.launch(args), attn::Error);
  EXPECT_THROW(attn::Kernel().spec(), attn::Error);
  EXPECT_THROW(attn::Kernel().source(), attn::Error);
}

TEST_F(CppApiTest, Availability) {
  attn::Context ctx;
  EXPECT_TRUE(ctx.available(ATTN_TARGET_CPU));
  std::string why;
  EXPECT_FALSE(ctx.available(ATTN_TARGET_CUDA, &why));
  EXPECT_NE(why.find("no compiler for target 'cuda'"), std::string::npos);
}

TEST_F(CppApiTest, MoveTransfersOwnership) {
  attn::Context a;
  attn_context *raw = a.get();
  attn::Context b(std::move(a));
  EXPECT_EQ(a.get(), nullptr);
  EXPECT_EQ(b.get(), raw);
  attn::Context c;
  c = std::move(b);
  EXPECT_EQ(c.get(), raw);
  // A moved-from context reports misuse instead of crashing.
  attn_spec spec;
  attn_spec_init(&spec);
  spec.head_dim = 4;
  EXPECT_THROW(a.compile(spec), attn::Error);
  EXPECT_THROW(a.available(ATTN_TARGET_CPU), attn::Error);
}

} // namespace
