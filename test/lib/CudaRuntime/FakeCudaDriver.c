/*===- FakeCudaDriver.c - a stand-in for libcuda.so.1's exported names ----===*
 *
 * Built three times (test/lib/CudaRuntime/CMakeLists.txt) so that the
 * cuda-runtime tests can check what loadDriverLibrary resolves: with every
 * entry point attn looks up (ATTN_FAKE_CUDA_ALL), without the memory-pool
 * ones (ATTN_FAKE_CUDA_NO_POOLS, like a driver before CUDA 11.2), and
 * without cuLaunchKernel (ATTN_FAKE_CUDA_NO_LAUNCH, a required one). The
 * tests only resolve names and call the pool entry points, each of which
 * answers its own code so a test can tell which symbol a pointer reached.
 *===----------------------------------------------------------------------===*/
#include <stddef.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT int cuInit(unsigned flags) { (void)flags; return 0; }
EXPORT int cuDriverGetVersion(int *v) { (void)v; return 0; }
EXPORT int cuDeviceGetCount(int *n) { (void)n; return 0; }
EXPORT int cuDeviceGet(int *d, int i) { (void)d; (void)i; return 0; }
EXPORT int cuDeviceGetAttribute(int *v, int a, int d) {
  (void)v; (void)a; (void)d; return 0;
}
EXPORT int cuDeviceGetName(char *s, int n, int d) {
  (void)s; (void)n; (void)d; return 0;
}
EXPORT int cuDevicePrimaryCtxRetain(void **c, int d) {
  (void)c; (void)d; return 0;
}
EXPORT int cuDevicePrimaryCtxRelease_v2(int d) { (void)d; return 0; }
EXPORT int cuCtxGetCurrent(void **c) { (void)c; return 0; }
EXPORT int cuCtxGetDevice(int *d) { (void)d; return 0; }
EXPORT int cuCtxPushCurrent_v2(void *c) { (void)c; return 0; }
EXPORT int cuCtxPopCurrent_v2(void **c) { (void)c; return 0; }
EXPORT int cuModuleLoadDataEx(void **m, const void *i, unsigned n, int *o,
                              void **v) {
  (void)m; (void)i; (void)n; (void)o; (void)v; return 0;
}
EXPORT int cuModuleUnload(void *m) { (void)m; return 0; }
EXPORT int cuModuleGetFunction(void **f, void *m, const char *n) {
  (void)f; (void)m; (void)n; return 0;
}
EXPORT int cuFuncSetAttribute(void *f, int a, int v) {
  (void)f; (void)a; (void)v; return 0;
}
#ifndef ATTN_FAKE_CUDA_NO_LAUNCH
EXPORT int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz,
                          unsigned bx, unsigned by, unsigned bz, unsigned sh,
                          void *s, void **p, void **e) {
  (void)f; (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz;
  (void)sh; (void)s; (void)p; (void)e;
  return 0;
}
#endif
EXPORT int cuGetErrorName(int r, const char **s) { (void)r; *s = "FAKE"; return 0; }
EXPORT int cuGetErrorString(int r, const char **s) { (void)r; *s = "fake"; return 0; }

#ifndef ATTN_FAKE_CUDA_NO_POOLS
EXPORT int cuMemPoolCreate(void **pool, const void *props) {
  (void)pool; (void)props; return 1001;
}
EXPORT int cuMemPoolDestroy(void *pool) { (void)pool; return 1002; }
EXPORT int cuMemPoolSetAttribute(void *pool, int attr, void *value) {
  (void)pool; (void)attr; (void)value; return 1003;
}
EXPORT int cuMemAllocFromPoolAsync(unsigned long long *p, size_t n,
                                   void *pool, void *s) {
  (void)p; (void)n; (void)pool; (void)s; return 1004;
}
EXPORT int cuMemFreeAsync(unsigned long long p, void *s) {
  (void)p; (void)s; return 1005;
}
#endif
