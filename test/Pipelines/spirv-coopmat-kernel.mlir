// RUN: attn-opt %s --split-input-file --verify-diagnostics --attn-spirv-coopmat-kernel="block-q=32 block-kv=32 subgroup-size=32" | FileCheck %s
// RUN: attn-opt %s --split-input-file --verify-diagnostics --attn-spirv-coopmat-kernel="block-q=32 block-kv=32 subgroup-size=32 scalar-matrices" | FileCheck %s --check-prefix=SCALAR

// scalar-matrices: the same kernel, the products as scalar loops over each
// 16x16 tile's 256 elements split among the invocations, f16 widened.
// SCALAR-LABEL: func.func @attn_kernel
// SCALAR-NOT: gpu.subgroup_mma
// SCALAR: scf.for %{{.*}} = %{{.*}} to %c256 step %c32
// SCALAR: memref.load %arg0
// SCALAR: memref.load %arg1
// SCALAR: arith.extf
// SCALAR: memref.store {{.*}} : memref<32x36xf32, #spirv.storage_class<Workgroup>>
// SCALAR: math.exp2
// SCALAR: scf.for %{{.*}} = %{{.*}} to %c256 step %c32
// SCALAR: memref.load {{.*}} : memref<32x40xf16, #spirv.storage_class<Workgroup>>
// SCALAR: memref.load %arg2
// SCALAR-NOT: gpu.subgroup_mma
// SCALAR-LABEL: func.func @bool_mask

// The kernel source's attn.sdpa becomes one gpu.launch: grid (B*Hq,
// Sq/Br), one subgroup per workgroup; workgroup memory for S (f32), P (f16)
// and O (f32) with padded rows, m and l; Q.K^T with K loaded transposed
// (column-major) from the storage buffer, 16x16x16 f16 tiles into f32;
// the softmax row by row (causal: -inf above the diagonal, the key loop
// stopping after the last visible block); P.V accumulated into O in
// workgroup memory; out = O / l (0 for an empty row), lse = m ln2 + ln l.
// CHECK-LABEL: func.func @attn_kernel
// CHECK-DAG: %[[GX:.*]] = arith.constant 6 : index
// CHECK-DAG: %[[GY:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[SG:.*]] = arith.constant 32 : index
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[GX]], {{.*}} = %[[GY]], {{.*}}) threads({{.*}}) in ({{.*}} = %[[SG]],
// CHECK-DAG: memref.alloc() : memref<32x36xf32, #spirv.storage_class<Workgroup>>
// CHECK-DAG: memref.alloc() : memref<32x40xf16, #spirv.storage_class<Workgroup>>
// CHECK-DAG: memref.alloc() : memref<32x36xf32, #spirv.storage_class<Workgroup>>
// CHECK-DAG: memref.alloc() : memref<32xf32, #spirv.storage_class<Workgroup>>
// CHECK: gpu.barrier
// CHECK: arith.minui
// CHECK: scf.for
// CHECK: gpu.subgroup_mma_constant_matrix {{.*}} : !gpu.mma_matrix<16x16xf32, "COp">
// CHECK: gpu.subgroup_mma_load_matrix %arg0{{.*}} {leadDimension = 64 : index} : memref<2x3x64x64xf16> -> !gpu.mma_matrix<16x16xf16, "AOp">
// CHECK: gpu.subgroup_mma_load_matrix %arg1{{.*}} {leadDimension = 64 : index, transpose} : memref<2x1x96x64xf16> -> !gpu.mma_matrix<16x16xf16, "BOp">
// CHECK: gpu.subgroup_mma_compute
// CHECK: gpu.subgroup_mma_store_matrix {{.*}} {leadDimension = 36 : index}
// CHECK: gpu.barrier
// CHECK: arith.cmpi sgt
// CHECK: math.exp2
// CHECK: arith.truncf {{.*}} : f32 to f16
// CHECK: gpu.barrier
// CHECK: gpu.subgroup_mma_load_matrix {{.*}} {leadDimension = 36 : index} : memref<32x36xf32, #spirv.storage_class<Workgroup>> -> !gpu.mma_matrix<16x16xf32, "COp">
// CHECK: gpu.subgroup_mma_load_matrix {{.*}} {leadDimension = 40 : index} : memref<32x40xf16, #spirv.storage_class<Workgroup>> -> !gpu.mma_matrix<16x16xf16, "AOp">
// CHECK: gpu.subgroup_mma_load_matrix %arg2{{.*}} {leadDimension = 32 : index} : memref<2x1x96x32xf16> -> !gpu.mma_matrix<16x16xf16, "BOp">
// CHECK: gpu.subgroup_mma_compute
// CHECK: gpu.subgroup_mma_store_matrix
// CHECK: arith.divf
// CHECK: memref.store {{.*}}, %arg3
// CHECK: math.log
// CHECK: memref.store {{.*}}, %arg4
// CHECK-NOT: attn.sdpa
func.func @attn_kernel(%q: memref<2x3x64x64xf16>, %k: memref<2x1x96x64xf16>, %v: memref<2x1x96x32xf16>, %out: memref<2x3x64x32xf16>, %lse: memref<2x3x64xf32>) {
  %q_t = bufferization.to_tensor %q restrict : memref<2x3x64x64xf16> to tensor<2x3x64x64xf16>
  %k_t = bufferization.to_tensor %k restrict : memref<2x1x96x64xf16> to tensor<2x1x96x64xf16>
  %v_t = bufferization.to_tensor %v restrict : memref<2x1x96x32xf16> to tensor<2x1x96x32xf16>
  %o, %l = attn.sdpa %q_t, %k_t, %v_t causal : tensor<2x3x64x64xf16>, tensor<2x1x96x64xf16>, tensor<2x1x96x32xf16> -> tensor<2x3x64x32xf16>, tensor<2x3x64xf32>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<2x3x64x32xf16>, memref<2x3x64x32xf16>) -> ()
  bufferization.materialize_in_destination %l in restrict writable %lse : (tensor<2x3x64xf32>, memref<2x3x64xf32>) -> ()
  return
}

