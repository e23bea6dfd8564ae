// attn-translate --attn-to-spirv: the .spv of the portable variant, its
// launch metadata beside it, and (where spirv-val exists) a module that the
// Vulkan 1.1 validator accepts.
// RUN: rm -rf %t && mkdir -p %t
// RUN: attn-translate --attn-to-spirv --variant=portable %s -o %t/k.spv
// RUN: FileCheck %s --input-file=%t/k.spv.json
// RUN: od -A n -t x4 -N 4 %t/k.spv | FileCheck %s --check-prefix=MAGIC
// RUN: attn-translate --attn-to-spirv --variant=tiled %s -o %t/t.spv
// RUN: FileCheck %s --input-file=%t/t.spv.json --check-prefix=TILED
// The coopmat variant: its metadata, and its words deserialized back into
// MLIR (spirv-val here predates SPV_KHR_cooperative_matrix), re-verified
// by mlir-opt and checked for the ops, capabilities and memory model.
// RUN: attn-translate --attn-to-spirv --variant=coopmat %s -o %t/c.spv
// RUN: FileCheck %s --input-file=%t/c.spv.json --check-prefix=COOPMAT
// RUN: mlir-translate --deserialize-spirv %t/c.spv -o %t/c.mlir
// RUN: mlir-opt %t/c.mlir --verify-each | FileCheck %s --check-prefix=ROUNDTRIP
// RUN: attn-translate --attn-to-spirv --variant=coopmat --subgroup-size=64 --block-kv=48 %s -o %t/c64.spv
// RUN: FileCheck %s --input-file=%t/c64.spv.json --check-prefix=COOPMAT64
// RUN: not attn-translate --attn-to-spirv --variant=wmma %s -o %t/w.spv 2>&1 | FileCheck %s --check-prefix=VARIANT
// RUN: attn-translate --attn-to-spirv %s -o %t/named.spv --metadata=%t/meta.json
// RUN: FileCheck %s --input-file=%t/meta.json
// Split-KV (attn-translate takes the module attn-opt lowered) over 3 key
// blocks of 16: no single-dispatch keys, the workspaces and the two
// dispatches in order.
// RUN: attn-opt --attn-to-spirv-pipeline="kv-splits=2 block-kv=16" %s | attn-translate --attn-to-spirv -o %t/split.spv
// RUN: FileCheck %s --input-file=%t/split.spv.json --check-prefix=SPLIT
// RUN: od -A n -t x4 -N 4 %t/split.spv | FileCheck %s --check-prefix=MAGIC
// The same from attn-translate alone (--kv-splits); 0 (chosen per device)
// is the runtime's, and only the portable variant splits.
// RUN: attn-translate --attn-to-spirv --kv-splits=2 --block-kv=16 %s -o %t/split2.spv
// RUN: FileCheck %s --input-file=%t/split2.spv.json --check-prefix=SPLIT
// RUN: cmp %t/split.spv %t/split2.spv
// RUN: not attn-translate --attn-to-spirv --kv-splits=0 %s -o %t/s0.spv 2>&1 | FileCheck %s --check-prefix=SPLIT0
// RUN: not attn-translate --attn-to-spirv --variant=tiled --kv-splits=2 %s -o %t/st.spv 2>&1 | FileCheck %s --check-prefix=SPLITTILED
// SPLIT0: error: --attn-to-spirv: --kv-splits must be >= 1
// SPLITTILED: error: attn-to-spirv-pipeline: kv-splits=2 needs variant=portable, coopmat or coopmat-scalar: the tiled variant has no split-KV
// The coopmat kernel split in 2 (grid y = head x chunk): the same workspaces and
// merge as portable, a module that deserializes and verifies with both
// entry points.
// RUN: attn-translate --attn-to-spirv --variant=coopmat --kv-splits=2 --block-kv=16 %s -o %t/sc.spv
// RUN: FileCheck %s --input-file=%t/sc.spv.json --check-prefix=SPLITCOOP
// RUN: mlir-translate --deserialize-spirv %t/sc.spv -o %t/sc.mlir
// RUN: mlir-opt %t/sc.mlir --verify-each | FileCheck %s --check-prefix=SPLITCOOPRT
// SPLITCOOP: "variant": "coopmat",
// SPLITCOOP: "workspaces": [{"shape": [1, 3, 2, 32, 16], "element": "f32", "bytes": 12288}, {"shape": [1, 3, 2, 2, 32], "element": "f32", "bytes": 1536}],
// SPLITCOOP-NEXT: "dispatches": [
// SPLITCOOP-NEXT: {"entry": "attn_kernel_split_kv", "workgroups": [2, 6, 1], "workgroup_size": [32, 1, 1],
// SPLITCOOP-NEXT: "bindings": [{"set": 0, "binding": 0, "arg": 0}, {"set": 0, "binding": 1, "arg": 1}, {"set": 0, "binding": 2, "arg": 2}, {"set": 0, "binding": 3, "workspace": 0}, {"set": 0, "binding": 4, "workspace": 1}]},
// SPLITCOOP-NEXT: {"entry": "attn_kernel_split_kv_merge", "workgroups": [4, 3, 1], "workgroup_size": [128, 1, 1],
// SPLITCOOP-NEXT: "bindings": [{"set": 0, "binding": 0, "workspace": 1}, {"set": 0, "binding": 1, "workspace": 0}, {"set": 0, "binding": 2, "arg": 3}]}],
// SPLITCOOP: "needs_cooperative_matrix": true
// SPLITCOOPRT: spirv.module Logical Vulkan requires #spirv.vce<v1.6, [{{.*}}CooperativeMatrixKHR{{.*}}]
// SPLITCOOPRT: spirv.KHR.CooperativeMatrixMulAdd
// SPLITCOOPRT: spirv.EntryPoint "GLCompute" @attn_kernel_split_kv,
// SPLITCOOPRT: spirv.EntryPoint "GLCompute" @attn_kernel_split_kv_merge,
// SPLITCOOPRT: spirv.ExecutionMode @attn_kernel_split_kv "LocalSize", 32, 1, 1
// SPLITCOOPRT: spirv.ExecutionMode @attn_kernel_split_kv_merge "LocalSize", 128, 1, 1
// The coopmat kernel with dropout (the seed a one-element buffer after the
// lse, Int64 for Philox) split in 2, round-tripped.
// RUN: attn-translate --attn-to-spirv --variant=coopmat --kv-splits=2 --block-kv=16 %S/Inputs/dropout-f16.mlir -o %t/cd.spv
// RUN: FileCheck %s --input-file=%t/cd.spv.json --check-prefix=COOPDROP
// RUN: mlir-translate --deserialize-spirv %t/cd.spv -o %t/cd.mlir
// RUN: mlir-opt %t/cd.mlir --verify-each | FileCheck %s --check-prefix=COOPDROPRT
// COOPDROP: "host_args": 6,
// COOPDROP: {"entry": "attn_kernel_split_kv", "workgroups": [2, 4, 1], "workgroup_size": [32, 1, 1],
// COOPDROP-NEXT: "bindings": [{"set": 0, "binding": 0, "arg": 0}, {"set": 0, "binding": 1, "arg": 1}, {"set": 0, "binding": 2, "arg": 2}, {"set": 0, "binding": 3, "arg": 5}, {"set": 0, "binding": 4, "workspace": 0}, {"set": 0, "binding": 5, "workspace": 1}]},
// COOPDROP: "needs_cooperative_matrix": true
// COOPDROPRT: spirv.module Logical Vulkan requires #spirv.vce<v1.6, [{{.*}}Int64{{.*}}CooperativeMatrixKHR{{.*}}]
// COOPDROPRT: spirv.UMulExtended
// COOPDROPRT: spirv.KHR.CooperativeMatrixMulAdd
// COOPDROPRT: spirv.EntryPoint "GLCompute" @attn_kernel_split_kv,
// COOPDROPRT: spirv.EntryPoint "GLCompute" @attn_kernel_split_kv_merge,
// The same in bf16 (Inputs/dropout-bf16.mlir): written in f16, retyped by
// attn-spirv-coopmat-bf16: bf16 buffers, workgroup P and cooperative
// matrices, BFloat16TypeKHR and BFloat16CooperativeMatrixKHR instead of
// Float16; metadata asks for bf16, not f16.
// RUN: attn-translate --attn-to-spirv --variant=coopmat --kv-splits=2 --block-kv=16 %S/Inputs/dropout-bf16.mlir -o %t/cb.spv
// RUN: FileCheck %s --input-file=%t/cb.spv.json --check-prefix=COOPBF16
// RUN: mlir-translate --deserialize-spirv %t/cb.spv -o %t/cb.mlir
// RUN: mlir-opt %t/cb.mlir --verify-each | FileCheck %s --check-prefix=COOPBF16RT
// COOPBF16: "needs_float16": false,
// COOPBF16-NEXT: "needs_int16": false,
// COOPBF16-NEXT: "needs_bfloat16": true,
// COOPBF16-NEXT: "needs_cooperative_matrix": true
// COOPBF16RT: spirv.module Logical Vulkan requires #spirv.vce<v1.6, [{{.*}}BFloat16TypeKHR, BFloat16CooperativeMatrixKHR{{.*}}], [{{.*}}SPV_KHR_bfloat16{{.*}}]>
// COOPBF16RT-NOT: Float16,
// COOPBF16RT: spirv.GlobalVariable {{.*}} : !spirv.ptr<!spirv.struct<(!spirv.array<{{[0-9]+}} x bf16>)>, Workgroup>
// COOPBF16RT: spirv.KHR.CooperativeMatrixLoad {{.*}} -> !spirv.coopmatrix<16x16xbf16, Subgroup, MatrixA>
// COOPBF16RT: spirv.KHR.CooperativeMatrixMulAdd {{.*}} : !spirv.coopmatrix<16x16xbf16, Subgroup, MatrixA>, !spirv.coopmatrix<16x16xbf16, Subgroup, MatrixB> -> !spirv.coopmatrix<16x16xf32, Subgroup, MatrixAcc>
// COOPBF16RT: spirv.FConvert {{.*}} : f32 to bf16
// COOPBF16RT: spirv.EntryPoint "GLCompute" @attn_kernel_split_kv_merge,

