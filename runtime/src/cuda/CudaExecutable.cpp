//===- CudaExecutable.cpp - load a CUDA module, launch it on caller memory -===//
#include "CudaDriver.h"

#include "../Internal.h"
#include "attn/runtime/CudaKernel.h"
#include "attn/runtime/attn_cuda.h"

#include <map>
#include <mutex>
#include <vector>

using namespace attn;
using namespace attn::cuda;

namespace {

/// Makes a context current for a scope and restores the caller's after.
class ScopedContext {
public:
  ScopedContext(const Driver &d, CUcontext ctx) : d(d) {
    pushed = d.cuCtxPushCurrent(ctx) == CUDA_SUCCESS;
  }
  ~ScopedContext() {
    CUcontext ignored;
    if (pushed)
      d.cuCtxPopCurrent(&ignored);
  }
  bool ok() const { return pushed; }

private:
  const Driver &d;
  bool pushed = false;
};

class CudaExecutable final : public Executable {
public:
  CudaExecutable(const Driver &d, KernelMetadata metadata, CUdevice device,
                 CUcontext context, CUmodule module, CUfunction function)
      : d(d), metadata(std::move(metadata)), device(device), context(context),
        module(module), function(function) {}

  ~CudaExecutable() override {
    {
      ScopedContext scope(d, context);
      if (scope.ok())
        d.cuModuleUnload(module);
    }
    d.cuDevicePrimaryCtxRelease(device);
  }

  attn_status run(const KernelArgs &args, std::string &error) override {
    unsigned grid[3];
    if (!computeGrid(metadata, args, grid, error))
      return ATTN_ERROR_INVALID_ARGUMENT;
    PackedParams packed;
    if (!packParams(metadata, args, packed, error))
      return ATTN_ERROR_INVALID_ARGUMENT;
    std::vector<void *> params = packed.pointers();
    // The caller's stream belongs to the primary context (what PyTorch and
    // the CUDA runtime use), the one the module was loaded into.
    ScopedContext scope(d, context);
    if (!scope.ok()) {
      error = "cuda: cannot make the kernel's context current";
      return ATTN_ERROR_BACKEND;
    }
    CUresult r = d.cuLaunchKernel(
        function, grid[0], grid[1], grid[2], metadata.block[0],
        metadata.block[1], metadata.block[2], metadata.sharedBytes,
        static_cast<CUstream>(args.stream), params.data(), nullptr);
    if (r != CUDA_SUCCESS) {
      error = "cuda: " + describe(d, "cuLaunchKernel", r) + " (entry '" +
              metadata.entry + "', grid " + std::to_string(grid[0]) + "x" +
              std::to_string(grid[1]) + "x" + std::to_string(grid[2]) +
              ", block " + std::to_string(metadata.block[0]) + "x" +
              std::to_string(metadata.block[1]) + "x" +
              std::to_string(metadata.block[2]) + ", " +
              std::to_string(metadata.sharedBytes) + " B shared)";
      return ATTN_ERROR_BACKEND;
    }
    return ATTN_OK;
  }

private:
  const Driver &d;
  KernelMetadata metadata;
  CUdevice device;
  CUcontext context;
  CUmodule module;
  CUfunction function;
};

/// Artifacts registered by attn_cuda_load_artifact.
struct Store {
  std::mutex mutex;
  struct Entry {
    std::shared_ptr<const KernelMetadata> metadata;
    std::string binary;
  };
  std::map<detail::CacheKey, Entry> entries;
};
Store &store() {
  static Store s;
  return s;
}

/// Serves attn_compile for the cuda target from loaded artifacts when no
/// JIT is linked in.
class ArtifactCompiler final : public Compiler {
public:
  attn_status available(std::string &error) override {
    return driverAvailable(error);
  }
  attn_status compile(const attn_spec &spec, CompileResult &result,
                      std::string &error) override {
    std::string binary;
    auto metadata = findArtifact(spec, &binary);
    if (!metadata) {
      error = "cuda: no loaded artifact matches this spec and no CUDA JIT is "
              "linked in (load one with attn_cuda_load_artifact, or link "
              "libattn.so)";
      return ATTN_ERROR_UNSUPPORTED;
    }
    return createExecutable(*metadata, binary, result.executable, error);
  }
};
} // namespace

