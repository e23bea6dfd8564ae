// RUN: attn-opt %s --attn-tile-sdpa -split-input-file -verify-diagnostics

// What attn-tile-sdpa refuses, on the op.

func.func @pack_with_mask(%q: tensor<1x8x1x64xf16>, %k: tensor<1x2x64x64xf16>, %v: tensor<1x2x64x64xf16>, %m: tensor<1x1x1x64xi1>) -> tensor<1x8x1x64xf16> {
  // expected-error @+1 {{pack_heads tiles rows over the heads of a GQA group, which a mask would have to gather; tile this op without it}}
  %o = attn.sdpa %q, %k, %v mask(%m : tensor<1x1x1x64xi1>) {tiling = #attn.tiling<block_q = 16, block_kv = 64, pack_heads = true>} : tensor<1x8x1x64xf16>, tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16> -> tensor<1x8x1x64xf16>
  return %o : tensor<1x8x1x64xf16>
}

// -----

func.func @pack_causal_rows(%q: tensor<1x8x4x64xf16>, %k: tensor<1x2x64x64xf16>, %v: tensor<1x2x64x64xf16>) -> tensor<1x8x4x64xf16> {
  // expected-error @+1 {{pack_heads with causal needs a query length of 1: the rows of a group's heads would each need their own diagonal}}
  %o = attn.sdpa %q, %k, %v causal {tiling = #attn.tiling<block_q = 16, block_kv = 64, pack_heads = true>} : tensor<1x8x4x64xf16>, tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16> -> tensor<1x8x4x64xf16>
  return %o : tensor<1x8x4x64xf16>
}

// -----

func.func @pack_dynamic_rows(%q: tensor<1x8x?x64xf16>, %k: tensor<1x2x64x64xf16>, %v: tensor<1x2x64x64xf16>) -> tensor<1x8x?x64xf16> {
  // expected-error @+1 {{pack_heads needs a static query length (decode steps)}}
  %o = attn.sdpa %q, %k, %v {tiling = #attn.tiling<block_q = 16, block_kv = 64, pack_heads = true>} : tensor<1x8x?x64xf16>, tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16> -> tensor<1x8x?x64xf16>
  return %o : tensor<1x8x?x64xf16>
}

