//===- attn-run.cpp - compile, run, check and time one attention config ---===//
//
// The command line over the C API (attn.h): builds a spec from flags,
// compiles it, runs it on fresh random inputs with poisoned outputs, checks
// the result against the float64 reference and/or times it. Exit status:
// 0 ok, 1 a failed check (or an unavailable target with --probe), 2 an
// error (bad flag, API failure).
//
//===----------------------------------------------------------------------===//
#include "attn/reference/Check.h"
#include "attn/reference/Float.h"
#include "attn/reference/Reference.h"
#include "attn/runtime/Vulkan.h"
#include "attn/runtime/attn.h"
#include "attn/runtime/attn_jit.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace attn::reference;

namespace {

const char *const kUsage = R"(usage: attn-run [flags]

Compiles one attention configuration through the attn C API, runs it on
random inputs, and optionally checks it against a float64 reference and
times it. docs/attn-run.md describes every flag.

  --target=cpu|cuda|vulkan   target (default cpu)
  --batch=N --heads=N        B and Hq (default 1, 1)
  --kv-heads=N               Hkv (default = heads; must divide heads)
  --seq-q=N --seq-kv=N       Sq (default 128), Skv (default = seq-q)
  --head-dim=N               D (default 64)
  --value-dim=N              Dv (default = head-dim)
  --dtype=f16|bf16|f32       element type (default f32)
  --causal                   causal mask, bottom-right aligned
  --mask=none|bool|additive  explicit mask (default none)
  --mask-broadcast=none|b|h|bh  mask dims that are 1 (default bh)
  --dropout=P --seed=N       dropout probability in [0,1), Philox seed
  --lse                      also return the log-sum-exp
  --scale=X                  softmax scale (default 1/sqrt(D))
  --variant=tiled|math       FlashAttention path or untiled reference path
  --block-q=N --block-kv=N   tile sizes (0 = target default)
  --kv-splits=N              split-KV chunks (0 auto, 1 off)
  --layout=bhsd|bshd         storage of q/k/v/out (bshd: strides, no copy)
  --static-shapes            compile with static B/H/S instead of dynamic
                             (the default for --target=vulkan, whose kernels
                             are then specialized to the shape and can use
                             cooperative matrices)
  --dynamic-shapes           compile with dynamic B/H/S (the default except
                             for --target=vulkan)
  --check                    compare with the reference (exit 1 on failure)
  --repeat-check=N           check N times with fresh inputs and poison
  --bench=N                  time N runs after 2 warm-ups (median)
  --data-seed=N              input seed (default from the clock; printed)
  --json                     one JSON object on stdout
  --probe                    exit 0 iff the target is available here
  --dump-ir                  print the IR the kernel was compiled from
  --print-ir-after-all       print the IR after every pass of the target's
                             pipeline on stderr (as the environment
                             variable ATTN_PRINT_IR_AFTER_ALL=1 does)
  --input=FILE               take the configuration from the one attn.sdpa
                             in an MLIR file (its static dims win)
  --help                     this text
)";

/// Reports a usage or runtime error the way every attn tool does, and exits.
[[noreturn]] void fatal(const std::string &message) {
  std::fprintf(stderr, "attn-run: error: %s\n", message.c_str());
  std::exit(2);
}

struct Options {
  attn_target target = ATTN_TARGET_CPU;
  int64_t batch = 1, heads = 1, kvHeads = 0, seqQ = 128, seqKv = 0;
  int64_t headDim = 64, valueDim = 0;
  attn_dtype dtype = ATTN_DTYPE_F32;
  bool causal = false;
  attn_mask_kind mask = ATTN_MASK_NONE;
  bool maskBroadcastB = true, maskBroadcastH = true;
  std::string maskBroadcast = "bh";
  double dropout = 0.0;
  uint64_t seed = 0;
  bool lse = false;
  double scale = 0.0;
  attn_variant variant = ATTN_VARIANT_DEFAULT;
  int64_t blockQ = 0, blockKv = 0, kvSplits = 0;
  bool bshd = false;
  bool staticShapes = false;
  bool shapesGiven = false; // --static-shapes or --dynamic-shapes
  bool check = false;
  int64_t repeatCheck = 0;
  int64_t bench = 0;
  bool haveDataSeed = false;
  uint64_t dataSeed = 0;
  bool json = false, probe = false, dumpIr = false;
  std::string input; // --input: MLIR with one attn.sdpa
};

