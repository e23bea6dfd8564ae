// RUN: attn-opt %s --split-input-file --verify-diagnostics --attn-spirv-coopmat-kernel="block-q=32 block-kv=32 subgroup-size=32" | FileCheck %s
// RUN: attn-opt %s --split-input-file --verify-diagnostics --attn-spirv-coopmat-kernel="block-q=32 block-kv=32 subgroup-size=32 scalar-matrices" | FileCheck %s --check-prefix=SCALAR
// RUN: attn-opt %s --split-input-file --verify-diagnostics --attn-spirv-coopmat-kernel="block-q=32 block-kv=32 subgroup-size=32 kv-splits=2" | FileCheck %s --check-prefix=SPLIT
// RUN: not attn-opt %s --split-input-file --attn-spirv-coopmat-kernel="block-q=32 block-kv=32 kv-splits=0" 2>&1 | FileCheck %s --check-prefix=SPLIT0
// RUN: not attn-opt %s --split-input-file --attn-spirv-coopmat-kernel="block-q=24 block-kv=32" 2>&1 | FileCheck %s --check-prefix=BLOCKS
// BLOCKS: error: attn-spirv-coopmat-kernel: block-q and block-kv must be positive multiples of 16 (block-q 24, block-kv 32)
// An f16 additive mask on bf16 data is refused on cooperative matrices (the
// scalar form reads each buffer in its own type and takes it).
// RUN: not attn-opt %S/Inputs/coopmat-mixed-mask.mlir --attn-spirv-coopmat-kernel="block-q=32 block-kv=32" 2>&1 | FileCheck %s --check-prefix=MIXED
// RUN: attn-opt %S/Inputs/coopmat-mixed-mask.mlir --attn-spirv-coopmat-kernel="block-q=32 block-kv=32 scalar-matrices" | FileCheck %s --check-prefix=MIXEDSCALAR
// MIXED: error: attn-spirv-coopmat-kernel: a 16-bit additive mask must have the data's type on cooperative matrices (got f16 with bf16)
// MIXEDSCALAR: memref.load %arg3{{.*}} : memref<1x1x32x32xf16>
// MIXEDSCALAR: arith.extf {{.*}} : f16 to f32
// SPLIT0: error: attn-spirv-coopmat-kernel: kv-splits must be >= 1 (got 0)

// kv-splits=2: the workspaces (B x Hq x 2 x Sq [x Dv], f32) before the
// partial launch, whose grid z enumerates the chunks; chunk z walks key
// blocks [min(z * c, n), min(begin + c, n)) with c = ceil(n / 2) of the n
// (causal-bounded) blocks, and writes O / l and m + log2 l into the
// workspaces instead of out and lse; the merge launch (same kernel module)
// writes out and lse; then the workspaces are freed.
// SPLIT-LABEL: func.func @attn_kernel
// SPLIT: %[[WO:.*]] = memref.alloc() : memref<2x3x2x64x32xf32>
// SPLIT: %[[WL:.*]] = memref.alloc() : memref<2x3x2x64xf32>
// SPLIT: gpu.launch blocks(%{{.*}}, %{{.*}}, %[[Z:.*]]) in ({{.*}}) threads({{.*}}) in ({{.*}}) module(@attn_kernel_split_kv) function(@attn_kernel_split_kv)
// SPLIT: %[[NKB:.*]] = arith.minui %{{.*}}, %c3{{(_[0-9]+)?}} : index
// SPLIT: %[[C:.*]] = arith.divui %{{.*}}, %c2{{.*}} : index
// SPLIT: %[[B0:.*]] = arith.muli %[[Z]], %[[C]] : index
// SPLIT: %[[BEGIN:.*]] = arith.minui %[[B0]], %[[NKB]] : index
// SPLIT: %[[E0:.*]] = arith.addi %[[BEGIN]], %[[C]] : index
// SPLIT: %[[END:.*]] = arith.minui %[[E0]], %[[NKB]] : index
// SPLIT: scf.for %{{.*}} = %[[BEGIN]] to %[[END]]
// SPLIT: arith.divf
// SPLIT: memref.store {{.*}}, %[[WO]][%{{.*}}, %{{.*}}, %[[Z]], %{{.*}}, %{{.*}}] : memref<2x3x2x64x32xf32>
// SPLIT: math.log2
// SPLIT: memref.store {{.*}}, %[[WL]][%{{.*}}, %{{.*}}, %[[Z]], %{{.*}}] : memref<2x3x2x64xf32>
// SPLIT-NOT: memref.store {{.*}}, %arg3
// SPLIT: gpu.launch {{.*}} module(@attn_kernel_split_kv) function(@attn_kernel_split_kv_merge)
// SPLIT: memref.store {{.*}}, %arg3
// SPLIT: memref.store {{.*}}, %arg4
// SPLIT: memref.dealloc %[[WO]]
// SPLIT: memref.dealloc %[[WL]]
// SPLIT-LABEL: func.func @bool_mask

