//===- WorkspacePool.h - an executable's stream-ordered memory pool -*- C++ -*-===//
//
// Split-KV attention kernels and attention layers need device memory for
// the length of one launch. They take it from a stream-ordered pool of
// their own (cuMemAllocFromPoolAsync / cuMemFreeAsync on the launch's
// stream), created by the first launch that needs one.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_SRC_CUDA_WORKSPACEPOOL_H
#define ATTN_RUNTIME_SRC_CUDA_WORKSPACEPOOL_H

#include "CudaDriver.h"

#include "attn/runtime/attn.h"

#include <atomic>
#include <mutex>
#include <string>

namespace attn {
namespace cuda {

/// One executable's pool, on its device. Its release threshold is the
/// maximum, so memory freed at the end of a launch stays in the pool across
/// synchronizations and the next launch reuses it instead of mapping new
/// memory: the pool grows to the most memory that launches in flight at one
/// time needed, and keeps it until destroy(). The device's default pool
/// (cuMemAllocAsync's, which the CUDA runtime and PyTorch may use) is left
/// as the caller set it.
class WorkspacePool {
public:
  /// `what` names the memory in messages ("split-KV workspace"); `remedy`
  /// says how to do without a pool.
  WorkspacePool(const Driver &d, CUdevice device, std::string what,
                std::string remedy)
      : d(d), device(device), what(std::move(what)), remedy(std::move(remedy)) {}

  /// The pool, created on first use. A failed creation is reported and
  /// tried again at the next call. Called with the device's context current.
  attn_status get(CUmemoryPool &out, std::string &error);

  /// Destroys the pool if it exists. cuMemPoolDestroy returns at once; the
  /// pool's memory goes back to the device once the frees that earlier
  /// launches queued have run, so kernels still in flight keep their memory.
  /// Called with the context current, once, when the owner goes.
  void destroy();

  /// "cuda: ... lacks ... (stream-ordered memory pools, CUDA 11.2+)" when
  /// the driver has no pool entry points: empty when it has them all.
  std::string missingEntryPoints() const;

private:
  const Driver &d;
  CUdevice device;
  std::string what, remedy;
  std::atomic<CUmemoryPool> pool{nullptr};
  std::mutex mutex; // serializes the pool's creation
};

} // namespace cuda
} // namespace attn

#endif // ATTN_RUNTIME_SRC_CUDA_WORKSPACEPOOL_H