// portable: the grid is ceil(Sq / 64) = 1 query block by Hq = 3 by B = 1,
// 64 invocations (rows) each; binding i is host argument "arg" (here in
// argument order; outlining may reorder them, see to-spirv-pipeline.mlir).
// CHECK: "variant": "portable"
// CHECK: "entry": "attn_kernel"
// CHECK: "workgroups": [1, 3, 1]
// CHECK: "workgroup_size": [64, 1, 1]
// CHECK: "push_constant_bytes": 0
// CHECK: "host_args": 4
// CHECK: "bindings": [{"set": 0, "binding": 0, "arg": 0}, {"set": 0, "binding": 1, "arg": 1}, {"set": 0, "binding": 2, "arg": 2}, {"set": 0, "binding": 3, "arg": 3}]
// Every dispatch is listed as well (here the one kernel, no workspace).
// CHECK: "workspaces": []
// CHECK: "dispatches": [
// CHECK-NEXT: {"entry": "attn_kernel", "workgroups": [1, 3, 1], "workgroup_size": [64, 1, 1],
// CHECK-NEXT: "bindings": [{"set": 0, "binding": 0, "arg": 0}, {"set": 0, "binding": 1, "arg": 1}, {"set": 0, "binding": 2, "arg": 2}, {"set": 0, "binding": 3, "arg": 3}]}]
// CHECK: "needs_float16": true
// CHECK: "needs_cooperative_matrix": false

