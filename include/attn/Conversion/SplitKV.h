//===- SplitKV.h - split-KV workspaces and the merge kernel -----*- C++ -*-===//
//
// Split-KV on the generic GPU kernel (convert-attn-to-gpu; the tensor-core
// kernel's comes from the tiled form, TileDistribution.h):
// the key blocks a workgroup would walk are cut into `splits` chunks, one
// workgroup per (query block, head x split, batch). Each writes its chunk's
// normalized partial output and log-sum-exp into workspaces, and a second
// kernel merges the chunks of every row (the same algebra as the cpu path's
// split merge, docs/FlashAttentionRewrite.md):
//
//   M = max_s lse_s,  w_s = exp2(lse_s - M),  out = sum_s w_s O_s / sum_s w_s,
//   lse = (M + log2 sum_s w_s) ln 2
//
// with lse_s in log2 units (m + log2 l of the chunk, -inf when the chunk saw
// no visible key) and O_s = acc / l (0 when empty), so a chunk with nothing
// visible weighs 0 and a row with nothing visible anywhere gets out = 0 and
// lse = -inf, as without splits. Dropout needs nothing more: each chunk's l
// is its pre-dropout sum, so the weights renormalize exactly.
//
// The split count is not baked into the kernels: both read it from the
// workspace's extent (dimension 2), and the partial kernel's grid y is
// Hq x splits, so a runtime may pick the count per launch (the CUDA runtime
// does, from the shape and the SM count). With a count of 1 the partial
// kernel writes out and lse itself and the merge is not needed.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_SPLITKV_H
#define ATTN_CONVERSION_SPLITKV_H

#include "attn/Dialect/Attn/Transforms/Transforms.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Value.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstdint>
#include <optional>

namespace mlir::attn {

/// Threads per workgroup of the merge kernel.
constexpr int64_t kSplitKVMergeThreads = 128;

/// The scratch of one split-KV launch pair (host allocations).
struct SplitKVWorkspace {
  /// memref<B x Hq x ? x Sq x Dv x f32>: O_s = acc / l per chunk.
  Value partialOut;
  /// memref<B x Hq x ? x Sq x f32>: lse_s = m + log2 l per chunk (log2
  /// units), -inf for an empty chunk.
  Value partialLse;
};

/// memref.alloc of both workspaces before `b`'s insertion point for a query
/// memref `q` (B, Hq, Sq taken from it, static where it is static) and
/// value dimension `dv`, with `splits` chunks. Dimension 2 is dynamic (a
/// runtime may choose the count per launch) unless `staticSplits`, for
/// targets whose kernels need static shapes (SPIR-V).
SplitKVWorkspace allocateSplitKVWorkspace(OpBuilder &b, Location loc, Value q,
                                          int64_t dv, int64_t splits,
                                          bool staticSplits = false);

/// memref.dealloc of both workspaces.
void deallocSplitKVWorkspace(OpBuilder &b, Location loc,
                             const SplitKVWorkspace &ws);

/// The split count of a workspace (its dimension 2), inside a kernel or on
/// the host.
Value splitCountOf(OpBuilder &b, Location loc, const SplitKVWorkspace &ws);


/// The merge kernel: a gpu.launch over (ceil(Sq / rows), Hq, B) workgroups
/// of kSplitKVMergeThreads threads, a thread per (row, value column),
/// reading `ws` and writing `out` (truncated to its element type) and, when
/// given, `lse` (natural-log units). `module` and `function` name the
/// outlined kernel (so that it can share the partial kernel's gpu.module).
void buildSplitKVMerge(OpBuilder &b, Location loc, const SplitKVWorkspace &ws,
                       Value out, Value lse, FlatSymbolRefAttr module,
                       FlatSymbolRefAttr function);

/// Names for the outlined kernels of one converted op: the module and the
/// partial kernel share a name, the merge kernel adds "_merge". Unique in
/// the enclosing symbol table of `op`.
struct SplitKVKernelNames {
  FlatSymbolRefAttr module, partial, merge;
};
SplitKVKernelNames splitKVKernelNames(Operation *op);

/// What both GPU conversions do around their kernel for one attn.sdpa, at
/// `b`'s insertion point: with `splits` == 1 just `emitKernel(nullopt, {})`;
/// otherwise the workspaces (allocateSplitKVWorkspace), `emitKernel` with
/// them and the kernel names (it emits the partial kernel), the merge
/// kernel into `out` and `lse`, and the deallocations.
void emitWithSplitKV(
    OpBuilder &b, Location loc, Operation *op, Value q, int64_t dv, Value out,
    Value lse, int64_t splits, bool staticSplits,
    function_ref<void(std::optional<SplitKVWorkspace>, SplitKVKernelNames)>
        emitKernel);

} // namespace mlir::attn

#endif // ATTN_CONVERSION_SPLITKV_H
