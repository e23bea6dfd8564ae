// RUN: attn-opt %s --split-input-file --verify-diagnostics --attn-spirv-dynamic-shapes | FileCheck %s
// RUN: attn-opt %s --split-input-file --verify-diagnostics --attn-spirv-dynamic-shapes=max-extent=4096 | FileCheck %s --check-prefix=CLAMP

// attn-spirv-dynamic-shapes requires outlined kernels whose dynamically
// sized memref arguments are dense, with an identity layout, and used only by
// memref.load, memref.store and memref.dim of a constant dimension (others
// are refused); it guarantees that each such argument is a 1-D buffer indexed
// row-major, its sizes read from an appended i32 buffer that every launch
// fills from memref.dim in the host (clamped to max-extent, which the module
// then records, when that is > 0), and that static kernels are untouched.

// A kernel with dynamically sized arguments: each becomes a 1-D buffer
// indexed row-major over its sizes, which come from an appended i32 buffer
// (one slot per dynamic size, in argument order); memref.dim reads them.
// The launch collapses its operands and fills a fresh size buffer from
// memref.dim in the host.
// CHECK-LABEL: gpu.func @kernel
// CHECK-SAME: (%[[A:.*]]: memref<?xf16>, %[[S:.*]]: memref<4xf32>, %[[B:.*]]: memref<?xf32>, %[[SIZES:.*]]: memref<3xi32>)
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[R0:.*]] = memref.load %[[SIZES]][%[[C0]]] : memref<3xi32>
// CHECK: %[[N0:.*]] = arith.index_castui %[[R0]] : i32 to index
// CHECK: %[[C1:.*]] = arith.constant 1 : index
// CHECK: %[[R1:.*]] = memref.load %[[SIZES]][%[[C1]]] : memref<3xi32>
// CHECK: %[[N1:.*]] = arith.index_castui %[[R1]] : i32 to index
// CHECK: %[[C2:.*]] = arith.constant 2 : index
// CHECK: %[[R2:.*]] = memref.load %[[SIZES]][%[[C2]]] : memref<3xi32>
// CHECK: %[[N2:.*]] = arith.index_castui %[[R2]] : i32 to index
// CHECK: %[[C8:.*]] = arith.constant 8 : index
// a[i, j, k] of memref<?x?x8xf16> -> a[(i * n1 + j) * 8 + k]
// CHECK: %[[T0:.*]] = arith.muli %[[I:.*]], %[[N1]] : index
// CHECK: %[[T1:.*]] = arith.addi %[[T0]], %[[J:.*]] : index
// CHECK: %[[T2:.*]] = arith.muli %[[T1]], %[[C8]] : index
// CHECK: %[[T3:.*]] = arith.addi %[[T2]], %[[K:.*]] : index
// CHECK: memref.load %[[A]][%[[T3]]] : memref<?xf16>
// Static arguments are untouched.
// CHECK: memref.load %[[S]][%[[K]]] : memref<4xf32>
// b[i] of memref<?xf32> stays b[i]; memref.dim of b is its slot.
// CHECK: memref.store %{{.*}}, %[[B]][%[[I]]] : memref<?xf32>
// CHECK: arith.addi %[[N0]], %[[N2]] : index
// CHECK-NOT: memref.dim

// CHECK-LABEL: func.func @host
// CHECK-SAME: (%[[HA:.*]]: memref<?x?x8xf16>, %[[HS:.*]]: memref<4xf32>, %[[HB:.*]]: memref<?xf32>)
// CHECK: %[[BUF:.*]] = memref.alloc() : memref<3xi32>
// CHECK: %[[D0:.*]] = memref.dim %[[HA]], %{{.*}} : memref<?x?x8xf16>
// CHECK: %[[V0:.*]] = arith.index_castui %[[D0]] : index to i32
// CHECK: memref.store %[[V0]], %[[BUF]][%{{.*}}] : memref<3xi32>
// CHECK: %[[D1:.*]] = memref.dim %[[HA]], %{{.*}} : memref<?x?x8xf16>
// CHECK: memref.store %{{.*}}, %[[BUF]]
// CHECK: %[[D2:.*]] = memref.dim %[[HB]], %{{.*}} : memref<?xf32>
// CHECK: memref.store %{{.*}}, %[[BUF]]
// CHECK: %[[FLAT:.*]] = memref.collapse_shape %[[HA]] {{\[\[}}0, 1, 2]] : memref<?x?x8xf16> into memref<?xf16>
// CHECK: gpu.launch_func @m::@kernel {{.*}} args(%[[FLAT]] : memref<?xf16>, %[[HS]] : memref<4xf32>, %[[HB]] : memref<?xf32>, %[[BUF]] : memref<3xi32>)
// CHECK: memref.dealloc %[[BUF]] : memref<3xi32>

