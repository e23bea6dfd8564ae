//===- NVVMMaxRegisters.cpp - a register cap for tensor-core kernels ------===//
//
// ptxas sizes a kernel's registers for an occupancy target it derives from
// .maxntid: for the 256-thread D = 64 mma.sync kernels it aims at two
// workgroups per SM, caps them at 128 registers and spills (4-8 bytes), and
// --maxrregcount does not override that. A .maxnreg directive does. This
// step of attn-to-nvvm-pipeline gives every outlined kernel that uses
// mma.sync (nvgpu.mma.sync or nvvm.mma.sync) `nvvm.maxnreg`: max-registers,
// or the budget the kernel's conversion recorded in its body
// (kNVVMMaxRegistersAttr, AttnToNVGPU.h: 168 for three 4-warp workgroups
// per SM; the attribute is removed), or by default the most one workgroup
// of known_block_size threads can have (65536 / threads, at most 255, a
// multiple of 8), so ptxas uses what the kernel needs (one workgroup per
// SM instead of a spill). It runs after gpu-kernel-outlining, which does
// not carry gpu.launch attributes over.
//
//===----------------------------------------------------------------------===//
#include "attn/Conversion/AttnToNVGPU/AttnToNVGPU.h"
#include "attn/Target/NVVM/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <algorithm>

using namespace mlir;

namespace {
struct NVVMMaxRegistersPass
    : public PassWrapper<NVVMMaxRegistersPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(NVVMMaxRegistersPass)

  NVVMMaxRegistersPass() = default;
  NVVMMaxRegistersPass(const NVVMMaxRegistersPass &other)
      : PassWrapper(other) {}

  StringRef getArgument() const final { return "attn-nvvm-max-registers"; }
  StringRef getDescription() const final {
    return "Set nvvm.maxnreg on outlined kernels that use mma.sync: "
           "max-registers, else the budget an op of the kernel carries in "
           "attn.nvvm_max_registers (then removed), else 65536 / "
           "known_block_size threads (at most 255, a multiple of 8), so "
           "ptxas does not cap them lower for occupancy and spill";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<NVVM::NVVMDialect>();
  }

  Option<int64_t> maxRegisters{
      *this, "max-registers",
      llvm::cl::desc("Registers per thread (0 = what one workgroup of the "
                     "kernel's size can have)"),
      llvm::cl::init(0)};

  void runOnOperation() override {
    if (maxRegisters < 0 || maxRegisters > 255) {
      getOperation().emitError("attn-nvvm-max-registers: max-registers is ")
          << static_cast<int64_t>(maxRegisters) << "; it must be in [0, 255]";
      return signalPassFailure();
    }
    getOperation().walk([&](gpu::GPUFuncOp fn) {
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
        if (auto a = op->getAttrOfType<IntegerAttr>(attn::kNVVMMaxRegistersAttr)) {
          recorded = a.getInt();
          op->removeAttr(attn::kNVVMMaxRegistersAttr);
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
                  IntegerAttr::get(IntegerType::get(&getContext(), 32), regs));
    });
  }
};
} // namespace

std::unique_ptr<Pass> mlir::attn::createNVVMMaxRegistersPass() {
  return std::make_unique<NVVMMaxRegistersPass>();
}

void mlir::attn::registerNVVMMaxRegistersPass() {
  PassRegistration<NVVMMaxRegistersPass>();
}
