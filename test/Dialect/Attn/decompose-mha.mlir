// RUN: attn-opt %s --attn-decompose-mha --split-input-file | FileCheck %s

// Separate weights, f16, biases, GQA (4 query heads, 2 kv heads), causal.
// Each projection writes [B, H, S, D] directly (the output map), the
// weight's head split is an expand_shape; the output projection reduces
// (h, d) straight from attn.sdpa's [B, Hq, S, Dv].

// CHECK-DAG: #[[X:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d4)>
// CHECK-DAG: #[[W:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d3, d4)>
// CHECK-DAG: #[[BHSD:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[ID4:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[HD:.+]] = affine_map<(d0, d1, d2, d3) -> (d1, d3)>
// CHECK-DAG: #[[O:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d1, d4)>
// CHECK-DAG: #[[WO:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d2, d3, d4)>
// CHECK-DAG: #[[Y:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>
// CHECK-DAG: #[[E:.+]] = affine_map<(d0, d1, d2) -> (d2)>

// CHECK-LABEL: func.func @separate_gqa_bias(
// CHECK-SAME: %[[XA:[^:]+]]: tensor<2x8x64xf16>, %[[WQ:[^:]+]]: tensor<64x64xf16>, %[[WK:[^:]+]]: tensor<32x64xf16>, %[[WV:[^:]+]]: tensor<32x64xf16>, %[[WOA:[^:]+]]: tensor<64x64xf16>, %[[BQ:[^:]+]]: tensor<64xf16>, %[[BK:[^:]+]]: tensor<32xf16>, %[[BV:[^:]+]]: tensor<32xf16>, %[[BO:[^:]+]]: tensor<64xf16>)
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// q32[b,h,s,d] = sum_e x[b,s,e] * Wq[h*16 + d, e]
// CHECK: %[[WQ3:.+]] = tensor.expand_shape %[[WQ]] {{\[}}[0, 1], [2]] output_shape [4, 16, 64] : tensor<64x64xf16> into tensor<4x16x64xf16>
// CHECK: %[[QACC:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.+}} : tensor<2x4x8x16xf32>)
// CHECK: %[[Q32:.+]] = linalg.generic {indexing_maps = [#[[X]], #[[W]], #[[BHSD]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[XA]], %[[WQ3]] : tensor<2x8x64xf16>, tensor<4x16x64xf16>) outs(%[[QACC]] : tensor<2x4x8x16xf32>)
// CHECK: arith.extf
// CHECK: arith.extf
// CHECK: arith.mulf {{.+}} fastmath<contract>
// CHECK: arith.addf {{.+}} fastmath<contract>
// q = f16(q32 + bq[h*16 + d])
// CHECK: %[[BQ2:.+]] = tensor.expand_shape %[[BQ]] {{\[}}[0, 1]] output_shape [4, 16] : tensor<64xf16> into tensor<4x16xf16>
// CHECK: %[[Q:.+]] = linalg.generic {indexing_maps = [#[[ID4]], #[[HD]], #[[ID4]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[Q32]], %[[BQ2]] : tensor<2x4x8x16xf32>, tensor<4x16xf16>) outs(%{{.+}} : tensor<2x4x8x16xf16>)
// CHECK: arith.addf
// CHECK: arith.truncf {{.+}} : f32 to f16
// k, v: the same over the 2 kv heads
// CHECK: tensor.expand_shape %[[WK]] {{\[}}[0, 1], [2]] output_shape [2, 16, 64]
// CHECK: %[[K:.+]] = linalg.generic
// CHECK: } -> tensor<2x2x8x16xf16>
// CHECK: tensor.expand_shape %[[WV]] {{\[}}[0, 1], [2]] output_shape [2, 16, 64]
// CHECK: %[[V:.+]] = linalg.generic
// CHECK: } -> tensor<2x2x8x16xf16>
// CHECK: %[[OUT:.+]] = attn.sdpa %[[Q]], %{{.+}}, %{{.+}} causal : tensor<2x4x8x16xf16>, tensor<2x2x8x16xf16>, tensor<2x2x8x16xf16> -> tensor<2x4x8x16xf16>
// y32[b,s,e] = sum_{h,d} o[b,h,s,d] * Wo[e, h*16 + d]
// CHECK: %[[WO3:.+]] = tensor.expand_shape %[[WOA]] {{\[}}[0], [1, 2]] output_shape [64, 4, 16] : tensor<64x64xf16> into tensor<64x4x16xf16>
// CHECK: %[[Y32:.+]] = linalg.generic {indexing_maps = [#[[O]], #[[WO]], #[[Y]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%[[OUT]], %[[WO3]] : tensor<2x4x8x16xf16>, tensor<64x4x16xf16>) outs(%{{.+}} : tensor<2x8x64xf32>)
// y = f16(y32 + bo[e])
// CHECK: %[[YR:.+]] = linalg.generic {{.+}} ins(%[[Y32]], %[[BO]] : tensor<2x8x64xf32>, tensor<64xf16>) outs(%{{.+}} : tensor<2x8x64xf16>)
// CHECK: arith.truncf
// CHECK: return %[[YR]]
// CHECK-NOT: attn.mha
// CHECK-NOT: linalg.transpose
func.func @separate_gqa_bias(%x: tensor<2x8x64xf16>, %wq: tensor<64x64xf16>, %wk: tensor<32x64xf16>, %wv: tensor<32x64xf16>, %wo: tensor<64x64xf16>, %bq: tensor<64xf16>, %bk: tensor<32xf16>, %bv: tensor<32xf16>, %bo: tensor<64xf16>) -> tensor<2x8x64xf16> {
  %y = attn.mha %x wq(%wq : tensor<64x64xf16>) wk(%wk : tensor<32x64xf16>) wv(%wv : tensor<32x64xf16>) wo(%wo : tensor<64x64xf16>) bq(%bq : tensor<64xf16>) bk(%bk : tensor<32xf16>) bv(%bv : tensor<32xf16>) bo(%bo : tensor<64xf16>) heads(4, 2) head_dim(16) causal : tensor<2x8x64xf16> -> tensor<2x8x64xf16>
  return %y : tensor<2x8x64xf16>
}

