//===- Backend.h - the seam between the runtime and whoever compiles ----*- C++ -*-===//
//
// The runtime (this folder) validates calls, owns the cache and runs
// executables; it never sees MLIR. A compiler (the JIT layer in lib/JIT,
// or an AOT loader) turns a spec into an Executable and registers itself
// here per target.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_BACKEND_H
#define ATTN_RUNTIME_BACKEND_H

#include "attn/runtime/attn.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace attn {

/// Bytes per element of `dtype` (bool: 1, as masks are stored).
int64_t dtypeBytes(attn_dtype dtype);

/// A strided view with every dimension resolved: the runtime hands these to
/// executables after validation. Broadcast mask dimensions have stride 0
/// and the full extent (B or Hq). Unused tensors have data == nullptr.
struct TensorView {
  void *data = nullptr;
  int64_t rank = 0;
  int64_t shape[4] = {0, 0, 0, 0};
  int64_t strides[4] = {0, 0, 0, 0};
};

/// Validated, normalized launch arguments.
struct KernelArgs {
  TensorView q, k, v, mask, out, lse;
  uint64_t seed = 0;
  void *stream = nullptr;
  /// The context of the kernel launched (attn_context's id): device
  /// buffers of another context are refused.
  uint64_t context = 0;
};

/// What a compiled kernel is (attn_kernel_get_info): what the target chose
/// where the spec left it open.
struct KernelInfo {
  std::string variant; // the kernel the target chose ("tiled", "coopmat", ...)
  std::string device;  // the device it runs on ("" when not known)
  int64_t blockQ = 0, blockKv = 0; // 0: not tiled / not known
  int64_t kvSplits = 0; // key chunks of the last launch (0: none yet)
};

/// A launch submitted without waiting (attn_vulkan_launch_async).
class Submission {
public:
  virtual ~Submission() = default;
  /// Blocks until the launch finished and returns its status (the same on
  /// every call); host outputs are written here.
  virtual attn_status wait(std::string &error) = 0;
  /// Whether the launch has finished (wait() would not block).
  virtual bool ready() = 0;
  /// The kernel's device time in ms, after wait() (negative: not measured).
  virtual double kernelMs() const = 0;
};

/// A compiled kernel ready to run on one backend.
class Executable {
public:
  virtual ~Executable() = default;
  /// Runs on validated arguments. On failure, sets `error` and returns a
  /// non-OK status.
  virtual attn_status run(const KernelArgs &args, std::string &error) = 0;
  /// Submits a launch and returns it in `pending` without waiting unless
  /// `wait`. Backends without asynchronous launches refuse.
  virtual attn_status submit(const KernelArgs &args, bool wait,
                             std::shared_ptr<Submission> &pending,
                             std::string &error) {
    (void)args;
    (void)wait;
    (void)pending;
    error = "this target has no asynchronous launches";
    return ATTN_ERROR_UNSUPPORTED;
  }
  /// Fills what the backend knows about the kernel; called from any thread
  /// (the split count of a launch in flight on another thread may or may
  /// not be the one reported).
  virtual void kernelInfo(KernelInfo &info) const { (void)info; }
};

/// The result of a compilation.
struct CompileResult {
  std::unique_ptr<Executable> executable;
  /// The IR the kernel was compiled from (for attn_kernel_source).
  std::string source;
};

/// A compiled attention layer (attn_mha_compile) ready to run.
class LayerExecutable {
public:
  virtual ~LayerExecutable() = default;
  /// Runs on validated arguments (the pointers the spec uses are set).
  virtual attn_status run(const attn_mha_args &args, std::string &error) = 0;
  /// The same for a layer of the context with id `context` (what
  /// attn_mha_launch calls): device buffers, where a target takes them,
  /// must be that context's. By default the context is not needed.
  virtual attn_status run(const attn_mha_args &args, uint64_t context,
                          std::string &error) {
    (void)context;
    return run(args, error);
  }
};

/// One tensor of a layer's kernel, in the order of its entry function's
/// arguments (buildMhaKernelSource): x, [kv], w_q, w_k, w_v | w_qkv, w_o,
/// [b_q, b_k, b_v | b_qkv, b_o], y. Dense, of the spec's dtype.
struct LayerOperand {
  const char *name = "";
  void *data = nullptr;
  int rank = 0;
  int64_t shape[3] = {0, 0, 0};
  bool output = false; // y only
};

/// The operands of a normalized layer spec with `args`' pointers.
std::vector<LayerOperand> layerOperands(const attn_mha_spec &spec,
                                        const attn_mha_args &args);

/// The attention inside a normalized layer spec (the attn.sdpa that
/// attn-decompose-mha makes): [B, Hq, S, D] queries over [B, Hkv, Skv, D]
/// keys, causal and scale as the layer's.
attn_spec layerAttentionSpec(const attn_mha_spec &layer);

struct LayerCompileResult {
  std::unique_ptr<LayerExecutable> executable;
  std::string source;
};

/// Turns specs into executables for one target.
class Compiler {
public:
  virtual ~Compiler() = default;
  /// Whether the target can run here; sets `error` when not.
  virtual attn_status available(std::string &error) = 0;
  /// `spec` is already validated and normalized (value_dim, block sizes
  /// filled in where the target has defaults is up to the compiler).
  virtual attn_status compile(const attn_spec &spec, CompileResult &result,
                              std::string &error) = 0;
  /// What else compile() reads that changes the kernel, such as an
  /// environment override of the variant: part of the kernel cache's key,
  /// so that a context does not hand out a kernel compiled under another
  /// setting. Empty when nothing.
  virtual std::string configuration() const { return {}; }
  /// Compiles a validated, normalized layer spec. A target that cannot
  /// (the default) returns ATTN_ERROR_UNSUPPORTED with `error` saying why
  /// (attn_mha_compile prefixes it with the target's name).
  virtual attn_status compileMha(const attn_mha_spec &spec,
                                 LayerCompileResult &result,
                                 std::string &error) {
    (void)spec;
    (void)result;
    error = "this target does not compile attention layers (attn.mha): "
            "its compiler does not implement Compiler::compileMha "
            "(docs/Runtime.md, \"Layers\")";
    return ATTN_ERROR_UNSUPPORTED;
  }
};

/// Installs the compiler for a target (replacing any previous one). Called
/// by the JIT layer's static initializer and by tests.
void registerCompiler(attn_target target, std::shared_ptr<Compiler> compiler);

/// Sets the calling thread's attn_last_error() message (for C entry points
/// implemented outside the runtime, such as the JIT's).
void setLastError(const std::string &message);

} // namespace attn

#endif // ATTN_RUNTIME_BACKEND_H
