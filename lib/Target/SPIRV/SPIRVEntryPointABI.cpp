//===- SPIRVEntryPointABI.cpp - workgroup size of outlined SPIR-V kernels -===//
//
// convert-gpu-to-spirv needs spirv.entry_point_abi on every kernel; the
// workgroup size comes from the launch the kernel was outlined from
// (known_block_size), so this step of attn-to-spirv-pipeline copies it.
//
//===----------------------------------------------------------------------===//
#include "attn/Target/SPIRV/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVAttributes.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace {
struct SPIRVEntryPointABIPass
    : public PassWrapper<SPIRVEntryPointABIPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(SPIRVEntryPointABIPass)

  StringRef getArgument() const final { return "attn-spirv-entry-point-abi"; }
  StringRef getDescription() const final {
    return "Set spirv.entry_point_abi on GPU kernels from their "
           "known_block_size";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<spirv::SPIRVDialect>();
  }

  void runOnOperation() override {
    getOperation().walk([&](gpu::GPUFuncOp fn) {
      if (!fn.isKernel() || fn->hasAttr(spirv::getEntryPointABIAttrName()))
        return;
      std::optional<DenseI32ArrayAttr> block = fn.getKnownBlockSizeAttr()
                                                   ? std::optional(
                                                         fn.getKnownBlockSizeAttr())
                                                   : std::nullopt;
      if (!block) {
        fn.emitError("attn-spirv-entry-point-abi: the kernel has no "
                     "known_block_size to take its workgroup size from");
        signalPassFailure();
        return;
      }
      fn->setAttr(spirv::getEntryPointABIAttrName(),
                  spirv::getEntryPointABIAttr(&getContext(),
                                              block->asArrayRef()));
    });
  }
};
} // namespace

std::unique_ptr<Pass> mlir::attn::createSPIRVEntryPointABIPass() {
  return std::make_unique<SPIRVEntryPointABIPass>();
}

void mlir::attn::registerSPIRVEntryPointABIPass() {
  PassRegistration<SPIRVEntryPointABIPass>();
}