// split-KV: 48 keys in 3 blocks of 16, 2 chunks of 2 and 1 blocks.
// The workspaces: partial outputs 1 x 3 x 2 x 32 x 16 f32 (12288 bytes) and
// the chunks' max and sum 1 x 3 x 2 x 2 x 32 (1536); the partial kernel over (1, Hq x 2, 1), the
// merge over (ceil(32 / 8), Hq, 1) with 128 invocations. A binding is a
// host argument ("arg") or a workspace.
// SPLIT: "variant": "portable",
// SPLIT-NOT: "entry"
// SPLIT: "host_args": 4,
// SPLIT-NOT: "entry"
// SPLIT: "workspaces": [{"shape": [1, 3, 2, 32, 16], "element": "f32", "bytes": 12288}, {"shape": [1, 3, 2, 2, 32], "element": "f32", "bytes": 1536}],
// SPLIT-NEXT: "dispatches": [
// SPLIT-NEXT: {"entry": "attn_kernel_split_kv", "workgroups": [1, 6, 1], "workgroup_size": [64, 1, 1],
// SPLIT-NEXT: "bindings": [{"set": 0, "binding": 0, "arg": 0}, {"set": 0, "binding": 1, "arg": 1}, {"set": 0, "binding": 2, "arg": 2}, {"set": 0, "binding": 3, "workspace": 0}, {"set": 0, "binding": 4, "workspace": 1}]},
// SPLIT-NEXT: {"entry": "attn_kernel_split_kv_merge", "workgroups": [4, 3, 1], "workgroup_size": [128, 1, 1],
// SPLIT-NEXT: "bindings": [{"set": 0, "binding": 0, "workspace": 1}, {"set": 0, "binding": 1, "workspace": 0}, {"set": 0, "binding": 2, "arg": 3}]}],
// SPLIT-NEXT: "needs_float16": true,
// SPLIT-NEXT: "needs_int16": false,
// SPLIT-NEXT: "needs_bfloat16": false,
// SPLIT-NEXT: "needs_cooperative_matrix": false