// scalar-matrices: the same kernel, the products as scalar loops over each
// 16x16 tile's 256 elements split among the invocations, reading the same
// staged tiles, f16 widened.
// SCALAR-LABEL: func.func @attn_kernel
// SCALAR-NOT: gpu.subgroup_mma
// SCALAR: memref.load %arg0
// SCALAR: memref.load %arg1
// SCALAR: memref.load %arg2
// SCALAR: scf.for %{{.*}} = %{{.*}} to %c256 step %c32
// SCALAR: memref.load {{.*}} : memref<32x72xf16, #spirv.storage_class<Workgroup>>
// SCALAR: memref.load {{.*}} : memref<32x72xf16, #spirv.storage_class<Workgroup>>
// SCALAR: arith.extf
// SCALAR: memref.store {{.*}} : memref<32x36xf32, #spirv.storage_class<Workgroup>>
// SCALAR: math.exp2
// SCALAR: scf.for %{{.*}} = %{{.*}} to %c256 step %c32
// SCALAR: memref.load {{.*}} : memref<32x40xf16, #spirv.storage_class<Workgroup>>
// SCALAR: memref.load {{.*}} : memref<32x40xf16, #spirv.storage_class<Workgroup>>
// SCALAR-NOT: gpu.subgroup_mma
// SCALAR-LABEL: func.func @bool_mask

// The kernel source's attn.sdpa becomes one gpu.launch: grid (B*Hq,
// ceil(Sq/Br)), one subgroup per workgroup; workgroup memory for S (f32),
// P (f16) and O (f32) with padded rows, m and l, and the Q, K and V tiles
// (f16, rows +8), staged from the storage buffers with rows past Sq / Skv
// zero (the row clamped into the tensor, the value selected); Q.K^T from
// the tiles with K loaded transposed (column-major), 16x16x16 f16 tiles
// into f32;
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
// CHECK-DAG: %[[QS:.*]] = memref.alloc() : memref<32x72xf16, #spirv.storage_class<Workgroup>>
// CHECK-DAG: %[[KS:.*]] = memref.alloc() : memref<32x72xf16, #spirv.storage_class<Workgroup>>
// CHECK-DAG: %[[VS:.*]] = memref.alloc() : memref<32x40xf16, #spirv.storage_class<Workgroup>>
// CHECK: %[[QIN:.*]] = arith.cmpi ult, %{{.*}}, %c64{{.*}} : index
// CHECK: %[[QROW:.*]] = arith.minui
// CHECK: %[[QV:.*]] = memref.load %arg0[%{{.*}}, %{{.*}}, %[[QROW]], %{{.*}}] : memref<2x3x64x64xf16>
// CHECK: %[[QX:.*]] = arith.select %[[QIN]], %[[QV]], %{{.*}} : f16
// CHECK: memref.store %[[QX]], %[[QS]]
// CHECK: gpu.barrier
// CHECK: arith.minui
// CHECK: scf.for
// CHECK: %[[KIN:.*]] = arith.cmpi ult, %{{.*}}, %c96 : index
// CHECK: memref.load %arg1
// CHECK: arith.select %[[KIN]]
// CHECK: memref.store {{.*}}, %[[KS]]
// CHECK: memref.load %arg2
// CHECK: memref.store {{.*}}, %[[VS]]
// CHECK: gpu.barrier
// CHECK: gpu.subgroup_mma_constant_matrix {{.*}} : !gpu.mma_matrix<16x16xf32, "COp">
// CHECK: gpu.subgroup_mma_load_matrix %[[QS]]{{.*}} {leadDimension = 72 : index} : memref<32x72xf16, #spirv.storage_class<Workgroup>> -> !gpu.mma_matrix<16x16xf16, "AOp">
// CHECK: gpu.subgroup_mma_load_matrix %[[KS]]{{.*}} {leadDimension = 72 : index, transpose} : memref<32x72xf16, #spirv.storage_class<Workgroup>> -> !gpu.mma_matrix<16x16xf16, "BOp">
// CHECK: gpu.subgroup_mma_compute
// CHECK: gpu.subgroup_mma_store_matrix {{.*}} {leadDimension = 36 : index}
// CHECK: gpu.barrier
// CHECK: arith.cmpi sgt
// CHECK: math.exp2
// CHECK: arith.truncf {{.*}} : f32 to f16
// CHECK: gpu.barrier
// CHECK: gpu.subgroup_mma_load_matrix {{.*}} {leadDimension = 36 : index} : memref<32x36xf32, #spirv.storage_class<Workgroup>> -> !gpu.mma_matrix<16x16xf32, "COp">
// CHECK: gpu.subgroup_mma_load_matrix {{.*}} {leadDimension = 40 : index} : memref<32x40xf16, #spirv.storage_class<Workgroup>> -> !gpu.mma_matrix<16x16xf16, "AOp">
// CHECK: gpu.subgroup_mma_load_matrix %[[VS]]{{.*}} {leadDimension = 40 : index} : memref<32x40xf16, #spirv.storage_class<Workgroup>> -> !gpu.mma_matrix<16x16xf16, "BOp">
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