int64_t parseInt(const std::string &flag, const std::string &text, int64_t lo,
                 int64_t hi) {
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE)
    fatal("--" + flag + ": expected an integer, got '" + text + "'");
  if (v < lo || v > hi)
    fatal("--" + flag + "=" + text + " is out of range [" + std::to_string(lo) +
          ", " + std::to_string(hi) + "]");
  return v;
}

uint64_t parseU64(const std::string &flag, const std::string &text) {
  errno = 0;
  char *end = nullptr;
  if (text.empty() || text[0] == '-')
    fatal("--" + flag + ": expected a non-negative integer, got '" + text + "'");
  unsigned long long v = std::strtoull(text.c_str(), &end, 0);
  if (*end != '\0' || errno == ERANGE)
    fatal("--" + flag + ": expected a non-negative integer, got '" + text + "'");
  return v;
}

double parseDouble(const std::string &flag, const std::string &text) {
  char *end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v))
    fatal("--" + flag + ": expected a finite number, got '" + text + "'");
  return v;
}

template <typename T>
T parseChoice(const std::string &flag, const std::string &text,
              std::initializer_list<std::pair<const char *, T>> choices) {
  std::string names;
  for (const auto &c : choices) {
    if (text == c.first)
      return c.second;
    names += std::string(names.empty() ? "" : ", ") + c.first;
  }
  fatal("--" + flag + ": unknown value '" + text + "' (expected one of " +
        names + ")");
}

constexpr int64_t kMaxDim = int64_t(1) << 31;

/// --input: the op in the file defines the configuration. Its static
/// dimensions win over flags; dynamic ones come from the flags.
void applyInput(Options &o) {
  std::ifstream in(o.input);
  if (!in)
    fatal("--input: cannot read '" + o.input + "'");
  std::stringstream text;
  text << in.rdbuf();
  attn_spec s;
  if (attn_spec_from_mlir(text.str().c_str(), &s) != ATTN_OK)
    fatal(std::string("--input: ") + attn_last_error());
  auto take = [](int64_t d, int64_t &field) {
    if (d != ATTN_DYNAMIC)
      field = d;
  };
  take(s.batch, o.batch);
  take(s.heads_q, o.heads);
  take(s.heads_kv, o.kvHeads);
  take(s.seq_q, o.seqQ);
  take(s.seq_kv, o.seqKv);
  o.headDim = s.head_dim;
  o.valueDim = s.value_dim;
  o.dtype = s.dtype;
  o.causal = s.causal != 0;
  o.mask = s.mask;
  if (s.mask == ATTN_MASK_ADDITIVE && s.mask_dtype != s.dtype)
    fatal("--input: attn-run generates additive masks of the query's type");
  o.dropout = s.dropout_p;
  o.lse = s.return_lse != 0;
  o.scale = s.scale;
  o.blockQ = s.block_q;
  o.blockKv = s.block_kv;
  o.kvSplits = s.kv_splits;
}

