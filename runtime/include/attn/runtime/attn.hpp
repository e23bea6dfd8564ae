//===- attn.hpp - header-only C++ wrapper over the attn C API ------------===//
//
// RAII for the context, exceptions for errors; the C API underneath does all
// the work, so this adds nothing a C caller could not do.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_ATTN_HPP
#define ATTN_RUNTIME_ATTN_HPP

#include "attn/runtime/attn.h"

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

namespace attn {

/// A failed call: the C API's status and attn_last_error() message.
class Error : public std::runtime_error {
public:
  Error(attn_status status, const std::string &message)
      : std::runtime_error(message), status_(status) {}
  attn_status status() const noexcept { return status_; }

private:
  attn_status status_;
};

/// Throws attn::Error for any status but ATTN_OK.
inline void check(attn_status status) {
  if (status != ATTN_OK)
    throw Error(status, attn_last_error());
}

/// A compiled kernel. Non-owning: the Context that compiled it owns it, and
/// the handle is valid as long as that context lives.
class Kernel {
public:
  Kernel() = default;
  explicit Kernel(attn_kernel *kernel) : kernel_(kernel) {}

  void launch(const attn_launch_args &args) const {
    check(attn_launch(kernel_, &args));
  }
  /// The normalized spec the kernel was compiled for (value_dim filled in).
  const attn_spec &spec() const {
    const attn_spec *s = attn_kernel_spec(kernel_);
    if (!s)
      throw Error(ATTN_ERROR_INVALID_ARGUMENT, attn_last_error());
    return *s;
  }
  /// The IR the kernel was compiled from; empty when it has none (AOT).
  std::string source() const {
    if (!kernel_)
      throw Error(ATTN_ERROR_INVALID_ARGUMENT,
                  "attn::Kernel::source: empty kernel handle");
    const char *s = attn_kernel_source(kernel_);
    return s ? std::string(s) : std::string();
  }
  attn_kernel *get() const noexcept { return kernel_; }
  explicit operator bool() const noexcept { return kernel_ != nullptr; }

private:
  attn_kernel *kernel_ = nullptr;
};

/// Owns an attn_context (its kernel cache and devices). Move-only.
class Context {
public:
  Context() { check(attn_context_create(&ctx_)); }
  ~Context() { attn_context_destroy(ctx_); }
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;
  Context(Context &&other) noexcept : ctx_(std::exchange(other.ctx_, nullptr)) {}
  Context &operator=(Context &&other) noexcept {
    if (this != &other) {
      attn_context_destroy(ctx_);
      ctx_ = std::exchange(other.ctx_, nullptr);
    }
    return *this;
  }

  Kernel compile(const attn_spec &spec,
                 attn_target target = ATTN_TARGET_CPU) {
    attn_kernel *kernel = nullptr;
    check(attn_compile(ctx_, &spec, target, &kernel));
    return Kernel(kernel);
  }
  /// Whether `target` can run here; when not and `why` is given, stores the
  /// reason. Other failures (a moved-from context) throw.
  bool available(attn_target target, std::string *why = nullptr) {
    attn_status status = attn_target_available(ctx_, target);
    if (status == ATTN_OK)
      return true;
    if (status != ATTN_ERROR_UNAVAILABLE)
      throw Error(status, attn_last_error());
    if (why)
      *why = attn_last_error();
    return false;
  }
  size_t cacheSize() const { return attn_context_cache_size(ctx_); }
  attn_context *get() const noexcept { return ctx_; }

private:
  attn_context *ctx_ = nullptr;
};

/// Row-major strides (in elements) for a [B, H, S, D] tensor stored
/// contiguously in that order. For lse pass {B, Hq, Sq, 1}.
inline std::array<int64_t, 4>
contiguousStrides(const std::array<int64_t, 4> &shape) {
  return {shape[1] * shape[2] * shape[3], shape[2] * shape[3], shape[3], 1};
}

/// A tensor descriptor; shape and strides are in the logical [B, H, S, D]
/// order whatever the storage order is.
inline attn_tensor makeTensor(void *data, const std::array<int64_t, 4> &shape,
                              const std::array<int64_t, 4> &strides) {
  attn_tensor t;
  t.data = data;
  for (int i = 0; i < 4; ++i) {
    t.shape[i] = shape[i];
    t.strides[i] = strides[i];
  }
  return t;
}

/// A contiguous (BHSD) tensor descriptor.
inline attn_tensor makeTensor(void *data, const std::array<int64_t, 4> &shape) {
  return makeTensor(data, shape, contiguousStrides(shape));
}

} // namespace attn

#endif // ATTN_RUNTIME_ATTN_HPP
