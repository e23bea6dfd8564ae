// convert-attn-tiles-to-nvgpu's diagnostics: a tiled form whose mapping it
// cannot honour is an error at the op, not a wrong kernel.
// RUN: attn-opt %s -split-input-file -attn-tile-sdpa -attn-decompose-online-attention -convert-attn-tiles-to-nvgpu -verify-diagnostics -o /dev/null

func.func @bad_rows(%q: memref<1x2x100x32xf16>, %out: memref<1x2x100x32xf16>) {
  %qt = bufferization.to_tensor %q restrict : memref<1x2x100x32xf16> to tensor<1x2x100x32xf16>
  // expected-error @+1 {{convert-attn-tiles-to-nvgpu: block_q 32 is not 16 x warps x row_tiles of the mapping}}
  %o = attn.sdpa %qt, %qt, %qt {tiling = #attn.tiling<block_q = 32, block_kv = 64, static_tiles = true, p_type = f16, mapping = #attn.mma_sync<warps = 4, row_tiles = 1, stages = 2, shared_bytes = 16384>>}
      : tensor<1x2x100x32xf16>, tensor<1x2x100x32xf16>, tensor<1x2x100x32xf16> -> tensor<1x2x100x32xf16>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x2x100x32xf16>, memref<1x2x100x32xf16>) -> ()
  return
}

// -----

func.func @returned(%q: memref<1x2x100x32xf16>) -> tensor<1x2x100x32xf16> {
  %qt = bufferization.to_tensor %q restrict : memref<1x2x100x32xf16> to tensor<1x2x100x32xf16>
  // expected-error @+1 {{expected each result of a tiled attention to be materialized into a memref}}
  %o = attn.sdpa %qt, %qt, %qt {tiling = #attn.tiling<block_q = 64, block_kv = 64, static_tiles = true, p_type = f16, mapping = #attn.mma_sync<warps = 4, row_tiles = 1, stages = 2, shared_bytes = 16384>>}
      : tensor<1x2x100x32xf16>, tensor<1x2x100x32xf16>, tensor<1x2x100x32xf16> -> tensor<1x2x100x32xf16>
  return %o : tensor<1x2x100x32xf16>
}

// -----

func.func @dynamic_tiles(%q: memref<1x2x100x32xf16>, %out: memref<1x2x100x32xf16>) {
  %qt = bufferization.to_tensor %q restrict : memref<1x2x100x32xf16> to tensor<1x2x100x32xf16>
  // expected-error @+1 {{convert-attn-tiles-to-nvgpu: the mapping needs static_tiles}}
  %o = attn.sdpa %qt, %qt, %qt {tiling = #attn.tiling<block_q = 64, block_kv = 64, p_type = f16, mapping = #attn.mma_sync<warps = 4, row_tiles = 1, stages = 2, shared_bytes = 16384>>}
      : tensor<1x2x100x32xf16>, tensor<1x2x100x32xf16>, tensor<1x2x100x32xf16> -> tensor<1x2x100x32xf16>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x2x100x32xf16>, memref<1x2x100x32xf16>) -> ()
  return
}

// -----

func.func @p_f32(%q: memref<1x2x100x32xf16>, %out: memref<1x2x100x32xf16>) {
  %qt = bufferization.to_tensor %q restrict : memref<1x2x100x32xf16> to tensor<1x2x100x32xf16>
  // expected-error @+1 {{convert-attn-tiles-to-nvgpu: the mapping needs p_type = the element type 'f16'}}
  %o = attn.sdpa %qt, %qt, %qt {tiling = #attn.tiling<block_q = 64, block_kv = 64, static_tiles = true, p_type = f32, mapping = #attn.mma_sync<warps = 4, row_tiles = 1, stages = 2, shared_bytes = 16384>>}
      : tensor<1x2x100x32xf16>, tensor<1x2x100x32xf16>, tensor<1x2x100x32xf16> -> tensor<1x2x100x32xf16>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x2x100x32xf16>, memref<1x2x100x32xf16>) -> ()
  return
}

// -----

func.func @small_smem(%q: memref<1x2x100x32xf16>, %out: memref<1x2x100x32xf16>) {
  %qt = bufferization.to_tensor %q restrict : memref<1x2x100x32xf16> to tensor<1x2x100x32xf16>
  // expected-error @+1 {{convert-attn-tiles-to-nvgpu: shared_bytes 8192 is less than the 16384 bytes of the K/V ring and Q}}
  %o = attn.sdpa %qt, %qt, %qt {tiling = #attn.tiling<block_q = 64, block_kv = 64, static_tiles = true, p_type = f16, mapping = #attn.mma_sync<warps = 4, row_tiles = 1, stages = 2, shared_bytes = 8192>>}
      : tensor<1x2x100x32xf16>, tensor<1x2x100x32xf16>, tensor<1x2x100x32xf16> -> tensor<1x2x100x32xf16>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x2x100x32xf16>, memref<1x2x100x32xf16>) -> ()
  return
}
