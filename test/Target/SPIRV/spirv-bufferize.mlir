// RUN: attn-opt %s --split-input-file --verify-diagnostics --attn-spirv-bufferize | FileCheck %s

// attn-spirv-bufferize requires functions on tensors whose temporaries have
// static shapes and need no copy of an argument buffer (both refused); it
// guarantees memrefs only, temporaries as Function-storage allocations
// before the sequential loops of their tile, loop-carried buffers updated in
// place, and a parallel loop in every function (a lone tile is wrapped in a
// one-iteration scf.parallel).

// A loop-carried tensor that each iteration recomputes out of place ends
// the iteration in its own buffer again (acc' = acc * acc, copied back), and
// the temporary is a Function-storage buffer allocated once, before the loop.
// The only tile is wrapped in a one-iteration scf.parallel.
// CHECK-LABEL: func.func @carried
// CHECK-SAME: (%[[OUT:.+]]: memref<4xf32>)
// CHECK: scf.parallel
// CHECK: %[[INIT:.+]] = memref.alloc() {{.*}} : memref<4xf32, #spirv.storage_class<Function>>
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[INIT]]
// CHECK: %[[TMP:.+]] = memref.alloc() {{.*}} : memref<4xf32, #spirv.storage_class<Function>>
// CHECK: %[[R:.+]] = scf.for {{.*}} iter_args(%[[ACC:.+]] = %[[INIT]])
// CHECK: linalg.generic {{.*}} ins(%[[ACC]] : {{.*}}) outs(%[[TMP]] : {{.*}})
// CHECK: arith.mulf
// CHECK: linalg.copy ins(%[[TMP]] : {{.*}}) outs(%[[ACC]] : {{.*}})
// CHECK-NEXT: scf.yield %[[ACC]]
// CHECK: linalg.copy ins(%[[R]] : {{.*}}) outs(%[[OUT]] : memref<4xf32>)
func.func @carried(%out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %one = arith.constant 1.5 : f32
  %e0 = tensor.empty() : tensor<4xf32>
  %init = linalg.fill ins(%one : f32) outs(%e0 : tensor<4xf32>) -> tensor<4xf32>
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%acc = %init) -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
    %n = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%acc : tensor<4xf32>) outs(%e : tensor<4xf32>) {
    ^bb0(%a: f32, %b: f32):
      %m = arith.mulf %a, %a : f32
      linalg.yield %m : f32
    } -> tensor<4xf32>
    scf.yield %n : tensor<4xf32>
  }
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<4xf32>, memref<4xf32>) -> ()
  return
}

// -----

// Iterating on a read-only argument would need a device-memory copy of it.
func.func @copies_an_argument(%src: memref<4xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %s = bufferization.to_tensor %src restrict : memref<4xf32> to tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  // expected-error@+1 {{a copy of an argument buffer would be allocated in device memory}}
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%acc = %s) -> tensor<4xf32> {
    %n = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%acc : tensor<4xf32>) outs(%e : tensor<4xf32>) {
    ^bb0(%a: f32, %b: f32):
      %m = arith.mulf %a, %a : f32
      linalg.yield %m : f32
    } -> tensor<4xf32>
    scf.yield %n : tensor<4xf32>
  }
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<4xf32>, memref<4xf32>) -> ()
  return
}

// -----

// Arguments a SPIR-V kernel cannot take are refused up front
// (checkSPIRVBufferArguments, shared with convert-attn-tiles-to-simt): a
// strided memref (the SPIR-V conversion failed on it: "failed to legalize
// operation 'gpu.func'") ...
// expected-error @+1 {{attn-spirv-bufferize: argument 0 ('memref<4x8xf32, strided<[?, 1], offset: ?>>') has a strided layout; SPIR-V kernels take dense (identity-layout) buffers}}
func.func @strided(%a: memref<4x8xf32, strided<[?, 1], offset: ?>>) {
  return
}

// -----

// ... and a static extent beyond 32-bit indices.
// expected-error @+1 {{attn-spirv-bufferize: argument 0 ('tensor<2147483648x2xf32>') has more than 2^31 - 1 elements; SPIR-V kernels index buffers with 32 bits}}
func.func @huge(%a: tensor<2147483648x2xf32>) -> tensor<2147483648x2xf32> {
  return %a : tensor<2147483648x2xf32>
}
