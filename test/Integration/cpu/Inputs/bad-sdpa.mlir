// Two attn.sdpa ops: attn-run --input needs exactly one.
func.func @two(%q: tensor<1x1x4x8xf32>) -> (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) {
  %a = attn.sdpa %q, %q, %q : tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32> -> tensor<1x1x4x8xf32>
  %b = attn.sdpa %q, %q, %q : tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32> -> tensor<1x1x4x8xf32>
  return %a, %b : tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>
}
