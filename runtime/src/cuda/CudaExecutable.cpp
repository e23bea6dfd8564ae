//===- CudaExecutable.cpp - load a CUDA module, launch it on caller memory -===//
#include "CudaExecutable.h"
#include "CudaLayer.h"
#include "WorkspacePool.h"
#include "attn/runtime/KeyChunks.h"

#include "../Internal.h"
#include "attn/runtime/attn_cuda.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <vector>

using namespace attn;
using namespace attn::cuda;

namespace {

/// A kernel parameter that holds a workspace's address: packed as 0 while
/// a launch is checked, set once the workspace memory exists.
struct WorkspaceAddress {
  size_t param;     // index in Kernel::params
  size_t workspace; // index in KernelMetadata::workspaces
  ParamType type;
};

class CudaExecutable final : public Executable {
public:
  CudaExecutable(const Driver &d, KernelMetadata metadata, CUdevice device,
                 CUcontext context, CUmodule module,
                 std::vector<CUfunction> functions, int smCount)
      : d(d), metadata(std::move(metadata)), device(device), context(context),
        module(module), functions(std::move(functions)), smCount(smCount),
        pool(d, device, "split-KV workspace",
             "set the spec's kv_splits to 1"),
        noWorkspaces(this->metadata.workspaces.size(), 0),
        workspaceAddresses(this->metadata.kernels.size()) {
    const KernelMetadata &m = this->metadata;
    for (size_t k = 0; k < m.kernels.size(); ++k)
      for (size_t i = 0; i < m.kernels[k].params.size(); ++i) {
        const Param &p = m.kernels[k].params[i];
        if (p.field != ParamField::Data)
          continue;
        // The workspace packParams reads the parameter from (names are
        // unique, and never a launch tensor's).
        for (size_t w = 0; w < m.workspaces.size(); ++w)
          if (m.workspaces[w].name == p.tensor) {
            workspaceAddresses[k].push_back({i, w, p.type});
            break;
          }
      }
  }

  ~CudaExecutable() override {
    {
      ScopedContext scope(d, context);
      // cuMemPoolDestroy returns at once; the pool's memory goes back to
      // the device once the frees that earlier launches queued have run,
      // so kernels still in flight keep their workspaces.
      pool.destroy();
      if (scope.ok())
        d.cuModuleUnload(module);
    }
    d.cuDevicePrimaryCtxRelease(device);
  }

  void kernelInfo(KernelInfo &info) const override {
    // The tensor-core kernel is the one with cp.async's alignment rule.
    info.variant = metadata.alignBytes ? "tensor-cores" : "generic";
    char name[256] = {0};
    if (d.cuDeviceGetName(name, sizeof(name) - 1, device) == CUDA_SUCCESS)
      info.device = name;
    info.blockQ = metadata.kvSplits.blockQ;
    info.blockKv = metadata.kvSplits.blockKv;
    if (!info.blockKv && !metadata.kernels.empty())
      info.blockKv = metadata.kernels.front().blockKv;
    info.kvSplits = lastSplits.load(std::memory_order_relaxed);
  }

