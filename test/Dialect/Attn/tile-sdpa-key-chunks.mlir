// RUN: attn-opt %s --attn-tile-sdpa="block-q=64 block-kv=64 kv-splits=1" -split-input-file | FileCheck %s
// RUN: attn-opt %s --attn-tile-sdpa="block-q=64 block-kv=64 kv-splits=1 max-dynamic-kv=65536" -split-input-file | FileCheck %s --check-prefix=BOUNDED
// RUN: attn-opt %s --attn-tile-sdpa="block-q=64 block-kv=64 kv-splits=1 max-dynamic-kv=262144" -split-input-file | FileCheck %s --check-prefix=BOUND4
// RUN: not attn-opt %s --attn-tile-sdpa="block-q=64 block-kv=64 kv-splits=1 accuracy-splits=false" -split-input-file 2>&1 | FileCheck %s --check-prefix=REFUSED

// attn-tile-sdpa cuts a long key sequence into split-KV chunks of at most
// 2^16 keys (attn/runtime/KeyChunks.h), whatever kv-splits asks: the f32
// running sums drift past some 10^5 keys and stall at 2^24.

// A static Skv of 2^17 + 1 keys with kv-splits=1: ceildiv(2049 blocks,
// 1024 blocks per chunk) = 3 chunks, merged.
// CHECK-LABEL: func.func @static_long
// CHECK: scf.forall (%{{.+}}) in (1, 1, 1, 3) shared_outs
// CHECK: attn.merge_partials {{.+}} : tensor<3x1x8xf32>, tensor<3x1xf32>, tensor<3x1xf32> -> tensor<1x8xf32>
// BOUNDED-LABEL: func.func @static_long
// BOUNDED: attn.merge_partials
// REFUSED: error: 'attn.sdpa' op has 131073 keys; more than 65536 need split-KV chunks for f32-accurate sums, which this pipeline does not build
func.func @static_long(%q: tensor<1x1x1x8xf32>, %k: tensor<1x1x131073x8xf32>, %v: tensor<1x1x131073x8xf32>) -> tensor<1x1x1x8xf32> {
  %o = attn.sdpa %q, %k, %v : tensor<1x1x1x8xf32>, tensor<1x1x131073x8xf32>, tensor<1x1x131073x8xf32> -> tensor<1x1x1x8xf32>
  return %o : tensor<1x1x1x8xf32>
}

// -----

// One chunk's worth (2^16 keys) stays unsplit.
// CHECK-LABEL: func.func @static_one_chunk
// CHECK-NOT: attn.merge_partials
// CHECK: return
func.func @static_one_chunk(%q: tensor<1x1x1x8xf32>, %k: tensor<1x1x65536x8xf32>, %v: tensor<1x1x65536x8xf32>) -> tensor<1x1x1x8xf32> {
  %o = attn.sdpa %q, %k, %v : tensor<1x1x1x8xf32>, tensor<1x1x65536x8xf32>, tensor<1x1x65536x8xf32> -> tensor<1x1x1x8xf32>
  return %o : tensor<1x1x1x8xf32>
}

// -----

// A dynamic key length: the count is max(1, ceildiv(Skv, 64 x 1024)) in
// unsigned arith (what a Vulkan launch evaluates), the partials sized by
// it and the chunk bounds read from their extent. Where the target bounds
// the dynamic length to one chunk (max-dynamic-kv=65536), no split.
// CHECK-LABEL: func.func @dynamic
// CHECK: %[[SKV:.+]] = tensor.dim %{{.+}}, %{{.+}} : tensor<1x1x?x8xf32>
// CHECK: %[[KEYS:.+]] = arith.constant 65536 : index
// CHECK: %[[FLOOR:.+]] = arith.ceildivui %[[SKV]], %[[KEYS]] : index
// CHECK: %[[C1:.+]] = arith.constant 1 : index
// CHECK: %[[N:.+]] = arith.maxui %[[FLOOR]], %[[C1]] : index
// CHECK: tensor.empty(%[[N]]) : tensor<1x1x?x1x8xf32>
// CHECK: scf.forall (%{{.+}}) in (1, 1, 1, %[[N]]) shared_outs
// CHECK: attn.merge_partials {{.+}} : tensor<?x1x8xf32>, tensor<?x1xf32>, tensor<?x1xf32> -> tensor<1x8xf32>
// BOUNDED-LABEL: func.func @dynamic
// BOUNDED-NOT: attn.merge_partials
// BOUNDED: return
// A bound of 2^18 keys: the static count of its floor, 4 (what the cpu
// JIT builds; a longer launch goes to another kernel).
// BOUND4-LABEL: func.func @dynamic
// BOUND4-NOT: arith.ceildivui
// BOUND4: scf.forall (%{{.+}}) in (1, 1, 1, 4) shared_outs
// BOUND4: attn.merge_partials {{.+}} : tensor<4x1x8xf32>
// REFUSED: error: 'attn.sdpa' op has a dynamic key length, which may need split-KV chunks of 65536 keys for f32-accurate sums; this pipeline does not build them
func.func @dynamic(%q: tensor<1x1x1x8xf32>, %k: tensor<1x1x?x8xf32>, %v: tensor<1x1x?x8xf32>) -> tensor<1x1x1x8xf32> {
  %o = attn.sdpa %q, %k, %v : tensor<1x1x1x8xf32>, tensor<1x1x?x8xf32>, tensor<1x1x?x8xf32> -> tensor<1x1x1x8xf32>
  return %o : tensor<1x1x1x8xf32>
}

// -----

// A tiling asking for 2 chunks of 2^18 keys gets 4 (the floor wins); the
// unsplit alternative of a launch-time count (its runtime floors the count
// alike, and runs it only at a count of 1) is left unsplit.
// CHECK-LABEL: func.func @given_and_unsplit
// CHECK: scf.forall (%{{.+}}) in (1, 1, 1, 4) shared_outs
// CHECK: attn.merge_partials {{.+}} : tensor<4x1x8xf32>
// CHECK-NOT: attn.merge_partials
// CHECK: return
func.func @given_and_unsplit(%q: tensor<1x1x1x8xf32>, %k: tensor<1x1x262144x8xf32>, %v: tensor<1x1x262144x8xf32>) -> (tensor<1x1x1x8xf32>, tensor<1x1x1x8xf32>) {
  %o = attn.sdpa %q, %k, %v {tiling = #attn.tiling<block_q = 64, block_kv = 64, kv_splits = 2>} : tensor<1x1x1x8xf32>, tensor<1x1x262144x8xf32>, tensor<1x1x262144x8xf32> -> tensor<1x1x1x8xf32>
  %u = attn.sdpa %q, %k, %v {tiling = #attn.tiling<block_q = 64, block_kv = 64, kv_splits = 1>, attn.launch_when = "unsplit"} : tensor<1x1x1x8xf32>, tensor<1x1x262144x8xf32>, tensor<1x1x262144x8xf32> -> tensor<1x1x1x8xf32>
  return %o, %u : tensor<1x1x1x8xf32>, tensor<1x1x1x8xf32>
}
