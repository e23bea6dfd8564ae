//===- TargetEnv.h - rewriting a gpu.module's SPIR-V targets ----*- C++ -*-===//
//
// The one loop by which the SPIR-V target's passes change what
// spirv-attach-target attached: each #spirv.target_env among a gpu.module's
// targets replaced by `update(env)`, every other target kept in place.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_LIB_TARGET_SPIRV_TARGETENV_H
#define ATTN_LIB_TARGET_SPIRV_TARGETENV_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"

namespace mlir::attn {

/// Replaces each #spirv.target_env target of `gpuModule` by `update` of it
/// (the targets attribute is rewritten only when some target changed).
/// Returns whether the module has a #spirv.target_env target.
inline bool
updateSPIRVTargetEnvs(gpu::GPUModuleOp gpuModule,
                      function_ref<spirv::TargetEnvAttr(spirv::TargetEnvAttr)>
                          update) {
  ArrayAttr targets = gpuModule.getTargetsAttr();
  SmallVector<Attribute> updated;
  bool found = false, changed = false;
  for (Attribute t : targets ? targets.getValue() : ArrayRef<Attribute>()) {
    auto env = dyn_cast<spirv::TargetEnvAttr>(t);
    if (!env) {
      updated.push_back(t);
      continue;
    }
    found = true;
    spirv::TargetEnvAttr next = update(env);
    changed |= next != env;
    updated.push_back(next);
  }
  if (changed)
    gpuModule.setTargetsAttr(ArrayAttr::get(gpuModule.getContext(), updated));
  return found;
}

} // namespace mlir::attn

#endif // ATTN_LIB_TARGET_SPIRV_TARGETENV_H
