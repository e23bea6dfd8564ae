// RUN: attn-opt %s --pass-pipeline='builtin.module(func.func(attn-cpu-order-contractions{parallel=false}))' --split-input-file | FileCheck %s
// RUN: attn-opt %s --pass-pipeline='builtin.module(func.func(attn-cpu-order-contractions))' --split-input-file | FileCheck %s --check-prefix=PAR

// A layer's q projection (loops b, h, s, d, e; e the reduction,
// innermost): reordered to (b, h, s, e, d) so that d, the output's
// contiguous dimension, is innermost, and W [H, D, E], read along d, is
// transposed once to [H, E, D]; x (not read along d) is read as it was.
// CHECK-DAG: #[[X:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d3)>
// CHECK-DAG: #[[WT:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d3, d4)>
// CHECK-DAG: #[[OUT:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
// CHECK-LABEL: func.func @projection(
// CHECK-SAME: %[[XA:[^:]+]]: tensor<1x8x32xf32>, %[[W:[^:]+]]: tensor<2x16x32xf32>, %[[ACC:[^:]+]]: tensor<1x2x8x16xf32>)
// CHECK: %[[E:.+]] = tensor.empty() : tensor<2x32x16xf32>
// CHECK: %[[T:.+]] = linalg.transpose ins(%[[W]] : tensor<2x16x32xf32>) outs(%[[E]] : tensor<2x32x16xf32>) permutation = [0, 2, 1]
// CHECK: linalg.generic {indexing_maps = [#[[X]], #[[WT]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]} ins(%[[XA]], %[[T]] : tensor<1x8x32xf32>, tensor<2x32x16xf32>) outs(%[[ACC]] : tensor<1x2x8x16xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// With parallel tiles (the default): the outer parallel loops b, h, s onto
// an scf.forall, one b and one h per tile and s in blocks of 16 (here all
// 8 rows), each tile the same contraction over its slices, written back
// with parallel_insert_slice.
// PAR-LABEL: func.func @projection(
// PAR: %[[T:.+]] = linalg.transpose
// PAR: scf.forall (%[[B:.+]], %[[H:.+]], %[[S:.+]]) = (0, 0, 0) to (1, 2, 8) step (1, 1, 8) shared_outs(%[[O:.+]] = %{{.+}})
// PAR: tensor.extract_slice %{{.+}}[%[[B]], %[[S]], 0] [1, 8, 32]
// PAR: tensor.extract_slice %[[T]][%[[H]], 0, 0] [1, 32, 16]
// PAR: tensor.extract_slice %[[O]][%[[B]], %[[H]], %[[S]], 0] [1, 1, 8, 16]
// PAR: linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]
// PAR: tensor.parallel_insert_slice
func.func @projection(%x: tensor<1x8x32xf32>, %w: tensor<2x16x32xf32>, %acc: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(b, h, s, d, e) -> (b, s, e)>, affine_map<(b, h, s, d, e) -> (h, d, e)>, affine_map<(b, h, s, d, e) -> (b, h, s, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%x, %w : tensor<1x8x32xf32>, tensor<2x16x32xf32>) outs(%acc : tensor<1x2x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x2x8x16xf32>
  return %r : tensor<1x2x8x16xf32>
}

// -----

// The output projection (loops b, s, e, h, d; h and d reduced): e, the
// output's contiguous dimension, moves innermost after the reductions;
// Wo [E, H, D] becomes [H, D, E]; o [B, H, S, D] is not read along e.
// CHECK-DAG: #[[O:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d1, d3)>
// CHECK-DAG: #[[WOT:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d2, d3, d4)>
// CHECK-DAG: #[[Y:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>
// CHECK-LABEL: func.func @output(
// CHECK: %[[T:.+]] = linalg.transpose ins(%{{.+}} : tensor<32x2x16xf32>) outs(%{{.+}} : tensor<2x16x32xf32>) permutation = [1, 2, 0]
// CHECK: linalg.generic {indexing_maps = [#[[O]], #[[WOT]], #[[Y]]], iterator_types = ["parallel", "parallel", "reduction", "reduction", "parallel"]} ins(%{{.+}}, %[[T]] :
func.func @output(%o: tensor<1x2x8x16xf32>, %wo: tensor<32x2x16xf32>, %acc: tensor<1x8x32xf32>) -> tensor<1x8x32xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(b, s, e, h, d) -> (b, h, s, d)>, affine_map<(b, s, e, h, d) -> (e, h, d)>, affine_map<(b, s, e, h, d) -> (b, s, e)>], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%o, %wo : tensor<1x2x8x16xf32>, tensor<32x2x16xf32>) outs(%acc : tensor<1x8x32xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x8x32xf32>
  return %r : tensor<1x8x32xf32>
}

// -----

// Left alone: an elementwise op (no reduction), a contraction already
// innermost in the output's dimension, and one inside a tile (the
// vectorizer's).
// CHECK-LABEL: func.func @alone(
// CHECK-NOT: linalg.transpose
// CHECK: iterator_types = ["parallel"]
// CHECK: iterator_types = ["reduction", "parallel"]
// CHECK: scf.forall
// CHECK: iterator_types = ["parallel", "reduction"]
func.func @alone(%a: tensor<4xf32>, %m: tensor<3x4xf32>, %v: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<2x3xf32>) {
  %e = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%v : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.mulf %x, %x : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %c = linalg.generic {indexing_maps = [affine_map<(k, i) -> (k, i)>, affine_map<(k, i) -> (i)>], iterator_types = ["reduction", "parallel"]} ins(%m : tensor<3x4xf32>) outs(%v : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %init = tensor.empty() : tensor<2x3xf32>
  %t = scf.forall (%i) in (2) shared_outs(%o = %init) -> tensor<2x3xf32> {
    %row = tensor.extract_slice %o[%i, 0] [1, 3] [1, 1] : tensor<2x3xf32> to tensor<3xf32>
    %r = linalg.generic {indexing_maps = [affine_map<(j, k) -> (j, k)>, affine_map<(j, k) -> (j)>], iterator_types = ["parallel", "reduction"]} ins(%m : tensor<3x4xf32>) outs(%row : tensor<3xf32>) {
    ^bb0(%x: f32, %y: f32):
      %s = arith.addf %x, %y : f32
      linalg.yield %s : f32
    } -> tensor<3xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %r into %o[%i, 0] [1, 3] [1, 1] : tensor<3xf32> into tensor<2x3xf32>
    }
  }
  return %e, %c, %t : tensor<4xf32>, tensor<4xf32>, tensor<2x3xf32>
}
