//===- Passes.h - attn passes of the NVVM target ----------------*- C++ -*-===//
#ifndef ATTN_TARGET_NVVM_PASSES_H
#define ATTN_TARGET_NVVM_PASSES_H

#include "mlir/Pass/Pass.h"

#include <memory>

namespace mlir::attn {

/// The step of attn-to-nvvm-pipeline that sets nvvm.maxnreg on the mma.sync
/// kernels after outlining (attn-nvvm-max-registers).
std::unique_ptr<Pass> createNVVMMaxRegistersPass();
void registerNVVMMaxRegistersPass();

} // namespace mlir::attn

#endif
