//===- CudaRuntimeTest.cpp - the CUDA runtime half without a GPU -----------===//
#include "CudaDriver.h"

#include "attn/runtime/CudaKernel.h"
#include "attn/runtime/attn.h"
#include "attn/runtime/attn_cuda.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <unistd.h>

#ifdef ATTN_CHECK_CUDA_H
#include <cuda.h>
// attn declares the driver's values itself (no header needed to build);
// they must be the header's.
static_assert(attn::cuda::CUDA_ERROR_NO_DEVICE == CUDA_ERROR_NO_DEVICE, "");
static_assert(attn::cuda::CU_JIT_INFO_LOG_BUFFER == CU_JIT_INFO_LOG_BUFFER, "");
static_assert(attn::cuda::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES ==
                  CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, "");
static_assert(attn::cuda::CU_JIT_ERROR_LOG_BUFFER == CU_JIT_ERROR_LOG_BUFFER, "");
static_assert(attn::cuda::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES ==
                  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, "");
static_assert(attn::cuda::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES ==
                  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, "");
static_assert(attn::cuda::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ==
                  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "");
static_assert(attn::cuda::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR ==
                  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "");
static_assert(attn::cuda::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN ==
                  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "");
#endif

using namespace attn;
using namespace attn::cuda;

namespace {

/// A metadata description like the one attn-translate writes for a static
/// f16 spec: memref descriptors (data, data, offset, 4 sizes, 4 strides).
KernelMetadata sampleMetadata() {
  KernelMetadata m;
  m.entry = "attn_kernel";
  m.format = BinaryFormat::PTX;
  m.binaryFile = "k.ptx";
  m.chip = "sm_90a";
  m.grid[0] = {Extent::Sq, 64, 1};
  m.grid[1] = {Extent::Hq, 1, 1};
  m.grid[2] = {Extent::B, 1, 1};
  m.block[0] = 128;
  m.sharedBytes = 64 * 1024;
  m.alignBytes = 16;
  for (const char *t : {"q", "k", "v", "out"}) {
    m.params.push_back({t, ParamField::Data, 0, ParamType::Ptr});
    m.params.push_back({t, ParamField::Data, 0, ParamType::Ptr});
    m.params.push_back({t, ParamField::Offset, 0, ParamType::I64});
    for (int d = 0; d < 4; ++d)
      m.params.push_back({t, ParamField::Size, d, ParamType::I64});
    for (int d = 0; d < 4; ++d)
      m.params.push_back({t, ParamField::Stride, d, ParamType::I64});
  }
  attn_spec_init(&m.spec);
  m.spec.dtype = ATTN_DTYPE_F16;
  m.spec.batch = 2;
  m.spec.heads_q = 8;
  m.spec.heads_kv = 2;
  m.spec.seq_q = 200;
  m.spec.seq_kv = 300;
  m.spec.head_dim = 64;
  m.spec.value_dim = 64;
  m.spec.causal = 1;
  m.spec.scale = 0.125;
  return m;
}

std::string replace(std::string s, const std::string &from,
                    const std::string &to) {
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << "'" << from << "' not in the metadata";
  if (at != std::string::npos)
    s.replace(at, from.size(), to);
  return s;
}

std::string parseError(const std::string &text) {
  KernelMetadata m;
  std::string error;
  EXPECT_FALSE(parseMetadata(text, m, error)) << text;
  return error;
}

KernelArgs sampleArgs() {
  KernelArgs a;
  auto set = [](TensorView &t, void *data, int64_t b, int64_t h, int64_t s,
                int64_t d) {
    t.data = data;
    t.rank = 4;
    int64_t shape[4] = {b, h, s, d};
    // BSHD strides, to see they are passed as given.
    int64_t strides[4] = {s * h * d, d, h * d, 1};
    std::memcpy(t.shape, shape, sizeof(shape));
    std::memcpy(t.strides, strides, sizeof(strides));
  };
  set(a.q, reinterpret_cast<void *>(0x1000), 2, 8, 200, 64);
  set(a.k, reinterpret_cast<void *>(0x2000), 2, 2, 300, 64);
  set(a.v, reinterpret_cast<void *>(0x3000), 2, 2, 300, 64);
  set(a.out, reinterpret_cast<void *>(0x4000), 2, 8, 200, 64);
  a.seed = 0x1234567890abcdefull;
  return a;
}

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/attn-cuda-test-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::string write(const std::string &name, const std::string &text) const {
    std::string p = path + "/" + name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
};

const char *kPtx = "//\n.version 8.0\n.target sm_90a\n.address_size 64\n"
                   ".visible .entry attn_kernel(\n)\n{\n\tret;\n}\n";

TEST(CudaMetadata, RoundTrip) {
  KernelMetadata m = sampleMetadata(), back;
  std::string error;
  ASSERT_TRUE(parseMetadata(writeMetadata(m), back, error)) << error;
  EXPECT_EQ(back.entry, m.entry);
  EXPECT_EQ(back.binaryFile, m.binaryFile);
  EXPECT_EQ(back.chip, m.chip);
  EXPECT_EQ(back.format, BinaryFormat::PTX);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(back.grid[i].of, m.grid[i].of);
    EXPECT_EQ(back.grid[i].ceildiv, m.grid[i].ceildiv);
    EXPECT_EQ(back.grid[i].times, m.grid[i].times);
    EXPECT_EQ(back.block[i], m.block[i]);
  }
  EXPECT_EQ(back.sharedBytes, m.sharedBytes);
  EXPECT_EQ(back.alignBytes, m.alignBytes);
  ASSERT_EQ(back.params.size(), m.params.size());
  for (size_t i = 0; i < m.params.size(); ++i) {
    EXPECT_EQ(back.params[i].tensor, m.params[i].tensor);
    EXPECT_EQ(back.params[i].field, m.params[i].field);
    EXPECT_EQ(back.params[i].dim, m.params[i].dim);
    EXPECT_EQ(back.params[i].type, m.params[i].type);
  }
  const attn_spec &x = back.spec, &y = m.spec;
  EXPECT_EQ(x.dtype, y.dtype);
  EXPECT_EQ(x.batch, y.batch);
  EXPECT_EQ(x.heads_q, y.heads_q);
  EXPECT_EQ(x.heads_kv, y.heads_kv);
  EXPECT_EQ(x.seq_q, y.seq_q);
  EXPECT_EQ(x.seq_kv, y.seq_kv);
  EXPECT_EQ(x.head_dim, y.head_dim);
  EXPECT_EQ(x.value_dim, y.value_dim);
  EXPECT_EQ(x.causal, y.causal);
  EXPECT_EQ(x.mask, y.mask);
  EXPECT_EQ(x.mask_dtype, y.mask_dtype);
  EXPECT_EQ(x.scale, y.scale);
  EXPECT_EQ(x.dropout_p, y.dropout_p);
  EXPECT_EQ(x.return_lse, y.return_lse);
  EXPECT_EQ(x.variant, y.variant);
  EXPECT_EQ(x.block_q, y.block_q);
  EXPECT_EQ(x.block_kv, y.block_kv);
  EXPECT_EQ(x.kv_splits, y.kv_splits);
}

