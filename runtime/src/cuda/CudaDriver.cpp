//===- CudaDriver.cpp - dlopen libcuda.so.1 and resolve the driver API ----===//
#include "CudaDriver.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

using namespace attn::cuda;

namespace {
struct Loaded {
  Driver driver{};
  bool ok = false;
  std::string error;
};

template <typename Fn>
bool resolve(void *lib, const char *name, Fn &fn, std::string &error) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
  if (!fn)
    error = std::string("the CUDA driver library lacks ") + name +
            " (driver too old?)";
  return fn != nullptr;
}

/// An entry point attn can do without: null when the driver lacks it.
template <typename Fn>
void resolveOptional(void *lib, const char *name, Fn &fn) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
}

Loaded load() {
  Loaded l;
  const char *name = std::getenv("ATTN_CUDA_DRIVER");
  if (!name || !*name)
    name = "libcuda.so.1";
  Driver &d = l.driver;
  if (!loadDriverLibrary(name, d, l.error))
    return l;
  if (CUresult r = d.cuInit(0)) {
    l.error = describe(d, "cuInit", r);
    return l;
  }
  int count = 0;
  if (CUresult r = d.cuDeviceGetCount(&count)) {
    l.error = describe(d, "cuDeviceGetCount", r);
    return l;
  }
  if (count == 0) {
    l.error = "the CUDA driver loaded but reports no device";
    return l;
  }
  l.ok = true;
  return l;
}
} // namespace

bool attn::cuda::loadDriverLibrary(const char *name, Driver &d,
                                   std::string &e) {
  d = Driver{};
  // RTLD_LOCAL: the driver's symbols stay out of the global namespace, so
  // a process that also links the CUDA runtime sees no clash.
  void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    e = std::string("cannot load the CUDA driver (") + name +
        "): " + (why ? why : "unknown dlopen error") +
        "; is the NVIDIA driver installed?";
    return false;
  }
  if (!resolve(lib, "cuInit", d.cuInit, e) ||
      !resolve(lib, "cuDriverGetVersion", d.cuDriverGetVersion, e) ||
      !resolve(lib, "cuDeviceGetCount", d.cuDeviceGetCount, e) ||
      !resolve(lib, "cuDeviceGet", d.cuDeviceGet, e) ||
      !resolve(lib, "cuDeviceGetAttribute", d.cuDeviceGetAttribute, e) ||
      !resolve(lib, "cuDeviceGetName", d.cuDeviceGetName, e) ||
      !resolve(lib, "cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain, e) ||
      !resolve(lib, "cuDevicePrimaryCtxRelease_v2", d.cuDevicePrimaryCtxRelease,
               e) ||
      !resolve(lib, "cuCtxGetCurrent", d.cuCtxGetCurrent, e) ||
      !resolve(lib, "cuCtxGetDevice", d.cuCtxGetDevice, e) ||
      !resolve(lib, "cuCtxPushCurrent_v2", d.cuCtxPushCurrent, e) ||
      !resolve(lib, "cuCtxPopCurrent_v2", d.cuCtxPopCurrent, e) ||
      !resolve(lib, "cuModuleLoadDataEx", d.cuModuleLoadDataEx, e) ||
      !resolve(lib, "cuModuleUnload", d.cuModuleUnload, e) ||
      !resolve(lib, "cuModuleGetFunction", d.cuModuleGetFunction, e) ||
      !resolve(lib, "cuFuncSetAttribute", d.cuFuncSetAttribute, e) ||
      !resolve(lib, "cuLaunchKernel", d.cuLaunchKernel, e) ||
      !resolve(lib, "cuGetErrorName", d.cuGetErrorName, e) ||
      !resolve(lib, "cuGetErrorString", d.cuGetErrorString, e)) {
    dlclose(lib);
    d = Driver{};
    return false;
  }
  // The stream-ordered allocator's pools (CUDA 11.2): only launches that
  // need a workspace use them, so an older driver still runs the others.
  // The plain names, as for cuLaunchKernel: a NULL stream means the legacy
  // default stream (cuda.h maps to the _ptsz variants only when built for
  // per-thread default streams).
  resolveOptional(lib, "cuMemPoolCreate", d.cuMemPoolCreate);
  resolveOptional(lib, "cuMemPoolDestroy", d.cuMemPoolDestroy);
  resolveOptional(lib, "cuMemPoolSetAttribute", d.cuMemPoolSetAttribute);
  resolveOptional(lib, "cuMemAllocFromPoolAsync", d.cuMemAllocFromPoolAsync);
  resolveOptional(lib, "cuMemFreeAsync", d.cuMemFreeAsync);
  // The library stays loaded for the life of the process: kernels and
  // contexts created through it may outlive any one attn context.
  return true;
}

const Driver *attn::cuda::getDriver(std::string &error) {
  static const Loaded loaded = load();
  if (!loaded.ok) {
    error = loaded.error;
    return nullptr;
  }
  return &loaded.driver;
}

std::string attn::cuda::describe(const Driver &driver, const char *call,
                                 CUresult result) {
  const char *name = nullptr, *text = nullptr;
  if (driver.cuGetErrorName(result, &name) != CUDA_SUCCESS || !name)
    name = "unknown CUresult";
  if (driver.cuGetErrorString(result, &text) != CUDA_SUCCESS || !text)
    text = "no description";
  return std::string(call) + " failed: " + name + " (" + std::to_string(result) +
         ", " + text + ")";
}
