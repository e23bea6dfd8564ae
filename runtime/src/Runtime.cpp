//===- Runtime.cpp - the C API: contexts, the kernel cache, launches -------===//
#include "Internal.h"

#include <exception>
#include <new>
#include <stdexcept>

using namespace attn;
using namespace attn::detail;

namespace {

thread_local std::string lastError;

attn_status failWith(attn_status status, const std::string &message) {
  lastError = message;
  return status;
}

attn_status succeed() {
  lastError.clear();
  return ATTN_OK;
}

/// Runs `body` so that no exception crosses the C boundary: a failed host
/// allocation (std::bad_alloc, std::length_error from a container asked
/// for more than it can hold) becomes ATTN_ERROR_OUT_OF_MEMORY, any other
/// escaping exception ATTN_ERROR_BACKEND with its message.
template <typename Fn>
attn_status guarded(const char *function, Fn &&body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return failWith(ATTN_ERROR_OUT_OF_MEMORY,
                    std::string(function) + ": out of memory");
  } catch (const std::length_error &) {
    return failWith(ATTN_ERROR_OUT_OF_MEMORY,
                    std::string(function) + ": out of memory (a host "
                                            "buffer larger than can exist)");
  } catch (const std::exception &e) {
    return failWith(ATTN_ERROR_BACKEND, std::string(function) +
                                            ": internal error: " + e.what());
  } catch (...) {
    return failWith(ATTN_ERROR_BACKEND,
                    std::string(function) + ": unknown internal error");
  }
}

std::string noCompiler(attn_target target) {
  return std::string("no compiler for target '") + attn_target_name(target) +
         "' is linked into this program";
}

} // namespace

void attn::setLastError(const std::string &message) {
  try {
    lastError = message;
  } catch (...) {
    // Keeping the old message beats throwing from an error path.
  }
}

