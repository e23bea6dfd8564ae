//===- attn-opt.cpp - run attn and upstream passes on MLIR ----------------===//
#include "attn/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::attn::registerAllPasses();
  mlir::DialectRegistry registry;
  mlir::attn::registerAllDialects(registry);
  // gpu-module-to-binary (attn-to-nvvm-pipeline) translates to LLVM IR.
  mlir::registerAllToLLVMIRTranslations(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "attn optimizer driver\n", registry));
}
