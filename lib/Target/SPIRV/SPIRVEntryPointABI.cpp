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

namespace mlir::attn {
#define GEN_PASS_DEF_SPIRVENTRYPOINTABIPASS
#include "attn/Target/SPIRV/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

LogicalResult mlir::attn::setSPIRVEntryPointABI(ModuleOp module) {
  bool failed = false;
  module.walk([&](gpu::GPUFuncOp fn) {
    if (!fn.isKernel() || fn->hasAttr(spirv::getEntryPointABIAttrName()))
      return;
    std::optional<DenseI32ArrayAttr> block =
        fn.getKnownBlockSizeAttr() ? std::optional(fn.getKnownBlockSizeAttr())
                                   : std::nullopt;
    if (!block) {
      fn.emitError("attn-spirv-entry-point-abi: the kernel has no "
                   "known_block_size to take its workgroup size from");
      failed = true;
      return;
    }
    fn->setAttr(
        spirv::getEntryPointABIAttrName(),
        spirv::getEntryPointABIAttr(module.getContext(), block->asArrayRef()));
  });
  return failure(failed);
}

namespace {
struct SPIRVEntryPointABIPass
    : mlir::attn::impl::SPIRVEntryPointABIPassBase<SPIRVEntryPointABIPass> {
  void runOnOperation() override {
    if (failed(mlir::attn::setSPIRVEntryPointABI(getOperation())))
      signalPassFailure();
  }
};
} // namespace
