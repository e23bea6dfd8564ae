// The cooperative-matrix cases of configure-simt.mlir and
// convert-attn-tiles-to-simt.mlir: f16, GQA 4:2, D = 32, Dv = 16, causal,
// an f32 additive mask per (B, H), lse; 40 query rows (a tail tile of 8)
// and 50 keys (a tail block of 2 at block-kv 16).
func.func @coop(%q: memref<1x4x40x32xf16>, %k: memref<1x2x50x32xf16>, %v: memref<1x2x50x16xf16>, %mask: memref<1x4x40x50xf32>, %out: memref<1x4x40x16xf16>, %lse: memref<1x4x40xf32>) {
  %qt = bufferization.to_tensor %q restrict : memref<1x4x40x32xf16> to tensor<1x4x40x32xf16>
  %kt = bufferization.to_tensor %k restrict : memref<1x2x50x32xf16> to tensor<1x2x50x32xf16>
  %vt = bufferization.to_tensor %v restrict : memref<1x2x50x16xf16> to tensor<1x2x50x16xf16>
  %mt = bufferization.to_tensor %mask restrict : memref<1x4x40x50xf32> to tensor<1x4x40x50xf32>
  %o, %l = attn.sdpa %qt, %kt, %vt mask(%mt : tensor<1x4x40x50xf32>) causal
      : tensor<1x4x40x32xf16>, tensor<1x2x50x32xf16>, tensor<1x2x50x16xf16> -> tensor<1x4x40x16xf16>, tensor<1x4x40xf32>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x4x40x16xf16>, memref<1x4x40x16xf16>) -> ()
  bufferization.materialize_in_destination %l in restrict writable %lse : (tensor<1x4x40xf32>, memref<1x4x40xf32>) -> ()
  return
}
