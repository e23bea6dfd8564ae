//===- Internal.h - runtime internals shared by its source files -*- C++ -*-===//
#ifndef ATTN_RUNTIME_SRC_INTERNAL_H
#define ATTN_RUNTIME_SRC_INTERNAL_H

#include "attn/runtime/Backend.h"

#include <string>

namespace attn {
/// Checks a spec; on failure returns false with `error` set. Fills
/// `normalized` (value_dim resolved) on success.
bool validateSpec(const attn_spec &spec, attn_spec &normalized,
                  std::string &error);

/// Checks launch arguments against a (normalized) spec and builds the
/// executable's view of them. Returns false with `error` set.
bool validateLaunch(const attn_spec &spec, attn_target target,
                    const attn_launch_args &args, KernelArgs &out,
                    std::string &error);
} // namespace attn

#endif
