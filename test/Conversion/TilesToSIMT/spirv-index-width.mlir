// convert-attn-tiles-to-simt{spirv} refuses, with a diagnostic, the buffers
// a SPIR-V kernel cannot take. SPIR-V kernels index buffers with 32
// bits, so a static buffer of more than 2^31 - 1 elements is refused with
// its size (before, this function compiled to a kernel whose 32-bit
// element offsets wrap past 2^31; other sizes failed later with "failed to
// legalize operation 'arith.constant'"). Here K and V have 1 x 1 x 2^28 x 16 = 2^32 elements:
// within the dialect's 2^40 (the verifier takes them), over SPIR-V's
// 2^31 - 1. The CUDA generic kernel (64-bit indices) lowers the same
// function.
// RUN: not attn-opt %s --split-input-file --attn-to-spirv-pipeline 2>&1 | FileCheck %s
// RUN: attn-opt %s --split-input-file --attn-to-nvvm-pipeline -o /dev/null

// CHECK: error: convert-attn-tiles-to-simt: argument 1 ('memref<1x1x268435456x16xf32>') has more than 2^31 - 1 elements; SPIR-V kernels index buffers with 32 bits
func.func @big(%q: memref<1x1x4x16xf32>, %k: memref<1x1x268435456x16xf32>, %v: memref<1x1x268435456x16xf32>, %out: memref<1x1x4x16xf32>) {
  %q_t = bufferization.to_tensor %q restrict : memref<1x1x4x16xf32> to tensor<1x1x4x16xf32>
  %k_t = bufferization.to_tensor %k restrict : memref<1x1x268435456x16xf32> to tensor<1x1x268435456x16xf32>
  %v_t = bufferization.to_tensor %v restrict : memref<1x1x268435456x16xf32> to tensor<1x1x268435456x16xf32>
  %o = attn.sdpa %q_t, %k_t, %v_t : tensor<1x1x4x16xf32>, tensor<1x1x268435456x16xf32>, tensor<1x1x268435456x16xf32> -> tensor<1x1x4x16xf32>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x1x4x16xf32>, memref<1x1x4x16xf32>) -> ()
  return
}

// -----

// Strided buffers (an offset and dynamic strides): the SPIR-V conversion
// cannot lower them (it failed with "failed to legalize operation
// 'gpu.func'"); refused up front. The runtime always passes dense ones.
// CHECK: error: convert-attn-tiles-to-simt: argument 0 ('memref<1x2x16x16xf32, strided<[?, ?, ?, 1], offset: ?>>') has a strided layout; SPIR-V kernels take dense (identity-layout) buffers
func.func @strided(%q: memref<1x2x16x16xf32, strided<[?, ?, ?, 1], offset: ?>>, %k: memref<1x2x16x16xf32, strided<[?, ?, ?, 1], offset: ?>>, %v: memref<1x2x16x16xf32, strided<[?, ?, ?, 1], offset: ?>>, %out: memref<1x2x16x16xf32, strided<[?, ?, ?, 1], offset: ?>>) {
  %q_t = bufferization.to_tensor %q restrict : memref<1x2x16x16xf32, strided<[?, ?, ?, 1], offset: ?>> to tensor<1x2x16x16xf32>
  %k_t = bufferization.to_tensor %k restrict : memref<1x2x16x16xf32, strided<[?, ?, ?, 1], offset: ?>> to tensor<1x2x16x16xf32>
  %v_t = bufferization.to_tensor %v restrict : memref<1x2x16x16xf32, strided<[?, ?, ?, 1], offset: ?>> to tensor<1x2x16x16xf32>
  %o = attn.sdpa %q_t, %k_t, %v_t : tensor<1x2x16x16xf32>, tensor<1x2x16x16xf32>, tensor<1x2x16x16xf32> -> tensor<1x2x16x16xf32>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x2x16x16xf32>, memref<1x2x16x16xf32, strided<[?, ?, ?, 1], offset: ?>>) -> ()
  return
}
