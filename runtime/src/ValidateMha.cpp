//===- ValidateMha.cpp - attention-layer spec and launch checks -----------===//
//
// attn_mha_compile and attn_mha_launch check everything here before a
// compiler or executable sees it, as Validate.cpp does for attn_spec: every
// field, every size product (overflow-checked against kMaxSize), every
// pointer; a failed call writes nothing.
//
//===----------------------------------------------------------------------===//
#include "Internal.h"
#include "vulkan/Buffers.h"

#include "attn/runtime/Checked.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>

using namespace attn;
using namespace attn::detail;

namespace {

/// Head dims are tile extents of attn.sdpa (kMaxTileExtent in the
/// compiler, 2^20).
constexpr int64_t kMaxHeadDim = int64_t(1) << 20;

std::string str(int64_t v) { return std::to_string(v); }

bool required(const char *field, int64_t v, std::string &error) {
  if (v > 0)
    return true;
  error = std::string("spec.") + field + " is " + str(v) + "; it must be > 0";
  return false;
}

bool optional(const char *field, int64_t v, const char *zeroMeans,
              std::string &error) {
  if (v >= 0)
    return true;
  error = std::string("spec.") + field + " is " + str(v) +
          "; it must be >= 0 (0 = " + zeroMeans + ")";
  return false;
}

/// `what` = product of `factors` x `bytes` must be at most kMaxSize.
bool fits(const std::string &what, std::initializer_list<int64_t> factors,
          int64_t bytes, std::string &error) {
  int64_t p = 0;
  int64_t n = 0;
  if (checkedProduct(factors, n) && checkedMul(n, bytes, p) && p <= kMaxSize)
    return true;
  error = what + " is more than 2^62 bytes, the largest size the runtime "
                 "accepts (docs/Runtime.md, \"Limits\")";
  return false;
}

} // namespace

