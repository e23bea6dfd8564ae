//===- Device.cpp - the vulkan backend's instance, device and programs ----===//
#include "attn/runtime/Vulkan.h"
#include "attn/runtime/Backend.h"

#include "Loader.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

using namespace attn::vulkan;

namespace {
/// The calling thread's last run's dispatch time (lastRunGpuMs()).
thread_local double lastGpuMs = -1.0;

// VK_KHR_cooperative_matrix is newer than Debian's 1.3.239 headers; these
// mirror the registry (vk.xml) so the properties can be queried anyway.
constexpr VkStructureType kCoopMatFeaturesSType =
    static_cast<VkStructureType>(1000506000);
constexpr VkStructureType kCoopMatPropertiesSType =
    static_cast<VkStructureType>(1000506001);
constexpr const char *kCoopMatExtension = "VK_KHR_cooperative_matrix";

/// VK_KHR_shader_bfloat16 (extension 142; Debian's 1.3.239 headers predate
/// it): its features structure and sType.
constexpr VkStructureType kBf16FeaturesSType =
    static_cast<VkStructureType>(1000141000);
constexpr const char *kBf16Extension = "VK_KHR_shader_bfloat16";
struct Bf16FeaturesKHR {
  VkStructureType sType;
  void *pNext;
  VkBool32 shaderBFloat16Type;
  VkBool32 shaderBFloat16DotProduct;
  VkBool32 shaderBFloat16CooperativeMatrix;
};

struct CoopMatFeaturesKHR {
  VkStructureType sType;
  void *pNext;
  VkBool32 cooperativeMatrix;
  VkBool32 cooperativeMatrixRobustBufferAccess;
};

struct CoopMatPropertiesKHR {
  VkStructureType sType;
  void *pNext;
  uint32_t MSize, NSize, KSize;
  uint32_t AType, BType, CType, ResultType; // VkComponentTypeKHR
  VkBool32 saturatingAccumulation;
  uint32_t scope; // VkScopeKHR
};

using PFN_getCoopMatProperties = VkResult(VKAPI_PTR *)(VkPhysicalDevice,
                                                      uint32_t *,
                                                      CoopMatPropertiesKHR *);

std::string lower(std::string s) {
  for (char &c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// The process-wide device. Opened once; never closed (drivers dislike
/// teardown from static destructors, and the OS reclaims everything).
struct Device {
  Functions vk;
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queueFamily = 0;
  VkPhysicalDeviceMemoryProperties memory{};
  DeviceInfo info;
  std::mutex queueMutex; // one submission at a time
  /// ATTN_VULKAN_PIPELINE_STATS asked for the drivers' statistics (read
  /// once, when the device opens).
  bool pipelineStatsAsked = false;
  /// VK_KHR_pipeline_executable_properties, resolved when enabled.
  PFN_vkGetPipelineExecutablePropertiesKHR getExecutableProperties = nullptr;
  PFN_vkGetPipelineExecutableStatisticsKHR getExecutableStatistics = nullptr;

  attn_status open(std::string &error);
};

attn_status unavailable(std::string &error, const std::string &message) {
  error = "vulkan: " + message;
  return ATTN_ERROR_UNAVAILABLE;
}

/// ATTN_VULKAN_PIPELINE_STATS set and not "0".
bool pipelineStatsRequested() {
  const char *env = std::getenv("ATTN_VULKAN_PIPELINE_STATS");
  return env && *env && std::strcmp(env, "0") != 0;
}

bool hasExtension(const std::vector<VkExtensionProperties> &exts,
                  const char *name) {
  for (const auto &e : exts)
    if (std::strcmp(e.extensionName, name) == 0)
      return true;
  return false;
}

attn_status Device::open(std::string &error) {
  if (!vk.loadLibrary(error))
    return unavailable(error, error);

  uint32_t loaderVersion = VK_API_VERSION_1_0;
  if (vk.vkEnumerateInstanceVersion)
    vk.vkEnumerateInstanceVersion(&loaderVersion);
  if (loaderVersion < VK_API_VERSION_1_1)
    return unavailable(error, "the Vulkan loader supports only Vulkan 1.0; "
                              "attn needs 1.1 or newer");
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "attn";
  app.apiVersion = std::min<uint32_t>(loaderVersion, VK_API_VERSION_1_3);
  VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ici.pApplicationInfo = &app;
  VkResult r = vk.vkCreateInstance(&ici, nullptr, &instance);
  if (r != VK_SUCCESS)
    return unavailable(error, "vkCreateInstance failed: " + resultString(r) +
                                  " (is a Vulkan driver installed? Debian: "
                                  "mesa-vulkan-drivers provides lavapipe)");
  if (!vk.loadInstance(instance, error))
    return unavailable(error, error);

  uint32_t count = 0;
  r = vk.vkEnumeratePhysicalDevices(instance, &count, nullptr);
  if (r != VK_SUCCESS || count == 0)
    return unavailable(error,
                       "no Vulkan device found (" +
                           (r == VK_SUCCESS ? std::string("0 devices")
                                            : resultString(r)) +
                           "); install a driver, e.g. mesa-vulkan-drivers "
                           "for the lavapipe CPU device");
  std::vector<VkPhysicalDevice> devices(count);
  vk.vkEnumeratePhysicalDevices(instance, &count, devices.data());
  devices.resize(count);
  std::vector<VkPhysicalDeviceProperties> props(count);
  for (uint32_t i = 0; i < count; ++i)
    vk.vkGetPhysicalDeviceProperties(devices[i], &props[i]);

  // Selection: ATTN_VULKAN_DEVICE (index or name substring), else prefer
  // discrete, integrated, virtual, then CPU devices.
  int64_t chosen = -1;
  if (const char *sel = std::getenv("ATTN_VULKAN_DEVICE"); sel && *sel) {
    std::string s(sel);
    char *end = nullptr;
    long idx = std::strtol(sel, &end, 10);
    std::string names;
    for (uint32_t i = 0; i < count; ++i)
      names += (i ? ", " : "") + std::to_string(i) + ": " +
               props[i].deviceName;
    if (*end == '\0') {
      if (idx < 0 || idx >= static_cast<long>(count))
        return unavailable(error, "ATTN_VULKAN_DEVICE=" + s +
                                      " is out of range; devices are " + names);
      chosen = idx;
    } else {
      for (uint32_t i = 0; i < count && chosen < 0; ++i)
        if (lower(props[i].deviceName).find(lower(s)) != std::string::npos)
          chosen = i;
      if (chosen < 0)
        return unavailable(error, "ATTN_VULKAN_DEVICE='" + s +
                                      "' matches no device name; devices are " +
                                      names);
    }
  } else {
    auto rank = [](VkPhysicalDeviceType t) {
      switch (t) {
      case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
        return 0;
      case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
        return 1;
      case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
        return 2;
      case VK_PHYSICAL_DEVICE_TYPE_CPU:
        return 3;
      default:
        return 4;
      }
    };
    for (uint32_t i = 0; i < count; ++i)
      if (chosen < 0 || rank(props[i].deviceType) < rank(props[chosen].deviceType))
        chosen = i;
  }
  physical = devices[chosen];
  const VkPhysicalDeviceProperties &p = props[chosen];
  info.name = p.deviceName;
  info.index = static_cast<uint32_t>(chosen);
  info.apiVersion = p.apiVersion;
  info.deviceType = p.deviceType;
  // Mesa's software rasterizer names its devices "llvmpipe (LLVM x, N bits)".
  if (info.name.rfind("llvmpipe", 0) == 0)
    info.maxLoopIterations = 65535;
  if (p.apiVersion < VK_API_VERSION_1_1)
    return unavailable(error, "device '" + info.name +
                                  "' supports only Vulkan 1.0; attn needs 1.1");
  info.maxComputeSharedMemorySize = p.limits.maxComputeSharedMemorySize;
  for (int i = 0; i < 3; ++i)
    info.maxComputeWorkGroupCount[i] = p.limits.maxComputeWorkGroupCount[i];
  info.maxComputeWorkGroupInvocations = p.limits.maxComputeWorkGroupInvocations;
  info.maxPushConstantsSize = p.limits.maxPushConstantsSize;
  info.maxStorageBufferRange = p.limits.maxStorageBufferRange;
  info.minStorageBufferOffsetAlignment =
      p.limits.minStorageBufferOffsetAlignment;
  info.timestampPeriodNs = p.limits.timestampPeriod;

  uint32_t extCount = 0;
  vk.vkEnumerateDeviceExtensionProperties(physical, nullptr, &extCount, nullptr);
  std::vector<VkExtensionProperties> exts(extCount);
  vk.vkEnumerateDeviceExtensionProperties(physical, nullptr, &extCount,
                                          exts.data());
  exts.resize(extCount);
  bool v12 = p.apiVersion >= VK_API_VERSION_1_2;
  bool v13 = p.apiVersion >= VK_API_VERSION_1_3;
  bool hasF16Ext = v12 || hasExtension(exts, "VK_KHR_shader_float16_int8");
  bool hasSscExt = v13 || hasExtension(exts, "VK_EXT_subgroup_size_control");
  bool hasCoopMat = hasExtension(exts, kCoopMatExtension) &&
                    vk.vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR;
  bool hasBf16Ext = hasExtension(exts, kBf16Extension);
  bool hasExecExt =
      hasExtension(exts, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);

  // Features: a pNext chain of only the structures this device knows.
  VkPhysicalDevice16BitStorageFeatures storage16{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDeviceShaderFloat16Int8Features f16{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDeviceSubgroupSizeControlFeatures ssc{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES};
  CoopMatFeaturesKHR coop{kCoopMatFeaturesSType, nullptr, VK_FALSE, VK_FALSE};
  Bf16FeaturesKHR bf16{kBf16FeaturesSType, nullptr, VK_FALSE, VK_FALSE,
                       VK_FALSE};
  bool hasVmmExt = v12 || hasExtension(exts, "VK_KHR_vulkan_memory_model");
  VkPhysicalDeviceVulkanMemoryModelFeatures vmm{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR exec{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  void **tail = &features.pNext;
  auto chain = [&](auto &s) {
    *tail = &s;
    tail = &s.pNext;
  };
  chain(storage16);
  if (hasF16Ext)
    chain(f16);
  if (hasSscExt)
    chain(ssc);
  if (hasCoopMat)
    chain(coop);
  if (hasBf16Ext)
    chain(bf16);
  if (hasVmmExt)
    chain(vmm);
  if (hasExecExt)
    chain(exec);
  vk.vkGetPhysicalDeviceFeatures2(physical, &features);
  // Enabled only when asked for (ATTN_VULKAN_PIPELINE_STATS), so that
  // timed runs create their pipelines as without it.
  pipelineStatsAsked = pipelineStatsRequested();
  info.pipelineExecutableInfo =
      hasExecExt && exec.pipelineExecutableInfo && pipelineStatsAsked;
  info.shaderBFloat16Type = hasBf16Ext && bf16.shaderBFloat16Type;
  info.shaderBFloat16CooperativeMatrix =
      hasBf16Ext && bf16.shaderBFloat16CooperativeMatrix;
  info.vulkanMemoryModel = hasVmmExt && vmm.vulkanMemoryModel;
  info.storageBuffer16BitAccess = storage16.storageBuffer16BitAccess;
  info.shaderFloat16 = hasF16Ext && f16.shaderFloat16;
  info.subgroupSizeControl = hasSscExt && ssc.subgroupSizeControl;
  info.computeFullSubgroups = hasSscExt && ssc.computeFullSubgroups;
  info.cooperativeMatrix = hasCoopMat && coop.cooperativeMatrix;
  info.shaderInt64 = features.features.shaderInt64;
  info.shaderInt16 = features.features.shaderInt16;
  VkPhysicalDeviceSubgroupProperties subgroup{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceSubgroupSizeControlProperties sscProps{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
  VkPhysicalDeviceShaderSMBuiltinsPropertiesNV sm{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
  VkPhysicalDeviceShaderCorePropertiesAMD amdCores{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD};
  const bool hasSmExt = hasExtension(exts, "VK_NV_shader_sm_builtins");
  const bool hasAmdCoreExt =
      hasExtension(exts, "VK_AMD_shader_core_properties");
  VkPhysicalDeviceProperties2 props2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  void **propsTail = &props2.pNext;
  auto chainProps = [&](auto &s) {
    *propsTail = &s;
    propsTail = &s.pNext;
  };
  chainProps(subgroup);
  if (hasSscExt)
    chainProps(sscProps);
  if (hasSmExt)
    chainProps(sm);
  if (hasAmdCoreExt)
    chainProps(amdCores);
  vk.vkGetPhysicalDeviceProperties2(physical, &props2);
  if (hasSmExt)
    info.computeUnits = sm.shaderSMCount;
  else if (hasAmdCoreExt)
    info.computeUnits = amdCores.shaderEngineCount *
                        amdCores.shaderArraysPerEngineCount *
                        amdCores.computeUnitsPerShaderArray;
  if (const char *env = std::getenv("ATTN_VULKAN_COMPUTE_UNITS");
      env && *env) {
    char *end = nullptr;
    unsigned long n = std::strtoul(env, &end, 10);
    if (!*end && n <= 1u << 20)
      info.computeUnits = static_cast<uint32_t>(n);
  }
  info.subgroupSize = subgroup.subgroupSize;
  info.minSubgroupSize = hasSscExt ? sscProps.minSubgroupSize : subgroup.subgroupSize;
  info.maxSubgroupSize = hasSscExt ? sscProps.maxSubgroupSize : subgroup.subgroupSize;
  info.maxComputeWorkgroupSubgroups =
      hasSscExt ? sscProps.maxComputeWorkgroupSubgroups : 0;
  const bool computeStage =
      (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0;
  info.subgroupArithmetic =
      computeStage &&
      (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
  info.subgroupShuffle =
      computeStage &&
      (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);

  // ATTN_VULKAN_HIDE_FEATURES (comma-separated feature names) makes the
  // device look as if it lacked them: they are neither reported nor
  // enabled, so the fallbacks and refusals of devices without them can be
  // exercised on one that has them (the tests do, on lavapipe).
  if (const char *hide = std::getenv("ATTN_VULKAN_HIDE_FEATURES");
      hide && *hide) {
    std::pair<const char *, bool *> known[] = {
        {"shaderInt16", &info.shaderInt16},
        {"shaderBFloat16Type", &info.shaderBFloat16Type},
        {"shaderBFloat16CooperativeMatrix",
         &info.shaderBFloat16CooperativeMatrix},
        {"shaderInt64", &info.shaderInt64},
        {"shaderFloat16", &info.shaderFloat16},
        {"storageBuffer16BitAccess", &info.storageBuffer16BitAccess},
        {"subgroupSizeControl", &info.subgroupSizeControl},
        {"computeFullSubgroups", &info.computeFullSubgroups},
        {"subgroupArithmetic", &info.subgroupArithmetic},
        {"subgroupShuffle", &info.subgroupShuffle},
        {"cooperativeMatrix", &info.cooperativeMatrix},
        {"vulkanMemoryModel", &info.vulkanMemoryModel}};
    std::string list(hide);
    for (size_t begin = 0; begin <= list.size();) {
      size_t end = list.find(',', begin);
      if (end == std::string::npos)
        end = list.size();
      std::string name = list.substr(begin, end - begin);
      begin = end + 1;
      if (name.empty())
        continue;
      bool found = false;
      std::string names;
      for (auto &[known_name, flag] : known) {
        names += (names.empty() ? "" : ", ") + std::string(known_name);
        if (name == known_name) {
          *flag = false;
          found = true;
        }
      }
      if (!found)
        return unavailable(error, "ATTN_VULKAN_HIDE_FEATURES names '" + name +
                                      "', which is not one of " + names);
    }
  }


  if (info.cooperativeMatrix) {
    auto get = reinterpret_cast<PFN_getCoopMatProperties>(
        vk.vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR);
    uint32_t n = 0;
    if (get(physical, &n, nullptr) == VK_SUCCESS && n) {
      std::vector<CoopMatPropertiesKHR> shapes(
          n, CoopMatPropertiesKHR{kCoopMatPropertiesSType, nullptr});
      if (get(physical, &n, shapes.data()) == VK_SUCCESS)
        for (uint32_t i = 0; i < n; ++i) {
          const auto &s = shapes[i];
          info.coopMatShapes.push_back(
              {s.MSize, s.NSize, s.KSize, s.AType, s.BType, s.CType,
               s.ResultType, s.saturatingAccumulation != VK_FALSE, s.scope});
        }
    }
  }

  // A queue family with compute; prefer one without graphics (async).
  uint32_t qfCount = 0;
  vk.vkGetPhysicalDeviceQueueFamilyProperties(physical, &qfCount, nullptr);
  std::vector<VkQueueFamilyProperties> qfs(qfCount);
  vk.vkGetPhysicalDeviceQueueFamilyProperties(physical, &qfCount, qfs.data());
  int64_t family = -1;
  for (uint32_t i = 0; i < qfCount; ++i) {
    if (!(qfs[i].queueFlags & VK_QUEUE_COMPUTE_BIT))
      continue;
    if (family < 0 || !(qfs[i].queueFlags & VK_QUEUE_GRAPHICS_BIT))
      family = i;
  }
  if (family < 0)
    return unavailable(error, "device '" + info.name + "' has no compute queue");
  queueFamily = static_cast<uint32_t>(family);
  info.timestamps = qfs[family].timestampValidBits > 0;

  // Enable what the kernels may use, as far as the device has it.
  VkPhysicalDevice16BitStorageFeatures enStorage16{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  enStorage16.storageBuffer16BitAccess = storage16.storageBuffer16BitAccess;
  VkPhysicalDeviceShaderFloat16Int8Features enF16{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  enF16.shaderFloat16 = info.shaderFloat16;
  VkPhysicalDeviceSubgroupSizeControlFeatures enSsc{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES};
  enSsc.subgroupSizeControl = info.subgroupSizeControl;
  enSsc.computeFullSubgroups = info.computeFullSubgroups;
  CoopMatFeaturesKHR enCoop{kCoopMatFeaturesSType, nullptr,
                            info.cooperativeMatrix, VK_FALSE};
  VkPhysicalDeviceVulkanMemoryModelFeatures enVmm{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
  enVmm.vulkanMemoryModel = info.vulkanMemoryModel;
  Bf16FeaturesKHR enBf16{kBf16FeaturesSType, nullptr, info.shaderBFloat16Type,
                         VK_FALSE,
                         info.shaderBFloat16Type &&
                             info.shaderBFloat16CooperativeMatrix &&
                             info.cooperativeMatrix};
  VkPhysicalDeviceFeatures2 enabled{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  enabled.features.shaderInt64 = info.shaderInt64;
  enabled.features.shaderInt16 = info.shaderInt16;
  tail = &enabled.pNext;
  chain(enStorage16);
  std::vector<const char *> enabledExts;
  if (hasF16Ext) {
    chain(enF16);
    if (!v12)
      enabledExts.push_back("VK_KHR_shader_float16_int8");
  }
  if (hasSscExt) {
    chain(enSsc);
    if (!v13)
      enabledExts.push_back("VK_EXT_subgroup_size_control");
  }
  if (info.cooperativeMatrix) {
    chain(enCoop);
    enabledExts.push_back(kCoopMatExtension);
  }
  if (info.shaderBFloat16Type) {
    chain(enBf16);
    enabledExts.push_back(kBf16Extension);
  }
  if (hasVmmExt) {
    chain(enVmm);
    if (!v12)
      enabledExts.push_back("VK_KHR_vulkan_memory_model");
  }
  if (!v12 && hasExtension(exts, "VK_KHR_16bit_storage"))
    enabledExts.push_back("VK_KHR_16bit_storage");
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR enExec{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  if (info.pipelineExecutableInfo) {
    enExec.pipelineExecutableInfo = VK_TRUE;
    chain(enExec);
    enabledExts.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  }

  float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = queueFamily;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.pNext = &enabled;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = static_cast<uint32_t>(enabledExts.size());
  dci.ppEnabledExtensionNames = enabledExts.data();
  r = vk.vkCreateDevice(physical, &dci, nullptr, &device);
  if (r != VK_SUCCESS)
    return unavailable(error, "vkCreateDevice failed on '" + info.name +
                                  "': " + resultString(r));
  vk.vkGetDeviceQueue(device, queueFamily, 0, &queue);
  vk.vkGetPhysicalDeviceMemoryProperties(physical, &memory);
  if (info.pipelineExecutableInfo) {
    getExecutableProperties =
        reinterpret_cast<PFN_vkGetPipelineExecutablePropertiesKHR>(
            vk.vkGetDeviceProcAddr(device,
                                   "vkGetPipelineExecutablePropertiesKHR"));
    getExecutableStatistics =
        reinterpret_cast<PFN_vkGetPipelineExecutableStatisticsKHR>(
            vk.vkGetDeviceProcAddr(device,
                                   "vkGetPipelineExecutableStatisticsKHR"));
    info.pipelineExecutableInfo =
        getExecutableProperties && getExecutableStatistics;
  }
  return ATTN_OK;
}

std::mutex deviceMutex;
Device *theDevice = nullptr;

/// The opened device, or null with `error` set. A failed open leaves
/// nothing behind (the half-built Device is leaked on purpose only when
/// the driver holds handles to it; the loader library stays mapped).
attn_status getDevice(Device *&out, std::string &error) {
  std::lock_guard<std::mutex> lock(deviceMutex);
  if (!theDevice) {
    auto *d = new Device();
    attn_status s = d->open(error);
    if (s != ATTN_OK) {
      if (d->instance != VK_NULL_HANDLE && d->vk.vkDestroyInstance)
        d->vk.vkDestroyInstance(d->instance, nullptr);
      delete d;
      return s;
    }
    theDevice = d;
  }
  out = theDevice;
  return ATTN_OK;
}

// --- Programs ---------------------------------------------------------------

/// A buffer with its memory.
struct Buffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize size = 0;
};

} // namespace

/// A device-local storage buffer the caller allocated (createDeviceBuffer):
/// freed when the last reference goes (its handle's, or a run's in flight).
struct attn::vulkan::DeviceBuffer {
  Device &d;
  Buffer b;
  uint64_t bytes = 0; // as asked for; b.size rounds up to whole words
  explicit DeviceBuffer(Device &d) : d(d) {}
  ~DeviceBuffer() {
    if (b.buffer)
      d.vk.vkDestroyBuffer(d.device, b.buffer, nullptr);
    if (b.memory)
      d.vk.vkFreeMemory(d.device, b.memory, nullptr);
  }
};

namespace {

/// The Vulkan objects a submission records into and waits on: a command
/// pool with its one buffer, a fence, a timestamp query pool (where the
/// queue has timestamps) and a descriptor pool holding the sets of the
/// dispatch list it last ran. Created on first use and reset, not
/// recreated, by later submissions (LaunchSlots): on NVIDIA's driver,
/// creating and destroying them took 0.4-0.9 ms of host time per launch
/// (bench/results/vulkan-h200-strips-2026-12-02), more than a decode
/// step's kernel.
struct LaunchSlot {
  Device &d;
  VkCommandPool pool = VK_NULL_HANDLE;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  VkQueryPool queries = VK_NULL_HANDLE;
  VkDescriptorPool descriptorPool = VK_NULL_HANDLE;
  uint32_t poolSets = 0, poolDescriptors = 0; // descriptorPool's capacity
  /// The entry point each of `sets` was allocated for (empty: none are).
  std::vector<uint32_t> setEntries;
  std::vector<VkDescriptorSet> sets;
  explicit LaunchSlot(Device &d) : d(d) {}
  LaunchSlot(const LaunchSlot &) = delete;
  LaunchSlot &operator=(const LaunchSlot &) = delete;
  ~LaunchSlot() {
    auto &vk = d.vk;
    if (fence)
      vk.vkDestroyFence(d.device, fence, nullptr);
    if (queries)
      vk.vkDestroyQueryPool(d.device, queries, nullptr);
    if (descriptorPool)
      vk.vkDestroyDescriptorPool(d.device, descriptorPool, nullptr);
    if (pool)
      vk.vkDestroyCommandPool(d.device, pool, nullptr);
  }
};

/// Idle launch slots of one program (or of the device's copies), taken by a
/// submission and given back once its fence signalled and it was read.
/// Shared with the submissions in flight, so that one finishing after its
/// program was destroyed still has somewhere to give its slot (closed: the
/// slot is destroyed).
class LaunchSlots {
public:
  explicit LaunchSlots(Device &d) : d(d) {}
  std::unique_ptr<LaunchSlot> take() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!idle.empty()) {
        std::unique_ptr<LaunchSlot> s = std::move(idle.back());
        idle.pop_back();
        return s;
      }
    }
    return std::make_unique<LaunchSlot>(d);
  }
  /// Keeps `s` for a later submission: its fence signalled (or it was
  /// never submitted), so nothing on the device still uses it.
  void give(std::unique_ptr<LaunchSlot> s) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!closed && idle.size() < kMaxIdle)
      idle.push_back(std::move(s));
  }
  /// Destroys the idle slots; later ones given back are destroyed too.
  void close() {
    std::vector<std::unique_ptr<LaunchSlot>> gone;
    std::lock_guard<std::mutex> lock(mutex);
    closed = true;
    gone.swap(idle);
  }

private:
  /// Enough for the launches a caller keeps in flight back to back; more
  /// finishing at once are destroyed.
  static constexpr size_t kMaxIdle = 32;
  Device &d;
  std::mutex mutex;
  std::vector<std::unique_ptr<LaunchSlot>> idle;
  bool closed = false;
};

/// Owns the Vulkan objects of one run (or one copy): its staging buffers,
/// destroyed on every exit path, and its launch slot, given back to
/// `owner` (or destroyed, without one or after a failed wait). A submitted
/// run's are released only after its fence signalled (VulkanSubmission).
struct RunResources {
  Device &d;
  std::vector<Buffer> buffers;
  std::shared_ptr<LaunchSlots> owner;
  std::unique_ptr<LaunchSlot> slot;
  bool timed = false;
  /// False once a wait on the fence failed: the device may still use the
  /// slot, which is then never reused.
  bool reusable = true;
  RunResources(Device &d, std::shared_ptr<LaunchSlots> from)
      : d(d), owner(std::move(from)),
        slot(owner ? owner->take() : std::make_unique<LaunchSlot>(d)) {}
  ~RunResources() {
    auto &vk = d.vk;
    if (owner && slot && reusable)
      owner->give(std::move(slot));
    for (Buffer &b : buffers) {
      if (b.buffer)
        vk.vkDestroyBuffer(d.device, b.buffer, nullptr);
      if (b.memory)
        vk.vkFreeMemory(d.device, b.memory, nullptr);
    }
  }

  /// The slot's command buffer, reset and begun (one-time submit).
  attn_status begin(VkCommandBuffer &out, std::string &error);
  /// Ends the command buffer and submits it with the slot's fence, reset.
  attn_status submit(std::string &error);
  /// Waits for the fence.
  attn_status wait(std::string &error);
};

int64_t findMemoryType(const VkPhysicalDeviceMemoryProperties &mem,
                       uint32_t typeBits, VkMemoryPropertyFlags want) {
  for (uint32_t i = 0; i < mem.memoryTypeCount; ++i)
    if ((typeBits & (1u << i)) &&
        (mem.memoryTypes[i].propertyFlags & want) == want)
      return i;
  return -1;
}

attn_status backend(std::string &error, const std::string &what, VkResult r) {
  error = "vulkan: " + what + " failed: " + resultString(r);
  return r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY
             ? ATTN_ERROR_OUT_OF_MEMORY
             : ATTN_ERROR_BACKEND;
}

attn_status makeBuffer(Device &d, VkDeviceSize size, VkBufferUsageFlags usage,
                       bool hostVisible, Buffer &b, std::string &error) {
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = size;
  bci.usage = usage;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkResult r = d.vk.vkCreateBuffer(d.device, &bci, nullptr, &b.buffer);
  if (r != VK_SUCCESS)
    return backend(error, "vkCreateBuffer", r);
  VkMemoryRequirements req;
  d.vk.vkGetBufferMemoryRequirements(d.device, b.buffer, &req);
  int64_t type =
      hostVisible
          ? findMemoryType(d.memory, req.memoryTypeBits,
                           VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                               VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)
          : findMemoryType(d.memory, req.memoryTypeBits,
                           VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  if (type < 0 && !hostVisible)
    type = findMemoryType(d.memory, req.memoryTypeBits, 0);
  if (type < 0) {
    error = std::string("vulkan: no ") +
            (hostVisible ? "host-visible coherent" : "device") +
            " memory type for a buffer";
    return ATTN_ERROR_BACKEND;
  }
  VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = static_cast<uint32_t>(type);
  r = d.vk.vkAllocateMemory(d.device, &mai, nullptr, &b.memory);
  if (r != VK_SUCCESS)
    return backend(error, "vkAllocateMemory (" + std::to_string(req.size) +
                              " bytes)",
                   r);
  r = d.vk.vkBindBufferMemory(d.device, b.buffer, b.memory, 0);
  if (r != VK_SUCCESS)
    return backend(error, "vkBindBufferMemory", r);
  b.size = size;
  return ATTN_OK;
}

/// The tensor's elements, or -1 when the count does not fit int64_t.
int64_t elementCount(const HostTensor &t) {
  int64_t n = 1;
  for (int i = 0; i < t.rank; ++i)
    if (t.shape[i] < 0 || __builtin_mul_overflow(n, t.shape[i], &n))
      return -1;
  return n;
}

/// Copies between a strided host tensor and its dense packing, innermost
/// dimension contiguous on both sides when its stride is 1.
void copyStrided(const HostTensor &t, uint8_t *dense, bool toDense) {
  int64_t shape[4] = {1, 1, 1, 1}, strides[4] = {0, 0, 0, 0};
  for (int i = 0; i < t.rank; ++i) {
    shape[4 - t.rank + i] = t.shape[i];
    strides[4 - t.rank + i] = t.strides[i];
  }
  const size_t es = t.elemSize;
  auto *host = static_cast<uint8_t *>(t.data);
  bool contiguousRows = strides[3] == 1;
  size_t rowBytes = static_cast<size_t>(shape[3]) * es;
  for (int64_t a = 0; a < shape[0]; ++a)
    for (int64_t b = 0; b < shape[1]; ++b)
      for (int64_t c = 0; c < shape[2]; ++c) {
        int64_t base = a * strides[0] + b * strides[1] + c * strides[2];
        uint8_t *h = host + base * static_cast<int64_t>(es);
        if (contiguousRows) {
          if (toDense)
            std::memcpy(dense, h, rowBytes);
          else
            std::memcpy(h, dense, rowBytes);
          dense += rowBytes;
          continue;
        }
        for (int64_t e = 0; e < shape[3]; ++e, dense += es) {
          uint8_t *he = h + e * strides[3] * static_cast<int64_t>(es);
          if (toDense)
            std::memcpy(dense, he, es);
          else
            std::memcpy(he, dense, es);
        }
      }
}

/// The OpEntryPoint names of a SPIR-V module (passing a name the module
/// lacks to vkCreateComputePipelines is undefined behaviour, so it is
/// checked first).
std::vector<std::string> spirvEntryPoints(const std::vector<uint32_t> &words) {
  std::vector<std::string> names;
  constexpr uint32_t kOpEntryPoint = 15;
  for (size_t i = 5; i < words.size();) {
    uint32_t count = words[i] >> 16, opcode = words[i] & 0xffffu;
    if (count == 0 || i + count > words.size())
      break;
    if (opcode == kOpEntryPoint && count > 3) {
      // execution model, function id, then the name (nul-terminated,
      // little-endian bytes in words).
      std::string name;
      for (size_t w = i + 3; w < i + count; ++w) {
        bool end = false;
        for (int byte = 0; byte < 4 && !end; ++byte) {
          char c = static_cast<char>((words[w] >> (8 * byte)) & 0xffu);
          if (c == '\0')
            end = true;
          else
            name.push_back(c);
        }
        if (end)
          break;
      }
      names.push_back(name);
    }
    i += count;
  }
  return names;
}

attn_status RunResources::begin(VkCommandBuffer &out, std::string &error) {
  auto &vk = d.vk;
  LaunchSlot &s = *slot;
  VkResult r;
  if (!s.pool) {
    VkCommandPoolCreateInfo cpci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    cpci.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
    cpci.queueFamilyIndex = d.queueFamily;
    r = vk.vkCreateCommandPool(d.device, &cpci, nullptr, &s.pool);
    if (r != VK_SUCCESS)
      return backend(error, "vkCreateCommandPool", r);
  } else if (s.cb) {
    // The slot's last command buffer finished (or was never submitted):
    // back to the initial state, its memory kept for this one.
    r = vk.vkResetCommandPool(d.device, s.pool, 0);
    if (r != VK_SUCCESS)
      return backend(error, "vkResetCommandPool", r);
  }
  if (!s.cb) {
    VkCommandBufferAllocateInfo cbai{
        VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cbai.commandPool = s.pool;
    cbai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cbai.commandBufferCount = 1;
    r = vk.vkAllocateCommandBuffers(d.device, &cbai, &s.cb);
    if (r != VK_SUCCESS) {
      s.cb = VK_NULL_HANDLE;
      return backend(error, "vkAllocateCommandBuffers", r);
    }
  }
  VkCommandBufferBeginInfo cbbi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  cbbi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  r = vk.vkBeginCommandBuffer(s.cb, &cbbi);
  if (r != VK_SUCCESS)
    return backend(error, "vkBeginCommandBuffer", r);
  out = s.cb;
  return ATTN_OK;
}

attn_status RunResources::submit(std::string &error) {
  auto &vk = d.vk;
  LaunchSlot &s = *slot;
  VkResult r = vk.vkEndCommandBuffer(s.cb);
  if (r != VK_SUCCESS)
    return backend(error, "vkEndCommandBuffer", r);
  if (!s.fence) {
    VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    r = vk.vkCreateFence(d.device, &fci, nullptr, &s.fence);
    if (r != VK_SUCCESS)
      return backend(error, "vkCreateFence", r);
  } else {
    r = vk.vkResetFences(d.device, 1, &s.fence);
    if (r != VK_SUCCESS)
      return backend(error, "vkResetFences", r);
  }
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &s.cb;
  {
    std::lock_guard<std::mutex> lock(d.queueMutex);
    r = vk.vkQueueSubmit(d.queue, 1, &si, s.fence);
  }
  if (r != VK_SUCCESS) {
    // Never submitted: nothing waits on the fence, and the device has
    // nothing of the slot's (it is reset when next used). The fence is
    // gone, so that no wait starts on one that never signals.
    vk.vkDestroyFence(d.device, s.fence, nullptr);
    s.fence = VK_NULL_HANDLE;
    return backend(error, "vkQueueSubmit", r);
  }
  return ATTN_OK;
}

attn_status RunResources::wait(std::string &error) {
  VkFence f = slot->fence;
  VkResult r = d.vk.vkWaitForFences(d.device, 1, &f, VK_TRUE, UINT64_MAX);
  if (r != VK_SUCCESS) {
    reusable = false;
    return backend(error, "vkWaitForFences", r);
  }
  return ATTN_OK;
}

/// A submitted run: waits for its fence, reads its timestamps and copies
/// host outputs back, once; its Vulkan objects (and its hold on device
/// buffers) go with it. Destroyed unwaited, it waits first: nothing the
/// device may still use is freed.
class VulkanSubmission final : public attn::Submission {
public:
  VulkanSubmission(std::unique_ptr<RunResources> res,
                   std::vector<HostTensor> tensors,
                   std::vector<VkDeviceSize> sizes)
      : res(std::move(res)), tensors(std::move(tensors)),
        sizes(std::move(sizes)) {}
  ~VulkanSubmission() override {
    std::string ignored;
    wait(ignored);
  }

  attn_status wait(std::string &error) override {
    std::lock_guard<std::mutex> lock(mutex);
    if (!finished) {
      status = finish(message);
      finished = true;
      res.reset();
      tensors.clear();
    }
    if (status != ATTN_OK)
      error = message;
    return status;
  }

  bool ready() override {
    std::lock_guard<std::mutex> lock(mutex);
    if (finished)
      return true;
    return res->d.vk.vkGetFenceStatus(res->d.device, res->slot->fence) !=
           VK_NOT_READY;
  }

  double kernelMs() const override {
    std::lock_guard<std::mutex> lock(mutex);
    return ms;
  }

private:
  attn_status finish(std::string &error) {
    Device &d = res->d;
    auto &vk = d.vk;
    if (attn_status s = res->wait(error))
      return s;
    if (res->timed) {
      uint64_t stamps[2] = {0, 0};
      VkResult r = vk.vkGetQueryPoolResults(
          d.device, res->slot->queries, 0, 2, sizeof(stamps), stamps,
          sizeof(uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
      if (r != VK_SUCCESS)
        return backend(error, "vkGetQueryPoolResults", r);
      ms = double(stamps[1] - stamps[0]) * d.info.timestampPeriodNs * 1e-6;
    }
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (!tensors[i].output || tensors[i].buffer)
        continue;
      void *mapped = nullptr;
      VkResult r = vk.vkMapMemory(d.device, res->buffers[2 * i].memory, 0,
                                  VK_WHOLE_SIZE, 0, &mapped);
      if (r != VK_SUCCESS)
        return backend(error, "vkMapMemory (read-back)", r);
      copyStrided(tensors[i], static_cast<uint8_t *>(mapped),
                  /*toDense=*/false);
      vk.vkUnmapMemory(d.device, res->buffers[2 * i].memory);
    }
    return ATTN_OK;
  }

  mutable std::mutex mutex;
  std::unique_ptr<RunResources> res;
  std::vector<HostTensor> tensors;
  std::vector<VkDeviceSize> sizes;
  bool finished = false;
  attn_status status = ATTN_OK;
  std::string message;
  double ms = -1.0;
};

class VulkanProgram final : public Program {
public:
  VulkanProgram(Device &d, const ProgramDesc &desc) : d(d), desc(desc) {
    if (this->desc.entries.empty())
      this->desc.entries.push_back({desc.entry, desc.numBuffers});
  }
  ~VulkanProgram() override {
    auto &vk = d.vk;
    // Launches of this program still in flight (events not yet waited on)
    // use its pipelines and workspaces: the queue drains before they go.
    {
      std::lock_guard<std::mutex> lock(d.queueMutex);
      vk.vkQueueWaitIdle(d.queue);
    }
    slots->close();
    for (Entry &e : entries) {
      if (e.pipeline)
        vk.vkDestroyPipeline(d.device, e.pipeline, nullptr);
      if (e.layout)
        vk.vkDestroyPipelineLayout(d.device, e.layout, nullptr);
      if (e.setLayout)
        vk.vkDestroyDescriptorSetLayout(d.device, e.setLayout, nullptr);
    }
    if (module)
      vk.vkDestroyShaderModule(d.device, module, nullptr);
    for (Buffer &b : workspaces) {
      if (b.buffer)
        vk.vkDestroyBuffer(d.device, b.buffer, nullptr);
      if (b.memory)
        vk.vkFreeMemory(d.device, b.memory, nullptr);
    }
  }

  /// Creates the module, a pipeline per entry point and the workspaces;
  /// on failure the destructor frees whatever was created.
  attn_status init(std::string &error) {
    auto &vk = d.vk;
    VkShaderModuleCreateInfo smci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    smci.codeSize = desc.spirv.size() * sizeof(uint32_t);
    smci.pCode = desc.spirv.data();
    VkResult r = vk.vkCreateShaderModule(d.device, &smci, nullptr, &module);
    if (r != VK_SUCCESS)
      return backend(error, "vkCreateShaderModule", r);
    entries.resize(desc.entries.size());
    for (size_t e = 0; e < desc.entries.size(); ++e)
      if (attn_status s = initEntry(desc.entries[e], entries[e], error))
        return s;
    workspaces.resize(desc.workspaceBytes.size());
    for (size_t i = 0; i < desc.workspaceBytes.size(); ++i) {
      // Addressed in 4-byte words, like every storage buffer here.
      uint64_t bytes =
          (std::max<uint64_t>(desc.workspaceBytes[i], 4) + 3) & ~uint64_t(3);
      if (bytes > d.info.maxStorageBufferRange) {
        error = "vulkan: workspace " + std::to_string(i) + " needs " +
                std::to_string(bytes) +
                " bytes, more than the device's maxStorageBufferRange (" +
                std::to_string(d.info.maxStorageBufferRange) + ")";
        return ATTN_ERROR_UNSUPPORTED;
      }
      if (attn_status s =
              makeBuffer(d, bytes, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                         /*hostVisible=*/false, workspaces[i], error))
        return s;
    }
    return ATTN_OK;
  }

  attn_status run(const std::vector<HostTensor> &tensors,
                  const std::vector<uint8_t> &pushConstants,
                  const uint32_t groups[3], double *gpuMs,
                  std::string &error) override {
    if (tensors.size() != desc.entries[0].numBuffers) {
      error = "vulkan: the program takes " +
              std::to_string(desc.entries[0].numBuffers) + " buffers, got " +
              std::to_string(tensors.size());
      return ATTN_ERROR_INVALID_ARGUMENT;
    }
    Dispatch one;
    for (int i = 0; i < 3; ++i)
      one.groups[i] = groups[i];
    for (uint32_t i = 0; i < tensors.size(); ++i)
      one.bindings.push_back({false, i});
    return runDispatches(tensors, pushConstants, {one}, gpuMs, error);
  }

  attn_status runDispatches(const std::vector<HostTensor> &tensors,
                            const std::vector<uint8_t> &pushConstants,
                            const std::vector<Dispatch> &dispatches,
                            double *gpuMs, std::string &error) override {
    std::shared_ptr<attn::Submission> done;
    if (attn_status s = submit(tensors, pushConstants, dispatches,
                               /*wait=*/true, done, error))
      return s;
    if (gpuMs)
      *gpuMs = lastGpuMs;
    return ATTN_OK;
  }

  attn_status submit(const std::vector<HostTensor> &tensors,
                     const std::vector<uint8_t> &pushConstants,
                     const std::vector<Dispatch> &dispatches, bool wait,
                     std::shared_ptr<attn::Submission> &pending,
                     std::string &error) override {
    auto &vk = d.vk;
    if (wait)
      lastGpuMs = -1.0; // until this run's timestamps are read
    if (pushConstants.size() != desc.pushConstantBytes) {
      error = "vulkan: the program takes " +
              std::to_string(desc.pushConstantBytes) +
              " bytes of push constants, got " +
              std::to_string(pushConstants.size());
      return ATTN_ERROR_INVALID_ARGUMENT;
    }
    if (dispatches.empty()) {
      error = "vulkan: nothing to dispatch";
      return ATTN_ERROR_INVALID_ARGUMENT;
    }
    size_t totalBindings = 0;
    for (size_t k = 0; k < dispatches.size(); ++k) {
      const Dispatch &dp = dispatches[k];
      std::string which = "vulkan: dispatch " + std::to_string(k);
      if (dp.entry >= entries.size()) {
        error = which + " names entry point " + std::to_string(dp.entry) +
                "; the program has " + std::to_string(entries.size());
        return ATTN_ERROR_INVALID_ARGUMENT;
      }
      const EntryPointDesc &ep = desc.entries[dp.entry];
      if (dp.bindings.size() != ep.numBuffers) {
        error = which + " ('" + ep.name + "') binds " +
                std::to_string(dp.bindings.size()) +
                " buffers; the entry point takes " +
                std::to_string(ep.numBuffers);
        return ATTN_ERROR_INVALID_ARGUMENT;
      }
      for (const BufferRef &ref : dp.bindings)
        if (ref.index >= (ref.workspace ? workspaces.size() : tensors.size())) {
          error = which + " ('" + ep.name + "') binds " +
                  (ref.workspace ? "workspace " : "tensor ") +
                  std::to_string(ref.index) + " of " +
                  std::to_string(ref.workspace ? workspaces.size()
                                               : tensors.size());
          return ATTN_ERROR_INVALID_ARGUMENT;
        }
      for (int i = 0; i < 3; ++i)
        if (dp.groups[i] == 0 ||
            dp.groups[i] > d.info.maxComputeWorkGroupCount[i]) {
          error = "vulkan: workgroup count " + std::to_string(dp.groups[i]) +
                  " in dimension " + std::to_string(i) +
                  (dispatches.size() > 1 ? " of dispatch " + std::to_string(k) +
                                               " ('" + ep.name + "')"
                                         : std::string()) +
                  " is outside the device's range [1, " +
                  std::to_string(d.info.maxComputeWorkGroupCount[i]) + "]";
          return ATTN_ERROR_UNSUPPORTED;
        }
      totalBindings += dp.bindings.size();
    }
    // Runs of one program share its workspaces, and launches on device
    // buffers may read what an earlier one wrote: every command buffer
    // starts with a barrier after all earlier compute and transfer work on
    // the queue (submission order), so runs in flight never overlap on
    // them. No host lock is held across the wait.

    auto res = std::make_unique<RunResources>(d, slots);
    const size_t n = tensors.size();
    // Per host tensor: staging (host-visible) at 2i, device-local at 2i+1.
    // Tensors already on the device (HostTensor::buffer) are bound in
    // place: nothing is allocated or copied for them.
    res->buffers.resize(2 * n);
    std::vector<VkDeviceSize> sizes(n);
    std::vector<VkDescriptorBufferInfo> bound(n);
    for (size_t i = 0; i < n; ++i) {
      const HostTensor &t = tensors[i];
      int64_t count = elementCount(t), bytes = 0;
      const bool fits =
          count >= 0 &&
          !__builtin_mul_overflow(count, static_cast<int64_t>(t.elemSize),
                                  &bytes) &&
          bytes <= int64_t(d.info.maxStorageBufferRange);
      // Storage buffers are addressed in 4-byte words by the kernels.
      sizes[i] = fits ? static_cast<VkDeviceSize>(
                            (std::max<int64_t>(bytes, 4) + 3) & ~int64_t(3))
                      : 0;
      if (!fits || sizes[i] > d.info.maxStorageBufferRange) {
        error = "vulkan: buffer " + std::to_string(i) + " needs " +
                (fits ? std::to_string(sizes[i])
                 : count >= 0
                     ? std::to_string(count) + " x " +
                           std::to_string(t.elemSize)
                     : std::string("more than 2^63")) +
                " bytes, more than the device's maxStorageBufferRange (" +
                std::to_string(d.info.maxStorageBufferRange) + ")";
        return ATTN_ERROR_UNSUPPORTED;
      }
      if (t.buffer) {
        const uint64_t size = t.buffer->bytes;
        if (t.offset > size || uint64_t(bytes) > size - t.offset) {
          error = "vulkan: buffer " + std::to_string(i) + " needs " +
                  std::to_string(bytes) + " bytes at offset " +
                  std::to_string(t.offset) + " of a device buffer of " +
                  std::to_string(size);
          return ATTN_ERROR_INVALID_ARGUMENT;
        }
        const uint64_t align =
            std::max<uint64_t>(d.info.minStorageBufferOffsetAlignment, 1);
        if (t.offset % align) {
          error = "vulkan: buffer " + std::to_string(i) + " starts at offset " +
                  std::to_string(t.offset) +
                  " of its device buffer, not a multiple of the device's "
                  "minStorageBufferOffsetAlignment (" +
                  std::to_string(align) + ")";
          return ATTN_ERROR_INVALID_ARGUMENT;
        }
        // The kernels read whole words: the range takes the word holding
        // the last element where the buffer has it (device buffers are
        // allocated in whole words).
        bound[i] = {t.buffer->b.buffer, t.offset,
                    std::min<VkDeviceSize>(sizes[i], t.buffer->b.size - t.offset)};
        continue;
      }
      if (attn_status s = makeBuffer(d, sizes[i],
                                     VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                         VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                     true, res->buffers[2 * i], error))
        return s;
      if (attn_status s = makeBuffer(d, sizes[i],
                                     VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                         VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                         VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                     false, res->buffers[2 * i + 1], error))
        return s;
      bound[i] = {res->buffers[2 * i + 1].buffer, 0, VK_WHOLE_SIZE};
      void *mapped = nullptr;
      VkResult r = vk.vkMapMemory(d.device, res->buffers[2 * i].memory, 0,
                                  VK_WHOLE_SIZE, 0, &mapped);
      if (r != VK_SUCCESS)
        return backend(error, "vkMapMemory", r);
      // Inputs are packed densely; pure outputs start zeroed so a kernel
      // that skips elements is deterministic.
      if (t.input)
        copyStrided(t, static_cast<uint8_t *>(mapped), /*toDense=*/true);
      else
        std::memset(mapped, 0, sizes[i]);
      vk.vkUnmapMemory(d.device, res->buffers[2 * i].memory);
    }

    // A descriptor set per dispatch, in its entry point's layout: the
    // slot's own where it last ran the same entry points (only their
    // buffers are written again), else allocated anew from its pool (reset,
    // or replaced by a larger one).
    LaunchSlot &slot = *res->slot;
    std::vector<uint32_t> setEntries(dispatches.size());
    for (size_t k = 0; k < dispatches.size(); ++k)
      setEntries[k] = dispatches[k].entry;
    VkResult r = VK_SUCCESS;
    if (slot.setEntries != setEntries) {
      slot.setEntries.clear();
      slot.sets.assign(dispatches.size(), VK_NULL_HANDLE);
      const uint32_t needSets = static_cast<uint32_t>(dispatches.size());
      const uint32_t needDescriptors =
          static_cast<uint32_t>(std::max<size_t>(totalBindings, 1));
      if (slot.descriptorPool && slot.poolSets >= needSets &&
          slot.poolDescriptors >= needDescriptors) {
        r = vk.vkResetDescriptorPool(d.device, slot.descriptorPool, 0);
        if (r != VK_SUCCESS)
          return backend(error, "vkResetDescriptorPool", r);
      } else {
        if (slot.descriptorPool)
          vk.vkDestroyDescriptorPool(d.device, slot.descriptorPool, nullptr);
        slot.descriptorPool = VK_NULL_HANDLE;
        slot.poolSets = slot.poolDescriptors = 0;
        VkDescriptorPoolSize poolSize{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                      needDescriptors};
        VkDescriptorPoolCreateInfo dpci{
            VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
        dpci.maxSets = needSets;
        dpci.poolSizeCount = 1;
        dpci.pPoolSizes = &poolSize;
        r = vk.vkCreateDescriptorPool(d.device, &dpci, nullptr,
                                      &slot.descriptorPool);
        if (r != VK_SUCCESS) {
          slot.descriptorPool = VK_NULL_HANDLE;
          return backend(error, "vkCreateDescriptorPool", r);
        }
        slot.poolSets = needSets;
        slot.poolDescriptors = needDescriptors;
      }
      for (size_t k = 0; k < dispatches.size(); ++k) {
        VkDescriptorSetAllocateInfo dsai{
            VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
        dsai.descriptorPool = slot.descriptorPool;
        dsai.descriptorSetCount = 1;
        dsai.pSetLayouts = &entries[dispatches[k].entry].setLayout;
        r = vk.vkAllocateDescriptorSets(d.device, &dsai, &slot.sets[k]);
        if (r != VK_SUCCESS)
          return backend(error, "vkAllocateDescriptorSets", r);
      }
      slot.setEntries = std::move(setEntries);
    }
    const std::vector<VkDescriptorSet> &sets = slot.sets;
    for (size_t k = 0; k < dispatches.size(); ++k) {
      const Dispatch &dp = dispatches[k];
      const size_t nb = dp.bindings.size();
      std::vector<VkDescriptorBufferInfo> infos(nb);
      std::vector<VkWriteDescriptorSet> writes(nb);
      for (size_t i = 0; i < nb; ++i) {
        const BufferRef &ref = dp.bindings[i];
        infos[i] = ref.workspace ? VkDescriptorBufferInfo{workspaces[ref.index].buffer,
                                                          0, VK_WHOLE_SIZE}
                                 : bound[ref.index];
        writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        writes[i].dstSet = sets[k];
        writes[i].dstBinding = static_cast<uint32_t>(i);
        writes[i].descriptorCount = 1;
        writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        writes[i].pBufferInfo = &infos[i];
      }
      if (nb)
        vk.vkUpdateDescriptorSets(d.device, static_cast<uint32_t>(nb),
                                  writes.data(), 0, nullptr);
    }

    VkCommandBuffer cb;
    if (attn_status s = res->begin(cb, error))
      return s;
    // Timed whenever the queue can be (two timestamps): lastRunGpuMs()
    // and Submission::kernelMs() report it without the caller asking.
    bool timed = d.info.timestamps;
    if (timed && !slot.queries) {
      VkQueryPoolCreateInfo qpci{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
      qpci.queryType = VK_QUERY_TYPE_TIMESTAMP;
      qpci.queryCount = 2;
      r = vk.vkCreateQueryPool(d.device, &qpci, nullptr, &slot.queries);
      if (r != VK_SUCCESS) {
        slot.queries = VK_NULL_HANDLE;
        return backend(error, "vkCreateQueryPool", r);
      }
    }
    bool anyOutput = false;
    for (size_t i = 0; i < n; ++i) {
      if (tensors[i].buffer)
        continue;
      anyOutput |= tensors[i].output;
      VkBufferCopy region{0, 0, sizes[i]};
      vk.vkCmdCopyBuffer(cb, res->buffers[2 * i].buffer,
                         res->buffers[2 * i + 1].buffer, 1, &region);
    }
    // This run's staging copies and every earlier submission's shader and
    // transfer work (workspaces, device buffers) before the dispatches.
    VkMemoryBarrier toShader{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    toShader.srcAccessMask =
        VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    toShader.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    vk.vkCmdPipelineBarrier(cb,
                            VK_PIPELINE_STAGE_TRANSFER_BIT |
                                VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                            &toShader, 0, nullptr, 0, nullptr);
    if (timed) {
      // The start is latched once every earlier command has completed
      // (BOTTOM_OF_PIPE: the staging copies above and every earlier
      // submission's work), so that the interval is the dispatches alone.
      // TOP_OF_PIPE, which waits for nothing, latched it while the copies
      // (or, for launches submitted back to back, the previous launch) were
      // still running, and counted them in.
      vk.vkCmdResetQueryPool(cb, slot.queries, 0, 2);
      vk.vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                             slot.queries, 0);
    }
    for (size_t k = 0; k < dispatches.size(); ++k) {
      const Dispatch &dp = dispatches[k];
      const Entry &e = entries[dp.entry];
      if (k) {
        // The previous dispatch's writes (split-KV: the partials) become
        // visible to this one's reads, and its reads finish before this
        // one's writes.
        VkMemoryBarrier between{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
        between.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
        between.dstAccessMask =
            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
        vk.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                                &between, 0, nullptr, 0, nullptr);
      }
      vk.vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, e.pipeline);
      vk.vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, e.layout,
                                 0, 1, &sets[k], 0, nullptr);
      if (!pushConstants.empty())
        vk.vkCmdPushConstants(cb, e.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                              static_cast<uint32_t>(pushConstants.size()),
                              pushConstants.data());
      vk.vkCmdDispatch(cb, dp.groups[0], dp.groups[1], dp.groups[2]);
    }
    if (timed)
      vk.vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                             slot.queries, 1);
    if (anyOutput) {
      VkMemoryBarrier toTransfer{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
      toTransfer.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
      toTransfer.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
      vk.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                              VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1,
                              &toTransfer, 0, nullptr, 0, nullptr);
      for (size_t i = 0; i < n; ++i) {
        if (!tensors[i].output || tensors[i].buffer)
          continue;
        VkBufferCopy region{0, 0, sizes[i]};
        vk.vkCmdCopyBuffer(cb, res->buffers[2 * i + 1].buffer,
                           res->buffers[2 * i].buffer, 1, &region);
      }
      VkMemoryBarrier toHost{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
      toHost.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
      toHost.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
      vk.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT,
                              VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &toHost, 0,
                              nullptr, 0, nullptr);
    }
    if (attn_status s = res->submit(error))
      return s;
    res->timed = timed;
    auto submission = std::make_shared<VulkanSubmission>(std::move(res),
                                                         tensors, sizes);
    if (wait) {
      if (attn_status s = submission->wait(error))
        return s;
      lastGpuMs = submission->kernelMs(); // lastRunGpuMs()
    }
    pending = std::move(submission);
    return ATTN_OK;
  }

private:
  /// The Vulkan objects of one entry point.
  struct Entry {
    VkDescriptorSetLayout setLayout = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    VkPipeline pipeline = VK_NULL_HANDLE;
  };

  attn_status initEntry(const EntryPointDesc &ep, Entry &e,
                        std::string &error) {
    auto &vk = d.vk;
    std::vector<VkDescriptorSetLayoutBinding> bindings(ep.numBuffers);
    for (uint32_t i = 0; i < ep.numBuffers; ++i) {
      bindings[i] = {};
      bindings[i].binding = i;
      bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      bindings[i].descriptorCount = 1;
      bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    VkDescriptorSetLayoutCreateInfo dslci{
        VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    dslci.bindingCount = ep.numBuffers;
    dslci.pBindings = bindings.data();
    VkResult r =
        vk.vkCreateDescriptorSetLayout(d.device, &dslci, nullptr, &e.setLayout);
    if (r != VK_SUCCESS)
      return backend(error, "vkCreateDescriptorSetLayout", r);
    VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0,
                              desc.pushConstantBytes};
    VkPipelineLayoutCreateInfo plci{
        VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    plci.setLayoutCount = 1;
    plci.pSetLayouts = &e.setLayout;
    plci.pushConstantRangeCount = desc.pushConstantBytes ? 1 : 0;
    plci.pPushConstantRanges = &range;
    r = vk.vkCreatePipelineLayout(d.device, &plci, nullptr, &e.layout);
    if (r != VK_SUCCESS)
      return backend(error, "vkCreatePipelineLayout", r);
    VkComputePipelineCreateInfo cpci{
        VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    cpci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    cpci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    cpci.stage.module = module;
    cpci.stage.pName = ep.name.c_str();
    VkPipelineShaderStageRequiredSubgroupSizeCreateInfo subgroupSize{
        VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO};
    // A required size goes through subgroup size control where the device
    // has it (createProgram checked the size is in range), even when it is
    // the default: then full subgroups are asked of that size rather than
    // of maxSubgroupSize.
    bool sized = false;
    if (desc.requiredSubgroupSize &&
        (desc.requiredSubgroupSize != d.info.subgroupSize ||
         d.info.subgroupSizeControl)) {
      subgroupSize.requiredSubgroupSize = desc.requiredSubgroupSize;
      cpci.stage.pNext = &subgroupSize;
      sized = true;
    }
    // Full subgroups where the kernels ask and the device can promise
    // them; otherwise the default-size subgroups are taken as they come
    // (full in practice for workgroups of whole subgroups).
    if (desc.requiredSubgroupSize && desc.requireFullSubgroups &&
        d.info.computeFullSubgroups &&
        (sized || d.info.maxSubgroupSize == desc.requiredSubgroupSize))
      cpci.stage.flags |=
          VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
    cpci.layout = e.layout;
    // (pipelineExecutableInfo is only ever set when the statistics were
    // asked for.)
    if (d.info.pipelineExecutableInfo)
      cpci.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
    r = vk.vkCreateComputePipelines(d.device, VK_NULL_HANDLE, 1, &cpci, nullptr,
                                    &e.pipeline);
    if (r != VK_SUCCESS) {
      e.pipeline = VK_NULL_HANDLE;
      return backend(error,
                     "vkCreateComputePipelines (entry '" + ep.name + "')", r);
    }
    if (d.pipelineStatsAsked)
      printPipelineStatistics(ep.name, e.pipeline);
    return ATTN_OK;
  }

  /// What the driver reports of the code it compiled for one entry point
  /// (VK_KHR_pipeline_executable_properties: registers, spills, shared
  /// memory, instruction counts, as the driver names them), one line per
  /// executable on stderr; a line saying so where the device has none.
  void printPipelineStatistics(const std::string &entry, VkPipeline pipeline) {
    if (!d.info.pipelineExecutableInfo) {
      static std::once_flag once;
      std::call_once(once, [&] {
        std::fprintf(stderr,
                     "attn vulkan: ATTN_VULKAN_PIPELINE_STATS: device '%s' "
                     "does not offer VK_KHR_pipeline_executable_properties; "
                     "no pipeline statistics\n",
                     d.info.name.c_str());
      });
      return;
    }
    VkPipelineInfoKHR pi{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
    pi.pipeline = pipeline;
    uint32_t count = 0;
    if (d.getExecutableProperties(d.device, &pi, &count, nullptr) !=
        VK_SUCCESS)
      return;
    std::vector<VkPipelineExecutablePropertiesKHR> props(
        count, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR});
    if (d.getExecutableProperties(d.device, &pi, &count, props.data()) !=
        VK_SUCCESS)
      return;
    for (uint32_t i = 0; i < count; ++i) {
      VkPipelineExecutableInfoKHR ei{
          VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
      ei.pipeline = pipeline;
      ei.executableIndex = i;
      uint32_t n = 0;
      if (d.getExecutableStatistics(d.device, &ei, &n, nullptr) != VK_SUCCESS)
        continue;
      std::vector<VkPipelineExecutableStatisticKHR> st(
          n, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
      if (d.getExecutableStatistics(d.device, &ei, &n, st.data()) !=
          VK_SUCCESS)
        continue;
      std::string line = "attn vulkan: pipeline '" + entry + "' executable " +
                         std::to_string(i) + " '" + props[i].name +
                         "' (subgroup " +
                         std::to_string(props[i].subgroupSize) + "):";
      for (uint32_t k = 0; k < n; ++k) {
        line += std::string(k ? "; " : " ") + st[k].name + " = ";
        switch (st[k].format) {
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
          line += st[k].value.b32 ? "true" : "false";
          break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
          line += std::to_string(st[k].value.i64);
          break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
          line += std::to_string(st[k].value.u64);
          break;
        default:
          line += std::to_string(st[k].value.f64);
          break;
        }
      }
      std::fprintf(stderr, "%s\n", line.c_str());
    }
  }

  Device &d;
  ProgramDesc desc;
  VkShaderModule module = VK_NULL_HANDLE;
  std::vector<Entry> entries;
  std::vector<Buffer> workspaces;
  /// Its launches' command buffers, fences, query and descriptor pools,
  /// reused launch after launch.
  std::shared_ptr<LaunchSlots> slots = std::make_shared<LaunchSlots>(d);
};

} // namespace

double attn::vulkan::lastRunGpuMs() { return lastGpuMs; }

attn_status attn::vulkan::checkBufferRanges(const DeviceInfo &info,
                                            const attn_spec &spec,
                                            std::string &error) {
  auto known = [](int64_t d) { return d == ATTN_DYNAMIC ? int64_t(1) : d; };
  const int64_t b = known(spec.batch), hq = known(spec.heads_q),
                hkv = known(spec.heads_kv), sq = known(spec.seq_q),
                skv = known(spec.seq_kv), d = spec.head_dim,
                dv = spec.value_dim ? spec.value_dim : spec.head_dim;
  const int64_t es = dtypeBytes(spec.dtype);
  struct Tensor {
    const char *name, *dims;
    int64_t shape[4];
    int64_t elemSize;
    bool present;
  } tensors[] = {
      {"q", "B x Hq x Sq x D", {b, hq, sq, d}, es, true},
      {"k", "B x Hkv x Skv x D", {b, hkv, skv, d}, es, true},
      {"v", "B x Hkv x Skv x Dv", {b, hkv, skv, dv}, es, true},
      {"mask", "B x Hq x Sq x Skv, staged unbroadcast", {b, hq, sq, skv},
       dtypeBytes(spec.mask_dtype), spec.mask != ATTN_MASK_NONE},
      {"out", "B x Hq x Sq x Dv", {b, hq, sq, dv}, es, true},
      {"lse", "B x Hq x Sq", {b, hq, sq, 1}, 4, spec.return_lse != 0}};
  for (const Tensor &t : tensors) {
    if (!t.present)
      continue;
    int64_t bytes = t.elemSize;
    bool fits = true;
    for (int64_t e : t.shape)
      fits = fits && e >= 0 && !__builtin_mul_overflow(bytes, e, &bytes) &&
             bytes <= int64_t(info.maxStorageBufferRange);
    if (fits)
      continue;
    error = std::string("vulkan: ") + t.name + " (" + t.dims + " = " +
            std::to_string(t.shape[0]) + " x " + std::to_string(t.shape[1]) +
            " x " + std::to_string(t.shape[2]) +
            (std::string(t.name) == "lse"
                 ? std::string()
                 : " x " + std::to_string(t.shape[3])) +
            ", " + std::to_string(t.elemSize) +
            "-byte elements) is more than the largest buffer a kernel can "
            "bind on device '" + info.name + "' (maxStorageBufferRange " +
            std::to_string(info.maxStorageBufferRange) + " bytes)";
    return ATTN_ERROR_UNSUPPORTED;
  }
  return ATTN_OK;
}

attn_status attn::vulkan::deviceInfo(DeviceInfo &info, std::string &error) {
  Device *d = nullptr;
  if (attn_status s = getDevice(d, error))
    return s;
  info = d->info;
  return ATTN_OK;
}

attn_status attn::vulkan::createProgram(const ProgramDesc &desc,
                                        std::unique_ptr<Program> &program,
                                        std::string &error) {
  Device *d = nullptr;
  if (attn_status s = getDevice(d, error))
    return s;
  if (desc.spirv.size() < 5 || desc.spirv[0] != 0x07230203u) {
    error = "vulkan: the program is not a SPIR-V module (bad magic number)";
    return ATTN_ERROR_INVALID_ARGUMENT;
  }
  if (desc.needsFloat16 &&
      !(d->info.shaderFloat16 && d->info.storageBuffer16BitAccess)) {
    error = "vulkan: device '" + d->info.name +
            "' lacks shaderFloat16 or storageBuffer16BitAccess, which f16 "
            "kernels need";
    return ATTN_ERROR_UNSUPPORTED;
  }
  if (desc.needsInt16 &&
      !(d->info.shaderInt16 && d->info.storageBuffer16BitAccess)) {
    error = "vulkan: device '" + d->info.name +
            "' lacks shaderInt16 or storageBuffer16BitAccess, which kernels "
            "loading bf16 as 16-bit integers need";
    return ATTN_ERROR_UNSUPPORTED;
  }
  if (desc.needsBFloat16 &&
      !(d->info.shaderBFloat16Type &&
        (!desc.needsCooperativeMatrix ||
         d->info.shaderBFloat16CooperativeMatrix))) {
    error = "vulkan: device '" + d->info.name +
            "' lacks VK_KHR_shader_bfloat16's shaderBFloat16Type" +
            (desc.needsCooperativeMatrix
                 ? std::string(" / shaderBFloat16CooperativeMatrix")
                 : std::string()) +
            ", which bf16 cooperative-matrix kernels need";
    return ATTN_ERROR_UNSUPPORTED;
  }
  if (desc.needsCooperativeMatrix &&
      !(d->info.cooperativeMatrix && d->info.vulkanMemoryModel &&
        d->info.apiVersion >= VK_API_VERSION_1_3)) {
    error = "vulkan: device '" + d->info.name +
            "' lacks VK_KHR_cooperative_matrix, the Vulkan memory model or "
            "Vulkan 1.3 (SPIR-V 1.6), which cooperative-matrix kernels need";
    return ATTN_ERROR_UNSUPPORTED;
  }
  if (desc.requiredSubgroupSize &&
      desc.requiredSubgroupSize != d->info.subgroupSize &&
      !(d->info.subgroupSizeControl &&
        desc.requiredSubgroupSize >= d->info.minSubgroupSize &&
        desc.requiredSubgroupSize <= d->info.maxSubgroupSize)) {
    error = "vulkan: the program needs subgroups of " +
            std::to_string(desc.requiredSubgroupSize) + " invocations; device '" +
            d->info.name + "' has " + std::to_string(d->info.subgroupSize) +
            (d->info.subgroupSizeControl
                 ? " (sizes " + std::to_string(d->info.minSubgroupSize) + ".." +
                       std::to_string(d->info.maxSubgroupSize) + ")"
                 : " and no subgroup size control");
    return ATTN_ERROR_UNSUPPORTED;
  }
  for (const EntryPointDesc &ep : desc.entries)
    if (ep.workgroupBytes > d->info.maxComputeSharedMemorySize) {
      error = "vulkan: entry point '" + ep.name + "' declares " +
              std::to_string(ep.workgroupBytes) +
              " bytes of workgroup memory; device '" + d->info.name +
              "' has " + std::to_string(d->info.maxComputeSharedMemorySize) +
              " (maxComputeSharedMemorySize): a kernel built for another "
              "device (attn-translate --vulkan-device) needs one with as "
              "much";
      return ATTN_ERROR_UNSUPPORTED;
    }
  if ((desc.needsSubgroupArithmetic && !d->info.subgroupArithmetic) ||
      (desc.needsSubgroupShuffle && !d->info.subgroupShuffle)) {
    error = "vulkan: device '" + d->info.name +
            "' lacks subgroup " +
            (desc.needsSubgroupArithmetic && !d->info.subgroupArithmetic
                 ? "arithmetic"
                 : "shuffle") +
            " operations in compute shaders "
            "(VkPhysicalDeviceSubgroupProperties), which the program uses";
    return ATTN_ERROR_UNSUPPORTED;
  }
  if (desc.pushConstantBytes > d->info.maxPushConstantsSize) {
    error = "vulkan: " + std::to_string(desc.pushConstantBytes) +
            " bytes of push constants exceed the device's limit of " +
            std::to_string(d->info.maxPushConstantsSize);
    return ATTN_ERROR_UNSUPPORTED;
  }
  std::vector<EntryPointDesc> entries = desc.entries;
  if (entries.empty())
    entries.push_back({desc.entry, desc.numBuffers});
  std::vector<std::string> names = spirvEntryPoints(desc.spirv);
  for (const EntryPointDesc &e : entries)
    if (std::find(names.begin(), names.end(), e.name) == names.end()) {
      std::string known;
      for (const std::string &n : names)
        known += (known.empty() ? "'" : ", '") + n + "'";
      error = "vulkan: the SPIR-V module has no entry point '" + e.name +
              "' (it has " + (known.empty() ? "none" : known) + ")";
      return ATTN_ERROR_INVALID_ARGUMENT;
    }
  auto p = std::make_unique<VulkanProgram>(*d, desc);
  if (attn_status s = p->init(error))
    return s;
  program = std::move(p);
  return ATTN_OK;
}

std::vector<std::string>
attn::vulkan::entryPointNames(const std::vector<uint32_t> &words) {
  return spirvEntryPoints(words);
}

attn_status attn::vulkan::createDeviceBuffer(uint64_t bytes,
                                             std::shared_ptr<DeviceBuffer> &out,
                                             std::string &error) {
  Device *d = nullptr;
  if (attn_status s = getDevice(d, error))
    return s;
  if (bytes == 0) {
    error = "vulkan: a device buffer of 0 bytes";
    return ATTN_ERROR_INVALID_ARGUMENT;
  }
  // Whole words (the kernels read 32-bit words), without wrapping.
  if (bytes > (uint64_t(1) << 62)) {
    error = "vulkan: a device buffer of " + std::to_string(bytes) +
            " bytes is more than 2^62";
    return ATTN_ERROR_INVALID_ARGUMENT;
  }
  auto buffer = std::make_shared<DeviceBuffer>(*d);
  const VkDeviceSize size = (bytes + 3) & ~VkDeviceSize(3);
  if (attn_status s = makeBuffer(*d, size,
                                 VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                     VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                     VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                 /*hostVisible=*/false, buffer->b, error))
    return s;
  buffer->bytes = bytes;
  out = std::move(buffer);
  return ATTN_OK;
}

uint64_t attn::vulkan::deviceBufferSize(const DeviceBuffer &buffer) {
  return buffer.bytes;
}

namespace {
/// Copies between host memory and [offset, offset + bytes) of a device
/// buffer through a staging buffer, after all earlier work on the queue
/// (launches in flight included), and waits for it.
attn_status copyDevice(DeviceBuffer &buffer, uint64_t offset, void *host,
                       uint64_t bytes, bool toDevice, std::string &error) {
  if (offset > buffer.bytes || bytes > buffer.bytes - offset) {
    error = "vulkan: [" + std::to_string(offset) + ", " +
            std::to_string(offset) + " + " + std::to_string(bytes) +
            ") is outside the device buffer of " +
            std::to_string(buffer.bytes) + " bytes";
    return ATTN_ERROR_INVALID_ARGUMENT;
  }
  if (bytes == 0)
    return ATTN_OK;
  Device &d = buffer.d;
  auto &vk = d.vk;
  // The copies' launch slots, reused by every copy; never freed (as the
  // device is not).
  static auto *copySlots =
      new std::shared_ptr<LaunchSlots>(std::make_shared<LaunchSlots>(d));
  RunResources res(d, *copySlots);
  res.buffers.resize(1);
  if (attn_status s = makeBuffer(d, bytes,
                                 VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                     VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                 /*hostVisible=*/true, res.buffers[0], error))
    return s;
  void *mapped = nullptr;
  VkResult r = vk.vkMapMemory(d.device, res.buffers[0].memory, 0,
                              VK_WHOLE_SIZE, 0, &mapped);
  if (r != VK_SUCCESS)
    return backend(error, "vkMapMemory", r);
  if (toDevice)
    std::memcpy(mapped, host, bytes);
  VkCommandBuffer cb;
  if (attn_status s = res.begin(cb, error)) {
    vk.vkUnmapMemory(d.device, res.buffers[0].memory);
    return s;
  }
  VkMemoryBarrier before{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  before.srcAccessMask =
      VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  before.dstAccessMask =
      VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  vk.vkCmdPipelineBarrier(cb,
                          VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
                              VK_PIPELINE_STAGE_TRANSFER_BIT,
                          VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &before, 0,
                          nullptr, 0, nullptr);
  VkBufferCopy region = toDevice ? VkBufferCopy{0, offset, bytes}
                                 : VkBufferCopy{offset, 0, bytes};
  if (toDevice)
    vk.vkCmdCopyBuffer(cb, res.buffers[0].buffer, buffer.b.buffer, 1, &region);
  else
    vk.vkCmdCopyBuffer(cb, buffer.b.buffer, res.buffers[0].buffer, 1, &region);
  VkMemoryBarrier after{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  after.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  after.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vk.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT,
                          VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &after, 0, nullptr,
                          0, nullptr);
  attn_status s = res.submit(error);
  if (s == ATTN_OK)
    s = res.wait(error);
  if (s == ATTN_OK && !toDevice)
    std::memcpy(host, mapped, bytes);
  vk.vkUnmapMemory(d.device, res.buffers[0].memory);
  return s;
}
} // namespace

attn_status attn::vulkan::uploadToDevice(DeviceBuffer &buffer, uint64_t offset,
                                         const void *src, uint64_t bytes,
                                         std::string &error) {
  return copyDevice(buffer, offset, const_cast<void *>(src), bytes,
                    /*toDevice=*/true, error);
}

attn_status attn::vulkan::downloadFromDevice(DeviceBuffer &buffer,
                                             uint64_t offset, void *dst,
                                             uint64_t bytes,
                                             std::string &error) {
  return copyDevice(buffer, offset, dst, bytes, /*toDevice=*/false, error);
}
