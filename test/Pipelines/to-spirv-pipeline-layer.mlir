// RUN: attn-opt %s --attn-to-spirv-pipeline=variant=portable | FileCheck %s
// RUN: attn-opt %s --attn-to-spirv-pipeline=variant=portable | attn-translate --attn-to-spirv -o %t.spv
// RUN: FileCheck %s --check-prefix=META < %t.spv.json
// RUN: %if spirv-val %{ %spirv_val --target-env vulkan1.1 %t.spv %}
// RUN: attn-opt %s --attn-to-spirv-pipeline=variant=coopmat-scalar -o /dev/null
// RUN: attn-opt %S/Inputs/layer-d64.mlir --attn-to-spirv-pipeline="variant=coopmat subgroups=2 row-lanes=2 registers=true block-q=32 block-kv=32" | attn-translate --attn-to-spirv -o %t.d64.spv
// RUN: FileCheck %s --check-prefix=VIEWS < %t.d64.spv.json
// RUN: not attn-opt %s --attn-to-spirv-pipeline=variant=tiled 2>&1 | FileCheck %s --check-prefix=TILED
// TILED: error: attn-to-spirv-pipeline{variant=tiled} compiles attention kernels only; a layer (attn.mha) needs variant=portable, coopmat or coopmat-scalar

// A layer (attn.mha: fused QKV weight with biases, GQA 2:1, f16) through
// the SPIR-V pipeline (its first step, attn-decompose-mha, makes the
// projections and the attn.sdpa): one host function that allocates the intermediates
// (the f16 q, k, v and the attention's output: the f32 sums between the
// contractions and their bias epilogues are gone) and launches the three
// projections, the attention and the output projection, in that order, as
// entry points of one spirv.module; the fused weight is bound whole (its
// row slices are views inside the kernels). The q and output projections
// (8 x 32 outputs) take 16 x 16 tiles of 256 invocations; k and v (8 x 16
// outputs, less than one tile) an invocation per output.
// CHECK-LABEL: func.func @attn_kernel(
// CHECK-SAME: %[[X:[^:]+]]: memref<1x8x32xf16, #spirv.storage_class<StorageBuffer>>, %[[W:[^:]+]]: memref<64x32xf16, {{.+}}>, %[[WO:[^:]+]]: memref<32x32xf16, {{.+}}>, %[[B:[^:]+]]: memref<64xf16, {{.+}}>, %[[BO:[^:]+]]: memref<32xf16, {{.+}}>, %[[Y:[^:]+]]: memref<1x8x32xf16, {{.+}}>)
// CHECK: %[[Q:.+]] = memref.alloc() {{.*}}: memref<1x2x8x16xf16, #spirv.storage_class<StorageBuffer>>
// CHECK: gpu.launch_func @attn_kernel_kernels::@attn_kernel_linalg0 {{.+}} args(%[[W]] : {{.+}}, %[[X]] : {{.+}}, %[[B]] : {{.+}}, %[[Q]] : {{.+}})
// CHECK: %[[K:.+]] = memref.alloc() {{.*}}: memref<1x1x8x16xf16, #spirv.storage_class<StorageBuffer>>
// CHECK: gpu.launch_func @attn_kernel_kernels::@attn_kernel_linalg1 {{.+}} args(%[[W]] : {{.+}}, %[[X]] : {{.+}}, %[[B]] : {{.+}}, %[[K]] : {{.+}})
// CHECK: %[[V:.+]] = memref.alloc() {{.*}}: memref<1x1x8x16xf16, #spirv.storage_class<StorageBuffer>>
// CHECK: gpu.launch_func @attn_kernel_kernels::@attn_kernel_linalg2 {{.+}} args(%[[W]] : {{.+}}, %[[X]] : {{.+}}, %[[B]] : {{.+}}, %[[V]] : {{.+}})
// CHECK: %[[O:.+]] = memref.alloc() : memref<1x2x8x16xf16, #spirv.storage_class<StorageBuffer>>
// CHECK: gpu.launch_func @attn_kernel_kernels::@attn_kernel blocks {{.+}} args(%[[Q]] : {{.+}}, %[[K]] : {{.+}}, %[[V]] : {{.+}}, %[[O]] : {{.+}})
// CHECK: gpu.launch_func @attn_kernel_kernels::@attn_kernel_linalg3 {{.+}} args(%[[WO]] : {{.+}}, %[[O]] : {{.+}}, %[[BO]] : {{.+}}, %[[Y]] : {{.+}})
// CHECK-NOT: gpu.launch_func
// CHECK: return
// CHECK: spirv.module @__spv__attn_kernel_kernels
// CHECK-COUNT-5: spirv.EntryPoint "GLCompute"
// CHECK-NOT: spirv.module

