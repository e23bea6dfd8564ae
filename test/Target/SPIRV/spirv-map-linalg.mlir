// RUN: attn-opt %s --attn-spirv-map-linalg --split-input-file --verify-diagnostics | FileCheck %s

// A projection on buffers (attn-spirv-layer-buffers' output): the fill
// folds into the contraction as its starting value, the bias epilogue into
// its kernel (the f32 buffer between them goes), one gpu.launch remains:
// 256 outputs (1 x 2 x 8 x 16) over 2 workgroups of 128 invocations, the
// innermost parallel dimension (d) fastest, a loop over e (32) carrying
// the sum from 0.0, the bias added and stored into %q through the
// weight's and bias's views recreated inside.
#x = affine_map<(b, h, s, d, e) -> (b, s, e)>
#w = affine_map<(b, h, s, d, e) -> (h, d, e)>
#bhsd = affine_map<(b, h, s, d, e) -> (b, h, s, d)>
#id4 = affine_map<(b, h, s, d) -> (b, h, s, d)>
#hd = affine_map<(b, h, s, d) -> (h, d)>
// CHECK-LABEL: func.func @projection(
// CHECK-SAME: %[[X:[^:]+]]: memref<1x8x32xf32>, %[[W:[^:]+]]: memref<32x32xf32>, %[[B:[^:]+]]: memref<32xf32>, %[[Q:[^:]+]]: memref<1x2x8x16xf32>)
// CHECK-NOT: memref.alloc
// CHECK-NOT: linalg.
// CHECK-DAG: %[[C2:.+]] = arith.constant 2 : index
// CHECK-DAG: %[[C128:.+]] = arith.constant 128 : index
// CHECK: gpu.launch blocks(%{{.+}}, %{{.+}}, %{{.+}}) in (%{{.+}} = %[[C2]], %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) threads(%[[TX:.+]], %{{.+}}, %{{.+}}) in (%{{.+}} = %[[C128]], %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) module(@projection_kernels) function(@projection_linalg0)
// CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[LIN:.+]] = arith.addi %{{.+}}, %[[TX]] : index
// CHECK: %[[IN:.+]] = arith.cmpi ult, %[[LIN]], %{{.+}} : index
// CHECK: scf.if %[[IN]] {
// CHECK: %[[D:.+]] = arith.remui %[[LIN]], %{{.+}} : index
// CHECK: %[[W3:.+]] = memref.expand_shape %[[W]] {{\[}}[0, 1], [2]] output_shape [2, 16, 32]
// CHECK: %[[SUM:.+]] = scf.for %[[E:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[ACC:.+]] = %[[ZERO]]) -> (f32) {
// CHECK: memref.load %[[X]][%{{.+}}, %{{.+}}, %[[E]]]
// CHECK: memref.load %[[W3]][%{{.+}}, %[[D]], %[[E]]]
// CHECK: arith.mulf
// CHECK: %[[NEXT:.+]] = arith.addf %[[ACC]]
// CHECK: scf.yield %[[NEXT]] : f32
// CHECK: %[[B2:.+]] = memref.expand_shape %[[B]] {{\[}}[0, 1]] output_shape [2, 16]
// CHECK: %[[BIAS:.+]] = memref.load %[[B2]][%{{.+}}, %[[D]]]
// CHECK: %[[V:.+]] = arith.addf %[[SUM]], %[[BIAS]] : f32
// CHECK: memref.store %[[V]], %[[Q]][%{{.+}}, %{{.+}}, %{{.+}}, %[[D]]]
// CHECK: gpu.terminator
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @projection(%x: memref<1x8x32xf32>, %w: memref<32x32xf32>, %b: memref<32xf32>, %q: memref<1x2x8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %w3 = memref.expand_shape %w [[0, 1], [2]] output_shape [2, 16, 32] : memref<32x32xf32> into memref<2x16x32xf32>
  %acc = memref.alloc() : memref<1x2x8x16xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<1x2x8x16xf32>)
  linalg.generic {indexing_maps = [#x, #w, #bhsd], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%x, %w3 : memref<1x8x32xf32>, memref<2x16x32xf32>) outs(%acc : memref<1x2x8x16xf32>) {
  ^bb0(%a: f32, %bb: f32, %c: f32):
    %m = arith.mulf %a, %bb : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  }
  %b2 = memref.expand_shape %b [[0, 1]] output_shape [2, 16] : memref<32xf32> into memref<2x16xf32>
  linalg.generic {indexing_maps = [#id4, #hd, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%acc, %b2 : memref<1x2x8x16xf32>, memref<2x16xf32>) outs(%q : memref<1x2x8x16xf32>) {
  ^bb0(%a: f32, %bb: f32, %c: f32):
    %s = arith.addf %a, %bb : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Nothing to fold: a fill of a buffer another op reads, and an
// elementwise op on its own, are a kernel each (the fill's 300 points
// over 3 workgroups).
// CHECK-LABEL: func.func @separate(
// CHECK: %[[C3:.+]] = arith.constant 3 : index
// CHECK: gpu.launch blocks({{.+}}) in (%{{.+}} = %[[C3]], %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) threads
// CHECK-SAME: function(@separate_linalg0)
// CHECK: memref.store %{{.+}}, %[[T:.+]][%{{.+}}] : memref<300xf32>
// CHECK: gpu.launch
// CHECK-SAME: function(@separate_linalg1)
// CHECK: arith.mulf
// CHECK: memref.store
// CHECK-NOT: gpu.launch
func.func @separate(%t: memref<300xf32>, %o: memref<300xf32>) {
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%t : memref<300xf32>)
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%t : memref<300xf32>) outs(%o : memref<300xf32>) {
  ^bb0(%a: f32, %c: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// A layer's shapes are static; a dynamic one is refused.
func.func @dynamic(%t: memref<?xf32>) {
  %one = arith.constant 1.0 : f32
  // expected-error @+1 {{attn-spirv-map-linalg: a function-level linalg op of dynamic extent}}
  linalg.fill ins(%one : f32) outs(%t : memref<?xf32>)
  return
}
