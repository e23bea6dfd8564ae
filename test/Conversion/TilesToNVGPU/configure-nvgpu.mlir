// attn-configure-nvgpu: the tensor-core target's choice of tiling and
// mapping per op (geometry table: docs/NVIDIA.md), the alternatives by
// query length of a dynamic Sq, split-KV alternatives, ops it leaves
// alone, option errors.
// RUN: attn-opt %s -split-input-file -attn-configure-nvgpu | FileCheck %s
// RUN: attn-opt %s -split-input-file -attn-configure-nvgpu=chip=sm_80 | FileCheck %s --check-prefix=SM80
// RUN: attn-opt %s -split-input-file -attn-configure-nvgpu=kv-splits=4 | FileCheck %s --check-prefix=SPLIT
// RUN: attn-opt %s -split-input-file -attn-configure-nvgpu="warps=8 row-tiles=1 block-kv=64 stages=2" | FileCheck %s --check-prefix=FORCED
// RUN: attn-opt %s -split-input-file -attn-configure-nvgpu=decode-alternatives=false | FileCheck %s --check-prefix=NOALT
// RUN: not attn-opt %s -attn-configure-nvgpu=warps=3 2>&1 | FileCheck %s --check-prefix=BADOPT
// RUN: not attn-opt %s -attn-configure-nvgpu=block-kv=48 2>&1 | FileCheck %s --check-prefix=BADOPT
// RUN: not attn-opt %s -attn-configure-nvgpu=chip=sm_75 2>&1 | FileCheck %s --check-prefix=BADCHIP

// BADOPT: error: attn-configure-nvgpu: warps must be 0, 1, 2, 4 or 8, stages 0 or in [2, 4], kv-splits >= 1, row-tiles 0, 1 or 2 and block-kv 0, 16, 32 or 64
// BADOPT-NOT: see current operation
// BADCHIP: error: attn-configure-nvgpu: chip must be sm_80 or later (sm_<N> or sm_<N>a), got 'sm_75'