// -----

// Fused QKV (torch's in_proj_weight): rows [0, 64) are Wq, [64, 96) Wk,
// [96, 128) Wv (value_dim 16 over 2 kv heads); f32 without biases needs
// no epilogue, so attn.sdpa reads the contractions' results.

// CHECK-LABEL: func.func @fused_f32(
// CHECK-SAME: %[[XA:[^:]+]]: tensor<1x8x64xf32>, %[[W:[^:]+]]: tensor<128x64xf32>
// CHECK-DAG: %[[WQ:.+]] = tensor.extract_slice %[[W]][0, 0] [64, 64] [1, 1]
// CHECK-DAG: %[[WK:.+]] = tensor.extract_slice %[[W]][64, 0] [32, 64] [1, 1]
// CHECK-DAG: %[[WV:.+]] = tensor.extract_slice %[[W]][96, 0] [32, 64] [1, 1]
// CHECK: tensor.expand_shape %[[WQ]] {{\[}}[0, 1], [2]] output_shape [4, 16, 64]
// CHECK: %[[Q:.+]] = linalg.generic
// CHECK: } -> tensor<1x4x8x16xf32>
// CHECK: tensor.expand_shape %[[WK]] {{\[}}[0, 1], [2]] output_shape [2, 16, 64]
// CHECK: %[[K:.+]] = linalg.generic
// CHECK: } -> tensor<1x2x8x16xf32>
// CHECK: tensor.expand_shape %[[WV]] {{\[}}[0, 1], [2]] output_shape [2, 16, 64]
// CHECK: %[[V:.+]] = linalg.generic
// CHECK: } -> tensor<1x2x8x16xf32>
// CHECK: %[[OUT:.+]] = attn.sdpa %[[Q]], %[[K]], %[[V]] scale(2.500000e-01) :
// CHECK: %[[Y:.+]] = linalg.generic {{.+}} ins(%[[OUT]], %{{.+}} : tensor<1x4x8x16xf32>, tensor<64x4x16xf32>)
// CHECK-NEXT: ^bb0
// CHECK-NOT: linalg.generic
// CHECK: return %[[Y]]
func.func @fused_f32(%x: tensor<1x8x64xf32>, %w: tensor<128x64xf32>, %wo: tensor<64x64xf32>) -> tensor<1x8x64xf32> {
  %y = attn.mha %x wqkv(%w : tensor<128x64xf32>) wo(%wo : tensor<64x64xf32>) heads(4, 2) head_dim(16) scale(0.25) : tensor<1x8x64xf32> -> tensor<1x8x64xf32>
  return %y : tensor<1x8x64xf32>
}

