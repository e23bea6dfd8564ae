//===- Internal.h - runtime-private pieces shared by its source files ----===//
#ifndef ATTN_RUNTIME_SRC_INTERNAL_H
#define ATTN_RUNTIME_SRC_INTERNAL_H

#include "attn/runtime/Backend.h"
#include "attn/runtime/attn.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

/// A compiled kernel. The spec is the normalized one the compiler saw.
struct attn_kernel {
  attn_spec spec;
  attn_target target;
  uint64_t context = 0; // its context's id (device buffers check it)
  std::string source;
  std::unique_ptr<attn::Executable> executable;
  // What attn_kernel_get_info's strings point into.
  mutable std::mutex infoMutex;
  mutable attn::KernelInfo info;
};

/// A compiled attention layer.
struct attn_mha_kernel {
  attn_mha_spec spec;
  attn_target target;
  uint64_t context = 0; // its context's id (device buffers check it)
  std::string source;
  std::unique_ptr<attn::LayerExecutable> executable;
};

namespace attn {
namespace detail {

/// Checks a layer spec; on success writes it normalized (heads_kv,
/// head_dim, value_dim, seq_kv, kv_embed filled in, flags 0/1).
bool validateMhaSpec(const attn_mha_spec &spec, attn_target target,
                     attn_mha_spec &normalized, std::string &error);

/// Checks a layer launch's pointers against its normalized spec.
bool validateMhaLaunch(const attn_mha_spec &spec, attn_target target,
                       const attn_mha_args &args, std::string &error);

/// Every field of a normalized layer spec, the target and the compiler's
/// configuration, as one cache key.
std::string mhaCacheKey(const attn_mha_spec &spec, attn_target target,
                        const std::string &configuration);

/// Every field that selects a distinct kernel, in a fixed order, so that two
/// normalized specs compare equal exactly when they compile to the same code.
struct CacheKey {
  int target, dtype;
  int64_t batch, headsQ, headsKv, seqQ, seqKv, headDim, valueDim;
  int causal, mask, maskDtype;
  double scale, dropout;
  int lse, variant;
  int64_t blockQ, blockKv, kvSplits;
  std::string configuration; // Compiler::configuration()

  bool operator<(const CacheKey &o) const;
};

CacheKey makeCacheKey(const attn_spec &normalized, attn_target target,
                      std::string configuration = {});

/// Checks every field of `spec` and `target`; on success writes the
/// normalized spec (value_dim filled in, flags 0/1, unused mask dtype reset)
/// to `normalized`. On failure returns false with `error` set.
bool validateSpec(const attn_spec &spec, attn_target target,
                  attn_spec &normalized, std::string &error);

/// Checks a valid, normalized spec against what `target`'s kernels can
/// index (SPIR-V: 32-bit indices); on failure returns false with `error`
/// set (attn_compile reports ATTN_ERROR_UNSUPPORTED).
bool checkTargetLimits(const attn_spec &spec, attn_target target,
                       std::string &error);

/// Checks launch arguments against a kernel's spec and target and builds the
/// resolved views the executable runs on. On failure returns false with
/// `error` set and `out` unspecified; nothing has been written to any tensor.
bool validateLaunch(const attn_spec &spec, attn_target target,
                    const attn_launch_args &args, KernelArgs &out,
                    std::string &error);

/// The compiler registered for `target`, or null.
std::shared_ptr<Compiler> findCompiler(attn_target target);

/// Whether `target` is one of the attn_target enumerators.
bool isValidTarget(int target);

} // namespace detail
} // namespace attn

namespace attn::detail {
/// A process-unique id per context (never reused, unlike addresses).
inline uint64_t nextContextId() {
  static std::atomic<uint64_t> next{0};
  return ++next;
}
} // namespace attn::detail

/// The kernel cache. Kernels live as long as the context.
struct attn_context {
  const uint64_t id = attn::detail::nextContextId();
  mutable std::mutex mutex;
  std::map<attn::detail::CacheKey, std::unique_ptr<attn_kernel>> cache;
  std::map<std::string, std::unique_ptr<attn_mha_kernel>> layers;
};

#endif // ATTN_RUNTIME_SRC_INTERNAL_H
