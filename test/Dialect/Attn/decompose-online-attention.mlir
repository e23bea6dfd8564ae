// RUN: attn-opt %s --attn-decompose-online-attention -split-input-file | FileCheck %s

// CHECK-DAG: #[[QD:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[KD:.+]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[RC3:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[RC:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[R:.+]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[TR:.+]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x4xf16>, %[[K:[^:]+]]: tensor<3x4xf16>, %[[V:[^:]+]]: tensor<3x4xf16>, %[[M:[^:]+]]: tensor<2x3xi1>, %[[ACC:[^:]+]]: tensor<2x4xf32>, %[[MAX:[^:]+]]: tensor<2xf32>, %[[SUM:[^:]+]]: tensor<2xf32>, %[[B:[^:]+]]: index, %[[H:[^:]+]]: index, %[[I0:[^:]+]]: index, %[[J0:[^:]+]]: index, %[[DIAG:[^:]+]]: index, %[[SEED:[^:]+]]: i64)
// Kt = f32(K)^T, so that S = Q . Kt runs with the key index innermost
// CHECK: %[[KT:.+]] = linalg.generic {indexing_maps = [#[[TR]], #[[RC]]], iterator_types = ["parallel", "parallel"]} ins(%[[K]] : tensor<3x4xf16>) outs(%{{.+}} : tensor<4x3xf32>)
// CHECK:   arith.extf
// S = Q . Kt (f16 extended to f32, contract/reassoc for FMAs)
// CHECK: %[[S0:.+]] = linalg.generic {indexing_maps = [#[[RC3]], #[[KD]], #[[QD]]], iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[Q]], %[[KT]] : tensor<2x4xf16>, tensor<4x3xf32>) outs(%{{.+}} : tensor<2x3xf32>)
// CHECK:   arith.extf
// CHECK:   arith.mulf %{{.+}}, %{{.+}} fastmath<contract> : f32
// CHECK:   arith.addf %{{.+}}, %{{.+}} fastmath<reassoc,contract> : f32
// S = S * scale * log2(e) (0.5 * 1.4427); -inf where !mask; -inf where j0 + c > i0 + r + diag
// CHECK: %[[S:.+]] = linalg.generic {{.+}} ins(%[[S0]], %[[M]] : tensor<2x3xf32>, tensor<2x3xi1>)
// CHECK:   ^bb0(%[[X:.+]]: f32, %[[KEEP:.+]]: i1, %{{.+}}: f32):
// CHECK:   %[[SL:.+]] = arith.constant 0.72134751 : f32
// CHECK:   %[[XS:.+]] = arith.mulf %[[X]], %[[SL]]
// CHECK:   %[[NINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK:   %[[XM:.+]] = arith.select %[[KEEP]], %[[XS]], %[[NINF]]
// CHECK:   %[[RI:.+]] = linalg.index 0
// CHECK:   %[[CI:.+]] = linalg.index 1
// CHECK:   %[[KEY:.+]] = arith.addi %[[J0]], %[[CI]]
// CHECK:   %[[ROW:.+]] = arith.addi %[[I0]], %[[RI]]
// CHECK:   %[[LIM:.+]] = arith.addi %[[ROW]], %[[DIAG]]
// CHECK:   %[[HID:.+]] = arith.cmpi sgt, %[[KEY]], %[[LIM]]
// CHECK:   arith.select %[[HID]], %[[NINF]], %[[XM]]
// m_new = max(m_old, rowmax(S))
// CHECK: %[[MNEW:.+]] = linalg.generic {indexing_maps = [#[[RC]], #[[R]]], iterator_types = ["parallel", "reduction"]} ins(%[[S]] : tensor<2x3xf32>) outs(%[[MAX]] : tensor<2xf32>)
// CHECK:   arith.maximumf
// P = exp2(S - m_safe), m_safe = m_new == -inf ? 0 : m_new
// CHECK: %[[P:.+]] = linalg.generic {{.+}} ins(%[[S]], %[[MNEW]] : tensor<2x3xf32>, tensor<2xf32>)
// CHECK:   %[[ISN:.+]] = arith.cmpf oeq, %{{.+}}, %{{.+}} : f32
// CHECK:   %[[SAFE:.+]] = arith.select %[[ISN]], %{{.+}}, %{{.+}} : f32
// CHECK:   %[[D:.+]] = arith.subf %{{.+}}, %[[SAFE]]
// CHECK:   math.exp2 %[[D]]
// alpha = exp2(m_old - m_safe)
// CHECK: %[[ALPHA:.+]] = linalg.generic {{.+}} ins(%[[MAX]], %[[MNEW]] : tensor<2xf32>, tensor<2xf32>)
// CHECK:   arith.cmpf oeq
// CHECK:   arith.select
// CHECK:   arith.subf
// CHECK:   math.exp2
// sum' = alpha * sum + rowsum(P)  (undropped P)
// CHECK: %[[SSC:.+]] = linalg.generic {{.+}} ins(%[[ALPHA]] : tensor<2xf32>) outs(%[[SUM]] : tensor<2xf32>)
// CHECK:   arith.mulf
// CHECK: %[[SNEW:.+]] = linalg.generic {{.+}} ins(%[[P]] : tensor<2x3xf32>) outs(%[[SSC]] : tensor<2xf32>)
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
// acc' = alpha * acc + dropout(P) . V
// CHECK: %[[ASC:.+]] = linalg.generic {{.+}} ins(%[[ALPHA]] : tensor<2xf32>) outs(%[[ACC]] : tensor<2x4xf32>)
// CHECK:   arith.mulf
// CHECK: %[[ANEW:.+]] = linalg.generic {indexing_maps = [#[[RC3]], #[[KD]], #[[QD]]], iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[PD]], %[[V]] : tensor<2x3xf32>, tensor<3x4xf16>) outs(%[[ASC]] : tensor<2x4xf32>)
// CHECK:   arith.extf
// CHECK:   arith.mulf {{.+}} fastmath<contract>
// CHECK:   arith.addf {{.+}} fastmath<reassoc,contract>
// CHECK: return %[[ANEW]], %[[MNEW]], %[[SNEW]]
func.func @step(%q: tensor<2x4xf16>, %k: tensor<3x4xf16>, %v: tensor<3x4xf16>, %m: tensor<2x3xi1>, %acc: tensor<2x4xf32>, %mx: tensor<2xf32>, %s: tensor<2xf32>, %b: index, %h: index, %i: index, %j: index, %d: index, %seed: i64) -> (tensor<2x4xf32>, tensor<2xf32>, tensor<2xf32>) {
  %a, %mm, %ss = attn.online_attention q(%q) k(%k) v(%v) mask(%m : tensor<2x3xi1>) state(%acc, %mx, %s) at(%b, %h, %i, %j) causal(%d) scale(0.5) dropout(0.1, seed %seed) : tensor<2x4xf16>, tensor<3x4xf16>, tensor<3x4xf16> -> tensor<2x4xf32>, tensor<2xf32>, tensor<2xf32>
  return %a, %mm, %ss : tensor<2x4xf32>, tensor<2xf32>, tensor<2xf32>
}

