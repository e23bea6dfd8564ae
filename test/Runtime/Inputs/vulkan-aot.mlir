// An attn.sdpa on a function's tensors for vulkan-aot.test: causal GQA
// 4:2, Sq 48 < Skv 80 (bottom-right causal), D 32, with lse.
func.func @attention(%q: tensor<1x4x48x32xf32>, %k: tensor<1x2x80x32xf32>,
                     %v: tensor<1x2x80x32xf32>)
    -> (tensor<1x4x48x32xf32>, tensor<1x4x48xf32>) {
  %out, %lse = attn.sdpa %q, %k, %v causal
      : tensor<1x4x48x32xf32>, tensor<1x2x80x32xf32>, tensor<1x2x80x32xf32>
      -> tensor<1x4x48x32xf32>, tensor<1x4x48xf32>
  return %out, %lse : tensor<1x4x48x32xf32>, tensor<1x4x48xf32>
}
