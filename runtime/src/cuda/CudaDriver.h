//===- CudaDriver.h - the CUDA driver API, resolved from libcuda.so.1 at run time -===//
//
// The runtime has no link-time CUDA dependency: the few driver entry points
// it needs are declared here (types and values as in cuda.h, which the
// cuda-runtime tests check against the real header when it is installed)
// and looked up with dlopen/dlsym the first time a CUDA kernel is needed.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_SRC_CUDA_CUDADRIVER_H
#define ATTN_RUNTIME_SRC_CUDA_CUDADRIVER_H

#include <cstddef>
#include <string>

namespace attn {
namespace cuda {

using CUresult = int;
using CUdevice = int;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUdeviceptr = unsigned long long; // 64-bit builds, as in cuda.h
using CUmemoryPool = struct CUmemPoolHandle_st *;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
constexpr CUresult CUDA_ERROR_NOT_SUPPORTED = 801;
// CUjit_option values.
constexpr int CU_JIT_INFO_LOG_BUFFER = 3;
constexpr int CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4;
constexpr int CU_JIT_ERROR_LOG_BUFFER = 5;
constexpr int CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;
constexpr int CU_JIT_LOG_VERBOSE = 12;
// CUfunction_attribute / CUdevice_attribute values.
constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;
constexpr int CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115;
// Memory pools: CUmemAllocationType, CUmemAllocationHandleType,
// CUmemLocationType and CUmemPool_attribute values.
constexpr int CU_MEM_ALLOCATION_TYPE_PINNED = 1;
constexpr int CU_MEM_HANDLE_TYPE_NONE = 0;
constexpr int CU_MEM_LOCATION_TYPE_DEVICE = 1;
constexpr int CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4;

struct CUmemLocation {
  int type; // CUmemLocationType
  int id;   // the device ordinal for CU_MEM_LOCATION_TYPE_DEVICE
};

/// cuMemPoolCreate's properties, laid out as cuda.h's CUmemPoolProps_v1
/// (88 bytes since CUDA 11.2; maxSize and usage were carved out of
/// `reserved` later, and a zero there means what it meant before).
struct CUmemPoolProps {
  int allocType;   // CUmemAllocationType
  int handleTypes; // CUmemAllocationHandleType
  CUmemLocation location;
  void *win32SecurityAttributes;
  size_t maxSize;       // 0: the system's default
  unsigned short usage; // 0: no special usage
  unsigned char reserved[54];
};
static_assert(sizeof(CUmemPoolProps) == 88, "CUmemPoolProps is 88 bytes");

/// The driver entry points attn uses. Names are the exported symbols
/// (cuda.h maps cuCtxPushCurrent to cuCtxPushCurrent_v2 and so on). All
/// are required except the stream-ordered allocator's memory pools, which
/// split-KV workspaces need and drivers before CUDA 11.2 lack: those are
/// null there (hasMemoryPools says whether all of them are present).
struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDriverGetVersion)(int *);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuCtxGetCurrent)(CUcontext *);
  CUresult (*cuCtxGetDevice)(CUdevice *);
  CUresult (*cuCtxPushCurrent)(CUcontext);
  CUresult (*cuCtxPopCurrent)(CUcontext *);
  CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned, int *,
                                 void **);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, unsigned, CUstream,
                             void **, void **);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  // Optional (CUDA 11.2+): null when the driver lacks them.
  CUresult (*cuMemPoolCreate)(CUmemoryPool *, const CUmemPoolProps *);
  CUresult (*cuMemPoolDestroy)(CUmemoryPool);
  CUresult (*cuMemPoolSetAttribute)(CUmemoryPool, int, void *);
  CUresult (*cuMemAllocFromPoolAsync)(CUdeviceptr *, size_t, CUmemoryPool,
                                      CUstream);
  CUresult (*cuMemFreeAsync)(CUdeviceptr, CUstream);

  /// Whether every memory-pool entry point above was found.
  bool hasMemoryPools() const {
    return cuMemPoolCreate && cuMemPoolDestroy && cuMemPoolSetAttribute &&
           cuMemAllocFromPoolAsync && cuMemFreeAsync;
  }
};

/// Opens `library` with dlopen and resolves the entry points above (the
/// optional ones null where absent), without calling any of them. False
/// with `error` set when the library cannot be opened or lacks a required
/// entry point. The library stays loaded for the life of the process.
bool loadDriverLibrary(const char *library, Driver &driver, std::string &error);

/// The driver, loaded and initialized (cuInit(0) succeeded, at least one
/// device) on first use; null with `error` set when it cannot be. The
/// answer is computed once per process. `ATTN_CUDA_DRIVER` in the
/// environment overrides the library name (tests point it at a missing
/// file to exercise the unavailable path on machines that have a GPU).
const Driver *getDriver(std::string &error);

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
  ScopedContext(const ScopedContext &) = delete;
  ScopedContext &operator=(const ScopedContext &) = delete;
  bool ok() const { return pushed; }

private:
  const Driver &d;
  bool pushed = false;
};

/// "cuFoo failed: CUDA_ERROR_X (description)" for a failed call.
std::string describe(const Driver &driver, const char *call, CUresult result);

} // namespace cuda
} // namespace attn

#endif // ATTN_RUNTIME_SRC_CUDA_CUDADRIVER_H
