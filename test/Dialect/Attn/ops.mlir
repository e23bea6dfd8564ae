// RUN: attn-opt %s | attn-opt | FileCheck %s
// RUN: attn-opt %s --mlir-print-op-generic | attn-opt | FileCheck %s

// CHECK-LABEL: func.func @sdpa_plain(
// CHECK-SAME: %[[Q:[^:]+]]: tensor<2x8x16x64xf16>, %[[K:[^:]+]]: tensor<2x2x32x64xf16>, %[[V:[^:]+]]: tensor<2x2x32x64xf16>)
// CHECK: %[[O:.+]] = attn.sdpa %[[Q]], %[[K]], %[[V]] : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16> -> tensor<2x8x16x64xf16>
// CHECK: return %[[O]]
func.func @sdpa_plain(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>) -> tensor<2x8x16x64xf16> {
  %o = attn.sdpa %q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16> -> tensor<2x8x16x64xf16>
  return %o : tensor<2x8x16x64xf16>
}

// CHECK-LABEL: func.func @sdpa_bool_mask(
// CHECK: attn.sdpa %{{.+}}, %{{.+}}, %{{.+}} mask(%{{.+}} : tensor<1x1x16x32xi1>) : tensor<2x8x16x64xbf16>
func.func @sdpa_bool_mask(%q: tensor<2x8x16x64xbf16>, %k: tensor<2x8x32x64xbf16>, %v: tensor<2x8x32x64xbf16>, %m: tensor<1x1x16x32xi1>) -> tensor<2x8x16x64xbf16> {
  %o = attn.sdpa %q, %k, %v mask(%m : tensor<1x1x16x32xi1>) : tensor<2x8x16x64xbf16>, tensor<2x8x32x64xbf16>, tensor<2x8x32x64xbf16> -> tensor<2x8x16x64xbf16>
  return %o : tensor<2x8x16x64xbf16>
}

// CHECK-LABEL: func.func @sdpa_additive_mask(
// CHECK: attn.sdpa %{{.+}}, %{{.+}}, %{{.+}} mask(%{{.+}} : tensor<2x8x16x32xf32>) : tensor<2x8x16x64xf32>
func.func @sdpa_additive_mask(%q: tensor<2x8x16x64xf32>, %k: tensor<2x8x32x64xf32>, %v: tensor<2x8x32x64xf32>, %m: tensor<2x8x16x32xf32>) -> tensor<2x8x16x64xf32> {
  %o = attn.sdpa %q, %k, %v mask(%m : tensor<2x8x16x32xf32>) : tensor<2x8x16x64xf32>, tensor<2x8x32x64xf32>, tensor<2x8x32x64xf32> -> tensor<2x8x16x64xf32>
  return %o : tensor<2x8x16x64xf32>
}

// CHECK-LABEL: func.func @sdpa_causal_scale(
// CHECK: attn.sdpa %{{.+}}, %{{.+}}, %{{.+}} causal scale(1.250000e-01) : tensor<1x4x16x64xf16>
func.func @sdpa_causal_scale(%q: tensor<1x4x16x64xf16>, %k: tensor<1x4x32x64xf16>, %v: tensor<1x4x32x64xf16>) -> tensor<1x4x16x64xf16> {
  %o = attn.sdpa %q, %k, %v causal scale(0.125) : tensor<1x4x16x64xf16>, tensor<1x4x32x64xf16>, tensor<1x4x32x64xf16> -> tensor<1x4x16x64xf16>
  return %o : tensor<1x4x16x64xf16>
}

// CHECK-LABEL: func.func @sdpa_dropout_lse(
// CHECK-SAME: %[[SEED:[^:]+]]: i64)
// CHECK: %[[O:.+]], %[[L:.+]] = attn.sdpa %{{.+}}, %{{.+}}, %{{.+}} mask(%{{.+}} : tensor<1x1x128x256xi1>) causal scale(1.250000e-01) dropout(1.000000e-01, seed %[[SEED]]) : tensor<2x8x128x64xf16>, tensor<2x2x256x64xf16>, tensor<2x2x256x64xf16> -> tensor<2x8x128x64xf16>, tensor<2x8x128xf32>
// CHECK: return %[[O]], %[[L]]
func.func @sdpa_dropout_lse(%q: tensor<2x8x128x64xf16>, %k: tensor<2x2x256x64xf16>, %v: tensor<2x2x256x64xf16>, %m: tensor<1x1x128x256xi1>, %seed: i64) -> (tensor<2x8x128x64xf16>, tensor<2x8x128xf32>) {
  %out, %lse = attn.sdpa %q, %k, %v mask(%m : tensor<1x1x128x256xi1>)
      causal scale(0.125) dropout(0.1, seed %seed)
      : tensor<2x8x128x64xf16>, tensor<2x2x256x64xf16>, tensor<2x2x256x64xf16>
      -> tensor<2x8x128x64xf16>, tensor<2x8x128xf32>
  return %out, %lse : tensor<2x8x128x64xf16>, tensor<2x8x128xf32>
}

