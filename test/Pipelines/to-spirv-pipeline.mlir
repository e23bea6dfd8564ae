// RUN: attn-opt %s --split-input-file --attn-to-spirv-pipeline=variant=tiled | FileCheck %s
// RUN: attn-opt %s --split-input-file --attn-to-spirv-pipeline | FileCheck %s --check-prefix=PORTABLE
// RUN: not attn-opt %s --attn-to-spirv-pipeline=variant=wmma 2>&1 | FileCheck %s --check-prefix=VARIANT
// RUN: not attn-opt %s --split-input-file --attn-to-spirv-pipeline=max-loop-iterations=100 2>&1 | FileCheck %s --check-prefix=BUDGET
// Split-KV (the case is Inputs/split-kv.mlir): two kernels of one module,
// workspaces, a module spirv-val accepts; a budget only the split passes;
// other variants refuse it.
// RUN: attn-opt %S/Inputs/split-kv.mlir --attn-to-spirv-pipeline=kv-splits=2 | FileCheck %s --check-prefix=SPLIT
// RUN: attn-opt %S/Inputs/split-kv.mlir --attn-to-spirv-pipeline=kv-splits=2 | attn-translate --attn-to-spirv -o %t.split.spv
// RUN: %if spirv-val %{ %spirv_val --target-env vulkan1.1 %t.split.spv %}
// RUN: not attn-opt %S/Inputs/split-kv.mlir --attn-to-spirv-pipeline="max-loop-iterations=500" 2>&1 | FileCheck %s --check-prefix=SPLITBUDGET
// RUN: attn-opt %S/Inputs/split-kv.mlir --attn-to-spirv-pipeline="kv-splits=4 max-loop-iterations=500" -o /dev/null
// RUN: not attn-opt %S/Inputs/split-kv.mlir --attn-to-spirv-pipeline="variant=tiled kv-splits=2" 2>&1 | FileCheck %s --check-prefix=SPLITVARIANT
// bf16 (Inputs/bf16.mlir, with a bf16 additive mask): the buffers are i16
// buffers (Int16 and 16-bit storage) and no bf16 type reaches SPIR-V; a
// module spirv-val accepts; for devices without shaderInt16 the same
// buffers emulated in 32-bit words.
// RUN: attn-opt %S/Inputs/bf16.mlir --attn-to-spirv-pipeline | FileCheck %s --check-prefix=BF16
// RUN: attn-opt %S/Inputs/bf16.mlir --attn-to-spirv-pipeline | attn-translate --attn-to-spirv -o %t.bf16.spv
// RUN: %if spirv-val %{ %spirv_val --target-env vulkan1.1 %t.bf16.spv %}
// RUN: attn-opt %S/Inputs/bf16.mlir --attn-to-spirv-pipeline="int16=false f16=false" | FileCheck %s --check-prefix=BF16EMU
// Dropout on the tiled variant (Inputs/tiled-dropout.mlir): the kernel's
// i64 seed needs Int64 in the target, as the other variants have it.
// RUN: attn-opt %S/Inputs/tiled-dropout.mlir --attn-to-spirv-pipeline=variant=tiled | FileCheck %s --check-prefix=TILEDDROP
// TILEDDROP: spirv.module @__spv__tiled_dropout_kernel Logical GLSL450 requires #spirv.vce<v1.0, [Shader, Int64{{.*}}]
// TILEDDROP: spirv.EntryPoint "GLCompute" @tiled_dropout_kernel

// VARIANT: unknown variant 'wmma' (portable, tiled, coopmat or coopmat-scalar)

