//===- Validate.cpp - every check on specs and launches, before anything runs -===//
#include "Internal.h"

#include <cmath>
#include <cstdint>
#include <sstream>
#include <utility>
#include <vector>

using namespace attn;

namespace {
const char *kDimNames[4] = {"batch", "heads", "sequence", "head"};

int64_t elementSize(attn_dtype t) {
  switch (t) {
  case ATTN_DTYPE_F16:
  case ATTN_DTYPE_BF16:
    return 2;
  case ATTN_DTYPE_F32:
    return 4;
  case ATTN_DTYPE_BOOL:
    return 1;
  }
  return 0;
}

bool isFloat(attn_dtype t) {
  return t == ATTN_DTYPE_F16 || t == ATTN_DTYPE_BF16 || t == ATTN_DTYPE_F32;
}

bool dimOk(int64_t d) { return d == ATTN_DYNAMIC || d > 0; }

template <typename... Ts> std::string str(Ts &&...parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

/// One tensor argument under validation.
struct Arg {
  const char *name;
  const attn_tensor &t;
  int rank;
  int64_t eltSize;
};

/// Byte range [lo, hi) a tensor touches (strides are non-negative here).
std::pair<uintptr_t, uintptr_t> span(const Arg &a) {
  uintptr_t lo = reinterpret_cast<uintptr_t>(a.t.data);
  int64_t last = 0;
  for (int i = 0; i < a.rank; ++i)
    last += (a.t.shape[i] - 1) * a.t.strides[i];
  return {lo, lo + static_cast<uintptr_t>((last + 1) * a.eltSize)};
}
} // namespace

bool attn::validateSpec(const attn_spec &s, attn_spec &n, std::string &err) {
  if (!isFloat(s.dtype)) {
    err = str("spec.dtype must be ATTN_DTYPE_F16, BF16 or F32, got ",
              static_cast<int>(s.dtype));
    return false;
  }
  if (s.head_dim <= 0 || s.head_dim > 1024) {
    err = str("spec.head_dim must be in [1, 1024], got ", s.head_dim);
    return false;
  }
  if (s.value_dim < 0 || s.value_dim > 1024) {
    err = str("spec.value_dim must be 0 (= head_dim) or in [1, 1024], got ",
              s.value_dim);
    return false;
  }
  const std::pair<const char *, int64_t> dims[] = {
      {"batch", s.batch},   {"heads_q", s.heads_q}, {"heads_kv", s.heads_kv},
      {"seq_q", s.seq_q},   {"seq_kv", s.seq_kv}};
  for (auto [name, d] : dims)
    if (!dimOk(d)) {
      err = str("spec.", name, " must be positive or ATTN_DYNAMIC, got ", d);
      return false;
    }
  if (s.heads_q > 0 && s.heads_kv > 0 && s.heads_q % s.heads_kv != 0) {
    err = str("spec.heads_q (", s.heads_q,
              ") must be a multiple of spec.heads_kv (", s.heads_kv, ")");
    return false;
  }
  switch (s.mask) {
  case ATTN_MASK_NONE:
    break;
  case ATTN_MASK_BOOL:
    if (s.mask_dtype != ATTN_DTYPE_BOOL) {
      err = "spec.mask_dtype must be ATTN_DTYPE_BOOL for a bool mask";
      return false;
    }
    break;
  case ATTN_MASK_ADDITIVE:
    if (!isFloat(s.mask_dtype)) {
      err = "spec.mask_dtype must be F16, BF16 or F32 for an additive mask";
      return false;
    }
    break;
  default:
    err = str("spec.mask must be ATTN_MASK_NONE, BOOL or ADDITIVE, got ",
              static_cast<int>(s.mask));
    return false;
  }
  if (!std::isfinite(s.scale)) {
    err = "spec.scale must be finite (0 selects 1/sqrt(head_dim))";
    return false;
  }
  if (!(s.dropout_p >= 0.0 && s.dropout_p < 1.0)) {
    err = str("spec.dropout_p must be in [0, 1), got ", s.dropout_p);
    return false;
  }
  if (s.variant != ATTN_VARIANT_DEFAULT && s.variant != ATTN_VARIANT_MATH) {
    err = str("spec.variant must be ATTN_VARIANT_DEFAULT or MATH, got ",
              static_cast<int>(s.variant));
    return false;
  }
  if (s.block_q < 0 || s.block_kv < 0 || s.kv_splits < 0) {
    err = "spec.block_q, block_kv and kv_splits must be >= 0 (0 = default)";
    return false;
  }
  n = s;
  if (n.value_dim == 0)
    n.value_dim = n.head_dim;
  n.causal = s.causal ? 1 : 0;
  n.return_lse = s.return_lse ? 1 : 0;
  if (n.mask == ATTN_MASK_NONE)
    n.mask_dtype = ATTN_DTYPE_BOOL;
  return true;
}

bool attn::validateLaunch(const attn_spec &s, attn_target target,
                          const attn_launch_args &a, KernelArgs &out,
                          std::string &err) {
  bool hasMask = s.mask != ATTN_MASK_NONE, hasLse = s.return_lse != 0;
  int64_t elt = elementSize(s.dtype);
  Arg q{"q", a.q, 4, elt}, k{"k", a.k, 4, elt}, v{"v", a.v, 4, elt},
      o{"out", a.out, 4, elt}, lse{"lse", a.lse, 3, 4},
      mask{"mask", a.mask, 4, elementSize(s.mask_dtype)};
  std::vector<const Arg *> used = {&q, &k, &v, &o};
  if (hasMask)
    used.push_back(&mask);
  if (hasLse)
    used.push_back(&lse);

  for (const Arg *t : used) {
    if (!t->t.data) {
      err = str(t->name, ": data pointer is NULL");
      return false;
    }
    if (reinterpret_cast<uintptr_t>(t->t.data) % t->eltSize != 0) {
      err = str(t->name, ": data pointer is not aligned to its ",
                t->eltSize, "-byte elements");
      return false;
    }
    for (int i = 0; i < t->rank; ++i) {
      if (t->t.shape[i] <= 0) {
        err = str(t->name, ": ", kDimNames[i], " dimension (", i,
                  ") must be positive, got ", t->t.shape[i]);
        return false;
      }
      if (i == t->rank - 1 && t->t.strides[i] != 1) {
        err = str(t->name, ": the last dimension must be contiguous (stride "
                           "1), got stride ",
                  t->t.strides[i]);
        return false;
      }
      if (t->t.strides[i] < 0 || (t->t.shape[i] > 1 && t->t.strides[i] < 1)) {
        err = str(t->name, ": stride of dimension ", i,
                  " must be positive, got ", t->t.strides[i]);
        return false;
      }
    }
  }

  const int64_t B = a.q.shape[0], Hq = a.q.shape[1], Sq = a.q.shape[2],
                D = a.q.shape[3], Hkv = a.k.shape[1], Skv = a.k.shape[2],
                Dv = a.v.shape[3];
  auto expect = [&](const Arg &t, int i, int64_t want, const char *what) {
    if (t.t.shape[i] == want)
      return true;
    err = str(t.name, ": ", kDimNames[i], " dimension (", i, ") is ",
              t.t.shape[i], " but ", what, " is ", want);
    return false;
  };
  if (!expect(q, 3, s.head_dim, "spec.head_dim") ||
      !expect(k, 3, s.head_dim, "spec.head_dim") ||
      !expect(v, 3, s.value_dim, "spec.value_dim") ||
      !expect(k, 0, B, "q's batch") || !expect(v, 0, B, "q's batch") ||
      !expect(v, 1, Hkv, "k's heads") || !expect(v, 2, Skv, "k's sequence") ||
      !expect(o, 0, B, "q's batch") || !expect(o, 1, Hq, "q's heads") ||
      !expect(o, 2, Sq, "q's sequence") || !expect(o, 3, Dv, "v's head"))
    return false;
  (void)D;
  if (Hq % Hkv != 0) {
    err = str("q has ", Hq, " heads, not a multiple of k's ", Hkv, " heads");
    return false;
  }
  const std::pair<const char *, std::pair<int64_t, int64_t>> statics[] = {
      {"batch", {s.batch, B}},    {"heads_q", {s.heads_q, Hq}},
      {"heads_kv", {s.heads_kv, Hkv}}, {"seq_q", {s.seq_q, Sq}},
      {"seq_kv", {s.seq_kv, Skv}}};
  for (auto &[name, pair] : statics)
    if (pair.first != ATTN_DYNAMIC && pair.first != pair.second) {
      err = str("the kernel was compiled for ", name, " = ", pair.first,
                " but the tensors have ", pair.second);
      return false;
    }
  if (hasLse && (!expect(lse, 0, B, "q's batch") ||
                 !expect(lse, 1, Hq, "q's heads") ||
                 !expect(lse, 2, Sq, "q's sequence")))
    return false;
  if (hasMask) {
    if (a.mask.shape[0] != 1 && a.mask.shape[0] != B) {
      err = str("mask: batch dimension (0) must be 1 or ", B, ", got ",
                a.mask.shape[0]);
      return false;
    }
    if (a.mask.shape[1] != 1 && a.mask.shape[1] != Hq) {
      err = str("mask: heads dimension (1) must be 1 or ", Hq, ", got ",
                a.mask.shape[1]);
      return false;
    }
    if (!expect(mask, 2, Sq, "q's sequence") ||
        !expect(mask, 3, Skv, "k's sequence"))
      return false;
  }
  if (target == ATTN_TARGET_CPU && a.stream) {
    err = "stream must be NULL for the cpu target";
    return false;
  }

  // Outputs may not overlap any other tensor: the kernel would read what it
  // already overwrote, or two outputs would race.
  std::vector<const Arg *> outputs = {&o};
  if (hasLse)
    outputs.push_back(&lse);
  for (const Arg *w : outputs)
    for (const Arg *t : used) {
      if (t == w)
        continue;
      auto [wl, wh] = span(*w);
      auto [tl, th] = span(*t);
      if (wl < th && tl < wh) {
        err = str(w->name, " overlaps ", t->name,
                  " in memory; outputs must not alias any other tensor");
        return false;
      }
    }

  auto view = [](const attn_tensor &t, int rank) {
    TensorView r;
    r.data = t.data;
    r.rank = rank;
    for (int i = 0; i < rank; ++i) {
      r.shape[i] = t.shape[i];
      r.strides[i] = t.strides[i];
    }
    return r;
  };
  out = KernelArgs();
  out.q = view(a.q, 4);
  out.k = view(a.k, 4);
  out.v = view(a.v, 4);
  out.out = view(a.out, 4);
  if (hasLse)
    out.lse = view(a.lse, 3);
  if (hasMask) {
    out.mask = view(a.mask, 4);
    // Broadcast dimensions: the kernel sees the full extent, stride 0.
    if (a.mask.shape[0] == 1) {
      out.mask.shape[0] = B;
      out.mask.strides[0] = 0;
    }
    if (a.mask.shape[1] == 1) {
      out.mask.shape[1] = Hq;
      out.mask.strides[1] = 0;
    }
  }
  out.seed = a.seed;
  out.stream = a.stream;
  return true;
}