// -----

// Masks: a bool mask selects -inf where it is 0, an additive one is added
// in log2 units (f16 widened).
// CHECK-LABEL: func.func @bool_mask
// CHECK: memref.load %arg3{{.*}} : memref<1x1x32x32xi1>
// CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
func.func @bool_mask(%q: memref<1x1x32x16xf16>, %k: memref<1x1x32x16xf16>, %v: memref<1x1x32x16xf16>, %mask: memref<1x1x32x32xi1>, %out: memref<1x1x32x16xf16>) {
  %q_t = bufferization.to_tensor %q restrict : memref<1x1x32x16xf16> to tensor<1x1x32x16xf16>
  %k_t = bufferization.to_tensor %k restrict : memref<1x1x32x16xf16> to tensor<1x1x32x16xf16>
  %v_t = bufferization.to_tensor %v restrict : memref<1x1x32x16xf16> to tensor<1x1x32x16xf16>
  %m_t = bufferization.to_tensor %mask restrict : memref<1x1x32x32xi1> to tensor<1x1x32x32xi1>
  %o = attn.sdpa %q_t, %k_t, %v_t mask(%m_t : tensor<1x1x32x32xi1>) : tensor<1x1x32x16xf16>, tensor<1x1x32x16xf16>, tensor<1x1x32x16xf16> -> tensor<1x1x32x16xf16>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x1x32x16xf16>, memref<1x1x32x16xf16>) -> ()
  return
}

// -----

// CHECK-LABEL: func.func @additive_mask
// CHECK: memref.load %arg3{{.*}} : memref<1x1x32x32xf16>
// CHECK: arith.extf {{.*}} : f16 to f32
// CHECK: arith.addf
func.func @additive_mask(%q: memref<1x1x32x16xf16>, %k: memref<1x1x32x16xf16>, %v: memref<1x1x32x16xf16>, %mask: memref<1x1x32x32xf16>, %out: memref<1x1x32x16xf16>) {
  %q_t = bufferization.to_tensor %q restrict : memref<1x1x32x16xf16> to tensor<1x1x32x16xf16>
  %k_t = bufferization.to_tensor %k restrict : memref<1x1x32x16xf16> to tensor<1x1x32x16xf16>
  %v_t = bufferization.to_tensor %v restrict : memref<1x1x32x16xf16> to tensor<1x1x32x16xf16>
  %m_t = bufferization.to_tensor %mask restrict : memref<1x1x32x32xf16> to tensor<1x1x32x32xf16>
  %o = attn.sdpa %q_t, %k_t, %v_t mask(%m_t : tensor<1x1x32x32xf16>) : tensor<1x1x32x16xf16>, tensor<1x1x32x16xf16>, tensor<1x1x32x16xf16> -> tensor<1x1x32x16xf16>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x1x32x16xf16>, memref<1x1x32x16xf16>) -> ()
  return
}

// -----

func.func @f32(%q: memref<1x1x32x16xf32>, %k: memref<1x1x32x16xf32>, %v: memref<1x1x32x16xf32>, %out: memref<1x1x32x16xf32>) {
  %q_t = bufferization.to_tensor %q restrict : memref<1x1x32x16xf32> to tensor<1x1x32x16xf32>
  %k_t = bufferization.to_tensor %k restrict : memref<1x1x32x16xf32> to tensor<1x1x32x16xf32>
  %v_t = bufferization.to_tensor %v restrict : memref<1x1x32x16xf32> to tensor<1x1x32x16xf32>
  // expected-error@+1 {{the coopmat kernel is f16 x f16 + f32 only (got f32)}}
  %o = attn.sdpa %q_t, %k_t, %v_t : tensor<1x1x32x16xf32>, tensor<1x1x32x16xf32>, tensor<1x1x32x16xf32> -> tensor<1x1x32x16xf32>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x1x32x16xf32>, memref<1x1x32x16xf32>) -> ()
  return
}

