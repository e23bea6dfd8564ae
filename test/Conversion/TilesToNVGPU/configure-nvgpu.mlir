// attn-configure-nvgpu: the tensor-core target's choice of tiling and
// mapping per op (geometry table: docs/NVIDIA.md), split-KV alternatives,
// ops it leaves alone, option errors.
// RUN: attn-opt %s -split-input-file -attn-configure-nvgpu | FileCheck %s
// RUN: attn-opt %s -split-input-file -attn-configure-nvgpu=chip=sm_80 | FileCheck %s --check-prefix=SM80
// RUN: attn-opt %s -split-input-file -attn-configure-nvgpu=kv-splits=4 | FileCheck %s --check-prefix=SPLIT
// RUN: attn-opt %s -split-input-file -attn-configure-nvgpu="warps=8 row-tiles=1 block-kv=64 stages=2" | FileCheck %s --check-prefix=FORCED
// RUN: not attn-opt %s -attn-configure-nvgpu=warps=3 2>&1 | FileCheck %s --check-prefix=BADOPT
// RUN: not attn-opt %s -attn-configure-nvgpu=block-kv=48 2>&1 | FileCheck %s --check-prefix=BADOPT
// RUN: not attn-opt %s -attn-configure-nvgpu=chip=sm_75 2>&1 | FileCheck %s --check-prefix=BADCHIP

// BADOPT: error: attn-configure-nvgpu: warps must be 0, 1, 2, 4 or 8, stages 0 or in [2, 4], kv-splits >= 1, row-tiles 0, 1 or 2 and block-kv 0, 16, 32 or 64
// BADOPT-NOT: see current operation
// BADCHIP: error: attn-configure-nvgpu: chip must be sm_80 or later (sm_<N> or sm_<N>a), got 'sm_75'

// D = 128 f16 without causal, a mask or dropout, on sm_90a: 4 warps of two
// m16 row tiles (128 query rows), 32-key blocks in a 3-stage ring (3 x 32
// x (128 + 128) x 2 = 49152 bytes) plus Q in its own 32768; static tiles,
// the lazy rescale at 8 (log2 units), P rounded to f16.
// CHECK-LABEL: func.func @d128
// CHECK: attn.sdpa {{.*}} {tiling = #attn.tiling<block_q = 128, block_kv = 32, static_tiles = true, rescale_threshold = 8, p_type = f16, mapping = #attn.mma_sync<warps = 4, row_tiles = 2, stages = 3, q_from_smem = true, shared_bytes = 81920>>}
// sm_80: 8 warps of one row tile over 64-key blocks, Q aliasing the last
// stage (2 x 64 x 256 x 2 = 65536 bytes)
// SM80-LABEL: func.func @d128
// SM80: mapping = #attn.mma_sync<warps = 8, row_tiles = 1, stages = 2, shared_bytes = 65536>
// kv-splits: the unsplit alternative, then the split one (its count
// chosen per launch); each materialized into %out
// SPLIT-LABEL: func.func @d128
// SPLIT-SAME: %[[OUT:[a-z0-9]+]]: memref<2x8x?x128xf16, strided<[?, ?, ?, 1], offset: ?>>) {
// SPLIT: %[[U:.+]] = attn.sdpa {{.*}} {attn.launch_when = "unsplit", tiling = #attn.tiling<block_q = 128, block_kv = 32, static_tiles
// SPLIT: %[[S:.+]] = attn.sdpa {{.*}} {attn.launch_when = "split", tiling = #attn.tiling<block_q = 128, block_kv = 32, kv_splits = 4, launch_splits = true, static_tiles
// SPLIT-DAG: bufferization.materialize_in_destination %[[U]] in restrict writable %[[OUT]]
// SPLIT-DAG: bufferization.materialize_in_destination %[[S]] in restrict writable %[[OUT]]
// FORCED-LABEL: func.func @d128
// FORCED: mapping = #attn.mma_sync<warps = 8, row_tiles = 1, stages = 2, shared_bytes = 65536>
func.func @d128(%q: memref<2x8x?x128xf16, strided<[?, ?, ?, 1], offset: ?>>,
                %k: memref<2x2x?x128xf16, strided<[?, ?, ?, 1], offset: ?>>,
                %v: memref<2x2x?x128xf16, strided<[?, ?, ?, 1], offset: ?>>,
                %out: memref<2x8x?x128xf16, strided<[?, ?, ?, 1], offset: ?>>) {
  %qt = bufferization.to_tensor %q restrict : memref<2x8x?x128xf16, strided<[?, ?, ?, 1], offset: ?>> to tensor<2x8x?x128xf16>
  %kt = bufferization.to_tensor %k restrict : memref<2x2x?x128xf16, strided<[?, ?, ?, 1], offset: ?>> to tensor<2x2x?x128xf16>
  %vt = bufferization.to_tensor %v restrict : memref<2x2x?x128xf16, strided<[?, ?, ?, 1], offset: ?>> to tensor<2x2x?x128xf16>
  %o = attn.sdpa %qt, %kt, %vt : tensor<2x8x?x128xf16>, tensor<2x2x?x128xf16>, tensor<2x2x?x128xf16> -> tensor<2x8x?x128xf16>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<2x8x?x128xf16>, memref<2x8x?x128xf16, strided<[?, ?, ?, 1], offset: ?>>) -> ()
  return
}