// -----

// Additive mask, dynamic tile sizes, no causal, no dropout.
// CHECK-LABEL: func.func @additive
// CHECK: linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<?x3xf32>, tensor<?x3xbf16>)
// S = S * scale * log2(e) + mask * log2(e)
// CHECK:   %[[XS:.+]] = arith.mulf
// CHECK:   %[[MF:.+]] = arith.extf %{{.+}} : bf16 to f32
// CHECK:   %[[ML:.+]] = arith.mulf %[[MF]], %{{.+}}
// CHECK:   arith.addf %[[XS]], %[[ML]]
// CHECK-NOT: linalg.index
// CHECK-NOT: mului_extended
// CHECK: return
func.func @additive(%q: tensor<?x4xf32>, %k: tensor<3x4xf32>, %v: tensor<3x4xf32>, %m: tensor<?x3xbf16>, %acc: tensor<?x4xf32>, %mx: tensor<?xf32>, %s: tensor<?xf32>, %b: index, %h: index, %i: index, %j: index) -> (tensor<?x4xf32>, tensor<?xf32>, tensor<?xf32>) {
  %a, %mm, %ss = attn.online_attention q(%q) k(%k) v(%v) mask(%m : tensor<?x3xbf16>) state(%acc, %mx, %s) at(%b, %h, %i, %j) scale(0.5) : tensor<?x4xf32>, tensor<3x4xf32>, tensor<3x4xf32> -> tensor<?x4xf32>, tensor<?xf32>, tensor<?xf32>
  return %a, %mm, %ss : tensor<?x4xf32>, tensor<?xf32>, tensor<?xf32>
}