Options parseArgs(int argc, char **argv) {
  Options o;
  const std::vector<std::string> boolFlags = {
      "causal", "lse",  "check",         "json",
      "probe",  "help", "static-shapes", "dynamic-shapes", "dump-ir",
      "print-ir-after-all"};
  const std::vector<std::string> valueFlags = {
      "target",    "batch",     "heads",        "kv-heads",  "seq-q",
      "seq-kv",    "head-dim",  "value-dim",    "dtype",     "mask",
      "mask-broadcast", "dropout", "seed",      "scale",     "variant",
      "block-q",   "block-kv",  "kv-splits",    "layout",    "repeat-check",
      "bench",     "data-seed", "input"};
  for (int a = 1; a < argc; ++a) {
    std::string arg = argv[a];
    if (arg.rfind("--", 0) != 0)
      fatal("unexpected argument '" + arg + "' (flags start with --)");
    std::string name = arg.substr(2), value;
    bool hasValue = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      hasValue = true;
    }
    bool isBool = std::find(boolFlags.begin(), boolFlags.end(), name) !=
                  boolFlags.end();
    if (!isBool && std::find(valueFlags.begin(), valueFlags.end(), name) ==
                       valueFlags.end())
      fatal("unknown flag '--" + name + "' (see --help)");
    if (isBool) {
      if (hasValue)
        fatal("--" + name + " takes no value");
    } else if (!hasValue) {
      // Also accept "--flag value".
      if (a + 1 >= argc)
        fatal("--" + name + " needs a value");
      value = argv[++a];
    }
    if (name == "help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (name == "target") {
      o.target = parseChoice<attn_target>(name, value,
                                          {{"cpu", ATTN_TARGET_CPU},
                                           {"cuda", ATTN_TARGET_CUDA},
                                           {"vulkan", ATTN_TARGET_VULKAN}});
    } else if (name == "batch") {
      o.batch = parseInt(name, value, 1, kMaxDim);
    } else if (name == "heads") {
      o.heads = parseInt(name, value, 1, kMaxDim);
    } else if (name == "kv-heads") {
      o.kvHeads = parseInt(name, value, 1, kMaxDim);
    } else if (name == "seq-q") {
      o.seqQ = parseInt(name, value, 1, kMaxDim);
    } else if (name == "seq-kv") {
      o.seqKv = parseInt(name, value, 1, kMaxDim);
    } else if (name == "head-dim") {
      o.headDim = parseInt(name, value, 1, 65536);
    } else if (name == "value-dim") {
      o.valueDim = parseInt(name, value, 1, 65536);
    } else if (name == "dtype") {
      o.dtype = parseChoice<attn_dtype>(name, value,
                                        {{"f16", ATTN_DTYPE_F16},
                                         {"bf16", ATTN_DTYPE_BF16},
                                         {"f32", ATTN_DTYPE_F32}});
    } else if (name == "causal") {
      o.causal = true;
    } else if (name == "mask") {
      o.mask = parseChoice<attn_mask_kind>(name, value,
                                           {{"none", ATTN_MASK_NONE},
                                            {"bool", ATTN_MASK_BOOL},
                                            {"additive", ATTN_MASK_ADDITIVE}});
    } else if (name == "mask-broadcast") {
      int which = parseChoice<int>(name, value,
                                   {{"none", 0}, {"b", 1}, {"h", 2}, {"bh", 3}});
      o.maskBroadcastB = which & 1;
      o.maskBroadcastH = which & 2;
      o.maskBroadcast = value;
    } else if (name == "dropout") {
      o.dropout = parseDouble(name, value);
      if (o.dropout < 0.0 || o.dropout >= 1.0)
        fatal("--dropout=" + value + " is out of range [0, 1)");
    } else if (name == "seed") {
      o.seed = parseU64(name, value);
    } else if (name == "lse") {
      o.lse = true;
    } else if (name == "scale") {
      o.scale = parseDouble(name, value);
      if (o.scale < 0.0)
        fatal("--scale=" + value + " must be positive (0 = 1/sqrt(D))");
    } else if (name == "variant") {
      o.variant = parseChoice<attn_variant>(
          name, value,
          {{"tiled", ATTN_VARIANT_DEFAULT}, {"math", ATTN_VARIANT_MATH}});
    } else if (name == "block-q") {
      o.blockQ = parseInt(name, value, 0, 65536);
    } else if (name == "block-kv") {
      o.blockKv = parseInt(name, value, 0, 65536);
    } else if (name == "kv-splits") {
      // Any count: the runtime clamps it to the key blocks there are.
      o.kvSplits = parseInt(name, value, 0,
                            std::numeric_limits<int64_t>::max());
    } else if (name == "layout") {
      o.bshd = parseChoice<bool>(name, value, {{"bhsd", false}, {"bshd", true}});
    } else if (name == "static-shapes") {
      o.staticShapes = true;
      o.shapesGiven = true;
    } else if (name == "dynamic-shapes") {
      o.staticShapes = false;
      o.shapesGiven = true;
    } else if (name == "check") {
      o.check = true;
    } else if (name == "repeat-check") {
      o.repeatCheck = parseInt(name, value, 1, 1000000);
      o.check = true;
    } else if (name == "bench") {
      o.bench = parseInt(name, value, 1, 1000000);
    } else if (name == "data-seed") {
      o.dataSeed = parseU64(name, value);
      o.haveDataSeed = true;
    } else if (name == "input") {
      o.input = value;
    } else if (name == "json") {
      o.json = true;
    } else if (name == "probe") {
      o.probe = true;
    } else if (name == "dump-ir") {
      o.dumpIr = true;
    } else if (name == "print-ir-after-all") {
      // The JIT prints the IR after each pass of the target's pipeline
      // (ATTN_PRINT_IR_AFTER_ALL, lib/JIT/PassManagerHook.cpp).
      setenv("ATTN_PRINT_IR_AFTER_ALL", "1", 1);
    } else {
      fatal("unknown flag '--" + name + "' (see --help)");
    }
  }
  if (!o.input.empty())
    applyInput(o);
  if (o.kvHeads == 0)
    o.kvHeads = o.heads;
  if (o.seqKv == 0)
    o.seqKv = o.seqQ;
  if (o.valueDim == 0)
    o.valueDim = o.headDim;
  if (o.heads % o.kvHeads != 0)
    fatal("--heads=" + std::to_string(o.heads) +
          " must be a multiple of --kv-heads=" + std::to_string(o.kvHeads));
  if (o.mask == ATTN_MASK_NONE && o.maskBroadcast != "bh")
    fatal("--mask-broadcast needs --mask=bool or --mask=additive");
  if (!o.haveDataSeed)
    o.dataSeed = static_cast<uint64_t>(
        std::chrono::system_clock::now().time_since_epoch().count());
  return o;
}

