//===- Passes.td - attn conversion passes -----------------------*- tablegen -*-===//
#ifndef ATTN_CONVERSION_PASSES_TD
#define ATTN_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertAttnToLinalgPass : Pass<"convert-attn-to-linalg"> {
  let summary = "Reference lowering of attn.sdpa to linalg on tensors (the math path)";
  let description = [{
    Rewrites every `attn.sdpa` into the plain, untiled computation on
    tensors, one `linalg.generic` per step of the math in
    docs/Semantics.md: `S = scale * Q.K^T` in f32 (inputs extended), the
    additive / keep-mask and causal bias (bottom-right aligned), the row max
    `m`, `P = exp(S - m_safe)` with `m_safe = m == -inf ? 0 : m`, the row sum
    `l`, `Pn = l == 0 ? 0 : P / l` with the Philox dropout decision of
    `buildDropoutKeep`, `O = Pn . V` with f32 accumulation, a final `truncf`
    to the element type and `lse = l == 0 ? -inf : m_safe + log(l)`.

    GQA is expressed in the indexing maps (`h floordiv (Hq/Hkv)`), or, when
    the group size is dynamic, by `tensor.extract` at the computed kv head:
    K and V are never copied. Mask dimensions of size 1 broadcast (static:
    constant 0 in the map; dynamic: a run-time select of the index).
    Multiply-adds carry `fastmath<contract>`, reduction adds `reassoc`;
    nothing else is fast-math, so the -inf handling survives.

    Requires: `attn.sdpa` ops that verify (any static or dynamic B, H, S).
    Guarantees: no `attn.sdpa` is left (other attn ops are untouched); the
    result is `linalg`, `tensor`, `arith` and `math` ops with the exact
    semantics of the op documentation, materializing `[B, Hq, Sq, Skv]` f32
    tensors. An op it cannot lower gets an error on the op and the pass
    fails. This is the correctness reference for every other path and is
    selected by `attn-to-cpu-pipeline{math=true}`.

    ```mlir
    // before
    %o = attn.sdpa %q, %k, %v : tensor<1x2x8x16xf32>, ... -> tensor<1x2x8x16xf32>
    // after: linalg.generic ops computing S, max, exp, sum, P/l, P.V
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

#endif // ATTN_CONVERSION_PASSES_TD
