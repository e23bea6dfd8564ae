//===- Validate.cpp - spec and launch checks, and argument normalization --===//
//
// Everything a caller can get wrong is caught here, before a compiler or an
// executable sees it, so backends may assume well-formed input and a failed
// call never writes to caller memory.
//
//===----------------------------------------------------------------------===//
#include "Internal.h"
#include "vulkan/Buffers.h"

#include "attn/runtime/Checked.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <tuple>

using namespace attn;
using namespace attn::detail;

int64_t attn::dtypeBytes(attn_dtype d) {
  switch (d) {
  case ATTN_DTYPE_F16:
  case ATTN_DTYPE_BF16:
    return 2;
  case ATTN_DTYPE_F32:
    return 4;
  case ATTN_DTYPE_BOOL:
    return 1;
  }
  return 1;
}

namespace {

std::string str(int64_t v) { return std::to_string(v); }

std::string str(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

std::string str(const void *p) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%" PRIxPTR,
                reinterpret_cast<uintptr_t>(p));
  return buf;
}

bool isFloatDtype(int d) {
  return d == ATTN_DTYPE_F16 || d == ATTN_DTYPE_BF16 || d == ATTN_DTYPE_F32;
}

bool checkDim(const char *field, int64_t v, std::string &error) {
  if (v == ATTN_DYNAMIC || v > 0)
    return true;
  error = std::string("spec.") + field + " is " + str(v) +
          "; a dimension must be > 0 or ATTN_DYNAMIC";
  return false;
}

bool checkNonNegative(const char *field, int64_t v, const char *zeroMeans,
                      std::string &error) {
  if (v >= 0)
    return true;
  error = std::string("spec.") + field + " is " + str(v) +
          "; it must be >= 0 (0 = " + zeroMeans + ")";
  return false;
}

/// One size the runtime forms from a spec or a launch: a tensor's bytes
/// (or the score count's), as named factors. Dynamic (ATTN_DYNAMIC)
/// factors are skipped: a spec bounds what it knows, the launch the rest.
struct SizeTerm {
  const char *name;
  int64_t value;
};

/// Refuses `what` when the product of `factors` (times `bytes` per element)
/// exceeds kMaxSize, naming every factor.
bool checkSize(const std::string &what, std::initializer_list<SizeTerm> factors,
               int64_t bytes, std::string &error) {
  int64_t p = 1;
  bool ok = true;
  for (const SizeTerm &f : factors)
    if (f.value != ATTN_DYNAMIC)
      ok = ok && checkedMul(p, f.value, p) && p <= kMaxSize;
  ok = ok && checkedMul(p, bytes, p) && p <= kMaxSize;
  if (ok)
    return true;
  std::string product;
  for (const SizeTerm &f : factors)
    if (f.value != ATTN_DYNAMIC)
      product += std::string(f.name) + " (" + str(f.value) + ") x ";
  error = what + " = " + product + str(bytes) +
          " bytes is more than 2^62 bytes, the largest size the runtime "
          "accepts (docs/Runtime.md, \"Limits\")";
  return false;
}

