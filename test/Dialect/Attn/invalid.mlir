// RUN: attn-opt %s -split-input-file -verify-diagnostics

// One case per verifier rule of attn.sdpa, attn.online_attention,
// attn.online_attention_finalize, attn.merge_partials and #attn.tiling.

func.func @f(%q: tensor<4x8x16xf32>, %k: tensor<2x2x6x16xf32>, %v: tensor<2x2x6x8xf32>) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{query must be rank 4 [B, Hq, Sq, D], got rank 3}}
  %o = attn.sdpa %q, %k, %v : tensor<4x8x16xf32>, tensor<2x2x6x16xf32>, tensor<2x2x6x8xf32> -> tensor<2x4x8x8xf32>
  return %o : tensor<2x4x8x8xf32>
}

// -----

func.func @f(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x6x16x1xf32>, %v: tensor<2x2x6x8xf32>) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{key must be rank 4 [B, Hkv, Skv, D], got rank 5}}
  %o = attn.sdpa %q, %k, %v : tensor<2x4x8x16xf32>, tensor<2x2x6x16x1xf32>, tensor<2x2x6x8xf32> -> tensor<2x4x8x8xf32>
  return %o : tensor<2x4x8x8xf32>
}

// -----

func.func @f(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x6x16xf32>, %v: tensor<2x6x8xf32>) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{value must be rank 4 [B, Hkv, Skv, Dv], got rank 3}}
  %o = attn.sdpa %q, %k, %v : tensor<2x4x8x16xf32>, tensor<2x2x6x16xf32>, tensor<2x6x8xf32> -> tensor<2x4x8x8xf32>
  return %o : tensor<2x4x8x8xf32>
}

// -----

func.func @f(%q: tensor<2x4x8x16xf64>, %k: tensor<2x2x6x16xf64>, %v: tensor<2x2x6x8xf64>) -> tensor<2x4x8x8xf64> {
  // expected-error @+1 {{query element type must be f16, bf16 or f32, got 'f64'}}
  %o = attn.sdpa %q, %k, %v : tensor<2x4x8x16xf64>, tensor<2x2x6x16xf64>, tensor<2x2x6x8xf64> -> tensor<2x4x8x8xf64>
  return %o : tensor<2x4x8x8xf64>
}

// -----

func.func @f(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x6x16xf16>, %v: tensor<2x2x6x8xf32>) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{key element type 'f16' must match query element type 'f32'}}
  %o = attn.sdpa %q, %k, %v : tensor<2x4x8x16xf32>, tensor<2x2x6x16xf16>, tensor<2x2x6x8xf32> -> tensor<2x4x8x8xf32>
  return %o : tensor<2x4x8x8xf32>
}

// -----

func.func @f(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x6x16xf32>, %v: tensor<2x2x6x8xbf16>) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{value element type 'bf16' must match query element type 'f32'}}
  %o = attn.sdpa %q, %k, %v : tensor<2x4x8x16xf32>, tensor<2x2x6x16xf32>, tensor<2x2x6x8xbf16> -> tensor<2x4x8x8xf32>
  return %o : tensor<2x4x8x8xf32>
}

// -----

func.func @f(%q: tensor<2x4x8x?xf32>, %k: tensor<2x2x6x?xf32>, %v: tensor<2x2x6x8xf32>) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{head dimensions D and Dv must be static}}
  %o = attn.sdpa %q, %k, %v : tensor<2x4x8x?xf32>, tensor<2x2x6x?xf32>, tensor<2x2x6x8xf32> -> tensor<2x4x8x8xf32>
  return %o : tensor<2x4x8x8xf32>
}

// -----

func.func @f(%q: tensor<2x4x8x0xf32>, %k: tensor<2x2x6x0xf32>, %v: tensor<2x2x6x8xf32>) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{head dimensions must be positive, got D = 0, Dv = 8}}
  %o = attn.sdpa %q, %k, %v : tensor<2x4x8x0xf32>, tensor<2x2x6x0xf32>, tensor<2x2x6x8xf32> -> tensor<2x4x8x8xf32>
  return %o : tensor<2x4x8x8xf32>
}

// -----

func.func @f(%q: tensor<2x4x8x16xf32>, %k: tensor<3x2x6x16xf32>, %v: tensor<3x2x6x8xf32>) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{key dimension 0 must be 2 [B, Hkv, Skv, D], got 3}}
  %o = attn.sdpa %q, %k, %v : tensor<2x4x8x16xf32>, tensor<3x2x6x16xf32>, tensor<3x2x6x8xf32> -> tensor<2x4x8x8xf32>
  return %o : tensor<2x4x8x8xf32>
}

// -----

func.func @f(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x6x32xf32>, %v: tensor<2x2x6x8xf32>) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{key dimension 3 must be 16 [B, Hkv, Skv, D], got 32}}
  %o = attn.sdpa %q, %k, %v : tensor<2x4x8x16xf32>, tensor<2x2x6x32xf32>, tensor<2x2x6x8xf32> -> tensor<2x4x8x8xf32>
  return %o : tensor<2x4x8x8xf32>
}

// -----

func.func @f(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x6x16xf32>, %v: tensor<2x2x5x8xf32>) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{value dimension 2 must be 6 [B, Hkv, Skv, Dv], got 5}}
  %o = attn.sdpa %q, %k, %v : tensor<2x4x8x16xf32>, tensor<2x2x6x16xf32>, tensor<2x2x5x8xf32> -> tensor<2x4x8x8xf32>
  return %o : tensor<2x4x8x8xf32>
}

// -----

func.func @f(%q: tensor<2x4x8x16xf32>, %k: tensor<2x0x6x16xf32>, %v: tensor<2x0x6x8xf32>) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{key/value head count must be positive}}
  %o = attn.sdpa %q, %k, %v : tensor<2x4x8x16xf32>, tensor<2x0x6x16xf32>, tensor<2x0x6x8xf32> -> tensor<2x4x8x8xf32>
  return %o : tensor<2x4x8x8xf32>
}

