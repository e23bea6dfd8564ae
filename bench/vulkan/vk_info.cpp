//===- vk_info.cpp - what the vulkan runtime sees of the device ----------===//
//
// Prints attn::vulkan::DeviceInfo of the device the runtime selects (the
// one attn-run --target=vulkan runs on; ATTN_VULKAN_DEVICE and
// ATTN_VULKAN_HIDE_FEATURES apply), every field the kernels and the
// variant choice depend on, including the VK_KHR_cooperative_matrix shapes
// (docs/Vulkan.md, "How a variant is chosen"), as one JSON object.
// Exit status 0, or 1 with the runtime's message when there is no device.
// Built by bench/vulkan/make_carry.sh against libattn.so; not part of CI.
//
//===----------------------------------------------------------------------===//
#include "attn/runtime/Vulkan.h"

#include <cstdio>
#include <string>

namespace {

/// VkComponentTypeKHR names (vulkan_core.h), the number for others.
std::string componentName(uint32_t t) {
  switch (t) {
  case 0:
    return "f16";
  case 1:
    return "f32";
  case 2:
    return "f64";
  case 3:
    return "s8";
  case 4:
    return "s16";
  case 5:
    return "s32";
  case 6:
    return "s64";
  case 7:
    return "u8";
  case 8:
    return "u16";
  case 9:
    return "u32";
  case 10:
    return "u64";
  case 1000141000:
    return "bf16";
  default:
    return std::to_string(t);
  }
}

/// VkScopeKHR names.
std::string scopeName(uint32_t s) {
  switch (s) {
  case 1:
    return "device";
  case 2:
    return "workgroup";
  case 3:
    return "subgroup";
  case 5:
    return "queue_family";
  default:
    return std::to_string(s);
  }
}

std::string quoted(const std::string &s) {
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      r += '\\';
    if (static_cast<unsigned char>(c) >= 0x20)
      r += c;
  }
  return r + "\"";
}

} // namespace

int main() {
  attn::vulkan::DeviceInfo d;
  std::string error;
  if (attn::vulkan::deviceInfo(d, error) != ATTN_OK) {
    std::printf("{\"error\": %s}\n", quoted(error).c_str());
    return 1;
  }
  auto b = [](bool v) { return v ? "true" : "false"; };
  std::printf("{\"name\": %s, \"index\": %u, \"api\": \"%u.%u.%u\", "
              "\"device_type\": %u,\n",
              quoted(d.name).c_str(), d.index, d.apiVersion >> 22,
              (d.apiVersion >> 12) & 0x3ff, d.apiVersion & 0xfff, d.deviceType);
  std::printf(" \"shaderFloat16\": %s, \"storageBuffer16BitAccess\": %s, "
              "\"shaderInt16\": %s, \"shaderInt64\": %s,\n",
              b(d.shaderFloat16), b(d.storageBuffer16BitAccess),
              b(d.shaderInt16), b(d.shaderInt64));
  std::printf(" \"shaderBFloat16Type\": %s, "
              "\"shaderBFloat16CooperativeMatrix\": %s,\n",
              b(d.shaderBFloat16Type), b(d.shaderBFloat16CooperativeMatrix));
  std::printf(" \"subgroupSize\": %u, \"minSubgroupSize\": %u, "
              "\"maxSubgroupSize\": %u, \"subgroupSizeControl\": %s, "
              "\"computeFullSubgroups\": %s, "
              "\"maxComputeWorkgroupSubgroups\": %u,\n",
              d.subgroupSize, d.minSubgroupSize, d.maxSubgroupSize,
              b(d.subgroupSizeControl), b(d.computeFullSubgroups),
              d.maxComputeWorkgroupSubgroups);
  std::printf(" \"subgroupArithmetic\": %s, \"subgroupShuffle\": %s, "
              "\"cooperativeMatrix\": %s, \"vulkanMemoryModel\": %s,\n",
              b(d.subgroupArithmetic), b(d.subgroupShuffle),
              b(d.cooperativeMatrix), b(d.vulkanMemoryModel));
  std::printf(" \"maxComputeSharedMemorySize\": %u, "
              "\"maxComputeWorkGroupCount\": [%u, %u, %u], "
              "\"maxComputeWorkGroupInvocations\": %u, "
              "\"maxPushConstantsSize\": %u, \"maxStorageBufferRange\": %u,\n",
              d.maxComputeSharedMemorySize, d.maxComputeWorkGroupCount[0],
              d.maxComputeWorkGroupCount[1], d.maxComputeWorkGroupCount[2],
              d.maxComputeWorkGroupInvocations, d.maxPushConstantsSize,
              d.maxStorageBufferRange);
  std::printf(" \"maxLoopIterations\": %llu, \"timestamps\": %s, "
              "\"timestampPeriodNs\": %g,\n",
              static_cast<unsigned long long>(d.maxLoopIterations),
              b(d.timestamps), d.timestampPeriodNs);
  std::printf(" \"coopMatShapes\": [");
  for (size_t i = 0; i < d.coopMatShapes.size(); ++i) {
    const attn::vulkan::CoopMatShape &s = d.coopMatShapes[i];
    std::printf("%s\n  {\"MxNxK\": \"%ux%ux%u\", \"A\": \"%s\", \"B\": \"%s\", "
                "\"C\": \"%s\", \"result\": \"%s\", \"saturating\": %s, "
                "\"scope\": \"%s\"}",
                i ? "," : "", s.m, s.n, s.k, componentName(s.aType).c_str(),
                componentName(s.bType).c_str(), componentName(s.cType).c_str(),
                componentName(s.resultType).c_str(), b(s.saturating),
                scopeName(s.scope).c_str());
  }
  std::printf("]}\n");
  return 0;
}