attn_status cuda::driverAvailable(std::string &error) {
  std::string why;
  if (!getDriver(why)) {
    error = "cuda: " + why;
    return ATTN_ERROR_UNAVAILABLE;
  }
  return ATTN_OK;
}

attn_status cuda::createExecutable(const KernelMetadata &metadata,
                                   const std::string &binary,
                                   std::unique_ptr<Executable> &executable,
                                   std::string &error) {
  std::string why;
  const Driver *dp = getDriver(why);
  if (!dp) {
    error = "cuda: " + why;
    return ATTN_ERROR_UNAVAILABLE;
  }
  const Driver &d = *dp;
  auto fail = [&](const char *call, CUresult r) {
    error = "cuda: " + describe(d, call, r);
    return ATTN_ERROR_BACKEND;
  };

  // The device of the current context, else device 0.
  CUdevice device = 0;
  CUcontext current = nullptr;
  if (CUresult r = d.cuCtxGetCurrent(&current))
    return fail("cuCtxGetCurrent", r);
  if (current) {
    if (CUresult r = d.cuCtxGetDevice(&device))
      return fail("cuCtxGetDevice", r);
  } else if (CUresult r = d.cuDeviceGet(&device, 0)) {
    return fail("cuDeviceGet", r);
  }
  CUcontext context = nullptr;
  if (CUresult r = d.cuDevicePrimaryCtxRetain(&context, device))
    return fail("cuDevicePrimaryCtxRetain", r);
  bool ok = false;
  struct Release {
    const Driver &d;
    CUdevice device;
    bool &ok;
    ~Release() {
      if (!ok)
        d.cuDevicePrimaryCtxRelease(device);
    }
  } release{d, device, ok};

  ScopedContext scope(d, context);
  if (!scope.ok()) {
    error = "cuda: cannot make the primary context current";
    return ATTN_ERROR_BACKEND;
  }
  int major = 0, minor = 0, optin = 0;
  if (CUresult r = d.cuDeviceGetAttribute(
          &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device))
    return fail("cuDeviceGetAttribute", r);
  if (CUresult r = d.cuDeviceGetAttribute(
          &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device))
    return fail("cuDeviceGetAttribute", r);
  if (CUresult r = d.cuDeviceGetAttribute(
          &optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device))
    return fail("cuDeviceGetAttribute", r);
  if (metadata.sharedBytes > static_cast<unsigned>(optin)) {
    error = "cuda: the kernel needs " + std::to_string(metadata.sharedBytes) +
            " bytes of shared memory per block; device " +
            std::to_string(device) + " (sm_" + std::to_string(major) +
            std::to_string(minor) + ") grants at most " + std::to_string(optin);
    return ATTN_ERROR_UNSUPPORTED;
  }

  // PTX is JIT-compiled by the driver; its log says why when it fails
  // (say, PTX for sm_90a on an sm_80 device).
  std::string image = binary;
  if (metadata.format == BinaryFormat::PTX)
    image.push_back('\0');
  std::vector<char> infoLog(8192, 0), errorLog(8192, 0);
  int options[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                   CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {infoLog.data(),
                    reinterpret_cast<void *>(static_cast<uintptr_t>(infoLog.size())),
                    errorLog.data(),
                    reinterpret_cast<void *>(static_cast<uintptr_t>(errorLog.size()))};
  CUmodule module = nullptr;
  if (CUresult r = d.cuModuleLoadDataEx(&module, image.data(), 4, options,
                                        values)) {
    error = "cuda: " + describe(d, "cuModuleLoadDataEx", r) + " loading " +
            (metadata.format == BinaryFormat::PTX ? "PTX" : "cubin") +
            " for " + metadata.chip + " on sm_" + std::to_string(major) +
            std::to_string(minor);
    if (errorLog[0])
      error += ":\n" + std::string(errorLog.data());
    return ATTN_ERROR_BACKEND;
  }
  CUfunction function = nullptr;
  CUresult r = d.cuModuleGetFunction(&function, module, metadata.entry.c_str());
  if (r == CUDA_SUCCESS && metadata.sharedBytes > 48 * 1024)
    // Blocks get at most 48 KB of dynamic shared memory unless the kernel
    // opts in to more.
    if ((r = d.cuFuncSetAttribute(function,
                                  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                  static_cast<int>(metadata.sharedBytes))))
      error = "cuda: " + describe(d, "cuFuncSetAttribute", r);
  if (r != CUDA_SUCCESS) {
    if (error.empty())
      error = "cuda: " + describe(d, "cuModuleGetFunction", r) + " for '" +
              metadata.entry + "'";
    d.cuModuleUnload(module);
    return ATTN_ERROR_BACKEND;
  }
  ok = true;
  executable = std::make_unique<CudaExecutable>(d, metadata, device, context,
                                                module, function);
  return ATTN_OK;
}

attn_status cuda::currentDeviceChip(std::string &chip, std::string &error) {
  std::string why;
  const Driver *dp = getDriver(why);
  if (!dp) {
    error = "cuda: " + why;
    return ATTN_ERROR_UNAVAILABLE;
  }
  const Driver &d = *dp;
  CUdevice device = 0;
  CUcontext current = nullptr;
  CUresult r = d.cuCtxGetCurrent(&current);
  if (r == CUDA_SUCCESS)
    r = current ? d.cuCtxGetDevice(&device) : d.cuDeviceGet(&device, 0);
  int major = 0, minor = 0;
  if (r == CUDA_SUCCESS)
    r = d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                               device);
  if (r == CUDA_SUCCESS)
    r = d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                               device);
  if (r != CUDA_SUCCESS) {
    error = "cuda: " + describe(d, "querying the device", r);
    return ATTN_ERROR_BACKEND;
  }
  chip = "sm_" + std::to_string(major) + std::to_string(minor);
  return ATTN_OK;
}

