//===- Loader.h - the Vulkan entry points attn uses, loaded at run time -*- C++ -*-===//
//
// libvulkan is dlopen'ed, never linked: machines without it still load
// libattn. <vulkan/vulkan.h> supplies types only (VK_NO_PROTOTYPES).
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_VULKAN_LOADER_H
#define ATTN_RUNTIME_VULKAN_LOADER_H

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <string>

namespace attn::vulkan {

// Entry points resolved through vkGetInstanceProcAddr(NULL, ...).
#define ATTN_VK_GLOBAL_FUNCTIONS(X)                                            \
  X(vkCreateInstance)                                                          \
  X(vkEnumerateInstanceVersion)

// Entry points resolved through vkGetInstanceProcAddr(instance, ...).
// Device-level functions are taken from the instance too: one device, so
// the dispatch overhead does not matter.
#define ATTN_VK_INSTANCE_FUNCTIONS(X)                                          \
  X(vkDestroyInstance)                                                         \
  X(vkEnumeratePhysicalDevices)                                                \
  X(vkGetPhysicalDeviceProperties)                                             \
  X(vkGetPhysicalDeviceProperties2)                                            \
  X(vkGetPhysicalDeviceFeatures2)                                              \
  X(vkGetPhysicalDeviceQueueFamilyProperties)                                  \
  X(vkGetPhysicalDeviceMemoryProperties)                                       \
  X(vkEnumerateDeviceExtensionProperties)                                      \
  X(vkCreateDevice)                                                            \
  X(vkDestroyDevice)                                                           \
  X(vkGetDeviceQueue)                                                          \
  X(vkDeviceWaitIdle)                                                          \
  X(vkQueueWaitIdle)                                                           \
  X(vkCreateBuffer)                                                            \
  X(vkDestroyBuffer)                                                           \
  X(vkGetBufferMemoryRequirements)                                             \
  X(vkAllocateMemory)                                                          \
  X(vkFreeMemory)                                                              \
  X(vkBindBufferMemory)                                                        \
  X(vkMapMemory)                                                               \
  X(vkUnmapMemory)                                                             \
  X(vkCreateShaderModule)                                                      \
  X(vkDestroyShaderModule)                                                     \
  X(vkCreateDescriptorSetLayout)                                               \
  X(vkDestroyDescriptorSetLayout)                                              \
  X(vkCreatePipelineLayout)                                                    \
  X(vkDestroyPipelineLayout)                                                   \
  X(vkCreateComputePipelines)                                                  \
  X(vkDestroyPipeline)                                                         \
  X(vkCreateDescriptorPool)                                                    \
  X(vkDestroyDescriptorPool)                                                   \
  X(vkAllocateDescriptorSets)                                                  \
  X(vkResetDescriptorPool)                                                     \
  X(vkUpdateDescriptorSets)                                                    \
  X(vkCreateCommandPool)                                                       \
  X(vkDestroyCommandPool)                                                      \
  X(vkResetCommandPool)                                                        \
  X(vkAllocateCommandBuffers)                                                  \
  X(vkBeginCommandBuffer)                                                      \
  X(vkEndCommandBuffer)                                                        \
  X(vkCmdCopyBuffer)                                                           \
  X(vkCmdPipelineBarrier)                                                      \
  X(vkCmdBindPipeline)                                                         \
  X(vkCmdBindDescriptorSets)                                                   \
  X(vkCmdPushConstants)                                                        \
  X(vkCmdDispatch)                                                             \
  X(vkCmdResetQueryPool)                                                       \
  X(vkCmdWriteTimestamp)                                                       \
  X(vkCreateQueryPool)                                                         \
  X(vkDestroyQueryPool)                                                        \
  X(vkGetQueryPoolResults)                                                     \
  X(vkCreateFence)                                                             \
  X(vkDestroyFence)                                                            \
  X(vkWaitForFences)                                                           \
  X(vkResetFences)                                                             \
  X(vkGetFenceStatus)                                                          \
  X(vkQueueSubmit)                                                             \
  X(vkGetDeviceProcAddr)

// Optional: present only with VK_KHR_cooperative_matrix (not in Debian's
// 1.3.239 headers, hence the hand-written signature in Loader.cpp).
#define ATTN_VK_OPTIONAL_INSTANCE_FUNCTIONS(X)                                 \
  X(vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)

/// The function table. Every member of the required lists is non-null
/// after a successful load().
struct Functions {
  void *library = nullptr;
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
#define ATTN_VK_DECLARE(name) PFN_##name name = nullptr;
  ATTN_VK_GLOBAL_FUNCTIONS(ATTN_VK_DECLARE)
  ATTN_VK_INSTANCE_FUNCTIONS(ATTN_VK_DECLARE)
#undef ATTN_VK_DECLARE
  void *vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR = nullptr;

  /// dlopens the loader and resolves the global entry points.
  bool loadLibrary(std::string &error);
  /// Resolves the instance-level entry points.
  bool loadInstance(VkInstance instance, std::string &error);
};

/// "VK_ERROR_OUT_OF_DEVICE_MEMORY (-2)" and the like.
std::string resultString(VkResult r);

} // namespace attn::vulkan

#endif // ATTN_RUNTIME_VULKAN_LOADER_H