// Dropout: P = exp2(S - m) enters l before dropout; P . V takes
// keep ? P / (1 - p) : 0, keep the shared Philox-4x32-10 decision (ten
// rounds of two 32x32 multiplies) on the seed argument, counted by (key,
// query row, query head, batch), kept iff its word >= p * 2^32.
// CHECK-LABEL: func.func @dropout
// CHECK-SAME: %arg4: i64
// CHECK: math.exp2
// CHECK: %[[P:.*]] = math.exp2
// CHECK: arith.trunci %arg4 : i64 to i32
// CHECK-COUNT-20: arith.mului_extended
// CHECK: %[[KEEP:.*]] = arith.cmpi uge, %{{.*}}, %c1073741824_i64 : i64
// CHECK: %[[INV:.*]] = arith.constant 1.33333337 : f32
// CHECK: %[[SCALED:.*]] = arith.mulf %[[P]], %[[INV]] : f32
// CHECK: %[[PD:.*]] = arith.select %[[KEEP]], %[[SCALED]], %{{.*}} : f32
// CHECK: arith.truncf %[[PD]] : f32 to f16
// CHECK: arith.addf %{{.*}}, %[[P]] : f32
// CHECK-NOT: func.call
// CHECK-NOT: __attn_coopmat_dropout_keep
func.func @dropout(%q: memref<1x2x32x16xf16>, %k: memref<1x2x64x16xf16>, %v: memref<1x2x64x16xf16>, %out: memref<1x2x32x16xf16>, %seed: i64) {
  %q_t = bufferization.to_tensor %q restrict : memref<1x2x32x16xf16> to tensor<1x2x32x16xf16>
  %k_t = bufferization.to_tensor %k restrict : memref<1x2x64x16xf16> to tensor<1x2x64x16xf16>
  %v_t = bufferization.to_tensor %v restrict : memref<1x2x64x16xf16> to tensor<1x2x64x16xf16>
  %o = attn.sdpa %q_t, %k_t, %v_t dropout(0.25, seed %seed) : tensor<1x2x32x16xf16>, tensor<1x2x64x16xf16>, tensor<1x2x64x16xf16> -> tensor<1x2x32x16xf16>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x2x32x16xf16>, memref<1x2x32x16xf16>) -> ()
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

