// The portable variant validates as Vulkan 1.1 SPIR-V (f32 and f16, causal
// and not, one workgroup, small blocks, split-KV), and so do the tiled
// variant and the coopmat kernel with scalar products.
// REQUIRES: spirv-val
// RUN: rm -rf %t && mkdir -p %t
// RUN: attn-translate --attn-to-spirv %S/attn-to-spirv.mlir -o %t/f16.spv
// RUN: %spirv_val --target-env vulkan1.1 %t/f16.spv
// RUN: attn-translate --attn-to-spirv %s -o %t/f32.spv
// RUN: %spirv_val --target-env vulkan1.1 %t/f32.spv
// The tensor-level form (attn-to-spirv-tensor-level.mlir), per-row and
// subgroup kernels.
// RUN: attn-translate --attn-to-spirv %S/attn-to-spirv-tensor-level.mlir -o %t/tl.spv
// RUN: %spirv_val --target-env vulkan1.1 %t/tl.spv
// RUN: attn-translate --attn-to-spirv --subgroup-size=8 %S/attn-to-spirv-tensor-level.mlir -o %t/tl8.spv
// RUN: %spirv_val --target-env vulkan1.1 %t/tl8.spv
// Dynamic sizes (runtime arrays indexed linearly, a size buffer), per-row
// and subgroup kernels, split-KV with workspaces sized at launch.
// RUN: sed -e 's/2x8x512x64/?x8x?x64/g' -e 's/2x2x512x64/?x2x?x64/g' -e 's/2x8x512xf32/?x8x?xf32/g' %S/attn-to-spirv-tensor-level.mlir > %t/dyn.mlir
// RUN: attn-translate --attn-to-spirv %t/dyn.mlir -o %t/dyn.spv
// RUN: %spirv_val --target-env vulkan1.1 %t/dyn.spv
// RUN: attn-translate --attn-to-spirv --subgroup-size=8 --kv-splits=3 %t/dyn.mlir -o %t/dyn8.spv
// RUN: %spirv_val --target-env vulkan1.1 %t/dyn8.spv
// RUN: spirv-dis %t/dyn8.spv | FileCheck %s --check-prefix=RTARRAY
// RTARRAY: OpTypeRuntimeArray
// RUN: attn-translate --attn-to-spirv --block-q=4 --block-kv=8 %s -o %t/small.spv
// RUN: %spirv_val --target-env vulkan1.1 %t/small.spv
// Dropout: the seed as a one-element storage buffer, Philox on
// UMulExtended, Int64 declared only here.
// RUN: attn-translate --attn-to-spirv %S/Inputs/dropout.mlir -o %t/dropout.spv
// RUN: %spirv_val --target-env vulkan1.1 %t/dropout.spv
// RUN: spirv-dis %t/dropout.spv | FileCheck %s --check-prefix=DROPOUT
// RUN: spirv-dis %t/f32.spv | FileCheck %s --check-prefix=NOINT64
// DROPOUT: OpCapability Int64
// DROPOUT: OpUMulExtended
// NOINT64-NOT: OpCapability Int64
// Split-KV (a partial and a merge kernel in one module, workspaces as
// storage buffers): f16 and f32 (one key block here, so one chunk is
// empty), and with dropout's seed buffer (3 chunks of 8-key blocks).
// RUN: attn-opt --attn-to-spirv-pipeline=kv-splits=2 %S/attn-to-spirv.mlir | attn-translate --attn-to-spirv -o %t/split16.spv
// RUN: %spirv_val --target-env vulkan1.1 %t/split16.spv
// RUN: attn-opt --attn-to-spirv-pipeline=kv-splits=2 %s | attn-translate --attn-to-spirv -o %t/split32.spv
// RUN: %spirv_val --target-env vulkan1.1 %t/split32.spv
// RUN: attn-opt --attn-to-spirv-pipeline="kv-splits=3 block-kv=8" %S/Inputs/dropout.mlir | attn-translate --attn-to-spirv -o %t/splitdrop.spv
// RUN: %spirv_val --target-env vulkan1.1 %t/splitdrop.spv
// RUN: spirv-dis %t/splitdrop.spv | FileCheck %s --check-prefix=SPLITDROP
// SPLITDROP: OpCapability Int64
// SPLITDROP: OpEntryPoint GLCompute %attn_kernel_split_kv "attn_kernel_split_kv"
// SPLITDROP: OpEntryPoint GLCompute %attn_kernel_split_kv_merge "attn_kernel_split_kv_merge"
// The tiled variant (one invocation per tile), f16 and f32.
// RUN: attn-translate --attn-to-spirv --variant=tiled %S/attn-to-spirv.mlir -o %t/tiled16.spv
// RUN: %spirv_val --target-env vulkan1.1 %t/tiled16.spv
// RUN: attn-translate --attn-to-spirv --variant=tiled --block-q=4 --block-kv=8 %s -o %t/tiled32.spv
// RUN: %spirv_val --target-env vulkan1.1 %t/tiled32.spv
// The coopmat kernel with scalar products (all of it but the matrix ops).
// RUN: attn-translate --attn-to-spirv --variant=coopmat-scalar %S/attn-to-spirv.mlir -o %t/coopmat-scalar.spv
// RUN: %spirv_val --target-env vulkan1.1 %t/coopmat-scalar.spv
// ... with dropout (Int64, Philox) and split in 2 (partial + merge).
// RUN: attn-translate --attn-to-spirv --variant=coopmat-scalar --kv-splits=2 --block-kv=16 %S/Inputs/dropout-f16.mlir -o %t/coopmat-scalar-drop-split.spv
// RUN: %spirv_val --target-env vulkan1.1 %t/coopmat-scalar-drop-split.spv
// RUN: spirv-dis %t/coopmat-scalar-drop-split.spv | FileCheck %s --check-prefix=COOPDROP
// COOPDROP: OpCapability Int64
// COOPDROP: OpEntryPoint GLCompute %{{.*}} "attn_kernel_split_kv"
// COOPDROP: OpEntryPoint GLCompute %{{.*}} "attn_kernel_split_kv_merge"
// COOPDROP: OpUMulExtended
// ... and its bf16 form (bf16 as 16-bit integers, as in the portable kernel).
// RUN: attn-translate --attn-to-spirv --variant=coopmat-scalar --kv-splits=2 --block-kv=16 %S/Inputs/dropout-bf16.mlir -o %t/coopmat-scalar-bf16.spv
// RUN: %spirv_val --target-env vulkan1.1 %t/coopmat-scalar-bf16.spv
func.func @attn_kernel(%q: memref<1x1x8x32xf32>, %k: memref<1x1x32x32xf32>, %v: memref<1x1x32x8xf32>, %out: memref<1x1x8x8xf32>) {
  %q_t = bufferization.to_tensor %q restrict : memref<1x1x8x32xf32> to tensor<1x1x8x32xf32>
  %k_t = bufferization.to_tensor %k restrict : memref<1x1x32x32xf32> to tensor<1x1x32x32xf32>
  %v_t = bufferization.to_tensor %v restrict : memref<1x1x32x8xf32> to tensor<1x1x32x8xf32>
  %o = attn.sdpa %q_t, %k_t, %v_t : tensor<1x1x8x32xf32>, tensor<1x1x32x32xf32>, tensor<1x1x32x8xf32> -> tensor<1x1x8x8xf32>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x1x8x8xf32>, memref<1x1x8x8xf32>) -> ()
  return
}
