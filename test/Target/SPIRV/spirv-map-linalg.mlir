// RUN: attn-opt %s --attn-spirv-map-linalg --split-input-file --verify-diagnostics | FileCheck %s --check-prefixes=CHECK,TILED
// RUN: attn-opt %s --attn-spirv-map-linalg=tile=false --split-input-file --verify-diagnostics | FileCheck %s --check-prefixes=CHECK,SIMPLE

// A projection on buffers (attn-spirv-layer-buffers' output): the fill
// folds into the contraction as its starting value, the bias epilogue into
// its kernel (the f32 buffer between them goes), one gpu.launch remains,
// reading the weight and the bias through their views recreated inside.
// CHECK-LABEL: func.func @projection(
// CHECK-SAME: %[[X:[^:]+]]: memref<1x8x32xf32>, %[[W:[^:]+]]: memref<32x32xf32>, %[[B:[^:]+]]: memref<32xf32>, %[[Q:[^:]+]]: memref<1x2x8x16xf32>)
// CHECK-NOT: memref.alloc()
// CHECK-NOT: linalg.

// Tiled (M = b x s = 8 rows, N = h x d = 32 columns, K = e = 32): a
// workgroup of 256 invocations per 16 x 16 outputs (grid 2 x 1), the sum
// from 0.0 over two steps of 16 keys, each step staging x's and W's
// slices in workgroup memory between barriers; the bias added and the
// store guarded by the output's existence.
// TILED-DAG: %[[C2:.+]] = arith.constant 2 : index
// TILED-DAG: %[[C256:.+]] = arith.constant 256 : index
// TILED: gpu.launch blocks(%{{.+}}, %{{.+}}, %{{.+}}) in (%{{.+}} = %[[C2]], %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) threads(%{{.+}}, %{{.+}}, %{{.+}}) in (%{{.+}} = %[[C256]], %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) module(@projection_kernels) function(@projection_linalg0)
// TILED: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// TILED: %[[W3:.+]] = memref.expand_shape %[[W]] {{\[}}[0, 1], [2]] output_shape [2, 16, 32]
// TILED: %[[AT:.+]] = memref.alloc() : memref<16x17xf32, #spirv.storage_class<Workgroup>>
// TILED: %[[BT:.+]] = memref.alloc() : memref<16x17xf32, #spirv.storage_class<Workgroup>>
// TILED: %[[SUM:.+]] = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[ACC:.+]] = %[[ZERO]]) -> (f32) {
// TILED: %[[XV:.+]] = memref.load %[[X]]
// TILED: %[[WV:.+]] = memref.load %[[W3]]
// TILED: memref.store %[[XV]], %[[AT]]
// TILED: memref.store %[[WV]], %[[BT]]
// TILED: gpu.barrier
// TILED: %[[COUNT:.+]] = arith.minui
// TILED: %[[STEP:.+]] = scf.for %{{.+}} = %{{.+}} to %[[COUNT]] step %{{.+}} iter_args(%[[IN:.+]] = %[[ACC]]) -> (f32) {
// TILED: memref.load %[[AT]]
// TILED: memref.load %[[BT]]
// TILED: arith.mulf
// TILED: %[[NEXT:.+]] = arith.addf %[[IN]]
// TILED: scf.yield %[[NEXT]] : f32
// TILED: gpu.barrier
// TILED: scf.yield %[[STEP]] : f32
// TILED: %[[B2:.+]] = memref.expand_shape %[[B]] {{\[}}[0, 1]] output_shape [2, 16]
// TILED: scf.if
// TILED: %[[BIAS:.+]] = memref.load %[[B2]]
// TILED: %[[V:.+]] = arith.addf %[[SUM]], %[[BIAS]] : f32
// TILED: memref.store %[[V]], %[[Q]]
// TILED: gpu.terminator

