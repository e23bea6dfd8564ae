//===- SPIRVVulkanMemoryModel.cpp - Vulkan memory model for coopmat kernels -===//
//
// VK_KHR_cooperative_matrix requires a module using CooperativeMatrixKHR to
// declare the Vulkan memory model (SPV_KHR_vulkan_memory_model), but
// convert-gpu-to-spirv always emits `Logical GLSL450`. This last step of
// attn-to-spirv-pipeline{variant=coopmat}, on every spirv.module whose VCE
// triple has CooperativeMatrixKHR:
//   - sets the memory model to Vulkan and adds the VulkanMemoryModel
//     capability and the SPV_KHR_vulkan_memory_model extension;
//   - under that model workgroup-memory accesses are private unless marked,
//     and barriers make writes available/visible only when asked: every
//     load/store (scalar or cooperative matrix) through a Workgroup pointer
//     gets NonPrivatePointer, every ControlBarrier MakeAvailable|MakeVisible.
// A module without cooperative matrices is left alone; one whose target
// environment lacks VulkanMemoryModel is an error.
//
//===----------------------------------------------------------------------===//
#include "attn/Target/SPIRV/Passes.h"

#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::attn {
#define GEN_PASS_DEF_SPIRVVULKANMEMORYMODELPASS
#include "attn/Target/SPIRV/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

LogicalResult mlir::attn::applyVulkanMemoryModel(ModuleOp module) {
  bool failed = false;
  module.walk([&](spirv::ModuleOp spv) {
    std::optional<spirv::VerCapExtAttr> vce = spv.getVceTriple();
    if (!vce || !llvm::is_contained(vce->getCapabilities(),
                                    spirv::Capability::CooperativeMatrixKHR))
      return;
    spirv::TargetEnvAttr env = spirv::lookupTargetEnv(spv);
    if (!env || !llvm::is_contained(env.getCapabilities(),
                                    spirv::Capability::VulkanMemoryModel)) {
      spv.emitError("attn-spirv-vulkan-memory-model: the module uses "
                    "CooperativeMatrixKHR but its target environment does "
                    "not allow VulkanMemoryModel");
      failed = true;
      return;
    }
    MLIRContext *ctx = spv.getContext();
    SmallVector<spirv::Capability> caps(vce->getCapabilities());
    SmallVector<spirv::Extension> exts(vce->getExtensions());
    if (!llvm::is_contained(caps, spirv::Capability::VulkanMemoryModel))
      caps.push_back(spirv::Capability::VulkanMemoryModel);
    if (!llvm::is_contained(exts,
                            spirv::Extension::SPV_KHR_vulkan_memory_model))
      exts.push_back(spirv::Extension::SPV_KHR_vulkan_memory_model);
    spv.setVceTripleAttr(
        spirv::VerCapExtAttr::get(vce->getVersion(), caps, exts, ctx));
    spv.setMemoryModelAttr(
        spirv::MemoryModelAttr::get(ctx, spirv::MemoryModel::Vulkan));

    auto isWorkgroup = [](Value ptr) {
      auto t = dyn_cast<spirv::PointerType>(ptr.getType());
      return t && t.getStorageClass() == spirv::StorageClass::Workgroup;
    };
    auto nonPrivate = [&](spirv::MemoryAccessAttr old) {
      auto bits = old ? old.getValue() : spirv::MemoryAccess::None;
      return spirv::MemoryAccessAttr::get(
          ctx, bits | spirv::MemoryAccess::NonPrivatePointer);
    };
    spv.walk([&](Operation *op) {
      if (auto load = dyn_cast<spirv::LoadOp>(op)) {
        if (isWorkgroup(load.getPtr()))
          load.setMemoryAccessAttr(nonPrivate(load.getMemoryAccessAttr()));
      } else if (auto store = dyn_cast<spirv::StoreOp>(op)) {
        if (isWorkgroup(store.getPtr()))
          store.setMemoryAccessAttr(nonPrivate(store.getMemoryAccessAttr()));
      } else if (auto cl = dyn_cast<spirv::KHRCooperativeMatrixLoadOp>(op)) {
        if (isWorkgroup(cl.getPointer()))
          cl.setMemoryOperandAttr(nonPrivate(cl.getMemoryOperandAttr()));
      } else if (auto cs = dyn_cast<spirv::KHRCooperativeMatrixStoreOp>(op)) {
        if (isWorkgroup(cs.getPointer()))
          cs.setMemoryOperandAttr(nonPrivate(cs.getMemoryOperandAttr()));
      } else if (auto bar = dyn_cast<spirv::ControlBarrierOp>(op)) {
        bar.setMemorySemantics(bar.getMemorySemantics() |
                               spirv::MemorySemantics::MakeAvailable |
                               spirv::MemorySemantics::MakeVisible);
      }
    });
  });
  return failure(failed);
}

namespace {
struct SPIRVVulkanMemoryModelPass
    : mlir::attn::impl::SPIRVVulkanMemoryModelPassBase<
          SPIRVVulkanMemoryModelPass> {
  void runOnOperation() override {
    if (failed(mlir::attn::applyVulkanMemoryModel(getOperation())))
      signalPassFailure();
  }
};
} // namespace
