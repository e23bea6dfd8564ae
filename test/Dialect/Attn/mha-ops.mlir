// RUN: attn-opt %s | attn-opt | FileCheck %s
// RUN: attn-opt %s --mlir-print-op-generic | attn-opt | FileCheck %s

// Round trips of attn.mha: separate and fused weights, biases, GQA,
// cross-attention, value_dim, mask / causal / scale / dropout, dynamic
// batch and sequence.

// CHECK-LABEL: func.func @mha_separate(
// CHECK-SAME: %[[X:[^:]+]]: tensor<2x16x64xf16>, %[[WQ:[^:]+]]: tensor<64x64xf16>, %[[WK:[^:]+]]: tensor<64x64xf16>, %[[WV:[^:]+]]: tensor<64x64xf16>, %[[WO:[^:]+]]: tensor<64x64xf16>)
// CHECK: %[[Y:.+]] = attn.mha %[[X]] wq(%[[WQ]] : tensor<64x64xf16>) wk(%[[WK]] : tensor<64x64xf16>) wv(%[[WV]] : tensor<64x64xf16>) wo(%[[WO]] : tensor<64x64xf16>) heads(4, 4) head_dim(16) : tensor<2x16x64xf16> -> tensor<2x16x64xf16>
// CHECK: return %[[Y]]
func.func @mha_separate(%x: tensor<2x16x64xf16>, %wq: tensor<64x64xf16>, %wk: tensor<64x64xf16>, %wv: tensor<64x64xf16>, %wo: tensor<64x64xf16>) -> tensor<2x16x64xf16> {
  %y = attn.mha %x wq(%wq : tensor<64x64xf16>) wk(%wk : tensor<64x64xf16>) wv(%wv : tensor<64x64xf16>) wo(%wo : tensor<64x64xf16>) heads(4, 4) head_dim(16) : tensor<2x16x64xf16> -> tensor<2x16x64xf16>
  return %y : tensor<2x16x64xf16>
}

// CHECK-LABEL: func.func @mha_fused_bias_gqa(
// CHECK: attn.mha %{{.+}} wqkv(%{{.+}} : tensor<96x64xbf16>) wo(%{{.+}} : tensor<64x64xbf16>) bqkv(%{{.+}} : tensor<96xbf16>) bo(%{{.+}} : tensor<64xbf16>) heads(4, 1) head_dim(16) causal scale(1.250000e-01) : tensor<1x8x64xbf16> -> tensor<1x8x64xbf16>
func.func @mha_fused_bias_gqa(%x: tensor<1x8x64xbf16>, %w: tensor<96x64xbf16>, %b: tensor<96xbf16>, %wo: tensor<64x64xbf16>, %bo: tensor<64xbf16>) -> tensor<1x8x64xbf16> {
  %y = attn.mha %x wqkv(%w : tensor<96x64xbf16>) wo(%wo : tensor<64x64xbf16>) bqkv(%b : tensor<96xbf16>) bo(%bo : tensor<64xbf16>) heads(4, 1) head_dim(16) causal scale(0.125) : tensor<1x8x64xbf16> -> tensor<1x8x64xbf16>
  return %y : tensor<1x8x64xbf16>
}

// CHECK-LABEL: func.func @mha_cross(
// CHECK: attn.mha %{{.+}} kv(%{{.+}} : tensor<?x?x48xf32>) wq(%{{.+}} : tensor<32x64xf32>) wk(%{{.+}} : tensor<16x48xf32>) wv(%{{.+}} : tensor<24x48xf32>) wo(%{{.+}} : tensor<64x48xf32>) bq(%{{.+}} : tensor<32xf32>) bk(%{{.+}} : tensor<16xf32>) bv(%{{.+}} : tensor<24xf32>) mask(%{{.+}} : tensor<1x1x?x?xi1>) heads(4, 2) head_dim(8) value_dim(12) dropout(1.000000e-01, seed %{{.+}}) : tensor<?x?x64xf32> -> tensor<?x?x64xf32>
func.func @mha_cross(%x: tensor<?x?x64xf32>, %kv: tensor<?x?x48xf32>, %wq: tensor<32x64xf32>, %wk: tensor<16x48xf32>, %wv: tensor<24x48xf32>, %wo: tensor<64x48xf32>, %bq: tensor<32xf32>, %bk: tensor<16xf32>, %bv: tensor<24xf32>, %m: tensor<1x1x?x?xi1>, %seed: i64) -> tensor<?x?x64xf32> {
  %y = attn.mha %x kv(%kv : tensor<?x?x48xf32>) wq(%wq : tensor<32x64xf32>) wk(%wk : tensor<16x48xf32>) wv(%wv : tensor<24x48xf32>) wo(%wo : tensor<64x48xf32>) bq(%bq : tensor<32xf32>) bk(%bk : tensor<16xf32>) bv(%bv : tensor<24xf32>) mask(%m : tensor<1x1x?x?xi1>) heads(4, 2) head_dim(8) value_dim(12) dropout(0.1, seed %seed) : tensor<?x?x64xf32> -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}
