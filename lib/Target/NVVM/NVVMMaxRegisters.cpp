//===- NVVMMaxRegisters.cpp - a register cap for tensor-core kernels ------===//
//
// ptxas sizes a kernel's registers for an occupancy target it derives from
// .maxntid: for the 256-thread D = 64 mma.sync kernels it aims at two
// workgroups per SM, caps them at 128 registers and spills (4-8 bytes), and
// --maxrregcount does not override that. A .maxnreg directive does. This
// step of attn-to-nvvm-pipeline gives every outlined kernel that uses
// mma.sync (nvgpu.mma.sync or nvvm.mma.sync) `nvvm.maxnreg`: max-registers,
// or the budget the kernel's conversion recorded in its body
// (kNVVMMaxRegistersAttr, TilesToNVGPU.h: 168 for three 4-warp workgroups
// per SM; the attribute is removed), or by default the most one workgroup
// of known_block_size threads can have (65536 / threads, at most 255, a
// multiple of 8), so ptxas uses what the kernel needs (one workgroup per
// SM instead of a spill). It runs after gpu-kernel-outlining, which does
// not carry gpu.launch attributes over.
//
//===----------------------------------------------------------------------===//
#include "attn/Conversion/TilesToNVGPU/TilesToNVGPU.h"
#include "attn/Target/NVVM/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <algorithm>

namespace mlir::attn {
#define GEN_PASS_DEF_NVVMMAXREGISTERSPASS
#include "attn/Target/NVVM/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

LogicalResult mlir::attn::setNVVMMaxRegisters(ModuleOp module,
                                              int64_t maxRegisters) {
  if (maxRegisters < 0 || maxRegisters > 255)
    return module.emitError("attn-nvvm-max-registers: max-registers is ")
           << maxRegisters << "; it must be in [0, 255]";
  MLIRContext *ctx = module.getContext();
  module.walk([&](gpu::GPUFuncOp fn) {
    if (!fn.isKernel())
      return;
    bool usesMma = fn.walk([](Operation *op) {
                       return isa<nvgpu::MmaSyncOp, NVVM::MmaOp>(op)
                                  ? WalkResult::interrupt()
                                  : WalkResult::advance();
                     }).wasInterrupted();
    if (!usesMma)
      return;
    int64_t regs = maxRegisters;
    // The conversion's budget, if any (and the attribute goes either way).
    int64_t recorded = 0;
    fn.walk([&](Operation *op) {
      if (auto a = op->getAttrOfType<IntegerAttr>(kNVVMMaxRegistersAttr)) {
        recorded = a.getInt();
        op->removeAttr(kNVVMMaxRegistersAttr);
      }
    });
    if (regs == 0 && recorded > 0 && recorded <= 255)
      regs = recorded / 8 * 8;
    if (regs == 0) {
      int64_t threads = 1;
      if (DenseI32ArrayAttr block = fn.getKnownBlockSizeAttr())
        for (int32_t n : block.asArrayRef())
          threads *= n;
      else
        threads = 1024; // unknown: the most a workgroup may have
      regs = std::min<int64_t>(255, (65536 / threads) / 8 * 8);
    }
    fn->setAttr(NVVM::NVVMDialect::getMaxnregAttrName(),
                IntegerAttr::get(IntegerType::get(ctx, 32), regs));
  });
  return success();
}

namespace {
struct NVVMMaxRegistersPass
    : mlir::attn::impl::NVVMMaxRegistersPassBase<NVVMMaxRegistersPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(mlir::attn::setNVVMMaxRegisters(getOperation(), maxRegisters)))
      signalPassFailure();
  }
};
} // namespace
