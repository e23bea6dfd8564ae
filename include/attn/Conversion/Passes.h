//===- Passes.h - attn conversion pass entry points ------------*- C++ -*-===//
#ifndef ATTN_CONVERSION_PASSES_H
#define ATTN_CONVERSION_PASSES_H

#include "attn/Conversion/AttnToLinalg/AttnToLinalg.h"
#include "mlir/Pass/Pass.h"

namespace mlir::attn {
#define GEN_PASS_DECL
#include "attn/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "attn/Conversion/Passes.h.inc"
} // namespace mlir::attn

#endif
