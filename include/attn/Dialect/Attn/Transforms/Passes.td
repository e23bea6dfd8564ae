//===- Passes.td - attn transformation passes -------------------*- tablegen -*-===//
#ifndef ATTN_TRANSFORMS_PASSES_TD
#define ATTN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def AttnDecomposeMhaPass : Pass<"attn-decompose-mha"> {
  let summary = "Decompose attn.mha into linalg projections around attn.sdpa";
  let description = [{
    Rewrites every `attn.mha` into its pieces, following the op's
    definition: the Q, K and V projections, one `attn.sdpa`, and the output
    projection. After it the layer is ordinary `attn.sdpa` plus linalg, so
    every pipeline that lowers both lowers the layer.

    Each projection is one `linalg.generic` contraction over the embedding
    (accumulating into an f32 tensor filled with zeros) whose output
    indexing map is already the layout `attn.sdpa` reads, `[B, H, S, D]`,
    with the weight viewed as `[H, D, E]` by a `tensor.expand_shape`; the
    bias and the rounding to the element type follow in one elementwise
    `linalg.generic`. The output projection contracts `attn.sdpa`'s
    `[B, Hq, S, Dv]` result over (h, d) against `Wo` viewed as
    `[E, Hq, Dv]`. No tensor is transposed or copied between the pieces:

    ```
    q32 = generic (b,h,s,d,e): x[b,s,e] * Wq[h,d,e]          -> [B,Hq,S,D] f32
    q   = generic (b,h,s,d):   elt(q32 + bq[h,d])            -> [B,Hq,S,D]
    (k, v likewise from kv or x; a fused wqkv is sliced into its three rows)
    o   = attn.sdpa q, k, v (mask, causal, scale, dropout)  -> [B,Hq,S,Dv]
    y32 = generic (b,s,e,h,d): o[b,h,s,d] * Wo[e,h,d]        -> [B,S,E] f32
    y   = generic (b,s,e):     elt(y32 + bo[e])
    ```

    Requires: verified `attn.mha` ops on tensors.
    Guarantees: no `attn.mha` is left; exactly one `attn.sdpa` per layer,
    carrying the layer's mask, causal, scale and dropout; the contractions
    carry fastmath `contract`; dynamic B, S and Skv are read with
    `tensor.dim`.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
}

def AttnTileSdpaPass : Pass<"attn-tile-sdpa"> {
  let summary = "Tile attn.sdpa into FlashAttention-2 form (L0 -> L1)";
  let description = [{
    Rewrites every `attn.sdpa` into parallel tiles over (B, Hq, blocks of
    `block-q` query rows), each running a sequential loop over blocks of
    `block-kv` keys whose body is one `attn.online_attention` step carrying
    the f32 running state, followed by `attn.online_attention_finalize`.
    See docs/FlashAttentionRewrite.md.

    Requires: verified `attn.sdpa` ops.
    Guarantees: no `attn.sdpa` is left; no value of Sq x Skv elements
    exists; tails are smaller tiles (never padded copies); with `causal`,
    key blocks above the diagonal are not visited and only blocks that
    straddle it carry the causal mask; GQA reads the shared K/V head by
    index; with `kv-splits` != 1 the key loop is split into parallel chunks
    merged by `attn.merge_partials`. A `tiling` attribute on the op
    overrides the options.

    Structure (see docs/FlashAttentionRewrite.md for the IR):

    ```
    scf.forall (b, h, qb) in (B, Hq, ceildiv(Sq, Br))      // [, n in (N)]
      rows = min(Br, Sq - i0); hkv = h floordiv (Hq / Hkv)
      scf.for jb in [0, nFull)       online_attention            (unmasked)
      scf.for jb in [nFull, nVisit)  online_attention causal(d)  (diagonal)
      online_attention_finalize; parallel_insert_slice out (, lse)
    ```

    Without `causal` there is one loop over all ceildiv(Skv, Bc) blocks.
    Split-KV (`kv-splits` N > 1) gives chunk n the blocks
    [n * ceildiv(nBlocks, N), (n + 1) * ceildiv(nBlocks, N)) intersected with
    the ranges above, writes partial states to [B, Hq, N, Sq(, Dv)] and a
    second scf.forall merges them. `kv-splits=0` picks
    N = min(ceildiv(P, tiles), Skv / (4 * Bc)) when tiles = B * Hq *
    ceildiv(Sq, Br) < P (P = `parallelism`, 0 = hardware threads) and that
    N >= 2; otherwise, and for any dynamic shape, N = 1. Static N is capped
    by the number of key blocks.

    Long key sequences are always split (the f32 running sums lose
    accuracy past some 10^5 terms): N is at least
    `minKvSplits(Skv, Bc)`, the chunks of at most `kMaxChunkKeys` (2^16)
    keys, whatever `kv-splits` or the tiling attribute says. With a dynamic
    key length and no launch-time count, N is that index expression of
    Skv (max(N, ceildiv(ceildiv(Skv, Bc), 2^16 / Bc))), so every dynamic
    key length lowers to the split form. A target that bounds the dynamic
    length (`max-dynamic-kv` M) gets instead the static count
    max(N, minKvSplits(M, Bc)): one chunk, unsplit, where M fits one (the
    Vulkan loop-budget clamp; the cpu JIT's kernels, which it sends a
    longer launch past). The unsplit alternative of a launch-time count
    (`attn.launch_when` "unsplit") is exempt: its runtime applies the same
    floor to the count. `accuracy-splits=false` (targets without split-KV)
    refuses an op that would need them instead.

    Lowering contract: the result bufferizes with
    `one-shot-bufferize{bufferize-function-boundaries
    allow-return-allocs-from-loops}` followed by
    `buffer-deallocation-pipeline` (the per-step temporaries are yielded
    from the key loop).
  }];
  let options = [
    Option<"blockQ", "block-q", "int64_t", /*default=*/"64",
           "Query rows per parallel tile (Br)">,
    Option<"blockKv", "block-kv", "int64_t", /*default=*/"64",
           "Keys per step of the sequential loop (Bc)">,
    Option<"kvSplits", "kv-splits", "int64_t", /*default=*/"0",
           "Split-KV chunks: 1 = off, 0 = choose from shapes and parallelism">,
    Option<"parallelism", "parallelism", "int64_t", /*default=*/"0",
           "Parallel workers of the target (0 = query the host)">,
    Option<"accuracySplits", "accuracy-splits", "bool", /*default=*/"true",
           "Split key sequences longer than 2^16 keys into chunks of at most "
           "that many (false: refuse an op that would need them)">,
    Option<"maxDynamicKv", "max-dynamic-kv", "int64_t", /*default=*/"0",
           "The largest dynamic key length the target launches (0 = "
           "unbounded): the count is then static, at least the key-chunk "
           "floor of that length (1, unsplit, up to 2^16 keys)">,
    Option<"packDecodeHeads", "pack-decode-heads", "bool",
           /*default=*/"false",
           "Tile a GQA decode step (static query length 1, or 2 to 16 "
           "without causal; static heads with Hq / Hkv > 1, no mask, no "
           "tiling attribute) with pack_heads: a tile's rows are a "
           "group's query heads x query rows, which then read their K/V "
           "head once">
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::affine::AffineDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::ub::UBDialect"];
}

def AttnDecomposeOnlineAttentionPass : Pass<"attn-decompose-online-attention"> {
  let summary = "Decompose the online-softmax ops into linalg on tensors (L1 -> L2)";
  let description = [{
    Rewrites `attn.online_attention`, `attn.online_attention_finalize` and
    `attn.merge_partials` into `linalg.generic` ops on tensors, following
    the math in their op descriptions: S = Q.K^T with scale and log2(e)
    folded, mask and causal bias, running max, exp2, rescaled sum and
    accumulator, P.V; statistics and accumulation in f32.

    Requires: L1 ops (from `attn-tile-sdpa` or written by hand), verified.
    Guarantees: no `attn` L1 op is left (an op that cannot be rewritten is
    reported); every intermediate is at most `[Br, Bc]` (or the `[Br, Dv]`
    state, `[N, Br]` weights in a merge); no NaN arises from fully masked
    rows (the -inf guard `m == -inf ? 0 : m`); the matmul bodies carry
    fastmath `contract` and the reductions `reassoc`, so that LLVM may form
    FMAs and vectorize them; the old acc and sum are rescaled in place so
    that the loop-carried buffers are reused.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

#endif // ATTN_TRANSFORMS_PASSES_TD