// META: "host_args": 6,
// META: "workspaces": [{"shape": [1, 2, 8, 16], "element": "f16", "bytes": 512}, {"shape": [1, 1, 8, 16], "element": "f16", "bytes": 256}, {"shape": [1, 1, 8, 16], "element": "f16", "bytes": 256}, {"shape": [1, 2, 8, 16], "element": "f16", "bytes": 512}],
// META: {"entry": "attn_kernel_linalg0", "workgroups": [2, 1, 1], "workgroup_size": [256, 1, 1],
// META: {"entry": "attn_kernel_linalg1", "workgroups": [1, 1, 1], "workgroup_size": [128, 1, 1],
// META: {"entry": "attn_kernel", "workgroups": [1, 2, 1],
// META-NEXT: "bindings": [{"set": 0, "binding": 0, "workspace": 0}, {"set": 0, "binding": 1, "workspace": 1}, {"set": 0, "binding": 2, "workspace": 2}, {"set": 0, "binding": 3, "workspace": 3}]},
// META: {"entry": "attn_kernel_linalg3", "workgroups": [2, 1, 1],
// META-NEXT: {"set": 0, "binding": 3, "arg": 5}]}],

func.func @attn_kernel(%x: memref<1x8x32xf16>, %w_qkv: memref<64x32xf16>, %w_o: memref<32x32xf16>, %b_qkv: memref<64xf16>, %b_o: memref<32xf16>, %y: memref<1x8x32xf16>) attributes {llvm.emit_c_interface} {
  %x_t = bufferization.to_tensor %x restrict : memref<1x8x32xf16> to tensor<1x8x32xf16>
  %w_qkv_t = bufferization.to_tensor %w_qkv restrict : memref<64x32xf16> to tensor<64x32xf16>
  %w_o_t = bufferization.to_tensor %w_o restrict : memref<32x32xf16> to tensor<32x32xf16>
  %b_qkv_t = bufferization.to_tensor %b_qkv restrict : memref<64xf16> to tensor<64xf16>
  %b_o_t = bufferization.to_tensor %b_o restrict : memref<32xf16> to tensor<32xf16>
  %y_t = attn.mha %x_t wqkv(%w_qkv_t : tensor<64x32xf16>) wo(%w_o_t : tensor<32x32xf16>) bqkv(%b_qkv_t : tensor<64xf16>) bo(%b_o_t : tensor<32xf16>) heads(2, 1) head_dim(16) : tensor<1x8x32xf16> -> tensor<1x8x32xf16>
  bufferization.materialize_in_destination %y_t in restrict writable %y : (tensor<1x8x32xf16>, memref<1x8x32xf16>) -> ()
  return
}

// At head_dim 64 on the cooperative-matrix kernel with registers, the
// attention kernel reads K and V (workspaces the projection wrote) through
// views of 16-byte vectors: the dispatch binds those workspaces, like Q's.
// VIEWS: "workspaces": [{"shape": [1, 2, 64, 64], "element": "f16", "bytes": 16384}, {"shape": [1, 1, 64, 64], "element": "f16", "bytes": 8192}, {"shape": [1, 1, 64, 64], "element": "f16", "bytes": 8192}, {"shape": [1, 2, 64, 64], "element": "f16", "bytes": 16384}],
// VIEWS: {"entry": "attn_kernel", "workgroups": [2, 2, 1], "workgroup_size": [64, 1, 1]
// VIEWS-NEXT: "bindings": [{"set": 0, "binding": 0, "workspace": 0}, {"set": 0, "binding": 1, "workspace": 1}, {"set": 0, "binding": 2, "workspace": 2}, {"set": 0, "binding": 3, "workspace": 3}]},