/// The sizes every target forms from the problem's dimensions: each
/// tensor's bytes, and B*Hq*Sq*Skv f32 scores (the work, and the math
/// variant's score matrix). `prefix` names where the dimensions come from.
bool checkProblemSize(const std::string &prefix, attn_dtype dtype,
                      bool hasMask, attn_dtype maskDtype, bool lse,
                      int64_t b, int64_t hq, int64_t hkv, int64_t sq,
                      int64_t skv, int64_t d, int64_t dv, std::string &error) {
  const int64_t es = dtypeBytes(dtype);
  auto named = [&](const char *n) { return prefix + n; };
  return checkSize(named("q"), {{"batch", b}, {"heads_q", hq}, {"seq_q", sq},
                                {"head_dim", d}}, es, error) &&
         checkSize(named("k"), {{"batch", b}, {"heads_kv", hkv},
                                {"seq_kv", skv}, {"head_dim", d}}, es,
                   error) &&
         checkSize(named("v"), {{"batch", b}, {"heads_kv", hkv},
                                {"seq_kv", skv}, {"value_dim", dv}}, es,
                   error) &&
         checkSize(named("out"), {{"batch", b}, {"heads_q", hq},
                                  {"seq_q", sq}, {"value_dim", dv}}, es,
                   error) &&
         (!lse || checkSize(named("lse"), {{"batch", b}, {"heads_q", hq},
                                           {"seq_q", sq}}, 4, error)) &&
         (!hasMask ||
          checkSize(named("mask"), {{"batch", b}, {"heads_q", hq},
                                    {"seq_q", sq}, {"seq_kv", skv}},
                    dtypeBytes(maskDtype), error)) &&
         checkSize(named("the scores"), {{"batch", b}, {"heads_q", hq},
                                         {"seq_q", sq}, {"seq_kv", skv}},
                   4, error);
}

/// The largest extent (a dimension, a block size) `target`'s kernels can
/// index: SPIR-V kernels use 32-bit indices (attn-to-spirv-pipeline's
/// index width), cpu and cuda 64-bit ones, which kMaxSize already bounds.
int64_t maxExtent(attn_target target) {
  return target == ATTN_TARGET_VULKAN ? int64_t(INT32_MAX) : kMaxSize;
}

} // namespace

bool CacheKey::operator<(const CacheKey &o) const {
  auto tie = [](const CacheKey &k) {
    return std::tie(k.target, k.dtype, k.batch, k.headsQ, k.headsKv, k.seqQ,
                    k.seqKv, k.headDim, k.valueDim, k.causal, k.mask,
                    k.maskDtype, k.scale, k.dropout, k.lse, k.variant,
                    k.blockQ, k.blockKv, k.kvSplits, k.configuration);
  };
  return tie(*this) < tie(o);
}

CacheKey attn::detail::makeCacheKey(const attn_spec &s, attn_target target,
                                    std::string configuration) {
  CacheKey k;
  k.configuration = std::move(configuration);
  k.target = target;
  k.dtype = s.dtype;
  k.batch = s.batch;
  k.headsQ = s.heads_q;
  k.headsKv = s.heads_kv;
  k.seqQ = s.seq_q;
  k.seqKv = s.seq_kv;
  k.headDim = s.head_dim;
  k.valueDim = s.value_dim;
  k.causal = s.causal;
  k.mask = s.mask;
  k.maskDtype = s.mask_dtype;
  // -0.0 and 0.0 compare equal as doubles, so they share an entry, which is
  // right: both mean the same kernel.
  k.scale = s.scale;
  k.dropout = s.dropout_p;
  k.lse = s.return_lse;
  k.variant = s.variant;
  k.blockQ = s.block_q;
  k.blockKv = s.block_kv;
  k.kvSplits = s.kv_splits;
  return k;
}

bool attn::detail::isValidTarget(int target) {
  return target == ATTN_TARGET_CPU || target == ATTN_TARGET_CUDA ||
         target == ATTN_TARGET_VULKAN;
}

