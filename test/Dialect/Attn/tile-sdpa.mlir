// RUN: attn-opt %s --attn-tile-sdpa="block-q=2 block-kv=3 kv-splits=1 max-dynamic-kv=4096" -split-input-file | FileCheck %s
// RUN: attn-opt %s --attn-tile-sdpa="block-q=64 block-kv=64 kv-splits=0 parallelism=64 max-dynamic-kv=4096" -split-input-file | FileCheck %s --check-prefix=AUTO
// RUN: not attn-opt %s --attn-tile-sdpa="block-q=0" -split-input-file 2>&1 | FileCheck %s --check-prefix=ERR

// Bad options are reported on the op (ops with a tiling attribute ignore them).
// ERR: error: 'attn.sdpa' op tile sizes must be positive, got block_q = 0, block_kv = 64

// Tails: neither Sq = 5 nor Skv = 7 is a multiple of the tile, so the last
// tiles are smaller (min(), never padded); GQA reads kv head h floordiv 2.
// The decision taken is recorded on the forall.
// CHECK-DAG: #[[KVH:.+]] = affine_map<()[s0] -> (s0 floordiv 2)>
// CHECK-DAG: #[[I0:.+]] = affine_map<()[s0] -> (s0 * 2)>
// CHECK-DAG: #[[ROWS:.+]] = affine_map<()[s0] -> (2, s0 * -2 + 5)>
// CHECK-DAG: #[[J0:.+]] = affine_map<()[s0] -> (s0 * 3)>
// CHECK-DAG: #[[COLS:.+]] = affine_map<()[s0] -> (3, s0 * -3 + 7)>
// CHECK-LABEL: func.func @tails_gqa
// CHECK-SAME: (%[[Q:.+]]: tensor<1x4x5x8xf16>, %[[K:.+]]: tensor<1x2x7x8xf16>, %[[V:.+]]: tensor<1x2x7x8xf16>)
// CHECK: scf.forall (%[[B:.+]], %[[H:.+]], %[[QB:.+]]) in (1, 4, 3) shared_outs(%[[OUT:.+]] = %{{.+}})
// CHECK:   %[[HKV:.+]] = affine.apply #[[KVH]]()[%[[H]]]
// CHECK:   %[[ROW0:.+]] = affine.apply #[[I0]]()[%[[QB]]]
// CHECK:   %[[NR:.+]] = affine.min #[[ROWS]]()[%[[QB]]]
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
// CHECK: } {attn.tiling = #attn.tiling<block_q = 2, block_kv = 3>}
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

