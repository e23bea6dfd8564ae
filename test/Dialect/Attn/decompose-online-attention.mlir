// RUN: attn-opt %s --attn-decompose-online-attention -split-input-file | FileCheck %s

// One step with every option: bool mask, causal, kv_bound, lazy rescale,
// P rounded to f16, dropout. scale = 0.5, so c = scale * log2(e) =
// 0.72134751 < 1; the bool mask leaves the scores raw until the
// exponential. The state's max is in natural units (scores times scale).
// CHECK-DAG: #[[QD:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[KD:.+]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[RC3:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[RC:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[R2:.+]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[R:.+]] = affine_map<(d0) -> (d0)>
// CHECK-DAG: #[[ALL:.+]] = affine_map<(d0) -> ()>
// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x4xf16>, %[[K:[^:]+]]: tensor<3x4xf16>, %[[V:[^:]+]]: tensor<3x4xf16>, %[[M:[^:]+]]: tensor<2x3xi1>, %[[ACC:[^:]+]]: tensor<2x4xf32>, %[[MAX:[^:]+]]: tensor<2xf32>, %[[SUM:[^:]+]]: tensor<2xf32>, %[[B:[^:]+]]: index, %[[H:[^:]+]]: index, %[[I0:[^:]+]]: index, %[[J0:[^:]+]]: index, %[[N:[^:]+]]: index, %[[DIAG:[^:]+]]: index, %[[SEED:[^:]+]]: i64)
// S = Q . K^T  (f16 extended to f32, contract/reassoc for FMAs)
// CHECK: %[[S0:.+]] = linalg.generic {indexing_maps = [#[[QD]], #[[KD]], #[[RC3]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[Q]], %[[K]] : tensor<2x4xf16>, tensor<3x4xf16>) outs(%{{.+}} : tensor<2x3xf32>)
// CHECK:   %[[QF:.+]] = arith.extf %{{.+}} : f16 to f32
// CHECK:   %[[KF:.+]] = arith.extf %{{.+}} : f16 to f32
// CHECK:   arith.mulf %[[QF]], %[[KF]] fastmath<contract> : f32
// CHECK:   arith.addf %{{.+}}, %{{.+}} fastmath<reassoc,contract> : f32
// x = mask ? S : -inf; -inf where key = j0 + c >= kv_bound or key > i0 + r + diag
// CHECK: %[[S:.+]] = linalg.generic {indexing_maps = [#[[RC]], #[[RC]], #[[RC]]], iterator_types = ["parallel", "parallel"]} ins(%[[S0]], %[[M]] : tensor<2x3xf32>, tensor<2x3xi1>)
// CHECK:   ^bb0(%[[X:.+]]: f32, %[[KEEP:.+]]: i1, %{{.+}}: f32):
// CHECK:   %[[NINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK:   %[[XM:.+]] = arith.select %[[KEEP]], %[[X]], %[[NINF]]
// CHECK:   %[[CI:.+]] = linalg.index 1
// CHECK:   %[[KEY:.+]] = arith.addi %[[J0]], %[[CI]]
// CHECK:   %[[PAST:.+]] = arith.cmpi uge, %[[KEY]], %[[N]]
// CHECK:   %[[RI:.+]] = linalg.index 0
// CHECK:   %[[ROW:.+]] = arith.addi %[[I0]], %[[RI]]
// CHECK:   %[[LIM:.+]] = arith.addi %[[ROW]], %[[DIAG]]
// CHECK:   %[[ABOVE:.+]] = arith.cmpi sgt, %[[KEY]], %[[LIM]]
// CHECK:   %[[HID:.+]] = arith.ori %[[PAST]], %[[ABOVE]]
// CHECK:   arith.select %[[HID]], %[[NINF]], %[[XM]]
// mb = rowmax(x) * scale
// CHECK: %[[MB0:.+]] = linalg.generic {indexing_maps = [#[[RC]], #[[R2]]], iterator_types = ["parallel", "reduction"]} ins(%[[S]] : tensor<2x3xf32>)
// CHECK:   arith.maximumf
// CHECK: %[[MB:.+]] = linalg.generic {{.+}} ins(%[[MB0]] : tensor<2xf32>)
// CHECK:   arith.constant 5.000000e-01 : f32
// CHECK:   arith.mulf
// the guard: any = OR over rows of grow, grow = mb > m + 8 ln 2 (the lazy
// rescale's threshold, 8 in log2 units), as an i32; a row-local
// reduction: a target may take it per warp
// CHECK: %[[ANY:.+]] = linalg.generic {indexing_maps = [#[[R]], #[[R]], #[[ALL]]], iterator_types = ["reduction"]} ins(%[[MB]], %[[MAX]] : tensor<2xf32>, tensor<2xf32>) outs(%{{.+}} : tensor<i32>) attrs = {attn.row_local_guard}
// CHECK:   %[[T:.+]] = arith.constant 5.54517746 : f32
// CHECK:   %[[LIMIT:.+]] = arith.addf %{{.+}}, %[[T]]
// CHECK:   %[[GROW:.+]] = arith.cmpf ogt, %{{.+}}, %[[LIMIT]]
// CHECK:   %[[GROWI:.+]] = arith.extui %[[GROW]] : i1 to i32
// CHECK:   arith.ori %{{.+}}, %[[GROWI]]
// CHECK: %[[ANYX:.+]] = tensor.extract %[[ANY]][] : tensor<i32>
// CHECK: %[[ANYS:.+]] = arith.cmpi ne, %[[ANYX]], %{{.+}} : i32
// CHECK: %[[RS:.+]]:3 = scf.if %[[ANYS]] -> (tensor<2xf32>, tensor<2x4xf32>, tensor<2xf32>) {
// alpha = exp2((m - m'_safe) log2 e), m' = grow ? mb : m, m'_safe = m' ==
// -inf ? 0 : m': the difference first, so no finite max overflows
// CHECK:   %[[ALPHA:.+]] = linalg.generic {{.+}} ins(%[[MB]], %[[MAX]] : tensor<2xf32>, tensor<2xf32>)
// CHECK:     %[[G1:.+]] = arith.cmpf ogt
// CHECK:     %[[M1:.+]] = arith.select %[[G1]]
// CHECK:     %[[INF:.+]] = arith.cmpf oeq, %[[M1]]
// CHECK:     %[[SAFE:.+]] = arith.select %[[INF]], %{{.+}}, %[[M1]]
// CHECK:     %[[D:.+]] = arith.subf %{{.+}}, %[[SAFE]]
// CHECK:     %[[L2E:.+]] = arith.constant 1.44269502 : f32
// CHECK:     %[[DL:.+]] = arith.mulf %[[D]], %[[L2E]]
// CHECK:     math.exp2 %[[DL]] fastmath<afn>
// m' over m (in place)
// CHECK:   %[[MN:.+]] = linalg.generic {{.+}} ins(%[[MB]] : tensor<2xf32>) outs(%[[MAX]] : tensor<2xf32>)
// CHECK:     %[[G2:.+]] = arith.cmpf ogt
// CHECK:     arith.select %[[G2]]
// acc *= alpha, sum *= alpha (in place)
// CHECK:   %[[AS:.+]] = linalg.generic {{.+}} ins(%[[ALPHA]] : tensor<2xf32>) outs(%[[ACC]] : tensor<2x4xf32>)
// CHECK:     arith.mulf
// CHECK:   %[[SS:.+]] = linalg.generic {{.+}} ins(%[[ALPHA]] : tensor<2xf32>) outs(%[[SUM]] : tensor<2xf32>)
// CHECK:     arith.mulf
// CHECK:   scf.yield %[[MN]], %[[AS]], %[[SS]]
// CHECK: } else {
// CHECK:   scf.yield %[[MAX]], %[[ACC]], %[[SUM]]
// -m'_safe log2 e (finite: |m| <= FLT_MAX scale and scale log2 e < 1)
// CHECK: %[[NEGM:.+]] = linalg.generic {{.+}} ins(%[[RS]]#0 : tensor<2xf32>)
// CHECK:   arith.select
// CHECK:   arith.constant 1.44269502 : f32
// CHECK:   arith.mulf
// CHECK:   arith.negf
// P = exp2(fma(x, c, -m'_safe log2 e))
// CHECK: %[[P:.+]] = linalg.generic {{.+}} ins(%[[S]], %[[NEGM]] : tensor<2x3xf32>, tensor<2xf32>)
// CHECK:   %[[E:.+]] = math.fma %{{.+}}, %{{.+}}, %{{.+}} : f32
// CHECK:   math.exp2 %[[E]] fastmath<afn>
// sum'' = sum' + rowsum(P)  (undropped P)
// CHECK: %[[SNEW:.+]] = linalg.generic {indexing_maps = [#[[RC]], #[[R2]]], iterator_types = ["parallel", "reduction"]} ins(%[[P]] : tensor<2x3xf32>) outs(%[[RS]]#2 : tensor<2xf32>)
// CHECK:   arith.addf %{{.+}}, %{{.+}} fastmath<reassoc,contract>
// dropout(P) = keep(seed, b, h, i0 + r, j0 + c) ? P / (1 - 0.1) : 0
// CHECK: %[[PD:.+]] = linalg.generic {{.+}} ins(%[[P]] : tensor<2x3xf32>)
// CHECK:   arith.trunci %[[SEED]] : i64 to i32
// CHECK:   arith.index_castui %[[H]]
// CHECK:   arith.index_castui %[[B]]
// CHECK:   arith.mului_extended
// CHECK:   %[[KEEPD:.+]] = arith.cmpi uge, %{{.+}}, %{{.+}} : i64
// CHECK:   %[[PS:.+]] = arith.mulf %{{.+}}, %{{.+}} : f32
// CHECK:   arith.select %[[KEEPD]], %[[PS]], %{{.+}} : f32
// P rounded to p_type
// CHECK: %[[PH:.+]] = linalg.generic {{.+}} ins(%[[PD]] : tensor<2x3xf32>) outs(%{{.+}} : tensor<2x3xf16>)
// CHECK:   arith.truncf %{{.+}} : f32 to f16
// acc'' = acc' + P . V
// CHECK: %[[ANEW:.+]] = linalg.generic {indexing_maps = [#[[RC3]], #[[KD]], #[[QD]]], iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[PH]], %[[V]] : tensor<2x3xf16>, tensor<3x4xf16>) outs(%[[RS]]#1 : tensor<2x4xf32>)
// CHECK:   arith.extf
// CHECK:   arith.mulf {{.+}} fastmath<contract>
// CHECK:   arith.addf {{.+}} fastmath<reassoc,contract>
// CHECK: return %[[ANEW]], %[[RS]]#0, %[[SNEW]]
func.func @step(%q: tensor<2x4xf16>, %k: tensor<3x4xf16>, %v: tensor<3x4xf16>, %m: tensor<2x3xi1>, %acc: tensor<2x4xf32>, %mx: tensor<2xf32>, %s: tensor<2xf32>, %b: index, %h: index, %i: index, %j: index, %n: index, %d: index, %seed: i64) -> (tensor<2x4xf32>, tensor<2xf32>, tensor<2xf32>) {
  %a, %mm, %ss = attn.online_attention q(%q) k(%k) v(%v) mask(%m : tensor<2x3xi1>) state(%acc, %mx, %s) at(%b, %h, %i, %j) kv_bound(%n) causal(%d) scale(0.5) rescale(8.0) p_type(f16) dropout(0.1, seed %seed)
      : tensor<2x4xf16>, tensor<3x4xf16>, tensor<3x4xf16> -> tensor<2x4xf32>, tensor<2xf32>, tensor<2xf32>
  return %a, %mm, %ss : tensor<2x4xf32>, tensor<2xf32>, tensor<2xf32>
}