TEST(CudaMetadata, NormalizesTheSpec) {
  KernelMetadata m = sampleMetadata(), back;
  m.spec.value_dim = 0;
  std::string error;
  ASSERT_TRUE(parseMetadata(writeMetadata(m), back, error)) << error;
  EXPECT_EQ(back.spec.value_dim, 64);
}

TEST(CudaMetadata, RejectsMalformedText) {
  std::string good = writeMetadata(sampleMetadata());
  EXPECT_NE(parseError("").find("not valid JSON"), std::string::npos);
  EXPECT_NE(parseError("[1, 2]").find("top level must be an object"),
            std::string::npos);
  EXPECT_NE(parseError(good + "x").find("trailing text"), std::string::npos);
  EXPECT_NE(parseError(good.substr(0, good.size() / 2)).find("not valid JSON"),
            std::string::npos);
  EXPECT_NE(parseError(replace(good, "\"version\": 1,",
                               "\"version\": 1, \"version\": 1,"))
                .find("duplicate key 'version'"),
            std::string::npos);
}

TEST(CudaMetadata, RejectsBadFields) {
  std::string good = writeMetadata(sampleMetadata());
  struct Case {
    std::string from, to, message;
  } cases[] = {
      {"\"attn-cuda-kernel\"", "\"other\"", "'format' is 'other'"},
      {"\"version\": 1", "\"version\": 2", "'version' is 2"},
      {"\"entry\": \"attn_kernel\",", "", "missing key 'entry'"},
      {"\"entry\": \"attn_kernel\"", "\"entry\": 7", "'entry' must be a string"},
      {"\"binary_format\": \"ptx\"", "\"binary_format\": \"elf\"",
       "'binary_format' is 'elf'"},
      {"{\"of\": \"Sq\"", "{\"of\": \"Sk\"",
       "grid[0]: 'of' is 'Sk'; expected one of 1, B, Hq, Sq, Skv"},
      {"\"ceildiv\": 64", "\"ceildiv\": 0", "grid[0]: 'ceildiv' is 0"},
      {"\"ceildiv\": 64", "\"ceildiv\": 6.5", "'ceildiv' is 6.5"},
      {"\"block\": [128, 1, 1]", "\"block\": [128, 1]", "'block' must have 3"},
      {"\"block\": [128, 1, 1]", "\"block\": [512, 4, 1]",
       "the block has 2048 threads"},
      {"\"block\": [128, 1, 1]", "\"block\": [0, 1, 1]",
       "block[0] must be an integer in [1, 1024]"},
      {"\"shared_bytes\": 65536", "\"shared_bytes\": 300000",
       "'shared_bytes' is 300000"},
      {"\"align_bytes\": 16", "\"align_bytes\": 12",
       "'align_bytes' is 12; it must be 0 or a power of two"},
      {"{\"field\": \"data\", \"tensor\": \"q\"",
       "{\"field\": \"data\", \"tensor\": \"x\"", "params[0]: 'tensor' is 'x'"},
      {"{\"field\": \"data\", \"tensor\": \"q\", \"type\": \"ptr\"}",
       "{\"field\": \"data\", \"tensor\": \"q\", \"type\": \"i64\"}",
       "params[0]: a 'data' parameter must have type 'ptr'"},
      {"\"dim\": 3", "\"dim\": 4", "'dim' is 4"},
      {"{\"field\": \"data\", \"tensor\": \"q\"",
       "{\"field\": \"data\", \"tensor\": \"lse\"",
       "a parameter reads 'lse', which the spec does not have"},
      {"\"head_dim\": 64", "\"head_dim\": 0",
       "the spec is invalid: spec.head_dim is 0"},
      {"\"heads_kv\": 2", "\"heads_kv\": 3",
       "the spec is invalid: spec.heads_q (8) is not a multiple"},
      {"\"dtype\": \"f16\"", "\"dtype\": \"f64\"", "spec: 'dtype' is 'f64'"},
      {"\"causal\": 1", "\"causal\": 2", "spec: 'causal' is 2"},
  };
  for (const Case &c : cases) {
    std::string error = parseError(replace(good, c.from, c.to));
    EXPECT_NE(error.find(c.message), std::string::npos)
        << "replacing " << c.from << " by " << c.to << "\n  got: " << error
        << "\n  expected to contain: " << c.message;
  }
}