// Split-KV: a fourth forall dimension over 3 chunks of the key blocks the
// tile visits (8 here: chunk n takes [n * per, min((n + 1) * per, 8)),
// per = ceil(8 / 3) = 3), each chunk's partial result (finalize partial:
// O = acc / sum in f32) into [B, Hq, N, Sq, Dv] and its max and sum into
// [B, Hq, N, 2, Sq] (one tensor, so one workspace), then a second forall
// merging the N partials of each query tile.
// CHECK-LABEL: func.func @split
// CHECK: %[[PART:.+]]:2 = scf.forall (%[[B:.+]], %[[H:.+]], %[[QB:.+]], %[[N:.+]]) in (1, 2, 1, 3) shared_outs(%[[PO:.+]] = %{{.+}}, %[[PS:.+]] = %{{.+}}) -> (tensor<1x2x3x1x8xf32>, tensor<1x2x3x2x1xf32>)
// per = (8 + 3 - 1) / 3, lo = min(n * per, 8), hi = min(lo + per, 8)
// CHECK:   %[[PER:.+]] = arith.divui
// CHECK:   %[[LO0:.+]] = arith.muli %[[N]], %[[PER]]
// CHECK:   %[[LO:.+]] = arith.minui %[[LO0]]
// CHECK:   %[[HI0:.+]] = arith.addi %[[LO]], %[[PER]]
// CHECK:   %[[HI:.+]] = arith.minui %[[HI0]]
// CHECK:   %[[ST:.+]]:3 = scf.for %{{.+}} = %[[LO]] to %[[HI]]
// CHECK:     attn.online_attention {{.+}} : tensor<1x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
// CHECK:   %[[O:.+]] = attn.online_attention_finalize %[[ST]]#0, %[[ST]]#1, %[[ST]]#2 partial : {{.+}} -> tensor<1x8xf32>{{$}}
// CHECK:   tensor.parallel_insert_slice %[[O]] into %[[PO]][%[[B]], %[[H]], %[[N]], %[[QB]], 0] [1, 1, 1, 1, 8]
// CHECK:   tensor.parallel_insert_slice %[[ST]]#1 into %[[PS]][%[[B]], %[[H]], %[[N]], 0, %[[QB]]] [1, 1, 1, 1, 1]
// CHECK:   tensor.parallel_insert_slice %[[ST]]#2 into %[[PS]][%[[B]], %[[H]], %[[N]], 1, %[[QB]]] [1, 1, 1, 1, 1]
// CHECK: } {attn.tiling = #attn.tiling<block_q = 1, block_kv = 8, kv_splits = 3>}
// CHECK: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (1, 2, 1) shared_outs
// CHECK:   %[[A:.+]] = tensor.extract_slice %[[PART]]#0{{.+}} to tensor<3x1x8xf32>
// CHECK:   %[[M:.+]] = tensor.extract_slice %[[PART]]#1[%{{.+}}, %{{.+}}, 0, 0, %{{.+}}] [1, 1, 3, 1, 1] {{.+}} to tensor<3x1xf32>
// CHECK:   %[[L:.+]] = tensor.extract_slice %[[PART]]#1[%{{.+}}, %{{.+}}, 0, 1, %{{.+}}] [1, 1, 3, 1, 1] {{.+}} to tensor<3x1xf32>
// CHECK:   %[[OUT:.+]] = attn.merge_partials %[[A]], %[[M]], %[[L]] : tensor<3x1x8xf32>, tensor<3x1xf32>, tensor<3x1xf32> -> tensor<1x8xf32>
// CHECK:   tensor.parallel_insert_slice %[[OUT]]
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
// AUTO: attn.merge_partials {{.+}} : tensor<4x1x8xf32>, tensor<4x1xf32>, tensor<4x1xf32> -> tensor<1x8xf32>
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

// -----