// -----

// Additive mask, dynamic tile sizes, no causal, no dropout, eager rescale
// (threshold 0: grow = mb > m, so m' = max(m, mb)).
// x = S * scale + mask (natural units: a mask of -3.4e38 stays finite),
// then P = exp2((x - m'_safe) log2 e)
// CHECK-LABEL: func.func @additive
// CHECK: linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<?x3xf32>, tensor<?x3xbf16>)
// CHECK:   %[[SC:.+]] = arith.constant 5.000000e-01 : f32
// CHECK:   %[[XS:.+]] = arith.mulf %{{.+}}, %[[SC]] fastmath<contract>
// CHECK:   %[[MF:.+]] = arith.extf %{{.+}} : bf16 to f32
// CHECK:   arith.addf %[[XS]], %[[MF]] fastmath<contract>
// CHECK-NOT: linalg.index
// CHECK: linalg.generic
// CHECK:   arith.maximumf
// CHECK-NOT: arith.constant 5.000000e-01
// CHECK: linalg.generic
// CHECK-NOT: arith.addf
// CHECK:   arith.cmpf ogt
// CHECK:   arith.ori
// CHECK: scf.if
// CHECK: linalg.generic
// CHECK-NOT: arith.negf
// CHECK:   arith.select
// CHECK: linalg.generic
// CHECK-NOT: math.fma
// CHECK:   %[[D:.+]] = arith.subf
// CHECK:   %[[DL:.+]] = arith.mulf %[[D]]
// CHECK:   math.exp2 %[[DL]]
// CHECK-NOT: mului_extended
// CHECK-NOT: arith.truncf
// CHECK: return
func.func @additive(%q: tensor<?x4xf32>, %k: tensor<3x4xf32>, %v: tensor<3x4xf32>, %m: tensor<?x3xbf16>, %acc: tensor<?x4xf32>, %mx: tensor<?xf32>, %s: tensor<?xf32>, %b: index, %h: index, %i: index, %j: index) -> (tensor<?x4xf32>, tensor<?xf32>, tensor<?xf32>) {
  %a, %mm, %ss = attn.online_attention q(%q) k(%k) v(%v) mask(%m : tensor<?x3xbf16>) state(%acc, %mx, %s) at(%b, %h, %i, %j) scale(0.5) : tensor<?x4xf32>, tensor<3x4xf32>, tensor<3x4xf32> -> tensor<?x4xf32>, tensor<?xf32>, tensor<?xf32>
  return %a, %mm, %ss : tensor<?x4xf32>, tensor<?xf32>, tensor<?xf32>
}

