// RUN: attn-opt %s --pass-pipeline='builtin.module(gpu.module(attn-spirv-zero-trip-loops))' | FileCheck %s

// convert-scf-to-spirv gives a loop's results through variables only its
// body writes: a loop that may run no iteration is guarded, so that its
// results are its initial values then (the diagonal key blocks of a
// causal tile whose first row sees every key, an empty split-KV chunk).
module attributes {gpu.container_module} {
  gpu.module @kernels {
    // CHECK-LABEL: gpu.func @k
    gpu.func @k(%lo: index, %hi: index, %out: memref<3xf32>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %init = arith.constant 1.0 : f32
      // A trip count that may be zero: runs = lo < hi; then the loop, else
      // its initial values.
      // CHECK: %[[RUNS:.+]] = arith.cmpi slt, %[[LO:.+]], %[[HI:.+]] : index
      // CHECK: %[[R:.+]] = scf.if %[[RUNS]] -> (f32) {
      // CHECK:   %[[L:.+]] = scf.for %{{.+}} = %[[LO]] to %[[HI]] step %{{.+}} iter_args(%{{.+}} = %[[INIT:.+]]) -> (f32) {
      // CHECK:   scf.yield %[[L]] : f32
      // CHECK: } else {
      // CHECK:   scf.yield %[[INIT]] : f32
      // CHECK: }
      // CHECK: memref.store %[[R]], %{{.+}}[%{{.+}}]
      %r = scf.for %i = %lo to %hi step %c1 iter_args(%a = %init) -> (f32) {
        %n = arith.addf %a, %a : f32
        scf.yield %n : f32
      }
      memref.store %r, %out[%c0] : memref<3xf32>
      // Constant bounds with lo < hi: at least one iteration, left alone.
      // CHECK: %[[C:.+]] = scf.for %{{.+}} = %c0 to %c4 step %c1 iter_args
      // CHECK-NOT: scf.if
      // CHECK: memref.store %[[C]]
      %c = scf.for %i = %c0 to %c4 step %c1 iter_args(%a = %init) -> (f32) {
        %n = arith.addf %a, %a : f32
        scf.yield %n : f32
      }
      memref.store %c, %out[%c1] : memref<3xf32>
      // No results: left alone.
      // CHECK: scf.for %{{.+}} = %[[LO]] to %[[HI]] step %c1 {
      // CHECK-NOT: scf.if
      // CHECK: gpu.return
      scf.for %i = %lo to %hi step %c1 {
        memref.store %init, %out[%i] : memref<3xf32>
      }
      gpu.return
    }
  }
}