const char *maskName(attn_mask_kind m) {
  return m == ATTN_MASK_BOOL ? "bool" : m == ATTN_MASK_ADDITIVE ? "additive"
                                                                : "none";
}

/// Fails with the runtime's message when a C API call does not return OK.
void checkStatus(attn_status status, const char *what) {
  if (status == ATTN_OK)
    return;
  fatal(std::string(what) + " failed: " + attn_status_string(status) + ": " +
        attn_last_error());
}

/// 64-byte aligned host memory, so no target's alignment rule can reject it.
struct Buffer {
  std::unique_ptr<void, decltype(&std::free)> ptr{nullptr, &std::free};
  size_t count = 0;
  attn_dtype dtype = ATTN_DTYPE_F32;
  Buffer() = default;
  Buffer(attn_dtype dtype, size_t count) : count(count), dtype(dtype) {
    size_t bytes = std::max<size_t>(64, (count * dtypeSize(dtype) + 63) / 64 * 64);
    ptr.reset(std::aligned_alloc(64, bytes));
    if (!ptr)
      fatal("out of host memory allocating " + std::to_string(bytes) + " bytes");
  }
  void *data() const { return ptr.get(); }
};

/// A [B, H, S, D] tensor over `buf`, stored BHSD or (bshd) BSHD.
attn_tensor makeTensor(const Buffer &buf, int64_t B, int64_t H, int64_t S,
                       int64_t D, bool bshd) {
  attn_tensor t{};
  t.data = buf.data();
  t.shape[0] = B;
  t.shape[1] = H;
  t.shape[2] = S;
  t.shape[3] = D;
  t.strides[3] = 1;
  if (bshd) {
    t.strides[1] = D;
    t.strides[2] = H * D;
    t.strides[0] = S * H * D;
  } else {
    t.strides[2] = D;
    t.strides[1] = S * D;
    t.strides[0] = H * S * D;
  }
  return t;
}

/// Everything one configuration runs on.
struct Problem {
  Buffer q, k, v, mask, out, lse;
  attn_launch_args args{};
  int64_t maskB = 1, maskH = 1;
};

/// The element count of a tensor attn-run allocates, or a fatal error
/// naming it when the count (in bytes) does not fit the address space.
size_t elements(const char *name, std::initializer_list<int64_t> dims,
                attn_dtype dtype) {
  int64_t n = 1, bytes = 0;
  for (int64_t d : dims)
    if (__builtin_mul_overflow(n, d, &n))
      n = -1;
  if (n < 0 || __builtin_mul_overflow(n, int64_t(dtypeSize(dtype)), &bytes) ||
      uint64_t(bytes) > std::numeric_limits<size_t>::max() / 2) {
    std::string shape;
    for (int64_t d : dims)
      shape += (shape.empty() ? "" : " x ") + std::to_string(d);
    fatal(std::string("the ") + name + " tensor (" + shape + " " +
          attn_dtype_name(dtype) + " elements) is larger than this host can "
          "address");
  }
  return size_t(n);
}