// portable (the default): the SIMT mapping of the tiled form, a workgroup
// of 64 invocations, one per query row, per (query block, head, batch):
// grid 1 x 2 x 1; K and V tiles of 64 keys in Workgroup memory, the row's
// scores of a key block (64 plus one: see convert-attn-tiles-to-simt.mlir),
// query (16) and accumulator (16) in Function memory; barriers around each
// tile load. Every kernel of a function is in "<fn>_kernels".
// PORTABLE-LABEL: func.func @attn_kernel
// PORTABLE-DAG: %[[C1:.+]] = arith.constant 1 : index
// PORTABLE-DAG: %[[C2:.+]] = arith.constant 2 : index
// PORTABLE-DAG: %[[C64:.+]] = arith.constant 64 : index
// PORTABLE: gpu.launch_func @attn_kernel_kernels::@attn_kernel blocks in (%[[C1]], %[[C2]], %[[C1]]) threads in (%[[C64]], %[[C1]], %[[C1]])
// PORTABLE-NEXT: return
// PORTABLE-COUNT-2: spirv.GlobalVariable @__workgroup_mem__{{[0-9]+}} : !spirv.ptr<!spirv.struct<(!spirv.array<1024 x f32>)>, Workgroup>
// PORTABLE: spirv.func @attn_kernel()
// PORTABLE: spirv.Variable : !spirv.ptr<!spirv.struct<(!spirv.array<65 x f32>)>, Function>
// PORTABLE-COUNT-2: spirv.Variable : !spirv.ptr<!spirv.struct<(!spirv.array<16 x f32>)>, Function>
// PORTABLE: spirv.ControlBarrier <Workgroup>, <Workgroup>, <AcquireRelease|WorkgroupMemory>
// PORTABLE: spirv.ControlBarrier <Workgroup>, <Workgroup>, <AcquireRelease|WorkgroupMemory>
// PORTABLE: spirv.ExecutionMode @attn_kernel "LocalSize", 64, 1, 1

// A loop budget the kernel exceeds is an error that says so (lavapipe's is
// 65535; see test/Pipelines/spirv-loop-budget.mlir).
// BUDGET: attn-spirv-loop-budget: one invocation of this kernel can run up to {{[0-9]+}} loop iterations; the target ends loops after 100

// Split-KV, kv-splits=2: the host function allocates the two f32
// workspaces (partial outputs B x Hq x 2 x Sq x Dv, partial lse B x Hq x 2 x
// Sq), launches the partial kernel over (1 query block, Hq x 2 chunks, B)
// with 64 invocations, then the merge kernel over (ceil(64 / (128 / 16)),
// Hq, B) with 128, both from one module, and frees the workspaces; nothing
// else runs on the host. Kernel operands are in first-use order.
// SPLIT-LABEL: func.func @split_kv
// SPLIT-DAG: %[[C1:.+]] = arith.constant 1 : index
// SPLIT-DAG: %[[C2:.+]] = arith.constant 2 : index
// SPLIT-DAG: %[[C4:.+]] = arith.constant 4 : index
// SPLIT-DAG: %[[C8:.+]] = arith.constant 8 : index
// SPLIT-DAG: %[[C64:.+]] = arith.constant 64 : index
// SPLIT-DAG: %[[C128:.+]] = arith.constant 128 : index
// SPLIT: %[[PO:.+]] = memref.alloc() {attn.workspace = "partial_out"} : memref<1x2x2x64x16xf32, #spirv.storage_class<StorageBuffer>>
// SPLIT-NEXT: %[[PL:.+]] = memref.alloc() {attn.workspace = "partial_stats"} : memref<1x2x2x2x64xf32, #spirv.storage_class<StorageBuffer>>
// SPLIT-NEXT: gpu.launch_func @split_kv_kernels::@split_kv_split_kv blocks in (%[[C1]], %[[C4]], %[[C1]]) threads in (%[[C64]], %[[C1]], %[[C1]]) args(%arg0 : {{.*}}, %arg1 : {{.*}}, %arg2 : {{.*}}, %arg3 : {{.*}}, %[[PO]] : {{.*}}, %[[PL]] : {{.*}})
// SPLIT-NEXT: gpu.launch_func @split_kv_kernels::@split_kv_split_kv_merge blocks in (%[[C8]], %[[C2]], %[[C1]]) threads in (%[[C128]], %[[C1]], %[[C1]]) args(%[[PL]] : {{.*}}, %[[PO]] : {{.*}}, %arg4 : {{.*}}, %arg5 : {{.*}})
// SPLIT-NEXT: memref.dealloc %[[PO]]
// SPLIT-NEXT: memref.dealloc %[[PL]]
// SPLIT-NEXT: return
// One spirv.module, each kernel with its own bindings in the order of its
// operands: the workspaces are storage buffers like the tensors (4096 and
// 512 f32: the chunks' max and sum; the mask is bytes in 4096 i32 words).
// SPLIT: spirv.module @__spv__split_kv_kernels
// SPLIT: spirv.GlobalVariable @split_kv_split_kv_arg_3 bind(0, 3) : !spirv.ptr<!spirv.struct<(!spirv.array<4096 x i32, stride=4> [0])>, StorageBuffer>
// SPLIT-NEXT: spirv.GlobalVariable @split_kv_split_kv_arg_4 bind(0, 4) : !spirv.ptr<!spirv.struct<(!spirv.array<4096 x f32, stride=4> [0])>, StorageBuffer>
// SPLIT-NEXT: spirv.GlobalVariable @split_kv_split_kv_arg_5 bind(0, 5) : !spirv.ptr<!spirv.struct<(!spirv.array<512 x f32, stride=4> [0])>, StorageBuffer>
// SPLIT-NEXT: spirv.func @split_kv_split_kv()
// SPLIT: spirv.GlobalVariable @split_kv_split_kv_merge_arg_0 bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.array<512 x f32, stride=4> [0])>, StorageBuffer>
// SPLIT-NEXT: spirv.GlobalVariable @split_kv_split_kv_merge_arg_1 bind(0, 1) : !spirv.ptr<!spirv.struct<(!spirv.array<4096 x f32, stride=4> [0])>, StorageBuffer>
// SPLIT-NEXT: spirv.GlobalVariable @split_kv_split_kv_merge_arg_2 bind(0, 2) : !spirv.ptr<!spirv.struct<(!spirv.array<2048 x f32, stride=4> [0])>, StorageBuffer>
// SPLIT-NEXT: spirv.GlobalVariable @split_kv_split_kv_merge_arg_3 bind(0, 3) : !spirv.ptr<!spirv.struct<(!spirv.array<128 x f32, stride=4> [0])>, StorageBuffer>
// SPLIT-NEXT: spirv.func @split_kv_split_kv_merge()
// The merge: max over the chunks' max, weights sum * exp2, out and lse.
// SPLIT: spirv.GL.Exp
// SPLIT: spirv.GL.Log
// SPLIT: spirv.EntryPoint "GLCompute" @split_kv_split_kv,
// SPLIT-NEXT: spirv.ExecutionMode @split_kv_split_kv "LocalSize", 64, 1, 1
// SPLIT-NEXT: spirv.EntryPoint "GLCompute" @split_kv_split_kv_merge,
// SPLIT-NEXT: spirv.ExecutionMode @split_kv_split_kv_merge "LocalSize", 128, 1, 1
// The budget is per invocation: unsplit, one row walks all 4 key blocks;
// with 4 chunks it walks one, under a budget the whole row exceeds.
// SPLITBUDGET: attn-spirv-loop-budget: one invocation of this kernel can run up to {{[0-9]+}} loop iterations; the target ends loops after 500
// SPLITVARIANT: kv-splits=2 needs variant=portable, coopmat or coopmat-scalar: the tiled variant has no split-KV (use kv-splits=1)