// With max-extent, each size is clamped (the loop budget's bound); the
// module records the extent for the launch metadata.
// CLAMP-LABEL: module attributes {attn.spirv_max_dynamic_extent = 4096 : i64
// CLAMP: gpu.func @kernel
// CLAMP: %[[MAX:.*]] = arith.constant 4096 : index
// CLAMP: %[[R0:.*]] = memref.load %{{.*}} : memref<3xi32>
// CLAMP: %[[N0:.*]] = arith.index_castui %[[R0]] : i32 to index
// CLAMP: arith.minui %[[N0]], %[[MAX]] : index
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @kernel(%a: memref<?x?x8xf16>, %s: memref<4xf32>, %b: memref<?xf32>) kernel attributes {known_block_size = array<i32: 1, 1, 1>} {
      %i = gpu.block_id x
      %j = gpu.block_id y
      %k = gpu.thread_id x
      %x = memref.load %a[%i, %j, %k] : memref<?x?x8xf16>
      %y = memref.load %s[%k] : memref<4xf32>
      %e = arith.extf %x : f16 to f32
      %z = arith.addf %e, %y : f32
      memref.store %z, %b[%i] : memref<?xf32>
      %c0 = arith.constant 0 : index
      %n = memref.dim %a, %c0 : memref<?x?x8xf16>
      %m = memref.dim %b, %c0 : memref<?xf32>
      %sum = arith.addi %n, %m : index
      %f = arith.index_cast %sum : index to i32
      %g = arith.sitofp %f : i32 to f32
      memref.store %g, %b[%j] : memref<?xf32>
      gpu.return
    }
  }
  func.func @host(%a: memref<?x?x8xf16>, %s: memref<4xf32>, %b: memref<?xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @m::@kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<?x?x8xf16>, %s : memref<4xf32>, %b : memref<?xf32>)
    return
  }
}

// -----

// A kernel with static shapes is left as it is.
// CHECK-LABEL: gpu.func @static_kernel
// CHECK-SAME: (%{{.*}}: memref<2x8xf16>)
// CHECK-NOT: memref<{{[0-9]+}}xi32>
// CHECK: gpu.launch_func @m::@static_kernel {{.*}} args(%{{.*}} : memref<2x8xf16>)
// CHECK-NOT: memref.alloc
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @static_kernel(%a: memref<2x8xf16>) kernel {
      gpu.return
    }
  }
  func.func @host(%a: memref<2x8xf16>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @m::@static_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<2x8xf16>)
    return
  }
}

// -----

// Only dense buffers can be indexed from their sizes.
module attributes {gpu.container_module} {
  gpu.module @m {
    // expected-error@+1 {{argument 0 ('memref<?x8xf16, strided<[16, 1]>>') has dynamic sizes and a non-identity layout}}
    gpu.func @strided(%a: memref<?x8xf16, strided<[16, 1]>>) kernel {
      gpu.return
    }
  }
}

// -----

// Uses other than loads, stores and memref.dim with a constant dimension
// cannot be rewritten.
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @view(%a: memref<?x8xf16>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      // expected-error@+1 {{a dynamically sized argument is used by 'memref.subview'}}
      %v = memref.subview %a[%c0, 0] [%c1, 8] [1, 1] : memref<?x8xf16> to memref<?x8xf16, strided<[8, 1], offset: ?>>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @dim(%a: memref<?x8xf16>) kernel {
      %i = gpu.thread_id x
      // expected-error@+1 {{memref.dim of a dynamically sized argument needs a constant, in-range dimension}}
      %n = memref.dim %a, %i : memref<?x8xf16>
      gpu.return
    }
  }
}
