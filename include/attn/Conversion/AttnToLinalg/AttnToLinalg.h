//===- AttnToLinalg.h - reference lowering of attn.sdpa --------*- C++ -*-===//
#ifndef ATTN_CONVERSION_ATTNTOLINALG_ATTNTOLINALG_H
#define ATTN_CONVERSION_ATTNTOLINALG_ATTNTOLINALG_H

#include "mlir/IR/PatternMatch.h"

namespace mlir::attn {
/// Patterns rewriting attn.sdpa into untiled linalg on tensors.
void populateAttnToLinalgPatterns(RewritePatternSet &patterns);
} // namespace mlir::attn

#endif