// Static tiles (tensor cores, cooperative matrices): every tile is
// [Br = 64, ...] / [Bc = 32, ...]. Sq = Skv = 100: the last query tile's
// rows 36..63 are zero padding (never written: only rows [0, rows) are
// inserted), and the key blocks are split at the first row's diagonal:
//   limit  = clamp(i0 + diag + 1, 0, Skv)       keys every row sees
//   nWhole = limit floordiv Bc                   whole blocks: no pad, no mask
//   nVisit = ceildiv(clamp(i0 + rows + diag, 0, Skv), Bc)
// Blocks [nWhole, nVisit) straddle the diagonal or the end of the keys:
// their K/V tiles are the [cols] keys padded with zeros to Bc (a padded V
// row meets P = 0), the mask tile is padded with poison (its padded keys
// and rows are masked or never written) and the step masks keys >= Skv
// (kv_bound) and above the diagonal.
// CHECK-DAG: #[[ROWS:.+]] = affine_map<()[s0] -> (64, s0 * -64 + 100)>
// CHECK-DAG: #[[PADR:.+]] = affine_map<()[s0] -> (-s0 + 64)>
// CHECK-DAG: #[[WHOLE0:.+]] = affine_map<()[s0] -> (s0 * 64 + 1, 0)>
// CHECK-DAG: #[[WHOLE:.+]] = affine_map<()[s0] -> (s0 floordiv 32)>
// CHECK-DAG: #[[COLS:.+]] = affine_map<()[s0] -> (32, s0 * -32 + 100)>
// CHECK-LABEL: func.func @static_causal
// CHECK-SAME: %[[MASK:[^:]+]]: tensor<1x1x100x100xi1>
// CHECK: scf.forall (%[[B:.+]], %[[H:.+]], %[[QB:.+]]) in (1, 2, 2)
// CHECK:   %[[NR:.+]] = affine.min #[[ROWS]]()[%[[QB]]]
// CHECK:   %[[QS:.+]] = tensor.extract_slice {{.+}} to tensor<?x64xf16>
// CHECK:   %[[QPAD:.+]] = affine.apply #[[PADR]]()[%[[NR]]]
// CHECK:   %[[QT:.+]] = tensor.pad %[[QS]] low[0, 0] high[%[[QPAD]], 0]
// CHECK:     tensor.yield %{{.+}} : f16
// CHECK:   } : tensor<?x64xf16> to tensor<64x64xf16>
// CHECK:   linalg.fill {{.+}} -> tensor<64x64xf32>
// CHECK:   %[[W0:.+]] = affine.max #[[WHOLE0]]()[%[[QB]]]
// CHECK:   %[[W1:.+]] = affine.min #{{.+}}()[%[[W0]]]
// CHECK:   %[[NWHOLE:.+]] = affine.apply #[[WHOLE]]()[%[[W1]]]
// CHECK:   %[[A:.+]]:3 = scf.for %{{.+}} = %{{.+}} to %[[NWHOLE]]
// CHECK:     %[[KW:.+]] = tensor.extract_slice {{.+}} [1, 1, 32, 64] [1, 1, 1, 1] : tensor<1x1x100x64xf16> to tensor<32x64xf16>
// CHECK:     %[[MS:.+]] = tensor.extract_slice %[[MASK]]{{.+}} to tensor<?x32xi1>
// CHECK:     %[[POISON:.+]] = ub.poison : i1
// CHECK:     %[[MT:.+]] = tensor.pad %[[MS]]
// CHECK:       tensor.yield %[[POISON]] : i1
// CHECK:     attn.online_attention q(%[[QT]]) k(%[[KW]]) v(%{{.+}}) mask(%[[MT]] : tensor<64x32xi1>) state({{.+}}) at({{.+}}) scale(1.250000e-01) rescale(8.000000e+00) p_type(f16) : tensor<64x64xf16>, tensor<32x64xf16>, tensor<32x64xf16>
// CHECK:   scf.for %[[JB:.+]] = %[[NWHOLE]] to %{{.+}} step {{.+}} iter_args(%{{.+}} = %[[A]]#0
// CHECK:     %[[NC:.+]] = affine.min #[[COLS]]()[%[[JB]]]
// CHECK:     %[[KS:.+]] = tensor.extract_slice {{.+}} [1, 1, %[[NC]], 64] [1, 1, 1, 1] : tensor<1x1x100x64xf16> to tensor<?x64xf16>
// CHECK:     %[[KT:.+]] = tensor.pad %[[KS]]
// CHECK:     } : tensor<?x64xf16> to tensor<32x64xf16>
// CHECK:     %[[SKV:.+]] = arith.constant 100 : index
// CHECK:     %[[DIAG:.+]] = arith.constant 0 : index
// CHECK:     attn.online_attention q(%[[QT]]) k(%[[KT]]) {{.+}} kv_bound(%[[SKV]]) causal(%[[DIAG]]) scale(1.250000e-01) rescale(8.000000e+00) p_type(f16)
// CHECK:   %[[O:.+]], %[[L:.+]] = attn.online_attention_finalize {{.+}} -> tensor<64x64xf16>, tensor<64xf32>
// CHECK:   %[[OV:.+]] = tensor.extract_slice %[[O]][0, 0] [%[[NR]], 64] [1, 1] : tensor<64x64xf16> to tensor<?x64xf16>
// CHECK:   %[[LV:.+]] = tensor.extract_slice %[[L]][0] [%[[NR]]] [1] : tensor<64xf32> to tensor<?xf32>
// CHECK:     tensor.parallel_insert_slice %[[OV]]
// CHECK:     tensor.parallel_insert_slice %[[LV]]
// CHECK: } {attn.tiling = #attn.tiling<block_q = 64, block_kv = 32, static_tiles = true, rescale_threshold = 8, p_type = f16, heaviest_first = 1024, mapping = #attn.mma_sync<warps = 4, row_tiles = 1, stages = 2, shared_bytes = 16384>>}
func.func @static_causal(%q: tensor<1x2x100x64xf16>, %k: tensor<1x1x100x64xf16>, %v: tensor<1x1x100x64xf16>, %m: tensor<1x1x100x100xi1>) -> (tensor<1x2x100x64xf16>, tensor<1x2x100xf32>) {
  %o, %l = attn.sdpa %q, %k, %v mask(%m : tensor<1x1x100x100xi1>) causal {tiling = #attn.tiling<block_q = 64, block_kv = 32, static_tiles = true, rescale_threshold = 8, p_type = f16, heaviest_first = 1024, mapping = #attn.mma_sync<warps = 4, row_tiles = 1, stages = 2, shared_bytes = 16384>>} : tensor<1x2x100x64xf16>, tensor<1x1x100x64xf16>, tensor<1x1x100x64xf16> -> tensor<1x2x100x64xf16>, tensor<1x2x100xf32>
  return %o, %l : tensor<1x2x100x64xf16>, tensor<1x2x100xf32>
}

// -----

// Static tiles without causal: whole blocks [0, Skv floordiv Bc), then the
// tail [Skv floordiv Bc, ceildiv(Skv, Bc)) with kv_bound(Skv). Where Bc
// divides a static Skv there is no tail loop at all.
// CHECK-DAG: #[[FLOOR:.+]] = affine_map<()[s0] -> (s0 floordiv 32)>
// CHECK-LABEL: func.func @static_tail
// CHECK: %[[SKV:.+]] = tensor.dim %{{.+}}, %{{.+}} : tensor<1x1x?x64xbf16>
// CHECK: scf.forall
// CHECK:   %[[NW:.+]] = affine.apply #[[FLOOR]]()[%[[SKV]]]
// CHECK:   %[[A:.+]]:3 = scf.for %{{.+}} = %{{.+}} to %[[NW]]
// CHECK:     attn.online_attention {{.+}} scale({{.+}}) : tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>
// CHECK:   scf.for %{{.+}} = %[[NW]] to %{{.+}}
// CHECK:     attn.online_attention {{.+}} kv_bound(%[[SKV]]) scale
// CHECK-LABEL: func.func @static_divides
// CHECK: scf.forall
// CHECK:   scf.for
// CHECK-NOT: scf.for {{.+}} iter_args
// CHECK-NOT: kv_bound
// CHECK: return
func.func @static_tail(%q: tensor<1x1x32x64xbf16>, %k: tensor<1x1x?x64xbf16>, %v: tensor<1x1x?x64xbf16>) -> tensor<1x1x32x64xbf16> {
  %o = attn.sdpa %q, %k, %v {tiling = #attn.tiling<block_q = 32, block_kv = 32, static_tiles = true>} : tensor<1x1x32x64xbf16>, tensor<1x1x?x64xbf16>, tensor<1x1x?x64xbf16> -> tensor<1x1x32x64xbf16>
  return %o : tensor<1x1x32x64xbf16>
}
func.func @static_divides(%q: tensor<1x1x32x64xbf16>, %k: tensor<1x1x64x64xbf16>, %v: tensor<1x1x64x64xbf16>) -> tensor<1x1x32x64xbf16> {
  %o = attn.sdpa %q, %k, %v {tiling = #attn.tiling<block_q = 32, block_kv = 32, static_tiles = true>} : tensor<1x1x32x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16> -> tensor<1x1x32x64xbf16>
  return %o : tensor<1x1x32x64xbf16>
}

// -----

// Launch-time split count and packed decode heads. The count is
// attn.kv_split_count (no folder: a GPU runtime chooses it per launch),
// the partial results are sized by it and each tile reads it back from
// their extent. Packed (Sq = 1, Hq / Hkv = 4): q, out and lse are seen as
// [B, Hkv, 4 x 1, ...] (expand Hq into (Hkv, 4), collapse (4, Sq)), the
// tiles run over (B, Hkv, row blocks), a tile's rows are the query heads
// h = hkv * 4 + r of one K/V head, and the step says so (packed(Sq)).
// CHECK-LABEL: func.func @launch_split_packed
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x8x1x64xf16>
// CHECK: %[[QE:.+]] = tensor.expand_shape %[[Q]] {{\[\[}}0], [1, 2], [3], [4]] output_shape [%{{.+}}, 2, 4, 1, 64] : tensor<?x8x1x64xf16> into tensor<?x2x4x1x64xf16>
// CHECK: %[[QP:.+]] = tensor.collapse_shape %[[QE]] {{\[\[}}0], [1], [2, 3], [4]] : tensor<?x2x4x1x64xf16> into tensor<?x2x4x64xf16>
// CHECK: %[[NS:.+]] = attn.kv_split_count default(4)
// CHECK: %[[PO:.+]] = tensor.empty(%{{.+}}, %[[NS]]) : tensor<?x2x?x4x64xf32>
// CHECK: %[[PART:.+]]:2 = scf.forall (%[[B:.+]], %[[HKV:.+]], %{{.+}}, %{{.+}}) in (%{{.+}}, 2, 1, %[[NS]]) shared_outs(%{{.+}} = %[[PO]], %[[PLA:.+]] = %{{.+}})
// CHECK:   %[[H0:.+]] = affine.apply #{{.+}}()[%[[HKV]]]
// CHECK:   tensor.extract_slice %[[QP]][%[[B]], %[[HKV]]
// CHECK:   %[[N:.+]] = tensor.dim %[[PLA]], %{{.+}} : tensor<?x2x?x2x4xf32>
// CHECK:   arith.divui %{{.+}}, %[[N]]
// CHECK:   scf.for
// CHECK:     %[[ONE:.+]] = arith.constant 1 : index
// CHECK:     attn.online_attention {{.+}} at(%[[B]], %[[H0]], {{.+}}) packed(%[[ONE]]) scale
// CHECK:   kv_bound
// CHECK:   attn.online_attention_finalize {{.+}} partial
// CHECK: } {attn.tiling = #attn.tiling<block_q = 16, block_kv = 64, kv_splits = 4, launch_splits = true, static_tiles = true, pack_heads = true>}
// CHECK: %[[M:.+]] = scf.forall
// CHECK:   %[[NM:.+]] = tensor.dim %[[PART]]#1, %{{.+}} : tensor<?x2x?x2x4xf32>
// CHECK:   tensor.extract_slice %[[PART]]#0{{.+}} [1, 1, %[[NM]], {{.+}}]
// CHECK:   attn.merge_partials
// CHECK: %[[ME:.+]] = tensor.expand_shape %[[M]] {{\[\[}}0], [1], [2, 3], [4]]
// CHECK: %[[MC:.+]] = tensor.collapse_shape %[[ME]] {{\[\[}}0], [1, 2], [3], [4]] : tensor<?x2x4x1x64xf16> into tensor<?x8x1x64xf16>
// CHECK: return %[[MC]]
func.func @launch_split_packed(%q: tensor<?x8x1x64xf16>, %k: tensor<?x2x?x64xf16>, %v: tensor<?x2x?x64xf16>) -> tensor<?x8x1x64xf16> {
  %o = attn.sdpa %q, %k, %v {tiling = #attn.tiling<block_q = 16, block_kv = 64, kv_splits = 4, launch_splits = true, static_tiles = true, pack_heads = true>} : tensor<?x8x1x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16> -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}