// bf16: gpu.mma_matrix has no bf16, so on cooperative matrices the kernel
// is written in f16 over the same bytes (the function's bf16 buffers,
// the mask's too, become f16 ones) and the module is marked for
// attn-spirv-coopmat-bf16; with scalar products it is written in bf16.
// CHECK-LABEL: module attributes {attn.coopmat_bf16}
// CHECK: func.func @bf16(%arg0: memref<1x1x32x16xf16>, %arg1: memref<1x1x32x16xf16>, %arg2: memref<1x1x32x16xf16>, %arg3: memref<1x1x32x32xf16>, %arg4: memref<1x1x32x16xf16>)
// CHECK: memref.load %arg0{{.*}} : memref<1x1x32x16xf16>
// CHECK: gpu.subgroup_mma_load_matrix {{.*}} -> !gpu.mma_matrix<16x16xf16, "AOp">
// CHECK: memref.load %arg3{{.*}} : memref<1x1x32x32xf16>
// CHECK: arith.truncf {{.*}} : f32 to f16
// SCALAR-LABEL: func.func @bf16(%arg0: memref<1x1x32x16xbf16>
// SCALAR: arith.extf {{.*}} : bf16 to f32
// SCALAR: memref.load %arg3{{.*}} : memref<1x1x32x32xbf16>
// SCALAR: arith.truncf {{.*}} : f32 to bf16
// SCALAR: memref.store {{.*}} : memref<32x40xbf16, #spirv.storage_class<Workgroup>>
func.func @bf16(%q: memref<1x1x32x16xbf16>, %k: memref<1x1x32x16xbf16>, %v: memref<1x1x32x16xbf16>, %mask: memref<1x1x32x32xbf16>, %out: memref<1x1x32x16xbf16>) {
  %q_t = bufferization.to_tensor %q restrict : memref<1x1x32x16xbf16> to tensor<1x1x32x16xbf16>
  %k_t = bufferization.to_tensor %k restrict : memref<1x1x32x16xbf16> to tensor<1x1x32x16xbf16>
  %v_t = bufferization.to_tensor %v restrict : memref<1x1x32x16xbf16> to tensor<1x1x32x16xbf16>
  %m_t = bufferization.to_tensor %mask restrict : memref<1x1x32x32xbf16> to tensor<1x1x32x32xbf16>
  %o = attn.sdpa %q_t, %k_t, %v_t mask(%m_t : tensor<1x1x32x32xbf16>) : tensor<1x1x32x16xbf16>, tensor<1x1x32x16xbf16>, tensor<1x1x32x16xbf16> -> tensor<1x1x32x16xbf16>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x1x32x16xbf16>, memref<1x1x32x16xbf16>) -> ()
  return
}

// -----

func.func @f32(%q: memref<1x1x32x16xf32>, %k: memref<1x1x32x16xf32>, %v: memref<1x1x32x16xf32>, %out: memref<1x1x32x16xf32>) {
  %q_t = bufferization.to_tensor %q restrict : memref<1x1x32x16xf32> to tensor<1x1x32x16xf32>
  %k_t = bufferization.to_tensor %k restrict : memref<1x1x32x16xf32> to tensor<1x1x32x16xf32>
  %v_t = bufferization.to_tensor %v restrict : memref<1x1x32x16xf32> to tensor<1x1x32x16xf32>
  // expected-error@+1 {{the coopmat kernel is f16 or bf16 x the same + f32 only (got f32)}}
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

// Lengths the blocks do not divide: grid y = ceil(48 / 32) = 2, key blocks
// ceil(40 / 32) = 2, rows written min(32, 48 - q0), tile rows past the
// lengths zero, keys past Skv -inf.
// CHECK-LABEL: func.func @tails
// CHECK-DAG: %[[GY:.*]] = arith.constant 2 : index
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}}, {{.*}} = %[[GY]], {{.*}})
// CHECK: %[[LEFT:.*]] = arith.subi %c48{{.*}}, %{{.*}} : index
// CHECK: %[[ROWS:.*]] = arith.minui %[[LEFT]], %c32{{.*}} : index
// CHECK: arith.cmpi ult, %{{.*}}, %c48 : index
// CHECK: arith.cmpi ult, %{{.*}}, %c40 : index
// CHECK: arith.cmpi ult, %{{.*}}, %c40 : index
// CHECK: %[[KIN:.*]] = arith.cmpi ult, %{{.*}}, %c40 : index
// CHECK: %[[OK:.*]] = arith.andi %{{.*}}, %[[KIN]] : i1
// CHECK: arith.select %[[OK]], %{{.*}}, %{{.*}} : f32
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[ROWS]] step
// CHECK: memref.store {{.*}}, %arg3
func.func @tails(%q: memref<1x1x48x16xf16>, %k: memref<1x1x40x16xf16>, %v: memref<1x1x40x16xf16>, %out: memref<1x1x48x16xf16>) {
  %q_t = bufferization.to_tensor %q restrict : memref<1x1x48x16xf16> to tensor<1x1x48x16xf16>
  %k_t = bufferization.to_tensor %k restrict : memref<1x1x40x16xf16> to tensor<1x1x40x16xf16>
  %v_t = bufferization.to_tensor %v restrict : memref<1x1x40x16xf16> to tensor<1x1x40x16xf16>
  %o = attn.sdpa %q_t, %k_t, %v_t : tensor<1x1x48x16xf16>, tensor<1x1x40x16xf16>, tensor<1x1x40x16xf16> -> tensor<1x1x48x16xf16>
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
