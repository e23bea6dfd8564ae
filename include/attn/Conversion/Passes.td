//===- Passes.td - attn conversion passes -----------------------*- tablegen -*-===//
#ifndef ATTN_CONVERSION_PASSES_TD
#define ATTN_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertAttnToLinalgPass : Pass<"convert-attn-to-linalg"> {
  let summary = "Reference lowering of attn.sdpa to linalg on tensors (the math path)";
  let description = [{
    Rewrites every `attn.sdpa` into the plain, untiled computation on
    tensors: it materializes the full score matrix `S` `[B, Hq, Sq, Skv]`
    in f32, applies scale, masks, causal bias and dropout, runs a
    numerically safe softmax (row max subtracted, fully masked rows give
    output 0 and lse -inf) and multiplies by V with f32 accumulation.

    Requires: `attn.sdpa` ops that verify (any static or dynamic B / S).
    Guarantees: no `attn` op is left; the result is `linalg.generic`,
    `tensor` and `arith`/`math` ops only, with the exact semantics of the
    op documentation. This is the correctness reference for every other
    path and is selected by `attn-to-cpu-pipeline{math=true}`.

    ```mlir
    // before
    %o = attn.sdpa %q, %k, %v : tensor<1x2x8x16xf32>, ... -> tensor<1x2x8x16xf32>
    // after: linalg.generic ops computing S, max, exp, sum, P.V, divide
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

#endif // ATTN_CONVERSION_PASSES_TD
