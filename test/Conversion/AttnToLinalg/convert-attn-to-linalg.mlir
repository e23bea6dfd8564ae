// RUN: attn-opt %s --convert-attn-to-linalg --split-input-file | FileCheck %s

// The full chain on the simplest case; later cases check what they change.

// CHECK-DAG: #[[Q5:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
// CHECK-DAG: #[[K5:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>
// CHECK-DAG: #[[S5:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[ID4:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[ROW:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @basic_f16(
// CHECK-SAME: %[[Q:[^:]+]]: tensor<1x2x8x16xf16>, %[[K:[^:]+]]: tensor<1x2x8x16xf16>, %[[V:[^:]+]]: tensor<1x2x8x32xf16>)
// S_raw[b,h,i,j] = sum_d f32(q[b,h,i,d]) * f32(k[b,h,j,d])
// CHECK: %[[SINIT:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<1x2x8x8xf32>)
// CHECK: %[[SRAW:.+]] = linalg.generic {indexing_maps = [#[[Q5]], #[[K5]], #[[S5]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME: ins(%[[Q]], %[[K]] : tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>) outs(%[[SINIT]] : tensor<1x2x8x8xf32>)
// CHECK: ^bb0(%[[QE:.+]]: f16, %[[KE:.+]]: f16, %[[ACC:.+]]: f32):
// CHECK: %[[QF:.+]] = arith.extf %[[QE]] : f16 to f32
// CHECK: %[[KF:.+]] = arith.extf %[[KE]] : f16 to f32
// CHECK: %[[PROD:.+]] = arith.mulf %[[QF]], %[[KF]] fastmath<contract> : f32
// CHECK: %[[SUM:.+]] = arith.addf %[[ACC]], %[[PROD]] fastmath<reassoc,contract> : f32
// CHECK: linalg.yield %[[SUM]]
// S = scale * S_raw, default scale 1/sqrt(16)
// CHECK: %[[SCALE:.+]] = arith.constant 2.500000e-01 : f32
// CHECK: %[[S:.+]] = linalg.generic {indexing_maps = [#[[ID4]], #[[ID4]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[SRAW]]
// CHECK: arith.mulf %{{.+}}, %[[SCALE]] : f32
// m = rowmax(S), starting from -inf
// CHECK: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK: %[[MINIT:.+]] = linalg.fill ins(%[[NEGINF]] : f32) outs(%{{.+}} : tensor<1x2x8xf32>)
// CHECK: %[[M:.+]] = linalg.generic {indexing_maps = [#[[ID4]], #[[ROW]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[S]] : {{.+}}) outs(%[[MINIT]] :
// CHECK: arith.maximumf
// P = exp(S - m_safe), m_safe = m == -inf ? 0 : m
// CHECK: %[[P:.+]] = linalg.generic {indexing_maps = [#[[ID4]], #[[ROW]], #[[ID4]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[S]], %[[M]] :
// CHECK: ^bb0(%[[SE:.+]]: f32, %[[ME:.+]]: f32, %{{.+}}: f32):
// CHECK-DAG: %[[NI:.+]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[ISNI:.+]] = arith.cmpf oeq, %[[ME]], %[[NI]] : f32
// CHECK: %[[MSAFE:.+]] = arith.select %[[ISNI]], %[[ZERO]], %[[ME]] : f32
// CHECK: %[[X:.+]] = arith.subf %[[SE]], %[[MSAFE]] : f32
// CHECK: math.exp %[[X]] : f32
// l = rowsum(P), reassociable so the reduction loop vectorizes
// l = sum_j P in f64 (no key length stalls or drifts it)
// CHECK: %[[L:.+]] = linalg.generic {indexing_maps = [#[[ID4]], #[[ROW]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[P]] : {{.+}}) outs(%{{.+}} : tensor<1x2x8xf64>)
// CHECK: %[[PX:.+]] = arith.extf %{{.+}} : f32 to f64
// CHECK: arith.addf %{{.+}}, %[[PX]] fastmath<reassoc> : f64
// Pn = l == 0 ? 0 : P / l
// CHECK: %[[PN:.+]] = linalg.generic {indexing_maps = [#[[ID4]], #[[ROW]], #[[ID4]]], {{.+}} ins(%[[P]], %[[L]] :
// CHECK: ^bb0(%[[PE:.+]]: f32, %[[LE:.+]]: f64, %{{.+}}: f32):
// CHECK: %[[EMPTY:.+]] = arith.cmpf oeq, %[[LE]], %{{.+}} : f64
// CHECK: %[[PE64:.+]] = arith.extf %[[PE]] : f32 to f64
// CHECK: %[[DIV:.+]] = arith.divf %[[PE64]], %[[LE]] : f64
// CHECK: %[[DIV32:.+]] = arith.truncf %[[DIV]] : f64 to f32
// CHECK: arith.select %[[EMPTY]], %{{.+}}, %[[DIV32]] : f32
// O[b,h,i,e] = sum_j Pn[b,h,i,j] * f32(v[b,h,j,e])
// O = sum_j Pn v, in f64
// CHECK: %[[OINIT:.+]] = linalg.fill ins(%{{.+}} : f64) outs(%{{.+}} : tensor<1x2x8x32xf64>)
// CHECK: %[[O:.+]] = linalg.generic {indexing_maps = [#[[S5]], #[[K5]], #[[Q5]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]}
// CHECK-SAME: ins(%[[PN]], %[[V]] : tensor<1x2x8x8xf32>, tensor<1x2x8x32xf16>) outs(%[[OINIT]] : tensor<1x2x8x32xf64>)
// CHECK: arith.extf %{{.+}} : f16 to f64
// CHECK: arith.extf %{{.+}} : f32 to f64
// CHECK: arith.mulf {{.+}} fastmath<contract> : f64
// CHECK: arith.addf {{.+}} fastmath<reassoc,contract> : f64
// out = truncf(O)
// CHECK: %[[OUT:.+]] = linalg.generic {{.+}} ins(%[[O]] : tensor<1x2x8x32xf64>) outs(%{{.+}} : tensor<1x2x8x32xf16>)
// CHECK: arith.truncf %{{.+}} : f64 to f16
// CHECK: return %[[OUT]] : tensor<1x2x8x32xf16>
// No fast-math flag that would let LLVM drop the -inf handling.
// CHECK-NOT: nnan
// CHECK-NOT: ninf
func.func @basic_f16(%q: tensor<1x2x8x16xf16>, %k: tensor<1x2x8x16xf16>, %v: tensor<1x2x8x32xf16>) -> tensor<1x2x8x32xf16> {
  %o = attn.sdpa %q, %k, %v : tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x32xf16> -> tensor<1x2x8x32xf16>
  return %o : tensor<1x2x8x32xf16>
}

