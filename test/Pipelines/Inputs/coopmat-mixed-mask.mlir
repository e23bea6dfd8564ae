// bf16 data with an f16 additive mask: on cooperative matrices the bf16
// kernel is written in f16 and retyped, so a genuine f16 mask cannot stay
// f16 (spirv-coopmat-kernel.mlir, MIXED).
func.func @mixed(%q: memref<1x1x32x16xbf16>, %k: memref<1x1x32x16xbf16>, %v: memref<1x1x32x16xbf16>, %mask: memref<1x1x32x32xf16>, %out: memref<1x1x32x16xbf16>) {
  %q_t = bufferization.to_tensor %q restrict : memref<1x1x32x16xbf16> to tensor<1x1x32x16xbf16>
  %k_t = bufferization.to_tensor %k restrict : memref<1x1x32x16xbf16> to tensor<1x1x32x16xbf16>
  %v_t = bufferization.to_tensor %v restrict : memref<1x1x32x16xbf16> to tensor<1x1x32x16xbf16>
  %m_t = bufferization.to_tensor %mask restrict : memref<1x1x32x32xf16> to tensor<1x1x32x32xf16>
  %o = attn.sdpa %q_t, %k_t, %v_t mask(%m_t : tensor<1x1x32x32xf16>) : tensor<1x1x32x16xbf16>, tensor<1x1x32x16xbf16>, tensor<1x1x32x16xbf16> -> tensor<1x1x32x16xbf16>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x1x32x16xbf16>, memref<1x1x32x16xbf16>) -> ()
  return
}
