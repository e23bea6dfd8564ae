//===- Runtime.cpp - the C API: contexts, the kernel cache, launches ------===//
#include "Internal.h"

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <tuple>
#include <vector>

using namespace attn;

struct attn_kernel {
  attn_spec spec;
  attn_target target;
  std::string source;
  std::unique_ptr<Executable> executable;
};

struct attn_context {
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<attn_kernel>> cache;
};

namespace {
thread_local std::string lastError;

attn_status fail(attn_status status, std::string message) {
  lastError = std::move(message);
  return status;
}

attn_status ok() {
  lastError.clear();
  return ATTN_OK;
}

std::mutex &registryMutex() {
  static std::mutex m;
  return m;
}

std::shared_ptr<Compiler> &compilerSlot(attn_target t) {
  static std::shared_ptr<Compiler> slots[3];
  return slots[static_cast<int>(t)];
}

bool validTarget(attn_target t) {
  return t == ATTN_TARGET_CPU || t == ATTN_TARGET_CUDA ||
         t == ATTN_TARGET_VULKAN;
}

std::shared_ptr<Compiler> compilerFor(attn_target t) {
  std::lock_guard<std::mutex> lock(registryMutex());
  return compilerSlot(t);
}

/// Every field that changes the generated code, so equal keys share code.
std::string cacheKey(const attn_spec &s, attn_target t) {
  std::ostringstream os;
  os.precision(17);
  os << t << '|' << s.dtype << '|' << s.batch << '|' << s.heads_q << '|'
     << s.heads_kv << '|' << s.seq_q << '|' << s.seq_kv << '|' << s.head_dim
     << '|' << s.value_dim << '|' << s.causal << '|' << s.mask << '|'
     << s.mask_dtype << '|' << s.scale << '|' << s.dropout_p << '|'
     << s.return_lse << '|' << s.variant << '|' << s.block_q << '|'
     << s.block_kv << '|' << s.kv_splits;
  return os.str();
}

/// The C API never lets an exception out.
template <typename Fn> attn_status guarded(Fn &&fn) {
  try {
    return fn();
  } catch (const std::exception &e) {
    return fail(ATTN_ERROR_BACKEND, std::string("internal error: ") + e.what());
  } catch (...) {
    return fail(ATTN_ERROR_BACKEND, "internal error: unknown exception");
  }
}
} // namespace

void attn::registerCompiler(attn_target target,
                            std::shared_ptr<Compiler> compiler) {
  if (!validTarget(target))
    return;
  std::lock_guard<std::mutex> lock(registryMutex());
  compilerSlot(target) = std::move(compiler);
}

void attn::setLastError(const std::string &message) { lastError = message; }

extern "C" {

void attn_spec_init(attn_spec *spec) {
  if (!spec)
    return;
  std::memset(spec, 0, sizeof(*spec));
  spec->dtype = ATTN_DTYPE_F32;
  spec->batch = spec->heads_q = spec->heads_kv = ATTN_DYNAMIC;
  spec->seq_q = spec->seq_kv = ATTN_DYNAMIC;
  spec->mask = ATTN_MASK_NONE;
  spec->mask_dtype = ATTN_DTYPE_BOOL;
  spec->variant = ATTN_VARIANT_DEFAULT;
}

attn_status attn_context_create(attn_context **ctx) {
  if (!ctx)
    return fail(ATTN_ERROR_INVALID_ARGUMENT, "ctx must not be NULL");
  return guarded([&] {
    *ctx = new attn_context();
    return ok();
  });
}

void attn_context_destroy(attn_context *ctx) { delete ctx; }

attn_status attn_target_available(attn_context *ctx, attn_target target) {
  if (!ctx)
    return fail(ATTN_ERROR_INVALID_ARGUMENT, "ctx must not be NULL");
  if (!validTarget(target))
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                "unknown target " + std::to_string(static_cast<int>(target)));
  return guarded([&] {
    std::shared_ptr<Compiler> c = compilerFor(target);
    if (!c)
      return fail(ATTN_ERROR_UNAVAILABLE,
                  std::string("no compiler for target '") +
                      attn_target_name(target) +
                      "' is linked into this program");
    std::string err;
    attn_status st = c->available(err);
    return st == ATTN_OK ? ok() : fail(st, err);
  });
}

