//===- SPIRV16BitStorage.cpp - 16-bit buffers the target cannot compute on -===//
//
// The SPIR-V conversion keeps a 16-bit buffer (f16, or bf16's i16 from
// attn-spirv-bf16-storage) as 16-bit storage whenever the target declares
// StorageBuffer16BitAccess, and then needs Float16 (f16) or Int16 (i16) to
// do anything with what it loads. 16-bit storage comes with either option
// (f16=1 or int16=1), so f16 data with int16=1 f16=0, or bf16 data with
// f16=1 int16=0, failed to legalize every load (issue 22 item 6). Such a
// buffer can only be emulated with 32-bit words, which the conversion does
// when the target has no 16-bit storage: this step of attn-to-spirv-pipeline
// drops the 16-bit storage capabilities from such a gpu.module's target.
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
#define GEN_PASS_DEF_SPIRV16BITSTORAGEPASS
#include "attn/Target/SPIRV/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {
/// Whether `gpuModule` holds a memref of f16 (`wantFloat`) or i16 elements,
/// as a kernel argument or any value.
bool holdsBuffersOf(gpu::GPUModuleOp gpuModule, bool wantFloat) {
  auto matches = [&](Type t) {
    auto m = dyn_cast<MemRefType>(t);
    if (!m)
      return false;
    Type e = m.getElementType();
    return wantFloat ? e.isF16() : e.isInteger(16);
  };
  WalkResult walk = gpuModule.walk([&](Operation *op) {
    if (auto fn = dyn_cast<gpu::GPUFuncOp>(op))
      if (llvm::any_of(fn.getArgumentTypes(), matches))
        return WalkResult::interrupt();
    if (llvm::any_of(op->getResultTypes(), matches))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return walk.wasInterrupted();
}

struct SPIRV16BitStoragePass
    : mlir::attn::impl::SPIRV16BitStoragePassBase<SPIRV16BitStoragePass> {
  using Base::Base;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    getOperation().walk([&](gpu::GPUModuleOp gpuModule) {
      ArrayAttr targets = gpuModule.getTargetsAttr();
      if (!targets)
        return;
      const bool f16 = holdsBuffersOf(gpuModule, /*wantFloat=*/true);
      const bool i16 = holdsBuffersOf(gpuModule, /*wantFloat=*/false);
      // One kind of 16-bit buffer: emulating it is all it takes. Both
      // kinds (bf16 data with an f16 mask) stay as they are: emulating
      // the f16 buffers while Float16 is declared does not lower either.
      if (f16 == i16)
        return;
      SmallVector<Attribute> updated;
      bool changed = false;
      for (Attribute t : targets.getValue()) {
        auto env = dyn_cast<spirv::TargetEnvAttr>(t);
        spirv::VerCapExtAttr vce = env ? env.getTripleAttr() : nullptr;
        SmallVector<spirv::Capability> caps;
        if (vce)
          caps = llvm::to_vector(vce.getCapabilities());
        auto has = [&](spirv::Capability c) {
          return llvm::is_contained(caps, c);
        };
        // Loads of the module's 16-bit buffers are computable: keep.
        if (!vce || ((!f16 || has(spirv::Capability::Float16)) &&
                     (!i16 || has(spirv::Capability::Int16)))) {
          updated.push_back(t);
          continue;
        }
        SmallVector<spirv::Capability> kept;
        for (spirv::Capability c : caps)
          if (c != spirv::Capability::StorageBuffer16BitAccess &&
              c != spirv::Capability::StorageUniform16 &&
              c != spirv::Capability::StoragePushConstant16)
            kept.push_back(c);
        if (kept.size() == caps.size()) {
          updated.push_back(t);
          continue;
        }
        changed = true;
        auto triple = spirv::VerCapExtAttr::get(
            vce.getVersion(), kept, llvm::to_vector(vce.getExtensions()), ctx);
        updated.push_back(spirv::TargetEnvAttr::get(
            triple, env.getResourceLimits(), env.getClientAPI(),
            env.getVendorID(), env.getDeviceType(), env.getDeviceID()));
      }
      if (changed)
        gpuModule.setTargetsAttr(ArrayAttr::get(ctx, updated));
    });
  }
};
} // namespace