// BF16: func.func @bf16(%{{.*}}: memref<1x2x16x8xi16, #spirv.storage_class<StorageBuffer>>
// BF16: spirv.module @__spv__bf16_kernels {{.*}} requires #spirv.vce<{{.*}}[Int16, StorageBuffer16BitAccess,
// BF16-NOT: {{xbf16|: bf16|bf16 to|to bf16}}
// BF16: spirv.GlobalVariable @bf16_arg_0 bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.array<256 x i16, stride=2> [0])>, StorageBuffer>
// BF16-NOT: {{xbf16|: bf16|bf16 to|to bf16}}
// BF16: spirv.GlobalVariable @bf16_arg_3 bind(0, 3) : !spirv.ptr<!spirv.struct<(!spirv.array<768 x i16, stride=2> [0])>, StorageBuffer>
// BF16-NOT: {{xbf16|: bf16|bf16 to|to bf16}}
// BF16: spirv.EntryPoint "GLCompute" @bf16
// BF16EMU: spirv.module @__spv__bf16_kernels
// BF16EMU-NOT: Int16
// BF16EMU: spirv.GlobalVariable @bf16_arg_0 bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.array<128 x i32, stride=4> [0])>, StorageBuffer>
// BF16EMU-NOT: Int16
// BF16EMU: spirv.EntryPoint "GLCompute" @bf16