// -----

func.func @f(%q: tensor<2x4x8x16xf32>, %k: tensor<2x3x6x16xf32>, %v: tensor<2x3x6x8xf32>) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{query heads (4) must be a multiple of key/value heads (3)}}
  %o = attn.sdpa %q, %k, %v : tensor<2x4x8x16xf32>, tensor<2x3x6x16xf32>, tensor<2x3x6x8xf32> -> tensor<2x4x8x8xf32>
  return %o : tensor<2x4x8x8xf32>
}

// -----

func.func @f(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x6x16xf32>, %v: tensor<2x2x6x8xf32>) -> tensor<2x4x8x16xf32> {
  // expected-error @+1 {{out dimension 3 must be 8 [B, Hq, Sq, Dv], got 16}}
  %o = attn.sdpa %q, %k, %v : tensor<2x4x8x16xf32>, tensor<2x2x6x16xf32>, tensor<2x2x6x8xf32> -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

func.func @f(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x6x16xf32>, %v: tensor<2x2x6x8xf32>) -> tensor<2x4x8x8xf16> {
  // expected-error @+1 {{out element type 'f16' must match query element type 'f32'}}
  %o = attn.sdpa %q, %k, %v : tensor<2x4x8x16xf32>, tensor<2x2x6x16xf32>, tensor<2x2x6x8xf32> -> tensor<2x4x8x8xf16>
  return %o : tensor<2x4x8x8xf16>
}

// -----

func.func @f(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x6x16xf32>, %v: tensor<2x2x6x8xf32>) -> (tensor<2x4x8x8xf32>, tensor<2x4x4xf32>) {
  // expected-error @+1 {{lse dimension 2 must be 8 [B, Hq, Sq], got 4}}
  %o, %l = attn.sdpa %q, %k, %v : tensor<2x4x8x16xf32>, tensor<2x2x6x16xf32>, tensor<2x2x6x8xf32> -> tensor<2x4x8x8xf32>, tensor<2x4x4xf32>
  return %o, %l : tensor<2x4x8x8xf32>, tensor<2x4x4xf32>
}

// -----

func.func @f(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x6x16xf32>, %v: tensor<2x2x6x8xf32>) -> (tensor<2x4x8x8xf32>, tensor<2x4x8xf16>) {
  // expected-error @+1 {{lse must have f32 elements, got 'f16'}}
  %o, %l = attn.sdpa %q, %k, %v : tensor<2x4x8x16xf32>, tensor<2x2x6x16xf32>, tensor<2x2x6x8xf32> -> tensor<2x4x8x8xf32>, tensor<2x4x8xf16>
  return %o, %l : tensor<2x4x8x8xf32>, tensor<2x4x8xf16>
}

// -----

func.func @f(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x6x16xf32>, %v: tensor<2x2x6x8xf32>, %m: tensor<8x6xi1>) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{mask must be rank 4 [1|B, 1|Hq, Sq, Skv], got rank 2}}
  %o = attn.sdpa %q, %k, %v mask(%m : tensor<8x6xi1>) : tensor<2x4x8x16xf32>, tensor<2x2x6x16xf32>, tensor<2x2x6x8xf32> -> tensor<2x4x8x8xf32>
  return %o : tensor<2x4x8x8xf32>
}

// -----

func.func @f(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x6x16xf32>, %v: tensor<2x2x6x8xf32>, %m: tensor<1x1x8x7xi1>) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{mask dimension 3 must be 6 [1|B, 1|Hq, Sq, Skv], got 7}}
  %o = attn.sdpa %q, %k, %v mask(%m : tensor<1x1x8x7xi1>) : tensor<2x4x8x16xf32>, tensor<2x2x6x16xf32>, tensor<2x2x6x8xf32> -> tensor<2x4x8x8xf32>
  return %o : tensor<2x4x8x8xf32>
}

// -----

func.func @f(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x6x16xf32>, %v: tensor<2x2x6x8xf32>, %m: tensor<3x1x8x6xi1>) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{mask dimension 0 must be 1 or B (2), got 3}}
  %o = attn.sdpa %q, %k, %v mask(%m : tensor<3x1x8x6xi1>) : tensor<2x4x8x16xf32>, tensor<2x2x6x16xf32>, tensor<2x2x6x8xf32> -> tensor<2x4x8x8xf32>
  return %o : tensor<2x4x8x8xf32>
}

// -----

func.func @f(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x6x16xf32>, %v: tensor<2x2x6x8xf32>, %m: tensor<1x2x8x6xi1>) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{mask dimension 1 must be 1 or Hq (4), got 2}}
  %o = attn.sdpa %q, %k, %v mask(%m : tensor<1x2x8x6xi1>) : tensor<2x4x8x16xf32>, tensor<2x2x6x16xf32>, tensor<2x2x6x8xf32> -> tensor<2x4x8x8xf32>
  return %o : tensor<2x4x8x8xf32>
}

// -----

func.func @f(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x6x16xf32>, %v: tensor<2x2x6x8xf32>, %m: tensor<1x1x8x6xi16>) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{mask element type must be i1 or i8 (keep-mask) or f16, bf16, f32 or f64 (additive), got 'i16'}}
  %o = attn.sdpa %q, %k, %v mask(%m : tensor<1x1x8x6xi16>) : tensor<2x4x8x16xf32>, tensor<2x2x6x16xf32>, tensor<2x2x6x8xf32> -> tensor<2x4x8x8xf32>
  return %o : tensor<2x4x8x8xf32>
}

// -----

// An 8-bit float mask is no additive mask any target loads (SPIR-V failed
// to legalize it; fuzz, issue 22 item 6).
func.func @f(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x6x16xf32>, %v: tensor<2x2x6x8xf32>, %m: tensor<1x1x8x6xf8E4M3FN>) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{mask element type must be i1 or i8 (keep-mask) or f16, bf16, f32 or f64 (additive), got 'f8E4M3FN'}}
  %o = attn.sdpa %q, %k, %v mask(%m : tensor<1x1x8x6xf8E4M3FN>) : tensor<2x4x8x16xf32>, tensor<2x2x6x16xf32>, tensor<2x2x6x8xf32> -> tensor<2x4x8x8xf32>
  return %o : tensor<2x4x8x8xf32>
}