bool attn::detail::validateSpec(const attn_spec &spec, attn_target target,
                                attn_spec &normalized, std::string &error) {
  int dtype = spec.dtype;
  if (dtype == ATTN_DTYPE_BOOL) {
    error = "spec.dtype is bool, which is for masks only; q, k, v and out "
            "need f16, bf16 or f32";
    return false;
  }
  if (!isFloatDtype(dtype)) {
    error = "spec.dtype is " + str(int64_t(dtype)) +
            "; expected ATTN_DTYPE_F16, ATTN_DTYPE_BF16 or ATTN_DTYPE_F32";
    return false;
  }
  if (spec.head_dim <= 0) {
    error = "spec.head_dim is " + str(spec.head_dim) +
            "; it must be set (> 0)";
    return false;
  }
  if (spec.head_dim > 1024) {
    error = "spec.head_dim is " + str(spec.head_dim) +
            "; the largest supported is 1024";
    return false;
  }
  if (!checkNonNegative("value_dim", spec.value_dim, "head_dim", error))
    return false;
  if (spec.value_dim > 1024) {
    error = "spec.value_dim is " + str(spec.value_dim) +
            "; the largest supported is 1024";
    return false;
  }
  if (!checkDim("batch", spec.batch, error) ||
      !checkDim("heads_q", spec.heads_q, error) ||
      !checkDim("heads_kv", spec.heads_kv, error) ||
      !checkDim("seq_q", spec.seq_q, error) ||
      !checkDim("seq_kv", spec.seq_kv, error))
    return false;
  if (spec.heads_q != ATTN_DYNAMIC && spec.heads_kv != ATTN_DYNAMIC &&
      spec.heads_q % spec.heads_kv != 0) {
    error = "spec.heads_q (" + str(spec.heads_q) +
            ") is not a multiple of spec.heads_kv (" + str(spec.heads_kv) +
            ")";
    return false;
  }
  int mask = spec.mask, maskDtype = spec.mask_dtype;
  if (mask != ATTN_MASK_NONE && mask != ATTN_MASK_BOOL &&
      mask != ATTN_MASK_ADDITIVE) {
    error = "spec.mask is " + str(int64_t(mask)) +
            "; expected ATTN_MASK_NONE, ATTN_MASK_BOOL or ATTN_MASK_ADDITIVE";
    return false;
  }
  if (mask == ATTN_MASK_BOOL && maskDtype != ATTN_DTYPE_BOOL) {
    error = "spec.mask_dtype is " +
            std::string(attn_dtype_name(spec.mask_dtype)) +
            " but a bool mask (ATTN_MASK_BOOL) needs ATTN_DTYPE_BOOL";
    return false;
  }
  if (mask == ATTN_MASK_ADDITIVE && !isFloatDtype(maskDtype)) {
    error = "spec.mask_dtype is " +
            std::string(attn_dtype_name(spec.mask_dtype)) +
            " but an additive mask (ATTN_MASK_ADDITIVE) needs f16, bf16 or "
            "f32";
    return false;
  }
  if (!std::isfinite(spec.scale)) {
    error = "spec.scale is " + str(spec.scale) +
            "; it must be finite (0 = 1/sqrt(head_dim))";
    return false;
  }
  // Written so that NaN fails too.
  if (!(spec.dropout_p >= 0.0 && spec.dropout_p < 1.0)) {
    error = "spec.dropout_p is " + str(spec.dropout_p) +
            "; it must be in [0, 1)";
    return false;
  }
  int variant = spec.variant;
  if (variant != ATTN_VARIANT_DEFAULT && variant != ATTN_VARIANT_MATH) {
    error = "spec.variant is " + str(int64_t(variant)) +
            "; expected ATTN_VARIANT_DEFAULT or ATTN_VARIANT_MATH";
    return false;
  }
  if (!checkNonNegative("block_q", spec.block_q, "target default", error) ||
      !checkNonNegative("block_kv", spec.block_kv, "target default", error) ||
      !checkNonNegative("kv_splits", spec.kv_splits, "automatic", error))
    return false;
  // Tiles of more than 2^31 - 1 rows or keys fit no target's memory, and
  // bounding them keeps every tile count and tile-size sum in range.
  for (auto [field, v] : {std::pair<const char *, int64_t>{"block_q",
                                                           spec.block_q},
                          {"block_kv", spec.block_kv}})
    if (v > kMaxBlock) {
      error = std::string("spec.") + field + " is " + str(v) +
              "; the largest supported is 2^31 - 1 (" + str(kMaxBlock) + ")";
      return false;
    }
  if (!isValidTarget(target)) {
    error = "target is " + str(int64_t(target)) +
            "; expected ATTN_TARGET_CPU, ATTN_TARGET_CUDA or "
            "ATTN_TARGET_VULKAN";
    return false;
  }
  // What the static dimensions already determine must fit (the launch
  // checks the rest): sizes formed from them cannot overflow downstream.
  if (!checkProblemSize("spec: ", spec.dtype, mask != ATTN_MASK_NONE,
                        spec.mask_dtype, spec.return_lse != 0, spec.batch,
                        spec.heads_q, spec.heads_kv, spec.seq_q, spec.seq_kv,
                        spec.head_dim,
                        spec.value_dim ? spec.value_dim : spec.head_dim,
                        error))
    return false;

  // One canonical spelling per kernel, so equal kernels share a cache entry
  // and the compiler never has to interpret "0 = same as D" or truthy ints.
  normalized = spec;
  if (normalized.value_dim == 0)
    normalized.value_dim = normalized.head_dim;
  normalized.causal = spec.causal != 0;
  normalized.return_lse = spec.return_lse != 0;
  if (normalized.mask == ATTN_MASK_NONE)
    normalized.mask_dtype = ATTN_DTYPE_BOOL;
  if (normalized.scale == 0.0)
    normalized.scale = 0.0; // folds -0.0 into the default
  return true;
}

