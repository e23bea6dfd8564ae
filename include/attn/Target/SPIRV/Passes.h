//===- Passes.h - attn passes of the SPIR-V target --------------*- C++ -*-===//
#ifndef ATTN_TARGET_SPIRV_PASSES_H
#define ATTN_TARGET_SPIRV_PASSES_H

#include "attn/Target/SPIRV/Transforms.h"
#include "mlir/Pass/Pass.h"

namespace mlir::attn {
#define GEN_PASS_DECL
#include "attn/Target/SPIRV/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "attn/Target/SPIRV/Passes.h.inc"
} // namespace mlir::attn

#endif
