//===- TileDistribution.h - what every GPU tile mapping shares -*- C++ -*-===//
//
// The GPU targets lower the tiled form (attn-tile-sdpa +
// attn-decompose-online-attention) by distributing its ops onto threads;
// none of them writes the attention math again. What they share:
//
// - TiledKernelSource: the kernel-source function around the tiled form
//   (memref arguments, bufferization.to_tensor, the foralls, the results
//   materialized into arguments), its function-level tensors resolved to
//   memrefs and the host-side index computations rewritten onto them;
// - cloneGenericBody: a linalg.generic's scalar body evaluated at one
//   element, its block arguments and linalg.index bound by the caller;
// - the classification of the tiled form's generics (contraction, row
//   reduction, elementwise);
// - buildMergeKernel: the split-KV merge forall as a kernel with a thread
//   per output element, the reductions over chunks as loops.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_TILEDISTRIBUTION_H
#define ATTN_CONVERSION_TILEDISTRIBUTION_H

#include "attn/Dialect/Attn/IR/AttnAttrs.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include <functional>

namespace mlir::attn {

/// Evaluates `op`'s body once: block argument i is `args[i]` (the element
/// of input or output i), `linalg.index d` is `indices[d]`; a value the
/// body uses from above is `outer(value)`. Returns the yielded values. Ops
/// are cloned at `b`'s insertion point; `map` records the clones (its
/// entries for the body are overwritten by the next evaluation). An
/// argument of a wider float type than its block argument is the value of
/// the body's arith.extf of it (its only kind of use): a tile a target
/// keeps extended.
SmallVector<Value> cloneGenericBody(OpBuilder &b, linalg::GenericOp op,
                                    ValueRange args, ValueRange indices,
                                    IRMapping &map,
                                    function_ref<Value(Value)> outer);

/// What one linalg.generic of the tiled form does.
enum class TileOpKind {
  /// out(i, j) += lhs(i, k) * rhs(j, k) or rhs(k, j): Q.K^T, P.V
  Contraction,
  /// all loops parallel
  Elementwise,
  /// (i, j) -> (i) with j a reduction: row max, row sum
  RowReduction,
  /// (i) -> () with i a reduction: the rescale guard's any
  AllReduction,
  Other
};
TileOpKind classifyTileOp(linalg::GenericOp op);

/// For a contraction: whether the right operand is indexed (j, k) (K for
/// Q.K^T: the product takes its transpose) rather than (k, j) (V for P.V).
bool rhsTransposed(linalg::GenericOp op);

/// The reduction combiner's kind, from the body's last op before the yield.
enum class Combiner { MaxF, AddF, OrI, Other };
Combiner combinerOf(linalg::GenericOp op);

/// The function around a tiled attention in the JIT's destination-passing
/// form, with the memrefs behind its tensors.
struct TiledKernelSource {
  func::FuncOp func;
  /// The forall computing the result (or, split, the partials) and the
  /// split-KV merge forall (null when unsplit).
  scf::ForallOp main, merge;
  TilingAttr tiling;
  /// The function tensor -> the memref it was read from.
  DenseMap<Value, Value> buffers;
  /// A forall result -> the memref it is written to (a materialize
  /// destination, or for partial results a host allocation).
  DenseMap<Value, Value> destinations;
  /// Packed decode: q, out and lse are [B, Hq, 1, D] seen as [B, Hkv,
  /// Hq / Hkv, D]; the tensors read or written through that view.
  DenseSet<Value> packedViews;
  /// Ops to erase once the kernels are built (the tensor-level form).
  SmallVector<Operation *> toErase;
  /// The function-level tensors (to_tensor of the arguments, packed views
  /// of them): erased with the last attention once nothing reads them (a
  /// function may hold attentions that another target maps).
  SmallVector<Operation *> sharedTensors;
};

/// Finds the tiled attentions in `func` whose forall's tiling satisfies
/// `accept`, resolves their tensors to memrefs, allocates split-KV
/// workspaces (their chunk count: attn.kv_split_count's default) and
/// rewrites the host-side tensor.dim ops onto memref.dim. Fails with a
/// diagnostic when the function is not of that form. The sources must be
/// converted and finished in order (the last one erases the function's
/// shared tensors).
LogicalResult
collectTiledKernels(func::FuncOp func,
                    function_ref<bool(TilingAttr)> accept,
                    SmallVectorImpl<TiledKernelSource> &out);

/// Erases what collectTiledKernels recorded and deallocates the
/// workspaces after the last kernel; call after the kernels replaced the
/// foralls.
void finishTiledKernels(TiledKernelSource &source);

/// A view of `memref` ([B, Hq, S, ...] at dims 0, 1, `rowDim`) as [B, Hkv,
/// (Hq / Hkv) x S, ...] for S = 1: element (b, hk, r) is (b, hk group + r,
/// 0). Same memory. A memref.reinterpret_cast with the strides, or with
/// `reshape` (`memref` of the identity layout, `rowDim` 2, as SPIR-V
/// kernels' buffers are) memref.expand_shape of Hq into (Hkv, group) and
/// memref.collapse_shape of (group, 1), which fold-memref-alias-ops folds
/// into the accesses (Vulkan's logical addressing has no pointer casts).
Value packedRowsView(OpBuilder &b, Location loc, Value memref, int64_t rowDim,
                     Value hkv, Value group, bool reshape = false);

/// In a kernel being built (at `b`'s insertion point) from `source`'s tiled
/// attention `forall`: maps in `map` the function's tensors to their
/// memrefs and `forall`'s iteration arguments to its results'
/// destinations. Packed decode (`qTensor`, the tensor Q.K^T slices, one of
/// source.packedViews): q and the packed results through packedRowsView
/// over `hkv()` K/V heads (the forall's heads extent as a kernel value;
/// called only then) and groups of Hq / Hkv, in its reshape form with
/// `reshape`.
void mapKernelTensors(OpBuilder &b, Location loc, TiledKernelSource &source,
                      scf::ForallOp forall, Value qTensor,
                      function_ref<Value()> hkv, IRMapping &map,
                      bool reshape);

/// Builds, at `b`'s insertion point (inside a kernel), what an index value
/// of the host function evaluates to: its defining index computations
/// (arith, affine, memref.dim of the function's memrefs, constants) cloned
/// into the kernel, memoized in `map`; memref values are not cloned (a
/// memref.cast view stays one parameter). Kernel parameters then stay the
/// memrefs (and the dropout seed).
Value sinkIndexValue(OpBuilder &b, Value v, IRMapping &map);

/// Threads per workgroup of the split-KV merge kernel.
constexpr int64_t kSplitKVMergeThreads = 128;

/// SPIR-V merge kernels unroll their loops over chunks by this factor (an
/// epilogue takes the remainder), so that each thread keeps as many
/// chunks' loads in flight: NVIDIA's Vulkan compiler does not unroll them
/// itself, while ptxas does, and there the manual unrolling was slower,
/// so the NVVM kernels keep the plain loop (measurements:
/// bench/results/vulkan-h200-merge-unroll-2026-12-02).
constexpr int64_t kSplitKVMergeUnrollSPIRV = 4;

/// The split-KV merge forall of `source` as a gpu.launch at `b`'s
/// insertion point: a thread per (row, value column) of each merge tile,
/// the reductions over chunks as loops, evaluating the forall's generics.
/// `names` name the outlined kernel so it shares the partial kernel's
/// module. Packed decode's out and lse are packedRowsView views
/// (`reshapeViews`: its reshape form). The loops over chunks are unrolled
/// by `chunkUnroll` (1: not). Fails with a diagnostic on a form it does not
/// know.
LogicalResult buildMergeKernel(OpBuilder &b, TiledKernelSource &source,
                               FlatSymbolRefAttr module,
                               FlatSymbolRefAttr function,
                               bool reshapeViews = false,
                               int64_t chunkUnroll = 1);

/// How a runtime launches a kernel of a GPU target: a dictionary the
/// target records, per kernel symbol, in the kLaunchesAttrName dictionary
/// of the function holding the gpu.launch (where no cleanup pass drops it:
/// gpu-kernel-outlining keeps no attribute of gpu.launch); after
/// outlining, attn-launch-info moves each onto the gpu.launch_func ops of
/// the kernel as kLaunchInfoAttrName, where the JIT and attn-translate
/// read it:
///   kind      "attention" or "merge" (split-KV)
///   rows      "Sq", or "Group" for packed decode (query heads per KV head):
///             grid x = ceildiv(rows, block_q)
///   block_q   rows per workgroup
///   heads     "Hq", or "Hkv" when packed: grid y (times the split count
///             when `splits` is set); grid z is the batch
///   splits    (unit) grid y counts (head, chunk) pairs
///   when      the launch condition (attn/runtime/LaunchCondition.h):
///             "always", "split" (the launch's split count > 1),
///             "unsplit" (it is 1), or a range of the launch's Sq with
///             either ("sq == 1 && split", "sq >= 17"): the kernel runs
///             only for launches it holds for
///   block_kv  keys per block (attention kernels)
struct LaunchInfo {
  std::string kind = "attention";
  bool packed = false;
  int64_t blockQ = 0, blockKv = 0;
  bool splits = false;
  std::string when = "always";
};
constexpr llvm::StringLiteral kLaunchInfoAttrName = "attn.launch";
/// On the memref.alloc of each split-KV workspace: its role, one of
/// kSplitWorkspaceNames in the order of the partial forall's results (the
/// chunks' normalized outputs [B, heads, N, rows, Dv]; their max and sum
/// [B, heads, N, 2, rows]).
constexpr llvm::StringLiteral kWorkspaceAttrName = "attn.workspace";
constexpr llvm::StringLiteral kSplitWorkspaceNames[] = {"partial_out",
                                                        "partial_stats"};
constexpr llvm::StringLiteral kLaunchesAttrName = "attn.launches";
DictionaryAttr launchInfoAttr(MLIRContext *ctx, const LaunchInfo &info);
/// The key of a kernel in kLaunchesAttrName: "module::function".
std::string launchKey(StringRef module, StringRef function);
/// Records `info` for `launch`'s kernel (its module and function names
/// must be set) on the enclosing function.
void markLaunch(gpu::LaunchOp launch, const LaunchInfo &info);
/// The kernel's "when" from a forall's kLaunchWhenAttrName ("always" when
/// absent).
std::string launchWhen(Operation *forall);

} // namespace mlir::attn

#endif
