//===- Transforms.h - the NVVM target's rewrites ----------------*- C++ -*-===//
#ifndef ATTN_TARGET_NVVM_TRANSFORMS_H
#define ATTN_TARGET_NVVM_TRANSFORMS_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>

namespace mlir::attn {

/// attn-nvvm-max-registers (Passes.td): `nvvm.maxnreg` on every outlined
/// kernel of `module` that uses mma.sync. Fails, with an error on the
/// module, when `maxRegisters` is outside [0, 255].
LogicalResult setNVVMMaxRegisters(ModuleOp module, int64_t maxRegisters);

} // namespace mlir::attn

#endif
