//===- AttnAttrs.td - attn attributes ---------------------------*- tablegen -*-===//
#ifndef ATTN_ATTRS_TD
#define ATTN_ATTRS_TD

include "attn/Dialect/Attn/IR/AttnDialect.td"
include "mlir/IR/AttrTypeBase.td"

def Attn_TilingAttr : AttrDef<Attn_Dialect, "Tiling"> {
  let mnemonic = "tiling";
  let summary = "Tile sizes for the FlashAttention rewrite of one attn.sdpa";
  let description = [{
    Chooses the tiles of `attn-tile-sdpa` for one op, overriding the pass
    options, so that a tuner can set them per op:

    - `block_q`: query rows per parallel tile (Br),
    - `block_kv`: keys per step of the sequential loop (Bc),
    - `kv_splits`: number of chunks the key loop is split into and run in
      parallel (split-KV / flash-decoding); 1 disables it, 0 lets the pass
      choose from the shapes.

    Example: `{tiling = #attn.tiling<block_q = 64, block_kv = 32, kv_splits = 1>}`
  }];
  let parameters = (ins "int64_t":$block_q, "int64_t":$block_kv,
                        DefaultValuedParameter<"int64_t", "1">:$kv_splits);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // ATTN_ATTRS_TD