std::shared_ptr<const KernelMetadata>
cuda::findArtifact(const attn_spec &spec, std::string *binary) {
  Store &s = store();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.entries.find(detail::makeCacheKey(spec, ATTN_TARGET_CUDA));
  if (it == s.entries.end())
    return nullptr;
  if (binary)
    *binary = it->second.binary;
  return it->second.metadata;
}

extern "C" attn_status attn_cuda_load_artifact(const char *metadataPath,
                                               attn_spec *spec) {
  if (!metadataPath) {
    setLastError("attn_cuda_load_artifact: metadata_path is NULL");
    return ATTN_ERROR_INVALID_ARGUMENT;
  }
  auto metadata = std::make_shared<KernelMetadata>();
  std::string binary, error;
  if (!readArtifact(metadataPath, *metadata, binary, error)) {
    setLastError("attn_cuda_load_artifact: " + error);
    return ATTN_ERROR_INVALID_ARGUMENT;
  }
  {
    Store &s = store();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.entries[detail::makeCacheKey(metadata->spec, ATTN_TARGET_CUDA)] = {
        metadata, std::move(binary)};
  }
  // Without a JIT, the artifacts are the cuda target's compiler.
  if (!detail::findCompiler(ATTN_TARGET_CUDA))
    registerCompiler(ATTN_TARGET_CUDA, std::make_shared<ArtifactCompiler>());
  if (spec)
    *spec = metadata->spec;
  setLastError("");
  return ATTN_OK;
}
