// block_kv = 2^62 with dynamic sizes (issue 22): refused by validation.
func.func @huge(%q: tensor<1x1x?x16xf32>, %k: tensor<1x1x?x16xf32>, %v: tensor<1x1x?x16xf32>) -> tensor<1x1x?x16xf32> {
  %o = attn.sdpa %q, %k, %v {tiling = #attn.tiling<block_q = 64, block_kv = 4611686018427387904>} : tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32> -> tensor<1x1x?x16xf32>
  return %o : tensor<1x1x?x16xf32>
}
