// The kernel source of a bf16 case for to-spirv-pipeline.mlir: a bf16
// additive mask, GQA 2:1, lse.
func.func @bf16(%q: memref<1x2x16x8xbf16>, %k: memref<1x1x24x8xbf16>, %v: memref<1x1x24x8xbf16>, %mask: memref<1x2x16x24xbf16>, %out: memref<1x2x16x8xbf16>, %lse: memref<1x2x16xf32>) {
  %q_t = bufferization.to_tensor %q restrict : memref<1x2x16x8xbf16> to tensor<1x2x16x8xbf16>
  %k_t = bufferization.to_tensor %k restrict : memref<1x1x24x8xbf16> to tensor<1x1x24x8xbf16>
  %v_t = bufferization.to_tensor %v restrict : memref<1x1x24x8xbf16> to tensor<1x1x24x8xbf16>
  %mask_t = bufferization.to_tensor %mask restrict : memref<1x2x16x24xbf16> to tensor<1x2x16x24xbf16>
  %o, %l = attn.sdpa %q_t, %k_t, %v_t mask(%mask_t : tensor<1x2x16x24xbf16>) : tensor<1x2x16x8xbf16>, tensor<1x1x24x8xbf16>, tensor<1x1x24x8xbf16> -> tensor<1x2x16x8xbf16>, tensor<1x2x16xf32>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x2x16x8xbf16>, memref<1x2x16x8xbf16>) -> ()
  bufferization.materialize_in_destination %l in restrict writable %lse : (tensor<1x2x16xf32>, memref<1x2x16xf32>) -> ()
  return
}