bool attn::detail::checkTargetLimits(const attn_spec &spec,
                                     attn_target target, std::string &error) {
  const int64_t cap = maxExtent(target);
  const std::pair<const char *, int64_t> extents[] = {
      {"batch", spec.batch},     {"heads_q", spec.heads_q},
      {"heads_kv", spec.heads_kv}, {"seq_q", spec.seq_q},
      {"seq_kv", spec.seq_kv},   {"block_q", spec.block_q},
      {"block_kv", spec.block_kv}, {"kv_splits", spec.kv_splits}};
  for (auto [field, v] : extents)
    if (v > cap) {
      error = std::string("spec.") + field + " is " + str(v) + "; the " +
              attn_target_name(target) + " target's kernels use " +
              (cap == INT32_MAX ? "32" : "64") +
              "-bit indices, so the largest it takes is " + str(cap);
      return false;
    }
  return true;
}

namespace {

/// One tensor argument as the checks see it.
struct Operand {
  const char *name;
  const attn_tensor *t;
  int rank;
  const char *dims[4];
  attn_dtype dtype;
  bool present;
  // Filled by the span check: the bytes [lo, hi) the tensor can touch.
  uintptr_t lo = 0, hi = 0;

  bool isMask() const { return name[0] == 'm'; }
  /// A mask's B or H dimension of extent 1 broadcasts: its stride is unused.
  bool broadcasts(int d) const { return isMask() && d < 2 && t->shape[d] == 1; }
};

class LaunchChecker {
public:
  LaunchChecker(const attn_spec &spec, attn_target target,
                const attn_launch_args &args, std::string &error)
      : spec(spec), target(target), args(args), error(error),
        q{"q", &args.q, 4, {"B", "Hq", "Sq", "D"}, spec.dtype, true},
        k{"k", &args.k, 4, {"B", "Hkv", "Skv", "D"}, spec.dtype, true},
        v{"v", &args.v, 4, {"B", "Hkv", "Skv", "Dv"}, spec.dtype, true},
        mask{"mask",
             &args.mask,
             4,
             {"B", "Hq", "Sq", "Skv"},
             spec.mask_dtype,
             spec.mask != ATTN_MASK_NONE},
        out{"out", &args.out, 4, {"B", "Hq", "Sq", "Dv"}, spec.dtype, true},
        lse{"lse",
            &args.lse,
            3,
            {"B", "Hq", "Sq", nullptr},
            ATTN_DTYPE_F32,
            spec.return_lse != 0} {}

