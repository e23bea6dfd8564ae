//===- attn-translate.cpp - IR at any level to an artifact ----------------===//
//
// attn-translate takes IR from attn.sdpa down and writes an artifact. Today
// that is LLVM IR for the host CPU (--attn-to-llvmir, running
// attn-to-cpu-pipeline first when the input is not yet in the LLVM
// dialect) and SPIR-V for Vulkan (--attn-to-spirv --variant=portable,
// running attn-to-spirv-pipeline first, with launch metadata beside the
// .spv); the NVVM artifacts register here too as their backend lands. Every upstream translation stays available.
//
//===----------------------------------------------------------------------===//
#include "attn/InitAll.h"
#include "attn/Pipelines/Pipelines.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
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
llvm::cl::opt<std::string>
    clVariant("variant",
              llvm::cl::desc("--attn-to-spirv: portable or coopmat"),
              llvm::cl::init("portable"));
llvm::cl::opt<std::string>
    clMetadata("spirv-metadata",
               llvm::cl::desc("--attn-to-spirv: where to write the launch "
                              "metadata (default: the output path with "
                              ".json instead of .spv)"),
               llvm::cl::init(""));

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
/// The -o of mlirTranslateMain (a function-local option there, found by
/// name once the command line is parsed).
std::string outputPath() {
  auto &options = llvm::cl::getRegisteredOptions();
  auto it = options.find("o");
  if (it == options.end())
    return "-";
  return static_cast<llvm::cl::opt<std::string> *>(it->second)->getValue();
}

LogicalResult attnToSPIRV(Operation *op, llvm::raw_ostream &os) {
  auto module = dyn_cast<ModuleOp>(op);
  if (!module)
    return op->emitError("attn-to-spirv expects a builtin.module");
  bool lowered = !module.getOps<spirv::ModuleOp>().empty();
  if (!lowered) {
    PassManager pm(module.getContext());
    if (failed(applyPassManagerCLOptions(pm)))
      return failure();
    attn::AttnToSPIRVPipelineOptions options;
    options.variant = clVariant;
    options.blockQ = clBlockQ.getNumOccurrences() ? clBlockQ : 16;
    options.blockKv = clBlockKv.getNumOccurrences() ? clBlockKv : 16;
    std::string error;
    if (failed(attn::buildAttnToSPIRVPipeline(pm, options, error)))
      return module.emitError(error);
    if (failed(pm.run(module)))
      return module.emitError("attn-to-spirv-pipeline failed");
  }
  attn::SPIRVKernelArtifact artifact;
  std::string error;
  if (failed(attn::extractSPIRVKernel(module, artifact, error)))
    return module.emitError(error);
  os.write(reinterpret_cast<const char *>(artifact.words.data()),
           artifact.words.size() * sizeof(uint32_t));

  // The launch metadata goes beside the .spv, unless named explicitly.
  std::string metadataPath = clMetadata;
  if (metadataPath.empty()) {
    std::string out = outputPath();
    if (out == "-")
      return success(); // stdout: nowhere beside it
    llvm::StringRef base(out);
    metadataPath = (base.ends_with(".spv") ? base.drop_back(4) : base).str() +
                   ".json";
  }
  std::error_code ec;
  llvm::raw_fd_ostream meta(metadataPath, ec);
  if (ec)
    return module.emitError("cannot write " + metadataPath + ": " +
                            ec.message());
  meta << attn::spirvKernelMetadataJSON(artifact, clVariant);
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
  TranslateFromMLIRRegistration spirvReg(
      "attn-to-spirv",
      "attn IR at any level -> a SPIR-V binary for Vulkan (runs "
      "attn-to-spirv-pipeline when needed), plus its launch metadata "
      "(.json beside the output, or --spirv-metadata)",
      attnToSPIRV,
      [](DialectRegistry &registry) { attn::registerAllDialects(registry); });
  return failed(mlirTranslateMain(argc, argv, "attn translation driver\n"));
}