  attn_status run(const KernelArgs &args, std::string &error) override {
    // The alternative the launch's query length selects (parseMetadata
    // guarantees exactly one for every Sq the spec admits), then its
    // kernels for the split count.
    int64_t sq = args.q.shape[2];
    if (firstKernelFor(metadata, sq) < 0) {
      error = "cuda: no kernel of this artifact runs at Sq = " +
              std::to_string(sq);
      return ATTN_ERROR_INVALID_ARGUMENT;
    }
    int64_t splits = chooseKvSplits(metadata, args, smCount);
    lastSplits.store(std::max<int64_t>(splits, 0), std::memory_order_relaxed);
    if (splits < 1) {
      error = "cuda: Skv = " + std::to_string(args.k.shape[2]) +
              " needs split-KV chunks of at most " +
              std::to_string(::attn::kMaxChunkKeys) +
              " keys for accurate f32 sums, more than this artifact's "
              "kernels take (" +
              (metadata.kvSplits.max > 0
                   ? "at most " + std::to_string(metadata.kvSplits.max)
                   : std::string("no split-KV")) +
              "); compile it again with this runtime";
      return ATTN_ERROR_UNSUPPORTED;
    }
    // Everything that can reject the launch is computed before anything is
    // allocated or launched, so bad input leaves the stream untouched. The
    // parameters are packed once, with workspace addresses 0; the real
    // addresses are stored into them once the workspace is allocated.
    struct Launch {
      size_t kernel;
      unsigned grid[3];
      PackedParams packed;
    };
    Launch launches[kMaxKernels];
    size_t count = 0;
    // The workspaces the launched kernels read (alternatives may have
    // workspaces of their own shapes).
    std::vector<bool> used(metadata.workspaces.size(), false);
    bool anyUsed = false;
    for (size_t i = 0; i < metadata.kernels.size(); ++i) {
      const Kernel &k = metadata.kernels[i];
      if (!k.runs(sq, splits))
        continue;
      for (const WorkspaceAddress &w : workspaceAddresses[i]) {
        used[w.workspace] = true;
        anyUsed = true;
      }
      Launch &l = launches[count];
      l.kernel = i;
      if (!computeGrid(k, args, splits, l.grid, error) ||
          !packParams(metadata, k, args, splits, noWorkspaces, l.packed,
                      error)) {
        if (metadata.kernels.size() > 1)
          error = "kernel '" + k.entry + "': " + error;
        return ATTN_ERROR_INVALID_ARGUMENT;
      }
      ++count;
    }
    // Workspaces hold the partial results of a split launch; with one split
    // the kernels write the output directly and get null pointers.
    bool allocate = splits > 1 && anyUsed;
    std::vector<WorkspaceLayout> layouts;
    uint64_t totalBytes = 0;
    if (allocate) {
      if (!layoutWorkspaces(metadata, args, splits, layouts, totalBytes,
                            error, &used))
        return ATTN_ERROR_INVALID_ARGUMENT;
      if (!d.hasMemoryPools()) {
        error = "cuda: this launch splits the keys " + std::to_string(splits) +
                " ways and needs " + std::to_string(totalBytes) +
                " bytes of workspace, but the CUDA driver lacks " +
                pool.missingEntryPoints() +
                " (stream-ordered memory pools, CUDA 11.2+); update the "
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
    // Stream-ordered, from this executable's own pool: the memory is the
    // stream's from this point until the free below, so later launches on
    // the stream reuse it without a synchronization, and other streams
    // never touch it meanwhile. The pool keeps freed memory (see
    // WorkspacePool.h), so a launch after a synchronization finds it there.
    CUdeviceptr base = 0;
    if (allocate) {
      CUmemoryPool p = nullptr;
      if (attn_status s = pool.get(p, error); s != ATTN_OK)
        return s;
      if (CUresult r = d.cuMemAllocFromPoolAsync(&base, totalBytes, p, stream)) {
        error = "cuda: " + describe(d, "cuMemAllocFromPoolAsync", r) +
                " allocating " + std::to_string(totalBytes) +
                " bytes of split-KV workspace (" + std::to_string(splits) +
                " splits)";
        return r == CUDA_ERROR_NOT_SUPPORTED ? ATTN_ERROR_UNSUPPORTED
                                             : ATTN_ERROR_BACKEND;
      }
      for (size_t i = 0; i < count; ++i)
        for (const WorkspaceAddress &w : workspaceAddresses[launches[i].kernel])
          launches[i].packed.set(w.param, w.type,
                                 base + layouts[w.workspace].offset);
    }

    attn_status status = ATTN_OK;
    for (size_t i = 0; i < count; ++i) {
      Launch &l = launches[i];
      const Kernel &k = metadata.kernels[l.kernel];
      std::vector<void *> params = l.packed.pointers();
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
        error = "cuda: " + describe(d, "cuMemFreeAsync", r) +
                " freeing the split-KV workspace";
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
  /// Split-KV workspaces' memory: created by the first launch that needs
  /// it (an executable that never splits never has one), destroyed with
  /// the executable before its module.
  WorkspacePool pool;
  std::atomic<int64_t> lastSplits{0}; // of the last launch (kernelInfo)
  /// What packParams gets while a launch is checked: one 0 per workspace.
  std::vector<uint64_t> noWorkspaces;
  /// Per kernel, its parameters that hold a workspace's address.
  std::vector<std::vector<WorkspaceAddress>> workspaceAddresses;
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
  /// A layer whose attention kernel was loaded ahead of time (its GEMMs
  /// need no compiler).
  attn_status compileMha(const attn_mha_spec &spec, LayerCompileResult &result,
                         std::string &error) override {
    return compileLayer(spec, *this, result, error);
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
  return createExecutableWithDriver(*dp, metadata, binary, executable, error);
}

attn_status cuda::createExecutableWithDriver(
    const Driver &d, const KernelMetadata &metadata, const std::string &binary,
    std::unique_ptr<Executable> &executable, std::string &error) {
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
  if (metadata.kernels.empty() || metadata.kernels.size() > kMaxKernels) {
    error = "cuda: the kernel metadata has " +
            std::to_string(metadata.kernels.size()) + " kernels; expected 1 to " +
            std::to_string(kMaxKernels);
    return ATTN_ERROR_INVALID_ARGUMENT;
  }
  // Exactly one alternative for every launch (the JIT's metadata, built in
  // memory, is checked here as a file's is when read).
  if (!checkLaunchConditions(metadata, error)) {
    error = "cuda: " + error;
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
