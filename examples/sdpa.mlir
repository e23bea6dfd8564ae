// The example the README's main command compiles and runs: causal GQA
// attention (8 query heads sharing 2 key/value heads), f16, with lse.
func.func @attention(%q: tensor<2x8x512x64xf16>, %k: tensor<2x2x512x64xf16>,
                     %v: tensor<2x2x512x64xf16>)
    -> (tensor<2x8x512x64xf16>, tensor<2x8x512xf32>) {
  %out, %lse = attn.sdpa %q, %k, %v causal
      : tensor<2x8x512x64xf16>, tensor<2x2x512x64xf16>, tensor<2x2x512x64xf16>
      -> tensor<2x8x512x64xf16>, tensor<2x8x512xf32>
  return %out, %lse : tensor<2x8x512x64xf16>, tensor<2x8x512xf32>
}
