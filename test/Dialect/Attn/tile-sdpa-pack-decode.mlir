// RUN: attn-opt %s --attn-tile-sdpa="block-q=64 block-kv=64 kv-splits=1 pack-decode-heads" -split-input-file | FileCheck %s
// RUN: attn-opt %s --attn-tile-sdpa="block-q=64 block-kv=64 kv-splits=1" -split-input-file | FileCheck %s --check-prefix=OFF
// RUN: attn-opt %s --attn-tile-sdpa="block-q=64 block-kv=64 kv-splits=1 pack-decode-heads" --canonicalize -split-input-file | FileCheck %s --check-prefix=CANON

// pack-decode-heads: a GQA decode step (Sq = 1, Hq = 4 Hkv, no mask) is
// tiled over (B, Hkv, rows): the four query heads of a K/V head are one
// tile's rows (block_q clamped to them), so the key loop reads that head's
// K and V once for all four.
// CHECK-LABEL: func.func @gqa_decode
// CHECK: tensor.expand_shape %{{.+}} {{\[\[}}0], [1, 2], [3], [4]] output_shape [2, 2, 4, 1, 64] : tensor<2x8x1x64xf32> into tensor<2x2x4x1x64xf32>
// CHECK: %[[Q:.+]] = tensor.collapse_shape %{{.+}} {{\[\[}}0], [1], [2, 3], [4]] : tensor<2x2x4x1x64xf32> into tensor<2x2x4x64xf32>
// CHECK: scf.forall (%[[B:.+]], %[[HKV:.+]], %[[QB:.+]], %{{.+}}) in (2, 2, 1, %{{.+}})
// CHECK: tensor.extract_slice %[[Q]][%[[B]], %[[HKV]], %{{.+}}, 0] [1, 1, 4, 64]
// CHECK: attn.online_attention {{.+}} packed(%{{.+}}) {{.+}} : tensor<4x64xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<4x64xf32>, tensor<4xf32>, tensor<4xf32>
// CHECK: {attn.tiling = #attn.tiling<block_q = 4, block_kv = 64, pack_heads = true>}
// CHECK: tensor.collapse_shape %{{.+}} {{\[\[}}0], [1, 2], [3], [4]] : tensor<2x2x4x1x64xf32> into tensor<2x8x1x64xf32>
// OFF-LABEL: func.func @gqa_decode
// OFF-NOT: pack_heads
// OFF: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) in (2, 8, 1, %{{.+}})
// OFF-NOT: pack_heads
func.func @gqa_decode(%q: tensor<2x8x1x64xf32>, %k: tensor<2x2x?x64xf32>, %v: tensor<2x2x?x64xf32>) -> tensor<2x8x1x64xf32> {
  %o = attn.sdpa %q, %k, %v : tensor<2x8x1x64xf32>, tensor<2x2x?x64xf32>, tensor<2x2x?x64xf32> -> tensor<2x8x1x64xf32>
  return %o : tensor<2x8x1x64xf32>
}

// -----

// A speculative-decode step (Sq = 3, not causal) packs too: the group's
// four heads x three rows are one tile of 12 rows (head-major: row r is
// head r / 3, query row r mod 3), the step told the query length.
// CHECK-LABEL: func.func @gqa_decode_rows
// CHECK: tensor.expand_shape %{{.+}} {{\[\[}}0], [1, 2], [3], [4]] output_shape [2, 2, 4, 3, 64] : tensor<2x8x3x64xf32> into tensor<2x2x4x3x64xf32>
// CHECK: %[[Q:.+]] = tensor.collapse_shape %{{.+}} {{\[\[}}0], [1], [2, 3], [4]] : tensor<2x2x4x3x64xf32> into tensor<2x2x12x64xf32>
// CHECK: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) in (2, 2, 1, %{{.+}})
// CHECK: %[[SQ:.+]] = arith.constant 3 : index
// CHECK: attn.online_attention {{.+}} packed(%[[SQ]]) {{.+}} : tensor<12x64xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<12x64xf32>, tensor<12xf32>, tensor<12xf32>
// CHECK: {attn.tiling = #attn.tiling<block_q = 12, block_kv = 64, pack_heads = true>}
// CHECK: tensor.collapse_shape %{{.+}} {{\[\[}}0], [1, 2], [3], [4]] : tensor<2x2x4x3x64xf32> into tensor<2x8x3x64xf32>
func.func @gqa_decode_rows(%q: tensor<2x8x3x64xf32>, %k: tensor<2x2x?x64xf32>, %v: tensor<2x2x?x64xf32>) -> tensor<2x8x3x64xf32> {
  %o = attn.sdpa %q, %k, %v : tensor<2x8x3x64xf32>, tensor<2x2x?x64xf32>, tensor<2x2x?x64xf32> -> tensor<2x8x3x64xf32>
  return %o : tensor<2x8x3x64xf32>
}