// Without tiles: an invocation per output, 256 outputs over 2 workgroups
// of 128, the innermost parallel dimension (d) fastest, a loop over e
// (32) carrying the sum from 0.0, the bias added and stored into %q.
// SIMPLE-DAG: %[[C2:.+]] = arith.constant 2 : index
// SIMPLE-DAG: %[[C128:.+]] = arith.constant 128 : index
// SIMPLE: gpu.launch blocks(%{{.+}}, %{{.+}}, %{{.+}}) in (%{{.+}} = %[[C2]], %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) threads(%[[TX:.+]], %{{.+}}, %{{.+}}) in (%{{.+}} = %[[C128]], %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) module(@projection_kernels) function(@projection_linalg0)
// SIMPLE: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// SIMPLE: %[[W3:.+]] = memref.expand_shape %[[W]] {{\[}}[0, 1], [2]] output_shape [2, 16, 32]
// SIMPLE: %[[LIN:.+]] = arith.addi %{{.+}}, %[[TX]] : index
// SIMPLE: %[[IN:.+]] = arith.cmpi ult, %[[LIN]], %{{.+}} : index
// SIMPLE: scf.if %[[IN]] {
// SIMPLE: %[[D:.+]] = arith.remui %[[LIN]], %{{.+}} : index
// SIMPLE: %[[SUM:.+]] = scf.for %[[E:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[ACC:.+]] = %[[ZERO]]) -> (f32) {
// SIMPLE: memref.load %[[X]][%{{.+}}, %{{.+}}, %[[E]]]
// SIMPLE: memref.load %[[W3]][%{{.+}}, %[[D]], %[[E]]]
// SIMPLE: arith.mulf
// SIMPLE: %[[NEXT:.+]] = arith.addf %[[ACC]]
// SIMPLE: scf.yield %[[NEXT]] : f32
// SIMPLE: %[[B2:.+]] = memref.expand_shape %[[B]] {{\[}}[0, 1]] output_shape [2, 16]
// SIMPLE: %[[BIAS:.+]] = memref.load %[[B2]][%{{.+}}, %[[D]]]
// SIMPLE: %[[V:.+]] = arith.addf %[[SUM]], %[[BIAS]] : f32
// SIMPLE: memref.store %[[V]], %[[Q]][%{{.+}}, %{{.+}}, %{{.+}}, %[[D]]]
// SIMPLE: gpu.terminator
// CHECK-NOT: gpu.launch
// CHECK: return
#x = affine_map<(b, h, s, d, e) -> (b, s, e)>
#w = affine_map<(b, h, s, d, e) -> (h, d, e)>
#bhsd = affine_map<(b, h, s, d, e) -> (b, h, s, d)>
#id4 = affine_map<(b, h, s, d) -> (b, h, s, d)>
#hd = affine_map<(b, h, s, d) -> (h, d)>
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

// M and N of at least 64: 64 x 64 outputs per workgroup, each invocation
// 4 x 4 of them (16 accumulators through both loops), the slices 64 x 16
// and 16 x 64 (rows padded by one), each output's store guarded; grid
// 2 x 1 for N = 100 (a tail tile), M = 64. Without tiles, 6400 outputs
// over 50 workgroups of 128.
// CHECK-LABEL: func.func @blocked(
// TILED-DAG: %[[C2:.+]] = arith.constant 2 : index
// TILED: gpu.launch blocks(%{{.+}}, %{{.+}}, %{{.+}}) in (%{{.+}} = %[[C2]],
// TILED: memref.alloc() : memref<64x17xf16, #spirv.storage_class<Workgroup>>
// TILED: memref.alloc() : memref<16x65xf16, #spirv.storage_class<Workgroup>>
// TILED: scf.for {{.+}} -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
// TILED-COUNT-4: memref.store %{{.+}}, %{{.+}} : memref<64x17xf16, #spirv.storage_class<Workgroup>>
// TILED: scf.for {{.+}} -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
// TILED-COUNT-16: arith.mulf
// TILED-COUNT-16: scf.if
// TILED: gpu.terminator
// SIMPLE-DAG: %[[C50:.+]] = arith.constant 50 : index
// SIMPLE: gpu.launch blocks(%{{.+}}, %{{.+}}, %{{.+}}) in (%{{.+}} = %[[C50]],
func.func @blocked(%a: memref<64x48xf16>, %b: memref<100x48xf16>, %c: memref<64x100xf32>) {
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : memref<64x48xf16>, memref<100x48xf16>) outs(%c : memref<64x100xf32>) {
  ^bb0(%x: f16, %y: f16, %acc: f32):
    %xe = arith.extf %x : f16 to f32
    %ye = arith.extf %y : f16 to f32
    %m = arith.mulf %xe, %ye : f32
    %s = arith.addf %acc, %m : f32
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