attn_status attn_compile(attn_context *ctx, const attn_spec *spec,
                         attn_target target, attn_kernel **kernel) {
  if (!ctx || !spec || !kernel)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                "ctx, spec and kernel must not be NULL");
  if (!validTarget(target))
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                "unknown target " + std::to_string(static_cast<int>(target)));
  return guarded([&] {
    attn_spec normalized;
    std::string err;
    if (!validateSpec(*spec, normalized, err))
      return fail(ATTN_ERROR_INVALID_ARGUMENT, err);
    if (normalized.variant == ATTN_VARIANT_MATH && target != ATTN_TARGET_CPU)
      return fail(ATTN_ERROR_UNSUPPORTED,
                  "the math variant exists only for the cpu target");
    std::string key = cacheKey(normalized, target);
    std::lock_guard<std::mutex> lock(ctx->mutex);
    auto it = ctx->cache.find(key);
    if (it != ctx->cache.end()) {
      *kernel = it->second.get();
      return ok();
    }
    std::shared_ptr<Compiler> compiler = compilerFor(target);
    if (!compiler)
      return fail(ATTN_ERROR_UNAVAILABLE,
                  std::string("no compiler for target '") +
                      attn_target_name(target) +
                      "' is linked into this program");
    CompileResult result;
    attn_status st = compiler->compile(normalized, result, err);
    if (st != ATTN_OK)
      return fail(st, err);
    if (!result.executable)
      return fail(ATTN_ERROR_COMPILE, "the compiler returned no executable");
    auto k = std::make_unique<attn_kernel>();
    k->spec = normalized;
    k->target = target;
    k->source = std::move(result.source);
    k->executable = std::move(result.executable);
    *kernel = k.get();
    ctx->cache.emplace(std::move(key), std::move(k));
    return ok();
  });
}

attn_status attn_launch(attn_kernel *kernel, const attn_launch_args *args) {
  if (!kernel || !args)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                "kernel and args must not be NULL");
  return guarded([&] {
    KernelArgs ka;
    std::string err;
    if (!validateLaunch(kernel->spec, kernel->target, *args, ka, err))
      return fail(ATTN_ERROR_INVALID_ARGUMENT, err);
    attn_status st = kernel->executable->run(ka, err);
    return st == ATTN_OK ? ok() : fail(st, err);
  });
}

const attn_spec *attn_kernel_spec(const attn_kernel *kernel) {
  return kernel ? &kernel->spec : nullptr;
}

const char *attn_kernel_source(const attn_kernel *kernel) {
  if (!kernel || kernel->source.empty())
    return nullptr;
  return kernel->source.c_str();
}

size_t attn_context_cache_size(const attn_context *ctx) {
  if (!ctx)
    return 0;
  auto *c = const_cast<attn_context *>(ctx);
  std::lock_guard<std::mutex> lock(c->mutex);
  return c->cache.size();
}

const char *attn_last_error(void) { return lastError.c_str(); }

const char *attn_status_string(attn_status status) {
  switch (status) {
  case ATTN_OK:
    return "ok";
  case ATTN_ERROR_INVALID_ARGUMENT:
    return "invalid argument";
  case ATTN_ERROR_UNSUPPORTED:
    return "unsupported";
  case ATTN_ERROR_COMPILE:
    return "compile error";
  case ATTN_ERROR_BACKEND:
    return "backend error";
  case ATTN_ERROR_UNAVAILABLE:
    return "unavailable";
  }
  return "unknown";
}

const char *attn_target_name(attn_target target) {
  switch (target) {
  case ATTN_TARGET_CPU:
    return "cpu";
  case ATTN_TARGET_CUDA:
    return "cuda";
  case ATTN_TARGET_VULKAN:
    return "vulkan";
  }
  return "unknown";
}

const char *attn_dtype_name(attn_dtype dtype) {
  switch (dtype) {
  case ATTN_DTYPE_F16:
    return "f16";
  case ATTN_DTYPE_BF16:
    return "bf16";
  case ATTN_DTYPE_F32:
    return "f32";
  case ATTN_DTYPE_BOOL:
    return "bool";
  }
  return "unknown";
}

} // extern "C"
