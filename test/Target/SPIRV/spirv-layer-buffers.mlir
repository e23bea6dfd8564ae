// RUN: attn-opt %s --attn-spirv-layer-buffers --split-input-file | FileCheck %s
// RUN: not attn-opt %s --attn-spirv-layer-buffers=refuse=true --split-input-file 2>&1 | FileCheck %s --check-prefix=REFUSE
// RUN: not attn-opt %S/../../Dialect/Attn/decompose-mha.mlir --attn-spirv-layer-buffers --split-input-file 2>&1 | FileCheck %s --check-prefix=MHA
// With refuse (the tiled variant's step), the layer is an error and the
// attention kernel's source passes.
// REFUSE: error: attn-to-spirv-pipeline{variant=tiled} compiles attention kernels only; a layer (attn.mha) needs variant=portable, coopmat or coopmat-scalar
// REFUSE-NOT: error
// An attn.mha not decomposed is an error naming the pass that does it.
// MHA: error: 'attn.mha' op attn-spirv-layer-buffers: decompose it first (attn-decompose-mha; attn-to-spirv-pipeline does)

// A decomposed layer's shape, small: a projection (fill, contraction, bias
// epilogue) feeding attn.sdpa, whose result the output projection reads,
// written into the result argument. The intermediates become device
// buffers (memref.alloc in the default space), the weight's head split a
// view of its argument, the attention stays on tensors between a
// to_tensor of its operand's buffer and a materialize into its own, and
// the output projection accumulates in the result argument itself.
// CHECK-LABEL: func.func @layer(
// CHECK-SAME: %[[X:[^:]+]]: memref<1x8x32xf32>, %[[W:[^:]+]]: memref<32x32xf32>, %[[B:[^:]+]]: memref<32xf32>, %[[WO:[^:]+]]: memref<32x32xf32>, %[[Y:[^:]+]]: memref<1x8x32xf32>)
// CHECK: %[[W3:.+]] = memref.expand_shape %[[W]] {{\[}}[0, 1], [2]] output_shape [2, 16, 32]
// CHECK: %[[ACC:.+]] = memref.alloc() {{.*}}: memref<1x2x8x16xf32>
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[ACC]] : memref<1x2x8x16xf32>)
// CHECK: linalg.generic {{.+}} ins(%[[X]], %[[W3]] : memref<1x8x32xf32>, memref<2x16x32xf32>) outs(%[[ACC]] : memref<1x2x8x16xf32>)
// CHECK: %[[Q:.+]] = memref.alloc() {{.*}}: memref<1x2x8x16xf32>
// CHECK: linalg.generic {{.+}} ins(%[[ACC]], %{{.+}} : memref<1x2x8x16xf32>, memref<2x16xf32>) outs(%[[Q]] : memref<1x2x8x16xf32>)
// CHECK: %[[QT:.+]] = bufferization.to_tensor %[[Q]]
// CHECK: %[[OB:.+]] = memref.alloc() : memref<1x2x8x16xf32>
// CHECK: %[[O:.+]] = attn.sdpa %[[QT]], %[[QT]], %[[QT]]
// CHECK: bufferization.materialize_in_destination %[[O]] in restrict writable %[[OB]]
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[Y]] : memref<1x8x32xf32>)
// CHECK: linalg.generic {{.+}} ins(%[[OB]], %{{.+}} : memref<1x2x8x16xf32>, memref<32x2x16xf32>) outs(%[[Y]] : memref<1x8x32xf32>)
// CHECK-NOT: tensor.
// CHECK-NOT: memref.copy
// CHECK: return
#x = affine_map<(b, h, s, d, e) -> (b, s, e)>
#w = affine_map<(b, h, s, d, e) -> (h, d, e)>
#bhsd = affine_map<(b, h, s, d, e) -> (b, h, s, d)>
#id4 = affine_map<(b, h, s, d) -> (b, h, s, d)>
#hd = affine_map<(b, h, s, d) -> (h, d)>
#o = affine_map<(b, s, e, h, d) -> (b, h, s, d)>
#wo = affine_map<(b, s, e, h, d) -> (e, h, d)>
#y = affine_map<(b, s, e, h, d) -> (b, s, e)>
func.func @layer(%xm: memref<1x8x32xf32>, %wm: memref<32x32xf32>, %bm: memref<32xf32>, %wom: memref<32x32xf32>, %ym: memref<1x8x32xf32>) {
  %x = bufferization.to_tensor %xm restrict : memref<1x8x32xf32> to tensor<1x8x32xf32>
  %wt = bufferization.to_tensor %wm restrict : memref<32x32xf32> to tensor<32x32xf32>
  %bt = bufferization.to_tensor %bm restrict : memref<32xf32> to tensor<32xf32>
  %wot = bufferization.to_tensor %wom restrict : memref<32x32xf32> to tensor<32x32xf32>
  %zero = arith.constant 0.0 : f32
  %w3 = tensor.expand_shape %wt [[0, 1], [2]] output_shape [2, 16, 32] : tensor<32x32xf32> into tensor<2x16x32xf32>
  %e = tensor.empty() : tensor<1x2x8x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %q32 = linalg.generic {indexing_maps = [#x, #w, #bhsd], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%x, %w3 : tensor<1x8x32xf32>, tensor<2x16x32xf32>) outs(%acc : tensor<1x2x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x2x8x16xf32>
  %b2 = tensor.expand_shape %bt [[0, 1]] output_shape [2, 16] : tensor<32xf32> into tensor<2x16xf32>
  %e2 = tensor.empty() : tensor<1x2x8x16xf32>
  %q = linalg.generic {indexing_maps = [#id4, #hd, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%q32, %b2 : tensor<1x2x8x16xf32>, tensor<2x16xf32>) outs(%e2 : tensor<1x2x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<1x2x8x16xf32>
  %o = attn.sdpa %q, %q, %q : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  %wo3 = tensor.expand_shape %wot [[0], [1, 2]] output_shape [32, 2, 16] : tensor<32x32xf32> into tensor<32x2x16xf32>
  %e3 = tensor.empty() : tensor<1x8x32xf32>
  %acc3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<1x8x32xf32>) -> tensor<1x8x32xf32>
  %y = linalg.generic {indexing_maps = [#o, #wo, #y], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%o, %wo3 : tensor<1x2x8x16xf32>, tensor<32x2x16xf32>) outs(%acc3 : tensor<1x8x32xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x8x32xf32>
  bufferization.materialize_in_destination %y in restrict writable %ym : (tensor<1x8x32xf32>, memref<1x8x32xf32>) -> ()
  return
}

// -----

// The attention kernel's own source (no tensor work besides the attention):
// left as it is.
// CHECK-LABEL: func.func @kernel(
// CHECK-NEXT: bufferization.to_tensor %{{.+}} restrict
// CHECK-NEXT: %[[O:.+]] = attn.sdpa
// CHECK-NEXT: bufferization.materialize_in_destination %[[O]] in restrict writable
// CHECK-NEXT: return
func.func @kernel(%q: memref<1x2x8x16xf32>, %o: memref<1x2x8x16xf32>) {
  %qt = bufferization.to_tensor %q restrict : memref<1x2x8x16xf32> to tensor<1x2x8x16xf32>
  %r = attn.sdpa %qt, %qt, %qt : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  bufferization.materialize_in_destination %r in restrict writable %o : (tensor<1x2x8x16xf32>, memref<1x2x8x16xf32>) -> ()
  return
}
