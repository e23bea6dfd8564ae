//===- VulkanRuntimeTest.cpp - the vulkan runtime on a real device ---------===//
//
// Needs a Vulkan device (lavapipe is enough) and the axpy kernel from
// test/Runtime/Inputs/vulkan-axpy.mlir serialized to SPIR-V, passed in
// ATTN_TEST_SPV: out[8*y + x] = 2 * a[8*y + x] + b[8*y + x], 8x8 workgroups
// (run once, and twice in a row through a workspace as split-KV's two
// dispatches are).
//
//===----------------------------------------------------------------------===//
#include "attn/runtime/Vulkan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

using namespace attn::vulkan;

namespace {

std::vector<uint32_t> readSpirv() {
  const char *path = std::getenv("ATTN_TEST_SPV");
  if (!path)
    return {};
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  std::vector<uint32_t> words(bytes.size() / 4);
  std::memcpy(words.data(), bytes.data(), words.size() * 4);
  return words;
}

ProgramDesc axpyDesc() {
  ProgramDesc d;
  d.spirv = readSpirv();
  d.entry = "axpy";
  d.numBuffers = 3;
  return d;
}

HostTensor tensor2d(float *data, int64_t rows, int64_t cols, int64_t rowStride,
                    int64_t colStride, bool input, bool output) {
  HostTensor t;
  t.data = data;
  t.rank = 2;
  t.shape[0] = rows;
  t.shape[1] = cols;
  t.strides[0] = rowStride;
  t.strides[1] = colStride;
  t.elemSize = sizeof(float);
  t.input = input;
  t.output = output;
  return t;
}

TEST(VulkanRuntime, DeviceInfo) {
  DeviceInfo info;
  std::string error;
  ASSERT_EQ(deviceInfo(info, error), ATTN_OK) << error;
  EXPECT_FALSE(info.name.empty());
  EXPECT_GE(info.apiVersion, (1u << 22) | (1u << 12)); // at least 1.1
  EXPECT_GT(info.maxComputeWorkGroupCount[0], 0u);
  EXPECT_GT(info.subgroupSize, 0u);
  EXPECT_GE(info.maxSubgroupSize, info.minSubgroupSize);
  // Cooperative-matrix shapes are only listed when the feature is on.
  if (!info.cooperativeMatrix) {
    EXPECT_TRUE(info.coopMatShapes.empty());
  }
  std::printf("device %u '%s': api %u.%u, fp16 %d, 16-bit storage %d, "
              "subgroup %u [%u, %u] (size control %d, full %d, arithmetic "
              "%d, shuffle %d, at most %u per workgroup), coopmat %d (%zu "
              "shapes), vulkan memory model %d, shared %u B, timestamps %d\n",
              info.index, info.name.c_str(), info.apiVersion >> 22,
              (info.apiVersion >> 12) & 0x3ff, info.shaderFloat16,
              info.storageBuffer16BitAccess, info.subgroupSize,
              info.minSubgroupSize, info.maxSubgroupSize,
              info.subgroupSizeControl, info.computeFullSubgroups,
              info.subgroupArithmetic, info.subgroupShuffle,
              info.maxComputeWorkgroupSubgroups, info.cooperativeMatrix,
              info.coopMatShapes.size(), info.vulkanMemoryModel,
              info.maxComputeSharedMemorySize,
              info.timestamps);
}

TEST(VulkanRuntime, RunsStridedBuffers) {
  ProgramDesc desc = axpyDesc();
  ASSERT_FALSE(desc.spirv.empty()) << "set ATTN_TEST_SPV";
  std::unique_ptr<Program> program;
  std::string error;
  ASSERT_EQ(createProgram(desc, program, error), ATTN_OK) << error;

  // a is contiguous 8x8; b is the transpose of a 8x8 array (column
  // strides); out has a padded row stride of 11 whose padding must stay.
  std::vector<float> a(64), bT(64), out(8 * 11, -7.0f);
  for (int i = 0; i < 64; ++i) {
    a[i] = 0.5f * i;
    bT[(i % 8) * 8 + i / 8] = 100.0f + i; // b[r][c] at bT[c*8 + r]
  }
  std::vector<HostTensor> buffers = {
      tensor2d(a.data(), 8, 8, 8, 1, true, false),
      tensor2d(bT.data(), 8, 8, 1, 8, true, false),
      tensor2d(out.data(), 8, 8, 11, 1, false, true)};
  const uint32_t groups[3] = {8, 8, 1};
  double ms = 0;
  ASSERT_EQ(program->run(buffers, {}, groups, &ms, error), ATTN_OK) << error;
  for (int r = 0; r < 8; ++r) {
    for (int c = 0; c < 8; ++c) {
      int i = r * 8 + c;
      EXPECT_EQ(out[r * 11 + c], 2.0f * a[i] + (100.0f + i)) << r << "," << c;
    }
    for (int c = 8; c < 11 && r * 11 + c < 88; ++c)
      EXPECT_EQ(out[r * 11 + c], -7.0f) << "padding written at " << r << "," << c;
  }
  DeviceInfo info;
  ASSERT_EQ(deviceInfo(info, error), ATTN_OK);
  if (info.timestamps)
    EXPECT_GE(ms, 0.0);
  else
    EXPECT_LT(ms, 0.0);

  // A second run on the same program sees fresh inputs.
  for (float &x : a)
    x = 1.0f;
  ASSERT_EQ(program->run(buffers, {}, groups, nullptr, error), ATTN_OK) << error;
  EXPECT_EQ(out[0], 2.0f + 100.0f);
}

// Several dispatches in one command buffer (what split-KV records): two
// pipelines of the module, a device-local workspace that the first writes
// and the second reads across the barrier, tensors staged once though bound
// twice. out = 2 * (2a + b) + b.
TEST(VulkanRuntime, RunsDispatchSequenceWithWorkspace) {
  ProgramDesc desc = axpyDesc();
  ASSERT_FALSE(desc.spirv.empty()) << "set ATTN_TEST_SPV";
  desc.entries = {{"axpy", 3}, {"axpy", 3}};
  desc.workspaceBytes = {64 * sizeof(float)};
  std::unique_ptr<Program> program;
  std::string error;
  ASSERT_EQ(createProgram(desc, program, error), ATTN_OK) << error;
  std::vector<float> a(64), b(64), out(64, -1.0f);
  for (int i = 0; i < 64; ++i) {
    a[i] = 0.25f * i;
    b[i] = 10.0f - i;
  }
  std::vector<HostTensor> tensors = {
      tensor2d(a.data(), 8, 8, 8, 1, true, false),
      tensor2d(b.data(), 8, 8, 8, 1, true, false),
      tensor2d(out.data(), 8, 8, 8, 1, false, true)};
  Dispatch first, second;
  first.entry = 0;
  first.groups[0] = first.groups[1] = 8;
  first.bindings = {{false, 0}, {false, 1}, {true, 0}};
  second.entry = 1;
  second.groups[0] = second.groups[1] = 8;
  second.bindings = {{true, 0}, {false, 1}, {false, 2}};
  double ms = 0;
  for (int repeat = 0; repeat < 2; ++repeat) {
    ASSERT_EQ(program->runDispatches(tensors, {}, {first, second}, &ms, error),
              ATTN_OK)
        << error;
    for (int i = 0; i < 64; ++i)
      EXPECT_EQ(out[i], 2.0f * (2.0f * a[i] + b[i]) + b[i]) << i;
    for (float &x : a)
      x += 1.0f;
  }
  DeviceInfo info;
  ASSERT_EQ(deviceInfo(info, error), ATTN_OK);
  if (info.timestamps) {
    EXPECT_GE(ms, 0.0);
  }

  // Bad sequences are refused before anything runs.
  std::fill(out.begin(), out.end(), -1.0f);
  Dispatch bad = second;
  bad.entry = 2;
  EXPECT_EQ(program->runDispatches(tensors, {}, {first, bad}, nullptr, error),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("names entry point 2"), std::string::npos) << error;
  bad = second;
  bad.bindings.pop_back();
  EXPECT_EQ(program->runDispatches(tensors, {}, {first, bad}, nullptr, error),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("binds 2 buffers; the entry point takes 3"),
            std::string::npos)
      << error;
  bad = second;
  bad.bindings[0] = {true, 1};
  EXPECT_EQ(program->runDispatches(tensors, {}, {first, bad}, nullptr, error),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("binds workspace 1 of 1"), std::string::npos) << error;
  bad = second;
  bad.groups[2] = 0;
  EXPECT_EQ(program->runDispatches(tensors, {}, {first, bad}, nullptr, error),
            ATTN_ERROR_UNSUPPORTED);
  EXPECT_NE(error.find("of dispatch 1 ('axpy')"), std::string::npos) << error;
  EXPECT_EQ(program->runDispatches(tensors, {}, {}, nullptr, error),
            ATTN_ERROR_INVALID_ARGUMENT);
  for (float x : out)
    EXPECT_EQ(x, -1.0f);

  // A workspace beyond the device's storage-buffer range, and an entry
  // point the module does not have: refused, nothing kept.
  ProgramDesc big = desc;
  big.workspaceBytes = {uint64_t(info.maxStorageBufferRange) + 4};
  std::unique_ptr<Program> none;
  EXPECT_EQ(createProgram(big, none, error), ATTN_ERROR_UNSUPPORTED);
  EXPECT_NE(error.find("workspace 0 needs"), std::string::npos) << error;
  EXPECT_FALSE(none);
  ProgramDesc missing = desc;
  missing.entries[1].name = "no_such_entry";
  EXPECT_EQ(createProgram(missing, none, error), ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("no entry point 'no_such_entry' (it has 'axpy')"),
            std::string::npos)
      << error;
  EXPECT_FALSE(none);
}

TEST(VulkanRuntime, RejectsBadPrograms) {
  std::unique_ptr<Program> program;
  std::string error;
  ProgramDesc desc = axpyDesc();
  desc.spirv = {1, 2, 3, 4, 5, 6};
  EXPECT_EQ(createProgram(desc, program, error), ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("not a SPIR-V module"), std::string::npos) << error;
  EXPECT_FALSE(program);

  DeviceInfo info;
  ASSERT_EQ(deviceInfo(info, error), ATTN_OK);
  desc = axpyDesc();
  desc.pushConstantBytes = info.maxPushConstantsSize + 4;
  EXPECT_EQ(createProgram(desc, program, error), ATTN_ERROR_UNSUPPORTED);
  EXPECT_NE(error.find("push constants"), std::string::npos) << error;

  // A cooperative-matrix program where the device has none (lavapipe), and
  // a subgroup size the device cannot be made to use.
  if (!(info.cooperativeMatrix && info.vulkanMemoryModel &&
        info.apiVersion >= ((1u << 22) | (3u << 12)))) {
    desc = axpyDesc();
    desc.needsCooperativeMatrix = true;
    EXPECT_EQ(createProgram(desc, program, error), ATTN_ERROR_UNSUPPORTED);
    EXPECT_NE(error.find("VK_KHR_cooperative_matrix"), std::string::npos)
        << error;
  }
  // A program needing 16-bit integers or bf16 where the device lacks them.
  if (!(info.shaderInt16 && info.storageBuffer16BitAccess)) {
    desc = axpyDesc();
    desc.needsInt16 = true;
    EXPECT_EQ(createProgram(desc, program, error), ATTN_ERROR_UNSUPPORTED);
    EXPECT_NE(error.find("shaderInt16"), std::string::npos) << error;
  }
  if (!info.shaderBFloat16Type) {
    desc = axpyDesc();
    desc.needsBFloat16 = true;
    EXPECT_EQ(createProgram(desc, program, error), ATTN_ERROR_UNSUPPORTED);
    EXPECT_NE(error.find("VK_KHR_shader_bfloat16"), std::string::npos)
        << error;
  }
  // A program using subgroup arithmetic or shuffles where the device lacks
  // them in compute shaders (hidden in vulkan-runtime.test).
  if (!info.subgroupArithmetic || !info.subgroupShuffle) {
    desc = axpyDesc();
    desc.needsSubgroupArithmetic = true;
    desc.needsSubgroupShuffle = true;
    EXPECT_EQ(createProgram(desc, program, error), ATTN_ERROR_UNSUPPORTED);
    EXPECT_NE(error.find("lacks subgroup"), std::string::npos) << error;
  }
  desc = axpyDesc();
  desc.requiredSubgroupSize = info.maxSubgroupSize * 2;
  EXPECT_EQ(createProgram(desc, program, error), ATTN_ERROR_UNSUPPORTED);
  EXPECT_NE(error.find("subgroups of"), std::string::npos) << error;
  // The device's own size is always accepted.
  desc = axpyDesc();
  desc.requiredSubgroupSize = info.subgroupSize;
  EXPECT_EQ(createProgram(desc, program, error), ATTN_OK) << error;
}

TEST(VulkanRuntime, RejectsBadRuns) {
  std::unique_ptr<Program> program;
  std::string error;
  ASSERT_EQ(createProgram(axpyDesc(), program, error), ATTN_OK) << error;
  std::vector<float> a(64, 1.0f), b(64, 1.0f), out(64, -1.0f);
  std::vector<HostTensor> two = {tensor2d(a.data(), 8, 8, 8, 1, true, false),
                                 tensor2d(b.data(), 8, 8, 8, 1, true, false)};
  const uint32_t groups[3] = {8, 8, 1};
  EXPECT_EQ(program->run(two, {}, groups, nullptr, error),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("takes 3 buffers, got 2"), std::string::npos) << error;

  std::vector<HostTensor> three = two;
  three.push_back(tensor2d(out.data(), 8, 8, 8, 1, false, true));
  const uint32_t none[3] = {0, 1, 1};
  EXPECT_EQ(program->run(three, {}, none, nullptr, error),
            ATTN_ERROR_UNSUPPORTED);
  EXPECT_NE(error.find("workgroup count 0"), std::string::npos) << error;
  EXPECT_EQ(program->run(three, {1, 2, 3, 4}, groups, nullptr, error),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("push constants"), std::string::npos) << error;
  // Nothing ran, so the output is untouched.
  for (float x : out)
    EXPECT_EQ(x, -1.0f);
}

} // namespace
