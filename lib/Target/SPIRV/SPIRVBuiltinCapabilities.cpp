//===- SPIRVBuiltinCapabilities.cpp - capabilities that built-ins need ----===//
//
// spirv-update-vce deduces a module's capabilities from its ops and types,
// not from the built-in variables it reads, so a kernel that reads
// SubgroupId or NumSubgroups (the coopmat kernel shares its matrices out
// among the subgroups of its workgroup) without any GroupNonUniform op
// would not declare GroupNonUniform, which SPIR-V requires of those
// built-ins and drivers may reject the module without. This step of
// attn-to-spirv-pipeline adds, to every spirv.module, the capability each
// subgroup built-in it declares needs.
//
//===----------------------------------------------------------------------===//
#include "attn/Target/SPIRV/Passes.h"

#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::attn {
#define GEN_PASS_DEF_SPIRVBUILTINCAPABILITIESPASS
#include "attn/Target/SPIRV/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {
/// The capability a compute built-in needs beyond Shader, if any.
std::optional<spirv::Capability> capabilityOf(spirv::BuiltIn builtIn) {
  switch (builtIn) {
  case spirv::BuiltIn::SubgroupId:
  case spirv::BuiltIn::NumSubgroups:
  case spirv::BuiltIn::SubgroupSize:
  case spirv::BuiltIn::SubgroupLocalInvocationId:
    return spirv::Capability::GroupNonUniform;
  default:
    return std::nullopt;
  }
}

struct SPIRVBuiltinCapabilitiesPass
    : mlir::attn::impl::SPIRVBuiltinCapabilitiesPassBase<
          SPIRVBuiltinCapabilitiesPass> {
  void runOnOperation() override {
    WalkResult walk = getOperation().walk([&](spirv::ModuleOp spv) {
      std::optional<spirv::VerCapExtAttr> vce = spv.getVceTriple();
      if (!vce)
        return WalkResult::advance();
      SmallVector<spirv::Capability> caps(vce->getCapabilities());
      bool changed = false;
      for (auto var : spv.getOps<spirv::GlobalVariableOp>()) {
        StringAttr name = var.getBuiltInAttr();
        if (!name)
          continue;
        std::optional<spirv::BuiltIn> builtIn =
            spirv::symbolizeBuiltIn(name.getValue());
        std::optional<spirv::Capability> cap =
            builtIn ? capabilityOf(*builtIn) : std::nullopt;
        if (!cap || llvm::is_contained(caps, *cap))
          continue;
        spirv::TargetEnvAttr env = spirv::lookupTargetEnv(spv);
        if (!env || !llvm::is_contained(env.getCapabilities(), *cap)) {
          var.emitError("attn-spirv-builtin-capabilities: the built-in ")
              << name.getValue() << " needs the "
              << spirv::stringifyCapability(*cap)
              << " capability, which the module's target environment does "
                 "not allow";
          return WalkResult::interrupt();
        }
        caps.push_back(*cap);
        changed = true;
      }
      if (changed) {
        SmallVector<spirv::Extension> exts(vce->getExtensions());
        spv.setVceTripleAttr(spirv::VerCapExtAttr::get(vce->getVersion(), caps,
                                                       exts, spv.getContext()));
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
