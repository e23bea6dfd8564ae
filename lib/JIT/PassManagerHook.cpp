//===- PassManagerHook.cpp - tool instrumentation of the JIT's pipelines --===//
#include "attn/JIT/JIT.h"

#include "mlir/Pass/PassManager.h"

#include <mutex>

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
  return configure ? configure(pm) : success();
}
