//===- Passes.h - attn passes of the cpu target -----------------*- C++ -*-===//
#ifndef ATTN_TARGET_CPU_PASSES_H
#define ATTN_TARGET_CPU_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::attn {
#define GEN_PASS_DECL
#include "attn/Target/CPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "attn/Target/CPU/Passes.h.inc"
} // namespace mlir::attn

#endif