TEST(CudaMetadata, SeedNeedsDropout) {
  KernelMetadata m = sampleMetadata();
  m.params.push_back({"", ParamField::Seed, 0, ParamType::I64});
  EXPECT_NE(parseError(writeMetadata(m)).find("the spec has no dropout"),
            std::string::npos);
  m.spec.dropout_p = 0.1;
  KernelMetadata back;
  std::string error;
  EXPECT_TRUE(parseMetadata(writeMetadata(m), back, error)) << error;
}

TEST(CudaLaunch, GridFollowsTheShape) {
  KernelMetadata m = sampleMetadata();
  KernelArgs a = sampleArgs();
  unsigned grid[3];
  std::string error;
  ASSERT_TRUE(computeGrid(m, a, grid, error)) << error;
  // ceildiv(200, 64) query blocks, 8 heads, 2 batches.
  EXPECT_EQ(grid[0], 4u);
  EXPECT_EQ(grid[1], 8u);
  EXPECT_EQ(grid[2], 2u);

  // Split-KV: 3 chunks per query block on x.
  m.grid[0].times = 3;
  m.grid[1] = {Extent::One, 1, 1};
  ASSERT_TRUE(computeGrid(m, a, grid, error)) << error;
  EXPECT_EQ(grid[0], 12u);
  EXPECT_EQ(grid[1], 1u);

  m.grid[1] = {Extent::Skv, 1, 1000};
  EXPECT_FALSE(computeGrid(m, a, grid, error));
  EXPECT_NE(error.find("grid.y would exceed CUDA's limit of 65535"),
            std::string::npos)
      << error;
}

