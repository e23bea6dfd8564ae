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
                 CUcontext context, CUmodule module,
                 std::vector<CUfunction> functions, int smCount)
      : d(d), metadata(std::move(metadata)), device(device), context(context),
        module(module), functions(std::move(functions)), smCount(smCount) {}

  ~CudaExecutable() override {
    {
      ScopedContext scope(d, context);
      if (scope.ok())
        d.cuModuleUnload(module);
    }
    d.cuDevicePrimaryCtxRelease(device);
  }

  attn_status run(const KernelArgs &args, std::string &error) override {
    int64_t splits = chooseKvSplits(metadata, args, smCount);
    // Everything that can reject the launch is computed before anything is
    // allocated or launched, so bad input leaves the stream untouched.
    struct Launch {
      size_t kernel;
      unsigned grid[3];
    };
    std::vector<Launch> launches;
    std::vector<uint64_t> noWorkspaces(metadata.workspaces.size(), 0);
    PackedParams packed;
    for (size_t i = 0; i < metadata.kernels.size(); ++i) {
      const Kernel &k = metadata.kernels[i];
      if (k.onlyWhenSplit && splits == 1)
        continue;
      Launch l{i, {}};
      if (!computeGrid(k, args, splits, l.grid, error) ||
          !packParams(metadata, k, args, splits, noWorkspaces, packed, error)) {
        if (metadata.kernels.size() > 1)
          error = "kernel '" + k.entry + "': " + error;
        return ATTN_ERROR_INVALID_ARGUMENT;
      }
      launches.push_back(l);
    }
    // Workspaces hold the partial results of a split launch; with one split
    // the kernels write the output directly and get null pointers.
    bool allocate = splits > 1 && !metadata.workspaces.empty();
    std::vector<WorkspaceLayout> layouts;
    uint64_t totalBytes = 0;
    if (allocate) {
      if (!layoutWorkspaces(metadata, args, splits, layouts, totalBytes,
                            error))
        return ATTN_ERROR_INVALID_ARGUMENT;
      if (!d.cuMemAllocAsync || !d.cuMemFreeAsync) {
        error = "cuda: this launch splits the keys " + std::to_string(splits) +
                " ways and needs " + std::to_string(totalBytes) +
                " bytes of workspace, but the CUDA driver lacks "
                "cuMemAllocAsync/cuMemFreeAsync (CUDA 11.2+); update the "
                "driver, or set the spec's kv_splits to 1";
        return ATTN_ERROR_UNSUPPORTED;
      }
    }

    // The caller's stream belongs to the primary context (what PyTorch and
    // the CUDA runtime use), the one the module was loaded into.
    ScopedContext scope(d, context);
    if (!scope.ok()) {
      error = "cuda: cannot make the kernel's context current";
      return ATTN_ERROR_BACKEND;
    }
    CUstream stream = static_cast<CUstream>(args.stream);
    // Stream-ordered: the memory is the stream's from this point until the
    // free below, so it is reused by later launches on the stream without
    // a synchronization, and never touched by other streams meanwhile.
    CUdeviceptr base = 0;
    std::vector<uint64_t> pointers(metadata.workspaces.size(), 0);
    if (allocate) {
      if (CUresult r = d.cuMemAllocAsync(&base, totalBytes, stream)) {
        error = "cuda: " + describe(d, "cuMemAllocAsync", r) + " allocating " +
                std::to_string(totalBytes) + " bytes of split-KV workspace (" +
                std::to_string(splits) + " splits)";
        return r == CUDA_ERROR_NOT_SUPPORTED ? ATTN_ERROR_UNSUPPORTED
                                             : ATTN_ERROR_BACKEND;
      }
      for (size_t i = 0; i < layouts.size(); ++i)
        pointers[i] = base + layouts[i].offset;
    }

    attn_status status = ATTN_OK;
    for (const Launch &l : launches) {
      const Kernel &k = metadata.kernels[l.kernel];
      // Checked above with null workspaces; only their addresses differ.
      if (!packParams(metadata, k, args, splits, pointers, packed, error)) {
        status = ATTN_ERROR_INVALID_ARGUMENT;
        break;
      }
      std::vector<void *> params = packed.pointers();
      CUresult r = d.cuLaunchKernel(functions[l.kernel], l.grid[0], l.grid[1],
                                    l.grid[2], k.block[0], k.block[1],
                                    k.block[2], k.sharedBytes, stream,
                                    params.data(), nullptr);
      if (r != CUDA_SUCCESS) {
        error = "cuda: " + describe(d, "cuLaunchKernel", r) + " (entry '" +
                k.entry + "', grid " + std::to_string(l.grid[0]) + "x" +
                std::to_string(l.grid[1]) + "x" + std::to_string(l.grid[2]) +
                ", block " + std::to_string(k.block[0]) + "x" +
                std::to_string(k.block[1]) + "x" + std::to_string(k.block[2]) +
                ", " + std::to_string(k.sharedBytes) + " B shared";
        if (splits > 1)
          error += ", " + std::to_string(splits) + " splits";
        error += ")";
        status = ATTN_ERROR_BACKEND;
        break;
      }
    }
    // Freed on the same stream, after the kernels queued above (also when
    // a later one failed to launch); the first error is the one reported.
    if (allocate) {
      CUresult r = d.cuMemFreeAsync(base, stream);
      if (r != CUDA_SUCCESS && status == ATTN_OK) {
        error = "cuda: " + describe(d, "cuMemFreeAsync", r);
        status = ATTN_ERROR_BACKEND;
      }
    }
    return status;
  }