// -----

// CHECK-LABEL: func.func @finalize
// CHECK-SAME: (%[[ACC:[^:]+]]: tensor<4x8xf32>, %[[MAX:[^:]+]]: tensor<4xf32>, %[[SUM:[^:]+]]: tensor<4xf32>)
// out = sum == 0 ? 0 : acc / sum, truncated to f16
// CHECK: %[[OUT:.+]] = linalg.generic {{.+}} ins(%[[ACC]], %[[SUM]] : tensor<4x8xf32>, tensor<4xf32>) outs(%{{.+}} : tensor<4x8xf16>)
// CHECK:   %[[Z:.+]] = arith.cmpf oeq
// CHECK:   %[[DIV:.+]] = arith.divf
// CHECK:   %[[SEL:.+]] = arith.select %[[Z]], %{{.+}}, %[[DIV]]
// CHECK:   arith.truncf %[[SEL]] : f32 to f16
// lse = sum == 0 ? -inf : max * ln(2) + ln(sum)
// CHECK: %[[LSE:.+]] = linalg.generic {{.+}} ins(%[[MAX]], %[[SUM]] : tensor<4xf32>, tensor<4xf32>)
// CHECK:   arith.constant 0.693147182 : f32
// CHECK:   math.log
// CHECK:   arith.constant 0xFF800000 : f32
// CHECK:   arith.select
// CHECK: return %[[OUT]], %[[LSE]]
func.func @finalize(%acc: tensor<4x8xf32>, %m: tensor<4xf32>, %s: tensor<4xf32>) -> (tensor<4x8xf16>, tensor<4xf32>) {
  %o, %l = attn.online_attention_finalize %acc, %m, %s : tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4x8xf16>, tensor<4xf32>
  return %o, %l : tensor<4x8xf16>, tensor<4xf32>
}

// -----

// CHECK-DAG: #[[NRD:.+]] = affine_map<(d0, d1, d2) -> (d2, d0, d1)>
// CHECK-LABEL: func.func @merge
// CHECK-SAME: (%[[ACC:[^:]+]]: tensor<3x4x8xf32>, %[[MAX:[^:]+]]: tensor<3x4xf32>, %[[SUM:[^:]+]]: tensor<3x4xf32>)
// m = max_n max[n]
// CHECK: %[[M:.+]] = linalg.generic {indexing_maps = [{{.+}}], iterator_types = ["parallel", "reduction"]} ins(%[[MAX]] : tensor<3x4xf32>)
// CHECK:   arith.maximumf
// w_n = exp2(max[n] - (m == -inf ? 0 : m))
// CHECK: %[[W:.+]] = linalg.generic {{.+}} ins(%[[MAX]], %[[M]] : tensor<3x4xf32>, tensor<4xf32>)
// CHECK:   arith.cmpf oeq
// CHECK:   arith.select
// CHECK:   math.exp2
// sum = sum_n w_n * sum[n]
// CHECK: %[[S:.+]] = linalg.generic {{.+}} ins(%[[W]], %[[SUM]] : tensor<3x4xf32>, tensor<3x4xf32>)
// CHECK:   arith.mulf
// CHECK:   arith.addf
// acc = sum_n w_n * acc[n]
// CHECK: %[[A:.+]] = linalg.generic {indexing_maps = [{{.+}}, #[[NRD]], {{.+}}], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[W]], %[[ACC]] : tensor<3x4xf32>, tensor<3x4x8xf32>)
// CHECK:   arith.mulf
// CHECK:   arith.addf
// CHECK: return %[[A]], %[[M]], %[[S]]
func.func @merge(%a: tensor<3x4x8xf32>, %m: tensor<3x4xf32>, %s: tensor<3x4xf32>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>) {
  %na, %nm, %ns = attn.merge_partials %a, %m, %s : tensor<3x4x8xf32>, tensor<3x4xf32>, tensor<3x4xf32> -> tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>
  return %na, %nm, %ns : tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>
}
