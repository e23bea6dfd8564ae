// Decode on the GPU machine's timed shape (bench/vulkan/device_run.sh): Sq 1,
// Hq 32 over Hkv 8, Skv 32k, D 128, f16.
func.func @decode(%q: tensor<1x32x1x128xf16>, %k: tensor<1x8x32768x128xf16>, %v: tensor<1x8x32768x128xf16>) -> tensor<1x32x1x128xf16> {
  %o = attn.sdpa %q, %k, %v : tensor<1x32x1x128xf16>, tensor<1x8x32768x128xf16>, tensor<1x8x32768x128xf16> -> tensor<1x32x1x128xf16>
  return %o : tensor<1x32x1x128xf16>
}