// -----

// CHECK-DAG: #[[KG:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1 floordiv 4, d3, d4)>
// CHECK-LABEL: func.func @gqa_static(
// CHECK-SAME: %[[Q:[^:]+]]: tensor<2x8x4x16xf32>, %[[K:[^:]+]]: tensor<2x2x6x16xf32>, %[[V:[^:]+]]: tensor<2x2x6x16xf32>)
// kv head = h floordiv (Hq / Hkv) = h floordiv 4, in the indexing maps: K and V are never copied
// CHECK: linalg.generic {indexing_maps = [#{{.+}}, #[[KG]], #{{.+}}]{{.+}} ins(%[[Q]], %[[K]] : tensor<2x8x4x16xf32>, tensor<2x2x6x16xf32>) outs(%{{.+}} : tensor<2x8x4x6xf32>)
// f32 inputs are used as they are for the scores; the sums are f64
// CHECK-NOT: arith.extf %{{.+}} : f32 to f32
// CHECK: linalg.generic {indexing_maps = [#{{.+}}, #[[KG]], #{{.+}}]{{.+}} ins(%{{.+}}, %[[V]] : tensor<2x8x4x6xf32>, tensor<2x2x6x16xf32>) outs(%{{.+}} : tensor<2x8x4x16xf64>)
// CHECK: arith.truncf %{{.+}} : f64 to f32
// CHECK: return
func.func @gqa_static(%q: tensor<2x8x4x16xf32>, %k: tensor<2x2x6x16xf32>, %v: tensor<2x2x6x16xf32>) -> tensor<2x8x4x16xf32> {
  %o = attn.sdpa %q, %k, %v : tensor<2x8x4x16xf32>, tensor<2x2x6x16xf32>, tensor<2x2x6x16xf32> -> tensor<2x8x4x16xf32>
  return %o : tensor<2x8x4x16xf32>
}

// -----

