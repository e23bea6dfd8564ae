func.func @attn_kernel(%q: memref<1x2x32x16xf32>, %k: memref<1x2x40x16xf32>, %v: memref<1x2x40x16xf32>, %out: memref<1x2x32x16xf32>, %seed: i64) {
  %q_t = bufferization.to_tensor %q restrict : memref<1x2x32x16xf32> to tensor<1x2x32x16xf32>
  %k_t = bufferization.to_tensor %k restrict : memref<1x2x40x16xf32> to tensor<1x2x40x16xf32>
  %v_t = bufferization.to_tensor %v restrict : memref<1x2x40x16xf32> to tensor<1x2x40x16xf32>
  %o = attn.sdpa %q_t, %k_t, %v_t dropout(0.2, seed %seed) : tensor<1x2x32x16xf32>, tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32> -> tensor<1x2x32x16xf32>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x2x32x16xf32>, memref<1x2x32x16xf32>) -> ()
  return
}
