//===- Vulkan.h - the vulkan backend's runtime: device, programs, runs --*- C++ -*-===//
//
// What the Vulkan compiler (lib/JIT/VulkanCompiler.cpp) and tests use to run
// SPIR-V compute kernels. libvulkan.so.1 is dlopen'ed on first use, so
// nothing links against Vulkan and no Vulkan header is needed here.
//
// Memory model: the attn C API takes caller memory "on the target". For the
// vulkan target that is either host memory or device buffers the caller
// allocated through the runtime (attn_vulkan.h, DeviceBuffer here). A run
// copies every host input into a device buffer through a host-visible
// staging buffer (packing strided tensors densely), dispatches, and copies
// the host outputs back into the caller's strided memory; tensors in device
// buffers are bound where they are, densely packed, nothing copied. Nothing
// is written to a host output unless the dispatch succeeded.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_VULKAN_H
#define ATTN_RUNTIME_VULKAN_H

#include "attn/runtime/Backend.h"
#include "attn/runtime/attn.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace attn::vulkan {

/// One VK_KHR_cooperative_matrix configuration (A: MxK, B: KxN, C/R: MxN).
/// Component types use VkComponentTypeKHR values (0 = f16, 1 = f32, ...);
/// scope uses VkScopeKHR (3 = subgroup).
struct CoopMatShape {
  uint32_t m = 0, n = 0, k = 0;
  uint32_t aType = 0, bType = 0, cType = 0, resultType = 0;
  bool saturating = false;
  uint32_t scope = 0;
};

/// What the selected device can do, as far as the kernels care.
struct DeviceInfo {
  std::string name;
  uint32_t index = 0;          // in vkEnumeratePhysicalDevices order
  uint32_t apiVersion = 0;     // VK_MAKE_API_VERSION encoding
  uint32_t deviceType = 0;     // VkPhysicalDeviceType
  bool storageBuffer16BitAccess = false;
  bool shaderFloat16 = false;
  bool shaderInt64 = false;    // dropout (its seed and Philox) needs it
  bool shaderInt16 = false;    // bf16 buffers, loaded as 16-bit integers
  /// VK_KHR_shader_bfloat16: bf16 in shaders, and as cooperative-matrix
  /// components (the coopmat kernel's bf16 form).
  bool shaderBFloat16Type = false;
  bool shaderBFloat16CooperativeMatrix = false;
  bool subgroupSizeControl = false;
  /// VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT allowed.
  bool computeFullSubgroups = false;
  uint32_t subgroupSize = 0;
  uint32_t minSubgroupSize = 0, maxSubgroupSize = 0;
  /// Subgroups per workgroup with subgroup size control (0: not reported).
  uint32_t maxComputeWorkgroupSubgroups = 0;
  /// VkPhysicalDeviceSubgroupProperties (Vulkan 1.1): arithmetic
  /// (reductions) and shuffle operations, each counted only when
  /// supportedStages includes the compute stage.
  bool subgroupArithmetic = false;
  bool subgroupShuffle = false;
  bool cooperativeMatrix = false; // extension present and feature enabled
  bool vulkanMemoryModel = false;  // 1.2 core or VK_KHR_vulkan_memory_model
  std::vector<CoopMatShape> coopMatShapes;
  uint32_t maxComputeSharedMemorySize = 0;
  uint32_t maxComputeWorkGroupCount[3] = {0, 0, 0};
  uint32_t maxComputeWorkGroupInvocations = 0;
  uint32_t maxPushConstantsSize = 0;
  uint32_t maxStorageBufferRange = 0;
  /// Where a binding may start in a buffer (device-buffer tensors' offsets).
  uint64_t minStorageBufferOffsetAlignment = 0;
  /// Loop iterations one invocation may run in total before the driver
  /// silently ends its loops; 0 = no such limit known. llvmpipe (lavapipe)
  /// has one: gallivm counts every iteration of every loop of a shader
  /// invocation against LP_MAX_TGSI_LOOP_ITERATIONS (65535), then breaks.
  uint64_t maxLoopIterations = 0;
  /// The device's compute units (multiprocessors), where it reports them:
  /// VK_NV_shader_sm_builtins' shaderSMCount, VK_AMD_shader_core_properties'
  /// engines x arrays x CUs per array; ATTN_VULKAN_COMPUTE_UNITS=N
  /// overrides; 0 = unknown (lavapipe, most others). The JIT's automatic
  /// split of the keys sizes the grid to it.
  uint32_t computeUnits = 0;
  bool timestamps = false;     // the compute queue supports timestamp queries
  /// VK_KHR_pipeline_executable_properties' pipelineExecutableInfo,
  /// enabled only with ATTN_VULKAN_PIPELINE_STATS=1: the driver reports
  /// what it compiled each kernel to (registers, spills, ...), printed for
  /// every pipeline.
  bool pipelineExecutableInfo = false;
  double timestampPeriodNs = 0.0;
};

