// RUN: attn-opt %s --attn-to-spirv-pipeline="variant=coopmat block-q=16 block-kv=32" | FileCheck %s
// RUN: attn-opt %s --attn-to-spirv-pipeline="variant=coopmat subgroup-size=64" | FileCheck %s --check-prefix=SG64
// RUN: attn-opt %s --attn-to-spirv-pipeline="variant=coopmat-scalar" | FileCheck %s --check-prefix=SCALAR
// RUN: attn-opt %s --attn-to-spirv-pipeline="variant=coopmat subgroups=4 block-q=32 block-kv=32" | FileCheck %s --check-prefix=SG4
// RUN: sed -e 's/x16xf16>/x32xf16>/g' %s | attn-opt --attn-to-spirv-pipeline="variant=coopmat subgroups=16 row-lanes=32 block-q=16 block-kv=32" | FileCheck %s --check-prefix=LANES
// RUN: not attn-opt %s --attn-to-spirv-pipeline="variant=coopmat subgroups=16 row-lanes=32" 2>&1 | FileCheck %s --check-prefix=LANES16
// RUN: not attn-opt %s --attn-to-spirv-pipeline="variant=coopmat row-lanes=8" 2>&1 | FileCheck %s --check-prefix=LANESIZE
// RUN: sed -e 's/x16xf16>/x32xf16>/g' %s | attn-opt --attn-to-spirv-pipeline="variant=coopmat subgroups=2 row-lanes=2 registers=true block-q=32 block-kv=32" | FileCheck %s --check-prefix=REGS
// RUN: not attn-opt %s --attn-to-spirv-pipeline="variant=coopmat subgroups=2 row-lanes=2 registers=true block-q=16" 2>&1 | FileCheck %s --check-prefix=REGSROWS
// RUN: not attn-opt %s --attn-to-spirv-pipeline="variant=coopmat-scalar subgroups=2 row-lanes=2 registers=true block-q=32" 2>&1 | FileCheck %s --check-prefix=REGSROWS
// RUN: sed -e 's/x16xf16>/x32xf16>/g' %s | attn-opt --attn-to-spirv-pipeline="variant=coopmat subgroups=2 row-lanes=1 registers=true strips=2 block-q=64 block-kv=32" | FileCheck %s --check-prefix=STRIPS
// RUN: not attn-opt %s --attn-to-spirv-pipeline="variant=coopmat subgroups=2 row-lanes=2 registers=true strips=2 block-q=64" 2>&1 | FileCheck %s --check-prefix=STRIPSLANES
// RUN: not attn-opt %s --attn-to-spirv-pipeline="variant=coopmat subgroups=2 row-lanes=1 strips=2 block-q=64" 2>&1 | FileCheck %s --check-prefix=STRIPSREGS

