//===- AttnToGPU.h - attn.sdpa to a SIMT gpu.launch ------------*- C++ -*-===//
#ifndef ATTN_CONVERSION_ATTNTOGPU_ATTNTOGPU_H
#define ATTN_CONVERSION_ATTNTOGPU_ATTNTOGPU_H

#include "mlir/Pass/Pass.h"

#include <cstdint>
#include <memory>

namespace mlir::attn {

struct ConvertAttnToGPUOptions {
  /// Query rows per workgroup, one thread each.
  int64_t blockQ = 64;
  /// Keys per shared-memory tile; 0 = the largest of 64, 32, 16, 8 whose K
  /// and V tiles fit 48 KB of static shared memory.
  int64_t blockKv = 0;
  /// Shared-memory budget in bytes for the K and V tiles when blockKv = 0.
  int64_t sharedMemoryBytes = 48 * 1024;
  /// Emit for SPIR-V (Vulkan): private arrays in the Function storage
  /// class, and the loops over D and Dv unrolled, with P . V accumulated key
  /// by key, so the query row and the accumulator are indexed by constants
  /// (registers, not scratch) and an invocation runs a handful of loop
  /// iterations per key: lavapipe stops every loop of an invocation after
  /// 65535 iterations in total.
  bool spirv = false;
  /// 1: one kernel. N > 1: the split-KV pair of SplitKV.h (partial kernel
  /// over Hq x chunks, merge kernel), launched by the host code with N
  /// chunks; the kernels take any count from the workspace's extent.
  int64_t kvSplits = 1;
  /// 0: a thread per query row. N > 0 (spirv only): a subgroup of N lanes
  /// per row (blockQ x N invocations per workgroup); lane t computes the
  /// scores of keys t, t + N, ... and owns output columns t, t + N, ...;
  /// the row max and sum are subgroup reductions, P reaches every lane by
  /// shuffles. Valid only where subgroups have exactly N invocations.
  int64_t subgroupSize = 0;
};

/// convert-attn-to-gpu: rewrites each attn.sdpa in destination-passing form
/// (operands from bufferization.to_tensor of memrefs, results written by
/// bufferization.materialize_in_destination into memrefs: the JIT's kernel
/// source) into one gpu.launch over those memrefs.
std::unique_ptr<Pass>
createConvertAttnToGPUPass(const ConvertAttnToGPUOptions &options = {});

/// The K and V tile size the pass picks for `options` (blockKv resolved):
/// the largest of 64, 32, 16, 8 whose tiles fit options.sharedMemoryBytes.
int64_t resolveBlockKv(const ConvertAttnToGPUOptions &options, int64_t headDim,
                       int64_t valueDim, int64_t elementBytes);

void registerConvertAttnToGPUPass();

} // namespace mlir::attn

#endif