// D = 128 f16 without causal, a mask or dropout, on sm_90a, and a
// dynamic query length: three alternatives writing %out, each launched
// for its Sq range. Sq = 1: the op over memref.cast views of q and out
// with a static Sq of 1, configured as a static decode (the heads sharing
// a K/V head packed as the rows of one tile, two warps); 2 <= Sq <= 16:
// the geometry of a static Sq of 16 (two warps of one row tile, 64-key
// blocks); Sq >= 17: 4 warps of two m16 row tiles (128 query rows), 32-key
// blocks in a 3-stage ring (3 x 32 x (128 + 128) x 2 = 49152 bytes) plus Q
// in its own 32768; static tiles, the lazy rescale at 8 (log2 units), P
// rounded to f16.
// CHECK-LABEL: func.func @d128
// CHECK-SAME: %[[Q:[a-z0-9]+]]: memref<2x8x?x128xf16, strided<[?, ?, ?, 1], offset: ?>>,
// CHECK-SAME: %[[OUT:[a-z0-9]+]]: memref<2x8x?x128xf16, strided<[?, ?, ?, 1], offset: ?>>) {
// CHECK: %[[QT:.+]] = bufferization.to_tensor %[[Q]] restrict
// CHECK: %[[Q1:.+]] = memref.cast %[[Q]] : memref<2x8x?x128xf16, strided<[?, ?, ?, 1], offset: ?>> to memref<2x8x1x128xf16, strided<[?, ?, ?, 1], offset: ?>>
// CHECK: %[[QT1:.+]] = bufferization.to_tensor %[[Q1]] restrict : memref<2x8x1x128xf16, strided<[?, ?, ?, 1], offset: ?>> to tensor<2x8x1x128xf16>
// CHECK: %[[OUT1:.+]] = memref.cast %[[OUT]] : memref<2x8x?x128xf16, strided<[?, ?, ?, 1], offset: ?>> to memref<2x8x1x128xf16, strided<[?, ?, ?, 1], offset: ?>>
// CHECK: %[[A1:.+]] = attn.sdpa %[[QT1]], {{.*}} {attn.launch_when = "sq == 1", tiling = #attn.tiling<block_q = 32, block_kv = 64, static_tiles = true, pack_heads = true, rescale_threshold = 8, p_type = f16, mapping = #attn.mma_sync<warps = 2, row_tiles = 1, stages = 2, shared_bytes = 65536>>} : tensor<2x8x1x128xf16>, tensor<2x2x?x128xf16>, tensor<2x2x?x128xf16> -> tensor<2x8x1x128xf16>
// CHECK: %[[A16:.+]] = attn.sdpa %[[QT]], {{.*}} {attn.launch_when = "sq >= 2 && sq <= 16", tiling = #attn.tiling<block_q = 32, block_kv = 64, static_tiles = true, rescale_threshold = 8, p_type = f16, mapping = #attn.mma_sync<warps = 2, row_tiles = 1, stages = 2, shared_bytes = 65536>>}
// CHECK: %[[A:.+]] = attn.sdpa %[[QT]], {{.*}} {attn.launch_when = "sq >= 17", tiling = #attn.tiling<block_q = 128, block_kv = 32, static_tiles = true, rescale_threshold = 8, p_type = f16, mapping = #attn.mma_sync<warps = 4, row_tiles = 2, stages = 3, q_from_smem = true, shared_bytes = 81920>>}
// CHECK-DAG: bufferization.materialize_in_destination %[[A1]] in restrict writable %[[OUT1]]
// CHECK-DAG: bufferization.materialize_in_destination %[[A16]] in restrict writable %[[OUT]]
// CHECK-DAG: bufferization.materialize_in_destination %[[A]] in restrict writable %[[OUT]]
// CHECK-NOT: attn.sdpa
// CHECK: return
// Without the alternatives: the one geometry for every Sq.
// NOALT-LABEL: func.func @d128
// NOALT-NOT: memref.cast
// NOALT: attn.sdpa {{.*}} {tiling = #attn.tiling<block_q = 128, block_kv = 32, static_tiles = true, rescale_threshold = 8, p_type = f16, mapping = #attn.mma_sync<warps = 4, row_tiles = 2, stages = 3, q_from_smem = true, shared_bytes = 81920>>}
// NOALT-NOT: attn.sdpa
// NOALT: return
// sm_80: 8 warps of one row tile over 64-key blocks, Q aliasing the last
// stage (2 x 64 x 256 x 2 = 65536 bytes)
// SM80-LABEL: func.func @d128
// SM80: attn.launch_when = "sq == 1"
// SM80: attn.launch_when = "sq >= 2 && sq <= 16"
// SM80: attn.launch_when = "sq >= 17", {{.*}} mapping = #attn.mma_sync<warps = 8, row_tiles = 1, stages = 2, shared_bytes = 65536>
// kv-splits: each alternative cloned again into its unsplit kernel, then
// the split one (its count chosen per launch); each materialized into
// %out (the Sq = 1 ones through its view)
// SPLIT-LABEL: func.func @d128
// SPLIT-SAME: %[[OUT:[a-z0-9]+]]: memref<2x8x?x128xf16, strided<[?, ?, ?, 1], offset: ?>>) {
// SPLIT: %[[OUT1:.+]] = memref.cast %[[OUT]]
// SPLIT: %[[U1:.+]] = attn.sdpa {{.*}} {attn.launch_when = "sq == 1 && unsplit", tiling = #attn.tiling<block_q = 32, block_kv = 64, static_tiles = true, pack_heads
// SPLIT: %[[S1:.+]] = attn.sdpa {{.*}} {attn.launch_when = "sq == 1 && split", tiling = #attn.tiling<block_q = 32, block_kv = 64, kv_splits = 4, launch_splits = true, static_tiles = true, pack_heads
// SPLIT: bufferization.materialize_in_destination %[[U1]] in restrict writable %[[OUT1]]
// SPLIT: %[[U16:.+]] = attn.sdpa {{.*}} {attn.launch_when = "sq >= 2 && sq <= 16 && unsplit", tiling = #attn.tiling<block_q = 32, block_kv = 64, static_tiles
// SPLIT: %[[S16:.+]] = attn.sdpa {{.*}} {attn.launch_when = "sq >= 2 && sq <= 16 && split", tiling = #attn.tiling<block_q = 32, block_kv = 64, kv_splits = 4, launch_splits = true, static_tiles
// SPLIT: bufferization.materialize_in_destination %[[U16]] in restrict writable %[[OUT]]
// SPLIT: %[[U:.+]] = attn.sdpa {{.*}} {attn.launch_when = "sq >= 17 && unsplit", tiling = #attn.tiling<block_q = 128, block_kv = 32, static_tiles
// SPLIT: %[[S:.+]] = attn.sdpa {{.*}} {attn.launch_when = "sq >= 17 && split", tiling = #attn.tiling<block_q = 128, block_kv = 32, kv_splits = 4, launch_splits = true, static_tiles
// SPLIT-DAG: bufferization.materialize_in_destination %[[S1]] in restrict writable %[[OUT1]]
// SPLIT-DAG: bufferization.materialize_in_destination %[[S16]] in restrict writable %[[OUT]]
// SPLIT-DAG: bufferization.materialize_in_destination %[[U]] in restrict writable %[[OUT]]
// SPLIT-DAG: bufferization.materialize_in_destination %[[S]] in restrict writable %[[OUT]]
// Forced options: the Sq <= 16 geometry is the default's, so no
// alternative of its own; Sq = 1 still packs (8 warps, as a static Sq = 1
// with these options).
// FORCED-LABEL: func.func @d128
// FORCED: attn.launch_when = "sq == 1", tiling = #attn.tiling<block_q = 128, block_kv = 64, static_tiles = true, pack_heads = true
// FORCED: attn.launch_when = "sq >= 2", tiling = {{.*}} mapping = #attn.mma_sync<warps = 8, row_tiles = 1, stages = 2, shared_bytes = 65536>
// FORCED-NOT: attn.sdpa
// FORCED: return
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

