//===- InitAll.cpp - registration shared by attn-opt, attn-translate, JIT -===//
#include "attn/InitAll.h"

#include "attn/Conversion/Passes.h"
#include "attn/Dialect/Attn/IR/AttnDialect.h"
#include "attn/Dialect/Attn/Transforms/Passes.h"
#include "attn/Pipelines/Pipelines.h"
#include "attn/Target/CPU/Passes.h"
#include "attn/Target/NVVM/Passes.h"
#include "attn/Target/SPIRV/Passes.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/IR/DialectRegistry.h"

void mlir::attn::registerAllDialects(DialectRegistry &registry) {
  registry.insert<AttnDialect>();
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
}

void mlir::attn::registerAllPasses() {
  mlir::registerAllPasses();
  registerAttnPasses();
  registerAttnConversionPasses();
  registerAttnTargetCPUPasses();
  registerAttnTargetNVVMPasses();
  registerAttnTargetSPIRVPasses();
  registerAttnPipelines();
}