bool attn::detail::validateMhaSpec(const attn_mha_spec &spec,
                                   attn_target target, attn_mha_spec &n,
                                   std::string &error) {
  if (!isValidTarget(target)) {
    error = "target is " + str(static_cast<int>(target)) +
            "; expected ATTN_TARGET_CPU, ATTN_TARGET_CUDA or "
            "ATTN_TARGET_VULKAN";
    return false;
  }
  if (spec.dtype != ATTN_DTYPE_F16 && spec.dtype != ATTN_DTYPE_BF16 &&
      spec.dtype != ATTN_DTYPE_F32) {
    error = "spec.dtype is " + str(static_cast<int>(spec.dtype)) +
            "; a layer's tensors are f16, bf16 or f32";
    return false;
  }
  if (!required("batch", spec.batch, error) ||
      !required("seq", spec.seq, error) ||
      !required("embed", spec.embed, error) ||
      !required("heads_q", spec.heads_q, error) ||
      !optional("heads_kv", spec.heads_kv, "heads_q", error) ||
      !optional("head_dim", spec.head_dim, "embed / heads_q", error) ||
      !optional("value_dim", spec.value_dim, "head_dim", error) ||
      !optional("seq_kv", spec.seq_kv, "seq", error) ||
      !optional("kv_embed", spec.kv_embed, "embed", error))
    return false;
  n = spec;
  n.cross = spec.cross != 0;
  n.fused_qkv = spec.fused_qkv != 0;
  n.bias = spec.bias != 0;
  n.causal = spec.causal != 0;
  if (!n.cross && ((spec.seq_kv && spec.seq_kv != spec.seq) ||
                   (spec.kv_embed && spec.kv_embed != spec.embed))) {
    error = "spec.seq_kv and spec.kv_embed describe the kv input: set "
            "spec.cross for cross-attention (self-attention: 0)";
    return false;
  }
  if (n.cross && n.fused_qkv) {
    error = "spec.fused_qkv needs self-attention: a fused weight projects "
            "one input (clear spec.cross, or give separate weights)";
    return false;
  }
  n.heads_kv = spec.heads_kv ? spec.heads_kv : spec.heads_q;
  if (spec.heads_q % n.heads_kv != 0) {
    error = "spec.heads_q (" + str(spec.heads_q) +
            ") must be a multiple of spec.heads_kv (" + str(n.heads_kv) + ")";
    return false;
  }
  if (spec.head_dim == 0) {
    if (spec.embed % spec.heads_q != 0) {
      error = "spec.head_dim is 0 (embed / heads_q) but spec.embed (" +
              str(spec.embed) + ") is not a multiple of spec.heads_q (" +
              str(spec.heads_q) + "); set head_dim";
      return false;
    }
    n.head_dim = spec.embed / spec.heads_q;
  }
  n.value_dim = spec.value_dim ? spec.value_dim : n.head_dim;
  if (n.head_dim > kMaxHeadDim || n.value_dim > kMaxHeadDim) {
    error = "head_dim (" + str(n.head_dim) + ") and value_dim (" +
            str(n.value_dim) + ") must be at most 2^20";
    return false;
  }
  n.seq_kv = n.cross && spec.seq_kv ? spec.seq_kv : spec.seq;
  n.kv_embed = n.cross && spec.kv_embed ? spec.kv_embed : spec.embed;
  if (!std::isfinite(spec.scale) || spec.scale < 0.0) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%g", spec.scale);
    error = std::string("spec.scale is ") + buf +
            "; it must be finite and >= 0 (0 = 1/sqrt(head_dim))";
    return false;
  }

  // Every tensor, every intermediate the decomposition allocates (the f32
  // accumulators of the projections) and the attention's score count.
  const int64_t es = dtypeBytes(spec.dtype);
  const int64_t B = n.batch, S = n.seq, E = n.embed, Hq = n.heads_q,
                Hkv = n.heads_kv, D = n.head_dim, Dv = n.value_dim,
                Skv = n.seq_kv, Ekv = n.kv_embed;
  int64_t qw = 0, kw = 0, vw = 0, ow = 0, rowsQkv = 0;
  if (!checkedProduct({Hq, D}, qw) || !checkedProduct({Hkv, D}, kw) ||
      !checkedProduct({Hkv, Dv}, vw) || !checkedProduct({Hq, Dv}, ow) ||
      !checkedAdd(qw, kw, rowsQkv) || !checkedAdd(rowsQkv, vw, rowsQkv)) {
    error = "the projected widths (heads x head dims) overflow";
    return false;
  }
  return fits("x [B, S, E]", {B, S, E}, es, error) &&
         fits("y [B, S, E]", {B, S, E}, es, error) &&
         fits("kv [B, Skv, Ekv]", {B, Skv, Ekv}, es, error) &&
         fits("the Q, K, V projection weights", {rowsQkv, std::max(E, Ekv)},
              es, error) &&
         fits("w_o [E, Hq*Dv]", {E, ow}, es, error) &&
         fits("the projected q [B, Hq, S, D] (f32)", {B, Hq, S, D}, 4,
              error) &&
         fits("the projected k, v [B, Hkv, Skv, max(D, Dv)] (f32)",
              {B, Hkv, Skv, std::max(D, Dv)}, 4, error) &&
         fits("the attention output [B, Hq, S, Dv] (f32)", {B, Hq, S, Dv}, 4,
              error) &&
         fits("the scores B*Hq*S*Skv (f32)", {B, Hq, S, Skv}, 4, error);
}