// -----

func.func @f(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x6x16xf32>, %v: tensor<2x2x6x8xf32>) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{scale must be finite, got INF}}
  %o = attn.sdpa %q, %k, %v scale(0x7FF0000000000000) : tensor<2x4x8x16xf32>, tensor<2x2x6x16xf32>, tensor<2x2x6x8xf32> -> tensor<2x4x8x8xf32>
  return %o : tensor<2x4x8x8xf32>
}

// -----

func.func @f(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x6x16xf32>, %v: tensor<2x2x6x8xf32>, %s: i64) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{dropout probability must be in [0, 1), got 1}}
  %o = attn.sdpa %q, %k, %v dropout(1.0, seed %s) : tensor<2x4x8x16xf32>, tensor<2x2x6x16xf32>, tensor<2x2x6x8xf32> -> tensor<2x4x8x8xf32>
  return %o : tensor<2x4x8x8xf32>
}

// -----

func.func @f(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x6x16xf32>, %v: tensor<2x2x6x8xf32>, %s: i64) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{dropout probability must be in [0, 1), got -1.000000e-01}}
  %o = attn.sdpa %q, %k, %v dropout(-0.1, seed %s) : tensor<2x4x8x16xf32>, tensor<2x2x6x16xf32>, tensor<2x2x6x8xf32> -> tensor<2x4x8x8xf32>
  return %o : tensor<2x4x8x8xf32>
}

// -----

func.func @f(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x6x16xf32>, %v: tensor<2x2x6x8xf32>) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{dropout requires a seed operand}}
  %o = "attn.sdpa"(%q, %k, %v) <{dropout_p = 1.000000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (tensor<2x4x8x16xf32>, tensor<2x2x6x16xf32>, tensor<2x2x6x8xf32>) -> tensor<2x4x8x8xf32>
  return %o : tensor<2x4x8x8xf32>
}

// -----

func.func @f(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x6x16xf32>, %v: tensor<2x2x6x8xf32>, %s: i64) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{seed given without a dropout probability}}
  %o = "attn.sdpa"(%q, %k, %v, %s) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 1>}> : (tensor<2x4x8x16xf32>, tensor<2x2x6x16xf32>, tensor<2x2x6x8xf32>, i64) -> tensor<2x4x8x8xf32>
  return %o : tensor<2x4x8x8xf32>
}

// -----

// expected-error @+1 {{tiling block_q must be positive, got 0}}
func.func @f() attributes {t = #attn.tiling<block_q = 0, block_kv = 32>} {
  return
}

// -----

// expected-error @+1 {{tiling block_kv must be positive, got -1}}
func.func @f() attributes {t = #attn.tiling<block_q = 16, block_kv = -1>} {
  return
}

// -----

// expected-error @+1 {{tiling kv_splits must be >= 0 (0 = automatic), got -2}}
func.func @f() attributes {t = #attn.tiling<block_q = 16, block_kv = 16, kv_splits = -2>} {
  return
}

// -----

