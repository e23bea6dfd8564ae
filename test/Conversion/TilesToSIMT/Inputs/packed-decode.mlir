// The packed-decode cases of configure-simt.mlir and
// convert-attn-tiles-to-simt.mlir: one query row (Sq = 1) of 8 query heads
// over 2 K/V heads (groups of 4), f16, D = Dv = 32, 100 keys, lse. @decode
// packs under pack-decode-heads; @decode_dropout does not (dropout's
// counter needs each row's own head), nor does @decode_masked.
func.func @decode(%q: memref<2x8x1x32xf16>, %k: memref<2x2x100x32xf16>, %v: memref<2x2x100x32xf16>, %out: memref<2x8x1x32xf16>, %lse: memref<2x8x1xf32>) {
  %qt = bufferization.to_tensor %q restrict : memref<2x8x1x32xf16> to tensor<2x8x1x32xf16>
  %kt = bufferization.to_tensor %k restrict : memref<2x2x100x32xf16> to tensor<2x2x100x32xf16>
  %vt = bufferization.to_tensor %v restrict : memref<2x2x100x32xf16> to tensor<2x2x100x32xf16>
  %o, %l = attn.sdpa %qt, %kt, %vt causal
      : tensor<2x8x1x32xf16>, tensor<2x2x100x32xf16>, tensor<2x2x100x32xf16> -> tensor<2x8x1x32xf16>, tensor<2x8x1xf32>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<2x8x1x32xf16>, memref<2x8x1x32xf16>) -> ()
  bufferization.materialize_in_destination %l in restrict writable %lse : (tensor<2x8x1xf32>, memref<2x8x1xf32>) -> ()
  return
}

func.func @decode_dropout(%q: memref<2x8x1x32xf16>, %k: memref<2x2x100x32xf16>, %v: memref<2x2x100x32xf16>, %out: memref<2x8x1x32xf16>, %seed: i64) {
  %qt = bufferization.to_tensor %q restrict : memref<2x8x1x32xf16> to tensor<2x8x1x32xf16>
  %kt = bufferization.to_tensor %k restrict : memref<2x2x100x32xf16> to tensor<2x2x100x32xf16>
  %vt = bufferization.to_tensor %v restrict : memref<2x2x100x32xf16> to tensor<2x2x100x32xf16>
  %o = attn.sdpa %qt, %kt, %vt dropout(0.25, seed %seed)
      : tensor<2x8x1x32xf16>, tensor<2x2x100x32xf16>, tensor<2x2x100x32xf16> -> tensor<2x8x1x32xf16>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<2x8x1x32xf16>, memref<2x8x1x32xf16>) -> ()
  return
}

func.func @decode_masked(%q: memref<2x8x1x32xf16>, %k: memref<2x2x100x32xf16>, %v: memref<2x2x100x32xf16>, %mask: memref<2x8x1x100xi1>, %out: memref<2x8x1x32xf16>) {
  %qt = bufferization.to_tensor %q restrict : memref<2x8x1x32xf16> to tensor<2x8x1x32xf16>
  %kt = bufferization.to_tensor %k restrict : memref<2x2x100x32xf16> to tensor<2x2x100x32xf16>
  %vt = bufferization.to_tensor %v restrict : memref<2x2x100x32xf16> to tensor<2x2x100x32xf16>
  %mt = bufferization.to_tensor %mask restrict : memref<2x8x1x100xi1> to tensor<2x8x1x100xi1>
  %o = attn.sdpa %qt, %kt, %vt mask(%mt : tensor<2x8x1x100xi1>)
      : tensor<2x8x1x32xf16>, tensor<2x2x100x32xf16>, tensor<2x2x100x32xf16> -> tensor<2x8x1x32xf16>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<2x8x1x32xf16>, memref<2x8x1x32xf16>) -> ()
  return
}