TEST(CudaLaunch, PacksMemRefDescriptors) {
  KernelMetadata m = sampleMetadata();
  KernelArgs a = sampleArgs();
  PackedParams p;
  std::string error;
  ASSERT_TRUE(packParams(m, a, p, error)) << error;
  ASSERT_EQ(p.offsets.size(), m.params.size());
  std::vector<void *> ptrs = p.pointers();
  auto u64 = [&](size_t i) {
    uint64_t v;
    std::memcpy(&v, ptrs[i], 8);
    return v;
  };
  // k's descriptor starts at parameter 11: allocated, aligned, offset,
  // sizes [2, 2, 300, 64], strides as the caller gave them (BSHD).
  EXPECT_EQ(u64(11), 0x2000u);
  EXPECT_EQ(u64(12), 0x2000u);
  EXPECT_EQ(u64(13), 0u);
  EXPECT_EQ(u64(14), 2u);
  EXPECT_EQ(u64(16), 300u);
  EXPECT_EQ(u64(18), 300u * 2 * 64);
  EXPECT_EQ(u64(19), 64u);
  EXPECT_EQ(u64(20), 2u * 64);
  EXPECT_EQ(u64(21), 1u);
  for (size_t i = 0; i < p.offsets.size(); ++i)
    EXPECT_EQ(p.offsets[i], 8 * i);
}

TEST(CudaLaunch, AlignsMixedWidths) {
  KernelMetadata m = sampleMetadata();
  m.spec.dropout_p = 0.5;
  m.params = {{"q", ParamField::Size, 2, ParamType::I32},
              {"q", ParamField::Data, 0, ParamType::Ptr},
              {"k", ParamField::Size, 2, ParamType::I32},
              {"k", ParamField::Stride, 2, ParamType::I32},
              {"", ParamField::Seed, 0, ParamType::I64}};
  KernelArgs a = sampleArgs();
  PackedParams p;
  std::string error;
  ASSERT_TRUE(packParams(m, a, p, error)) << error;
  EXPECT_EQ(p.offsets, (std::vector<size_t>{0, 8, 16, 20, 24}));
  std::vector<void *> ptrs = p.pointers();
  uint32_t sq, skv, kStride;
  uint64_t data, seed;
  std::memcpy(&sq, ptrs[0], 4);
  std::memcpy(&data, ptrs[1], 8);
  std::memcpy(&skv, ptrs[2], 4);
  std::memcpy(&kStride, ptrs[3], 4);
  std::memcpy(&seed, ptrs[4], 8);
  EXPECT_EQ(sq, 200u);
  EXPECT_EQ(data, 0x1000u);
  EXPECT_EQ(skv, 300u);
  EXPECT_EQ(kStride, 2u * 64);
  EXPECT_EQ(seed, 0x1234567890abcdefull);

  a.k.strides[2] = int64_t(1) << 33;
  EXPECT_FALSE(packParams(m, a, p, error));
  EXPECT_NE(error.find("does not fit the kernel's 32-bit parameter"),
            std::string::npos)
      << error;
}