// -----

// Not a packed decode step: a mask (its rows would have to be gathered
// per head), more than one query row under causal (each head's rows would
// need their own diagonal), more than 16 query rows, no GQA group, a
// dynamic head count, a dynamic query length.
// CHECK-LABEL: func.func @not_packed
// CHECK-NOT: pack_heads
// CHECK: return
func.func @not_packed(%q: tensor<2x8x1x64xf32>, %k: tensor<2x2x?x64xf32>, %v: tensor<2x2x?x64xf32>, %m: tensor<2x8x1x?xi1>,
                      %q2: tensor<2x8x2x64xf32>, %q3: tensor<2x2x1x64xf32>, %q4: tensor<2x?x1x64xf32>,
                      %q5: tensor<2x8x17x64xf32>, %q6: tensor<2x8x?x64xf32>) -> (tensor<2x8x1x64xf32>, tensor<2x8x2x64xf32>, tensor<2x2x1x64xf32>, tensor<2x?x1x64xf32>, tensor<2x8x17x64xf32>, tensor<2x8x?x64xf32>) {
  %a = attn.sdpa %q, %k, %v mask(%m : tensor<2x8x1x?xi1>) : tensor<2x8x1x64xf32>, tensor<2x2x?x64xf32>, tensor<2x2x?x64xf32> -> tensor<2x8x1x64xf32>
  %b = attn.sdpa %q2, %k, %v causal : tensor<2x8x2x64xf32>, tensor<2x2x?x64xf32>, tensor<2x2x?x64xf32> -> tensor<2x8x2x64xf32>
  %c = attn.sdpa %q3, %k, %v : tensor<2x2x1x64xf32>, tensor<2x2x?x64xf32>, tensor<2x2x?x64xf32> -> tensor<2x2x1x64xf32>
  %d = attn.sdpa %q4, %k, %v : tensor<2x?x1x64xf32>, tensor<2x2x?x64xf32>, tensor<2x2x?x64xf32> -> tensor<2x?x1x64xf32>
  %e = attn.sdpa %q5, %k, %v : tensor<2x8x17x64xf32>, tensor<2x2x?x64xf32>, tensor<2x2x?x64xf32> -> tensor<2x8x17x64xf32>
  %f = attn.sdpa %q6, %k, %v : tensor<2x8x?x64xf32>, tensor<2x2x?x64xf32>, tensor<2x2x?x64xf32> -> tensor<2x8x?x64xf32>
  return %a, %b, %c, %d, %e, %f : tensor<2x8x1x64xf32>, tensor<2x8x2x64xf32>, tensor<2x2x1x64xf32>, tensor<2x?x1x64xf32>, tensor<2x8x17x64xf32>, tensor<2x8x?x64xf32>
}

// -----

// Results typed more loosely than the operands (a dynamic batch where q's
// is 16), or the other way: the unpacking reshape takes each extent as
// its type has it (a known 16 as a value for a `?`, a static extent as
// such), so the canonicalizer that follows sees well-formed reshapes (a
// static size for the dynamic dim crashed it: found by attn-fuzz).
// CANON-LABEL: func.func @loose_result
// CANON: tensor.expand_shape %{{.+}} {{\[\[}}0], [1], [2, 3], [4]] output_shape [2, 2, 4, 3, 64] : tensor<2x2x12x64xf32> into tensor<2x2x4x3x64xf32>
// CANON: return %{{.+}} : tensor<?x8x3x64xf32>
// CANON-LABEL: func.func @loose_query
// CANON: tensor.expand_shape %{{.+}} {{\[\[}}0], [1], [2, 3], [4]] output_shape [2, 2, 4, 3, 64] : tensor<2x2x12x64xf32> into tensor<2x2x4x3x64xf32>
func.func @loose_result(%q: tensor<2x8x3x64xf32>, %k: tensor<2x2x?x64xf32>, %v: tensor<2x2x?x64xf32>) -> tensor<?x8x3x64xf32> {
  %o = attn.sdpa %q, %k, %v : tensor<2x8x3x64xf32>, tensor<2x2x?x64xf32>, tensor<2x2x?x64xf32> -> tensor<?x8x3x64xf32>
  return %o : tensor<?x8x3x64xf32>
}
func.func @loose_query(%q: tensor<?x8x3x64xf32>, %k: tensor<2x2x?x64xf32>, %v: tensor<2x2x?x64xf32>) -> tensor<2x8x3x64xf32> {
  %o = attn.sdpa %q, %k, %v : tensor<?x8x3x64xf32>, tensor<2x2x?x64xf32>, tensor<2x2x?x64xf32> -> tensor<2x8x3x64xf32>
  return %o : tensor<2x8x3x64xf32>
}