// -----

// Causal D = 32: two row tiles of 4 warps over 64-key blocks, Q in its own
// space after the 2-stage ring; heaviest first, with heads grouped by 16
// MiB of K and V.
// CHECK-LABEL: func.func @causal32
// CHECK: attn.sdpa {{.*}} causal {tiling = #attn.tiling<block_q = 128, block_kv = 64, static_tiles = true, rescale_threshold = 8, p_type = f16, heaviest_first = 16777216, mapping = #attn.mma_sync<warps = 4, row_tiles = 2, stages = 2, q_from_smem = true, shared_bytes = 24576>>}
func.func @causal32(%q: memref<1x2x100x32xf16>, %out: memref<1x2x100x32xf16>) {
  %qt = bufferization.to_tensor %q restrict : memref<1x2x100x32xf16> to tensor<1x2x100x32xf16>
  %o = attn.sdpa %qt, %qt, %qt causal : tensor<1x2x100x32xf16>, tensor<1x2x100x32xf16>, tensor<1x2x100x32xf16> -> tensor<1x2x100x32xf16>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x2x100x32xf16>, memref<1x2x100x32xf16>) -> ()
  return
}

// -----

// Decode (a static Sq = 1, GQA 4): the heads sharing a K/V head packed as
// the rows of one tile, two warps.
// CHECK-LABEL: func.func @decode
// CHECK: attn.sdpa {{.*}} {tiling = #attn.tiling<block_q = 32, block_kv = 64, static_tiles = true, pack_heads = true, rescale_threshold = 8, p_type = bf16, mapping = #attn.mma_sync<warps = 2, row_tiles = 1, stages = 2, shared_bytes = 65536>>}
func.func @decode(%q: memref<4x8x1x128xbf16>, %k: memref<4x2x?x128xbf16>, %out: memref<4x8x1x128xbf16>) {
  %qt = bufferization.to_tensor %q restrict : memref<4x8x1x128xbf16> to tensor<4x8x1x128xbf16>
  %kt = bufferization.to_tensor %k restrict : memref<4x2x?x128xbf16> to tensor<4x2x?x128xbf16>
  %o = attn.sdpa %qt, %kt, %kt : tensor<4x8x1x128xbf16>, tensor<4x2x?x128xbf16>, tensor<4x2x?x128xbf16> -> tensor<4x8x1x128xbf16>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<4x8x1x128xbf16>, memref<4x8x1x128xbf16>) -> ()
  return
}

// -----

