//===- SpecCases.cpp - attn-fuzz: C API cases (attn_compile, attn_launch) -===//
//
// Generates attn_spec values with tiny and extreme fields (sizes 0, 1, odd,
// 2^31, 2^62, INT64_MAX, dynamic; head dims; block sizes; split counts;
// scale 0/inf/nan/huge; dropout at and past its bounds; masks; lse; the
// math variant) and, for the child, compiles them through the C API on
// cpu or vulkan and launches what compiled: on tiny buffers laid out
// BHSD, BSHD, padded or with negative and zero strides, filled with
// ordinary or extreme values (nan, inf, +-3.4e38, mask bytes other than
// 0 and 1), or with launch shapes whose element counts overflow int64,
// which validation must refuse (no buffer can hold them). A case is
// key=value text, so a saved failure is a file attn-fuzz --replay runs.
//
//===----------------------------------------------------------------------===//
#include "Fuzz.h"

#include "attn/runtime/attn.h"

#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>

namespace attn_fuzz {
namespace {

int64_t pickSize(Rng &rng) {
  static const int64_t typical[] = {1, 2, 3, 4, 5, 7, 8, 16, 17, 33, 64};
  static const int64_t extreme[] = {0,         -2,        65535,
                                    65536,     1 << 20,   (1LL << 31) - 1,
                                    1LL << 31, 1LL << 32, 1LL << 62,
                                    INT64_MAX};
  double r = std::uniform_real_distribution<double>(0, 1)(rng);
  if (r < 0.45)
    return ATTN_DYNAMIC;
  if (r < 0.88)
    return pick(rng, typical);
  return pick(rng, extreme);
}

/// The spec and launch choices of one case, as the key=value text saved
/// with a failure.
using Fields = std::map<std::string, std::string>;

std::string formatDouble(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

int64_t num(const Fields &f, const std::string &key, int64_t dflt = 0) {
  auto it = f.find(key);
  return it == f.end() ? dflt : std::strtoll(it->second.c_str(), nullptr, 10);
}
double real(const Fields &f, const std::string &key) {
  auto it = f.find(key);
  return it == f.end() ? 0.0 : std::strtod(it->second.c_str(), nullptr);
}

Fields parseFields(const std::string &text) {
  Fields f;
  std::istringstream is(text);
  for (std::string line; std::getline(is, line);) {
    if (line.empty() || line[0] == '#' || line.rfind("//", 0) == 0)
      continue;
    size_t eq = line.find('=');
    if (eq != std::string::npos)
      f[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return f;
}

size_t elementBytes(int dtype) {
  return dtype == ATTN_DTYPE_F32 ? 4 : dtype == ATTN_DTYPE_BOOL ? 1 : 2;
}

/// A tensor of the launch: shape and strides in elements, laid out in one
/// buffer so that every element the strides can reach is inside it.
struct Buffer {
  std::vector<unsigned char> bytes;
  attn_tensor tensor{};
};

bool layout(Buffer &buf, const int64_t shape[4], int rank, size_t elemBytes,
            const std::string &kind, Rng &rng, bool extremeValues,
            bool boolMask) {
  attn_tensor &t = buf.tensor;
  for (int i = 0; i < 4; ++i) {
    t.shape[i] = i < rank ? shape[i] : 0;
    t.strides[i] = 0;
  }
  // Strides for BHSD (contiguous), BSHD (heads inside sequence), padded
  // rows, or with a negative or zero stride on an outer dimension.
  __int128 s = 1;
  int order[4] = {3, 2, 1, 0};
  if (kind == "bshd" && rank == 4) {
    order[1] = 1;
    order[2] = 2;
  }
  for (int i = 0; i < rank; ++i) {
    int d = order[i];
    if (rank == 3 && d == 3)
      continue;
    t.strides[d] = static_cast<int64_t>(s);
    int64_t pad = kind == "padded" && d != rank - 1 ? 3 : 0;
    s *= (t.shape[d] + pad);
    if (s > (__int128)1 << 26)
      return false; // not tiny
  }
  if (kind == "negative" && rank >= 2)
    t.strides[0] = -t.strides[0];
  if (kind == "zero" && rank >= 2)
    t.strides[1] = 0;
  __int128 lo = 0, hi = 0;
  for (int d = 0; d < rank; ++d) {
    if (t.shape[d] <= 0)
      continue;
    __int128 span = (__int128)(t.shape[d] - 1) * t.strides[d];
    (span < 0 ? lo : hi) += span;
  }
  size_t count = static_cast<size_t>(hi - lo + 1);
  buf.bytes.assign(count * elemBytes + 64, 0);
  // Values: small ones, or the extremes (nan, inf, +-FLT_MAX, 2.4e38);
  // mask bytes are anything 0-255.
  for (size_t i = 0; i < count; ++i) {
    unsigned char *p = buf.bytes.data() + i * elemBytes;
    if (boolMask) {
      *p = extremeValues ? static_cast<unsigned char>(below(rng, 256))
                         : static_cast<unsigned char>(below(rng, 2));
      continue;
    }
    float v = std::uniform_real_distribution<float>(-1, 1)(rng);
    if (extremeValues && chance(rng, 0.1))
      v = pickOf(rng, {NAN, INFINITY, -INFINITY, 3.4028235e38f, -3.4028235e38f,
                       2.4e38f, 1e-40f});
    if (elemBytes == 4) {
      std::memcpy(p, &v, 4);
    } else {
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      uint16_t h = static_cast<uint16_t>(bits >> 16); // bf16 bits; as f16
      std::memcpy(p, &h, 2);                          // they are some value too
    }
  }
  t.data = buf.bytes.data() + static_cast<size_t>(-lo) * elemBytes;
  return true;
}

} // namespace

Case generateSpecCase(Rng &rng, const std::string &stage) {
  Case c;
  c.stage = stage;
  c.origin = "gen";
  std::ostringstream os;
  int dtype = chance(rng, 0.96) ? pickOf(rng, {ATTN_DTYPE_F16, ATTN_DTYPE_BF16,
                                               ATTN_DTYPE_F32})
                                : pickOf<int>(rng, {0, ATTN_DTYPE_BOOL, 7});
  os << "dtype=" << dtype << "\n";
  int64_t hkv = pickSize(rng);
  int64_t hq = hkv > 0 && hkv < (1 << 20) && chance(rng, 0.7)
                   ? hkv * pickOf(rng, {1, 1, 2, 3, 4, 8}) + (chance(rng, 0.1) ? 1 : 0)
                   : pickSize(rng);
  os << "batch=" << pickSize(rng) << "\nheads_q=" << hq << "\nheads_kv=" << hkv
     << "\nseq_q=" << pickSize(rng) << "\nseq_kv=" << pickSize(rng) << "\n";
  int64_t d = chance(rng, 0.93)
                  ? pickOf<int64_t>(rng, {1, 2, 3, 8, 9, 16, 24, 32, 64, 80, 128, 256})
                  : pickOf<int64_t>(rng, {0, -1, 257, 1024, 65536, 1LL << 31, INT64_MAX});
  os << "head_dim=" << d << "\nvalue_dim="
     << (chance(rng, 0.7) ? 0 : pickOf<int64_t>(rng, {1, 8, 13, 64, 0, -3, 1LL << 40}))
     << "\n";
  os << "causal=" << (chance(rng, 0.4) ? 1 : 0) << "\n";
  int mask = chance(rng, 0.55) ? 0 : pickOf(rng, {1, 2, 2, 3});
  os << "mask=" << mask << "\nmask_dtype="
     << (mask == 1 ? (chance(rng, 0.95) ? ATTN_DTYPE_BOOL : ATTN_DTYPE_F32)
                   : pickOf(rng, {ATTN_DTYPE_F16, ATTN_DTYPE_BF16, ATTN_DTYPE_F32,
                                  ATTN_DTYPE_BOOL}))
     << "\n";
  os << "scale="
     << formatDouble(chance(rng, 0.5)
                         ? 0.0
                         : pickOf<double>(rng, {0.125, 1.0, -1.0, 1e-30, 1e30, 1e300, 1000.0,
                                        INFINITY, -INFINITY, NAN, 5e-324}))
     << "\n";
  os << "dropout_p="
     << formatDouble(chance(rng, 0.85)
                         ? 0.0
                         : pickOf<double>(rng, {0.1, 0.5, 0.999999, 1.0, -0.1, NAN, 1e-300}))
     << "\n";
  os << "return_lse=" << (chance(rng, 0.4) ? 1 : 0) << "\n";
  os << "variant=" << (chance(rng, 0.15) ? 1 : 0) << "\n";
  auto block = [&]() -> int64_t {
    return chance(rng, 0.6) ? 0
                            : pickOf<int64_t>(rng, {1, 3, 7, 16, 64, 128, -1,
                                                    1LL << 31, 1LL << 62, INT64_MAX});
  };
  os << "block_q=" << block() << "\nblock_kv=" << block() << "\n";
  os << "kv_splits="
     << (chance(rng, 0.5) ? 0
                          : pickOf<int64_t>(rng, {1, 2, 3, 64, 65536, 1000000,
                                                  1LL << 40, -1}))
     << "\n";
  // The launch: sizes for the dynamic dimensions (tiny, 0, or overflowing),
  // a layout and the values.
  os << "launch=" << pickOf(rng, {"tiny", "tiny", "tiny", "tiny", "overflow", "none"})
     << "\n";
  os << "layout=" << pickOf(rng, {"bhsd", "bhsd", "bshd", "padded", "negative", "zero"})
     << "\n";
  os << "extreme_values=" << (chance(rng, 0.3) ? 1 : 0) << "\n";
  os << "mask_broadcast=" << pickOf(rng, {"none", "b", "h", "bh"}) << "\n";
  os << "data_seed=" << rng() << "\n";
  c.text = os.str();
  return c;
}

int runSpecCase(const Case &c) {
  Fields f = parseFields(c.text);
  attn_target target = c.stage == "capi-vulkan" ? ATTN_TARGET_VULKAN : ATTN_TARGET_CPU;
  attn_spec spec;
  attn_spec_init(&spec);
  spec.dtype = static_cast<attn_dtype>(num(f, "dtype", ATTN_DTYPE_F32));
  spec.batch = num(f, "batch", ATTN_DYNAMIC);
  spec.heads_q = num(f, "heads_q", ATTN_DYNAMIC);
  spec.heads_kv = num(f, "heads_kv", ATTN_DYNAMIC);
  spec.seq_q = num(f, "seq_q", ATTN_DYNAMIC);
  spec.seq_kv = num(f, "seq_kv", ATTN_DYNAMIC);
  spec.head_dim = num(f, "head_dim");
  spec.value_dim = num(f, "value_dim");
  spec.causal = static_cast<int>(num(f, "causal"));
  spec.mask = static_cast<attn_mask_kind>(num(f, "mask"));
  spec.mask_dtype = static_cast<attn_dtype>(num(f, "mask_dtype", ATTN_DTYPE_BOOL));
  spec.scale = real(f, "scale");
  spec.dropout_p = real(f, "dropout_p");
  spec.return_lse = static_cast<int>(num(f, "return_lse"));
  spec.variant = static_cast<attn_variant>(num(f, "variant"));
  spec.block_q = num(f, "block_q");
  spec.block_kv = num(f, "block_kv");
  spec.kv_splits = num(f, "kv_splits");
  std::string launch = f.count("launch") ? f["launch"] : "none";

  {
    std::ostringstream d;
    d << " target=" << attn_target_name(target) << " dtype=" << spec.dtype
      << " b=" << spec.batch << " hq=" << spec.heads_q << " hkv=" << spec.heads_kv
      << " sq=" << spec.seq_q << " skv=" << spec.seq_kv << " d=" << spec.head_dim
      << " dv=" << spec.value_dim << " causal=" << spec.causal
      << " mask=" << spec.mask << " scale=" << formatDouble(spec.scale)
      << " dropout=" << formatDouble(spec.dropout_p) << " lse=" << spec.return_lse
      << " variant=" << spec.variant << " block_q=" << spec.block_q
      << " block_kv=" << spec.block_kv << " kv_splits=" << spec.kv_splits
      << " launch=" << launch << " phase=compile";
    describe(d.str());
  }

  attn_context *ctx = nullptr;
  if (attn_context_create(&ctx) != ATTN_OK) {
    std::fprintf(stderr, "attn-fuzz: attn_context_create: %s\n", attn_last_error());
    return kUsage;
  }
  if (attn_target_available(ctx, target) != ATTN_OK) {
    std::fprintf(stderr, "attn-fuzz: %s unavailable here: %s\n",
                 attn_target_name(target), attn_last_error());
    return kAccepted; // nothing to test on this machine
  }
  attn_kernel *kernel = nullptr;
  attn_status st = attn_compile(ctx, &spec, target, &kernel);
  if (st != ATTN_OK) {
    std::fprintf(stderr, "attn_compile: %s: %s\n", attn_status_string(st),
                 attn_last_error());
    return st == ATTN_ERROR_COMPILE ? kInternalError : kRefused;
  }
  if (launch == "none")
    return kAccepted;

  // Sizes: static ones as compiled, dynamic ones tiny (or 0), or, for
  // "overflow", dynamic ones so large that some tensor's element count
  // exceeds int64: validation must refuse what no buffer can hold.
  const attn_spec &ks = *attn_kernel_spec(kernel);
  Rng rng(static_cast<uint64_t>(num(f, "data_seed")));
  bool overflow = launch == "overflow";
  auto size = [&](int64_t v, int64_t hi) -> int64_t {
    if (v != ATTN_DYNAMIC)
      return v;
    if (overflow)
      return pickOf<int64_t>(rng, {1LL << 32, 1LL << 31, 1LL << 62, INT64_MAX, 3});
    return chance(rng, 0.05) ? 0 : 1 + static_cast<int64_t>(below(rng, hi));
  };
  int64_t B = size(ks.batch, 2), Hkv = size(ks.heads_kv, 2);
  int64_t Hq = ks.heads_q != ATTN_DYNAMIC ? ks.heads_q
               : (!overflow && Hkv > 0)   ? Hkv * (1 + below(rng, 2))
                                          : size(ks.heads_q, 4);
  int64_t Sq = size(ks.seq_q, 9), Skv = size(ks.seq_kv, 70);
  int64_t D = ks.head_dim, Dv = ks.value_dim ? ks.value_dim : ks.head_dim;
  std::string kind = f["layout"];
  bool extreme = num(f, "extreme_values") != 0;
  size_t eb = elementBytes(ks.dtype);

  int64_t qs[4] = {B, Hq, Sq, D}, kshape[4] = {B, Hkv, Skv, D},
          vs[4] = {B, Hkv, Skv, Dv}, os[4] = {B, Hq, Sq, Dv}, ls[4] = {B, Hq, Sq, 0};
  std::string mb = f["mask_broadcast"];
  int64_t ms[4] = {mb == "b" || mb == "bh" ? 1 : B, mb == "h" || mb == "bh" ? 1 : Hq,
                   Sq, Skv};
  {
    std::ostringstream d;
    d << " launch_shape=[" << B << "," << Hq << "," << Hkv << "," << Sq << ","
      << Skv << "] layout=" << kind << " phase=launch";
    describe(d.str());
  }

  attn_launch_args args{};
  Buffer q, k, v, m, o, l;
  std::vector<unsigned char> dummy(1 << 16, 0);
  if (overflow) {
    // Tiny buffers under shapes no buffer can hold, unit-stride rows.
    auto fake = [&](attn_tensor &t, const int64_t s[4], int rank) {
      t.data = dummy.data();
      __int128 stride = 1;
      for (int i = 3; i >= 0; --i) {
        t.shape[i] = i < rank ? s[i] : 0;
        t.strides[i] = i < rank ? static_cast<int64_t>(stride > INT64_MAX ? INT64_MAX : stride) : 0;
        if (i < rank)
          stride *= std::max<int64_t>(1, s[i]);
      }
    };
    fake(args.q, qs, 4);
    fake(args.k, kshape, 4);
    fake(args.v, vs, 4);
    fake(args.mask, ms, 4);
    fake(args.out, os, 4);
    fake(args.lse, ls, 3);
    // Only a launch whose counts really overflow is a must-refuse.
    auto overflows = [](const int64_t s[4], int rank) {
      __int128 n = 1;
      for (int i = 0; i < rank; ++i) {
        n *= std::max<int64_t>(0, s[i]);
        if (n > INT64_MAX)
          return true;
      }
      return false;
    };
    if (!(overflows(qs, 4) || overflows(kshape, 4) || overflows(vs, 4) ||
          overflows(os, 4) || (ks.mask != ATTN_MASK_NONE && overflows(ms, 4)))) {
      std::fprintf(stderr, "attn-fuzz: no overflowing launch for this spec\n");
      return kAccepted;
    }
  } else {
    std::string outKind = kind == "negative" || kind == "zero" ? "bhsd" : kind;
    if (!layout(q, qs, 4, eb, kind, rng, extreme, false) ||
        !layout(k, kshape, 4, eb, kind, rng, extreme, false) ||
        !layout(v, vs, 4, eb, kind, rng, extreme, false) ||
        !layout(o, os, 4, eb, outKind, rng, false, false) ||
        !layout(l, ls, 3, 4, "bhsd", rng, false, false)) {
      std::fprintf(stderr, "attn-fuzz: not a tiny launch, skipped\n");
      return kAccepted;
    }
    if (ks.mask != ATTN_MASK_NONE &&
        !layout(m, ms, 4, elementBytes(ks.mask_dtype), kind, rng, extreme,
                ks.mask == ATTN_MASK_BOOL)) {
      std::fprintf(stderr, "attn-fuzz: not a tiny launch, skipped\n");
      return kAccepted;
    }
    args.q = q.tensor;
    args.k = k.tensor;
    args.v = v.tensor;
    args.out = o.tensor;
    if (ks.mask != ATTN_MASK_NONE)
      args.mask = m.tensor;
    if (ks.return_lse)
      args.lse = l.tensor;
  }
  args.seed = rng();
  st = attn_launch(kernel, &args);
  if (st != ATTN_OK) {
    std::fprintf(stderr, "attn_launch: %s: %s\n", attn_status_string(st),
                 attn_last_error());
    return st == ATTN_ERROR_COMPILE ? kInternalError : kRefused;
  }
  if (overflow) {
    std::fprintf(stderr, "attn-fuzz: attn_launch accepted tensors whose element "
                         "count overflows int64\n");
    return kInternalError;
  }
  attn_context_destroy(ctx);
  return kAccepted;
}

} // namespace attn_fuzz
