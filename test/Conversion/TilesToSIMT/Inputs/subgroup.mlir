// The subgroup case of convert-attn-tiles-to-simt.mlir: causal, lse, a
// subgroup of 4 lanes per row.
func.func @subgroup(%q: memref<1x2x40x16xf32>, %k: memref<1x2x50x16xf32>, %v: memref<1x2x50x8xf32>, %out: memref<1x2x40x8xf32>, %lse: memref<1x2x40xf32>) {
  %qt = bufferization.to_tensor %q restrict : memref<1x2x40x16xf32> to tensor<1x2x40x16xf32>
  %kt = bufferization.to_tensor %k restrict : memref<1x2x50x16xf32> to tensor<1x2x50x16xf32>
  %vt = bufferization.to_tensor %v restrict : memref<1x2x50x8xf32> to tensor<1x2x50x8xf32>
  %o, %l = attn.sdpa %qt, %kt, %vt causal {tiling = #attn.tiling<block_q = 4, block_kv = 16, mapping = #attn.simt<rows = 4, lanes = 4, unroll = true>>}
      : tensor<1x2x40x16xf32>, tensor<1x2x50x16xf32>, tensor<1x2x50x8xf32> -> tensor<1x2x40x8xf32>, tensor<1x2x40xf32>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x2x40x8xf32>, memref<1x2x40x8xf32>) -> ()
  bufferization.materialize_in_destination %l in restrict writable %lse : (tensor<1x2x40xf32>, memref<1x2x40xf32>) -> ()
  return
}
