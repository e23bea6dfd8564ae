//===- Registry.cpp - the per-target compiler registry ---------------------===//
#include "Internal.h"

#include <map>
#include <mutex>

namespace {
struct Registry {
  std::mutex mutex;
  std::map<int, std::shared_ptr<attn::Compiler>> compilers;
};

// A function-local static, because compilers register from static
// initializers of other libraries, whose order against ours is unspecified.
Registry &registry() {
  static Registry *r = new Registry; // never destroyed: late unloads may query it
  return *r;
}
} // namespace

void attn::registerCompiler(attn_target target,
                            std::shared_ptr<Compiler> compiler) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (compiler)
    r.compilers[static_cast<int>(target)] = std::move(compiler);
  else
    r.compilers.erase(static_cast<int>(target));
}

std::shared_ptr<attn::Compiler> attn::detail::findCompiler(attn_target target) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.compilers.find(static_cast<int>(target));
  return it == r.compilers.end() ? nullptr : it->second;
}
