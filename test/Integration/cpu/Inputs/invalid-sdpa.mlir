// Hq = 3 is not a multiple of Hkv = 2: the verifier must reject it.
func.func @bad(%q: tensor<1x3x4x8xf32>, %k: tensor<1x2x4x8xf32>) -> tensor<1x3x4x8xf32> {
  %a = attn.sdpa %q, %k, %k : tensor<1x3x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x3x4x8xf32>
  return %a : tensor<1x3x4x8xf32>
}