// tiled: one workgroup of one invocation per tile: B*Hq = 2 by Sq/16 = 4 tiles.
// Kernel operands are ordered by first use (q, out, k, v), which is why the
// launch metadata records the binding of each host argument.
// CHECK-LABEL: func.func @attn_kernel
// CHECK-SAME: (%[[Q:[^:]+]]: memref<1x2x64x16xf32, #spirv.storage_class<StorageBuffer>>, %[[K:[^:]+]]: {{.*}}, %[[V:[^:]+]]: {{.*}}, %[[OUT:[^:]+]]: {{.*}})
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG: %[[C2:.+]] = arith.constant 2 : index
// CHECK-DAG: %[[C4:.+]] = arith.constant 4 : index
// CHECK: gpu.launch_func @attn_kernel_kernel::@attn_kernel_kernel blocks in (%[[C2]], %[[C4]], %[[C1]]) threads in (%[[C1]], %[[C1]], %[[C1]]) args(%[[Q]] : {{.*}}, %[[OUT]] : {{.*}}, %[[K]] : {{.*}}, %[[V]] : {{.*}})
// Nothing else runs on the host.
// CHECK-NEXT: return
// CHECK: spirv.module @__spv__attn_kernel_kernel Logical GLSL450
// CHECK-SAME: api=Vulkan
// CHECK-COUNT-4: spirv.GlobalVariable @attn_kernel_kernel_arg_{{[0-3]}} bind(0, {{[0-3]}}) : !spirv.ptr<!spirv.struct<(!spirv.array<2048 x f32, stride=4> [0])>, StorageBuffer>
// CHECK: spirv.func @attn_kernel_kernel()
// The tile's temporaries (S and acc 16x16, max and sum 16) are Function
// variables, not buffers.
// CHECK: spirv.Variable : !spirv.ptr<!spirv.struct<(!spirv.array<256 x f32>)>, Function>
// CHECK: spirv.Variable : !spirv.ptr<!spirv.struct<(!spirv.array<16 x f32>)>, Function>
// exp2(x) = exp(x * ln 2).
// CHECK: spirv.GL.Exp
// CHECK: spirv.EntryPoint "GLCompute" @attn_kernel_kernel
// CHECK: spirv.ExecutionMode @attn_kernel_kernel "LocalSize", 1, 1, 1
// No heap allocation is left anywhere (the gpu.module keeps its allocas).
// CHECK-NOT: memref.alloc(
func.func @attn_kernel(%q: memref<1x2x64x16xf32>, %k: memref<1x2x64x16xf32>, %v: memref<1x2x64x16xf32>, %out: memref<1x2x64x16xf32>) {
  %q_t = bufferization.to_tensor %q restrict : memref<1x2x64x16xf32> to tensor<1x2x64x16xf32>
  %k_t = bufferization.to_tensor %k restrict : memref<1x2x64x16xf32> to tensor<1x2x64x16xf32>
  %v_t = bufferization.to_tensor %v restrict : memref<1x2x64x16xf32> to tensor<1x2x64x16xf32>
  %o = attn.sdpa %q_t, %k_t, %v_t causal : tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32> -> tensor<1x2x64x16xf32>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x2x64x16xf32>, memref<1x2x64x16xf32>) -> ()
  return
}

// -----

// A single tile in all: the one-iteration loop the canonicalizer would fold
// is kept, so the tile still runs as a kernel (grid 1 x 1 x 1).
// CHECK-LABEL: func.func @single_tile
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK: gpu.launch_func @single_tile_kernel::@single_tile_kernel blocks in (%[[C1]], %[[C1]], %[[C1]]) threads in (%[[C1]], %[[C1]], %[[C1]])
// CHECK-NEXT: return
// CHECK: spirv.module @__spv__single_tile_kernel
// CHECK: spirv.EntryPoint "GLCompute" @single_tile_kernel
func.func @single_tile(%q: memref<1x1x8x16xf32>, %k: memref<1x1x32x16xf32>, %v: memref<1x1x32x16xf32>, %out: memref<1x1x8x16xf32>) {
  %q_t = bufferization.to_tensor %q restrict : memref<1x1x8x16xf32> to tensor<1x1x8x16xf32>
  %k_t = bufferization.to_tensor %k restrict : memref<1x1x32x16xf32> to tensor<1x1x32x16xf32>
  %v_t = bufferization.to_tensor %v restrict : memref<1x1x32x16xf32> to tensor<1x1x32x16xf32>
  %o = attn.sdpa %q_t, %k_t, %v_t : tensor<1x1x8x16xf32>, tensor<1x1x32x16xf32>, tensor<1x1x32x16xf32> -> tensor<1x1x8x16xf32>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x1x8x16xf32>, memref<1x1x8x16xf32>) -> ()
  return
}