// CHECK-LABEL: func.func @dynamic(
// CHECK-SAME: %[[Q:[^:]+]]: tensor<?x?x?x16xbf16>, %[[K:[^:]+]]: tensor<?x?x?x16xbf16>, %[[V:[^:]+]]: tensor<?x?x?x8xbf16>)
// B, Hq, Sq from q; Skv, Hkv from k
// CHECK-DAG: %[[B:.+]] = tensor.dim %[[Q]], %c0
// CHECK-DAG: %[[HQ:.+]] = tensor.dim %[[Q]], %c1
// CHECK-DAG: %[[SQ:.+]] = tensor.dim %[[Q]], %c2
// CHECK-DAG: %[[SKV:.+]] = tensor.dim %[[K]], %c2
// CHECK-DAG: %[[HKV:.+]] = tensor.dim %[[K]], %c1
// g = Hq / Hkv is only known at run time: K and V are read with tensor.extract at kv head h / g
// CHECK: %[[G:.+]] = arith.divui %[[HQ]], %[[HKV]] : index
// CHECK: %[[SE:.+]] = tensor.empty(%[[B]], %[[HQ]], %[[SQ]], %[[SKV]]) : tensor<?x?x?x?xf32>
// CHECK: linalg.generic {{.+}} ins(%[[Q]] : tensor<?x?x?x16xbf16>)
// CHECK: %[[IB:.+]] = linalg.index 0 : index
// CHECK: %[[IH:.+]] = linalg.index 1 : index
// CHECK: %[[IJ:.+]] = linalg.index 3 : index
// CHECK: %[[ID:.+]] = linalg.index 4 : index
// CHECK: %[[KVH:.+]] = arith.divui %[[IH]], %[[G]] : index
// CHECK: %[[KE:.+]] = tensor.extract %[[K]][%[[IB]], %[[KVH]], %[[IJ]], %[[ID]]] : tensor<?x?x?x16xbf16>
// CHECK: arith.extf %[[KE]] : bf16 to f32
// CHECK: tensor.empty(%[[B]], %[[HQ]], %[[SQ]]) : tensor<?x?x?xf32>
// O = sum_j Pn * v[b, h / g, j, e]
// CHECK: tensor.empty(%[[B]], %[[HQ]], %[[SQ]]) : tensor<?x?x?x8xf64>
// CHECK: linalg.generic
// CHECK: %[[VKVH:.+]] = arith.divui %{{.+}}, %[[G]] : index
// CHECK: tensor.extract %[[V]][%{{.+}}, %[[VKVH]], %{{.+}}, %{{.+}}] : tensor<?x?x?x8xbf16>
// CHECK: tensor.empty(%[[B]], %[[HQ]], %[[SQ]]) : tensor<?x?x?x8xbf16>
// CHECK: arith.truncf %{{.+}} : f64 to bf16
func.func @dynamic(%q: tensor<?x?x?x16xbf16>, %k: tensor<?x?x?x16xbf16>, %v: tensor<?x?x?x8xbf16>) -> tensor<?x?x?x8xbf16> {
  %o = attn.sdpa %q, %k, %v : tensor<?x?x?x16xbf16>, tensor<?x?x?x16xbf16>, tensor<?x?x?x8xbf16> -> tensor<?x?x?x8xbf16>
  return %o : tensor<?x?x?x8xbf16>
}

// -----

// CHECK-DAG: #[[KMQA:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, 0, d3, d4)>
// CHECK-LABEL: func.func @mqa_dynamic_hq(
// A single kv head serves every query head, even when Hq is dynamic
// CHECK-NOT: arith.divui
// CHECK: linalg.generic {indexing_maps = [#{{.+}}, #[[KMQA]], #{{.+}}]
// CHECK-NOT: tensor.extract
// CHECK: return
func.func @mqa_dynamic_hq(%q: tensor<1x?x4x16xf32>, %k: tensor<1x1x4x16xf32>, %v: tensor<1x1x4x16xf32>) -> tensor<1x?x4x16xf32> {
  %o = attn.sdpa %q, %k, %v : tensor<1x?x4x16xf32>, tensor<1x1x4x16xf32>, tensor<1x1x4x16xf32> -> tensor<1x?x4x16xf32>
  return %o : tensor<1x?x4x16xf32>
}

// -----

