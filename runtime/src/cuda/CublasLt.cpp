//===- CublasLt.cpp - dlopen cuBLASLt and resolve its matmul API ----------===//
#include "CublasLt.h"

#include <dlfcn.h>

#include <cstdlib>

using namespace attn::cuda;

namespace {
template <typename Fn>
bool resolve(void *lib, const char *name, Fn &fn, std::string &error) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
  if (!fn)
    error = std::string("the cuBLASLt library lacks ") + name +
            " (cuBLASLt older than 11.0?)";
  return fn != nullptr;
}

struct Loaded {
  Blas blas{};
  bool ok = false;
  std::string error;
};

Loaded load() {
  Loaded l;
  const char *named = std::getenv("ATTN_CUBLASLT");
  if (named && *named) {
    l.ok = loadBlasLibrary(named, l.blas, l.error);
    return l;
  }
  std::string first;
  for (const char *name : {"libcublasLt.so.13", "libcublasLt.so.12"})
    if (loadBlasLibrary(name, l.blas, l.error, /*loadedOnly=*/true)) {
      l.ok = true;
      return l;
    }
  for (const char *name : {"libcublasLt.so.13", "libcublasLt.so.12"}) {
    if (loadBlasLibrary(name, l.blas, l.error)) {
      l.ok = true;
      return l;
    }
    if (first.empty())
      first = l.error;
  }
  l.error = first + " (nor libcublasLt.so.12); attention layers on cuda run "
                    "their projections on cuBLASLt: install it (the CUDA "
                    "toolkit, or PyTorch's nvidia-cublas wheel) where the "
                    "loader finds it, or name it in ATTN_CUBLASLT";
  return l;
}
} // namespace

bool attn::cuda::loadBlasLibrary(const char *name, Blas &b, std::string &e,
                                 bool loadedOnly) {
  b = Blas{};
  void *lib =
      dlopen(name, RTLD_NOW | RTLD_LOCAL | (loadedOnly ? RTLD_NOLOAD : 0));
  if (!lib) {
    const char *why = dlerror();
    e = std::string("cannot load cuBLASLt (") + name +
        "): " + (why ? why : "unknown dlopen error");
    return false;
  }
  if (!resolve(lib, "cublasLtCreate", b.cublasLtCreate, e) ||
      !resolve(lib, "cublasLtDestroy", b.cublasLtDestroy, e) ||
      !resolve(lib, "cublasLtGetVersion", b.cublasLtGetVersion, e) ||
      !resolve(lib, "cublasLtGetStatusString", b.cublasLtGetStatusString, e) ||
      !resolve(lib, "cublasLtMatmulDescCreate", b.cublasLtMatmulDescCreate,
               e) ||
      !resolve(lib, "cublasLtMatmulDescDestroy", b.cublasLtMatmulDescDestroy,
               e) ||
      !resolve(lib, "cublasLtMatmulDescSetAttribute",
               b.cublasLtMatmulDescSetAttribute, e) ||
      !resolve(lib, "cublasLtMatrixLayoutCreate", b.cublasLtMatrixLayoutCreate,
               e) ||
      !resolve(lib, "cublasLtMatrixLayoutDestroy",
               b.cublasLtMatrixLayoutDestroy, e) ||
      !resolve(lib, "cublasLtMatmulPreferenceCreate",
               b.cublasLtMatmulPreferenceCreate, e) ||
      !resolve(lib, "cublasLtMatmulPreferenceDestroy",
               b.cublasLtMatmulPreferenceDestroy, e) ||
      !resolve(lib, "cublasLtMatmulPreferenceSetAttribute",
               b.cublasLtMatmulPreferenceSetAttribute, e) ||
      !resolve(lib, "cublasLtMatmulAlgoGetHeuristic",
               b.cublasLtMatmulAlgoGetHeuristic, e) ||
      !resolve(lib, "cublasLtMatmul", b.cublasLtMatmul, e)) {
    dlclose(lib);
    b = Blas{};
    return false;
  }
  // Stays loaded for the life of the process, as the driver does.
  return true;
}

const Blas *attn::cuda::getBlas(std::string &error) {
  static const Loaded loaded = load();
  if (!loaded.ok) {
    error = loaded.error;
    return nullptr;
  }
  return &loaded.blas;
}

std::string attn::cuda::describe(const Blas &blas, const char *call,
                                 cublasStatus_t status) {
  const char *name = blas.cublasLtGetStatusString(status);
  return std::string(call) + " failed: " + (name ? name : "unknown status") +
         " (" + std::to_string(status) + ")";
}