Problem allocate(const Options &o) {
  Problem p;
  const attn_dtype dt = o.dtype;
  p.q = Buffer(dt, elements("q", {o.batch, o.heads, o.seqQ, o.headDim}, dt));
  p.k = Buffer(dt,
               elements("k", {o.batch, o.kvHeads, o.seqKv, o.headDim}, dt));
  p.v = Buffer(dt,
               elements("v", {o.batch, o.kvHeads, o.seqKv, o.valueDim}, dt));
  p.out =
      Buffer(dt, elements("out", {o.batch, o.heads, o.seqQ, o.valueDim}, dt));
  p.args.q = makeTensor(p.q, o.batch, o.heads, o.seqQ, o.headDim, o.bshd);
  p.args.k = makeTensor(p.k, o.batch, o.kvHeads, o.seqKv, o.headDim, o.bshd);
  p.args.v = makeTensor(p.v, o.batch, o.kvHeads, o.seqKv, o.valueDim, o.bshd);
  p.args.out = makeTensor(p.out, o.batch, o.heads, o.seqQ, o.valueDim, o.bshd);
  if (o.mask != ATTN_MASK_NONE) {
    p.maskB = o.maskBroadcastB ? 1 : o.batch;
    p.maskH = o.maskBroadcastH ? 1 : o.heads;
    const attn_dtype mdt = o.mask == ATTN_MASK_BOOL ? ATTN_DTYPE_BOOL : dt;
    p.mask = Buffer(mdt, elements("mask", {p.maskB, p.maskH, o.seqQ, o.seqKv},
                                  mdt));
    p.args.mask = makeTensor(p.mask, p.maskB, p.maskH, o.seqQ, o.seqKv, false);
  }
  if (o.lse) {
    p.lse = Buffer(ATTN_DTYPE_F32, elements("lse", {o.batch, o.heads, o.seqQ},
                                            ATTN_DTYPE_F32));
    attn_tensor &l = p.args.lse;
    l.data = p.lse.data();
    l.shape[0] = o.batch;
    l.shape[1] = o.heads;
    l.shape[2] = o.seqQ;
    l.strides[2] = 1;
    l.strides[1] = o.seqQ;
    l.strides[0] = o.heads * o.seqQ;
  }
  p.args.seed = o.seed;
  return p;
}

/// Fresh random inputs. Masks are fully random; a bool mask also gets some
/// query rows with no key at all so the out = 0 / lse = -inf path runs.
void fillInputs(const Options &o, Problem &p, std::mt19937_64 &rng) {
  fillRandom(rng, o.dtype, p.q.data(), p.q.count, 1.0);
  fillRandom(rng, o.dtype, p.k.data(), p.k.count, 1.0);
  fillRandom(rng, o.dtype, p.v.data(), p.v.count, 1.0);
  if (o.mask == ATTN_MASK_ADDITIVE)
    fillRandom(rng, o.dtype, p.mask.data(), p.mask.count, 2.0);
  if (o.mask == ATTN_MASK_BOOL) {
    fillRandom(rng, ATTN_DTYPE_BOOL, p.mask.data(), p.mask.count, 0.75);
    auto *bytes = static_cast<uint8_t *>(p.mask.data());
    std::bernoulli_distribution empty(0.1);
    for (int64_t row = 0; row < p.maskB * p.maskH * o.seqQ; ++row)
      if (empty(rng) || row == o.seqQ / 2)
        std::memset(bytes + row * o.seqKv, 0, size_t(o.seqKv));
  }
}

void poisonOutputs(const Options &o, Problem &p) {
  poison(o.dtype, p.out.data(), p.out.count);
  if (o.lse)
    poison(ATTN_DTYPE_F32, p.lse.data(), p.lse.count);
}

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}

/// A JSON number, or null for the values JSON cannot hold.
std::string jsonNumber(double v) {
  if (!std::isfinite(v))
    return "null";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

std::string jsonString(const std::string &s) {
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      r += '\\';
      r += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      r += buf;
    } else {
      r += c;
    }
  }
  return r + "\"";
}

struct Outcome {
  bool checked = false, ok = true;
  double maxAbsErr = 0, relL2Err = 0, lseMaxAbsErr = 0;
  double relL2Tol = NAN; // the bound of the comparison with the worst ratio
  double relL2Ratio = -1;
  std::string message;
  double compileMs = 0, medianMs = NAN, tflops = NAN, kvGBps = NAN;
  // vulkan: the median of the dispatches' own time (GPU timestamps; the
  // launches above also stage the tensors through host memory).
  double deviceMs = NAN, deviceTflops = NAN, deviceKvGBps = NAN;
  int64_t checks = 0;
};

