//===- Loader.cpp - dlopen libvulkan and fill the function table ----------===//
#include "Loader.h"

#include <cstdlib>
#include <dlfcn.h>

using namespace attn::vulkan;

bool Functions::loadLibrary(std::string &error) {
  // An override lets tests point at a missing or broken loader.
  const char *name = std::getenv("ATTN_VULKAN_LOADER");
  if (!name || !*name)
    name = "libvulkan.so.1";
  library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *why = dlerror();
    error = std::string("cannot load the Vulkan loader '") + name +
            "': " + (why ? why : "unknown dlopen error") +
            " (install a Vulkan loader, Debian: libvulkan1, and a driver, "
            "e.g. mesa-vulkan-drivers for lavapipe)";
    return false;
  }
  vkGetInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(
      dlsym(library, "vkGetInstanceProcAddr"));
  if (!vkGetInstanceProcAddr) {
    error = std::string("'") + name +
            "' does not export vkGetInstanceProcAddr; it is not a Vulkan "
            "loader";
    return false;
  }
#define ATTN_VK_LOAD(fn)                                                       \
  fn = reinterpret_cast<PFN_##fn>(vkGetInstanceProcAddr(nullptr, #fn));
  ATTN_VK_GLOBAL_FUNCTIONS(ATTN_VK_LOAD)
#undef ATTN_VK_LOAD
  if (!vkCreateInstance) {
    error = "the Vulkan loader has no vkCreateInstance";
    return false;
  }
  // vkEnumerateInstanceVersion is missing from 1.0 loaders; callers treat
  // null as 1.0.
  return true;
}

bool Functions::loadInstance(VkInstance instance, std::string &error) {
#define ATTN_VK_LOAD(fn)                                                       \
  fn = reinterpret_cast<PFN_##fn>(vkGetInstanceProcAddr(instance, #fn));       \
  if (!fn) {                                                                   \
    error = "the Vulkan loader does not provide " #fn                          \
            " (a Vulkan 1.1 instance is required)";                            \
    return false;                                                              \
  }
  ATTN_VK_INSTANCE_FUNCTIONS(ATTN_VK_LOAD)
#undef ATTN_VK_LOAD
  vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR = reinterpret_cast<void *>(
      vkGetInstanceProcAddr(instance,
                            "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
  return true;
}

std::string attn::vulkan::resultString(VkResult r) {
  const char *name = "VkResult";
  switch (r) {
#define ATTN_VK_CASE(x)                                                        \
  case x:                                                                      \
    name = #x;                                                                 \
    break;
    ATTN_VK_CASE(VK_SUCCESS)
    ATTN_VK_CASE(VK_NOT_READY)
    ATTN_VK_CASE(VK_TIMEOUT)
    ATTN_VK_CASE(VK_INCOMPLETE)
    ATTN_VK_CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
    ATTN_VK_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    ATTN_VK_CASE(VK_ERROR_INITIALIZATION_FAILED)
    ATTN_VK_CASE(VK_ERROR_DEVICE_LOST)
    ATTN_VK_CASE(VK_ERROR_MEMORY_MAP_FAILED)
    ATTN_VK_CASE(VK_ERROR_LAYER_NOT_PRESENT)
    ATTN_VK_CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
    ATTN_VK_CASE(VK_ERROR_FEATURE_NOT_PRESENT)
    ATTN_VK_CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
    ATTN_VK_CASE(VK_ERROR_TOO_MANY_OBJECTS)
    ATTN_VK_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
    ATTN_VK_CASE(VK_ERROR_UNKNOWN)
    ATTN_VK_CASE(VK_ERROR_INVALID_SHADER_NV)
#undef ATTN_VK_CASE
  default:
    break;
  }
  return std::string(name) + " (" + std::to_string(static_cast<int>(r)) + ")";
}