// registers=true: the accumulator's matrices carried through the key loops
// and rescaled by an elementwise product with the rows' factors (OpFMul on
// cooperative matrices), the row reductions over two lanes (xor shuffle),
// a workgroup of two subgroups of 32.
// Q, K and V bound a second time as 16-byte vectors (the launch passes
// the host's q, k and v through the casts), staged into workgroup tiles of
// them (Q into K's, 32 rows of 4 + 1 vectors).
// REGS: %[[QV:.+]] = builtin.unrealized_conversion_cast %arg0 : memref<1x2x32x32xf16, #spirv.storage_class<StorageBuffer>> to memref<256xvector<4xi32>, #spirv.storage_class<StorageBuffer>>
// REGS: %[[KV:.+]] = builtin.unrealized_conversion_cast %arg1 : memref<1x2x64x32xf16, #spirv.storage_class<StorageBuffer>> to memref<512xvector<4xi32>, #spirv.storage_class<StorageBuffer>>
// REGS: %[[VV:.+]] = builtin.unrealized_conversion_cast %arg2 : memref<1x2x64x32xf16, #spirv.storage_class<StorageBuffer>> to memref<512xvector<4xi32>, #spirv.storage_class<StorageBuffer>>
// REGS: gpu.launch_func @attn_kernel_kernels::@attn_kernel {{.*}} args(%[[QV]] : {{.*}}, %[[KV]] : {{.*}}, %[[VV]] : {{.*}}, %arg3 :
// REGS: spirv.module @__spv__attn_kernel_kernels Logical Vulkan
// REGS-SAME: CooperativeMatrixKHR
// REGS-DAG: spirv.GlobalVariable @{{.+}} : !spirv.ptr<!spirv.struct<(!spirv.array<160 x vector<4xi32>>)>, Workgroup>
// REGS-DAG: spirv.GlobalVariable @attn_kernel_arg_1 bind(0, 1) : !spirv.ptr<!spirv.struct<(!spirv.array<512 x vector<4xi32>, stride=16> [0])>, StorageBuffer>
// REGS-DAG: spirv.GlobalVariable @attn_kernel_arg_2 bind(0, 2) : !spirv.ptr<!spirv.struct<(!spirv.array<512 x vector<4xi32>, stride=16> [0])>, StorageBuffer>
// REGS: spirv.KHR.CooperativeMatrixLoad %{{.+}}, %{{.+}}, <ColumnMajor>, <NonPrivatePointer> : !spirv.ptr<vector<4xi32>, Workgroup>, i32 -> !spirv.coopmatrix<16x16xf16, Subgroup, MatrixB>
// REGS: spirv.mlir.loop
// REGS: spirv.KHR.CooperativeMatrixMulAdd
// REGS: spirv.ControlBarrier <Subgroup>, <Subgroup>, <AcquireRelease|WorkgroupMemory|MakeAvailable|MakeVisible>
// REGS: spirv.GroupNonUniformShuffleXor <Subgroup>
// REGS: spirv.ControlBarrier <Subgroup>, <Subgroup>, <AcquireRelease|WorkgroupMemory|MakeAvailable|MakeVisible>
// REGS: spirv.mlir.selection
// REGS: spirv.FMul %{{.+}}, %{{.+}} : !spirv.coopmatrix<16x16xf32, Subgroup, MatrixAcc>
// REGS: spirv.KHR.CooperativeMatrixMulAdd
// REGS: spirv.ExecutionMode @attn_kernel "LocalSize", 64, 1, 1
// REGSROWS: error: attn-to-spirv-pipeline: registers needs variant=coopmat, 16-row strips per subgroup (block-q = 16 x strips x subgroups, currently

// strips=2: two 16-row strips per 32-wide subgroup (one lane per row), two
// subgroups: 64 invocations for 64 rows; each K^T matrix loaded enters two
// products (one per strip's Q matrix), as does each V matrix (one per
// strip's P matrix).
// STRIPS: %[[KT:.+]] = spirv.KHR.CooperativeMatrixLoad {{.*}} -> !spirv.coopmatrix<16x16xf16, Subgroup, MatrixB>
// STRIPS-NEXT: spirv.KHR.CooperativeMatrixMulAdd %{{.+}}, %[[KT]], %{{.+}} : !spirv.coopmatrix<16x16xf16, Subgroup, MatrixA>
// STRIPS-NEXT: spirv.KHR.CooperativeMatrixMulAdd %{{.+}}, %[[KT]], %{{.+}} : !spirv.coopmatrix<16x16xf16, Subgroup, MatrixA>
// STRIPS: spirv.ExecutionMode @attn_kernel "LocalSize", 64, 1, 1
// STRIPSLANES: error: attn-to-spirv-pipeline: registers needs variant=coopmat, 16-row strips per subgroup (block-q = 16 x strips x subgroups, currently 64, 2 and 2) and row-lanes = subgroup-size / (16 x strips) (currently 2 and 32)
// STRIPSREGS: error: attn-to-spirv-pipeline: strips is 2; it must be 1, or 2 or 4 with registers

// variant=coopmat-scalar: a Vulkan 1.1 module without cooperative matrices.
// SCALAR: spirv.module @__spv__attn_kernel_kernels Logical GLSL450 requires #spirv.vce<v1.0,
// SCALAR-NOT: CooperativeMatrix
// SCALAR-NOT: VulkanMemoryModel
// SCALAR: spirv.ControlBarrier <Workgroup>, <Workgroup>, <AcquireRelease|WorkgroupMemory>
// SCALAR-NOT: spirv.KHR
// SCALAR: spirv.ExecutionMode @attn_kernel "LocalSize", 32, 1, 1

