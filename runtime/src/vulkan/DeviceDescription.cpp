//===- DeviceDescription.cpp - a Vulkan device's properties as JSON ------===//
//
// What the compiler reads of a device (attn::vulkan::DeviceInfo), written
// and read back, so that kernels can be built on a machine without that
// device: vk-info prints the selected device's description on the GPU
// machine, attn-translate --attn-to-spirv --vulkan-device=FILE builds the
// kernel the JIT would build there.
//
//===----------------------------------------------------------------------===//
#include "attn/runtime/Vulkan.h"

#include "../Json.h"

#include <cstdint>
#include <sstream>

namespace attn::vulkan {
namespace {

using json::Fields;
using json::Json;

constexpr const char *kFormat = "attn-vulkan-device";
constexpr int64_t kVersion = 1;

/// VkComponentTypeKHR (vulkan_core.h) by name.
const std::pair<const char *, uint32_t> kComponents[] = {
    {"f16", 0}, {"f32", 1}, {"f64", 2},  {"s8", 3},  {"s16", 4},
    {"s32", 5}, {"s64", 6}, {"u8", 7},   {"u16", 8}, {"u32", 9},
    {"u64", 10}, {"bf16", 1000141000}};
/// VkScopeKHR by name.
const std::pair<const char *, uint32_t> kScopes[] = {
    {"device", 1}, {"workgroup", 2}, {"subgroup", 3}, {"queue_family", 5}};

template <size_t N>
std::string nameOf(const std::pair<const char *, uint32_t> (&table)[N],
                   uint32_t v) {
  for (const auto &p : table)
    if (p.second == v)
      return p.first;
  return std::to_string(v);
}

/// A name of `table`, or a value the table does not name as its decimal
/// string (what nameOf writes for it).
template <size_t N>
bool valueOf(const std::pair<const char *, uint32_t> (&table)[N],
             const std::string &s, uint32_t &out) {
  for (const auto &p : table)
    if (s == p.first) {
      out = p.second;
      return true;
    }
  if (s.empty() || s.size() > 10 ||
      s.find_first_not_of("0123456789") != std::string::npos)
    return false;
  uint64_t v = std::stoull(s);
  if (v > UINT32_MAX)
    return false;
  out = static_cast<uint32_t>(v);
  return true;
}

bool u32(Fields &f, const char *key, uint32_t &out, int64_t lo = 0) {
  int64_t v = 0;
  if (!f.integer(key, v, lo, UINT32_MAX))
    return false;
  out = static_cast<uint32_t>(v);
  return true;
}

bool parse(const std::string &text, DeviceInfo &d, std::string &error) {
  Json root;
  if (!json::Reader(text).parse(root, error))
    return false;
  if (root.kind != Json::Object) {
    error = "the top level must be an object";
    return false;
  }
  Fields top(root, "", error);
  std::string format, api;
  int64_t version = 0;
  if (!top.str("format", format))
    return false;
  if (format != kFormat) {
    error = "'format' is '" + format + "'; expected '" + kFormat + "'";
    return false;
  }
  if (!top.integer("version", version, kVersion, kVersion) ||
      !top.str("name", d.name) || !top.str("api", api) ||
      !u32(top, "device_type", d.deviceType))
    return false;
  unsigned major = 0, minor = 0, patch = 0;
  char tail = 0;
  if (std::sscanf(api.c_str(), "%u.%u.%u%c", &major, &minor, &patch, &tail) !=
          3 ||
      major > 7 || minor > 1023 || patch > 4095) {
    error = "'api' is '" + api + "'; expected MAJOR.MINOR.PATCH";
    return false;
  }
  d.apiVersion = (major << 22) | (minor << 12) | patch;
  struct Flag {
    const char *key;
    bool *out;
  } flags[] = {{"shaderFloat16", &d.shaderFloat16},
               {"storageBuffer16BitAccess", &d.storageBuffer16BitAccess},
               {"shaderInt16", &d.shaderInt16},
               {"shaderInt64", &d.shaderInt64},
               {"shaderBFloat16Type", &d.shaderBFloat16Type},
               {"shaderBFloat16CooperativeMatrix",
                &d.shaderBFloat16CooperativeMatrix},
               {"subgroupSizeControl", &d.subgroupSizeControl},
               {"computeFullSubgroups", &d.computeFullSubgroups},
               {"subgroupArithmetic", &d.subgroupArithmetic},
               {"subgroupShuffle", &d.subgroupShuffle},
               {"cooperativeMatrix", &d.cooperativeMatrix},
               {"vulkanMemoryModel", &d.vulkanMemoryModel}};
  for (const Flag &f : flags)
    if (!top.boolean(f.key, *f.out))
      return false;
  int64_t loops = 0;
  if (!u32(top, "subgroupSize", d.subgroupSize) ||
      !u32(top, "minSubgroupSize", d.minSubgroupSize) ||
      !u32(top, "maxSubgroupSize", d.maxSubgroupSize) ||
      !u32(top, "maxComputeWorkgroupSubgroups",
           d.maxComputeWorkgroupSubgroups) ||
      !u32(top, "maxComputeSharedMemorySize", d.maxComputeSharedMemorySize) ||
      !u32(top, "maxComputeWorkGroupInvocations",
           d.maxComputeWorkGroupInvocations, 1) ||
      !u32(top, "maxPushConstantsSize", d.maxPushConstantsSize) ||
      !u32(top, "maxStorageBufferRange", d.maxStorageBufferRange, 1) ||
      !top.integer("maxLoopIterations", loops, 0, INT64_MAX) ||
      !u32(top, "computeUnits", d.computeUnits))
    return false;
  d.maxLoopIterations = static_cast<uint64_t>(loops);
  if (d.subgroupSize & (d.subgroupSize - 1)) {
    error = "'subgroupSize' is " + std::to_string(d.subgroupSize) +
            "; it must be a power of two (or 0: not reported)";
    return false;
  }
  const Json *count = top.need("maxComputeWorkGroupCount", Json::Array,
                               "an array of three integers");
  if (!count)
    return false;
  if (count->items.size() != 3) {
    error = "'maxComputeWorkGroupCount' must be an array of three integers";
    return false;
  }
  for (int i = 0; i < 3; ++i) {
    const Json &c = count->items[i];
    if (c.kind != Json::Number || !c.integral || c.integer < 1 ||
        c.integer > UINT32_MAX) {
      error = "'maxComputeWorkGroupCount' must be an array of three "
              "integers in [1, 4294967295]";
      return false;
    }
    d.maxComputeWorkGroupCount[i] = static_cast<uint32_t>(c.integer);
  }
  // What only launches use.
  if (top.has("minStorageBufferOffsetAlignment")) {
    int64_t a = 0;
    if (!top.integer("minStorageBufferOffsetAlignment", a, 0, 1 << 16))
      return false;
    d.minStorageBufferOffsetAlignment = static_cast<uint64_t>(a);
  }
  if (top.has("timestamps") && !top.boolean("timestamps", d.timestamps))
    return false;
  if (top.has("timestampPeriodNs") &&
      !top.real("timestampPeriodNs", d.timestampPeriodNs))
    return false;
  const Json *shapes =
      top.need("coopMatShapes", Json::Array, "an array of objects");
  if (!shapes)
    return false;
  d.coopMatShapes.clear();
  for (size_t i = 0; i < shapes->items.size(); ++i) {
    const Json &o = shapes->items[i];
    const std::string where = "coopMatShapes[" + std::to_string(i) + "]";
    if (o.kind != Json::Object) {
      error = "'" + where + "' must be an object";
      return false;
    }
    Fields f(o, where + ": ", error);
    CoopMatShape s;
    std::string mnk, a, b, c, r, scope;
    if (!f.str("MxNxK", mnk) || !f.str("A", a) || !f.str("B", b) ||
        !f.str("C", c) || !f.str("result", r) || !f.str("scope", scope) ||
        !f.boolean("saturating", s.saturating))
      return false;
    char extra = 0;
    if (std::sscanf(mnk.c_str(), "%ux%ux%u%c", &s.m, &s.n, &s.k, &extra) !=
            3 ||
        !s.m || !s.n || !s.k || s.m > 1024 || s.n > 1024 || s.k > 1024) {
      error = where + ": 'MxNxK' is '" + mnk + "'; expected e.g. 16x16x16";
      return false;
    }
    struct Named {
      const char *key;
      const std::string *text;
      uint32_t *out;
    } types[] = {{"A", &a, &s.aType},
                 {"B", &b, &s.bType},
                 {"C", &c, &s.cType},
                 {"result", &r, &s.resultType}};
    for (const Named &t : types)
      if (!valueOf(kComponents, *t.text, *t.out)) {
        error = where + ": '" + t.key + "' is '" + *t.text +
                "'; expected a component type (f16, f32, bf16, s8, ...)";
        return false;
      }
    if (!valueOf(kScopes, scope, s.scope)) {
      error = where + ": 'scope' is '" + scope +
              "'; expected subgroup, workgroup, device or queue_family";
      return false;
    }
    d.coopMatShapes.push_back(s);
  }
  return true;
}

} // namespace

std::string writeDeviceDescription(const DeviceInfo &d) {
  std::ostringstream os;
  auto b = [](bool v) { return v ? "true" : "false"; };
  os << "{\"format\": \"" << kFormat << "\", \"version\": " << kVersion
     << ",\n \"name\": " << json::quote(d.name) << ", \"index\": " << d.index
     << ", \"api\": \"" << (d.apiVersion >> 22) << "."
     << ((d.apiVersion >> 12) & 0x3ff) << "." << (d.apiVersion & 0xfff)
     << "\", \"device_type\": " << d.deviceType << ",\n"
     << " \"shaderFloat16\": " << b(d.shaderFloat16)
     << ", \"storageBuffer16BitAccess\": " << b(d.storageBuffer16BitAccess)
     << ", \"shaderInt16\": " << b(d.shaderInt16)
     << ", \"shaderInt64\": " << b(d.shaderInt64) << ",\n"
     << " \"shaderBFloat16Type\": " << b(d.shaderBFloat16Type)
     << ", \"shaderBFloat16CooperativeMatrix\": "
     << b(d.shaderBFloat16CooperativeMatrix) << ",\n"
     << " \"subgroupSize\": " << d.subgroupSize
     << ", \"minSubgroupSize\": " << d.minSubgroupSize
     << ", \"maxSubgroupSize\": " << d.maxSubgroupSize
     << ", \"subgroupSizeControl\": " << b(d.subgroupSizeControl)
     << ", \"computeFullSubgroups\": " << b(d.computeFullSubgroups)
     << ", \"maxComputeWorkgroupSubgroups\": "
     << d.maxComputeWorkgroupSubgroups << ",\n"
     << " \"subgroupArithmetic\": " << b(d.subgroupArithmetic)
     << ", \"subgroupShuffle\": " << b(d.subgroupShuffle)
     << ", \"cooperativeMatrix\": " << b(d.cooperativeMatrix)
     << ", \"vulkanMemoryModel\": " << b(d.vulkanMemoryModel) << ",\n"
     << " \"maxComputeSharedMemorySize\": " << d.maxComputeSharedMemorySize
     << ", \"maxComputeWorkGroupCount\": [" << d.maxComputeWorkGroupCount[0]
     << ", " << d.maxComputeWorkGroupCount[1] << ", "
     << d.maxComputeWorkGroupCount[2] << "], \"maxComputeWorkGroupInvocations\": "
     << d.maxComputeWorkGroupInvocations
     << ", \"maxPushConstantsSize\": " << d.maxPushConstantsSize
     << ", \"maxStorageBufferRange\": " << d.maxStorageBufferRange
     << ", \"minStorageBufferOffsetAlignment\": "
     << d.minStorageBufferOffsetAlignment << ",\n"
     << " \"maxLoopIterations\": " << d.maxLoopIterations
     << ", \"computeUnits\": " << d.computeUnits
     << ", \"timestamps\": " << b(d.timestamps)
     << ", \"timestampPeriodNs\": " << json::number(d.timestampPeriodNs)
     << ",\n \"coopMatShapes\": [";
  for (size_t i = 0; i < d.coopMatShapes.size(); ++i) {
    const CoopMatShape &s = d.coopMatShapes[i];
    os << (i ? "," : "") << "\n  {\"MxNxK\": \"" << s.m << "x" << s.n << "x"
       << s.k << "\", \"A\": \"" << nameOf(kComponents, s.aType)
       << "\", \"B\": \"" << nameOf(kComponents, s.bType) << "\", \"C\": \""
       << nameOf(kComponents, s.cType) << "\", \"result\": \""
       << nameOf(kComponents, s.resultType)
       << "\", \"saturating\": " << b(s.saturating) << ", \"scope\": \""
       << nameOf(kScopes, s.scope) << "\"}";
  }
  os << "]}\n";
  return os.str();
}

bool parseDeviceDescription(const std::string &text, DeviceInfo &info,
                            std::string &error) {
  DeviceInfo d;
  if (!parse(text, d, error)) {
    // The JSON reader's and Fields' messages begin "metadata"; this is a
    // device description.
    for (const char *prefix : {"metadata: ", "metadata is "})
      if (error.rfind(prefix, 0) == 0) {
        error.erase(0, std::char_traits<char>::length(prefix));
        break;
      }
    error = "device description: " + error;
    return false;
  }
  info = std::move(d);
  return true;
}

} // namespace attn::vulkan
