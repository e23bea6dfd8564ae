// RUN: attn-opt %s --pass-pipeline='builtin.module(func.func(attn-spirv-sink-launch-index))' | FileCheck %s

// A split-KV chunk count that grows with the key length (max(1,
// ceildiv(Skv, 65536)), Skv the length of %k) read by a merge-like launch
// that does not otherwise read %k: the count, its ceildiv and max, and the
// memref.dim of %k are recomputed inside (upstream's sinking kept them
// outside, and outlined they were a scalar kernel argument, which SPIR-V
// kernels of this project cannot take).
// CHECK-LABEL: func.func @count
// CHECK: gpu.launch
// CHECK-DAG: %[[D:.+]] = memref.dim %[[K:.+]], %{{.+}} : memref<?xf16>
// CHECK-DAG: %[[C:.+]] = arith.ceildivui %[[D]], %{{.+}} : index
// CHECK-DAG: %[[N:.+]] = arith.maxui %[[C]], %{{.+}} : index
// CHECK: scf.for %{{.+}} = %{{.+}} to %[[N]] step
// CHECK: gpu.terminator
func.func @count(%k: memref<?xf16>, %ws: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c65536 = arith.constant 65536 : index
  %d = memref.dim %k, %c0 : memref<?xf16>
  %chunks = arith.ceildivui %d, %c65536 : index
  %n = arith.maxui %chunks, %c1 : index
  %f = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    scf.for %i = %c0 to %n step %c1 {
      memref.store %f, %ws[%i] : memref<?xf32>
    }
    gpu.terminator
  }
  return
}

// A float value from above is not an index computation: left as an
// operand. A launch using nothing from above is unchanged.
// CHECK-LABEL: func.func @float_left
// CHECK: %[[X:.+]] = arith.addf
// CHECK: gpu.launch
// CHECK: memref.store %[[X]]
func.func @float_left(%ws: memref<?xf32>, %a: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %x = arith.addf %a, %a : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    memref.store %x, %ws[%c0] : memref<?xf32>
    gpu.terminator
  }
  return
}
