// RUN: attn-opt %s -split-input-file -verify-diagnostics

// One case per verifier rule of attn.mha.

func.func @f(%x: tensor<2x1x8x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x8x64xf32> {
  // expected-error @+1 {{input must be rank 3 [B, S, E], got rank 4}}
  %y = attn.mha %x wq(%wq : tensor<64x64xf32>) wk(%wk : tensor<64x64xf32>) wv(%wv : tensor<64x64xf32>) wo(%wo : tensor<64x64xf32>) heads(4, 4) head_dim(16) : tensor<2x1x8x64xf32> -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}

// -----

func.func @f(%x: tensor<2x8x64xf64>, %wq: tensor<64x64xf64>, %wk: tensor<64x64xf64>, %wv: tensor<64x64xf64>, %wo: tensor<64x64xf64>) -> tensor<2x8x64xf64> {
  // expected-error @+1 {{input element type must be f16, bf16 or f32, got 'f64'}}
  %y = attn.mha %x wq(%wq : tensor<64x64xf64>) wk(%wk : tensor<64x64xf64>) wv(%wv : tensor<64x64xf64>) wo(%wo : tensor<64x64xf64>) heads(4, 4) head_dim(16) : tensor<2x8x64xf64> -> tensor<2x8x64xf64>
  return %y : tensor<2x8x64xf64>
}

// -----

func.func @f(%x: tensor<2x8x?xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x8x64xf32> {
  // expected-error @+1 {{embedding dimension E must be static}}
  %y = attn.mha %x wq(%wq : tensor<64x64xf32>) wk(%wk : tensor<64x64xf32>) wv(%wv : tensor<64x64xf32>) wo(%wo : tensor<64x64xf32>) heads(4, 4) head_dim(16) : tensor<2x8x?xf32> -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}

// -----

func.func @f(%x: tensor<2x8x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>, %kv: tensor<3x8x64xf32>) -> tensor<2x8x64xf32> {
  // expected-error @+1 {{kv dimension 0 must be 2 [B, Skv, Ekv], got 3}}
  %y = attn.mha %x kv(%kv : tensor<3x8x64xf32>) wq(%wq : tensor<64x64xf32>) wk(%wk : tensor<64x64xf32>) wv(%wv : tensor<64x64xf32>) wo(%wo : tensor<64x64xf32>) heads(4, 4) head_dim(16) : tensor<2x8x64xf32> -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}

// -----

func.func @f(%x: tensor<2x8x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>, %kv: tensor<2x8x64xf16>) -> tensor<2x8x64xf32> {
  // expected-error @+1 {{kv element type 'f16' must match input element type 'f32'}}
  %y = attn.mha %x kv(%kv : tensor<2x8x64xf16>) wq(%wq : tensor<64x64xf32>) wk(%wk : tensor<64x64xf32>) wv(%wv : tensor<64x64xf32>) wo(%wo : tensor<64x64xf32>) heads(4, 4) head_dim(16) : tensor<2x8x64xf32> -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}

// -----

func.func @f(%x: tensor<2x8x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x8x64xf32> {
  // expected-error @+1 {{head counts must be positive, got heads(0, 4)}}
  %y = attn.mha %x wq(%wq : tensor<64x64xf32>) wk(%wk : tensor<64x64xf32>) wv(%wv : tensor<64x64xf32>) wo(%wo : tensor<64x64xf32>) heads(0, 4) head_dim(16) : tensor<2x8x64xf32> -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}

// -----

func.func @f(%x: tensor<2x8x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x8x64xf32> {
  // expected-error @+1 {{query heads (4) must be a multiple of key/value heads (3)}}
  %y = attn.mha %x wq(%wq : tensor<64x64xf32>) wk(%wk : tensor<64x64xf32>) wv(%wv : tensor<64x64xf32>) wo(%wo : tensor<64x64xf32>) heads(4, 3) head_dim(16) : tensor<2x8x64xf32> -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}

// -----

func.func @f(%x: tensor<2x8x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x8x64xf32> {
  // expected-error @+1 {{head dimensions must be in [1, 1048576], got D = 0, Dv = 0}}
  %y = attn.mha %x wq(%wq : tensor<64x64xf32>) wk(%wk : tensor<64x64xf32>) wv(%wv : tensor<64x64xf32>) wo(%wo : tensor<64x64xf32>) heads(4, 4) head_dim(0) : tensor<2x8x64xf32> -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}

// -----

func.func @f(%x: tensor<2x8x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>, %w: tensor<192x64xf32>) -> tensor<2x8x64xf32> {
  // expected-error @+1 {{takes either wqkv or wq, wk and wv, not both}}
  %y = attn.mha %x wq(%wq : tensor<64x64xf32>) wk(%wk : tensor<64x64xf32>) wv(%wv : tensor<64x64xf32>) wqkv(%w : tensor<192x64xf32>) wo(%wo : tensor<64x64xf32>) heads(4, 4) head_dim(16) : tensor<2x8x64xf32> -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}

// -----

func.func @f(%x: tensor<2x8x64xf32>, %kv: tensor<2x8x64xf32>, %w: tensor<192x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x8x64xf32> {
  // expected-error @+1 {{a fused wqkv needs self-attention (no kv input: its K and V project the input)}}
  %y = attn.mha %x kv(%kv : tensor<2x8x64xf32>) wqkv(%w : tensor<192x64xf32>) wo(%wo : tensor<64x64xf32>) heads(4, 4) head_dim(16) : tensor<2x8x64xf32> -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}

// -----

func.func @f(%x: tensor<2x8x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x8x64xf32> {
  // expected-error @+1 {{needs wq, wk and wv (or one fused wqkv)}}
  %y = attn.mha %x wq(%wq : tensor<64x64xf32>) wk(%wk : tensor<64x64xf32>) wo(%wo : tensor<64x64xf32>) heads(4, 4) head_dim(16) : tensor<2x8x64xf32> -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}

// -----

func.func @f(%x: tensor<2x8x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x8x64xf32> {
  // expected-error @+1 {{wk dimension 0 must be 32 [32, 64] ([out, in]), got 64}}
  %y = attn.mha %x wq(%wq : tensor<64x64xf32>) wk(%wk : tensor<64x64xf32>) wv(%wv : tensor<64x64xf32>) wo(%wo : tensor<64x64xf32>) heads(4, 2) head_dim(16) : tensor<2x8x64xf32> -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}

// -----

func.func @f(%x: tensor<2x8x64xf32>, %w: tensor<128x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x8x64xf32> {
  // expected-error @+1 {{wqkv dimension 0 must be 192 [192, 64] ([out, in]), got 128}}
  %y = attn.mha %x wqkv(%w : tensor<128x64xf32>) wo(%wo : tensor<64x64xf32>) heads(4, 4) head_dim(16) : tensor<2x8x64xf32> -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}

// -----

func.func @f(%x: tensor<2x8x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>, %wv8: tensor<32x64xf32>) -> tensor<2x8x64xf32> {
  // expected-error @+1 {{wo dimension 1 must be 32 [64, 32] ([out, in]), got 64}}
  %y = attn.mha %x wq(%wq : tensor<64x64xf32>) wk(%wk : tensor<64x64xf32>) wv(%wv8 : tensor<32x64xf32>) wo(%wo : tensor<64x64xf32>) heads(4, 4) head_dim(16) value_dim(8) : tensor<2x8x64xf32> -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}

// -----

func.func @f(%x: tensor<2x8x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf16>, %wo: tensor<64x64xf32>) -> tensor<2x8x64xf32> {
  // expected-error @+1 {{wv element type 'f16' must match input element type 'f32'}}
  %y = attn.mha %x wq(%wq : tensor<64x64xf32>) wk(%wk : tensor<64x64xf32>) wv(%wv : tensor<64x64xf16>) wo(%wo : tensor<64x64xf32>) heads(4, 4) head_dim(16) : tensor<2x8x64xf32> -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}

// -----

func.func @f(%x: tensor<2x8x64xf32>, %w: tensor<192x64xf32>, %wo: tensor<64x64xf32>, %b: tensor<64xf32>) -> tensor<2x8x64xf32> {
  // expected-error @+1 {{bq given without wq}}
  %y = attn.mha %x wqkv(%w : tensor<192x64xf32>) wo(%wo : tensor<64x64xf32>) bq(%b : tensor<64xf32>) heads(4, 4) head_dim(16) : tensor<2x8x64xf32> -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}

// -----

func.func @f(%x: tensor<2x8x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>, %b: tensor<32xf32>) -> tensor<2x8x64xf32> {
  // expected-error @+1 {{bo dimension 0 must be 64 [64], got 32}}
  %y = attn.mha %x wq(%wq : tensor<64x64xf32>) wk(%wk : tensor<64x64xf32>) wv(%wv : tensor<64x64xf32>) wo(%wo : tensor<64x64xf32>) bo(%b : tensor<32xf32>) heads(4, 4) head_dim(16) : tensor<2x8x64xf32> -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}

// -----

func.func @f(%x: tensor<2x8x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{out dimension 2 must be 64 [B, S, E], got 32}}
  %y = attn.mha %x wq(%wq : tensor<64x64xf32>) wk(%wk : tensor<64x64xf32>) wv(%wv : tensor<64x64xf32>) wo(%wo : tensor<64x64xf32>) heads(4, 4) head_dim(16) : tensor<2x8x64xf32> -> tensor<2x8x32xf32>
  return %y : tensor<2x8x32xf32>
}

// -----

func.func @f(%x: tensor<2x8x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>, %m: tensor<1x2x8x8xi1>) -> tensor<2x8x64xf32> {
  // expected-error @+1 {{mask dimension 1 must be 1 or Hq (4), got 2}}
  %y = attn.mha %x wq(%wq : tensor<64x64xf32>) wk(%wk : tensor<64x64xf32>) wv(%wv : tensor<64x64xf32>) wo(%wo : tensor<64x64xf32>) mask(%m : tensor<1x2x8x8xi1>) heads(4, 4) head_dim(16) : tensor<2x8x64xf32> -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}

// -----

func.func @f(%x: tensor<2x8x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>, %m: tensor<1x1x8x9xi1>) -> tensor<2x8x64xf32> {
  // expected-error @+1 {{mask dimension 3 must be 8 [1|B, 1|Hq, S, Skv], got 9}}
  %y = attn.mha %x wq(%wq : tensor<64x64xf32>) wk(%wk : tensor<64x64xf32>) wv(%wv : tensor<64x64xf32>) wo(%wo : tensor<64x64xf32>) mask(%m : tensor<1x1x8x9xi1>) heads(4, 4) head_dim(16) : tensor<2x8x64xf32> -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}

// -----

func.func @f(%x: tensor<2x8x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>, %s: i64) -> tensor<2x8x64xf32> {
  // expected-error @+1 {{dropout probability must be in [0, 1), got 1}}
  %y = attn.mha %x wq(%wq : tensor<64x64xf32>) wk(%wk : tensor<64x64xf32>) wv(%wv : tensor<64x64xf32>) wo(%wo : tensor<64x64xf32>) heads(4, 4) head_dim(16) dropout(1.0, seed %s) : tensor<2x8x64xf32> -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}
