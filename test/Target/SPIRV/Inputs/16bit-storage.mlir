// An f16 attention on memrefs (attn-to-spirv-pipeline input; spirv-16bit-storage.mlir).
func.func @k(%q: memref<1x2x16x32xf16>, %k: memref<1x2x16x32xf16>, %v: memref<1x2x16x32xf16>, %out: memref<1x2x16x32xf16>) {
  %qt = bufferization.to_tensor %q restrict : memref<1x2x16x32xf16> to tensor<1x2x16x32xf16>
  %kt = bufferization.to_tensor %k restrict : memref<1x2x16x32xf16> to tensor<1x2x16x32xf16>
  %vt = bufferization.to_tensor %v restrict : memref<1x2x16x32xf16> to tensor<1x2x16x32xf16>
  %o = attn.sdpa %qt, %kt, %vt : tensor<1x2x16x32xf16>, tensor<1x2x16x32xf16>, tensor<1x2x16x32xf16> -> tensor<1x2x16x32xf16>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x2x16x32xf16>, memref<1x2x16x32xf16>) -> ()
  return
}
