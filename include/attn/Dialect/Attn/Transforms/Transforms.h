//===- Transforms.h - reusable attn rewrites -------------------*- C++ -*-===//
#ifndef ATTN_DIALECT_ATTN_TRANSFORMS_TRANSFORMS_H
#define ATTN_DIALECT_ATTN_TRANSFORMS_TRANSFORMS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/Value.h"
#include "mlir/Support/LLVM.h"

namespace mlir::attn {
class SdpaOp;
class TilingAttr;

/// The discardable attribute by which attn-tile-sdpa records on every
/// scf.forall it creates the #attn.tiling it applied.
constexpr llvm::StringLiteral kTilingAttrName = "attn.tiling";

/// One attention compiled to alternatives chosen at each launch: the
/// discardable attribute (a string) on an attn.sdpa, which attn-tile-sdpa
/// copies onto its foralls and the GPU targets into their kernels' launch
/// information, saying when the alternative runs: a launch condition on
/// the launch's query length and split-KV count, in the grammar of
/// attn/runtime/LaunchCondition.h ("unsplit": the count is 1; "split": it
/// is more; "sq == 1 && split", "sq >= 17"); absent: always.
constexpr llvm::StringLiteral kLaunchWhenAttrName = "attn.launch_when";

/// log2(e) and ln(2): exp(x) = exp2(x log2 e), log(x) = log2(x) ln 2 (the
/// online softmax works in log2 units; every lowering converts with these).
constexpr double kLog2e = 1.4426950408889634;
constexpr double kLn2 = 0.6931471805599453;

/// Tile sizes for tileSdpa; kvSplits: 1 = off, 0 = automatic.
struct SdpaTilingOptions {
  int64_t blockQ = 64;
  int64_t blockKv = 64;
  int64_t kvSplits = 0;
  int64_t parallelism = 0;
  /// Chunks of at most 2^16 keys (::attn::minKvSplits) for any longer key
  /// sequence; false: such an op is refused (a target without split-KV).
  bool accuracySplits = true;
  /// The largest dynamic key length the target launches (0: unbounded).
  /// With a bound, the split count is static, at least the key-chunk
  /// floor of the bound (1 where it fits one chunk); without, a dynamic
  /// key length gets a count that grows with it.
  int64_t maxDynamicKv = 0;
  /// An op without a tiling attribute that is a GQA decode step
  /// (::attn::packsDecodeHeads, attn/runtime/PackedDecode.h: static query
  /// length 1, or 2 to 16 without causal; static heads with Hq / Hkv > 1;
  /// no mask) is tiled with `pack_heads`: a tile's rows are the query
  /// heads (x rows) that share one K/V head, so K and V are read once per
  /// group, not once per head.
  bool packDecodeHeads = false;
};

/// The automatic split-KV rule (kv_splits = 0): split only when the
/// parallel tiles (batch * headsQ * ceil(seqQ / blockQ)) cannot occupy
/// `parallelism` workers (0 = the host's cores) and each chunk keeps at
/// least 4 key blocks; then min(ceil(parallelism / tiles), seqKv / (4 *
/// blockKv)) chunks, at most the key blocks of seqKv; never fewer than
/// ::attn::minKvSplits(seqKv, blockKv) (attn/runtime/KeyChunks.h: chunks
/// of at most 2^16 keys for accurate f32 sums). Returns 1 for "no
/// split", also for any size below 1 and for a tile count that does not
/// fit int64_t, so callers may pass a launch's shapes unchecked. Shared by
/// attn-tile-sdpa (static shapes) and the runtime's JIT (dynamic shapes,
/// decided at launch).
int64_t chooseKvSplits(int64_t batch, int64_t headsQ, int64_t seqQ,
                       int64_t seqKv, int64_t blockQ, int64_t blockKv,
                       int64_t parallelism);

/// The tiling of `op`: its `tiling` attribute, else block_q, block_kv and
/// kv_splits from `options` (with `pack_heads` where
/// `options.packDecodeHeads` and the op is a GQA decode step).
TilingAttr resolveTiling(SdpaOp op, const SdpaTilingOptions &options);

/// Rewrites one attn.sdpa into its tiled FlashAttention-2 form.
LogicalResult tileSdpa(RewriterBase &rewriter, SdpaOp op,
                       const SdpaTilingOptions &options);

/// The key blocks [begin, end) that chunk `split` of `splits` takes out of
/// the `blocks` a tile visits: contiguous chunks of ceil(blocks / splits)
/// blocks, the last ones possibly empty (begin == end). The one split-KV
/// chunking of every target.
std::pair<Value, Value> splitKeyBlocks(OpBuilder &b, Location loc, Value blocks,
                                       Value split, Value splits);

/// Patterns decomposing the L1 online-softmax ops into linalg on tensors.
void populateDecomposeOnlineAttentionPatterns(RewritePatternSet &patterns);

/// attn.mha -> Q/K/V projections (linalg, writing [B, H, S, D]), one
/// attn.sdpa and the output projection (attn-decompose-mha).
void populateDecomposeMhaPatterns(RewritePatternSet &patterns);

/// attn.kv_split_count as its default count, for targets where no runtime
/// chooses it per launch.
void populateLowerKvSplitCountPatterns(RewritePatternSet &patterns);

/// The discardable attribute attn-decompose-online-attention puts on the
/// `any` reduction that guards the rescale of the online softmax: the
/// scf.if it guards is the identity on every row whose reduced operand is
/// false, so a target may compute the reduction over any set of rows that
/// contains the rows it owns (a warp's rows, say) instead of the tile's.
constexpr llvm::StringLiteral kRowLocalGuardAttrName = "attn.row_local_guard";

/// Builds the dropout keep decision shared by every lowering: Philox-4x32-10
/// keyed by `seed` (i64), counter (j, i, h, b) as i32 words (each index
/// truncated to 32 bits); keeps iff the first output word, as an unsigned
/// integer, is >= ceil(p * 2^32). Returns an i1. See docs/Semantics.md.
Value buildDropoutKeep(OpBuilder &b, Location loc, Value seed, Value batch,
                       Value head, Value row, Value col, double p);
} // namespace mlir::attn

#endif
