//===- SPIRVLoopControl.cpp - keep the portable kernels' loops rolled -----===//
//
// The portable kernels' loops have constant trip counts (static shapes), so
// a driver is free to unroll them completely. Mesa's lavapipe does, and then
// takes minutes to compile or returns wrong results for tiles of a few KiB
// of private memory (e.g. Sq = Skv = 64, D = 64 with 16 x 16 tiles); see
// docs/Vulkan.md. This step of attn-to-spirv-pipeline marks every
// structured loop of the spirv.modules DontUnroll, a hint that drivers
// honour and that changes no result.
//
//===----------------------------------------------------------------------===//
#include "attn/Pipelines/Pipelines.h"

#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace {
struct SPIRVLoopControlPass
    : public PassWrapper<SPIRVLoopControlPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(SPIRVLoopControlPass)

  StringRef getArgument() const final { return "attn-spirv-dont-unroll"; }
  StringRef getDescription() const final {
    return "Mark every spirv.mlir.loop DontUnroll (contract: changes loop "
           "controls only; the module's semantics are unchanged)";
  }

  void runOnOperation() override {
    getOperation().walk([&](spirv::LoopOp loop) {
      loop.setLoopControl(spirv::LoopControl::DontUnroll);
    });
  }
};
} // namespace

std::unique_ptr<Pass> mlir::attn::createSPIRVLoopControlPass() {
  return std::make_unique<SPIRVLoopControlPass>();
}

void mlir::attn::registerSPIRVLoopControlPass() {
  PassRegistration<SPIRVLoopControlPass>();
}