// CHECK-LABEL: func.func @causal(
// CHECK-SAME: %[[Q:[^:]+]]: tensor<1x1x?x16xf32>, %[[K:[^:]+]]: tensor<1x1x?x16xf32>
// CHECK-DAG: %[[SQ:.+]] = tensor.dim %[[Q]], %c2
// CHECK-DAG: %[[SKV:.+]] = tensor.dim %[[K]], %c2
// diag = Skv - Sq (bottom-right alignment)
// CHECK: %[[DIAG:.+]] = arith.subi %[[SKV]], %[[SQ]] : index
// CHECK: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// S = j > i + diag ? -inf : scale * S_raw
// CHECK: linalg.generic
// CHECK: %[[SS:.+]] = arith.mulf
// CHECK: %[[I:.+]] = linalg.index 2 : index
// CHECK: %[[J:.+]] = linalg.index 3 : index
// CHECK: %[[LAST:.+]] = arith.addi %[[I]], %[[DIAG]] : index
// CHECK: %[[HIDDEN:.+]] = arith.cmpi sgt, %[[J]], %[[LAST]] : index
// CHECK: %[[MASKED:.+]] = arith.select %[[HIDDEN]], %[[NEGINF]], %[[SS]] : f32
// CHECK: linalg.yield %[[MASKED]]
func.func @causal(%q: tensor<1x1x?x16xf32>, %k: tensor<1x1x?x16xf32>, %v: tensor<1x1x?x16xf32>) -> tensor<1x1x?x16xf32> {
  %o = attn.sdpa %q, %k, %v causal : tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32> -> tensor<1x1x?x16xf32>
  return %o : tensor<1x1x?x16xf32>
}

// -----

// CHECK-LABEL: func.func @causal_static(
// diag = Skv - Sq = 4 - 8, folded
// CHECK: %[[DIAG:.+]] = arith.constant -4 : index
// CHECK: arith.addi %{{.+}}, %[[DIAG]] : index
func.func @causal_static(%q: tensor<1x1x8x16xf32>, %k: tensor<1x1x4x16xf32>, %v: tensor<1x1x4x16xf32>) -> tensor<1x1x8x16xf32> {
  %o = attn.sdpa %q, %k, %v causal : tensor<1x1x8x16xf32>, tensor<1x1x4x16xf32>, tensor<1x1x4x16xf32> -> tensor<1x1x8x16xf32>
  return %o : tensor<1x1x8x16xf32>
}

// -----