/// Folds one comparison into the worst-so-far outcome.
void record(Outcome &res, const Comparison &c) {
  res.checked = true;
  ++res.checks;
  res.maxAbsErr = std::max(res.maxAbsErr, c.maxAbsErr);
  res.relL2Err = std::max(res.relL2Err, c.relL2Err);
  double ratio = c.relL2Err / c.relL2Tol;
  if (!(ratio <= res.relL2Ratio)) {
    res.relL2Ratio = ratio;
    res.relL2Tol = c.relL2Tol;
  }
  res.lseMaxAbsErr = std::max(res.lseMaxAbsErr, c.lseMaxAbsErr);
  if (!c.ok && res.ok) {
    res.ok = false;
    res.message = c.message;
  }
}

} // namespace

int main(int argc, char **argv) {
  Options o = parseArgs(argc, argv);
  // The SPIR-V kernels are best compiled for one shape (docs/Vulkan.md:
  // the tiled variant needs it; with dynamic sizes the others read them at
  // launch).
  if (o.target == ATTN_TARGET_VULKAN && !o.shapesGiven)
    o.staticShapes = true;

  attn_context *ctx = nullptr;
  checkStatus(attn_context_create(&ctx), "attn_context_create");
  std::unique_ptr<attn_context, decltype(&attn_context_destroy)> ctxOwner(
      ctx, &attn_context_destroy);

  if (o.probe) {
    if (attn_target_available(ctx, o.target) == ATTN_OK)
      return 0;
    std::printf("attn-run: target %s is not available: %s\n",
                attn_target_name(o.target), attn_last_error());
    return 1;
  }

  attn_spec spec;
  attn_spec_init(&spec);
  spec.dtype = o.dtype;
  if (o.staticShapes) {
    spec.batch = o.batch;
    spec.heads_q = o.heads;
    spec.heads_kv = o.kvHeads;
    spec.seq_q = o.seqQ;
    spec.seq_kv = o.seqKv;
  }
  spec.head_dim = o.headDim;
  spec.value_dim = o.valueDim;
  spec.causal = o.causal;
  spec.mask = o.mask;
  spec.mask_dtype = o.mask == ATTN_MASK_BOOL ? ATTN_DTYPE_BOOL : o.dtype;
  spec.scale = o.scale;
  spec.dropout_p = o.dropout;
  spec.return_lse = o.lse;
  spec.variant = o.variant;
  spec.block_q = o.blockQ;
  spec.block_kv = o.blockKv;
  spec.kv_splits = o.kvSplits;

  Outcome res;
  attn_kernel *kernel = nullptr;
  auto compileStart = std::chrono::steady_clock::now();
  checkStatus(attn_compile(ctx, &spec, o.target, &kernel), "attn_compile");
  res.compileMs = msSince(compileStart);

  if (o.dumpIr) {
    const char *source = attn_kernel_source(kernel);
    if (!source)
      fatal("the kernel has no IR (loaded ahead of time)");
    std::fputs(source, stdout);
    if (!o.check && !o.bench)
      return 0;
  }

  // The C API takes memory of the target; it allocates none itself, so
  // only host memory can be filled and checked here. That is the cpu
  // target's memory, and the vulkan target's too: its launches take host
  // pointers and stage them into device buffers (docs/Vulkan.md).
  if (o.target != ATTN_TARGET_CPU && o.target != ATTN_TARGET_VULKAN)
    fatal(std::string("running on target '") + attn_target_name(o.target) +
          "' needs device buffers, which attn-run cannot allocate; use "
          "--probe or --dump-ir");

  // The shapes are known here, so a device limit they break is reported
  // before inputs are generated (minutes for the largest), not at launch.
  if (o.target == ATTN_TARGET_VULKAN) {
    attn_spec shapes = spec;
    shapes.batch = o.batch;
    shapes.heads_q = o.heads;
    shapes.heads_kv = o.kvHeads;
    shapes.seq_q = o.seqQ;
    shapes.seq_kv = o.seqKv;
    attn::vulkan::DeviceInfo info;
    std::string error;
    if (attn::vulkan::deviceInfo(info, error) != ATTN_OK ||
        attn::vulkan::checkBufferRanges(info, shapes, error) != ATTN_OK)
      fatal("these shapes cannot run on vulkan: " + error);
  }
  Problem p = allocate(o);
  std::mt19937_64 rng(o.dataSeed);
  Result ref;
  const Tolerance tol = toleranceFor(o.dtype);
  auto launchOnce = [&](const char *what) {
    poisonOutputs(o, p);
    checkStatus(attn_launch(kernel, &p.args), what);
  };
  auto checkAgainstReference = [&]() {
    std::string error;
    if (!computeReference(spec, p.args, ref, error))
      fatal("reference: " + error);
    record(res, compare(ref, o.dtype, p.args.out, o.lse ? &p.args.lse : nullptr,
                        tol));
  };

  fillInputs(o, p, rng);
  if (o.check) {
    for (int64_t rep = 0; rep < std::max<int64_t>(1, o.repeatCheck); ++rep) {
      if (rep > 0)
        fillInputs(o, p, rng);
      launchOnce("attn_launch");
      checkAgainstReference();
      if (!res.ok && !o.json)
        std::fprintf(stderr, "attn-run: check %lld failed: %s\n",
                     static_cast<long long>(rep), res.message.c_str());
      if (!res.ok)
        break;
    }
  }

  const double flops = 2.0 * o.batch * o.heads * o.seqQ * o.seqKv *
                       double(o.headDim + o.valueDim) *
                       (o.causal && o.seqQ == o.seqKv ? 0.5 : 1.0);
  const double kvBytes = double(o.batch * o.kvHeads * o.seqKv) *
                         double(o.headDim + o.valueDim) * dtypeSize(o.dtype);
  auto setRate = [&](double ms) {
    res.medianMs = ms;
    res.tflops = flops / (ms * 1e-3) / 1e12;
    res.kvGBps = kvBytes / (ms * 1e-3) / 1e9;
  };
  if (o.bench) {
    for (int w = 0; w < 2; ++w)
      launchOnce("attn_launch (warm-up)");
    std::vector<double> times, deviceTimes;
    for (int64_t n = 0; n < o.bench; ++n) {
      poisonOutputs(o, p);
      auto start = std::chrono::steady_clock::now();
      checkStatus(attn_launch(kernel, &p.args), "attn_launch (bench)");
      times.push_back(msSince(start));
      if (o.target == ATTN_TARGET_VULKAN && attn::vulkan::lastRunGpuMs() >= 0)
        deviceTimes.push_back(attn::vulkan::lastRunGpuMs());
    }
    auto median = [](std::vector<double> &v) {
      std::sort(v.begin(), v.end());
      size_t n = v.size();
      return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    };
    setRate(median(times));
    if (!deviceTimes.empty() && deviceTimes.size() == times.size()) {
      res.deviceMs = median(deviceTimes);
      res.deviceTflops = flops / (res.deviceMs * 1e-3) / 1e12;
      res.deviceKvGBps = kvBytes / (res.deviceMs * 1e-3) / 1e9;
    }
    // The last timed run must be as right as the checked one.
    if (o.check && res.ok)
      record(res, compare(ref, o.dtype, p.args.out,
                          o.lse ? &p.args.lse : nullptr, tol));
  } else if (!o.check) {
    auto start = std::chrono::steady_clock::now();
    launchOnce("attn_launch");
    setRate(msSince(start));
  }

  std::string maskText = maskName(o.mask);
  if (o.mask != ATTN_MASK_NONE)
    maskText += "(" + o.maskBroadcast + ")";
  if (o.json) {
    std::ostringstream js;
    js << "{\"target\": " << jsonString(attn_target_name(o.target))
       << ", \"variant\": "
       << jsonString(o.variant == ATTN_VARIANT_MATH ? "math" : "tiled")
       << ", \"dtype\": " << jsonString(attn_dtype_name(o.dtype))
       << ", \"batch\": " << o.batch << ", \"heads\": " << o.heads
       << ", \"kv_heads\": " << o.kvHeads << ", \"seq_q\": " << o.seqQ
       << ", \"seq_kv\": " << o.seqKv << ", \"head_dim\": " << o.headDim
       << ", \"value_dim\": " << o.valueDim
       << ", \"causal\": " << (o.causal ? "true" : "false")
       << ", \"mask\": " << jsonString(maskName(o.mask))
       << ", \"mask_broadcast\": " << jsonString(o.maskBroadcast)
       << ", \"dropout\": " << jsonNumber(o.dropout) << ", \"seed\": " << o.seed
       << ", \"lse\": " << (o.lse ? "true" : "false")
       << ", \"scale\": " << jsonNumber(o.scale)
       << ", \"layout\": " << jsonString(o.bshd ? "bshd" : "bhsd")
       << ", \"static_shapes\": " << (o.staticShapes ? "true" : "false")
       << ", \"block_q\": " << o.blockQ << ", \"block_kv\": " << o.blockKv
       << ", \"kv_splits\": " << o.kvSplits << ", \"data_seed\": " << o.dataSeed
       << ", \"checked\": " << (res.checked ? "true" : "false")
       << ", \"checks\": " << res.checks << ", \"max_abs_err\": "
       << (res.checked ? jsonNumber(res.maxAbsErr) : "null")
       << ", \"rel_l2_err\": "
       << (res.checked ? jsonNumber(res.relL2Err) : "null")
       << ", \"rel_l2_tol\": "
       << (res.checked ? jsonNumber(res.relL2Tol) : "null")
       << ", \"lse_max_abs_err\": "
       << (res.checked && o.lse ? jsonNumber(res.lseMaxAbsErr) : "null")
       << ", \"ok\": " << (res.ok ? "true" : "false");
    if (!res.ok)
      js << ", \"message\": " << jsonString(res.message);
    js << ", \"median_ms\": " << jsonNumber(res.medianMs)
       << ", \"tflops\": " << jsonNumber(res.tflops)
       << ", \"kv_gbps\": " << jsonNumber(res.kvGBps)
       << ", \"device_ms\": " << jsonNumber(res.deviceMs)
       << ", \"device_tflops\": " << jsonNumber(res.deviceTflops)
       << ", \"device_kv_gbps\": " << jsonNumber(res.deviceKvGBps)
       << ", \"compile_ms\": " << jsonNumber(res.compileMs) << "}";
    std::printf("%s\n", js.str().c_str());
  } else {
    std::printf("attn-run: %s %s %s B=%lld Hq=%lld Hkv=%lld Sq=%lld Skv=%lld "
                "D=%lld Dv=%lld causal=%d mask=%s dropout=%g lse=%d layout=%s\n",
                attn_target_name(o.target),
                o.variant == ATTN_VARIANT_MATH ? "math" : "tiled",
                attn_dtype_name(o.dtype), (long long)o.batch, (long long)o.heads,
                (long long)o.kvHeads, (long long)o.seqQ, (long long)o.seqKv,
                (long long)o.headDim, (long long)o.valueDim, int(o.causal),
                maskText.c_str(), o.dropout, int(o.lse),
                o.bshd ? "bshd" : "bhsd");
    std::printf("  data_seed     %llu\n", (unsigned long long)o.dataSeed);
    std::printf("  compile_ms    %.3f\n", res.compileMs);
    if (res.checked) {
      std::printf("  check         %s (%lld run%s)\n", res.ok ? "ok" : "FAILED",
                  (long long)res.checks, res.checks == 1 ? "" : "s");
      std::printf("  max_abs_err   %.3g (tol %.3g x max(1,|ref|))\n",
                  res.maxAbsErr, tol.maxAbs);
      if (res.relL2Tol > tol.relL2 * 1.001)
        std::printf("  rel_l2_err    %.3g (tol %.3g = %.3g + %.3g x "
                    "||sum w|v|||/||ref||)\n",
                    res.relL2Err, res.relL2Tol, tol.relL2, tol.magRel);
      else
        std::printf("  rel_l2_err    %.3g (tol %.3g)\n", res.relL2Err,
                    res.relL2Tol);
      if (o.lse)
        std::printf("  lse_abs_err   %.3g (tol %.3g + %.3g x |ref|)\n",
                    res.lseMaxAbsErr, tol.lseAbs, tol.lseRel);
      if (!res.ok)
        std::printf("  failure       %s\n", res.message.c_str());
    }
    if (std::isfinite(res.medianMs)) {
      std::printf("  %-13s %.4f\n", o.bench ? "median_ms" : "run_ms",
                  res.medianMs);
      std::printf("  tflops        %.4f\n", res.tflops);
      std::printf("  kv_gbps       %.3f\n", res.kvGBps);
    }
    if (std::isfinite(res.deviceMs)) {
      std::printf(
          "  device_ms     %.4f (the dispatches alone: GPU timestamps)\n",
          res.deviceMs);
      std::printf("  device_tflops %.4f\n", res.deviceTflops);
      std::printf("  device_kv_gbps %.3f\n", res.deviceKvGBps);
    }
  }
  return res.ok ? 0 : 1;
}
