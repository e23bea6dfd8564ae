// RUN: attn-opt %s --attn-tile-sdpa="block-q=2 block-kv=3 kv-splits=1" -split-input-file | FileCheck %s
// RUN: attn-opt %s --attn-tile-sdpa="block-q=64 block-kv=64 kv-splits=0 parallelism=64" -split-input-file | FileCheck %s --check-prefix=AUTO
// RUN: not attn-opt %s --attn-tile-sdpa="block-q=0" -split-input-file 2>&1 | FileCheck %s --check-prefix=ERR

// Bad options are reported on the op (ops with a tiling attribute ignore them).
// ERR: error: 'attn.sdpa' op tile sizes must be positive, got block_q = 0, block_kv = 64

// Tails: neither Sq = 5 nor Skv = 7 is a multiple of the tile, so the last
// tiles are smaller (min(), never padded); GQA reads kv head h floordiv 2.
// CHECK-DAG: #[[I0:.+]] = affine_map<()[s0] -> (s0 * 2)>
// CHECK-DAG: #[[ROWS:.+]] = affine_map<()[s0] -> (2, s0 * -2 + 5)>
// CHECK-DAG: #[[KVH:.+]] = affine_map<()[s0] -> (s0 floordiv 2)>
// CHECK-DAG: #[[J0:.+]] = affine_map<()[s0] -> (s0 * 3)>
// CHECK-DAG: #[[COLS:.+]] = affine_map<()[s0] -> (3, s0 * -3 + 7)>
// CHECK-LABEL: func.func @tails_gqa
// CHECK-SAME: (%[[Q:.+]]: tensor<1x4x5x8xf16>, %[[K:.+]]: tensor<1x2x7x8xf16>, %[[V:.+]]: tensor<1x2x7x8xf16>)
// CHECK: scf.forall (%[[B:.+]], %[[H:.+]], %[[QB:.+]]) in (1, 4, 3) shared_outs(%[[OUT:.+]] = %{{.+}})
// CHECK:   %[[ROW0:.+]] = affine.apply #[[I0]]()[%[[QB]]]
// CHECK:   %[[NR:.+]] = affine.min #[[ROWS]]()[%[[QB]]]
// CHECK:   %[[HKV:.+]] = affine.apply #[[KVH]]()[%[[H]]]
// CHECK:   %[[QT:.+]] = tensor.extract_slice %[[Q]][%[[B]], %[[H]], %[[ROW0]], 0] [1, 1, %[[NR]], 8] [1, 1, 1, 1] : tensor<1x4x5x8xf16> to tensor<?x8xf16>
// CHECK-DAG: arith.constant 0.000000e+00 : f32
// CHECK-DAG: arith.constant 0xFF800000 : f32
// CHECK:   %[[C3:.+]] = arith.constant 3 : index
// CHECK:   scf.for %[[JB:.+]] = %{{.+}} to %[[C3]] step %{{.+}} iter_args(%[[ACC:.+]] = %{{.+}}, %[[MAX:.+]] = %{{.+}}, %[[SUM:.+]] = %{{.+}})
// CHECK:     %[[COL0:.+]] = affine.apply #[[J0]]()[%[[JB]]]
// CHECK:     %[[NC:.+]] = affine.min #[[COLS]]()[%[[JB]]]
// CHECK:     %[[KT:.+]] = tensor.extract_slice %[[K]][%[[B]], %[[HKV]], %[[COL0]], 0] [1, 1, %[[NC]], 8]
// CHECK:     %[[VT:.+]] = tensor.extract_slice %[[V]][%[[B]], %[[HKV]], %[[COL0]], 0] [1, 1, %[[NC]], 8]
// CHECK:     attn.online_attention q(%[[QT]]) k(%[[KT]]) v(%[[VT]]) state(%[[ACC]], %[[MAX]], %[[SUM]]) at(%[[B]], %[[H]], %[[ROW0]], %[[COL0]]) scale
// CHECK-NOT: causal
// CHECK:   attn.online_attention_finalize
// CHECK:   scf.forall.in_parallel
// CHECK:     tensor.parallel_insert_slice %{{.+}} into %[[OUT]][%[[B]], %[[H]], %[[ROW0]], 0] [1, 1, %[[NR]], 8]
// AUTO-LABEL: func.func @tails_gqa
// AUTO: scf.forall (%{{.+}}) in (1, 4, 1)
func.func @tails_gqa(%q: tensor<1x4x5x8xf16>, %k: tensor<1x2x7x8xf16>, %v: tensor<1x2x7x8xf16>) -> tensor<1x4x5x8xf16> {
  %o = attn.sdpa %q, %k, %v : tensor<1x4x5x8xf16>, tensor<1x2x7x8xf16>, tensor<1x2x7x8xf16> -> tensor<1x4x5x8xf16>
  return %o : tensor<1x4x5x8xf16>
}