  bool run(KernelArgs &result) {
    Operand *all[] = {&q, &k, &v, &mask, &out, &lse};
    for (Operand *o : all)
      if (o->present && !o->t->data)
        return fail(std::string(o->name) + ".data is NULL");
    // A vulkan device buffer's address is no memory the other targets can
    // reach (nor dereferenceable at all).
    if (target != ATTN_TARGET_VULKAN)
      for (Operand *o : all)
        if (o->present && vulkan::isDeviceAddress(o->t->data))
          return fail(std::string(o->name) +
                      ".data is the address of a vulkan device buffer "
                      "(attn_vulkan_buffer_pointer); the kernel is for the " +
                      attn_target_name(target) + " target");
    for (Operand *o : all)
      if (o->present && !checkPositive(*o))
        return false;
    if (!checkShapes())
      return false;
    // Every size the kernels form from the shapes (strides aside: the
    // spans below) must fit, as the spec's static part already did.
    {
      const int64_t *qs = q.t->shape, *ks = k.t->shape, *vs = v.t->shape;
      if (!checkProblemSize("", spec.dtype, mask.present, spec.mask_dtype,
                            lse.present, qs[0], qs[1], ks[1], qs[2], ks[2],
                            qs[3], vs[3], error))
        return false;
    }
    for (Operand *o : all)
      if (o->present && !checkStrides(*o))
        return false;
    for (Operand *o : all)
      if (o->present && !checkAlignment(*o))
        return false;
    if (target == ATTN_TARGET_CPU && args.stream)
      return fail("stream is " + str(args.stream) +
                  "; it must be NULL for the cpu target");
    for (Operand *o : all)
      if (o->present && !computeSpan(*o))
        return false;
    for (Operand *o : {&out, &lse})
      if (o->present && !checkSelfOverlap(*o))
        return false;
    if (!checkOverlap())
      return false;

    result = KernelArgs();
    result.q = view(q);
    result.k = view(k);
    result.v = view(v);
    result.out = view(out);
    if (mask.present)
      result.mask = view(mask);
    if (lse.present)
      result.lse = view(lse);
    result.seed = args.seed;
    result.stream = args.stream;
    return true;
  }

private:
  bool fail(const std::string &message) {
    error = message;
    return false;
  }

  std::string dimRef(const Operand &o, int d) const {
    return std::string(o.name) + ".shape[" + str(int64_t(d)) + "] (" +
           o.dims[d] + ")";
  }

  bool checkPositive(const Operand &o) {
    for (int d = 0; d < o.rank; ++d)
      if (o.t->shape[d] <= 0)
        return fail(dimRef(o, d) + " is " + str(o.t->shape[d]) +
                    "; every dimension must be > 0");
    return true;
  }

  /// `o`'s dimension d must equal the spec's static value, when static.
  bool matchSpec(const Operand &o, int d, int64_t specValue,
                 const char *field) {
    if (specValue == ATTN_DYNAMIC || o.t->shape[d] == specValue)
      return true;
    return fail(dimRef(o, d) + " is " + str(o.t->shape[d]) +
                " but the kernel was compiled for spec." + field + " = " +
                str(specValue));
  }

  /// `o`'s dimension d must equal the dimension that defines it in `ref`.
  bool matchTensor(const Operand &o, int d, const Operand &ref, int refDim) {
    if (o.t->shape[d] == ref.t->shape[refDim])
      return true;
    return fail(dimRef(o, d) + " is " + str(o.t->shape[d]) + " but " +
                dimRef(ref, refDim) + " is " + str(ref.t->shape[refDim]));
  }

  /// A mask's B/H dimension is 1 (broadcast) or equal to q's.
  bool matchBroadcast(const Operand &o, int d, const Operand &ref, int refDim) {
    int64_t got = o.t->shape[d];
    if (got == 1 || got == ref.t->shape[refDim])
      return true;
    return fail(dimRef(o, d) + " is " + str(got) + "; expected 1 (broadcast) "
                "or " + str(ref.t->shape[refDim]) + " like " +
                dimRef(ref, refDim));
  }