// A mask and dropout at D = 128: 8 warps of one tile, Q from shared memory
// (its own space: 2 x 64 x 256 x 2 + 128 x 128 x 2 bytes).
// CHECK-LABEL: func.func @dropout
// CHECK: attn.sdpa {{.*}} {tiling = #attn.tiling<block_q = 128, block_kv = 64, static_tiles = true, rescale_threshold = 8, p_type = bf16, mapping = #attn.mma_sync<warps = 8, row_tiles = 1, stages = 2, q_from_smem = true, shared_bytes = 98304>>}
func.func @dropout(%q: memref<1x2x64x128xbf16>, %m: memref<1x1x64x64xi1>, %seed: i64, %out: memref<1x2x64x128xbf16>) {
  %qt = bufferization.to_tensor %q restrict : memref<1x2x64x128xbf16> to tensor<1x2x64x128xbf16>
  %mt = bufferization.to_tensor %m restrict : memref<1x1x64x64xi1> to tensor<1x1x64x64xi1>
  %o = attn.sdpa %qt, %qt, %qt mask(%mt : tensor<1x1x64x64xi1>) dropout(0.1, seed %seed) : tensor<1x2x64x128xbf16>, tensor<1x2x64x128xbf16>, tensor<1x2x64x128xbf16> -> tensor<1x2x64x128xbf16>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x2x64x128xbf16>, memref<1x2x64x128xbf16>) -> ()
  return
}

// -----

// Left alone: f32, D not a multiple of 16, an op on tensors that are not
// memrefs' (no destination-passing form), an op that already has a tiling.
// CHECK-LABEL: func.func @unsupported
// CHECK-NOT: tiling = #attn.tiling<block_q = 128
// CHECK: attn.sdpa {{.*}} {tiling = #attn.tiling<block_q = 16, block_kv = 16>}
// CHECK-NOT: mma_sync
// CHECK: return
func.func @unsupported(%q: memref<1x1x8x16xf32>, %out: memref<1x1x8x16xf32>,
                       %q8: memref<1x1x8x8xf16>, %out8: memref<1x1x8x8xf16>,
                       %t: tensor<1x1x8x16xf16>, %q16: memref<1x1x8x16xf16>,
                       %out16: memref<1x1x8x16xf16>) -> tensor<1x1x8x16xf16> {
  %qt = bufferization.to_tensor %q restrict : memref<1x1x8x16xf32> to tensor<1x1x8x16xf32>
  %o = attn.sdpa %qt, %qt, %qt : tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32> -> tensor<1x1x8x16xf32>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x1x8x16xf32>, memref<1x1x8x16xf32>) -> ()
  %q8t = bufferization.to_tensor %q8 restrict : memref<1x1x8x8xf16> to tensor<1x1x8x8xf16>
  %o8 = attn.sdpa %q8t, %q8t, %q8t : tensor<1x1x8x8xf16>, tensor<1x1x8x8xf16>, tensor<1x1x8x8xf16> -> tensor<1x1x8x8xf16>
  bufferization.materialize_in_destination %o8 in restrict writable %out8 : (tensor<1x1x8x8xf16>, memref<1x1x8x8xf16>) -> ()
  %ot = attn.sdpa %t, %t, %t : tensor<1x1x8x16xf16>, tensor<1x1x8x16xf16>, tensor<1x1x8x16xf16> -> tensor<1x1x8x16xf16>
  %q16t = bufferization.to_tensor %q16 restrict : memref<1x1x8x16xf16> to tensor<1x1x8x16xf16>
  %o16 = attn.sdpa %q16t, %q16t, %q16t {tiling = #attn.tiling<block_q = 16, block_kv = 16>} : tensor<1x1x8x16xf16>, tensor<1x1x8x16xf16>, tensor<1x1x8x16xf16> -> tensor<1x1x8x16xf16>
  bufferization.materialize_in_destination %o16 in restrict writable %out16 : (tensor<1x1x8x16xf16>, memref<1x1x8x16xf16>) -> ()
  return %ot : tensor<1x1x8x16xf16>
}
