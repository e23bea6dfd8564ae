func.func @dyn(%q: tensor<1x4x?x32xbf16>, %k: tensor<1x1x?x32xbf16>, %v: tensor<1x1x?x32xbf16>) -> tensor<1x4x?x32xbf16> {
  %o = attn.sdpa %q, %k, %v causal scale(0.2) : tensor<1x4x?x32xbf16>, tensor<1x1x?x32xbf16>, tensor<1x1x?x32xbf16> -> tensor<1x4x?x32xbf16>
  return %o : tensor<1x4x?x32xbf16>
}
