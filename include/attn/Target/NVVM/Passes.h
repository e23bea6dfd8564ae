//===- Passes.h - attn passes of the NVVM target ----------------*- C++ -*-===//
#ifndef ATTN_TARGET_NVVM_PASSES_H
#define ATTN_TARGET_NVVM_PASSES_H

#include "attn/Target/NVVM/Transforms.h"
#include "mlir/Pass/Pass.h"

namespace mlir::attn {
#define GEN_PASS_DECL
#include "attn/Target/NVVM/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "attn/Target/NVVM/Passes.h.inc"
} // namespace mlir::attn

#endif