// -----

// No mask, no causal, positive scale: the scores go straight from the
// product to the row max, with no modification generic at all.
// CHECK-LABEL: func.func @plain
// CHECK: %[[S:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: linalg.generic {{.+}} iterator_types = ["parallel", "reduction"]} ins(%[[S]] : tensor<4x8xf32>)
// CHECK:   arith.maximumf
func.func @plain(%q: tensor<4x16xbf16>, %k: tensor<8x16xbf16>, %v: tensor<8x16xbf16>, %acc: tensor<4x16xf32>, %mx: tensor<4xf32>, %s: tensor<4xf32>, %b: index, %h: index, %i: index, %j: index) -> (tensor<4x16xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a, %mm, %ss = attn.online_attention q(%q) k(%k) v(%v) state(%acc, %mx, %s) at(%b, %h, %i, %j) scale(0.25) : tensor<4x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16> -> tensor<4x16xf32>, tensor<4xf32>, tensor<4xf32>
  return %a, %mm, %ss : tensor<4x16xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Packed rows (decode over a GQA group's heads): dropout keys row r by
// head h + (i0 + r) floordiv sq and position (i0 + r) mod sq.
// CHECK-LABEL: func.func @packed
// CHECK-SAME: %[[H:[^:]+]]: index, %[[I0:[^:]+]]: index, %[[J0:[^:]+]]: index, %[[SQ:[^:]+]]: index, %[[SEED:[^:]+]]: i64
// CHECK: linalg.generic
// CHECK:   %[[RI:.+]] = linalg.index 0
// CHECK:   %[[T:.+]] = arith.addi %[[I0]], %[[RI]]
// CHECK:   %[[HD:.+]] = arith.divui %[[T]], %[[SQ]]
// CHECK:   %[[HEAD:.+]] = arith.addi %[[H]], %[[HD]]
// CHECK:   %[[POS:.+]] = arith.remui %[[T]], %[[SQ]]
// CHECK:   arith.index_castui %[[POS]]
// CHECK:   arith.index_castui %[[HEAD]]
func.func @packed(%q: tensor<4x16xbf16>, %k: tensor<8x16xbf16>, %v: tensor<8x16xbf16>, %acc: tensor<4x16xf32>, %mx: tensor<4xf32>, %s: tensor<4xf32>, %b: index, %h: index, %i: index, %j: index, %sq: index, %seed: i64) -> (tensor<4x16xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a, %mm, %ss = attn.online_attention q(%q) k(%k) v(%v) state(%acc, %mx, %s) at(%b, %h, %i, %j) packed(%sq) scale(0.25) dropout(0.2, seed %seed) : tensor<4x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16> -> tensor<4x16xf32>, tensor<4xf32>, tensor<4xf32>
  return %a, %mm, %ss : tensor<4x16xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @finalize
// CHECK-SAME: (%[[ACC:[^:]+]]: tensor<4x8xf32>, %[[MAX:[^:]+]]: tensor<4xf32>, %[[SUM:[^:]+]]: tensor<4xf32>)
// inv = sum == 0 ? 0 : 1 / sum  (a row that saw no key has acc = 0)
// CHECK: %[[INV:.+]] = linalg.generic {{.+}} ins(%[[SUM]] : tensor<4xf32>)
// CHECK:   %[[Z:.+]] = arith.cmpf oeq
// CHECK:   %[[R:.+]] = arith.divf
// CHECK:   arith.select %[[Z]], %{{.+}}, %[[R]]
// out = acc * inv, truncated to f16
// CHECK: %[[OUT:.+]] = linalg.generic {{.+}} ins(%[[ACC]], %[[INV]] : tensor<4x8xf32>, tensor<4xf32>) outs(%{{.+}} : tensor<4x8xf16>)
// CHECK:   %[[O:.+]] = arith.mulf
// CHECK:   arith.truncf %[[O]] : f32 to f16
// lse = sum == 0 ? -inf : max_safe + log2(sum) ln(2) (never max * log2 e)
// CHECK: %[[LSE:.+]] = linalg.generic {{.+}} ins(%[[MAX]], %[[SUM]] : tensor<4xf32>, tensor<4xf32>)
// CHECK-NOT: 1.44269502
// CHECK:   %[[L2:.+]] = math.log2
// CHECK:   %[[LN2:.+]] = arith.constant 0.693147182 : f32
// CHECK:   %[[LN:.+]] = arith.mulf %[[L2]], %[[LN2]]
// CHECK:   arith.addf %{{.+}}, %[[LN]]
// CHECK:   arith.constant 0xFF800000 : f32
// CHECK:   arith.select
// partial: out stays f32, no lse (the merge takes max and sum)
// CHECK: %[[POUT:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<4x8xf32>)
// CHECK-NOT: arith.truncf
// CHECK-NOT: math.log2
// CHECK: return %[[OUT]], %[[LSE]], %[[POUT]]
func.func @finalize(%acc: tensor<4x8xf32>, %m: tensor<4xf32>, %s: tensor<4xf32>) -> (tensor<4x8xf16>, tensor<4xf32>, tensor<4x8xf32>) {
  %o, %l = attn.online_attention_finalize %acc, %m, %s : tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4x8xf16>, tensor<4xf32>
  %po = attn.online_attention_finalize %acc, %m, %s partial : tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4x8xf32>
  return %o, %l, %po : tensor<4x8xf16>, tensor<4xf32>, tensor<4x8xf32>
}

// -----

// CHECK-DAG: #[[NRD:.+]] = affine_map<(d0, d1, d2) -> (d2, d0, d1)>
// CHECK-LABEL: func.func @merge
// CHECK-SAME: (%[[PO:[^:]+]]: tensor<3x4x8xf32>, %[[PM:[^:]+]]: tensor<3x4xf32>, %[[PS:[^:]+]]: tensor<3x4xf32>)
// M = max_n max[n]
// CHECK: %[[M:.+]] = linalg.generic {indexing_maps = [{{.+}}], iterator_types = ["parallel", "reduction"]} ins(%[[PM]] : tensor<3x4xf32>)
// CHECK:   arith.maximumf
// w_n = sum[n] exp2((max[n] - M_safe) log2 e)
// CHECK: %[[W:.+]] = linalg.generic {{.+}} ins(%[[PM]], %[[PS]], %[[M]] : tensor<3x4xf32>, tensor<3x4xf32>, tensor<4xf32>)
// CHECK:   ^bb0(%[[XM:.+]]: f32, %[[XS:.+]]: f32, %[[XMM:.+]]: f32, %{{.+}}: f32):
// CHECK:   arith.cmpf oeq, %[[XMM]]
// CHECK:   %[[MS:.+]] = arith.select
// CHECK:   %[[DM:.+]] = arith.subf %[[XM]], %[[MS]]
// CHECK:   %[[DL:.+]] = arith.mulf %[[DM]]
// CHECK:   %[[E:.+]] = math.exp2 %[[DL]]
// CHECK:   arith.mulf %[[XS]], %[[E]]
// W = sum_n w_n, compensated (Neumaier): the sum s and its compensation
// c as two results; t = s + x, c += |s| >= |x| ? (s - t) + x : (x - t) + s;
// no fast-math flags
// CHECK: %[[WSC:.+]]:2 = linalg.generic {{.+}} ins(%[[W]] : tensor<3x4xf32>) outs(%{{.+}}, %{{.+}} : tensor<4xf32>, tensor<4xf32>)
// CHECK:   ^bb0(%[[X:.+]]: f32, %[[S:.+]]: f32, %[[C:.+]]: f32):
// CHECK:   %[[T:.+]] = arith.addf %[[S]], %[[X]] : f32
// CHECK:   %[[AX:.+]] = math.absf %[[X]] : f32
// CHECK:   %[[AS:.+]] = math.absf %[[S]] : f32
// CHECK:   %[[BIG:.+]] = arith.cmpf oge, %[[AS]], %[[AX]] : f32
// CHECK:   %[[D1:.+]] = arith.subf %[[S]], %[[T]] : f32
// CHECK:   %[[L1:.+]] = arith.addf %[[D1]], %[[X]] : f32
// CHECK:   %[[D2:.+]] = arith.subf %[[X]], %[[T]] : f32
// CHECK:   %[[L2:.+]] = arith.addf %[[D2]], %[[S]] : f32
// CHECK:   %[[LOST:.+]] = arith.select %[[BIG]], %[[L1]], %[[L2]] : f32
// CHECK:   %[[C2:.+]] = arith.addf %[[C]], %[[LOST]] : f32
// CHECK:   linalg.yield %[[T]], %[[C2]] : f32, f32
// O = sum_n w_n out[n], compensated alike
// CHECK: %[[OC:.+]]:2 = linalg.generic {indexing_maps = [{{.+}}, #[[NRD]], {{.+}}, {{.+}}], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[W]], %[[PO]] : tensor<3x4xf32>, tensor<3x4x8xf32>)
// CHECK:   arith.mulf
// CHECK:   arith.addf
// CHECK:   linalg.yield
// then s + c of each
// CHECK: %[[WS:.+]] = linalg.generic {{.+}} ins(%[[WSC]]#0, %[[WSC]]#1 : tensor<4xf32>, tensor<4xf32>)
// CHECK:   arith.addf
// CHECK: %[[O:.+]] = linalg.generic {{.+}} ins(%[[OC]]#0, %[[OC]]#1 : tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK:   arith.addf
// out = W == 0 ? 0 : O / W  (bf16)
// CHECK: %[[OUT:.+]] = linalg.generic {{.+}} ins(%[[O]], %[[WS]] : tensor<4x8xf32>, tensor<4xf32>) outs(%{{.+}} : tensor<4x8xbf16>)
// CHECK:   arith.cmpf oeq
// CHECK:   arith.divf
// CHECK:   arith.select
// CHECK:   arith.truncf
// lse = W == 0 ? -inf : M_safe + log2(W) ln 2
// CHECK: %[[LSE:.+]] = linalg.generic {{.+}} ins(%[[M]], %[[WS]] : tensor<4xf32>, tensor<4xf32>)
// CHECK:   math.log2
// CHECK:   arith.mulf
// CHECK:   arith.addf
// CHECK:   arith.select
// CHECK: return %[[OUT]], %[[LSE]]
func.func @merge(%o: tensor<3x4x8xf32>, %m: tensor<3x4xf32>, %l: tensor<3x4xf32>) -> (tensor<4x8xbf16>, tensor<4xf32>) {
  %a, %b = attn.merge_partials %o, %m, %l : tensor<3x4x8xf32>, tensor<3x4xf32>, tensor<3x4xf32> -> tensor<4x8xbf16>, tensor<4xf32>
  return %a, %b : tensor<4x8xbf16>, tensor<4xf32>
}

// -----

// An i8 keep-mask (the runtime's bool masks are bytes): any nonzero byte
// attends, x = m != 0 ? S : -inf (the one place mask bytes become a
// decision, buildKeepBit).
// CHECK-LABEL: func.func @byte_mask
// CHECK: linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<2x3xf32>, tensor<2x3xi8>)
// CHECK:   ^bb0(%[[X:.+]]: f32, %[[MB:.+]]: i8, %{{.+}}: f32):
// CHECK:   %[[Z:.+]] = arith.constant 0 : i8
// CHECK:   %[[KEEP:.+]] = arith.cmpi ne, %[[MB]], %[[Z]] : i8
// CHECK:   arith.select %[[KEEP]], %{{.+}}, %{{.+}} : f32
func.func @byte_mask(%q: tensor<2x4xf32>, %k: tensor<3x4xf32>, %v: tensor<3x4xf32>, %m: tensor<2x3xi8>, %acc: tensor<2x4xf32>, %mx: tensor<2xf32>, %s: tensor<2xf32>, %i: index) -> (tensor<2x4xf32>, tensor<2xf32>, tensor<2xf32>) {
  %a, %mm, %ss = attn.online_attention q(%q) k(%k) v(%v) mask(%m : tensor<2x3xi8>) state(%acc, %mx, %s) at(%i, %i, %i, %i) scale(0.5)
      : tensor<2x4xf32>, tensor<3x4xf32>, tensor<3x4xf32> -> tensor<2x4xf32>, tensor<2xf32>, tensor<2xf32>
  return %a, %mm, %ss : tensor<2x4xf32>, tensor<2xf32>, tensor<2xf32>
}
