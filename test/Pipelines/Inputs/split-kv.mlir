// The kernel source of a split-KV case for to-spirv-pipeline.mlir: GQA-free,
// causal, a bool mask broadcast over B and H, lse; 256 keys, 64 rows.
func.func @split_kv(%q: memref<1x2x64x16xf32>, %k: memref<1x2x256x16xf32>, %v: memref<1x2x256x16xf32>, %mask: memref<1x1x64x256xi1>, %out: memref<1x2x64x16xf32>, %lse: memref<1x2x64xf32>) {
  %q_t = bufferization.to_tensor %q restrict : memref<1x2x64x16xf32> to tensor<1x2x64x16xf32>
  %k_t = bufferization.to_tensor %k restrict : memref<1x2x256x16xf32> to tensor<1x2x256x16xf32>
  %v_t = bufferization.to_tensor %v restrict : memref<1x2x256x16xf32> to tensor<1x2x256x16xf32>
  %mask_t = bufferization.to_tensor %mask restrict : memref<1x1x64x256xi1> to tensor<1x1x64x256xi1>
  %o, %l = attn.sdpa %q_t, %k_t, %v_t mask(%mask_t : tensor<1x1x64x256xi1>) causal : tensor<1x2x64x16xf32>, tensor<1x2x256x16xf32>, tensor<1x2x256x16xf32> -> tensor<1x2x64x16xf32>, tensor<1x2x64xf32>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x2x64x16xf32>, memref<1x2x64x16xf32>) -> ()
  bufferization.materialize_in_destination %l in restrict writable %lse : (tensor<1x2x64xf32>, memref<1x2x64xf32>) -> ()
  return
}
