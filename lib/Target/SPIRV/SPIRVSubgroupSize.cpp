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
#include "attn/Target/SPIRV/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVAttributes.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace {
struct SPIRVSubgroupSizePass
    : public PassWrapper<SPIRVSubgroupSizePass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(SPIRVSubgroupSizePass)

  SPIRVSubgroupSizePass() = default;
  SPIRVSubgroupSizePass(const SPIRVSubgroupSizePass &other)
      : PassWrapper(other) {}
  explicit SPIRVSubgroupSizePass(int64_t n) { size = n; }

  StringRef getArgument() const final { return "attn-spirv-subgroup-size"; }
  StringRef getDescription() const final {
    return "Record the subgroup size the kernels need: in the SPIR-V "
           "targets' resource limits (for gpu.shuffle's lowering) and as the "
           "module attribute attn.spirv_subgroup_size (launch metadata). "
           "Requires spirv-attach-target to have run";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<spirv::SPIRVDialect>();
  }

  Option<int64_t> size{*this, "size",
                       llvm::cl::desc("Invocations per subgroup (> 0)"),
                       llvm::cl::init(0)};

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (size < 1 || size > 128) {
      module.emitError("attn-spirv-subgroup-size: size is ")
          << size << "; it must be in [1, 128]";
      return signalPassFailure();
    }
    bool any = false;
    WalkResult walk = module.walk([&](gpu::GPUModuleOp gpuModule) {
      ArrayAttr targets = gpuModule.getTargetsAttr();
      SmallVector<Attribute> updated;
      bool found = false;
      for (Attribute t : targets ? targets.getValue() : ArrayRef<Attribute>()) {
        auto env = dyn_cast<spirv::TargetEnvAttr>(t);
        if (!env) {
          updated.push_back(t);
          continue;
        }
        found = true;
        spirv::ResourceLimitsAttr r = env.getResourceLimits();
        auto limits = spirv::ResourceLimitsAttr::get(
            &getContext(), r.getMaxComputeSharedMemorySize(),
            r.getMaxComputeWorkgroupInvocations(),
            r.getMaxComputeWorkgroupSize(), static_cast<int>(size),
            r.getMinSubgroupSize(), r.getMaxSubgroupSize(),
            r.getCooperativeMatrixPropertiesKhr(),
            r.getCooperativeMatrixPropertiesNv());
        updated.push_back(spirv::TargetEnvAttr::get(
            env.getTripleAttr(), limits, env.getClientAPI(),
            env.getVendorID(), env.getDeviceType(), env.getDeviceID()));
      }
      if (!found) {
        gpuModule.emitError("attn-spirv-subgroup-size: the gpu.module has no "
                            "#spirv.target_env target (run "
                            "spirv-attach-target first)");
        return WalkResult::interrupt();
      }
      gpuModule.setTargetsAttr(ArrayAttr::get(&getContext(), updated));
      any = true;
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    if (any)
      module->setAttr(attn::kSPIRVSubgroupSizeAttr,
                      IntegerAttr::get(IntegerType::get(&getContext(), 32),
                                       size));
  }
};
} // namespace

std::unique_ptr<Pass> mlir::attn::createSPIRVSubgroupSizePass(int64_t size) {
  return std::make_unique<SPIRVSubgroupSizePass>(size);
}

void mlir::attn::registerSPIRVSubgroupSizePass() {
  PassRegistration<SPIRVSubgroupSizePass>();
}