// attn-to-spirv-pipeline{variant=coopmat}: the tiled form mapped by
// convert-attn-tiles-to-simt's cooperative-matrix mode, one kernel of one
// subgroup per workgroup on spirv.KHR.CooperativeMatrix* ops, in a SPIR-V
// 1.6 module with the Vulkan memory model, cooperative matrices, f16 and
// 16-bit storage.
// CHECK-LABEL: func.func @attn_kernel
// Grid (ceil(Sq/Br), Hq, B) = (2, 2, 1), 32 invocations; operands in
// first-use order (Q, K, V staged into workgroup memory first, then the
// mask).
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : index
// CHECK: gpu.launch_func @attn_kernel_kernels::@attn_kernel blocks in (%[[C2]], %[[C2]], %{{.*}}) threads in (%[[C32]], %{{.*}}, %{{.*}}) args(%arg0 : {{.*}}, %arg1 : {{.*}}, %arg2 : {{.*}}, %arg3 : memref<1x2x32x64xi1, {{.*}}>, %arg4 : {{.*}}, %arg5 : memref<1x2x32xf32, {{.*}}>)
// CHECK: spirv.module @__spv__attn_kernel_kernels Logical Vulkan requires #spirv.vce<v1.6,
// CHECK-SAME: CooperativeMatrixKHR
// CHECK-SAME: VulkanMemoryModel
// CHECK-SAME: SPV_KHR_cooperative_matrix
// CHECK-SAME: SPV_KHR_vulkan_memory_model
// The workgroup buffers: S 16x(32+4) f32, P 16x(32+8) f16, O 16x(16+4) f32,
// the Q tile 16x(16+8), the K and V tiles 32x(16+8) (f16).
// CHECK-DAG: spirv.GlobalVariable @{{.*}} : !spirv.ptr<!spirv.struct<(!spirv.array<576 x f32>)>, Workgroup>
// CHECK-DAG: spirv.GlobalVariable @{{.*}} : !spirv.ptr<!spirv.struct<(!spirv.array<640 x f16>)>, Workgroup>
// CHECK-DAG: spirv.GlobalVariable @{{.*}} : !spirv.ptr<!spirv.struct<(!spirv.array<320 x f32>)>, Workgroup>
// CHECK-DAG: spirv.GlobalVariable @{{.*}} : !spirv.ptr<!spirv.struct<(!spirv.array<384 x f16>)>, Workgroup>
// CHECK-DAG: spirv.GlobalVariable @{{.*}} : !spirv.ptr<!spirv.struct<(!spirv.array<768 x f16>)>, Workgroup>
// CHECK: spirv.func @attn_kernel()
// S = Q K^T from the staged tiles: Q row-major, K^T as a column-major load
// of K's tile, into f32.
// CHECK: spirv.KHR.CooperativeMatrixLoad {{.*}}, %cst24_i32, <RowMajor>, <NonPrivatePointer> : !spirv.ptr<f16, Workgroup>, i32 -> !spirv.coopmatrix<16x16xf16, Subgroup, MatrixA>
// CHECK: spirv.KHR.CooperativeMatrixLoad {{.*}}, %cst24_i32, <ColumnMajor>, <NonPrivatePointer> : !spirv.ptr<f16, Workgroup>, i32 -> !spirv.coopmatrix<16x16xf16, Subgroup, MatrixB>
// CHECK: spirv.KHR.CooperativeMatrixMulAdd {{.*}} -> !spirv.coopmatrix<16x16xf32, Subgroup, MatrixAcc>
// CHECK: spirv.KHR.CooperativeMatrixStore {{.*}}, %cst36_i32, <RowMajor>, <NonPrivatePointer> : !spirv.ptr<f32, Workgroup>
// CHECK: spirv.ControlBarrier <Workgroup>, <Workgroup>, <AcquireRelease|WorkgroupMemory|MakeAvailable|MakeVisible>
// The softmax on rows: the mask's byte, exp2, P as f16.
// CHECK: spirv.GL.Exp
// CHECK: spirv.FConvert {{.*}} : f32 to f16
// O += P V through workgroup memory.
// CHECK: spirv.KHR.CooperativeMatrixLoad {{.*}}, %cst20_i32, <RowMajor>, <NonPrivatePointer> : !spirv.ptr<f32, Workgroup>, i32 -> !spirv.coopmatrix<16x16xf32, Subgroup, MatrixAcc>
// CHECK: spirv.KHR.CooperativeMatrixLoad {{.*}}, %cst40_i32, <RowMajor>, <NonPrivatePointer> : !spirv.ptr<f16, Workgroup>, i32 -> !spirv.coopmatrix<16x16xf16, Subgroup, MatrixA>
// CHECK: spirv.KHR.CooperativeMatrixLoad {{.*}}, %cst24_i32, <RowMajor>, <NonPrivatePointer> : !spirv.ptr<f16, Workgroup>, i32 -> !spirv.coopmatrix<16x16xf16, Subgroup, MatrixB>
// CHECK: spirv.KHR.CooperativeMatrixMulAdd
// CHECK: spirv.KHR.CooperativeMatrixStore {{.*}}, %cst20_i32, <RowMajor>, <NonPrivatePointer>
// CHECK: spirv.GL.Log
// CHECK: spirv.ExecutionMode @attn_kernel "LocalSize", 32, 1, 1

