//===- vk_info.cpp - what the vulkan runtime sees of the device ----------===//
//
// Prints attn::vulkan::DeviceInfo of the device the runtime selects (the
// one attn-run --target=vulkan runs on; ATTN_VULKAN_DEVICE and
// ATTN_VULKAN_HIDE_FEATURES apply), every field the kernels and the
// variant choice depend on, including the VK_KHR_cooperative_matrix shapes
// (docs/Vulkan.md, "How a variant is chosen"), as one JSON object: the
// runtime's device description (format "attn-vulkan-device"), which
// attn-translate --attn-to-spirv --vulkan-device=FILE builds kernels for.
// Exit status 0, or 1 with the runtime's message when there is no device.
// Built by bench/vulkan/make_carry.sh against libattn.so; not part of CI.
//
//===----------------------------------------------------------------------===//
#include "attn/runtime/Vulkan.h"

#include <cstdio>
#include <string>

int main() {
  attn::vulkan::DeviceInfo d;
  std::string error;
  if (attn::vulkan::deviceInfo(d, error) != ATTN_OK) {
    std::string q = "\"";
    for (char c : error) {
      if (c == '"' || c == '\\')
        q += '\\';
      if (static_cast<unsigned char>(c) >= 0x20)
        q += c;
    }
    std::printf("{\"error\": %s\"}\n", q.c_str());
    return 1;
  }
  std::fputs(attn::vulkan::writeDeviceDescription(d).c_str(), stdout);
  return 0;
}