bool attn::detail::validateMhaLaunch(const attn_mha_spec &spec,
                                     attn_target target,
                                     const attn_mha_args &args,
                                     std::string &error) {
  if (args.stream && target != ATTN_TARGET_CUDA) {
    error = "args.stream must be NULL on this target (a CUstream is for "
            "cuda)";
    return false;
  }
  const int64_t align = dtypeBytes(spec.dtype);
  struct Ptr {
    const char *name;
    const void *p;
    bool used;
  };
  const bool sep = !spec.fused_qkv, b = spec.bias != 0;
  const Ptr ptrs[] = {
      {"x", args.x, true},           {"kv", args.kv, spec.cross != 0},
      {"w_q", args.w_q, sep},        {"w_k", args.w_k, sep},
      {"w_v", args.w_v, sep},        {"w_qkv", args.w_qkv, !sep},
      {"w_o", args.w_o, true},       {"b_q", args.b_q, sep && b},
      {"b_k", args.b_k, sep && b},   {"b_v", args.b_v, sep && b},
      {"b_qkv", args.b_qkv, !sep && b}, {"b_o", args.b_o, b},
      {"y", args.y, true}};
  for (const Ptr &p : ptrs) {
    if (p.used && !p.p) {
      error = std::string("args.") + p.name + " is NULL";
      return false;
    }
    if (!p.used && p.p) {
      error = std::string("args.") + p.name +
              " is set but the spec does not use it (" +
              (std::string(p.name) == "kv" ? "spec.cross is 0"
               : p.name[0] == 'b'          ? "spec.bias is 0 or the weights "
                                             "are fused the other way"
                                           : "spec.fused_qkv says the other "
                                             "weight form") +
              ")";
      return false;
    }
    // A vulkan device buffer's address is no memory the other targets can
    // reach.
    if (p.p && target != ATTN_TARGET_VULKAN && vulkan::isDeviceAddress(p.p)) {
      error = std::string("args.") + p.name +
              " is the address of a vulkan device buffer "
              "(attn_vulkan_buffer_pointer); the layer is for the " +
              attn_target_name(target) + " target";
      return false;
    }
    if (p.p && reinterpret_cast<uintptr_t>(p.p) % align != 0) {
      error = std::string("args.") + p.name + " is not aligned to its " +
              str(align) + "-byte elements";
      return false;
    }
  }
  return true;
}

std::string attn::detail::mhaCacheKey(const attn_mha_spec &s,
                                      attn_target target,
                                      const std::string &configuration) {
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                "%d|%d|%" PRId64 "|%" PRId64 "|%" PRId64 "|%" PRId64
                "|%" PRId64 "|%" PRId64 "|%" PRId64 "|%d|%" PRId64
                "|%" PRId64 "|%d|%d|%d|%a|",
                static_cast<int>(target), static_cast<int>(s.dtype), s.batch,
                s.seq, s.embed, s.heads_q, s.heads_kv, s.head_dim,
                s.value_dim, s.cross, s.seq_kv, s.kv_embed, s.fused_qkv,
                s.bias, s.causal, s.scale);
  return buf + configuration;
}

std::vector<attn::LayerOperand>
attn::layerOperands(const attn_mha_spec &s, const attn_mha_args &a) {
  const int64_t qw = s.heads_q * s.head_dim, kw = s.heads_kv * s.head_dim,
                vw = s.heads_kv * s.value_dim, ow = s.heads_q * s.value_dim;
  std::vector<LayerOperand> out;
  auto add = [&](const char *name, const void *p,
                 std::initializer_list<int64_t> shape, bool output = false) {
    LayerOperand o;
    o.name = name;
    o.data = const_cast<void *>(p);
    for (int64_t e : shape)
      o.shape[o.rank++] = e;
    o.output = output;
    out.push_back(o);
  };
  add("x", a.x, {s.batch, s.seq, s.embed});
  if (s.cross)
    add("kv", a.kv, {s.batch, s.seq_kv, s.kv_embed});
  if (s.fused_qkv) {
    add("w_qkv", a.w_qkv, {qw + kw + vw, s.embed});
  } else {
    add("w_q", a.w_q, {qw, s.embed});
    add("w_k", a.w_k, {kw, s.kv_embed});
    add("w_v", a.w_v, {vw, s.kv_embed});
  }
  add("w_o", a.w_o, {s.embed, ow});
  if (s.bias) {
    if (s.fused_qkv) {
      add("b_qkv", a.b_qkv, {qw + kw + vw});
    } else {
      add("b_q", a.b_q, {qw});
      add("b_k", a.b_k, {kw});
      add("b_v", a.b_v, {vw});
    }
    add("b_o", a.b_o, {s.embed});
  }
  add("y", a.y, {s.batch, s.seq, s.embed}, /*output=*/true);
  return out;
}

attn_spec attn::layerAttentionSpec(const attn_mha_spec &l) {
  attn_spec s;
  attn_spec_init(&s);
  s.dtype = l.dtype;
  s.batch = l.batch;
  s.heads_q = l.heads_q;
  s.heads_kv = l.heads_kv;
  s.seq_q = l.seq;
  s.seq_kv = l.cross ? l.seq_kv : l.seq;
  s.head_dim = l.head_dim;
  s.value_dim = l.value_dim;
  s.causal = l.causal;
  s.scale = l.scale;
  return s;
}
