// An invalid case of convert-attn-tiles-to-simt.mlir: pack_heads over 4
// query rows per head (which the cpu takes), where the GPU targets' packed
// views hold one.
func.func @packed_rows(%q: memref<1x4x4x16xf32>, %k: memref<1x2x50x16xf32>, %out: memref<1x4x4x16xf32>) {
  %qt = bufferization.to_tensor %q restrict : memref<1x4x4x16xf32> to tensor<1x4x4x16xf32>
  %kt = bufferization.to_tensor %k restrict : memref<1x2x50x16xf32> to tensor<1x2x50x16xf32>
  %o = attn.sdpa %qt, %kt, %kt {tiling = #attn.tiling<block_q = 8, block_kv = 16, pack_heads = true, mapping = #attn.simt<rows = 8, lanes = 1>>}
      : tensor<1x4x4x16xf32>, tensor<1x2x50x16xf32>, tensor<1x2x50x16xf32> -> tensor<1x4x4x16xf32>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x4x4x16xf32>, memref<1x4x4x16xf32>) -> ()
  return
}
