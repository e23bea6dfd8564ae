//===- AttnDialect.td - the attn dialect ------------------------*- tablegen -*-===//
#ifndef ATTN_DIALECT_TD
#define ATTN_DIALECT_TD

include "mlir/IR/OpBase.td"

def Attn_Dialect : Dialect {
  let name = "attn";
  let cppNamespace = "::mlir::attn";
  let summary = "Scaled dot-product attention and its FlashAttention decomposition";
  let description = [{
    The `attn` dialect holds one user-facing op, `attn.sdpa` (level L0), with
    the semantics of PyTorch's `scaled_dot_product_attention` plus grouped
    query attention and an optional log-sum-exp result, and the ops that the
    FlashAttention rewrite produces on the way down (level L1): the
    online-softmax tile step that carries the running state (accumulator,
    row max, row sum), its finalization, and the merge of split-KV partial
    states. See docs/Semantics.md for the exact math.
  }];
  let useDefaultAttributePrinterParser = 1;
  let dependentDialects = ["::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
}

class Attn_Op<string mnemonic, list<Trait> traits = []>
    : Op<Attn_Dialect, mnemonic, traits>;

#endif // ATTN_DIALECT_TD
