//===- LaunchInfo.cpp - kernels' launch information onto their launches ---===//
//
// attn-launch-info: after gpu-kernel-outlining, the launch descriptions a
// GPU target recorded on a function (attn.launches, per kernel symbol) move
// onto the gpu.launch_func ops of each kernel as attn.launch
// (TileDistribution.h describes the keys).
//
//===----------------------------------------------------------------------===//
#include "attn/Conversion/Passes.h"
#include "attn/Conversion/TileDistribution.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include "llvm/ADT/StringSet.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNLAUNCHINFOPASS
#include "attn/Conversion/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {
struct AttnLaunchInfoPass
    : mlir::attn::impl::AttnLaunchInfoPassBase<AttnLaunchInfoPass> {
  using Base::Base;
  void runOnOperation() override {
    bool failedAny = false;
    getOperation().walk([&](FunctionOpInterface fn) {
      auto launches = fn->getAttrOfType<DictionaryAttr>(kLaunchesAttrName);
      if (!launches)
        return;
      fn->removeAttr(kLaunchesAttrName);
      llvm::StringSet<> used;
      fn.walk([&](gpu::LaunchFuncOp launch) {
        std::string key = launchKey(launch.getKernelModuleName().getValue(),
                                    launch.getKernelName().getValue());
        auto info = launches.getAs<DictionaryAttr>(key);
        if (!info)
          return;
        launch->setAttr(kLaunchInfoAttrName, info);
        used.insert(key);
      });
      // A description without its launch: outlining has not run, or
      // renamed the kernel.
      for (NamedAttribute entry : launches)
        if (!used.contains(entry.getName().getValue())) {
          fn.emitError("attn-launch-info: no gpu.launch_func of kernel ")
              << entry.getName() << " (run it after gpu-kernel-outlining)";
          failedAny = true;
        }
    });
    if (failedAny)
      signalPassFailure();
  }
};
} // namespace