// SG64: spirv.ExecutionMode @attn_kernel "LocalSize", 64, 1, 1

// subgroups=4: a workgroup of 4 subgroups of 32 (the subgroup built-ins
// declare GroupNonUniform); whole tiles of Q, K and V staged as matrix
// loads from the buffers (row stride 16 elements) stored into workgroup
// memory, the tail element by element; the products' matrices shared out
// by subgroup id, stepping by the number of subgroups.
// SG4: requires #spirv.vce<v1.6, [{{.*}}GroupNonUniform{{.*}}]
// SG4-DAG: spirv.GlobalVariable @{{.*}} built_in("SubgroupId")
// SG4-DAG: spirv.GlobalVariable @{{.*}} built_in("NumSubgroups")
// SG4: spirv.KHR.CooperativeMatrixLoad {{.*}}, %cst16_i32, <RowMajor> : !spirv.ptr<f16, StorageBuffer>, i32 -> !spirv.coopmatrix<16x16xf16, Subgroup, MatrixAcc>
// SG4: spirv.KHR.CooperativeMatrixStore {{.*}}, <RowMajor>, <NonPrivatePointer> : !spirv.ptr<f16, Workgroup>, !spirv.coopmatrix<16x16xf16, Subgroup, MatrixAcc>
// SG4: spirv.KHR.CooperativeMatrixMulAdd
// SG4: spirv.ExecutionMode @attn_kernel "LocalSize", 128, 1, 1

// row-lanes=32 (D = Dv = 32): a subgroup per softmax row, its max and sum
// as subgroup reductions, 16 rows x 32 lanes.
// LANES: GroupNonUniformArithmetic
// LANES: spirv.GroupNonUniformFMax <Subgroup> <Reduce>
// LANES: spirv.GroupNonUniformFAdd <Subgroup> <Reduce>
// LANES: spirv.ExecutionMode @attn_kernel "LocalSize", 512, 1, 1
// LANES16: the cooperative-matrix mapping with a row per 32 lanes needs D, Dv and block-kv multiples of them, got D = 16, Dv = 16
// LANESIZE: attn-to-spirv-pipeline: row-lanes is 8; it must be 1, or the subgroup size (subgroup-size, 32 by default for coopmat; given for coopmat-scalar)
func.func @attn_kernel(%q: memref<1x2x32x16xf16>, %k: memref<1x2x64x16xf16>, %v: memref<1x2x64x16xf16>, %mask: memref<1x2x32x64xi1>, %out: memref<1x2x32x16xf16>, %lse: memref<1x2x32xf32>) {
  %q_t = bufferization.to_tensor %q restrict : memref<1x2x32x16xf16> to tensor<1x2x32x16xf16>
  %k_t = bufferization.to_tensor %k restrict : memref<1x2x64x16xf16> to tensor<1x2x64x16xf16>
  %v_t = bufferization.to_tensor %v restrict : memref<1x2x64x16xf16> to tensor<1x2x64x16xf16>
  %m_t = bufferization.to_tensor %mask restrict : memref<1x2x32x64xi1> to tensor<1x2x32x64xi1>
  %o, %l = attn.sdpa %q_t, %k_t, %v_t mask(%m_t : tensor<1x2x32x64xi1>) causal : tensor<1x2x32x16xf16>, tensor<1x2x64x16xf16>, tensor<1x2x64x16xf16> -> tensor<1x2x32x16xf16>, tensor<1x2x32xf32>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x2x32x16xf16>, memref<1x2x32x16xf16>) -> ()
  bufferization.materialize_in_destination %l in restrict writable %lse : (tensor<1x2x32xf32>, memref<1x2x32xf32>) -> ()
  return
}
