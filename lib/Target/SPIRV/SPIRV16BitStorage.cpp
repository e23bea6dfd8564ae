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
#include "TargetEnv.h"
#include "attn/Target/SPIRV/Passes.h"
#include "attn/Target/SPIRV/Transforms.h"

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
/// Which 16-bit buffers `gpuModule` holds (memrefs of f16 or i16 elements,
/// as kernel arguments or any value), in one walk.
struct SixteenBitBuffers {
  bool f16 = false, i16 = false;
};
SixteenBitBuffers sixteenBitBuffersOf(gpu::GPUModuleOp gpuModule) {
  SixteenBitBuffers kinds;
  auto note = [&](Type t) {
    if (auto m = dyn_cast<MemRefType>(t)) {
      kinds.f16 |= m.getElementType().isF16();
      kinds.i16 |= m.getElementType().isInteger(16);
    }
  };
  gpuModule.walk([&](Operation *op) {
    if (auto fn = dyn_cast<gpu::GPUFuncOp>(op))
      llvm::for_each(fn.getArgumentTypes(), note);
    llvm::for_each(op->getResultTypes(), note);
  });
  return kinds;
}
} // namespace

LogicalResult mlir::attn::emulateUncomputable16BitStorage(ModuleOp module) {
  MLIRContext *ctx = module.getContext();
  bool refused = false;
  module.walk([&](gpu::GPUModuleOp gpuModule) {
    SixteenBitBuffers kinds = sixteenBitBuffersOf(gpuModule);
    if (!kinds.f16 && !kinds.i16)
      return;
    // Both kinds (bf16 data with an f16 mask) need Float16 and Int16 once
    // the target has 16-bit storage: emulating one kind in 32-bit words
    // while the other is 16-bit storage does not lower. Refused with the
    // reason instead of a legalization failure.
    if (kinds.f16 && kinds.i16) {
      bool storage16 = false, f16 = false, i16 = false;
      ArrayAttr targets = gpuModule.getTargetsAttr();
      for (Attribute t : targets ? targets.getValue() : ArrayRef<Attribute>())
        if (auto env = dyn_cast<spirv::TargetEnvAttr>(t))
          for (spirv::Capability c : env.getTripleAttr().getCapabilities()) {
            storage16 |= c == spirv::Capability::StorageBuffer16BitAccess;
            f16 |= c == spirv::Capability::Float16;
            i16 |= c == spirv::Capability::Int16;
          }
      if (storage16 && !(f16 && i16)) {
        gpuModule.emitError()
            << "bf16 data (16-bit integer buffers) with an f16 mask needs "
               "both Float16 and Int16 on a target with 16-bit storage, and "
               "this one lacks "
            << (f16 ? "Int16" : i16 ? "Float16" : "both")
            << ": give the mask as bf16 or f32, or the data as f16";
        refused = true;
      }
      return;
    }
    updateSPIRVTargetEnvs(gpuModule, [&](spirv::TargetEnvAttr env) {
      spirv::VerCapExtAttr vce = env.getTripleAttr();
      auto caps = llvm::to_vector(vce.getCapabilities());
      // Loads of the module's 16-bit buffers are computable: keep.
      if (llvm::is_contained(caps, kinds.f16 ? spirv::Capability::Float16
                                             : spirv::Capability::Int16))
        return env;
      SmallVector<spirv::Capability> kept;
      for (spirv::Capability c : caps)
        if (c != spirv::Capability::StorageBuffer16BitAccess &&
            c != spirv::Capability::StorageUniform16 &&
            c != spirv::Capability::StoragePushConstant16)
          kept.push_back(c);
      if (kept.size() == caps.size())
        return env;
      auto triple = spirv::VerCapExtAttr::get(
          vce.getVersion(), kept, llvm::to_vector(vce.getExtensions()), ctx);
      return spirv::TargetEnvAttr::get(triple, env.getResourceLimits(),
                                       env.getClientAPI(), env.getVendorID(),
                                       env.getDeviceType(), env.getDeviceID());
    });
  });
  return failure(refused);
}

namespace {
struct SPIRV16BitStoragePass
    : mlir::attn::impl::SPIRV16BitStoragePassBase<SPIRV16BitStoragePass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(mlir::attn::emulateUncomputable16BitStorage(getOperation())))
      signalPassFailure();
  }
};
} // namespace