// -----

// Cross-attention with dynamic B, S, Skv: sizes come from tensor.dim of x
// (queries, output) and kv (keys, values); value_dim 12; the mask and
// dropout go to attn.sdpa unchanged.

// CHECK-LABEL: func.func @cross_dynamic(
// CHECK-SAME: %[[XA:[^:]+]]: tensor<?x?x64xbf16>, %[[KV:[^:]+]]: tensor<?x?x48xbf16>
// CHECK-SAME: %[[M:[^:]+]]: tensor<1x1x?x?xi1>, %[[SEED:[^:]+]]: i64
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK: %[[B:.+]] = tensor.dim %[[XA]], %[[C0]]
// CHECK: %[[S:.+]] = tensor.dim %[[XA]], %[[C1]]
// CHECK: tensor.empty(%[[B]], %[[S]]) : tensor<?x4x?x8xf32>
// CHECK: %[[Q:.+]] = linalg.generic
// CHECK: } -> tensor<?x4x?x8xbf16>
// CHECK: %[[KB:.+]] = tensor.dim %[[KV]], %[[C0]]
// CHECK: %[[SKV:.+]] = tensor.dim %[[KV]], %[[C1]]
// CHECK: tensor.empty(%[[KB]], %[[SKV]]) : tensor<?x2x?x8xf32>
// CHECK: %[[K:.+]] = linalg.generic {{.+}} ins(%[[KV]], {{.+}}
// CHECK: } -> tensor<?x2x?x8xbf16>
// CHECK: tensor.empty({{.+}}) : tensor<?x2x?x12xf32>
// CHECK: %[[V:.+]] = linalg.generic {{.+}} ins(%[[KV]], {{.+}}
// CHECK: } -> tensor<?x2x?x12xbf16>
// CHECK: %[[OUT:.+]] = attn.sdpa %{{.+}}, %{{.+}}, %{{.+}} mask(%[[M]] : tensor<1x1x?x?xi1>) dropout(1.000000e-01, seed %[[SEED]]) : tensor<?x4x?x8xbf16>, tensor<?x2x?x8xbf16>, tensor<?x2x?x12xbf16> -> tensor<?x4x?x12xbf16>
// CHECK: tensor.empty({{.+}}) : tensor<?x?x64xf32>
// CHECK: linalg.generic {{.+}} ins(%[[OUT]], {{.+}} : tensor<?x4x?x12xbf16>, tensor<64x4x12xbf16>)
// CHECK: -> tensor<?x?x64xbf16>
func.func @cross_dynamic(%x: tensor<?x?x64xbf16>, %kv: tensor<?x?x48xbf16>, %wq: tensor<32x64xbf16>, %wk: tensor<16x48xbf16>, %wv: tensor<24x48xbf16>, %wo: tensor<64x48xbf16>, %m: tensor<1x1x?x?xi1>, %seed: i64) -> tensor<?x?x64xbf16> {
  %y = attn.mha %x kv(%kv : tensor<?x?x48xbf16>) wq(%wq : tensor<32x64xbf16>) wk(%wk : tensor<16x48xbf16>) wv(%wv : tensor<24x48xbf16>) wo(%wo : tensor<64x48xbf16>) mask(%m : tensor<1x1x?x?xi1>) heads(4, 2) head_dim(8) value_dim(12) dropout(0.1, seed %seed) : tensor<?x?x64xbf16> -> tensor<?x?x64xbf16>
  return %y : tensor<?x?x64xbf16>
}