// The tensor-core kernel copies q/k/v rows in 16-byte chunks (cp.async):
// its metadata asks for 16-byte alignment, checked at every launch.
TEST(CudaLaunch, ChecksRowAlignment) {
  KernelMetadata m = sampleMetadata(), back;
  std::string error;
  m.alignBytes = 0;
  // Artifacts written before align_bytes existed have no requirement.
  std::string text = replace(writeMetadata(m), "\"align_bytes\": 0,\n", "");
  ASSERT_EQ(text.find("align_bytes"), std::string::npos);
  ASSERT_TRUE(parseMetadata(text, back, error)) << error;
  EXPECT_EQ(back.alignBytes, 0u);

  m.alignBytes = 16;
  KernelArgs a = sampleArgs(); // f16, D = 64: every stride 128 B multiple
  PackedParams p;
  ASSERT_TRUE(packParams(m, a, p, error)) << error;
  a.k.data = reinterpret_cast<void *>(0x2002);
  EXPECT_FALSE(packParams(m, a, p, error));
  EXPECT_NE(error.find("tensor 'k' (strides [38400, 64, 128, 1]) is not "
                       "16-byte aligned"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("ATTN_CUDA_TENSOR_CORES=0"), std::string::npos);
  a = sampleArgs();
  a.v.strides[2] = 65; // rows 130 bytes apart
  EXPECT_FALSE(packParams(m, a, p, error));
  EXPECT_NE(error.find("tensor 'v'"), std::string::npos) << error;
  m.alignBytes = 0;
  EXPECT_TRUE(packParams(m, a, p, error)) << error;
}

TEST(CudaLaunch, MissingTensorIsAnError) {
  KernelMetadata m = sampleMetadata();
  m.params = {{"lse", ParamField::Data, 0, ParamType::Ptr}};
  PackedParams p;
  std::string error;
  EXPECT_FALSE(packParams(m, sampleArgs(), p, error));
  EXPECT_NE(error.find("reads tensor 'lse', which this launch does not have"),
            std::string::npos)
      << error;
}

TEST(CudaArtifact, ReadsMetadataAndBinary) {
  TempDir dir;
  dir.write("k.ptx", kPtx);
  std::string path = dir.write("k.json", writeMetadata(sampleMetadata()));
  KernelMetadata m;
  std::string binary, error;
  ASSERT_TRUE(readArtifact(path, m, binary, error)) << error;
  EXPECT_EQ(binary, kPtx);
}

TEST(CudaArtifact, ReportsBadFiles) {
  TempDir dir;
  KernelMetadata m;
  std::string binary, error;
  EXPECT_FALSE(readArtifact(dir.path + "/none.json", m, binary, error));
  EXPECT_NE(error.find("cannot read '" + dir.path + "/none.json'"),
            std::string::npos)
      << error;

  std::string path = dir.write("k.json", writeMetadata(sampleMetadata()));
  EXPECT_FALSE(readArtifact(path, m, binary, error));
  EXPECT_NE(error.find("k.ptx"), std::string::npos) << error;

  dir.write("k.ptx", ".version 8.0\n.visible .entry other()\n{\n}\n");
  EXPECT_FALSE(readArtifact(path, m, binary, error));
  EXPECT_NE(error.find("has no PTX entry 'attn_kernel'"), std::string::npos)
      << error;

  KernelMetadata cubin = sampleMetadata();
  cubin.format = BinaryFormat::Cubin;
  cubin.binaryFile = "k.cubin";
  dir.write("k.cubin", "not an elf");
  path = dir.write("c.json", writeMetadata(cubin));
  EXPECT_FALSE(readArtifact(path, m, binary, error));
  EXPECT_NE(error.find("is not a cubin"), std::string::npos) << error;

  path = dir.write("bad.json", "{\"format\": \"attn-cuda-kernel\"}");
  EXPECT_FALSE(readArtifact(path, m, binary, error));
  EXPECT_NE(error.find(path + ": metadata: missing key 'version'"),
            std::string::npos)
      << error;
}

// main() points the driver at a library that does not exist, so these run
// the same on machines with and without a GPU.
TEST(CudaDriver, UnavailableIsReportedCleanly) {
  std::string error;
  EXPECT_EQ(driverAvailable(error), ATTN_ERROR_UNAVAILABLE);
  EXPECT_NE(error.find("cannot load the CUDA driver (/nonexistent/libcuda.so.1)"),
            std::string::npos)
      << error;

  std::unique_ptr<Executable> exe;
  EXPECT_EQ(createExecutable(sampleMetadata(), kPtx, exe, error),
            ATTN_ERROR_UNAVAILABLE);
  EXPECT_FALSE(exe);
}

TEST(CudaDriver, AotArtifactWithoutDriver) {
  TempDir dir;
  dir.write("k.ptx", kPtx);
  std::string path = dir.write("k.json", writeMetadata(sampleMetadata()));

  EXPECT_EQ(attn_cuda_load_artifact(nullptr, nullptr),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(attn_last_error()).find("metadata_path is NULL"),
            std::string::npos);

  attn_spec spec;
  ASSERT_EQ(attn_cuda_load_artifact(path.c_str(), &spec), ATTN_OK)
      << attn_last_error();
  EXPECT_EQ(spec.seq_q, 200);
  EXPECT_EQ(spec.heads_kv, 2);

  attn_context *ctx;
  ASSERT_EQ(attn_context_create(&ctx), ATTN_OK);
  EXPECT_EQ(attn_target_available(ctx, ATTN_TARGET_CUDA), ATTN_ERROR_UNAVAILABLE);
  EXPECT_NE(std::string(attn_last_error()).find("cannot load the CUDA driver"),
            std::string::npos)
      << attn_last_error();
  attn_kernel *kernel = nullptr;
  EXPECT_EQ(attn_compile(ctx, &spec, ATTN_TARGET_CUDA, &kernel),
            ATTN_ERROR_UNAVAILABLE);
  EXPECT_NE(std::string(attn_last_error()).find("cannot load the CUDA driver"),
            std::string::npos)
      << attn_last_error();

  // A spec no artifact was loaded for is unsupported, not unavailable.
  spec.seq_q = 100;
  EXPECT_EQ(attn_compile(ctx, &spec, ATTN_TARGET_CUDA, &kernel),
            ATTN_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(attn_last_error()).find("no loaded artifact matches"),
            std::string::npos)
      << attn_last_error();
  attn_context_destroy(ctx);
}

} // namespace

int main(int argc, char **argv) {
  setenv("ATTN_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
