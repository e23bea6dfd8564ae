// A bf16 kernel source with dropout and lse (the coopmat kernel's dtypes:
// D and lengths multiples of 16).
func.func @attn_kernel(%q: memref<1x2x32x16xbf16>, %k: memref<1x2x64x16xbf16>, %v: memref<1x2x64x16xbf16>, %out: memref<1x2x32x16xbf16>, %lse: memref<1x2x32xf32>, %seed: i64) {
  %q_t = bufferization.to_tensor %q restrict : memref<1x2x32x16xbf16> to tensor<1x2x32x16xbf16>
  %k_t = bufferization.to_tensor %k restrict : memref<1x2x64x16xbf16> to tensor<1x2x64x16xbf16>
  %v_t = bufferization.to_tensor %v restrict : memref<1x2x64x16xbf16> to tensor<1x2x64x16xbf16>
  %o, %l = attn.sdpa %q_t, %k_t, %v_t causal dropout(0.2, seed %seed) : tensor<1x2x32x16xbf16>, tensor<1x2x64x16xbf16>, tensor<1x2x64x16xbf16> -> tensor<1x2x32x16xbf16>, tensor<1x2x32xf32>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x2x32x16xbf16>, memref<1x2x32x16xbf16>) -> ()
  bufferization.materialize_in_destination %l in restrict writable %lse : (tensor<1x2x32xf32>, memref<1x2x32xf32>) -> ()
  return
}
