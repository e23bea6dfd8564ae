// Dropout on the tiled SPIR-V variant, one key block (attn-fuzz seed 4,
// case 1483: the kernel's i64 seed argument failed to convert while the
// variant's target had no Int64).
func.func @tiled_dropout(%q: memref<1x17x7x2xf32>, %k: memref<1x17x8x2xf32>, %v: memref<1x17x8x256xf32>, %m: memref<1x17x7x8xf32>, %out: memref<1x17x7x256xf32>, %seed: i64) {
  %qt = bufferization.to_tensor %q restrict : memref<1x17x7x2xf32> to tensor<1x17x7x2xf32>
  %kt = bufferization.to_tensor %k restrict : memref<1x17x8x2xf32> to tensor<1x17x8x2xf32>
  %vt = bufferization.to_tensor %v restrict : memref<1x17x8x256xf32> to tensor<1x17x8x256xf32>
  %mt = bufferization.to_tensor %m restrict : memref<1x17x7x8xf32> to tensor<1x17x7x8xf32>
  %o = attn.sdpa %qt, %kt, %vt mask(%mt : tensor<1x17x7x8xf32>) causal dropout(0.1, seed %seed) : tensor<1x17x7x2xf32>, tensor<1x17x8x2xf32>, tensor<1x17x8x256xf32> -> tensor<1x17x7x256xf32>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x17x7x256xf32>, memref<1x17x7x256xf32>) -> ()
  return
}