// -----

func.func @head_dim(%q: memref<1x1x32x8xf16>, %k: memref<1x1x32x8xf16>, %v: memref<1x1x32x8xf16>, %out: memref<1x1x32x8xf16>) {
  %q_t = bufferization.to_tensor %q restrict : memref<1x1x32x8xf16> to tensor<1x1x32x8xf16>
  %k_t = bufferization.to_tensor %k restrict : memref<1x1x32x8xf16> to tensor<1x1x32x8xf16>
  %v_t = bufferization.to_tensor %v restrict : memref<1x1x32x8xf16> to tensor<1x1x32x8xf16>
  // expected-error@+1 {{needs D and Dv multiples of 16 (got 8 and 8)}}
  %o = attn.sdpa %q_t, %k_t, %v_t : tensor<1x1x32x8xf16>, tensor<1x1x32x8xf16>, tensor<1x1x32x8xf16> -> tensor<1x1x32x8xf16>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x1x32x8xf16>, memref<1x1x32x8xf16>) -> ()
  return
}

// -----

func.func @blocks(%q: memref<1x1x48x16xf16>, %k: memref<1x1x32x16xf16>, %v: memref<1x1x32x16xf16>, %out: memref<1x1x48x16xf16>) {
  %q_t = bufferization.to_tensor %q restrict : memref<1x1x48x16xf16> to tensor<1x1x48x16xf16>
  %k_t = bufferization.to_tensor %k restrict : memref<1x1x32x16xf16> to tensor<1x1x32x16xf16>
  %v_t = bufferization.to_tensor %v restrict : memref<1x1x32x16xf16> to tensor<1x1x32x16xf16>
  // expected-error@+1 {{block-q and block-kv must be multiples of 16 dividing Sq and Skv (block-q 32, Sq 48, block-kv 32, Skv 32)}}
  %o = attn.sdpa %q_t, %k_t, %v_t : tensor<1x1x48x16xf16>, tensor<1x1x32x16xf16>, tensor<1x1x32x16xf16> -> tensor<1x1x48x16xf16>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x1x48x16xf16>, memref<1x1x48x16xf16>) -> ()
  return
}

// -----

func.func @not_kernel_source(%q: tensor<1x1x32x16xf16>, %k: tensor<1x1x32x16xf16>, %v: tensor<1x1x32x16xf16>) -> tensor<1x1x32x16xf16> {
  // expected-error@+1 {{operands must be bufferization.to_tensor of function arguments}}
  %o = attn.sdpa %q, %k, %v : tensor<1x1x32x16xf16>, tensor<1x1x32x16xf16>, tensor<1x1x32x16xf16> -> tensor<1x1x32x16xf16>
  return %o : tensor<1x1x32x16xf16>
}

// -----

func.func @strided(%q: memref<1x1x32x16xf16, strided<[?, ?, ?, 1], offset: ?>>, %k: memref<1x1x32x16xf16>, %v: memref<1x1x32x16xf16>, %out: memref<1x1x32x16xf16>) {
  %q_t = bufferization.to_tensor %q restrict : memref<1x1x32x16xf16, strided<[?, ?, ?, 1], offset: ?>> to tensor<1x1x32x16xf16>
  %k_t = bufferization.to_tensor %k restrict : memref<1x1x32x16xf16> to tensor<1x1x32x16xf16>
  %v_t = bufferization.to_tensor %v restrict : memref<1x1x32x16xf16> to tensor<1x1x32x16xf16>
  // expected-error@+1 {{needs dense (identity-layout) buffers}}
  %o = attn.sdpa %q_t, %k_t, %v_t : tensor<1x1x32x16xf16>, tensor<1x1x32x16xf16>, tensor<1x1x32x16xf16> -> tensor<1x1x32x16xf16>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x1x32x16xf16>, memref<1x1x32x16xf16>) -> ()
  return
}

// -----

func.func @two(%q: tensor<1x1x32x16xf16>, %k: tensor<1x1x32x16xf16>, %v: tensor<1x1x32x16xf16>) -> (tensor<1x1x32x16xf16>, tensor<1x1x32x16xf16>) {
  // expected-error@+1 {{one attn.sdpa per function (the kernel source form), found 2}}
  %a = attn.sdpa %q, %k, %v : tensor<1x1x32x16xf16>, tensor<1x1x32x16xf16>, tensor<1x1x32x16xf16> -> tensor<1x1x32x16xf16>
  %b = attn.sdpa %q, %k, %v : tensor<1x1x32x16xf16>, tensor<1x1x32x16xf16>, tensor<1x1x32x16xf16> -> tensor<1x1x32x16xf16>
  return %a, %b : tensor<1x1x32x16xf16>, tensor<1x1x32x16xf16>
}
