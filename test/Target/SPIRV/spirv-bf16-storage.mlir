// RUN: attn-opt %s --split-input-file --verify-diagnostics --attn-spirv-bf16-storage | FileCheck %s

// attn-spirv-bf16-storage requires bf16 buffer elements to be read and
// written only by memref.load and memref.store (another op using them is
// refused, and nothing is changed); it guarantees that no bf16 memref is left
// (each is the i16 memref with the same bits), that loads of them bitcast
// i16 -> bf16 and stores bf16 -> i16, and that other buffers are untouched.

// Arguments, a workgroup allocation, a subview and the launch's uses are
// retyped; loads bitcast i16 -> bf16, stores bf16 -> i16; f32 untouched.
// CHECK-LABEL: func.func @kernel
// CHECK-SAME: (%[[IN:.*]]: memref<4x8xi16>, %[[OUT:.*]]: memref<4x8xi16>, %[[F:.*]]: memref<4xf32>)
// CHECK: gpu.launch
// CHECK: %[[TILE:.*]] = memref.alloc() : memref<8xi16, 3>
// CHECK: %[[ROW:.*]] = memref.subview %[[IN]][%{{.*}}, 0] [1, 8] [1, 1] : memref<4x8xi16> to memref<8xi16, strided<[1], offset: ?>>
// CHECK: %[[BITS:.*]] = memref.load %[[ROW]][%{{.*}}] : memref<8xi16, strided<[1], offset: ?>>
// CHECK: %[[X:.*]] = arith.bitcast %[[BITS]] : i16 to bf16
// CHECK: %[[XB:.*]] = arith.bitcast %[[X]] : bf16 to i16
// CHECK: memref.store %[[XB]], %[[TILE]][%{{.*}}] : memref<8xi16, 3>
// CHECK: %[[T:.*]] = memref.load %[[TILE]][%{{.*}}] : memref<8xi16, 3>
// CHECK: %[[TB:.*]] = arith.bitcast %[[T]] : i16 to bf16
// CHECK: %[[E:.*]] = arith.extf %[[TB]] : bf16 to f32
// CHECK: memref.store %[[E]], %[[F]][%{{.*}}] : memref<4xf32>
// CHECK: %[[R:.*]] = arith.truncf %[[E]] : f32 to bf16
// CHECK: %[[RB:.*]] = arith.bitcast %[[R]] : bf16 to i16
// CHECK: memref.store %[[RB]], %[[OUT]][%{{.*}}, %{{.*}}] : memref<4x8xi16>
// CHECK: memref.dealloc %[[TILE]] : memref<8xi16, 3>
func.func @kernel(%in: memref<4x8xbf16>, %out: memref<4x8xbf16>, %f: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c4, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %tile = memref.alloc() : memref<8xbf16, 3>
    %row = memref.subview %in[%bx, 0] [1, 8] [1, 1] : memref<4x8xbf16> to memref<8xbf16, strided<[1], offset: ?>>
    %x = memref.load %row[%tx] : memref<8xbf16, strided<[1], offset: ?>>
    memref.store %x, %tile[%tx] : memref<8xbf16, 3>
    %t = memref.load %tile[%tx] : memref<8xbf16, 3>
    %e = arith.extf %t : bf16 to f32
    memref.store %e, %f[%bx] : memref<4xf32>
    %r = arith.truncf %e : f32 to bf16
    memref.store %r, %out[%bx, %tx] : memref<4x8xbf16>
    memref.dealloc %tile : memref<8xbf16, 3>
    gpu.terminator
  }
  return
}

// -----

// Without bf16 buffers nothing changes.
// CHECK-LABEL: func.func @untouched
// CHECK-SAME: (%{{.*}}: memref<4xf16>)
// CHECK-NOT: arith.bitcast
func.func @untouched(%a: memref<4xf16>) {
  %c0 = arith.constant 0 : index
  %x = memref.load %a[%c0] : memref<4xf16>
  memref.store %x, %a[%c0] : memref<4xf16>
  return
}

// -----

// A vector load would read bf16 elements the rewrite cannot see: refused,
// and nothing is retyped.
func.func @vector(%a: memref<8xbf16>) -> vector<4xbf16> {
  %c0 = arith.constant 0 : index
  // expected-error@+1 {{'vector.load' uses a bf16 buffer's elements; only memref.load and memref.store can be rewritten}}
  %v = vector.load %a[%c0] : memref<8xbf16>, vector<4xbf16>
  return %v : vector<4xbf16>
}
