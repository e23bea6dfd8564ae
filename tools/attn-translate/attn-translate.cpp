//===- attn-translate.cpp - IR at any level to an artifact ----------------===//
//
// attn-translate takes IR from attn.sdpa down and writes an artifact. Today
// that is LLVM IR for the host CPU (--attn-to-llvmir, running
// attn-to-cpu-pipeline first when the input is not yet in the LLVM
// dialect); the NVVM (PTX, cubin) and SPIR-V artifacts register here too as
// their backends land. Every upstream translation stays available.
//
//===----------------------------------------------------------------------===//
#include "attn/InitAll.h"
#include "attn/Pipelines/Pipelines.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllTranslations.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "mlir/Tools/mlir-translate/Translation.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace {
llvm::cl::opt<bool> clMath("math",
                           llvm::cl::desc("--attn-to-llvmir: use the untiled "
                                          "reference lowering"),
                           llvm::cl::init(false));
llvm::cl::opt<int64_t> clBlockQ("block-q",
                                llvm::cl::desc("--attn-to-llvmir: query tile"),
                                llvm::cl::init(64));
llvm::cl::opt<int64_t> clBlockKv("block-kv",
                                 llvm::cl::desc("--attn-to-llvmir: key block"),
                                 llvm::cl::init(64));

/// True when the module still holds ops outside the LLVM dialect (other
/// than the module itself), i.e. the CPU pipeline has to run first.
bool needsLowering(ModuleOp module) {
  bool needs = false;
  module.walk([&](Operation *op) {
    if (op != module.getOperation() && !isa<LLVM::LLVMDialect>(op->getDialect()))
      needs = true;
  });
  return needs;
}

LogicalResult attnToLLVMIR(Operation *op, llvm::raw_ostream &os) {
  auto module = dyn_cast<ModuleOp>(op);
  if (!module)
    return op->emitError("attn-to-llvmir expects a builtin.module");
  if (needsLowering(module)) {
    PassManager pm(module.getContext());
    if (failed(applyPassManagerCLOptions(pm)))
      return failure();
    attn::AttnToCPUPipelineOptions options;
    options.math = clMath;
    options.blockQ = clBlockQ;
    options.blockKv = clBlockKv;
    attn::buildAttnToCPUPipeline(pm, options);
    if (failed(pm.run(module)))
      return module.emitError("attn-to-cpu-pipeline failed");
  }
  llvm::LLVMContext llvmContext;
  auto llvmModule = translateModuleToLLVMIR(module, llvmContext);
  if (!llvmModule)
    return module.emitError("translation to LLVM IR failed");
  llvmModule->print(os, nullptr);
  return success();
}
} // namespace

int main(int argc, char **argv) {
  attn::registerAllPasses();
  registerPassManagerCLOptions();
  registerAllTranslations();
  TranslateFromMLIRRegistration reg(
      "attn-to-llvmir",
      "attn IR at any level -> LLVM IR for the host CPU (runs "
      "attn-to-cpu-pipeline when needed)",
      attnToLLVMIR, [](DialectRegistry &registry) {
        attn::registerAllDialects(registry);
        registerAllToLLVMIRTranslations(registry);
      });
  return failed(mlirTranslateMain(argc, argv, "attn translation driver\n"));
}