extern "C" {

void attn_spec_init(attn_spec *spec) {
  if (!spec) {
    lastError = "attn_spec_init: spec is NULL";
    return;
  }
  spec->dtype = ATTN_DTYPE_F32;
  spec->batch = ATTN_DYNAMIC;
  spec->heads_q = ATTN_DYNAMIC;
  spec->heads_kv = ATTN_DYNAMIC;
  spec->seq_q = ATTN_DYNAMIC;
  spec->seq_kv = ATTN_DYNAMIC;
  spec->head_dim = 0;
  spec->value_dim = 0;
  spec->causal = 0;
  spec->mask = ATTN_MASK_NONE;
  spec->mask_dtype = ATTN_DTYPE_BOOL;
  spec->scale = 0.0;
  spec->dropout_p = 0.0;
  spec->return_lse = 0;
  spec->variant = ATTN_VARIANT_DEFAULT;
  spec->block_q = 0;
  spec->block_kv = 0;
  spec->kv_splits = 0;
}

attn_status attn_context_create(attn_context **ctx) {
  return guarded("attn_context_create", [&] {
    if (!ctx)
      return failWith(ATTN_ERROR_INVALID_ARGUMENT,
                      "attn_context_create: ctx is NULL");
    *ctx = new attn_context();
    return succeed();
  });
}

void attn_context_destroy(attn_context *ctx) { delete ctx; }

attn_status attn_target_available(attn_context *ctx, attn_target target) {
  return guarded("attn_target_available", [&] {
    if (!ctx)
      return failWith(ATTN_ERROR_INVALID_ARGUMENT,
                      "attn_target_available: ctx is NULL");
    if (!isValidTarget(target))
      return failWith(ATTN_ERROR_INVALID_ARGUMENT,
                      "attn_target_available: target is " +
                          std::to_string(static_cast<int>(target)) +
                          "; expected ATTN_TARGET_CPU, ATTN_TARGET_CUDA or "
                          "ATTN_TARGET_VULKAN");
    std::shared_ptr<Compiler> compiler = findCompiler(target);
    if (!compiler)
      return failWith(ATTN_ERROR_UNAVAILABLE, noCompiler(target));
    std::string error;
    attn_status status = compiler->available(error);
    if (status != ATTN_OK)
      return failWith(status, error.empty()
                                  ? std::string("target '") +
                                        attn_target_name(target) +
                                        "' is not available"
                                  : error);
    return succeed();
  });
}

attn_status attn_compile(attn_context *ctx, const attn_spec *spec,
                         attn_target target, attn_kernel **kernel) {
  return guarded("attn_compile", [&] {
    if (!ctx || !spec || !kernel)
      return failWith(ATTN_ERROR_INVALID_ARGUMENT,
                      std::string("attn_compile: ") +
                          (!ctx ? "ctx" : !spec ? "spec" : "kernel") +
                          " is NULL");
    attn_spec normalized;
    std::string error;
    if (!validateSpec(*spec, target, normalized, error))
      return failWith(ATTN_ERROR_INVALID_ARGUMENT, "attn_compile: " + error);
    if (!checkTargetLimits(normalized, target, error))
      return failWith(ATTN_ERROR_UNSUPPORTED, "attn_compile: " + error);
    std::shared_ptr<Compiler> compiler = findCompiler(target);
    CacheKey key = makeCacheKey(normalized, target,
                                compiler ? compiler->configuration() : "");

    // The lock is held across the compile so that racing threads asking for
    // the same kernel compile it once; compiles are rare next to launches.
    std::lock_guard<std::mutex> lock(ctx->mutex);
    auto it = ctx->cache.find(key);
    if (it != ctx->cache.end()) {
      *kernel = it->second.get();
      return succeed();
    }
    if (!compiler)
      return failWith(ATTN_ERROR_UNAVAILABLE,
                      "attn_compile: " + noCompiler(target));
    CompileResult result;
    attn_status status = compiler->compile(normalized, result, error);
    if (status != ATTN_OK)
      return failWith(status, "attn_compile: " +
                                  (error.empty() ? std::string("the ") +
                                                       attn_target_name(target) +
                                                       " compiler failed"
                                                 : error));
    if (!result.executable)
      return failWith(ATTN_ERROR_COMPILE,
                      std::string("attn_compile: the ") +
                          attn_target_name(target) +
                          " compiler reported success but returned no "
                          "executable");
    auto entry = std::make_unique<attn_kernel>();
    entry->spec = normalized;
    entry->target = target;
    entry->context = ctx->id;
    entry->source = std::move(result.source);
    entry->executable = std::move(result.executable);
    *kernel = entry.get();
    ctx->cache.emplace(key, std::move(entry));
    return succeed();
  });
}

attn_status attn_launch(attn_kernel *kernel, const attn_launch_args *args) {
  return guarded("attn_launch", [&] {
    if (!kernel || !args)
      return failWith(ATTN_ERROR_INVALID_ARGUMENT,
                      std::string("attn_launch: ") +
                          (!kernel ? "kernel" : "args") + " is NULL");
    KernelArgs resolved;
    std::string error;
    if (!validateLaunch(kernel->spec, kernel->target, *args, resolved, error))
      return failWith(ATTN_ERROR_INVALID_ARGUMENT, "attn_launch: " + error);
    resolved.context = kernel->context;
    attn_status status = kernel->executable->run(resolved, error);
    if (status != ATTN_OK)
      return failWith(status, "attn_launch: " +
                                  (error.empty()
                                       ? std::string("the kernel failed (") +
                                             attn_status_string(status) + ")"
                                       : error));
    return succeed();
  });
}

const attn_spec *attn_kernel_spec(const attn_kernel *kernel) {
  if (!kernel) {
    lastError = "attn_kernel_spec: kernel is NULL";
    return nullptr;
  }
  return &kernel->spec;
}

const char *attn_kernel_source(const attn_kernel *kernel) {
  if (!kernel) {
    lastError = "attn_kernel_source: kernel is NULL";
    return nullptr;
  }
  return kernel->source.empty() ? nullptr : kernel->source.c_str();
}

attn_status attn_kernel_get_info(const attn_kernel *kernel,
                                 attn_kernel_info *info) {
  return guarded("attn_kernel_get_info", [&] {
    if (!kernel || !info)
      return failWith(ATTN_ERROR_INVALID_ARGUMENT,
                      std::string("attn_kernel_get_info: ") +
                          (!kernel ? "kernel" : "info") + " is NULL");
    std::lock_guard<std::mutex> lock(kernel->infoMutex);
    attn::KernelInfo fresh;
    kernel->executable->kernelInfo(fresh);
    kernel->info = std::move(fresh);
    info->variant = kernel->info.variant.c_str();
    info->device = kernel->info.device.c_str();
    info->block_q = kernel->info.blockQ;
    info->block_kv = kernel->info.blockKv;
    info->kv_splits = kernel->info.kvSplits;
    return succeed();
  });
}

void attn_mha_spec_init(attn_mha_spec *spec) {
  if (!spec) {
    lastError = "attn_mha_spec_init: spec is NULL";
    return;
  }
  *spec = attn_mha_spec{};
  spec->dtype = ATTN_DTYPE_F32;
}

attn_status attn_mha_compile(attn_context *ctx, const attn_mha_spec *spec,
                             attn_target target, attn_mha_kernel **kernel) {
  return guarded("attn_mha_compile", [&] {
    if (!ctx || !spec || !kernel)
      return failWith(ATTN_ERROR_INVALID_ARGUMENT,
                      std::string("attn_mha_compile: ") +
                          (!ctx ? "ctx" : !spec ? "spec" : "kernel") +
                          " is NULL");
    attn_mha_spec normalized;
    std::string error;
    if (!validateMhaSpec(*spec, target, normalized, error))
      return failWith(ATTN_ERROR_INVALID_ARGUMENT,
                      "attn_mha_compile: " + error);
    std::shared_ptr<Compiler> compiler = findCompiler(target);
    if (!compiler)
      return failWith(ATTN_ERROR_UNAVAILABLE,
                      "attn_mha_compile: " + noCompiler(target));
    std::string key =
        mhaCacheKey(normalized, target, compiler->configuration());
    std::lock_guard<std::mutex> lock(ctx->mutex);
    auto it = ctx->layers.find(key);
    if (it != ctx->layers.end()) {
      *kernel = it->second.get();
      return succeed();
    }
    LayerCompileResult result;
    attn_status status = compiler->compileMha(normalized, result, error);
    if (status != ATTN_OK)
      return failWith(status, "attn_mha_compile: " +
                                  (status == ATTN_ERROR_UNSUPPORTED
                                       ? std::string(attn_target_name(target)) +
                                             ": "
                                       : std::string()) +
                                  (error.empty() ? std::string("the ") +
                                                       attn_target_name(target) +
                                                       " compiler failed"
                                                 : error));
    if (!result.executable)
      return failWith(ATTN_ERROR_COMPILE,
                      std::string("attn_mha_compile: the ") +
                          attn_target_name(target) +
                          " compiler reported success but returned no "
                          "executable");
    auto entry = std::make_unique<attn_mha_kernel>();
    entry->spec = normalized;
    entry->target = target;
    entry->context = ctx->id;
    entry->source = std::move(result.source);
    entry->executable = std::move(result.executable);
    *kernel = entry.get();
    ctx->layers.emplace(std::move(key), std::move(entry));
    return succeed();
  });
}

attn_status attn_mha_launch(attn_mha_kernel *kernel,
                            const attn_mha_args *args) {
  return guarded("attn_mha_launch", [&] {
    if (!kernel || !args)
      return failWith(ATTN_ERROR_INVALID_ARGUMENT,
                      std::string("attn_mha_launch: ") +
                          (!kernel ? "kernel" : "args") + " is NULL");
    std::string error;
    if (!validateMhaLaunch(kernel->spec, kernel->target, *args, error))
      return failWith(ATTN_ERROR_INVALID_ARGUMENT,
                      "attn_mha_launch: " + error);
    attn_status status =
        kernel->executable->run(*args, kernel->context, error);
    if (status != ATTN_OK)
      return failWith(status, "attn_mha_launch: " +
                                  (error.empty()
                                       ? std::string("the layer failed (") +
                                             attn_status_string(status) + ")"
                                       : error));
    return succeed();
  });
}

const attn_mha_spec *attn_mha_kernel_spec(const attn_mha_kernel *kernel) {
  if (!kernel) {
    lastError = "attn_mha_kernel_spec: kernel is NULL";
    return nullptr;
  }
  return &kernel->spec;
}

const char *attn_mha_kernel_source(const attn_mha_kernel *kernel) {
  if (!kernel) {
    lastError = "attn_mha_kernel_source: kernel is NULL";
    return nullptr;
  }
  return kernel->source.empty() ? nullptr : kernel->source.c_str();
}

size_t attn_context_cache_size(const attn_context *ctx) {
  if (!ctx) {
    lastError = "attn_context_cache_size: ctx is NULL";
    return 0;
  }
  std::lock_guard<std::mutex> lock(ctx->mutex);
  return ctx->cache.size();
}

const char *attn_last_error(void) { return lastError.c_str(); }

const char *attn_version(void) { return ATTN_VERSION_STRING; }

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
  case ATTN_ERROR_OUT_OF_MEMORY:
    return "out of memory";
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