/// Returns the device, opening it on first use (process-wide, thread-safe).
/// Device selection: ATTN_VULKAN_DEVICE is either an index into the
/// enumerated devices or a case-insensitive substring of a device name;
/// without it, the first discrete GPU, else integrated, else any device.
/// ATTN_VULKAN_LOADER overrides the loader's file name (for tests).
/// Fails with ATTN_ERROR_UNAVAILABLE and a message saying what is missing
/// (loader, instance, device) and how to get it; a failed open is retried
/// on the next call.
attn_status deviceInfo(DeviceInfo &info, std::string &error);

/// A device description: `info` as JSON (format "attn-vulkan-device",
/// version 1; vk-info prints the selected device's), every field the
/// compiler's choices read (features, subgroups, limits, compute units,
/// cooperative-matrix shapes), so that a kernel can be built for a device
/// this machine does not have (attn-translate --attn-to-spirv
/// --vulkan-device=FILE).
std::string writeDeviceDescription(const DeviceInfo &info);

/// Reads writeDeviceDescription's text: format, version, and every key it
/// writes, typed and in range (minStorageBufferOffsetAlignment,
/// timestamps and timestampPeriodNs, which only launches use, may be
/// left out). On failure returns false with `error` naming the key.
bool parseDeviceDescription(const std::string &text, DeviceInfo &info,
                            std::string &error);

/// Whether the tensors of `spec` fit `info`'s storage buffers
/// (maxStorageBufferRange; the runtime stages each tensor densely, a
/// broadcast mask at its full [B, Hq, Sq, Skv] extent). Dynamic dimensions
/// are left out, so the sizes are lower bounds: callers pass a spec whose
/// dimensions are the shapes they are about to allocate (attn-run, before
/// it generates inputs) or the static ones (the compiler). Returns ATTN_OK,
/// or ATTN_ERROR_UNSUPPORTED with `error` naming the first that does not.
attn_status checkBufferRanges(const DeviceInfo &info, const attn_spec &spec,
                              std::string &error);

/// A device-local storage buffer the caller owns (attn_vulkan_buffer_*),
/// on the process's device. Shared: a run in flight holds it too.
struct DeviceBuffer;

/// Allocates `bytes` (> 0) of device-local memory (rounded up to whole
/// 32-bit words). ATTN_ERROR_OUT_OF_MEMORY when the device has none left.
attn_status createDeviceBuffer(uint64_t bytes,
                               std::shared_ptr<DeviceBuffer> &buffer,
                               std::string &error);
/// The bytes it was created with.
uint64_t deviceBufferSize(const DeviceBuffer &buffer);
/// Copies host memory into [offset, offset + bytes) of `buffer`, or back,
/// after every run submitted before (in queue order), and waits for the
/// copy. ATTN_ERROR_INVALID_ARGUMENT when the range is outside the buffer.
attn_status uploadToDevice(DeviceBuffer &buffer, uint64_t offset,
                           const void *src, uint64_t bytes,
                           std::string &error);
attn_status downloadFromDevice(DeviceBuffer &buffer, uint64_t offset,
                               void *dst, uint64_t bytes, std::string &error);

/// The OpEntryPoint names of a SPIR-V module.
std::vector<std::string> entryPointNames(const std::vector<uint32_t> &words);

/// One host tensor bound to a storage buffer: rank-1..4 strided view with
/// `elemSize`-byte elements. The device buffer holds it densely packed
/// (row-major over `shape`), which is what the kernels index.
struct HostTensor {
  void *data = nullptr;
  int rank = 0;
  int64_t shape[4] = {0, 0, 0, 0};
  int64_t strides[4] = {0, 0, 0, 0}; // in elements; 0 = broadcast
  size_t elemSize = 0;
  bool input = true;   // copied host -> device before the dispatch
  bool output = false; // copied device -> host after it
  /// Set: the tensor already lies densely packed in this device buffer at
  /// byte `offset` (a multiple of minStorageBufferOffsetAlignment); it is
  /// bound there, `data` and `strides` are not used, nothing is copied.
  std::shared_ptr<DeviceBuffer> buffer;
  uint64_t offset = 0;
};

/// One entry point of a program's SPIR-V module.
struct EntryPointDesc {
  std::string name;        // OpEntryPoint name
  uint32_t numBuffers = 0; // storage buffers at set 0, bindings 0..n-1
  /// The workgroup memory it declares, in bytes: a device with less
  /// (maxComputeSharedMemorySize) is refused (0: not known).
  uint64_t workgroupBytes = 0;
};

