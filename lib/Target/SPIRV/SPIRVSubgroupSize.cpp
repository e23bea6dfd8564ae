//===- SPIRVSubgroupSize.cpp - the subgroup size a SPIR-V kernel needs ----===//
//
// A kernel written for subgroups of N invocations (the portable variant's
// subgroup kernel, the coopmat kernel) needs two things recorded after
// spirv-attach-target: the SPIR-V target's resource limits must say N
// (convert-gpu-to-spirv lowers gpu.shuffle only when its width equals the
// target's subgroup size), and the launch metadata must carry N, so the
// runtime creates the pipeline with that subgroup size. This step of
// attn-to-spirv-pipeline sets both: subgroup_size in every gpu.module's
// #spirv.target_env, and the host module's attn.spirv_subgroup_size, which
// extractSPIRVKernel reads.
//
//===----------------------------------------------------------------------===//
#include "TargetEnv.h"
#include "attn/Target/SPIRV/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVAttributes.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::attn {
#define GEN_PASS_DEF_SPIRVSUBGROUPSIZEPASS
#include "attn/Target/SPIRV/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

LogicalResult mlir::attn::setSPIRVSubgroupSize(ModuleOp module, int64_t size) {
  if (size < 1 || size > 128)
    return module.emitError("attn-spirv-subgroup-size: size is ")
           << size << "; it must be in [1, 128]";
  MLIRContext *ctx = module.getContext();
  bool any = false;
  WalkResult walk = module.walk([&](gpu::GPUModuleOp gpuModule) {
    bool found = updateSPIRVTargetEnvs(gpuModule, [&](spirv::TargetEnvAttr env) {
      spirv::ResourceLimitsAttr r = env.getResourceLimits();
      auto limits = spirv::ResourceLimitsAttr::get(
          ctx, r.getMaxComputeSharedMemorySize(),
          r.getMaxComputeWorkgroupInvocations(), r.getMaxComputeWorkgroupSize(),
          static_cast<int>(size), r.getMinSubgroupSize(),
          r.getMaxSubgroupSize(), r.getCooperativeMatrixPropertiesKhr(),
          r.getCooperativeMatrixPropertiesNv());
      return spirv::TargetEnvAttr::get(env.getTripleAttr(), limits,
                                       env.getClientAPI(), env.getVendorID(),
                                       env.getDeviceType(), env.getDeviceID());
    });
    if (!found) {
      gpuModule.emitError("attn-spirv-subgroup-size: the gpu.module has no "
                          "#spirv.target_env target (run "
                          "spirv-attach-target first)");
      return WalkResult::interrupt();
    }
    any = true;
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  if (any)
    module->setAttr(kSPIRVSubgroupSizeAttr,
                    IntegerAttr::get(IntegerType::get(ctx, 32), size));
  return success();
}

namespace {
struct SPIRVSubgroupSizePass
    : mlir::attn::impl::SPIRVSubgroupSizePassBase<SPIRVSubgroupSizePass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(mlir::attn::setSPIRVSubgroupSize(getOperation(), size)))
      signalPassFailure();
  }
};
} // namespace