// A dynamic Sq, causal with lse at D = 128 (bf16): the Sq = 1 alternative
// views q, out and lse with a static Sq of 1 (packed: causal is moot for
// one query row); Sq <= 16 two warps of one row tile with Q read from
// shared memory (causal at D > 64: held in registers it spilled), its own
// 8 KB after the 2 x 64 x 256 x 2 ring; the rest the causal single
// kernel with lse (one row tile of 4 warps, 64-key blocks).
// CHECK-LABEL: func.func @causal_lse
// CHECK-DAG: %[[O1:.+]] = memref.cast %{{.*}} : memref<?x?x?x128xbf16> to memref<?x?x1x128xbf16>
// CHECK-DAG: %[[L1:.+]] = memref.cast %{{.*}} : memref<?x?x?xf32> to memref<?x?x1xf32>
// CHECK: %[[A1O:[a-z0-9_]+]], %[[A1L:[a-z0-9_]+]] = attn.sdpa {{.*}} causal {attn.launch_when = "sq == 1", tiling = #attn.tiling<block_q = 32, block_kv = 64, static_tiles = true, pack_heads = true, rescale_threshold = 8, p_type = bf16, mapping = #attn.mma_sync<warps = 2, row_tiles = 1, stages = 2, shared_bytes = 65536>>} : tensor<?x?x1x128xbf16>, tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16> -> tensor<?x?x1x128xbf16>, tensor<?x?x1xf32>
// CHECK: attn.sdpa {{.*}} causal {attn.launch_when = "sq >= 2 && sq <= 16", tiling = #attn.tiling<block_q = 32, block_kv = 64, static_tiles = true, rescale_threshold = 8, p_type = bf16, heaviest_first = 16777216, mapping = #attn.mma_sync<warps = 2, row_tiles = 1, stages = 2, q_from_smem = true, shared_bytes = 73728>>}
// CHECK: attn.sdpa {{.*}} causal {attn.launch_when = "sq >= 17", tiling = #attn.tiling<block_q = 64, block_kv = 64, {{.*}} mapping = #attn.mma_sync<warps = 4, row_tiles = 1, stages = 2, shared_bytes = 65536>>}
// CHECK-DAG: bufferization.materialize_in_destination %[[A1O]] in restrict writable %[[O1]]
// CHECK-DAG: bufferization.materialize_in_destination %[[A1L]] in restrict writable %[[L1]]
// CHECK: return
func.func @causal_lse(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                      %out: memref<?x?x?x128xbf16>, %lse: memref<?x?x?xf32>) {
  %qt = bufferization.to_tensor %q restrict : memref<?x?x?x128xbf16> to tensor<?x?x?x128xbf16>
  %kt = bufferization.to_tensor %k restrict : memref<?x?x?x128xbf16> to tensor<?x?x?x128xbf16>
  %o, %l = attn.sdpa %qt, %kt, %kt causal : tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16> -> tensor<?x?x?x128xbf16>, tensor<?x?x?xf32>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<?x?x?x128xbf16>, memref<?x?x?x128xbf16>) -> ()
  bufferization.materialize_in_destination %l in restrict writable %lse : (tensor<?x?x?xf32>, memref<?x?x?xf32>) -> ()
  return
}

// -----

// A dynamic Sq with a mask (or dropout): one geometry for every Sq, no
// alternatives (the decode geometries' registers were measured without
// them).
// CHECK-LABEL: func.func @masked
// CHECK-NOT: memref.cast
// CHECK-NOT: attn.launch_when
// CHECK: attn.sdpa {{.*}} mask(%{{.*}} : tensor<1x1x?x?xi1>) {tiling = #attn.tiling<block_q = 64, block_kv = 64, {{.*}} mapping = #attn.mma_sync<warps = 4, row_tiles = 1, stages = 2, shared_bytes = 32768>>}
// CHECK-NOT: attn.sdpa
// CHECK: return
func.func @masked(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
                  %m: memref<1x1x?x?xi1>, %out: memref<?x?x?x64xbf16>) {
  %qt = bufferization.to_tensor %q restrict : memref<?x?x?x64xbf16> to tensor<?x?x?x64xbf16>
  %kt = bufferization.to_tensor %k restrict : memref<?x?x?x64xbf16> to tensor<?x?x?x64xbf16>
  %mt = bufferization.to_tensor %m restrict : memref<1x1x?x?xi1> to tensor<1x1x?x?xi1>
  %o = attn.sdpa %qt, %kt, %kt mask(%mt : tensor<1x1x?x?xi1>) : tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16> -> tensor<?x?x?x64xbf16>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<?x?x?x64xbf16>, memref<?x?x?x64xbf16>) -> ()
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
