//===- AttnDialect.h - the attn dialect declaration ------------*- C++ -*-===//
#ifndef ATTN_DIALECT_ATTN_IR_ATTNDIALECT_H
#define ATTN_DIALECT_ATTN_IR_ATTNDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dialect.h"

#include "attn/Dialect/Attn/IR/AttnDialect.h.inc"

#include <cstdint>

namespace mlir::attn {
/// The most elements one tensor of an attn op may have (2^40: 4 TiB of
/// f32). With the bound on tile sizes and split counts below, every size
/// product the compiler forms (tile counts, split partials of
/// kv_splits x rows x Dv f32, byte offsets) stays within int64.
inline constexpr int64_t kMaxElements = int64_t(1) << 40;
/// The largest block_q, block_kv and kv_splits a tiling may ask for (2^20).
inline constexpr int64_t kMaxTileExtent = int64_t(1) << 20;

/// A keep-mask's element type: i1, or i8 bytes of which any nonzero one
/// attends (the runtime passes bool masks as bytes; docs/Semantics.md).
inline bool isKeepMaskType(Type t) { return t.isInteger(1) || t.isInteger(8); }
/// An additive mask's element types: those the runtime and every target
/// load (f64 is rounded to f32 first); an 8-bit float (f8E4M3FN, ...) is
/// none of them.
inline bool isAdditiveMaskType(Type t) {
  return t.isF16() || t.isBF16() || t.isF32() || t.isF64();
}

/// The keep decision of one keep-mask element `m` (i1 or i8): m itself, or
/// m != 0. The one place that turns mask bytes into a decision.
Value buildKeepBit(OpBuilder &b, Location loc, Value m);
} // namespace mlir::attn

#endif