func.func @f(%q: tensor<64x16x1xf16>, %k: tensor<32x16xf16>, %v: tensor<32x8xf16>, %acc: tensor<64x8xf32>, %max: tensor<64xf32>, %sum: tensor<64xf32>, %i: index) -> (tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>) {
  // expected-error @+1 {{query must be rank 2 [Br, D], got rank 3}}
  %a, %b, %c = attn.online_attention q(%q) k(%k) v(%v) state(%acc, %max, %sum) at(%i, %i, %i, %i) scale(0.125)
      : tensor<64x16x1xf16>, tensor<32x16xf16>, tensor<32x8xf16> -> tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>
  return %a, %b, %c : tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

func.func @f(%q: tensor<64x16xf16>, %k: tensor<32x8xf16>, %v: tensor<32x8xf16>, %acc: tensor<64x8xf32>, %max: tensor<64xf32>, %sum: tensor<64xf32>, %i: index) -> (tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>) {
  // expected-error @+1 {{key dimension 1 must be 16 [Bc, D], got 8}}
  %a, %b, %c = attn.online_attention q(%q) k(%k) v(%v) state(%acc, %max, %sum) at(%i, %i, %i, %i) scale(0.125)
      : tensor<64x16xf16>, tensor<32x8xf16>, tensor<32x8xf16> -> tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>
  return %a, %b, %c : tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

func.func @f(%q: tensor<64x16xf16>, %k: tensor<32x16xf16>, %v: tensor<16x8xf16>, %acc: tensor<64x8xf32>, %max: tensor<64xf32>, %sum: tensor<64xf32>, %i: index) -> (tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>) {
  // expected-error @+1 {{value dimension 0 must be 32 [Bc, Dv], got 16}}
  %a, %b, %c = attn.online_attention q(%q) k(%k) v(%v) state(%acc, %max, %sum) at(%i, %i, %i, %i) scale(0.125)
      : tensor<64x16xf16>, tensor<32x16xf16>, tensor<16x8xf16> -> tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>
  return %a, %b, %c : tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

func.func @f(%q: tensor<64x16xf32>, %k: tensor<32x16xf32>, %v: tensor<32x8xf16>, %acc: tensor<64x8xf32>, %max: tensor<64xf32>, %sum: tensor<64xf32>, %i: index) -> (tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>) {
  // expected-error @+1 {{query, key and value must share one element type of f16, bf16, f32}}
  %a, %b, %c = attn.online_attention q(%q) k(%k) v(%v) state(%acc, %max, %sum) at(%i, %i, %i, %i) scale(0.125)
      : tensor<64x16xf32>, tensor<32x16xf32>, tensor<32x8xf16> -> tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>
  return %a, %b, %c : tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

func.func @f(%q: tensor<64x16xf16>, %k: tensor<32x16xf16>, %v: tensor<32x8xf16>, %acc: tensor<32x8xf32>, %max: tensor<64xf32>, %sum: tensor<64xf32>, %i: index) -> (tensor<32x8xf32>, tensor<64xf32>, tensor<64xf32>) {
  // expected-error @+1 {{acc dimension 0 must be 64 [Br, Dv], got 32}}
  %a, %b, %c = attn.online_attention q(%q) k(%k) v(%v) state(%acc, %max, %sum) at(%i, %i, %i, %i) scale(0.125)
      : tensor<64x16xf16>, tensor<32x16xf16>, tensor<32x8xf16> -> tensor<32x8xf32>, tensor<64xf32>, tensor<64xf32>
  return %a, %b, %c : tensor<32x8xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

func.func @f(%q: tensor<64x16xf16>, %k: tensor<32x16xf16>, %v: tensor<32x8xf16>, %acc: tensor<64x8xf16>, %max: tensor<64xf32>, %sum: tensor<64xf32>, %i: index) -> (tensor<64x8xf16>, tensor<64xf32>, tensor<64xf32>) {
  // expected-error @+1 {{acc must have f32 elements, got 'f16'}}
  %a, %b, %c = attn.online_attention q(%q) k(%k) v(%v) state(%acc, %max, %sum) at(%i, %i, %i, %i) scale(0.125)
      : tensor<64x16xf16>, tensor<32x16xf16>, tensor<32x8xf16> -> tensor<64x8xf16>, tensor<64xf32>, tensor<64xf32>
  return %a, %b, %c : tensor<64x8xf16>, tensor<64xf32>, tensor<64xf32>
}

// -----

func.func @f(%q: tensor<64x16xf16>, %k: tensor<32x16xf16>, %v: tensor<32x8xf16>, %acc: tensor<64x8xf32>, %max: tensor<32xf32>, %sum: tensor<64xf32>, %i: index) -> (tensor<64x8xf32>, tensor<32xf32>, tensor<64xf32>) {
  // expected-error @+1 {{max dimension 0 must be 64 [Br], got 32}}
  %a, %b, %c = attn.online_attention q(%q) k(%k) v(%v) state(%acc, %max, %sum) at(%i, %i, %i, %i) scale(0.125)
      : tensor<64x16xf16>, tensor<32x16xf16>, tensor<32x8xf16> -> tensor<64x8xf32>, tensor<32xf32>, tensor<64xf32>
  return %a, %b, %c : tensor<64x8xf32>, tensor<32xf32>, tensor<64xf32>
}

// -----

func.func @f(%q: tensor<64x16xf16>, %k: tensor<32x16xf16>, %v: tensor<32x8xf16>, %acc: tensor<64x8xf32>, %max: tensor<64xf16>, %sum: tensor<64xf32>, %i: index) -> (tensor<64x8xf32>, tensor<64xf16>, tensor<64xf32>) {
  // expected-error @+1 {{max must have f32 elements, got 'f16'}}
  %a, %b, %c = attn.online_attention q(%q) k(%k) v(%v) state(%acc, %max, %sum) at(%i, %i, %i, %i) scale(0.125)
      : tensor<64x16xf16>, tensor<32x16xf16>, tensor<32x8xf16> -> tensor<64x8xf32>, tensor<64xf16>, tensor<64xf32>
  return %a, %b, %c : tensor<64x8xf32>, tensor<64xf16>, tensor<64xf32>
}

// -----

func.func @f(%q: tensor<64x16xf16>, %k: tensor<32x16xf16>, %v: tensor<32x8xf16>, %acc: tensor<64x8xf32>, %max: tensor<64xf32>, %sum: tensor<64x1xf32>, %i: index) -> (tensor<64x8xf32>, tensor<64xf32>, tensor<64x1xf32>) {
  // expected-error @+1 {{sum must be rank 1 [Br], got rank 2}}
  %a, %b, %c = attn.online_attention q(%q) k(%k) v(%v) state(%acc, %max, %sum) at(%i, %i, %i, %i) scale(0.125)
      : tensor<64x16xf16>, tensor<32x16xf16>, tensor<32x8xf16> -> tensor<64x8xf32>, tensor<64xf32>, tensor<64x1xf32>
  return %a, %b, %c : tensor<64x8xf32>, tensor<64xf32>, tensor<64x1xf32>
}

// -----

func.func @f(%q: tensor<64x16xf16>, %k: tensor<32x16xf16>, %v: tensor<32x8xf16>, %acc: tensor<64x8xf32>, %max: tensor<64xf32>, %sum: tensor<64xbf16>, %i: index) -> (tensor<64x8xf32>, tensor<64xf32>, tensor<64xbf16>) {
  // expected-error @+1 {{sum must have f32 elements, got 'bf16'}}
  %a, %b, %c = attn.online_attention q(%q) k(%k) v(%v) state(%acc, %max, %sum) at(%i, %i, %i, %i) scale(0.125)
      : tensor<64x16xf16>, tensor<32x16xf16>, tensor<32x8xf16> -> tensor<64x8xf32>, tensor<64xf32>, tensor<64xbf16>
  return %a, %b, %c : tensor<64x8xf32>, tensor<64xf32>, tensor<64xbf16>
}

// -----

func.func @f(%q: tensor<64x16xf16>, %k: tensor<32x16xf16>, %v: tensor<32x8xf16>, %m: tensor<64x16xi1>, %acc: tensor<64x8xf32>, %max: tensor<64xf32>, %sum: tensor<64xf32>, %i: index) -> (tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>) {
  // expected-error @+1 {{mask dimension 1 must be 32 [Br, Bc], got 16}}
  %a, %b, %c = attn.online_attention q(%q) k(%k) v(%v) mask(%m : tensor<64x16xi1>) state(%acc, %max, %sum) at(%i, %i, %i, %i) scale(0.125)
      : tensor<64x16xf16>, tensor<32x16xf16>, tensor<32x8xf16> -> tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>
  return %a, %b, %c : tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

func.func @f(%q: tensor<64x16xf16>, %k: tensor<32x16xf16>, %v: tensor<32x8xf16>, %m: tensor<64x32xi32>, %acc: tensor<64x8xf32>, %max: tensor<64xf32>, %sum: tensor<64xf32>, %i: index) -> (tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>) {
  // expected-error @+1 {{mask element type must be i1, i8, f16, bf16, f32 or f64}}
  %a, %b, %c = attn.online_attention q(%q) k(%k) v(%v) mask(%m : tensor<64x32xi32>) state(%acc, %max, %sum) at(%i, %i, %i, %i) scale(0.125)
      : tensor<64x16xf16>, tensor<32x16xf16>, tensor<32x8xf16> -> tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>
  return %a, %b, %c : tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

func.func @f(%q: tensor<64x16xf16>, %k: tensor<32x16xf16>, %v: tensor<32x8xf16>, %acc: tensor<64x8xf32>, %max: tensor<64xf32>, %sum: tensor<64xf32>, %i: index) -> (tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>) {
  // expected-error @+1 {{scale must be finite}}
  %a, %b, %c = attn.online_attention q(%q) k(%k) v(%v) state(%acc, %max, %sum) at(%i, %i, %i, %i) scale(0x7FF8000000000000)
      : tensor<64x16xf16>, tensor<32x16xf16>, tensor<32x8xf16> -> tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>
  return %a, %b, %c : tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

func.func @f(%q: tensor<64x16xf16>, %k: tensor<32x16xf16>, %v: tensor<32x8xf16>, %acc: tensor<64x8xf32>, %max: tensor<64xf32>, %sum: tensor<64xf32>, %i: index, %s: i64) -> (tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>) {
  // expected-error @+1 {{dropout probability must be in [0, 1), got 1.5}}
  %a, %b, %c = attn.online_attention q(%q) k(%k) v(%v) state(%acc, %max, %sum) at(%i, %i, %i, %i) scale(0.125) dropout(1.5, seed %s)
      : tensor<64x16xf16>, tensor<32x16xf16>, tensor<32x8xf16> -> tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>
  return %a, %b, %c : tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

func.func @f(%q: tensor<64x16xf16>, %k: tensor<32x16xf16>, %v: tensor<32x8xf16>, %acc: tensor<64x8xf32>, %max: tensor<64xf32>, %sum: tensor<64xf32>, %i: index) -> tensor<64x8xf32> {
  // expected-error @+1 {{all of {acc, new_acc} have same type}}
  %r:3 = "attn.online_attention"(%q, %k, %v, %acc, %max, %sum, %i, %i, %i, %i) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0>, scale = 1.250000e-01 : f64}>
      : (tensor<64x16xf16>, tensor<32x16xf16>, tensor<32x8xf16>, tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>, index, index, index, index) -> (tensor<64x8xf16>, tensor<64xf32>, tensor<64xf32>)
  return %acc : tensor<64x8xf32>
}

// -----

func.func @f(%q: tensor<64x16xf16>, %k: tensor<32x16xf16>, %v: tensor<32x8xf16>, %acc: tensor<64x8xf32>, %max: tensor<64xf32>, %sum: tensor<64xf32>, %i: index) -> tensor<64x8xf32> {
  // expected-error @+1 {{dropout requires a seed operand}}
  %r:3 = "attn.online_attention"(%q, %k, %v, %acc, %max, %sum, %i, %i, %i, %i) <{dropout_p = 5.000000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0>, scale = 1.250000e-01 : f64}>
      : (tensor<64x16xf16>, tensor<32x16xf16>, tensor<32x8xf16>, tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>, index, index, index, index) -> (tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>)
  return %acc : tensor<64x8xf32>
}

// -----

func.func @f(%acc: tensor<64xf32>, %max: tensor<64xf32>, %sum: tensor<64xf32>) {
  // expected-error @+1 {{acc must be rank 2 [Br, Dv], got rank 1}}
  %o = attn.online_attention_finalize %acc, %max, %sum : tensor<64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<64x8xf32>
  return
}

// -----

func.func @f(%acc: tensor<64x8xf16>, %max: tensor<64xf32>, %sum: tensor<64xf32>) {
  // expected-error @+1 {{acc must have f32 elements, got 'f16'}}
  %o = attn.online_attention_finalize %acc, %max, %sum : tensor<64x8xf16>, tensor<64xf32>, tensor<64xf32> -> tensor<64x8xf32>
  return
}

// -----

func.func @f(%acc: tensor<64x8xf32>, %max: tensor<32xf32>, %sum: tensor<64xf32>) {
  // expected-error @+1 {{max dimension 0 must be 64 [Br], got 32}}
  %o = attn.online_attention_finalize %acc, %max, %sum : tensor<64x8xf32>, tensor<32xf32>, tensor<64xf32> -> tensor<64x8xf32>
  return
}

// -----

func.func @f(%acc: tensor<64x8xf32>, %max: tensor<64xf32>, %sum: tensor<64xf16>) {
  // expected-error @+1 {{sum must have f32 elements, got 'f16'}}
  %o = attn.online_attention_finalize %acc, %max, %sum : tensor<64x8xf32>, tensor<64xf32>, tensor<64xf16> -> tensor<64x8xf32>
  return
}

// -----

func.func @f(%acc: tensor<64x8xf32>, %max: tensor<64xf32>, %sum: tensor<64xf32>) {
  // expected-error @+1 {{out dimension 1 must be 8 [Br, Dv], got 4}}
  %o = attn.online_attention_finalize %acc, %max, %sum : tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<64x4xf32>
  return
}

// -----

func.func @f(%acc: tensor<64x8xf32>, %max: tensor<64xf32>, %sum: tensor<64xf32>) {
  // expected-error @+1 {{out element type must be f16, bf16 or f32}}
  %o = attn.online_attention_finalize %acc, %max, %sum : tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<64x8xf64>
  return
}

// -----

func.func @f(%acc: tensor<64x8xf32>, %max: tensor<64xf32>, %sum: tensor<64xf32>) {
  // expected-error @+1 {{lse dimension 0 must be 64 [Br], got 8}}
  %o, %l = attn.online_attention_finalize %acc, %max, %sum : tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<64x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @f(%acc: tensor<64x8xf32>, %max: tensor<64xf32>, %sum: tensor<64xf32>) {
  // expected-error @+1 {{lse must have f32 elements, got 'f16'}}
  %o, %l = attn.online_attention_finalize %acc, %max, %sum : tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<64x8xf32>, tensor<64xf16>
  return
}

// -----

func.func @f(%acc: tensor<64x8xf32>, %max: tensor<64xf32>, %sum: tensor<64xf32>) {
  // expected-error @+1 {{partial out must have f32 elements, got 'f16'}}
  %o = attn.online_attention_finalize %acc, %max, %sum partial : tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<64x8xf16>
  return
}

// -----

func.func @f(%acc: tensor<64x8xf32>, %max: tensor<64xf32>, %sum: tensor<64xf32>) {
  // expected-error @+1 {{a partial finalize returns no lse (the merge weighs chunks by their max and sum)}}
  %o, %l = attn.online_attention_finalize %acc, %max, %sum partial : tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<64x8xf32>, tensor<64xf32>
  return
}

// -----

func.func @f(%o: tensor<16x8xf32>, %l: tensor<4x16xf32>, %s: tensor<4x16xf32>) {
  // expected-error @+1 {{partial out must be rank 3 [N, Br, Dv], got rank 2}}
  %a = attn.merge_partials %o, %l, %s : tensor<16x8xf32>, tensor<4x16xf32>, tensor<4x16xf32> -> tensor<16x8xf32>
  return
}

// -----

func.func @f(%o: tensor<4x16x8xf16>, %l: tensor<4x16xf32>, %s: tensor<4x16xf32>) {
  // expected-error @+1 {{partial out must have f32 elements, got 'f16'}}
  %a = attn.merge_partials %o, %l, %s : tensor<4x16x8xf16>, tensor<4x16xf32>, tensor<4x16xf32> -> tensor<16x8xf16>
  return
}

// -----

func.func @f(%o: tensor<4x16x8xf32>, %l: tensor<2x16xf32>, %s: tensor<4x16xf32>) {
  // expected-error @+1 {{partial max dimension 0 must be 4 [N, Br], got 2}}
  %a = attn.merge_partials %o, %l, %s : tensor<4x16x8xf32>, tensor<2x16xf32>, tensor<4x16xf32> -> tensor<16x8xf32>
  return
}

// -----

func.func @f(%o: tensor<4x16x8xf32>, %l: tensor<4x16xbf16>, %s: tensor<4x16xf32>) {
  // expected-error @+1 {{partial max must have f32 elements, got 'bf16'}}
  %a = attn.merge_partials %o, %l, %s : tensor<4x16x8xf32>, tensor<4x16xbf16>, tensor<4x16xf32> -> tensor<16x8xf32>
  return
}

// -----

func.func @f(%o: tensor<4x16x8xf32>, %l: tensor<4x16xf32>, %s: tensor<4x8xf32>) {
  // expected-error @+1 {{partial sum dimension 1 must be 16 [N, Br], got 8}}
  %a = attn.merge_partials %o, %l, %s : tensor<4x16x8xf32>, tensor<4x16xf32>, tensor<4x8xf32> -> tensor<16x8xf32>
  return
}

// -----

func.func @f(%o: tensor<4x16x8xf32>, %l: tensor<4x16xf32>, %s: tensor<4x16xf32>) {
  // expected-error @+1 {{out dimension 1 must be 8 [Br, Dv], got 4}}
  %a = attn.merge_partials %o, %l, %s : tensor<4x16x8xf32>, tensor<4x16xf32>, tensor<4x16xf32> -> tensor<16x4xf32>
  return
}

// -----

func.func @f(%o: tensor<4x16x8xf32>, %l: tensor<4x16xf32>, %s: tensor<4x16xf32>) {
  // expected-error @+1 {{out element type must be f16, bf16 or f32}}
  %a = attn.merge_partials %o, %l, %s : tensor<4x16x8xf32>, tensor<4x16xf32>, tensor<4x16xf32> -> tensor<16x8xi8>
  return
}

// -----

func.func @f(%o: tensor<4x16x8xf32>, %l: tensor<4x16xf32>, %s: tensor<4x16xf32>) {
  // expected-error @+1 {{lse dimension 0 must be 16 [Br], got 8}}
  %a, %b = attn.merge_partials %o, %l, %s : tensor<4x16x8xf32>, tensor<4x16xf32>, tensor<4x16xf32> -> tensor<16x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @f(%o: tensor<4x16x8xf32>, %l: tensor<4x16xf32>, %s: tensor<4x16xf32>) {
  // expected-error @+1 {{lse must have f32 elements, got 'f16'}}
  %a, %b = attn.merge_partials %o, %l, %s : tensor<4x16x8xf32>, tensor<4x16xf32>, tensor<4x16xf32> -> tensor<16x8xbf16>, tensor<16xf16>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{default count must be >= 1, got 0}}
  %n = attn.kv_split_count default(0)
  return
}

// -----

func.func @f(%q: tensor<64x16xf16>, %k: tensor<32x16xf16>, %v: tensor<32x8xf16>, %acc: tensor<64x8xf32>, %max: tensor<64xf32>, %sum: tensor<64xf32>, %i: index) -> (tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>) {
  // expected-error @+1 {{rescale threshold must be in [0, 64] (log2 units), got -1}}
  %a, %b, %c = attn.online_attention q(%q) k(%k) v(%v) state(%acc, %max, %sum) at(%i, %i, %i, %i) scale(0.125) rescale(-1.0)
      : tensor<64x16xf16>, tensor<32x16xf16>, tensor<32x8xf16> -> tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>
  return %a, %b, %c : tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

func.func @f(%q: tensor<64x16xf16>, %k: tensor<32x16xf16>, %v: tensor<32x8xf16>, %acc: tensor<64x8xf32>, %max: tensor<64xf32>, %sum: tensor<64xf32>, %i: index) -> (tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>) {
  // expected-error @+1 {{p_type must be f16, bf16 or f32, got 'i8'}}
  %a, %b, %c = attn.online_attention q(%q) k(%k) v(%v) state(%acc, %max, %sum) at(%i, %i, %i, %i) scale(0.125) p_type(i8)
      : tensor<64x16xf16>, tensor<32x16xf16>, tensor<32x8xf16> -> tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>
  return %a, %b, %c : tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

func.func @f(%q: tensor<64x16xf16>, %k: tensor<32x16xf16>, %v: tensor<32x8xf16>, %m: tensor<64x32xi1>, %acc: tensor<64x8xf32>, %max: tensor<64xf32>, %sum: tensor<64xf32>, %i: index) -> (tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>) {
  // expected-error @+1 {{a packed step (rows over heads) takes no mask}}
  %a, %b, %c = attn.online_attention q(%q) k(%k) v(%v) mask(%m : tensor<64x32xi1>) state(%acc, %max, %sum) at(%i, %i, %i, %i) packed(%i) scale(0.125)
      : tensor<64x16xf16>, tensor<32x16xf16>, tensor<32x8xf16> -> tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>
  return %a, %b, %c : tensor<64x8xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

// expected-error @+1 {{tiling rescale_threshold must be in [0, 64] (log2 units), got 65}}
func.func @f() attributes {t = #attn.tiling<block_q = 16, block_kv = 16, rescale_threshold = 65>} {
  return
}

// -----

// expected-error @+1 {{tiling p_type must be f16, bf16 or f32, got 'i32'}}
func.func @f() attributes {t = #attn.tiling<block_q = 16, block_kv = 16, p_type = i32>} {
  return
}

// -----

// expected-error @+1 {{'kv_splits' given twice}}
func.func @f() attributes {t = #attn.tiling<block_q = 16, block_kv = 16, kv_splits = 2, kv_splits = 3>} {
  return
}

// -----

// expected-error @+1 {{expected true or false}}
func.func @f() attributes {t = #attn.tiling<block_q = 16, block_kv = 16, static_tiles = yes>} {
  return
}

// -----

// expected-error @+1 {{unknown #attn.tiling parameter 'warps'}}
func.func @f() attributes {t = #attn.tiling<block_q = 16, block_kv = 16, warps = 4>} {
  return
}

// -----

// expected-error @+1 {{#attn.mma_sync needs warps 1, 2, 4 or 8, row_tiles 1 or 2, stages in [2, 4], shared_bytes a positive multiple of 16 and max_registers in [0, 255]}}
func.func @f() attributes {t = #attn.mma_sync<warps = 4, row_tiles = 1, stages = 1, shared_bytes = 4096>} {
  return
}

// -----

// expected-error @+1 {{#attn.mma_sync needs warps 1, 2, 4 or 8, row_tiles 1 or 2, stages in [2, 4], shared_bytes a positive multiple of 16 and max_registers in [0, 255]}}
func.func @f() attributes {t = #attn.mma_sync<warps = 3, row_tiles = 1, stages = 2, shared_bytes = 4096>} {
  return
}

// -----

// expected-error @+1 {{#attn.mma_sync needs warps 1, 2, 4 or 8, row_tiles 1 or 2, stages in [2, 4], shared_bytes a positive multiple of 16 and max_registers in [0, 255]}}
func.func @f() attributes {t = #attn.mma_sync<warps = 4, row_tiles = 3, stages = 2, shared_bytes = 4096>} {
  return
}

// -----

// expected-error @+1 {{#attn.mma_sync needs warps 1, 2, 4 or 8, row_tiles 1 or 2, stages in [2, 4], shared_bytes a positive multiple of 16 and max_registers in [0, 255]}}
func.func @f() attributes {t = #attn.mma_sync<warps = 4, row_tiles = 1, stages = 2, shared_bytes = 0>} {
  return
}

// -----

// expected-error @+1 {{#attn.mma_sync needs warps 1, 2, 4 or 8, row_tiles 1 or 2, stages in [2, 4], shared_bytes a positive multiple of 16 and max_registers in [0, 255]}}
func.func @f() attributes {t = #attn.mma_sync<warps = 4, row_tiles = 1, stages = 2, shared_bytes = 4100>} {
  return
}

// -----

// expected-error @+1 {{#attn.mma_sync needs warps 1, 2, 4 or 8, row_tiles 1 or 2, stages in [2, 4], shared_bytes a positive multiple of 16 and max_registers in [0, 255]}}
func.func @f() attributes {t = #attn.mma_sync<warps = 4, row_tiles = 1, stages = 2, shared_bytes = 4096, max_registers = 256>} {
  return
}

// -----

// Zero-size problems are refused (the runtime refuses them at launch):
// a static Sq = 0 used to divide by zero in the split policy.
func.func @f(%q: tensor<1x1x0x16xf32>, %k: tensor<1x1x512x16xf32>, %v: tensor<1x1x512x16xf32>) -> tensor<1x1x0x16xf32> {
  // expected-error @+1 {{static extent Sq must be positive, got 0}}
  %o = attn.sdpa %q, %k, %v : tensor<1x1x0x16xf32>, tensor<1x1x512x16xf32>, tensor<1x1x512x16xf32> -> tensor<1x1x0x16xf32>
  return %o : tensor<1x1x0x16xf32>
}

// -----

func.func @f(%q: tensor<1x1x4x16xf32>, %k: tensor<1x1x0x16xf32>, %v: tensor<1x1x0x16xf32>) -> tensor<1x1x4x16xf32> {
  // expected-error @+1 {{static extent Skv must be positive, got 0}}
  %o = attn.sdpa %q, %k, %v : tensor<1x1x4x16xf32>, tensor<1x1x0x16xf32>, tensor<1x1x0x16xf32> -> tensor<1x1x4x16xf32>
  return %o : tensor<1x1x4x16xf32>
}

// -----

// 2^31 x 2^31 x 2^31 x 64 elements: more than 2^40, so that no size product
// of a lowering can overflow int64.
func.func @f(%q: tensor<2147483648x2147483648x2147483648x64xf32>, %k: tensor<2147483648x1x2147483648x64xf32>, %v: tensor<2147483648x1x2147483648x64xf32>) -> tensor<2147483648x2147483648x2147483648x64xf32> {
  // expected-error @+1 {{query has more than 1099511627776 elements}}
  %o = attn.sdpa %q, %k, %v : tensor<2147483648x2147483648x2147483648x64xf32>, tensor<2147483648x1x2147483648x64xf32>, tensor<2147483648x1x2147483648x64xf32> -> tensor<2147483648x2147483648x2147483648x64xf32>
  return %o : tensor<2147483648x2147483648x2147483648x64xf32>
}

// -----

func.func @f(%q: tensor<1x1x4x16xf32>, %k: tensor<1x1x?x16xf32>, %v: tensor<1x1x?x16xf32>, %m: tensor<1x1x4x1099511627776xi1>) -> tensor<1x1x4x16xf32> {
  // expected-error @+1 {{mask has more than 1099511627776 elements}}
  %o = attn.sdpa %q, %k, %v mask(%m : tensor<1x1x4x1099511627776xi1>) : tensor<1x1x4x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32> -> tensor<1x1x4x16xf32>
  return %o : tensor<1x1x4x16xf32>
}

// -----

// expected-error @+1 {{tiling block_q, block_kv and kv_splits must be at most 1048576, got 16, 4611686018427387904, 1}}
func.func @f() attributes {t = #attn.tiling<block_q = 16, block_kv = 4611686018427387904>} {
  return
}

// -----

// A single huge static extent beside dynamic ones (no static element count).
func.func @f(%q: tensor<?x?x?x16xf32>, %k: tensor<?x?x4611686018427387904x16xf32>, %v: tensor<?x?x4611686018427387904x16xf32>) -> tensor<?x?x?x16xf32> {
  // expected-error @+1 {{static extent 4611686018427387904 is more than 1099511627776}}
  %o = attn.sdpa %q, %k, %v : tensor<?x?x?x16xf32>, tensor<?x?x4611686018427387904x16xf32>, tensor<?x?x4611686018427387904x16xf32> -> tensor<?x?x?x16xf32>
  return %o : tensor<?x?x?x16xf32>
}

// -----

func.func @f(%q: tensor<?x1x?x2097152xf32>, %k: tensor<?x1x?x2097152xf32>, %v: tensor<?x1x?x16xf32>) -> tensor<?x1x?x16xf32> {
  // expected-error @+1 {{head dimensions must be at most 1048576, got D = 2097152, Dv = 16}}
  %o = attn.sdpa %q, %k, %v : tensor<?x1x?x2097152xf32>, tensor<?x1x?x2097152xf32>, tensor<?x1x?x16xf32> -> tensor<?x1x?x16xf32>
  return %o : tensor<?x1x?x16xf32>
}

// -----

// expected-error @+1 {{#attn.coop_matrix lanes must be a power of two up to 128 that divides invocations, got 3}}
func.func @f() attributes {m = #attn.coop_matrix<invocations = 48, lanes = 3>} {
  return
}

// -----

// expected-error @+1 {{#attn.coop_matrix lanes must be a power of two up to 128 that divides invocations, got 64}}
func.func @f() attributes {m = #attn.coop_matrix<invocations = 32, lanes = 64>} {
  return
}

// -----

// expected-error @+1 {{#attn.coop_matrix invocations must be in [16, 1024], got 8}}
func.func @f() attributes {m = #attn.coop_matrix<invocations = 8>} {
  return
}

// -----

// registers: a subgroup of 16 x lanes invocations per 16-row strip.
// expected-error @+1 {{#attn.coop_matrix registers = true needs cooperative matrices (not scalar) and whole subgroups of 16 x lanes invocations (lanes up to 8), got invocations 48, lanes 2}}
func.func @f() attributes {m = #attn.coop_matrix<invocations = 48, lanes = 2, registers = true>} {
  return
}

// -----

// expected-error @+1 {{#attn.coop_matrix registers = true needs cooperative matrices (not scalar)}}
func.func @f() attributes {m = #attn.coop_matrix<invocations = 64, lanes = 2, scalar = true, registers = true>} {
  return
}

// -----

// strips: only with registers, 2 or 4 of them, a subgroup of 16 x lanes x
// strips invocations.
// expected-error @+1 {{#attn.coop_matrix strips = 2 or 4 needs registers = true and whole subgroups of 16 x lanes x strips invocations (at most 128), got strips 2, invocations 64, lanes 1}}
func.func @f() attributes {m = #attn.coop_matrix<invocations = 64, strips = 2>} {
  return
}

// -----

// expected-error @+1 {{#attn.coop_matrix strips = 2 or 4 needs registers = true and whole subgroups of 16 x lanes x strips invocations (at most 128), got strips 3, invocations 96, lanes 1}}
func.func @f() attributes {m = #attn.coop_matrix<invocations = 96, registers = true, strips = 3>} {
  return
}

// -----

// expected-error @+1 {{#attn.coop_matrix strips = 2 or 4 needs registers = true and whole subgroups of 16 x lanes x strips invocations (at most 128), got strips 4, invocations 64, lanes 2}}
func.func @f() attributes {m = #attn.coop_matrix<invocations = 64, lanes = 2, registers = true, strips = 4>} {
  return
}