// CHECK-DAG: #[[MB:.+]] = affine_map<(d0, d1, d2, d3) -> (0, d1, d2, d3)>
// CHECK-LABEL: func.func @bool_mask_broadcast(
// CHECK-SAME: %[[M:[^ ]+]]: tensor<1x4x8x8xi1>)
// mask dim 0 has size 1: broadcast over B by the constant 0 in its map
// CHECK: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK: linalg.generic {indexing_maps = [#{{.+}}, #[[MB]], #{{.+}}]{{.+}} ins(%{{.+}}, %[[M]] : tensor<2x4x8x8xf32>, tensor<1x4x8x8xi1>)
// CHECK: ^bb0(%{{.+}}: f32, %[[KEEP:.+]]: i1, %{{.+}}: f32):
// S = keep ? scale * S_raw : -inf
// CHECK: %[[SS:.+]] = arith.mulf
// CHECK: %[[SM:.+]] = arith.select %[[KEEP]], %[[SS]], %[[NEGINF]] : f32
// CHECK: linalg.yield %[[SM]]
func.func @bool_mask_broadcast(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>, %m: tensor<1x4x8x8xi1>) -> tensor<2x4x8x16xf32> {
  %o = attn.sdpa %q, %k, %v mask(%m : tensor<1x4x8x8xi1>) : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// CHECK-LABEL: func.func @bool_mask_dynamic_broadcast(
// CHECK-SAME: %[[M:[^ ]+]]: tensor<?x?x8x8xi1>)
// Whether mask dims 0 / 1 broadcast is decided at run time from their sizes
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG: %[[MB:.+]] = tensor.dim %[[M]], %c0
// CHECK: %[[BONE:.+]] = arith.cmpi eq, %[[MB]], %[[C1]] : index
// CHECK: %[[MH:.+]] = tensor.dim %[[M]], %c1
// CHECK: %[[HONE:.+]] = arith.cmpi eq, %[[MH]], %[[C1]] : index
// CHECK: linalg.generic
// CHECK: %[[Z:.+]] = arith.constant 0 : index
// CHECK: %[[IB:.+]] = linalg.index 0 : index
// CHECK: %[[SB:.+]] = arith.select %[[BONE]], %[[Z]], %[[IB]] : index
// CHECK: %[[IH:.+]] = linalg.index 1 : index
// CHECK: %[[SH:.+]] = arith.select %[[HONE]], %[[Z]], %[[IH]] : index
// CHECK: %[[KEEP:.+]] = tensor.extract %[[M]][%[[SB]], %[[SH]], %{{.+}}, %{{.+}}] : tensor<?x?x8x8xi1>
// CHECK: arith.select %[[KEEP]]
func.func @bool_mask_dynamic_broadcast(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>, %m: tensor<?x?x8x8xi1>) -> tensor<2x4x8x16xf32> {
  %o = attn.sdpa %q, %k, %v mask(%m : tensor<?x?x8x8xi1>) : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// CHECK-DAG: #[[MH:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>
// CHECK-LABEL: func.func @additive_mask(
// CHECK-SAME: %[[M:[^ ]+]]: tensor<2x1x8x8xf16>)
// CHECK: %[[SCALE:.+]] = arith.constant 2.500000e-01 : f32
// CHECK-NOT: 0xFF800000
// CHECK: linalg.generic {indexing_maps = [#{{.+}}, #[[MH]], #{{.+}}]{{.+}} ins(%{{.+}}, %[[M]] : tensor<2x4x8x8xf32>, tensor<2x1x8x8xf16>)
// CHECK: ^bb0(%[[SR:.+]]: f32, %[[ME:.+]]: f16, %{{.+}}: f32):
// S = scale * S_raw + f32(mask)
// CHECK: %[[SS:.+]] = arith.mulf %[[SR]], %[[SCALE]] : f32
// CHECK: %[[MF:.+]] = arith.extf %[[ME]] : f16 to f32
// CHECK: %[[SA:.+]] = arith.addf %[[SS]], %[[MF]] : f32
// CHECK: linalg.yield %[[SA]]
func.func @additive_mask(%q: tensor<2x4x8x16xf16>, %k: tensor<2x4x8x16xf16>, %v: tensor<2x4x8x16xf16>, %m: tensor<2x1x8x8xf16>) -> tensor<2x4x8x16xf16> {
  %o = attn.sdpa %q, %k, %v mask(%m : tensor<2x1x8x8xf16>) scale(0.25) : tensor<2x4x8x16xf16>, tensor<2x4x8x16xf16>, tensor<2x4x8x16xf16> -> tensor<2x4x8x16xf16>
  return %o : tensor<2x4x8x16xf16>
}

// -----

// CHECK-LABEL: func.func @dropout(
// CHECK-SAME: %[[SEED:[^ ]+]]: i64)
// Pn = keep(seed, b, h, i, j) ? (P / l) * 1/(1-p) : 0, decided after normalization
// CHECK: arith.addf {{.+}} fastmath<reassoc> : f64
// CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[INV:.+]] = arith.constant 1.33333337 : f32
// CHECK: linalg.generic
// CHECK: %[[PN:.+]] = arith.select %{{.+}}, %[[ZERO]], %{{.+}} : f32
// CHECK: %[[B:.+]] = linalg.index 0 : index
// CHECK: %[[H:.+]] = linalg.index 1 : index
// CHECK: %[[I:.+]] = linalg.index 2 : index
// CHECK: %[[J:.+]] = linalg.index 3 : index
// Philox key from the seed words, counter (j, i, h, b)
// CHECK: %[[K0:.+]] = arith.trunci %[[SEED]] : i64 to i32
// CHECK: arith.shrui %[[SEED]]
// CHECK: %[[C0:.+]] = arith.index_castui %[[J]] : index to i32
// CHECK: %[[C1:.+]] = arith.index_castui %[[I]] : index to i32
// CHECK: %[[C2:.+]] = arith.index_castui %[[H]] : index to i32
// CHECK: %[[C3:.+]] = arith.index_castui %[[B]] : index to i32
// CHECK-COUNT-20: arith.mului_extended
// keep iff word0 >= ceil(0.25 * 2^32)
// CHECK: %[[THR:.+]] = arith.constant 1073741824 : i64
// CHECK: %[[KEEP:.+]] = arith.cmpi uge, %{{.+}}, %[[THR]] : i64
// CHECK: %[[SCALED:.+]] = arith.mulf %[[PN]], %[[INV]] : f32
// CHECK: %[[D:.+]] = arith.select %[[KEEP]], %[[SCALED]], %[[ZERO]] : f32
// CHECK: linalg.yield %[[D]]
func.func @dropout(%q: tensor<1x1x4x16xf32>, %k: tensor<1x1x4x16xf32>, %v: tensor<1x1x4x16xf32>, %seed: i64) -> tensor<1x1x4x16xf32> {
  %o = attn.sdpa %q, %k, %v dropout(0.25, seed %seed) : tensor<1x1x4x16xf32>, tensor<1x1x4x16xf32>, tensor<1x1x4x16xf32> -> tensor<1x1x4x16xf32>
  return %o : tensor<1x1x4x16xf32>
}

// -----

// CHECK-LABEL: func.func @lse(
// CHECK: %[[M:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK: arith.maximumf
// CHECK: %[[L:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK: arith.addf {{.+}} fastmath<reassoc> : f64
// CHECK: %[[O:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<1x1x4x16xf32>)
// lse = l == 0 ? -inf : m_safe + log(l), in f64 rounded to f32
// CHECK: %[[LINIT:.+]] = tensor.empty() : tensor<1x1x4xf32>
// CHECK: %[[LSE:.+]] = linalg.generic {{.+}} ins(%[[M]], %[[L]] : tensor<1x1x4xf32>, tensor<1x1x4xf64>) outs(%[[LINIT]] : tensor<1x1x4xf32>)
// CHECK: ^bb0(%[[ME:.+]]: f32, %[[LE:.+]]: f64, %{{.+}}: f32):
// CHECK: %[[EMPTY:.+]] = arith.cmpf oeq, %[[LE]], %{{.+}} : f64
// CHECK: %[[LOG:.+]] = math.log %[[LE]] : f64
// CHECK: %[[MSAFE:.+]] = arith.select
// CHECK: %[[M64:.+]] = arith.extf %[[MSAFE]] : f32 to f64
// CHECK: %[[SUM:.+]] = arith.addf %[[M64]], %[[LOG]] : f64
// CHECK: %[[SUM32:.+]] = arith.truncf %[[SUM]] : f64 to f32
// CHECK: %[[R:.+]] = arith.select %[[EMPTY]], %{{.+}}, %[[SUM32]] : f32
// CHECK: linalg.yield %[[R]]
// CHECK: return %[[O]], %[[LSE]]
func.func @lse(%q: tensor<1x1x4x16xf32>, %k: tensor<1x1x4x16xf32>, %v: tensor<1x1x4x16xf32>) -> (tensor<1x1x4x16xf32>, tensor<1x1x4xf32>) {
  %o, %l = attn.sdpa %q, %k, %v : tensor<1x1x4x16xf32>, tensor<1x1x4x16xf32>, tensor<1x1x4x16xf32> -> tensor<1x1x4x16xf32>, tensor<1x1x4xf32>
  return %o, %l : tensor<1x1x4x16xf32>, tensor<1x1x4xf32>
}

// -----

// A size static in any operand or result type is used statically (B = 3
// from lse here); results are cast back to the declared types.
// CHECK-LABEL: func.func @static_from_result(
// CHECK-NOT: tensor.dim
// CHECK: %[[O:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<3x2x4x16xf32>)
// CHECK: %[[C:.+]] = tensor.cast %[[O]] : tensor<3x2x4x16xf32> to tensor<?x2x4x16xf32>
// CHECK: %[[L:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<3x2x4xf32>)
// CHECK-NOT: tensor.cast
// CHECK: return %[[C]], %[[L]]
func.func @static_from_result(%q: tensor<?x2x4x16xf32>, %k: tensor<?x2x4x16xf32>, %v: tensor<?x2x4x16xf32>) -> (tensor<?x2x4x16xf32>, tensor<3x2x4xf32>) {
  %o, %l = attn.sdpa %q, %k, %v : tensor<?x2x4x16xf32>, tensor<?x2x4x16xf32>, tensor<?x2x4x16xf32> -> tensor<?x2x4x16xf32>, tensor<3x2x4xf32>
  return %o, %l : tensor<?x2x4x16xf32>, tensor<3x2x4xf32>
}
