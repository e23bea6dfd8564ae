//===- PassManagerHook.cpp - tool instrumentation of the JIT's pipelines --===//
#include "attn/JIT/JIT.h"

#include "mlir/Pass/PassManager.h"

#include <cstdlib>
#include <mutex>
#include <string>

using namespace mlir;

namespace {
std::mutex &hookMutex() {
  static std::mutex m;
  return m;
}
attn::jit::PassManagerConfigurator &hook() {
  static attn::jit::PassManagerConfigurator h;
  return h;
}
} // namespace

void attn::jit::setPassManagerConfigurator(PassManagerConfigurator configure) {
  std::lock_guard<std::mutex> lock(hookMutex());
  hook() = std::move(configure);
}

LogicalResult attn::jit::configurePassManager(PassManager &pm) {
  PassManagerConfigurator configure;
  {
    std::lock_guard<std::mutex> lock(hookMutex());
    configure = hook();
  }
  if (configure)
    return configure(pm);
  const char *print = std::getenv("ATTN_PRINT_IR_AFTER_ALL");
  if (print && *print && std::string(print) != "0")
    // After every pass, whether or not it changed anything, the op it ran
    // on (a pass nested on gpu.module prints that module): the whole module
    // would need the context single-threaded, which the JIT's is not.
    pm.enableIRPrinting(
        /*shouldPrintBeforePass=*/[](Pass *, Operation *) { return false; },
        /*shouldPrintAfterPass=*/[](Pass *, Operation *) { return true; },
        /*printModuleScope=*/false, /*printAfterOnlyOnChange=*/false);
  return success();
}