// -----

// f16 tensors: 16-bit storage buffers, f32 arithmetic inside the tile.
// CHECK-LABEL: func.func @half
// CHECK: spirv.module @__spv__half_kernel
// CHECK-SAME: StorageBuffer16BitAccess
// CHECK: spirv.GlobalVariable @half_kernel_arg_0 bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.array<512 x f16, stride=2> [0])>, StorageBuffer>
// CHECK: spirv.FConvert {{.*}} : f16 to f32
func.func @half(%q: memref<1x1x32x16xf16>, %k: memref<1x1x32x16xf16>, %v: memref<1x1x32x16xf16>, %out: memref<1x1x32x16xf16>) {
  %q_t = bufferization.to_tensor %q restrict : memref<1x1x32x16xf16> to tensor<1x1x32x16xf16>
  %k_t = bufferization.to_tensor %k restrict : memref<1x1x32x16xf16> to tensor<1x1x32x16xf16>
  %v_t = bufferization.to_tensor %v restrict : memref<1x1x32x16xf16> to tensor<1x1x32x16xf16>
  %o = attn.sdpa %q_t, %k_t, %v_t : tensor<1x1x32x16xf16>, tensor<1x1x32x16xf16>, tensor<1x1x32x16xf16> -> tensor<1x1x32x16xf16>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x1x32x16xf16>, memref<1x1x32x16xf16>) -> ()
  return
}

// -----

// A bool mask and lse: the i1 mask is a storage buffer of 32-bit words
// holding one byte per element (0 or 1: what the runtime stages), read by
// shifting the element's byte out; the keep decision selects -inf. lse is
// one more f32 storage buffer, -inf for a row that saw no key.
// CHECK-LABEL: func.func @mask_lse
// CHECK: gpu.launch_func @mask_lse_kernel
// CHECK: spirv.module @__spv__mask_lse_kernel
// CHECK-DAG: spirv.GlobalVariable @mask_lse_kernel_arg_{{[0-9]}} bind(0, {{[0-9]}}) : !spirv.ptr<!spirv.struct<(!spirv.array<512 x i32, stride=4> [0])>, StorageBuffer>
// CHECK-DAG: spirv.GlobalVariable @mask_lse_kernel_arg_{{[0-9]}} bind(0, {{[0-9]}}) : !spirv.ptr<!spirv.struct<(!spirv.array<64 x f32, stride=4> [0])>, StorageBuffer>
// CHECK: spirv.ShiftRightArithmetic
// CHECK: spirv.BitwiseAnd {{.*}}, %cst255_i32
// CHECK: spirv.Select
// CHECK: spirv.GL.Log
func.func @mask_lse(%q: memref<1x2x32x16xf32>, %k: memref<1x2x32x16xf32>, %v: memref<1x2x32x16xf32>, %mask: memref<1x2x32x32xi1>, %out: memref<1x2x32x16xf32>, %lse: memref<1x2x32xf32>) {
  %q_t = bufferization.to_tensor %q restrict : memref<1x2x32x16xf32> to tensor<1x2x32x16xf32>
  %k_t = bufferization.to_tensor %k restrict : memref<1x2x32x16xf32> to tensor<1x2x32x16xf32>
  %v_t = bufferization.to_tensor %v restrict : memref<1x2x32x16xf32> to tensor<1x2x32x16xf32>
  %mask_t = bufferization.to_tensor %mask restrict : memref<1x2x32x32xi1> to tensor<1x2x32x32xi1>
  %o, %l = attn.sdpa %q_t, %k_t, %v_t mask(%mask_t : tensor<1x2x32x32xi1>) : tensor<1x2x32x16xf32>, tensor<1x2x32x16xf32>, tensor<1x2x32x16xf32> -> tensor<1x2x32x16xf32>, tensor<1x2x32xf32>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x2x32x16xf32>, memref<1x2x32x16xf32>) -> ()
  bufferization.materialize_in_destination %l in restrict writable %lse : (tensor<1x2x32xf32>, memref<1x2x32xf32>) -> ()
  return
}
