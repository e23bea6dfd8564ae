// Split-KV with 8 chunks of 200 keys' 13 blocks (the merge-unroll RUN
// lines of convert-attn-tiles-to-simt.mlir).
func.func @split8(%q: memref<1x2x40x16xf32>, %k: memref<1x2x200x16xf32>, %v: memref<1x2x200x16xf32>, %out: memref<1x2x40x16xf32>) {
  %qt = bufferization.to_tensor %q restrict : memref<1x2x40x16xf32> to tensor<1x2x40x16xf32>
  %kt = bufferization.to_tensor %k restrict : memref<1x2x200x16xf32> to tensor<1x2x200x16xf32>
  %vt = bufferization.to_tensor %v restrict : memref<1x2x200x16xf32> to tensor<1x2x200x16xf32>
  %o = attn.sdpa %qt, %kt, %vt {tiling = #attn.tiling<block_q = 32, block_kv = 16, kv_splits = 8, mapping = #attn.simt<rows = 32, lanes = 1>>}
      : tensor<1x2x40x16xf32>, tensor<1x2x200x16xf32>, tensor<1x2x200x16xf32> -> tensor<1x2x40x16xf32>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x2x40x16xf32>, memref<1x2x40x16xf32>) -> ()
  return
}
