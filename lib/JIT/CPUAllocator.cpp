//===- CPUAllocator.cpp - checked heap buffers for the cpu kernels --------===//
//
// See CPUAllocator.h.
//
//===----------------------------------------------------------------------===//
#include "CPUAllocator.h"

#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <memory>
#include <unordered_set>

namespace {

/// One launch on this thread: where a failed allocation returns to, and the
/// buffers it has allocated and not yet freed.
struct Launch {
  std::jmp_buf env;
  size_t failedBytes = 0;
  std::unordered_set<void *> live;
};
thread_local Launch *current = nullptr;

/// omp_in_parallel from the OpenMP runtime the engine loaded (absent
/// before any kernel has loaded it). Looked up on the failure path only.
bool inParallelRegion() {
  using Fn = int (*)();
  auto fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "omp_in_parallel"));
  return fn && fn() != 0;
}

[[noreturn]] void allocationFailed(size_t bytes) {
  if (Launch *l = current; l && !inParallelRegion()) {
    l->failedBytes = bytes;
    std::longjmp(l->env, 1);
  }
  std::fprintf(stderr,
               "attn: cpu kernel: out of memory allocating %zu bytes inside "
               "a parallel tile; aborting\n",
               bytes);
  std::abort();
}

void *track(void *p, size_t bytes) {
  if (!p)
    allocationFailed(bytes);
  if (current)
    current->live.insert(p);
  return p;
}

extern "C" void *attnCheckedAlloc(size_t size) {
  return track(std::malloc(size ? size : 1), size);
}

extern "C" void *attnCheckedAlignedAlloc(size_t alignment, size_t size) {
  // aligned_alloc wants a power-of-two alignment of at least
  // sizeof(void *) and a size that is a multiple of it.
  if (alignment < sizeof(void *))
    alignment = sizeof(void *);
  size_t rounded = 0;
  if (alignment & (alignment - 1) ||
      __builtin_add_overflow(size, alignment - 1, &rounded))
    allocationFailed(size);
  rounded -= rounded % alignment;
  return track(std::aligned_alloc(alignment, rounded ? rounded : alignment),
               size);
}

extern "C" void attnCheckedFree(void *p) {
  if (current)
    current->live.erase(p);
  std::free(p);
}

} // namespace

llvm::orc::SymbolMap
mlir::attn::jit::checkedAllocSymbols(llvm::orc::MangleAndInterner interner) {
  llvm::orc::SymbolMap map;
  auto bind = [&](const char *name, auto *fn) {
    map[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(fn),
                           llvm::JITSymbolFlags::Exported};
  };
  bind("_mlir_memref_to_llvm_alloc", &attnCheckedAlloc);
  bind("_mlir_memref_to_llvm_aligned_alloc", &attnCheckedAlignedAlloc);
  bind("_mlir_memref_to_llvm_free", &attnCheckedFree);
  return map;
}

attn_status mlir::attn::jit::runChecked(void (*fn)(void **), void **args,
                                        std::string &error) {
  // On the heap, and not changed between setjmp and longjmp in this frame.
  const std::unique_ptr<Launch> launch = std::make_unique<Launch>();
  Launch *const outer = current;
  current = launch.get();
  if (setjmp(launch->env) == 0) {
    fn(args);
    current = outer;
    return ATTN_OK;
  }
  current = outer;
  for (void *p : launch->live)
    std::free(p);
  error = "cpu: out of memory: the kernel could not allocate a buffer of " +
          std::to_string(launch->failedBytes) + " bytes";
  return ATTN_ERROR_OUT_OF_MEMORY;
}
