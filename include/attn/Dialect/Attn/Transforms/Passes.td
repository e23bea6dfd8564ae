//===- Passes.td - attn transformation passes -------------------*- tablegen -*-===//
#ifndef ATTN_TRANSFORMS_PASSES_TD
#define ATTN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

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
  }];
  let options = [
    Option<"blockQ", "block-q", "int64_t", /*default=*/"64",
           "Query rows per parallel tile (Br)">,
    Option<"blockKv", "block-kv", "int64_t", /*default=*/"64",
           "Keys per step of the sequential loop (Bc)">,
    Option<"kvSplits", "kv-splits", "int64_t", /*default=*/"0",
           "Split-KV chunks: 1 = off, 0 = choose from shapes and parallelism">,
    Option<"parallelism", "parallelism", "int64_t", /*default=*/"0",
           "Parallel workers of the target (0 = query the host)">
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::affine::AffineDialect",
                           "::mlir::linalg::LinalgDialect"];
}

def AttnDecomposeOnlineAttentionPass : Pass<"attn-decompose-online-attention"> {
  let summary = "Decompose the online-softmax ops into linalg on tensors (L1 -> L2)";
  let description = [{
    Rewrites `attn.online_attention`, `attn.online_attention_finalize` and
    `attn.merge_partials` into `linalg.generic` ops on tensors, following
    the math in their op descriptions: S = Q.K^T with scale and log2(e)
    folded, mask and causal bias, running max, exp2, rescaled sum and
    accumulator, P.V; statistics and accumulation in f32.

    Requires: L1 ops from `attn-tile-sdpa`.
    Guarantees: no `attn` op is left; every intermediate is at most
    `block-q x block-kv`; no NaN arises from fully masked rows.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

#endif // ATTN_TRANSFORMS_PASSES_TD