private:
  const Driver &d;
  KernelMetadata metadata;
  CUdevice device;
  CUcontext context;
  CUmodule module;
  std::vector<CUfunction> functions; // one per metadata.kernels entry
  int smCount;                       // the device's multiprocessors
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
  int major = 0, minor = 0, optin = 0, smCount = 0;
  if (CUresult r = d.cuDeviceGetAttribute(
          &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device))
    return fail("cuDeviceGetAttribute", r);
  if (CUresult r = d.cuDeviceGetAttribute(
          &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device))
    return fail("cuDeviceGetAttribute", r);
  if (CUresult r = d.cuDeviceGetAttribute(
          &optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device))
    return fail("cuDeviceGetAttribute", r);
  // chooseKvSplits sizes split launches to fill the multiprocessors.
  if (CUresult r = d.cuDeviceGetAttribute(
          &smCount, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device))
    return fail("cuDeviceGetAttribute", r);
  if (metadata.kernels.empty()) {
    error = "cuda: the kernel metadata has no kernel";
    return ATTN_ERROR_INVALID_ARGUMENT;
  }
  for (const Kernel &k : metadata.kernels)
    if (k.sharedBytes > static_cast<unsigned>(optin)) {
      error = "cuda: kernel '" + k.entry + "' needs " +
              std::to_string(k.sharedBytes) +
              " bytes of shared memory per block; device " +
              std::to_string(device) + " (sm_" + std::to_string(major) +
              std::to_string(minor) + ") grants at most " +
              std::to_string(optin);
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
  std::vector<CUfunction> functions;
  for (const Kernel &k : metadata.kernels) {
    CUfunction function = nullptr;
    CUresult r = d.cuModuleGetFunction(&function, module, k.entry.c_str());
    if (r != CUDA_SUCCESS) {
      error = "cuda: " + describe(d, "cuModuleGetFunction", r) + " for '" +
              k.entry + "'";
    } else if (k.sharedBytes > 48 * 1024) {
      // Blocks get at most 48 KB of dynamic shared memory unless the
      // kernel opts in to more.
      r = d.cuFuncSetAttribute(function,
                               CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                               static_cast<int>(k.sharedBytes));
      if (r != CUDA_SUCCESS)
        error = "cuda: " + describe(d, "cuFuncSetAttribute", r) + " for '" +
                k.entry + "' (" + std::to_string(k.sharedBytes) +
                " bytes of dynamic shared memory)";
    }
    if (r != CUDA_SUCCESS) {
      d.cuModuleUnload(module);
      return ATTN_ERROR_BACKEND;
    }
    functions.push_back(function);
  }
  ok = true;
  executable = std::make_unique<CudaExecutable>(
      d, metadata, device, context, module, std::move(functions), smCount);
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