/// What a SPIR-V module needs to be launched.
struct ProgramDesc {
  std::vector<uint32_t> spirv;
  std::string entry;           // OpEntryPoint name
  uint32_t numBuffers = 0;     // storage buffers at set 0, bindings 0..n-1
  /// Several entry points of the module (split-KV: the partial and the
  /// merge kernel), each its own compute pipeline with its own descriptor
  /// set layout; when not empty it replaces `entry` and `numBuffers`, and
  /// Program::runDispatches names them by index.
  std::vector<EntryPointDesc> entries;
  /// Device-local buffers the dispatches share (split-KV's partial outputs
  /// and lse), in bytes: created once with the program and kept for its
  /// lifetime, never staged (the host neither fills nor reads them).
  std::vector<uint64_t> workspaceBytes;
  uint32_t pushConstantBytes = 0;
  bool needsFloat16 = false;   // shaderFloat16 + 16-bit storage
  bool needsInt16 = false;     // shaderInt16 + 16-bit storage (bf16 as i16)
  /// BFloat16TypeKHR (+ BFloat16CooperativeMatrixKHR with cooperative
  /// matrices): VK_KHR_shader_bfloat16's features.
  bool needsBFloat16 = false;
  /// CooperativeMatrixKHR + the Vulkan memory model (SPIR-V 1.6: Vulkan 1.3).
  bool needsCooperativeMatrix = false;
  /// The workgroup must be one subgroup of this size (0: any). Set through
  /// subgroup size control when the device's default differs.
  uint32_t requiredSubgroupSize = 0;
  /// With requiredSubgroupSize: every entry point's workgroup x size is a
  /// multiple of it and the kernels need whole subgroups
  /// (VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT where the
  /// device has computeFullSubgroups; elsewhere such workgroups get full
  /// subgroups of the default size in practice).
  bool requireFullSubgroups = false;
  /// The module uses subgroup arithmetic / shuffles (GroupNonUniform-
  /// Arithmetic / -Shuffle): refused on devices without them in compute.
  bool needsSubgroupArithmetic = false;
  bool needsSubgroupShuffle = false;
};

/// What one storage-buffer binding of a dispatch is: one of the run's host
/// tensors, or one of the program's workspaces.
struct BufferRef {
  bool workspace = false;
  uint32_t index = 0; // into the run's tensors or ProgramDesc::workspaceBytes
};

/// One vkCmdDispatch of a program's entry point.
struct Dispatch {
  uint32_t entry = 0; // index into ProgramDesc::entries (0: the single entry)
  uint32_t groups[3] = {1, 1, 1};
  std::vector<BufferRef> bindings; // binding i of the entry point
};

/// A compute pipeline (one per entry point) on the device. Runs execute in
/// submission order on the device's one queue, each after the writes of
/// those before it (runs of a program share its workspaces).
class Program {
public:
  virtual ~Program() = default;
  /// Stages `buffers` (one per binding, in order), dispatches
  /// `groups[0..2]` workgroups of the (first) entry point, copies outputs
  /// back. `gpuMs`, when not null, receives the dispatch's time from
  /// timestamp queries (negative when the queue has none).
  virtual attn_status run(const std::vector<HostTensor> &buffers,
                          const std::vector<uint8_t> &pushConstants,
                          const uint32_t groups[3], double *gpuMs,
                          std::string &error) = 0;
  /// Stages each of `tensors` once (inputs in), records `dispatches` in
  /// order in one command buffer with a compute-to-compute memory barrier
  /// (shader writes -> shader reads and writes) between consecutive ones,
  /// submits, waits, and copies the outputs back. `gpuMs` covers the whole
  /// sequence. Push constants (if the program has them) go to every
  /// dispatch.
  virtual attn_status runDispatches(const std::vector<HostTensor> &tensors,
                                    const std::vector<uint8_t> &pushConstants,
                                    const std::vector<Dispatch> &dispatches,
                                    double *gpuMs, std::string &error) = 0;
  /// runDispatches without the wait unless `wait`: stages the host inputs,
  /// submits, and returns the run in `pending` (its wait() copies the host
  /// outputs back and reports the dispatches' time). Runs on the queue
  /// execute in submission order, each after the earlier ones' writes.
  virtual attn_status submit(const std::vector<HostTensor> &tensors,
                             const std::vector<uint8_t> &pushConstants,
                             const std::vector<Dispatch> &dispatches,
                             bool wait,
                             std::shared_ptr<attn::Submission> &pending,
                             std::string &error) = 0;
};

/// The time of the dispatches of the calling thread's last run
/// (Program::run or runDispatches, e.g. the one inside attn_launch), from
/// timestamp queries around them, in ms: without the staging copies and
/// host packing that a launch on host memory also takes. Negative when the
/// queue has no timestamps, the run failed, or none has run on this thread.
double lastRunGpuMs();

/// Creates a pipeline per entry point from SPIR-V, and the workspaces. Fails
/// with ATTN_ERROR_UNSUPPORTED when the device lacks a feature the program
/// needs or a workspace exceeds maxStorageBufferRange, ATTN_ERROR_BACKEND
/// when the driver rejects the module (nothing created is kept then).
attn_status createProgram(const ProgramDesc &desc,
                          std::unique_ptr<Program> &program,
                          std::string &error);

} // namespace attn::vulkan

#endif // ATTN_RUNTIME_VULKAN_H