// -----

// Causal, tiling attribute (Br = 4, Bc = 2) overriding the options. Query
// tile i0 sees keys < clamp(i0 + rows + diag, 0, Skv) (diag = 0): the loop
// bound skips blocks above the diagonal. Blocks with j0 + cols - 1 <= i0 +
// diag (visible to every row) run unmasked; the rest carry causal(%diag).
// CHECK-DAG: #[[VIS:.+]] = affine_map<()[s0] -> (s0 * 4 + 4, 0)>
// CHECK-DAG: #[[CLAMP:.+]] = affine_map<()[s0] -> (s0, 8)>
// CHECK-DAG: #[[CDIV:.+]] = affine_map<()[s0] -> (s0 ceildiv 2)>
// CHECK-DAG: #[[FULL:.+]] = affine_map<()[s0] -> (s0 * 4 + 1, 0)>
// CHECK-DAG: #[[FDIV:.+]] = affine_map<()[s0] -> (s0 floordiv 2)>
// CHECK-LABEL: func.func @causal
// CHECK: scf.forall (%{{.+}}, %{{.+}}, %[[QB:.+]]) in (2, 1, 2) shared_outs(%[[OUT:.+]] = %{{.+}}, %[[LSE:.+]] = %{{.+}})
// CHECK:   %[[V0:.+]] = affine.max #[[VIS]]()[%[[QB]]]
// CHECK:   %[[V1:.+]] = affine.min #[[CLAMP]]()[%[[V0]]]
// CHECK:   %[[NVISIT:.+]] = affine.apply #[[CDIV]]()[%[[V1]]]
// CHECK:   %[[F0:.+]] = affine.max #[[FULL]]()[%[[QB]]]
// CHECK:   %[[F1:.+]] = affine.min #[[CLAMP]]()[%[[F0]]]
// CHECK:   %[[NFULL:.+]] = affine.apply #[[FDIV]]()[%[[F1]]]
// CHECK:   %[[A:.+]]:3 = scf.for %{{.+}} = %{{.+}} to %[[NFULL]]
// CHECK:     attn.online_attention
// CHECK-NOT: causal
// CHECK-SAME: scale
// CHECK:   %[[DIAG:.+]]:3 = scf.for %{{.+}} = %[[NFULL]] to %[[NVISIT]] {{.+}} iter_args(%{{.+}} = %[[A]]#0, %{{.+}} = %[[A]]#1, %{{.+}} = %[[A]]#2)
// CHECK:     %[[D:.+]] = arith.constant 0 : index
// CHECK:     attn.online_attention {{.+}} causal(%[[D]])
// CHECK:   attn.online_attention_finalize %[[DIAG]]#0, %[[DIAG]]#1, %[[DIAG]]#2 : {{.+}} -> tensor<4x8xf32>, tensor<4xf32>
// CHECK:   tensor.parallel_insert_slice %{{.+}} into %[[OUT]]
// CHECK:   tensor.parallel_insert_slice %{{.+}} into %[[LSE]]
// The attribute wins over the options in the AUTO run too.
// AUTO-LABEL: func.func @causal
// AUTO: scf.forall (%{{.+}}) in (2, 1, 2)
func.func @causal(%q: tensor<2x1x8x8xf32>, %k: tensor<2x1x8x8xf32>, %v: tensor<2x1x8x8xf32>) -> (tensor<2x1x8x8xf32>, tensor<2x1x8xf32>) {
  %o, %l = attn.sdpa %q, %k, %v causal {tiling = #attn.tiling<block_q = 4, block_kv = 2, kv_splits = 1>} : tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32> -> tensor<2x1x8x8xf32>, tensor<2x1x8xf32>
  return %o, %l : tensor<2x1x8x8xf32>, tensor<2x1x8xf32>
}

// -----

// Split-KV: a fourth forall dimension over 3 chunks of the 8 key blocks
// (3 blocks per chunk), partial states into [B, Hq, N, Sq(, Dv)], then a
// second forall merging the N partials of each query tile.
// CHECK-DAG: #[[LO:.+]] = affine_map<()[s0] -> (s0 * 3)>
// CHECK-DAG: #[[HI:.+]] = affine_map<()[s0] -> (s0 * 3 + 3, 8)>
// CHECK-LABEL: func.func @split
// CHECK: %[[PART:.+]]:3 = scf.forall (%[[B:.+]], %[[H:.+]], %[[QB:.+]], %[[N:.+]]) in (1, 2, 1, 3) shared_outs(%[[PA:.+]] = %{{.+}}, %[[PM:.+]] = %{{.+}}, %[[PS:.+]] = %{{.+}}) -> (tensor<1x2x3x1x8xf32>, tensor<1x2x3x1xf32>, tensor<1x2x3x1xf32>)
// CHECK:   %[[JLO:.+]] = affine.apply #[[LO]]()[%[[N]]]
// CHECK:   %[[JHI:.+]] = affine.min #[[HI]]()[%[[N]]]
// CHECK:   %[[ST:.+]]:3 = scf.for %{{.+}} = %[[JLO]] to %[[JHI]]
// CHECK:     attn.online_attention {{.+}} : tensor<1x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
// CHECK:   tensor.parallel_insert_slice %[[ST]]#0 into %[[PA]][%[[B]], %[[H]], %[[N]], %[[QB]], 0] [1, 1, 1, 1, 8]
// CHECK:   tensor.parallel_insert_slice %[[ST]]#1 into %[[PM]][%[[B]], %[[H]], %[[N]], %[[QB]]]
// CHECK:   tensor.parallel_insert_slice %[[ST]]#2 into %[[PS]][%[[B]], %[[H]], %[[N]], %[[QB]]]
// CHECK: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (1, 2, 1) shared_outs
// CHECK:   %[[A:.+]] = tensor.extract_slice %[[PART]]#0{{.+}} to tensor<3x1x8xf32>
// CHECK:   %[[M:.+]] = tensor.extract_slice %[[PART]]#1{{.+}} to tensor<3x1xf32>
// CHECK:   %[[S:.+]] = tensor.extract_slice %[[PART]]#2{{.+}} to tensor<3x1xf32>
// CHECK:   %[[MA:.+]], %[[MM:.+]], %[[MS:.+]] = attn.merge_partials %[[A]], %[[M]], %[[S]]
// CHECK:   attn.online_attention_finalize %[[MA]], %[[MM]], %[[MS]]
// CHECK:   tensor.parallel_insert_slice
// The attribute's kv_splits = 3 wins over kv-splits=0.
// AUTO-LABEL: func.func @split
// AUTO: scf.forall (%{{.+}}) in (1, 2, 1, 3)
func.func @split(%q: tensor<1x2x1x8xf32>, %k: tensor<1x2x64x8xf32>, %v: tensor<1x2x64x8xf32>) -> tensor<1x2x1x8xf32> {
  %o = attn.sdpa %q, %k, %v {tiling = #attn.tiling<block_q = 16, block_kv = 8, kv_splits = 3>} : tensor<1x2x1x8xf32>, tensor<1x2x64x8xf32>, tensor<1x2x64x8xf32> -> tensor<1x2x1x8xf32>
  return %o : tensor<1x2x1x8xf32>
}

// -----

// Auto split-KV: B * Hq * ceildiv(Sq, Br) = 2 tiles < 64 workers and
// Skv / (4 * Bc) = 1024 / 256 = 4: N = min(ceildiv(64, 2), 4) = 4.
// AUTO-LABEL: func.func @auto_split
// AUTO: scf.forall (%{{.+}}) in (1, 2, 1, 4)
// AUTO: attn.merge_partials {{.+}} : tensor<4x1x8xf32>
// CHECK-LABEL: func.func @auto_split
// CHECK-NOT: attn.merge_partials
// CHECK: return
func.func @auto_split(%q: tensor<1x2x1x8xf32>, %k: tensor<1x2x1024x8xf32>, %v: tensor<1x2x1024x8xf32>) -> tensor<1x2x1x8xf32> {
  %o = attn.sdpa %q, %k, %v : tensor<1x2x1x8xf32>, tensor<1x2x1024x8xf32>, tensor<1x2x1024x8xf32> -> tensor<1x2x1x8xf32>
  return %o : tensor<1x2x1x8xf32>
}

// -----

// Dynamic B and S through tensor.dim; the mask broadcasts over B (static
// size 1: index 0) and over H when its dynamic size is 1; dropout gets the
// seed and the global (b, h, i0, j0).
// CHECK-LABEL: func.func @mask_dropout_dyn
// CHECK-SAME: %[[MASK:[^:]+]]: tensor<1x?x?x?xi1>, %[[SEED:.+]]: i64
// CHECK: %[[BD:.+]] = tensor.dim %{{.+}}, %{{.+}} : tensor<?x2x?x8xf32>
// CHECK: scf.forall (%[[B:.+]], %[[H:.+]], %{{.+}}) in (%[[BD]], 2, %{{.+}})
// CHECK:   scf.for
// CHECK:     %[[MH:.+]] = tensor.dim %[[MASK]], %{{.+}} : tensor<1x?x?x?xi1>
// CHECK:     %[[ONE:.+]] = arith.cmpi eq, %[[MH]], %{{.+}} : index
// CHECK:     %[[HI:.+]] = arith.select %[[ONE]], %{{.+}}, %[[H]] : index
// CHECK:     %[[MT:.+]] = tensor.extract_slice %[[MASK]][%{{.+}}, %[[HI]], %[[I0:.+]], %[[J0:.+]]] [1, 1, %{{.+}}, %{{.+}}] [1, 1, 1, 1] : tensor<1x?x?x?xi1> to tensor<?x?xi1>
// CHECK:     attn.online_attention {{.+}} mask(%[[MT]] : tensor<?x?xi1>) {{.+}} at(%[[B]], %[[H]], %[[I0]], %[[J0]]) scale({{.+}}) dropout(2.500000e-01, seed %[[SEED]])
func.func @mask_dropout_dyn(%q: tensor<?x2x?x8xf32>, %k: tensor<?x2x?x8xf32>, %v: tensor<?x2x?x8xf32>, %m: tensor<1x?x?x?xi1>, %seed: i64) -> tensor<?x2x?x8xf32> {
  %o = attn.sdpa %q, %k, %v mask(%m : tensor<1x?x?x?xi1>) dropout(0.25, seed %seed) : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32> -> tensor<?x2x?x8xf32>
  return %o : tensor<?x2x?x8xf32>
}

// -----

// No value of Sq x Skv elements exists anywhere.
// CHECK-LABEL: func.func @big
// CHECK-NOT: tensor<1024x1024
// CHECK: return
// AUTO-LABEL: func.func @big
// AUTO-NOT: tensor<1024x1024
// AUTO: return
func.func @big(%q: tensor<1x1x1024x64xf16>, %k: tensor<1x1x1024x64xf16>, %v: tensor<1x1x1024x64xf16>) -> tensor<1x1x1024x64xf16> {
  %o = attn.sdpa %q, %k, %v causal : tensor<1x1x1024x64xf16>, tensor<1x1x1024x64xf16>, tensor<1x1x1024x64xf16> -> tensor<1x1x1024x64xf16>
  return %o : tensor<1x1x1024x64xf16>
}
