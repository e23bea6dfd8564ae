//===- AttnOps.td - attn ops ------------------------------------*- tablegen -*-===//
#ifndef ATTN_OPS_TD
#define ATTN_OPS_TD

include "attn/Dialect/Attn/IR/AttnDialect.td"
include "attn/Dialect/Attn/IR/AttnAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/OpBase.td"

//===----------------------------------------------------------------------===//
// L0: attn.sdpa
//===----------------------------------------------------------------------===//

def Attn_SdpaOp : Attn_Op<"sdpa", [Pure, AttrSizedOperandSegments]> {
  let summary = "Scaled dot-product attention (PyTorch SDPA + GQA + lse)";
  let description = [{
    Computes, for every batch `b`, query head `h`, query row `i`:

    ```
    g        = Hq / Hkv                        (GQA group; h reads kv head h / g)
    s[j]     = scale * dot(q[b,h,i,:], k[b,h/g,j,:]) + additive_mask[b,h,i,j]
    s[j]     = -inf  where the keep-mask is false, or (causal) j > i + (Skv - Sq)
    p[j]     = exp(s[j] - max_j s) / sum_j exp(s[j] - max_j s)
    out[b,h,i,:] = sum_j dropout(p[j]) * v[b,h/g,j,:]
    lse[b,h,i]   = log(sum_j exp(s[j]))
    ```

    - `scale` defaults to `1/sqrt(D)`.
    - `causal` aligns the diagonal to the bottom right, as FlashAttention
      2.1 and later do: query `i` sees key `j` iff `j <= i + (Skv - Sq)`.
      With `Sq == Skv` this is PyTorch's `is_causal`; with `Sq != Skv`
      PyTorch aligns to the top left instead. With `Sq > Skv` the first
      `Sq - Skv` rows see no key at all.
    - `mask` is `[Bm, Hm, Sq, Skv]` with `Bm` in {1, B} and `Hm` in {1, Hq}:
      an `i1` keep-mask (true = attend, as PyTorch's boolean `attn_mask`),
      an `i8` keep-mask (any nonzero byte attends: the runtime's bool
      masks), or an additive float mask of any float type.
    - Static extents are positive and every static tensor has at most
      2^40 elements (`kMaxElements`).
    - A row that sees no key (every score `-inf`) yields `out = 0` and
      `lse = -inf`, never NaN.
    - `dropout(p, seed %s)`: after the softmax, each `p[j]` is kept with
      probability `1 - p` and scaled by `1 / (1 - p)`. The keep decision is
      Philox-4x32-10 keyed by the seed and counted by `(j, i, h, b)`
      (docs/Semantics.md gives the exact bits), so every tiling and every
      target keeps exactly the same elements. `lse` ignores dropout.
    - Element types: `q`, `k`, `v`, `out` share one of f16, bf16, f32; all
      arithmetic accumulates in f32; `lse` is f32.
    - Batch and sequence dimensions may be dynamic.

    Example:

    ```mlir
    %out, %lse = attn.sdpa %q, %k, %v mask(%m : tensor<1x1x128x256xi1>)
        causal scale(0.125) dropout(0.1, seed %seed)
        : tensor<2x8x128x64xf16>, tensor<2x2x256x64xf16>, tensor<2x2x256x64xf16>
        -> tensor<2x8x128x64xf16>, tensor<2x8x128xf32>
    ```
  }];

  let arguments = (ins
    AnyRankedTensor:$query,
    AnyRankedTensor:$key,
    AnyRankedTensor:$value,
    Optional<AnyRankedTensor>:$mask,
    Optional<I64>:$seed,
    UnitAttr:$causal,
    OptionalAttr<F64Attr>:$scale,
    OptionalAttr<F64Attr>:$dropout_p,
    OptionalAttr<Attn_TilingAttr>:$tiling
  );
  let results = (outs AnyRankedTensor:$out, Optional<AnyRankedTensor>:$lse);

  let assemblyFormat = [{
    $query `,` $key `,` $value
    (`mask` `(` $mask^ `:` type($mask) `)`)?
    (`causal` $causal^)?
    (`scale` `(` $scale^ `)`)?
    (`dropout` `(` $dropout_p^ `,` `seed` $seed `)`)?
    attr-dict `:` type($query) `,` type($key) `,` type($value)
    `->` type($out) (`,` type($lse)^)?
  }];

  let hasVerifier = 1;

  let extraClassDeclaration = [{
    RankedTensorType getQueryType() { return getQuery().getType(); }
    RankedTensorType getKeyType() { return getKey().getType(); }
    RankedTensorType getValueType() { return getValue().getType(); }
    /// The scale actually applied: the attribute, or 1/sqrt(D).
    double getEffectiveScale();
    /// Dropout probability, 0 when absent.
    double getEffectiveDropout();
  }];
}

//===----------------------------------------------------------------------===//
// L0: attn.mha, the multi-head attention layer around attn.sdpa.
//===----------------------------------------------------------------------===//

def Attn_MhaOp : Attn_Op<"mha", [Pure, AttrSizedOperandSegments]> {
  let summary = "Multi-head attention layer: Q, K, V projections, attn.sdpa, "
                "output projection";
  let description = [{
    The layer of `torch.nn.MultiheadAttention` (with GQA and separate
    head dims): projections of the input into per-head queries, keys and
    values, `attn.sdpa` over them, and the output projection. Weights
    follow `torch.nn.functional.linear`: a weight `W` is `[out, in]` and a
    projection is `y = x W^T + b`. With `x` `[B, S, E]`, the key/value
    source `c` = `kv` `[B, Skv, Ekv]` when given (cross-attention), else
    `x` (self-attention, `Skv = S`, `Ekv = E`):

    ```
    q[b,h,s,d]  = sum_e x[b,s,e] * Wq[h*D + d, e]  + bq[h*D + d]     Wq [Hq*D,  E]
    k[b,g,t,d]  = sum_e c[b,t,e] * Wk[g*D + d, e]  + bk[g*D + d]     Wk [Hkv*D, Ekv]
    v[b,g,t,d]  = sum_e c[b,t,e] * Wv[g*Dv + d, e] + bv[g*Dv + d]    Wv [Hkv*Dv, Ekv]
    o           = attn.sdpa(q, k, v, mask, causal, scale, dropout)  [B, Hq, S, Dv]
    y[b,s,e]    = sum_{h,d} o[b,h,s,d] * Wo[e, h*Dv + d] + bo[e]    Wo [E, Hq*Dv]
    ```

    - The fused weight `wqkv` (self-attention only) is `Wq`, `Wk` and `Wv`
      stacked along the output dimension, `[Hq*D + Hkv*D + Hkv*Dv, E]`
      (torch's `in_proj_weight`), and `bqkv` the biases likewise; it
      replaces `wq`, `wk`, `wv` (and their biases).
    - Heads are contiguous blocks of the projected features: head `h` owns
      rows `h*D .. h*D + D - 1` of `Wq` (torch's `view(B, S, H, D)`).
    - `heads(Hq, Hkv)`: `Hq % Hkv == 0`; query head `h` reads key/value
      head `h / (Hq / Hkv)`, as in `attn.sdpa`.
    - `head_dim(D)` and `value_dim(Dv)` (default `D`) are static, at most
      2^20; E and Ekv are static; B, S and Skv may be dynamic.
    - `mask`, `causal`, `scale` (default `1/sqrt(D)`) and `dropout` have
      exactly `attn.sdpa`'s meaning, with Sq = S; the mask is
      `[1|B, 1|Hq, S, Skv]`.
    - Element types: `x`, `kv`, every weight and bias and the result share
      one of f16, bf16, f32. Projections accumulate in f32 and round once
      to the element type (the q, k, v and o that `attn.sdpa` reads and
      writes are in the element type).

    `attn-decompose-mha` rewrites the op into linalg projections around
    one `attn.sdpa`.

    Example (GQA self-attention, E = 512, 8 query and 2 key/value heads):

    ```mlir
    %y = attn.mha %x wq(%wq : tensor<512x512xf16>)
        wk(%wk : tensor<128x512xf16>) wv(%wv : tensor<128x512xf16>)
        wo(%wo : tensor<512x512xf16>) bo(%bo : tensor<512xf16>)
        heads(8, 2) head_dim(64) causal
        : tensor<2x128x512xf16> -> tensor<2x128x512xf16>
    ```
  }];

  let arguments = (ins
    AnyRankedTensor:$input,
    Optional<AnyRankedTensor>:$kv_input,
    Optional<AnyRankedTensor>:$w_q,
    Optional<AnyRankedTensor>:$w_k,
    Optional<AnyRankedTensor>:$w_v,
    Optional<AnyRankedTensor>:$w_qkv,
    AnyRankedTensor:$w_o,
    Optional<AnyRankedTensor>:$b_q,
    Optional<AnyRankedTensor>:$b_k,
    Optional<AnyRankedTensor>:$b_v,
    Optional<AnyRankedTensor>:$b_qkv,
    Optional<AnyRankedTensor>:$b_o,
    Optional<AnyRankedTensor>:$mask,
    Optional<I64>:$seed,
    I64Attr:$num_heads,
    I64Attr:$num_kv_heads,
    I64Attr:$head_dim,
    OptionalAttr<I64Attr>:$value_dim,
    UnitAttr:$causal,
    OptionalAttr<F64Attr>:$scale,
    OptionalAttr<F64Attr>:$dropout_p
  );
  let results = (outs AnyRankedTensor:$out);

  let assemblyFormat = [{
    $input
    (`kv` `(` $kv_input^ `:` type($kv_input) `)`)?
    (`wq` `(` $w_q^ `:` type($w_q) `)`)?
    (`wk` `(` $w_k^ `:` type($w_k) `)`)?
    (`wv` `(` $w_v^ `:` type($w_v) `)`)?
    (`wqkv` `(` $w_qkv^ `:` type($w_qkv) `)`)?
    `wo` `(` $w_o `:` type($w_o) `)`
    (`bq` `(` $b_q^ `:` type($b_q) `)`)?
    (`bk` `(` $b_k^ `:` type($b_k) `)`)?
    (`bv` `(` $b_v^ `:` type($b_v) `)`)?
    (`bqkv` `(` $b_qkv^ `:` type($b_qkv) `)`)?
    (`bo` `(` $b_o^ `:` type($b_o) `)`)?
    (`mask` `(` $mask^ `:` type($mask) `)`)?
    `heads` `(` $num_heads `,` $num_kv_heads `)`
    `head_dim` `(` $head_dim `)`
    (`value_dim` `(` $value_dim^ `)`)?
    (`causal` $causal^)?
    (`scale` `(` $scale^ `)`)?
    (`dropout` `(` $dropout_p^ `,` `seed` $seed `)`)?
    attr-dict `:` type($input) `->` type($out)
  }];

  let hasVerifier = 1;

  let extraClassDeclaration = [{
    RankedTensorType getInputType() { return getInput().getType(); }
    /// Dv: the value_dim attribute, or head_dim.
    int64_t getEffectiveValueDim() {
      return getValueDim() ? static_cast<int64_t>(*getValueDim())
                           : static_cast<int64_t>(getHeadDim());
    }
    /// The key/value source: kv when given, else the input.
    Value getKvSource() { return getKvInput() ? getKvInput() : getInput(); }
  }];
}

//===----------------------------------------------------------------------===//
// L1: the online-softmax tile step and its companions.
//===----------------------------------------------------------------------===//

def Attn_OnlineAttentionOp : Attn_Op<"online_attention",
    [Pure, AttrSizedOperandSegments, AllTypesMatch<["acc", "new_acc"]>,
     AllTypesMatch<["max", "new_max"]>, AllTypesMatch<["sum", "new_sum"]>]> {
  let summary = "One FlashAttention-2 step: fold a key block into the running state";
  let description = [{
    The body of the sequential key loop of a tiled `attn.sdpa`. For a query
    tile `q` (`[Br, D]`), a key/value block `k` (`[Bc, D]`) and `v` (`[Bc,
    Dv]`) and the running state

    - `acc` `[Br, Dv]` f32: the un-normalized output,
    - `max` `[Br]` f32: the row maximum of the scores (score = q . k *
      scale + mask, natural units), `-inf` while nothing was seen,
    - `sum` `[Br]` f32: the row sum of `exp(score - max)`,

    it computes, with `T = rescale_threshold` (0 when absent):

    ```
    S      = (q . k^T) * scale  [+ mask | -inf where !mask]
    S      = -inf where key >= kv_bound, or causal and key > row + diag
    grow   = rowmax(S) > max + T ln(2)            (per row)
    m_new  = grow ? max(max, rowmax(S)) : max
    m_safe = m_new == -inf ? 0 : m_new            (no -inf - -inf)
    P      = exp(S - m_safe)
    alpha  = exp(max - m_safe)                    (1 where !grow)
    sum'   = alpha * sum + rowsum(P)
    acc'   = alpha * acc + p_type(dropout(P)) . v
    max'   = m_new
    ```

    Row `r` of the tile is query `row = q_offset + r` of head `head`, key
    `c` of the block is `key = kv_offset + c`. With `packed(%sq)` the rows
    of the tile enumerate (head, position) pairs of a GQA group instead:
    row `r` is position `(q_offset + r) mod sq` of query head `head +
    (q_offset + r) floordiv sq` (decode packs the heads that share one K/V
    head into one tile). `causal(%diag)` enables the causal mask with `diag
    = Skv - Sq`; `kv_bound(%n)` masks keys at or past `n` (the padded tail
    of a static-shaped block); `batch`, `head` and the row key the dropout
    generator with global indices. A packed step takes no mask (its rows
    would be a gather of the mask).

    Every exponential is `exp2((x - m_safe) * log2(e))`, the difference
    first (or, for raw scores without an additive mask and 0 < scale
    log2(e) < 1, `exp2(fma(q . k, scale log2(e), -m_safe log2(e)))`): no
    intermediate overflows for any finite score, where `x * log2(e)` alone
    would above FLT_MAX / log2(e) (a Hugging Face padding mask of
    -3.4028e38, say).

    The lazy rescale (`rescale_threshold` T > 0, in log2 units) lets the
    max lag a row's true max by up to T ln(2), so P stays below 2^T and
    most blocks skip the rescale; the result is the same up to rounding
    (out = acc / sum and lse = max + log(sum) hold for any shift). T = 0 is
    the textbook recurrence.
    `p_type` (f16 or bf16) rounds P before the P . V product (what 16-bit
    tensor-core products take); sum uses the unrounded P.

    Shapes may be dynamic (a tail tile is simply smaller) or static (a
    padded tail tile: `kv_bound` masks its extra keys, its extra rows are
    not written by anyone).

    Example:

    ```mlir
    %a, %m, %l = attn.online_attention q(%qt) k(%kt) v(%vt)
        state(%acc, %max, %sum) at(%b, %h, %i0, %j0) causal(%diag)
        scale(0.125)
        : tensor<64x64xf16>, tensor<?x64xf16>, tensor<?x64xf16>
        -> tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins
    AnyRankedTensor:$query, AnyRankedTensor:$key, AnyRankedTensor:$value,
    Optional<AnyRankedTensor>:$mask,
    AnyRankedTensor:$acc, AnyRankedTensor:$max, AnyRankedTensor:$sum,
    Index:$batch, Index:$head, Index:$q_offset, Index:$kv_offset,
    Optional<Index>:$kv_bound,
    Optional<Index>:$causal_diag,
    Optional<Index>:$packed_seq,
    Optional<I64>:$seed,
    F64Attr:$scale,
    OptionalAttr<F64Attr>:$rescale_threshold,
    OptionalAttr<TypeAttr>:$p_type,
    OptionalAttr<F64Attr>:$dropout_p
  );
  let results = (outs AnyRankedTensor:$new_acc, AnyRankedTensor:$new_max,
                      AnyRankedTensor:$new_sum);
  let assemblyFormat = [{
    `q` `(` $query `)` `k` `(` $key `)` `v` `(` $value `)`
    (`mask` `(` $mask^ `:` type($mask) `)`)?
    `state` `(` $acc `,` $max `,` $sum `)`
    `at` `(` $batch `,` $head `,` $q_offset `,` $kv_offset `)`
    (`kv_bound` `(` $kv_bound^ `)`)?
    (`causal` `(` $causal_diag^ `)`)?
    (`packed` `(` $packed_seq^ `)`)?
    `scale` `(` $scale `)`
    (`rescale` `(` $rescale_threshold^ `)`)?
    (`p_type` `(` $p_type^ `)`)?
    (`dropout` `(` $dropout_p^ `,` `seed` $seed `)`)?
    attr-dict `:` type($query) `,` type($key) `,` type($value)
    `->` type($new_acc) `,` type($new_max) `,` type($new_sum)
  }];
  let hasVerifier = 1;
}

def Attn_KvSplitCountOp : Attn_Op<"kv_split_count", [Pure]> {
  let summary = "The split-KV chunk count of this launch";
  let description = [{
    The number of chunks the key loop of a split-KV tiling is cut into when
    a runtime chooses it per launch (`#attn.tiling<..., launch_splits =
    true>`): the tiles compute their chunk's key blocks from it and the
    partial results are sized by it. It has no folder on purpose: the count
    must not be baked into the kernels. A GPU target reads it in a kernel
    from the extent of the partial workspaces and, on the host, uses
    `default` (the count of a host that does not choose); a target without
    launch-time choice lowers it to `default`.

    ```mlir
    %n = attn.kv_split_count default(4)
    ```
  }];
  let arguments = (ins I64Attr:$default_count);
  let results = (outs Index:$count);
  let assemblyFormat = "`default` `(` $default_count `)` attr-dict";
  let hasVerifier = 1;
}

def Attn_OnlineAttentionFinalizeOp : Attn_Op<"online_attention_finalize", [Pure]> {
  let summary = "Normalize the running state into the output tile and lse";
  let description = [{
    With `inv = 1 / sum` and `empty = sum == 0` (a row that saw no key):

    ```
    lse  = empty ? -inf : max_safe + log2(sum) * ln(2)
    out  = empty ? 0 : acc * inv
    ```

    Without `partial`, `out` is converted to the output element type (and
    `lse`, when asked for, is returned): the final result of a tile. With
    `partial`, `out` stays f32 and there is no `lse`: one split-KV chunk's
    partial result, which `attn.merge_partials` combines with the chunk's
    `max` and `sum` themselves (an lse alone cannot weigh chunks: max +
    log(sum) keeps log(sum) only to half an ulp of max, so the weights err
    by a factor up to exp(ulp(max) / 2), e at |max| = 2^24, and a -1e9
    padding row loses log(sum) entirely). No case yields NaN.

    ```mlir
    %o, %lse = attn.online_attention_finalize %acc, %max, %sum
        : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>
        -> tensor<64x64xf16>, tensor<64xf32>
    %po = attn.online_attention_finalize %acc, %max, %sum partial
        : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>
        -> tensor<64x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$acc, AnyRankedTensor:$max,
                       AnyRankedTensor:$sum, UnitAttr:$partial);
  let results = (outs AnyRankedTensor:$out, Optional<AnyRankedTensor>:$lse);
  let assemblyFormat = [{
    $acc `,` $max `,` $sum (`partial` $partial^)? attr-dict `:` type($acc)
    `,` type($max) `,` type($sum) `->` type($out) (`,` type($lse)^)?
  }];
  let hasVerifier = 1;
}

def Attn_MergePartialsOp : Attn_Op<"merge_partials", [Pure]> {
  let summary = "Exactly combine split-KV partial results into the output";
  let description = [{
    Given the partial results of N chunks over disjoint key ranges (`out`
    `[N, Br, Dv]` f32 normalized outputs, as `attn.online_attention_finalize
    partial` writes them, and each chunk's final online-softmax `max` and
    `sum` `[N, Br]`: -inf and 0 for a chunk that saw no key), returns the
    result over their union:

    ```
    M      = max_n max[n],   M_safe = M == -inf ? 0 : M
    w_n    = sum[n] * exp(max[n] - M_safe)        (0 for an empty chunk)
    W      = sum_n w_n
    out    = W == 0 ? 0 : (sum_n w_n * out[n]) / W     (output element type)
    lse    = W == 0 ? -inf : M_safe + log(W)
    ```

    The exponentials are `exp2((max[n] - M_safe) * log2(e))`, finite for
    every finite max.

    ```mlir
    %o, %l = attn.merge_partials %outs, %maxes, %sums
        : tensor<4x16x64xf32>, tensor<4x16xf32>, tensor<4x16xf32>
        -> tensor<16x64xf16>, tensor<16xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$partial_out,
                       AnyRankedTensor:$partial_max,
                       AnyRankedTensor:$partial_sum);
  let results = (outs AnyRankedTensor:$out, Optional<AnyRankedTensor>:$lse);
  let assemblyFormat = [{
    $partial_out `,` $partial_max `,` $partial_sum attr-dict `:`
    type($partial_out) `,` type($partial_max) `,` type($partial_sum) `->`
    type($out) (`,` type($lse)^)?
  }];
  let hasVerifier = 1;
}

#endif // ATTN_OPS_TD