// MAGIC: 07230203
// tiled: B*Hq = 3 by Sq/16 = 2 tiles (x: heads, y: q-blocks), one
// invocation each.
// TILED: "variant": "tiled"
// TILED: "workgroups": [3, 2, 1]
// TILED: "workgroup_size": [1, 1, 1]
// coopmat: the portable grid (ceil(Sq / 16) = 2 query blocks by Hq = 3 by
// B = 1), a workgroup of one 32-invocation subgroup; K^T is a column-major
// cooperative-matrix load of the K tile.
// COOPMAT: "variant": "coopmat"
// COOPMAT: "workgroups": [2, 3, 1]
// COOPMAT: "workgroup_size": [32, 1, 1]
// COOPMAT: "needs_float16": true
// COOPMAT: "needs_cooperative_matrix": true
// ROUNDTRIP: spirv.module Logical Vulkan requires #spirv.vce<v1.6, [{{.*}}CooperativeMatrixKHR{{.*}}VulkanMemoryModel{{.*}}], [{{.*}}SPV_KHR_cooperative_matrix{{.*}}SPV_KHR_vulkan_memory_model{{.*}}]>
// ROUNDTRIP: spirv.GlobalVariable {{.*}} Workgroup>
// ROUNDTRIP: spirv.KHR.CooperativeMatrixLoad {{.*}} <ColumnMajor>
// ROUNDTRIP: spirv.KHR.CooperativeMatrixMulAdd
// ROUNDTRIP: spirv.KHR.CooperativeMatrixStore {{.*}} <NonPrivatePointer>
// ROUNDTRIP: spirv.EntryPoint "GLCompute" @attn_kernel,
// ROUNDTRIP: spirv.ExecutionMode @attn_kernel "LocalSize", 32, 1, 1
// COOPMAT64: "workgroup_size": [64, 1, 1]
// VARIANT: unknown variant 'wmma' (portable, tiled, coopmat or coopmat-scalar)
func.func @attn_kernel(%q: memref<1x3x32x16xf16>, %k: memref<1x3x48x16xf16>, %v: memref<1x3x48x16xf16>, %out: memref<1x3x32x16xf16>) {
  %q_t = bufferization.to_tensor %q restrict : memref<1x3x32x16xf16> to tensor<1x3x32x16xf16>
  %k_t = bufferization.to_tensor %k restrict : memref<1x3x48x16xf16> to tensor<1x3x48x16xf16>
  %v_t = bufferization.to_tensor %v restrict : memref<1x3x48x16xf16> to tensor<1x3x48x16xf16>
  %o = attn.sdpa %q_t, %k_t, %v_t causal : tensor<1x3x32x16xf16>, tensor<1x3x48x16xf16>, tensor<1x3x48x16xf16> -> tensor<1x3x32x16xf16>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x3x32x16xf16>, memref<1x3x32x16xf16>) -> ()
  return
}