// CHECK-LABEL: func.func @sdpa_tiling(
// CHECK: attn.sdpa %{{.+}}, %{{.+}}, %{{.+}} {tiling = #attn.tiling<block_q = 64, block_kv = 32, kv_splits = 4>} : tensor<1x4x128x64xf32>
// CHECK: attn.sdpa %{{.+}}, %{{.+}}, %{{.+}} {tiling = #attn.tiling<block_q = 16, block_kv = 16>} : tensor<1x4x128x64xf32>
func.func @sdpa_tiling(%q: tensor<1x4x128x64xf32>, %k: tensor<1x4x128x64xf32>, %v: tensor<1x4x128x64xf32>) -> (tensor<1x4x128x64xf32>, tensor<1x4x128x64xf32>) {
  %o = attn.sdpa %q, %k, %v {tiling = #attn.tiling<block_q = 64, block_kv = 32, kv_splits = 4>} : tensor<1x4x128x64xf32>, tensor<1x4x128x64xf32>, tensor<1x4x128x64xf32> -> tensor<1x4x128x64xf32>
  // kv_splits defaults to 1 (and is elided when printed)
  %p = attn.sdpa %q, %k, %v {tiling = #attn.tiling<block_q = 16, block_kv = 16>} : tensor<1x4x128x64xf32>, tensor<1x4x128x64xf32>, tensor<1x4x128x64xf32> -> tensor<1x4x128x64xf32>
  return %o, %p : tensor<1x4x128x64xf32>, tensor<1x4x128x64xf32>
}

// CHECK-LABEL: func.func @sdpa_dynamic(
// CHECK: attn.sdpa %{{.+}}, %{{.+}}, %{{.+}} mask(%{{.+}} : tensor<?x?x?x?xi1>) causal : tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16>, tensor<?x?x?x32xf16> -> tensor<?x?x?x32xf16>, tensor<?x?x?xf32>
func.func @sdpa_dynamic(%q: tensor<?x?x?x64xf16>, %k: tensor<?x?x?x64xf16>, %v: tensor<?x?x?x32xf16>, %m: tensor<?x?x?x?xi1>) -> (tensor<?x?x?x32xf16>, tensor<?x?x?xf32>) {
  %o, %l = attn.sdpa %q, %k, %v mask(%m : tensor<?x?x?x?xi1>) causal : tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16>, tensor<?x?x?x32xf16> -> tensor<?x?x?x32xf16>, tensor<?x?x?xf32>
  return %o, %l : tensor<?x?x?x32xf16>, tensor<?x?x?xf32>
}

// CHECK-LABEL: func.func @online_attention(
// CHECK: %{{.+}}, %{{.+}}, %{{.+}} = attn.online_attention q(%{{.+}}) k(%{{.+}}) v(%{{.+}}) state(%{{.+}}, %{{.+}}, %{{.+}}) at(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) scale(1.250000e-01) : tensor<64x64xf16>, tensor<?x64xf16>, tensor<?x64xf16> -> tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>
// CHECK: attn.online_attention q(%{{.+}}) k(%{{.+}}) v(%{{.+}}) mask(%{{.+}} : tensor<64x?xi1>) state(%{{.+}}, %{{.+}}, %{{.+}}) at(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) causal(%{{.+}}) scale(1.250000e-01) dropout(2.000000e-01, seed %{{.+}}) : tensor<64x64xf16>
func.func @online_attention(%q: tensor<64x64xf16>, %k: tensor<?x64xf16>, %v: tensor<?x64xf16>, %m: tensor<64x?xi1>,
                            %acc: tensor<64x64xf32>, %max: tensor<64xf32>, %sum: tensor<64xf32>,
                            %b: index, %h: index, %i0: index, %j0: index, %diag: index, %seed: i64)
    -> (tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>) {
  %a, %mx, %s = attn.online_attention q(%q) k(%k) v(%v) state(%acc, %max, %sum) at(%b, %h, %i0, %j0)
      scale(0.125) : tensor<64x64xf16>, tensor<?x64xf16>, tensor<?x64xf16>
      -> tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>
  %a2, %m2, %s2 = attn.online_attention q(%q) k(%k) v(%v) mask(%m : tensor<64x?xi1>) state(%a, %mx, %s)
      at(%b, %h, %i0, %j0) causal(%diag) scale(0.125) dropout(0.2, seed %seed)
      : tensor<64x64xf16>, tensor<?x64xf16>, tensor<?x64xf16>
      -> tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>
  return %a2, %m2, %s2 : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>
}

// CHECK-LABEL: func.func @finalize(
// CHECK: attn.online_attention_finalize %{{.+}}, %{{.+}}, %{{.+}} : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<64x64xf16>, tensor<64xf32>
// CHECK: attn.online_attention_finalize %{{.+}}, %{{.+}}, %{{.+}} : tensor<?x32xf32>, tensor<?xf32>, tensor<?xf32> -> tensor<?x32xbf16>{{$}}
// CHECK: attn.online_attention_finalize %{{.+}}, %{{.+}}, %{{.+}} partial : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<64x64xf32>{{$}}
func.func @finalize(%acc: tensor<64x64xf32>, %max: tensor<64xf32>, %sum: tensor<64xf32>,
                    %acc2: tensor<?x32xf32>, %max2: tensor<?xf32>, %sum2: tensor<?xf32>)
    -> (tensor<64x64xf16>, tensor<64xf32>, tensor<?x32xbf16>, tensor<64x64xf32>) {
  %o, %l = attn.online_attention_finalize %acc, %max, %sum
      : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<64x64xf16>, tensor<64xf32>
  %o2 = attn.online_attention_finalize %acc2, %max2, %sum2
      : tensor<?x32xf32>, tensor<?xf32>, tensor<?xf32> -> tensor<?x32xbf16>
  %po = attn.online_attention_finalize %acc, %max, %sum partial
      : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<64x64xf32>
  return %o, %l, %o2, %po : tensor<64x64xf16>, tensor<64xf32>, tensor<?x32xbf16>, tensor<64x64xf32>
}

// CHECK-LABEL: func.func @merge(
// CHECK: attn.merge_partials %{{.+}}, %{{.+}}, %{{.+}} : tensor<4x16x64xf32>, tensor<4x16xf32>, tensor<4x16xf32> -> tensor<16x64xf16>, tensor<16xf32>
// CHECK: attn.merge_partials %{{.+}}, %{{.+}}, %{{.+}} : tensor<?x16x64xf32>, tensor<?x16xf32>, tensor<?x16xf32> -> tensor<16x64xf32>{{$}}
func.func @merge(%o: tensor<4x16x64xf32>, %m: tensor<4x16xf32>, %l: tensor<4x16xf32>, %o2: tensor<?x16x64xf32>, %m2: tensor<?x16xf32>, %l2: tensor<?x16xf32>)
    -> (tensor<16x64xf16>, tensor<16xf32>, tensor<16x64xf32>) {
  %a, %b = attn.merge_partials %o, %m, %l
      : tensor<4x16x64xf32>, tensor<4x16xf32>, tensor<4x16xf32> -> tensor<16x64xf16>, tensor<16xf32>
  %c = attn.merge_partials %o2, %m2, %l2 : tensor<?x16x64xf32>, tensor<?x16xf32>, tensor<?x16xf32> -> tensor<16x64xf32>
  return %a, %b, %c : tensor<16x64xf16>, tensor<16xf32>, tensor<16x64xf32>
}

// CHECK-LABEL: func.func @split_count(
// CHECK: %[[N:.+]] = attn.kv_split_count default(4)
// CHECK: return %[[N]]
func.func @split_count() -> index {
  %n = attn.kv_split_count default(4)
  return %n : index
}

// The L1 step's options for static tiles and tensor cores.
// CHECK-LABEL: func.func @online_attention_static(
// CHECK: attn.online_attention q(%{{.+}}) k(%{{.+}}) v(%{{.+}}) state(%{{.+}}, %{{.+}}, %{{.+}}) at(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) kv_bound(%{{.+}}) causal(%{{.+}}) scale(1.250000e-01) rescale(8.000000e+00) p_type(bf16) : tensor<128x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>
// CHECK: attn.online_attention q(%{{.+}}) k(%{{.+}}) v(%{{.+}}) state(%{{.+}}, %{{.+}}, %{{.+}}) at(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) packed(%{{.+}}) scale(1.250000e-01) : tensor<128x64xbf16>
func.func @online_attention_static(%q: tensor<128x64xbf16>, %k: tensor<32x64xbf16>, %v: tensor<32x64xbf16>,
                                   %acc: tensor<128x64xf32>, %max: tensor<128xf32>, %sum: tensor<128xf32>,
                                   %b: index, %h: index, %i0: index, %j0: index, %n: index, %diag: index)
    -> (tensor<128x64xf32>, tensor<128xf32>, tensor<128xf32>) {
  %a, %m, %s = attn.online_attention q(%q) k(%k) v(%v) state(%acc, %max, %sum) at(%b, %h, %i0, %j0)
      kv_bound(%n) causal(%diag) scale(0.125) rescale(8.0) p_type(bf16)
      : tensor<128x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>
      -> tensor<128x64xf32>, tensor<128xf32>, tensor<128xf32>
  %a2, %m2, %s2 = attn.online_attention q(%q) k(%k) v(%v) state(%a, %m, %s) at(%b, %h, %i0, %j0)
      packed(%n) scale(0.125)
      : tensor<128x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>
      -> tensor<128x64xf32>, tensor<128xf32>, tensor<128xf32>
  return %a2, %m2, %s2 : tensor<128x64xf32>, tensor<128xf32>, tensor<128xf32>
}

// CHECK-LABEL: func.func @tiling_attrs(
// CHECK-SAME: #attn.tiling<block_q = 128, block_kv = 32, kv_splits = 4, launch_splits = true, static_tiles = true, pack_heads = true, rescale_threshold = 8, p_type = f16, heaviest_first = 16777216, mapping = #attn.mma_sync<warps = 4, row_tiles = 2, stages = 3, q_from_smem = true, shared_bytes = 81920, max_registers = 168>>
func.func @tiling_attrs() attributes {t = #attn.tiling<mapping = #attn.mma_sync<shared_bytes = 81920, warps = 4, row_tiles = 2, stages = 3, q_from_smem = true, max_registers = 168>, block_q = 128, block_kv = 32, kv_splits = 4, launch_splits = true, static_tiles = true, pack_heads = true, rescale_threshold = 8, p_type = f16, heaviest_first = 16777216>} {
  return
}

// The generic form parses into the same op (and prints in the custom form).
// CHECK-LABEL: func.func @sdpa_generic(
// CHECK: attn.sdpa %{{.+}}, %{{.+}}, %{{.+}} mask(%{{.+}} : tensor<1x1x8x8xi1>) causal scale(5.000000e-01) dropout(2.500000e-01, seed %{{.+}}) : tensor<1x2x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32> -> tensor<1x2x8x16xf32>, tensor<1x2x8xf32>
func.func @sdpa_generic(%q: tensor<1x2x8x16xf32>, %k: tensor<1x1x8x16xf32>, %v: tensor<1x1x8x16xf32>, %m: tensor<1x1x8x8xi1>, %seed: i64) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>) {
  %o:2 = "attn.sdpa"(%q, %k, %v, %m, %seed) <{causal, dropout_p = 2.500000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>, scale = 5.000000e-01 : f64}>
      : (tensor<1x2x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x8xi1>, i64) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  return %o#0, %o#1 : tensor<1x2x8x16xf32>, tensor<1x2x8xf32>
}

// The cooperative-matrix mapping: lanes defaults to 1 (elided when
// printed); a subgroup per softmax row prints it.
// CHECK-LABEL: func.func @coop_matrix_mapping(
// CHECK-SAME: m1 = #attn.coop_matrix<invocations = 32>
// CHECK-SAME: m2 = #attn.coop_matrix<invocations = 512, lanes = 32>
// CHECK-SAME: m3 = #attn.coop_matrix<invocations = 64, scalar = true>
// CHECK-SAME: m4 = #attn.coop_matrix<invocations = 128, lanes = 2, registers = true>
// CHECK-SAME: m5 = #attn.coop_matrix<invocations = 64, registers = true, strips = 2>
func.func @coop_matrix_mapping() attributes {m1 = #attn.coop_matrix<invocations = 32, lanes = 1>, m2 = #attn.coop_matrix<invocations = 512, lanes = 32>, m3 = #attn.coop_matrix<invocations = 64, scalar = true>, m4 = #attn.coop_matrix<invocations = 128, lanes = 2, registers = true, scalar = false>, m5 = #attn.coop_matrix<invocations = 64, strips = 2, registers = true, lanes = 1>} {
  return
}
