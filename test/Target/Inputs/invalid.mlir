func.func @bad(%q: tensor<1x1x4x8xf16>, %k: tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf16> {
  %o = attn.sdpa %q, %k, %k : tensor<1x1x4x8xf16>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32> -> tensor<1x1x4x8xf16>
  return %o : tensor<1x1x4x8xf16>
}
