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
      an `i1` keep-mask (true = attend, as PyTorch's boolean `attn_mask`) or
      an additive float mask of any float type.
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
// L1: the online-softmax tile step and its companions.
//===----------------------------------------------------------------------===//

def Attn_OnlineAttentionOp : Attn_Op<"online_attention",
    [Pure, AttrSizedOperandSegments, AllTypesMatch<["acc", "new_acc"]>,
     AllTypesMatch<["max", "new_max"]>, AllTypesMatch<["sum", "new_sum"]>]> {
  let summary = "One FlashAttention-2 step: fold a key block into the running state";
  let description = [{
    The body of the sequential key loop of a tiled `attn.sdpa`. For a query
    tile `q` (`[Br, D]`, rows are global query indices `q_offset + r`), a
    key/value block `k` (`[Bc, D]`) and `v` (`[Bc, Dv]`) whose rows are
    global key indices `kv_offset + c`, and the running state

    - `acc` `[Br, Dv]` f32: the un-normalized output,
    - `max` `[Br]` f32: the row maximum of the scores, in log2 units
      (score * scale * log2(e)), `-inf` while nothing was seen,
    - `sum` `[Br]` f32: the row sum of `exp2(score - max)`,

    it computes

    ```
    S      = (q . k^T) * scale * log2(e)  [+ mask * log2(e) | -inf where !mask]
    S      = -inf where causal and kv_offset+c > q_offset+r + diag
    m_new  = max(max, rowmax(S))
    m_safe = m_new == -inf ? 0 : m_new            (no -inf - -inf)
    P      = exp2(S - m_safe)
    alpha  = exp2(max - m_safe)
    sum'   = alpha * sum + rowsum(P)
    acc'   = alpha * acc + dropout(P) . v
    max'   = m_new
    ```

    `causal(%diag)` enables the causal mask with `diag = Skv - Sq`;
    `batch` and `head` (the query head) key the dropout generator with the
    global indices. Shapes may be dynamic: a tail tile is simply smaller.

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
    Optional<Index>:$causal_diag,
    Optional<I64>:$seed,
    F64Attr:$scale,
    OptionalAttr<F64Attr>:$dropout_p
  );
  let results = (outs AnyRankedTensor:$new_acc, AnyRankedTensor:$new_max,
                      AnyRankedTensor:$new_sum);
  let assemblyFormat = [{
    `q` `(` $query `)` `k` `(` $key `)` `v` `(` $value `)`
    (`mask` `(` $mask^ `:` type($mask) `)`)?
    `state` `(` $acc `,` $max `,` $sum `)`
    `at` `(` $batch `,` $head `,` $q_offset `,` $kv_offset `)`
    (`causal` `(` $causal_diag^ `)`)?
    `scale` `(` $scale `)`
    (`dropout` `(` $dropout_p^ `,` `seed` $seed `)`)?
    attr-dict `:` type($query) `,` type($key) `,` type($value)
    `->` type($new_acc) `,` type($new_max) `,` type($new_sum)
  }];
  let hasVerifier = 1;
}

def Attn_OnlineAttentionFinalizeOp : Attn_Op<"online_attention_finalize", [Pure]> {
  let summary = "Normalize the running state into the output tile and lse";
  let description = [{
    `out = sum == 0 ? 0 : acc / sum` (converted to the output element type)
    and `lse = sum == 0 ? -inf : max * ln(2) + ln(sum)`: a row that saw no
    key yields 0 and -inf, never NaN.

    ```mlir
    %o, %lse = attn.online_attention_finalize %acc, %max, %sum
        : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>
        -> tensor<64x64xf16>, tensor<64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$acc, AnyRankedTensor:$max,
                       AnyRankedTensor:$sum);
  let results = (outs AnyRankedTensor:$out, Optional<AnyRankedTensor>:$lse);
  let assemblyFormat = [{
    $acc `,` $max `,` $sum attr-dict `:` type($acc) `,` type($max) `,`
    type($sum) `->` type($out) (`,` type($lse)^)?
  }];
  let hasVerifier = 1;
}

def Attn_MergePartialsOp : Attn_Op<"merge_partials", [Pure]> {
  let summary = "Exactly combine split-KV partial states";
  let description = [{
    Given N partial states over disjoint key ranges (`acc` `[N, Br, Dv]`,
    `max` and `sum` `[N, Br]`, in the units of `attn.online_attention`),
    returns the state over their union:

    ```
    m   = max_n max[n]
    w_n = exp2(max[n] - (m == -inf ? 0 : m))
    sum = sum_n w_n * sum[n],   acc = sum_n w_n * acc[n]
    ```

    ```mlir
    %a, %m, %l = attn.merge_partials %accs, %maxs, %sums
        : tensor<4x16x64xf32>, tensor<4x16xf32>, tensor<4x16xf32>
        -> tensor<16x64xf32>, tensor<16xf32>, tensor<16xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$acc, AnyRankedTensor:$max,
                       AnyRankedTensor:$sum);
  let results = (outs AnyRankedTensor:$new_acc, AnyRankedTensor:$new_max,
                      AnyRankedTensor:$new_sum);
  let assemblyFormat = [{
    $acc `,` $max `,` $sum attr-dict `:` type($acc) `,` type($max) `,`
    type($sum) `->` type($new_acc) `,` type($new_max) `,` type($new_sum)
  }];
  let hasVerifier = 1;
}

#endif // ATTN_OPS_TD
