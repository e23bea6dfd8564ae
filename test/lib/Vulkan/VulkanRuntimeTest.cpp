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
#include "attn/runtime/VulkanKernel.h"

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

// Tensors already on the device (HostTensor::buffer): bound in place at
// their offset, nothing staged; the same result as the host path, the
// output read back with downloadFromDevice; submitted without waiting, the
// runs take effect in order (the second reads what the first wrote).
TEST(VulkanRuntime, RunsOnDeviceBuffers) {
  ProgramDesc desc = axpyDesc();
  ASSERT_FALSE(desc.spirv.empty()) << "set ATTN_TEST_SPV";
  std::unique_ptr<Program> program;
  std::string error;
  ASSERT_EQ(createProgram(desc, program, error), ATTN_OK) << error;
  DeviceInfo info;
  ASSERT_EQ(deviceInfo(info, error), ATTN_OK);
  const uint64_t align = std::max<uint64_t>(info.minStorageBufferOffsetAlignment, 4);
  // b's offset: the first aligned one past a's 256 bytes.
  const uint64_t bAt = (256 + align - 1) / align * align;

  std::vector<float> a(64), b(64), out(64, -1.0f);
  for (int i = 0; i < 64; ++i) {
    a[i] = 0.25f * i;
    b[i] = 3.0f - i;
  }
  // a and b in one buffer (b at an aligned offset), out in another.
  std::shared_ptr<DeviceBuffer> ab, o;
  ASSERT_EQ(createDeviceBuffer(bAt + 256, ab, error), ATTN_OK) << error;
  ASSERT_EQ(createDeviceBuffer(256, o, error), ATTN_OK) << error;
  ASSERT_EQ(uploadToDevice(*ab, 0, a.data(), 256, error), ATTN_OK) << error;
  ASSERT_EQ(uploadToDevice(*ab, bAt, b.data(), 256, error), ATTN_OK) << error;
  auto onDevice = [&](std::shared_ptr<DeviceBuffer> buf, uint64_t offset,
                      bool input) {
    HostTensor t = tensor2d(nullptr, 8, 8, 8, 1, input, !input);
    t.buffer = std::move(buf);
    t.offset = offset;
    return t;
  };
  std::vector<HostTensor> tensors = {onDevice(ab, 0, true),
                                     onDevice(ab, bAt, true),
                                     onDevice(o, 0, false)};
  const uint32_t groups[3] = {8, 8, 1};
  ASSERT_EQ(program->run(tensors, {}, groups, nullptr, error), ATTN_OK) << error;
  ASSERT_EQ(downloadFromDevice(*o, 0, out.data(), 256, error), ATTN_OK) << error;
  for (int i = 0; i < 64; ++i)
    ASSERT_EQ(out[i], 2.0f * a[i] + b[i]) << i;

  // Asynchronous: out2 = 2 * out + b after out = 2a + b, both in flight.
  std::shared_ptr<DeviceBuffer> o2;
  ASSERT_EQ(createDeviceBuffer(256, o2, error), ATTN_OK) << error;
  Dispatch first, second;
  first.groups[0] = second.groups[0] = 8;
  first.groups[1] = second.groups[1] = 8;
  first.bindings = {{false, 0}, {false, 1}, {false, 2}};
  second.bindings = {{false, 2}, {false, 1}, {false, 3}};
  tensors.push_back(onDevice(o2, 0, false));
  std::shared_ptr<attn::Submission> s1, s2;
  ASSERT_EQ(program->submit(tensors, {}, {first}, false, s1, error), ATTN_OK)
      << error;
  ASSERT_EQ(program->submit(tensors, {}, {second}, false, s2, error), ATTN_OK)
      << error;
  ASSERT_EQ(s2->wait(error), ATTN_OK) << error;
  EXPECT_TRUE(s2->ready());
  ASSERT_EQ(s1->wait(error), ATTN_OK) << error;
  ASSERT_EQ(downloadFromDevice(*o2, 0, out.data(), 256, error), ATTN_OK)
      << error;
  for (int i = 0; i < 64; ++i)
    ASSERT_EQ(out[i], 2.0f * (2.0f * a[i] + b[i]) + b[i]) << i;

  // Refused: a tensor past its buffer's end, a misaligned offset, copies
  // outside the buffer.
  std::vector<HostTensor> bad = tensors;
  bad.resize(3);
  bad[2] = onDevice(o, 4, false);
  EXPECT_EQ(program->run(bad, {}, groups, nullptr, error),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("of a device buffer of 256"), std::string::npos) << error;
  if (info.minStorageBufferOffsetAlignment > 4) {
    bad[2] = onDevice(ab, 4, false);
    EXPECT_EQ(program->run(bad, {}, groups, nullptr, error),
              ATTN_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(error.find("minStorageBufferOffsetAlignment"), std::string::npos)
        << error;
  }
  EXPECT_EQ(uploadToDevice(*o, 200, a.data(), 57, error),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(downloadFromDevice(*o, 8, out.data(), UINT64_MAX - 4, error),
            ATTN_ERROR_INVALID_ARGUMENT);
}

// The artifact metadata (VulkanKernel.h): what writeMetadata writes,
// parseMetadata reads back the same; a bad expression reference refused.
TEST(VulkanRuntime, MetadataRoundTrip) {
  KernelMetadata m;
  m.variant = "portable";
  m.binaryFile = "k.spv";
  m.hostArgs = 5;
  m.exprs = {{SizeExpr::Dim, 0, 0, 0}, {SizeExpr::Const, 16, 0, 0},
             {SizeExpr::CeilDivU, 0, 0, 1}};
  m.maxDynamicExtent = 4096;
  WorkspaceDesc sizes;
  sizes.shape = {2};
  sizes.elementType = "i32";
  sizes.elementBytes = 4;
  sizes.bytes = 8;
  sizes.hostWritten = true;
  sizes.contents = {0, 2};
  WorkspaceDesc partial;
  partial.shape = {-1, 32};
  partial.shapeExprs = {2, -1};
  partial.elementType = "f32";
  partial.elementBytes = 4;
  m.workspaces = {sizes, partial};
  DispatchDesc d;
  d.entry = "k_0";
  d.gridExprs[0] = 2;
  d.grid[0] = 0;
  d.block[0] = 64;
  d.bindings = {{false, 0}, {false, 1}, {false, 2}, {false, 3}, {false, 4},
                {true, 0}, {true, 1}};
  m.dispatches = {d};
  m.needsFloat16 = true;
  m.subgroupSize = 8;
  m.kvSplits = 2;
  attn_spec_init(&m.spec);
  m.spec.dtype = ATTN_DTYPE_F16;
  m.spec.head_dim = 32;
  m.spec.value_dim = 32;
  m.spec.return_lse = 1;
  m.spec.kv_splits = 2;
  m.hasSpec = true;

  const std::string text = writeMetadata(m);
  KernelMetadata back;
  std::string error;
  ASSERT_TRUE(parseMetadata(text, back, error)) << error << "\n" << text;
  EXPECT_EQ(writeMetadata(back), text);
  EXPECT_EQ(back.exprs.size(), 3u);
  EXPECT_EQ(back.workspaces[1].shapeExprs[0], 2);
  EXPECT_EQ(back.dispatches[0].gridExprs[0], 2);
  int64_t v = 0;
  ASSERT_TRUE(back.evaluate(
      2, [](unsigned, unsigned) -> int64_t { return 100; }, v, error))
      << error;
  EXPECT_EQ(v, 7); // ceil(100 / 16)

  std::string forward = text;
  size_t at = forward.find("[\"ceildivu\", 0, 1]");
  ASSERT_NE(at, std::string::npos) << text;
  forward.replace(at, 18, "[\"ceildivu\", 0, 2]");
  EXPECT_FALSE(parseMetadata(forward, back, error));
  EXPECT_NE(error.find("exprs[2] refers to an expression that does not "
                       "precede it"),
            std::string::npos)
      << error;
}