  bool checkShapes() {
    // q defines B, Hq and Sq; k defines Hkv and Skv; the spec fixes D, Dv
    // and whichever of the others it made static.
    if (!matchSpec(q, 0, spec.batch, "batch") ||
        !matchSpec(q, 1, spec.heads_q, "heads_q") ||
        !matchSpec(q, 2, spec.seq_q, "seq_q") ||
        !matchSpec(q, 3, spec.head_dim, "head_dim"))
      return false;
    if (!matchTensor(k, 0, q, 0) ||
        !matchSpec(k, 1, spec.heads_kv, "heads_kv") ||
        !matchSpec(k, 2, spec.seq_kv, "seq_kv") ||
        !matchSpec(k, 3, spec.head_dim, "head_dim"))
      return false;
    if (q.t->shape[1] % k.t->shape[1] != 0)
      return fail(dimRef(q, 1) + " = " + str(q.t->shape[1]) +
                  " is not a multiple of " + dimRef(k, 1) + " = " +
                  str(k.t->shape[1]));
    if (!matchTensor(v, 0, q, 0) || !matchTensor(v, 1, k, 1) ||
        !matchTensor(v, 2, k, 2) ||
        !matchSpec(v, 3, spec.value_dim, "value_dim"))
      return false;
    if (!matchTensor(out, 0, q, 0) || !matchTensor(out, 1, q, 1) ||
        !matchTensor(out, 2, q, 2) ||
        !matchSpec(out, 3, spec.value_dim, "value_dim"))
      return false;
    if (lse.present &&
        (!matchTensor(lse, 0, q, 0) || !matchTensor(lse, 1, q, 1) ||
         !matchTensor(lse, 2, q, 2)))
      return false;
    if (mask.present &&
        (!matchBroadcast(mask, 0, q, 0) || !matchBroadcast(mask, 1, q, 1) ||
         !matchTensor(mask, 2, q, 2) || !matchTensor(mask, 3, k, 2)))
      return false;
    return true;
  }

  bool checkStrides(const Operand &o) {
    int inner = o.rank - 1;
    if (o.t->strides[inner] != 1)
      return fail(std::string(o.name) + ".strides[" + str(int64_t(inner)) +
                  "] is " + str(o.t->strides[inner]) +
                  "; the last dimension must be contiguous (stride 1)");
    for (int d = 0; d < inner; ++d) {
      if (o.broadcasts(d) || o.t->strides[d] >= 1)
        continue;
      return fail(std::string(o.name) + ".strides[" + str(int64_t(d)) +
                  "] (" + o.dims[d] + ") is " + str(o.t->strides[d]) +
                  "; strides must be >= 1 (only a mask's broadcast B or H "
                  "dimension of size 1 may have any stride)");
    }
    return true;
  }

  bool checkAlignment(const Operand &o) {
    int64_t size = dtypeBytes(o.dtype);
    if (reinterpret_cast<uintptr_t>(o.t->data) % size == 0)
      return true;
    return fail(std::string(o.name) + ".data (" + str(o.t->data) +
                ") is not aligned to " + str(size) + " bytes, the size of one " +
                attn_dtype_name(o.dtype) + " element");
  }

  /// The byte range [lo, hi) the tensor's elements occupy. Strides are
  /// positive (or unused), so the first element is the lowest address.
  bool computeSpan(Operand &o) {
    int64_t last = 0;
    bool overflow = false;
    for (int d = 0; d < o.rank; ++d) {
      if (o.broadcasts(d))
        continue;
      int64_t term;
      overflow |= __builtin_mul_overflow(o.t->shape[d] - 1, o.t->strides[d],
                                         &term);
      overflow |= __builtin_add_overflow(last, term, &last);
    }
    int64_t bytes;
    overflow |= __builtin_add_overflow(last, int64_t(1), &last);
    overflow |= __builtin_mul_overflow(last, dtypeBytes(o.dtype), &bytes);
    o.lo = reinterpret_cast<uintptr_t>(o.t->data);
    overflow |= __builtin_add_overflow(o.lo, static_cast<uintptr_t>(bytes),
                                       &o.hi);
    if (overflow)
      return fail(std::string(o.name) +
                  ": its shape and strides span more memory than can be "
                  "addressed");
    return true;
  }

  /// An output's elements must have distinct addresses, or the result
  /// depends on write order. Taken in increasing stride order (extent-1
  /// dimensions aside), each stride must exceed the span of the smaller
  /// ones: true of every dense or padded permutation (BHSD, BSHD), and
  /// what proves that no two elements share an address. (computeSpan has
  /// already bounded every product here.)
  bool checkSelfOverlap(const Operand &o) {
    int dims[4], n = 0;
    for (int d = 0; d < o.rank; ++d)
      if (o.t->shape[d] > 1)
        dims[n++] = d;
    std::sort(dims, dims + n, [&](int a, int b) {
      return o.t->strides[a] < o.t->strides[b];
    });
    int64_t span = 0; // the largest offset the smaller strides reach
    for (int i = 0; i < n; ++i) {
      int d = dims[i];
      if (o.t->strides[d] <= span) {
        std::string layout;
        for (int e = 0; e < o.rank; ++e)
          layout += (e ? ", " : "") + str(o.t->shape[e]) + ":" +
                    str(o.t->strides[e]);
        return fail(std::string(o.name) + " overlaps itself: " +
                    o.name + ".strides[" + str(int64_t(d)) + "] (" +
                    o.dims[d] + ") is " + str(o.t->strides[d]) +
                    ", within the " + str(span + 1) +
                    " elements the smaller strides span (shape:stride " +
                    layout + "); an output needs a distinct address per "
                    "element");
      }
      span += (o.t->shape[d] - 1) * o.t->strides[d];
    }
    return true;
  }

  bool checkOverlap() {
    const Operand *outputs[] = {&out, &lse};
    const Operand *others[] = {&q, &k, &v, &mask, &out};
    for (const Operand *o : outputs) {
      if (!o->present)
        continue;
      for (const Operand *i : others) {
        if (i == o || !i->present)
          continue;
        if (o->lo < i->hi && i->lo < o->hi)
          return fail(std::string(o->name) + " [" + str((void *)o->lo) +
                      ", " + str((void *)o->hi) + ") overlaps " + i->name +
                      " [" + str((void *)i->lo) + ", " + str((void *)i->hi) +
                      "); outputs must not share memory with inputs or with "
                      "each other");
      }
    }
    return true;
  }

  TensorView view(const Operand &o) const {
    TensorView t;
    t.data = o.t->data;
    t.rank = o.rank;
    for (int d = 0; d < o.rank; ++d) {
      t.shape[d] = o.t->shape[d];
      t.strides[d] = o.t->strides[d];
    }
    if (o.isMask()) {
      // Executables index the mask like q: [B, Hq, ...]; stride 0 repeats
      // the one stored slice.
      for (int d = 0; d < 2; ++d)
        if (o.broadcasts(d)) {
          t.shape[d] = q.t->shape[d];
          t.strides[d] = 0;
        }
    }
    return t;
  }

  const attn_spec &spec;
  attn_target target;
  const attn_launch_args &args;
  std::string &error;
  Operand q, k, v, mask, out, lse;
};

} // namespace

bool attn::detail::validateLaunch(const attn_spec &spec, attn_target target,
                                  const attn_launch_args &args,
                                  KernelArgs &out, std::string &error) {
  return LaunchChecker(spec, target, args, error).run(out);
}
