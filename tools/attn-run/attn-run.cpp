//===- attn-run.cpp - compile, run, check and time one attention config ---===//
//
// The command line over the C API (attn.h): builds a spec from flags,
// compiles it for cpu, cuda or vulkan, runs it on fresh random inputs (or
// .npy files, --load) with poisoned outputs, checks the result against the
// float64 reference and/or times it, and can save inputs and outputs as
// .npy (--save). docs/attn-run.md has every flag and the --json schema.
// Exit status: 0 ok, 1 a failed check (or an unavailable target with
// --probe), 2 an error (bad flag or file, unavailable target, API failure).
//
//===----------------------------------------------------------------------===//
#include "Model.h"
#include "attn/reference/Check.h"
#include "attn/reference/Float.h"
#include "attn/reference/Reference.h"
#include "attn/runtime/Vulkan.h"
#include "attn/runtime/attn.h"
#include "attn/runtime/attn_jit.h"
#include "attn/runtime/attn_vulkan.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <dlfcn.h>
#include <fstream>
#include <sstream>
#include <cstdlib>
#include <sys/stat.h>
#include <unistd.h>
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
  --memory=host|device       vulkan: launch on host memory (staged by every
                             launch) or on device buffers (uploaded once,
                             launched asynchronously); default device with
                             --bench where the tensors are dense (bhsd, no
                             broadcast mask), else host
  --static-shapes            compile with static B/H/S instead of dynamic
                             (the default for --target=vulkan, whose kernels
                             are then specialized to the shape and can use
                             cooperative matrices)
  --dynamic-shapes           compile with dynamic B/H/S (the default except
                             for --target=vulkan)
  --check                    compare with the reference (exit 1 on failure)
  --repeat-check=N           check N times with fresh inputs and poison
  --bench=N                  time N runs after 2 warm-ups (median)
  --warmup-ms=N              vulkan device: before the back-to-back pass,
                             keep the device busy with launches for N ms
                             (default 1000), so that its clocks are up
  --data-seed=N              input seed (default from the clock; printed)
  --json                     one JSON object on stdout (schema in
                             docs/attn-run.md)
  --save=DIR                 write the inputs and outputs of the last run
                             to DIR as .npy (q, k, v, mask, out, lse)
  --load=DIR                 take q, k, v (and mask) from DIR's .npy files
                             instead of random data
  --progress=auto|always|never  progress lines on stderr (auto: when
                             stderr is a terminal and the run passes 3 s)
  --probe                    exit 0 iff the target is available here
  --dump-ir                  print the IR the kernel was compiled from
  --model                    also print the performance model's prediction
                             (time, TFLOP/s, bottleneck, per-bottleneck
                             times) beside the measurement
                             (docs/PerformanceModel.md)
  --model-device=NAME        the model's device table: h100, h200, cpu
                             (default: the target's)
  --model-geometry=K=N,...   the model's geometry with these overrides
                             (block_q, block_kv, warps, row_tiles, stages,
                             kv_splits, max_registers): candidates to rank
  --model-only               print the prediction for the target's default
                             geometry without compiling or running anything
  --print-ir-after-all       print the IR after every pass of the target's
                             pipeline on stderr (as the environment
                             variable ATTN_PRINT_IR_AFTER_ALL=1 does)
  --mha --embed=E            the multi-head attention layer (attn.mha)
                             instead of attn.sdpa: x [B, seq-q, E], heads,
                             kv-heads, head-dim (default E / heads),
                             value-dim, causal, scale as above; cpu only
  --kv-embed=N               with --mha and --seq-kv or --kv-embed:
                             cross-attention on a kv input [B, seq-kv, N]
  --fused-qkv --bias         with --mha: one fused QKV weight; biases
  --input=FILE               take the configuration from the one attn.sdpa
                             in an MLIR file (its static dims win)
  -h, --help                 this text
  --version                  attn-run's and the attn library's versions
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
  std::string memory; // --memory: "", "host" or "device"
  bool staticShapes = false;
  bool shapesGiven = false; // --static-shapes or --dynamic-shapes
  bool check = false;
  int64_t repeatCheck = 0;
  int64_t bench = 0;
  /// --warmup-ms: device time spent on launches before the back-to-back
  /// pass (a GPU idle between attn-run's single launches lowers its
  /// clocks, and a pass of a few milliseconds would not raise them).
  int64_t warmupMs = 1000;
  bool haveDataSeed = false;
  uint64_t dataSeed = 0;
  bool json = false, probe = false, dumpIr = false;
  bool model = false, modelOnly = false; // --model, --model-only
  std::string modelDevice;               // --model-device
  std::string modelGeometry;             // --model-geometry
  std::string input; // --input: MLIR with one attn.sdpa
  // --mha: the layer (attn_mha_spec). Cross-attention when --seq-kv or
  // --kv-embed is given.
  bool mha = false, fusedQkv = false, bias = false;
  int64_t embed = 0, kvEmbed = 0;
  bool headDimGiven = false, seqKvGiven = false;
  std::vector<std::string> sdpaOnly; // flags given that --mha refuses
  std::string save, load; // --save / --load directories
  enum class Progress { Auto, Always, Never } progress = Progress::Auto;
};

/// Levenshtein distance, for "did you mean".
size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

/// The known flag closest to `name` when it is close enough to be a typo
/// (at most a third of its letters off, and at most 3), else empty.
std::string closestFlag(const std::string &name,
                        const std::vector<std::string> &known) {
  std::string best;
  size_t bestDistance = std::max<size_t>(1, std::min<size_t>(3, name.size() / 3));
  for (const std::string &k : known) {
    size_t d = editDistance(name, k);
    if (d <= bestDistance && (best.empty() || d < editDistance(name, best)))
      best = k;
  }
  return best;
}

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
      "print-ir-after-all", "version", "model", "model-only", "mha",
      "fused-qkv", "bias"};
  const std::vector<std::string> valueFlags = {
      "target",    "batch",     "heads",        "kv-heads",  "seq-q",
      "seq-kv",    "head-dim",  "value-dim",    "dtype",     "mask",
      "mask-broadcast", "dropout", "seed",      "scale",     "variant",
      "block-q",   "block-kv",  "kv-splits",    "layout",    "repeat-check",
      "memory",
      "bench",     "warmup-ms", "data-seed", "input",       "save",      "load",
      "progress",  "model-device", "model-geometry", "embed", "kv-embed"};
  std::vector<std::string> allFlags = boolFlags;
  allFlags.insert(allFlags.end(), valueFlags.begin(), valueFlags.end());
  auto unknown = [&](const std::string &name) {
    std::string guess = closestFlag(name, allFlags);
    fatal("unknown flag '--" + name + "'" +
          (guess.empty() ? std::string(" (see --help)")
                         : "; did you mean '--" + guess + "'?"));
  };
  for (int a = 1; a < argc; ++a) {
    std::string arg = argv[a];
    if (arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (arg.rfind("--", 0) != 0) {
      if (arg.size() > 1 && arg[0] == '-') {
        std::string guess = closestFlag(arg.substr(1), allFlags);
        fatal("unknown flag '" + arg + "' (flags start with --" +
              (guess.empty() ? std::string(")")
                             : "; did you mean '--" + guess + "'?)"));
      }
      fatal("unexpected argument '" + arg + "' (flags start with --)");
    }
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
      unknown(name);
    if (isBool) {
      if (hasValue)
        fatal("--" + name + " takes no value");
    } else if (!hasValue) {
      // Also accept "--flag value".
      if (a + 1 >= argc)
        fatal("--" + name + " needs a value");
      value = argv[++a];
    }
    for (const char *f : {"lse", "mask", "mask-broadcast", "dropout", "seed",
                          "variant", "block-q", "block-kv", "kv-splits",
                          "layout", "static-shapes", "dynamic-shapes",
                          "save", "load", "input"})
      if (name == f)
        o.sdpaOnly.push_back(name);
    if (name == "mha") {
      o.mha = true;
      continue;
    } else if (name == "fused-qkv") {
      o.fusedQkv = true;
      continue;
    } else if (name == "bias") {
      o.bias = true;
      continue;
    } else if (name == "embed") {
      o.embed = parseInt(name, value, 1, kMaxDim);
      continue;
    } else if (name == "kv-embed") {
      o.kvEmbed = parseInt(name, value, 1, kMaxDim);
      continue;
    } else if (name == "head-dim") {
      o.headDimGiven = true;
    } else if (name == "seq-kv") {
      o.seqKvGiven = true;
    }
    if (name == "help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (name == "version") {
      std::printf("attn-run (attn) %s\nlibattn %s\n", ATTN_VERSION_STRING,
                  attn_version());
      std::exit(0);
    } else if (name == "save" || name == "load") {
      if (value.empty())
        fatal("--" + name + " needs a directory");
      (name == "save" ? o.save : o.load) = value;
    } else if (name == "progress") {
      o.progress = parseChoice<Options::Progress>(
          name, value,
          {{"auto", Options::Progress::Auto},
           {"always", Options::Progress::Always},
           {"never", Options::Progress::Never}});
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
    } else if (name == "memory") {
      o.memory = parseChoice<std::string>(name, value,
                                          {{"host", "host"}, {"device", "device"}});
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
    } else if (name == "warmup-ms") {
      o.warmupMs = parseInt(name, value, 0, 60000);
    } else if (name == "data-seed") {
      o.dataSeed = parseU64(name, value);
      o.haveDataSeed = true;
    } else if (name == "input") {
      o.input = value;
    } else if (name == "json") {
      o.json = true;
    } else if (name == "model") {
      o.model = true;
    } else if (name == "model-only") {
      o.model = o.modelOnly = true;
    } else if (name == "model-device") {
      o.modelDevice = value;
    } else if (name == "model-geometry") {
      o.modelGeometry = value;
    } else if (name == "probe") {
      o.probe = true;
    } else if (name == "dump-ir") {
      o.dumpIr = true;
    } else if (name == "print-ir-after-all") {
      // The JIT prints the IR after each pass of the target's pipeline
      // (ATTN_PRINT_IR_AFTER_ALL, lib/JIT/PassManagerHook.cpp).
      setenv("ATTN_PRINT_IR_AFTER_ALL", "1", 1);
    } else {
      unknown(name);
    }
  }
  if (o.mha) {
    if (!o.sdpaOnly.empty())
      fatal("--" + o.sdpaOnly.front() +
            " is not a flag of the layer (--mha): it takes heads, kv-heads, "
            "head-dim, value-dim, causal, scale, embed, kv-embed, seq-kv, "
            "fused-qkv and bias");
    if (o.embed == 0)
      fatal("--mha needs --embed=E");
    if (!o.headDimGiven) {
      if (o.embed % o.heads != 0)
        fatal("--embed=" + std::to_string(o.embed) +
              " is not a multiple of --heads=" + std::to_string(o.heads) +
              "; give --head-dim");
      o.headDim = o.embed / o.heads;
    }
    if (o.fusedQkv && (o.seqKvGiven || o.kvEmbed))
      fatal("--fused-qkv needs self-attention (no --seq-kv or --kv-embed)");
  } else if (o.fusedQkv || o.bias || o.embed || o.kvEmbed) {
    fatal(std::string("--") +
          (o.fusedQkv ? "fused-qkv" : o.bias ? "bias" : o.embed ? "embed"
                                                                : "kv-embed") +
          " is a flag of the layer: add --mha");
  }
  if (!o.input.empty())
    applyInput(o);
  if (!o.memory.empty() && o.target != ATTN_TARGET_VULKAN)
    fatal("--memory is for --target=vulkan (cpu takes host memory, cuda "
          "device memory)");
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
  if (!o.load.empty() && o.repeatCheck > 1)
    fatal("--repeat-check=" + std::to_string(o.repeatCheck) +
          " checks fresh random inputs each time; with --load the inputs are "
          "the files' (use --check)");
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

/// The vulkan device buffers a run creates (attn_vulkan.h), destroyed with
/// it.
struct VulkanBuffers {
  std::vector<attn_vulkan_buffer *> all;
  VulkanBuffers() = default;
  VulkanBuffers(const VulkanBuffers &) = delete;
  VulkanBuffers &operator=(const VulkanBuffers &) = delete;
  ~VulkanBuffers() {
    for (attn_vulkan_buffer *b : all)
      attn_vulkan_buffer_destroy(b);
  }
  attn_vulkan_buffer *create(attn_context *ctx, uint64_t bytes) {
    attn_vulkan_buffer *buffer = nullptr;
    checkStatus(attn_vulkan_buffer_create(ctx, bytes, &buffer),
                "attn_vulkan_buffer_create");
    all.push_back(buffer);
    return buffer;
  }
};

/// The text report's memory line on the vulkan target.
void printMemory(const std::string &memory) {
  std::printf("  memory        %s\n",
              memory == "device"
                  ? "device buffers (uploaded once; a launch copies nothing)"
                  : "host (every launch stages its tensors)");
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
  /// vulkan device buffers: --bench's launches again, submitted back to
  /// back (no poisoning or host work between them): the median of their
  /// GPU timestamps, and the host's wall time for all of them / N.
  double deviceB2bMs = NAN, b2bMs = NAN;
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


//===----------------------------------------------------------------------===//
// .npy files (NumPy's format 1.0; 2.0 read too): --save and --load.
//===----------------------------------------------------------------------===//

/// The NumPy descr of an attn element type. bf16 has no NumPy dtype: its
/// raw bits are stored as little-endian uint16 (docs/attn-run.md).
const char *npyDescr(attn_dtype dtype) {
  switch (dtype) {
  case ATTN_DTYPE_F16:
    return "<f2";
  case ATTN_DTYPE_BF16:
    return "<u2";
  case ATTN_DTYPE_F32:
    return "<f4";
  case ATTN_DTYPE_BOOL:
    return "|b1";
  }
  return "?";
}

/// One array of a run as .npy sees it: the logical shape (C order) and the
/// tensor it lives in (its strides; rank 3 for lse).
struct NpyArray {
  std::string name; // file stem: q, k, v, mask, out, lse
  attn_dtype dtype;
  std::vector<int64_t> shape;
  attn_tensor tensor;
};

/// Calls f(offset in elements of the tensor) for each element in C order.
template <typename F> void forEachElement(const NpyArray &a, F f) {
  const size_t rank = a.shape.size();
  std::vector<int64_t> idx(rank, 0);
  int64_t total = 1;
  for (int64_t d : a.shape)
    total *= d;
  for (int64_t n = 0; n < total; ++n) {
    int64_t off = 0;
    for (size_t d = 0; d < rank; ++d)
      off += idx[d] * a.tensor.strides[d];
    f(off);
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < a.shape[d])
        break;
      idx[d] = 0;
    }
  }
}

/// A shape as Python writes a tuple: (), (5,), (1, 2, 3).
std::string shapeText(const std::vector<int64_t> &shape) {
  std::string t = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    t += (i ? ", " : "") + std::to_string(shape[i]);
  return t + (shape.size() == 1 ? ",)" : ")");
}

void saveNpy(const std::string &dir, const NpyArray &a) {
  std::string path = dir + "/" + a.name + ".npy";
  std::string header = std::string("{'descr': '") + npyDescr(a.dtype) +
                       "', 'fortran_order': False, 'shape': " +
                       shapeText(a.shape) + ", }";
  // Magic (6) + version (2) + length (2) + header, padded with spaces and
  // ended by a newline to a multiple of 64 bytes.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out)
    fatal("--save: cannot write '" + path + "': " + std::strerror(errno));
  const char magic[8] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0};
  out.write(magic, 8);
  uint16_t len = uint16_t(header.size());
  const char lenBytes[2] = {char(len & 0xff), char(len >> 8)};
  out.write(lenBytes, 2);
  out << header;
  const size_t es = dtypeSize(a.dtype);
  std::vector<char> bytes;
  const char *base = static_cast<const char *>(a.tensor.data);
  forEachElement(a, [&](int64_t off) {
    bytes.insert(bytes.end(), base + off * es, base + (off + 1) * es);
  });
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out)
    fatal("--save: writing '" + path + "' failed");
}

/// Reads DIR/name.npy into the tensor of `a`, after checking that it is a
/// C-order array of a's dtype and shape.
void loadNpy(const std::string &dir, const NpyArray &a) {
  std::string path = dir + "/" + a.name + ".npy";
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fatal("--load: cannot read '" + path + "': " + std::strerror(errno));
  std::string data((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  auto bad = [&](const std::string &why) {
    fatal("--load: '" + path + "': " + why);
  };
  if (data.size() < 10 || data.compare(0, 6, "\x93NUMPY") != 0)
    bad("not a .npy file (no \\x93NUMPY magic)");
  const unsigned major = uint8_t(data[6]);
  size_t headerStart = 10, headerLen = 0;
  if (major == 1) {
    headerLen = uint8_t(data[8]) | size_t(uint8_t(data[9])) << 8;
  } else if (major == 2) {
    if (data.size() < 12)
      bad("truncated header");
    headerStart = 12;
    for (int i = 3; i >= 0; --i)
      headerLen = headerLen << 8 | uint8_t(data[8 + i]);
  } else {
    bad(".npy format version " + std::to_string(major) +
        ".x (attn-run reads 1.0 and 2.0)");
  }
  if (data.size() < headerStart + headerLen)
    bad("truncated header");
  const std::string header = data.substr(headerStart, headerLen);
  // The header is a Python dict literal; find the three keys' values.
  auto valueOf = [&](const std::string &key) -> std::string {
    size_t k = header.find("'" + key + "'");
    if (k == std::string::npos)
      bad("header has no '" + key + "'");
    size_t colon = header.find(':', k);
    if (colon == std::string::npos)
      bad("malformed header");
    size_t v = header.find_first_not_of(' ', colon + 1);
    if (v == std::string::npos)
      bad("malformed header");
    size_t end = header[v] == '(' ? header.find(')', v)
                 : header[v] == '\'' ? header.find('\'', v + 1)
                                     : header.find_first_of(",}", v);
    if (end == std::string::npos)
      bad("malformed header");
    if (header[v] == '(' || header[v] == '\'')
      ++end; // keep the closing bracket or quote
    return header.substr(v, end - v);
  };
  std::string descr = valueOf("descr"), fortran = valueOf("fortran_order"),
              shape = valueOf("shape");
  const std::string want = std::string("'") + npyDescr(a.dtype) + "'";
  // A one-byte type has no byte order: NumPy writes '|b1', accept '<b1'.
  if (descr != want && !(a.dtype == ATTN_DTYPE_BOOL && descr == "'<b1'"))
    bad("dtype " + descr + ", expected " + want + " (" +
        attn_dtype_name(a.dtype) +
        (a.dtype == ATTN_DTYPE_BF16 ? ": bf16's raw bits as uint16" : "") +
        ")");
  if (fortran != "False")
    bad("Fortran order; attn-run reads C-order arrays "
        "(numpy.ascontiguousarray)");
  std::vector<int64_t> dims;
  for (size_t i = 1; i < shape.size();) {
    size_t j = shape.find_first_of(",)", i);
    std::string t = shape.substr(i, j - i);
    t.erase(0, t.find_first_not_of(' '));
    t.erase(t.find_last_not_of(' ') + 1);
    if (!t.empty()) {
      char *end = nullptr;
      long long d = std::strtoll(t.c_str(), &end, 10);
      if (*end)
        bad("malformed shape " + shape);
      dims.push_back(d);
    }
    i = j + 1;
  }
  if (dims != a.shape)
    bad("shape " + shapeText(dims) + ", expected " + shapeText(a.shape) +
        " from the flags");
  const size_t es = dtypeSize(a.dtype);
  size_t count = 1;
  for (int64_t d : dims)
    count *= size_t(d);
  const size_t begin = headerStart + headerLen;
  if (data.size() - begin < count * es)
    bad("truncated: " + std::to_string(data.size() - begin) +
        " bytes of data, expected " + std::to_string(count * es));
  if (data.size() - begin > count * es)
    bad(std::to_string(data.size() - begin - count * es) +
        " bytes after the array's data");
  char *base = static_cast<char *>(a.tensor.data);
  const char *src = data.data() + begin;
  forEachElement(a, [&](int64_t off) {
    std::memcpy(base + off * es, src, es);
    src += es;
  });
}

//===----------------------------------------------------------------------===//
// The cuda target: device memory through the CUDA driver (dlopen), as the
// runtime itself reaches it.
//===----------------------------------------------------------------------===//

struct CudaDevice {
  using CUresult = int;
  using CUdeviceptr = unsigned long long;
  void *lib = nullptr;
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDeviceGet)(int *, int) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(void **, int) = nullptr;
  CUresult (*cuCtxPushCurrent)(void *) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t) = nullptr;
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t) = nullptr;
  CUresult (*cuEventCreate)(void **, unsigned) = nullptr;
  CUresult (*cuEventRecord)(void *, void *) = nullptr;
  CUresult (*cuEventSynchronize)(void *) = nullptr;
  CUresult (*cuEventElapsedTime)(float *, void *, void *) = nullptr;
  void *start = nullptr, *stop = nullptr;
  std::vector<CUdeviceptr> allocations;

  template <typename Fn> void resolve(Fn &fn, const char *name) {
    fn = reinterpret_cast<Fn>(dlsym(lib, name));
    if (!fn)
      fatal(std::string("cuda: the driver library lacks ") + name);
  }
  void check(CUresult r, const char *what) {
    if (r != 0)
      fatal(std::string("cuda: ") + what + " failed (CUresult " +
            std::to_string(r) + ")");
  }
  void open() {
    const char *name = std::getenv("ATTN_CUDA_DRIVER");
    lib = dlopen(name && *name ? name : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
      fatal(std::string("cuda: cannot load the CUDA driver: ") + dlerror());
    resolve(cuInit, "cuInit");
    resolve(cuDeviceGet, "cuDeviceGet");
    resolve(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    resolve(cuCtxPushCurrent, "cuCtxPushCurrent_v2");
    resolve(cuCtxSynchronize, "cuCtxSynchronize");
    resolve(cuMemAlloc, "cuMemAlloc_v2");
    resolve(cuMemFree, "cuMemFree_v2");
    resolve(cuMemcpyHtoD, "cuMemcpyHtoD_v2");
    resolve(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
    resolve(cuEventCreate, "cuEventCreate");
    resolve(cuEventRecord, "cuEventRecord");
    resolve(cuEventSynchronize, "cuEventSynchronize");
    resolve(cuEventElapsedTime, "cuEventElapsedTime_v2");
    check(cuInit(0), "cuInit");
    int device = 0;
    check(cuDeviceGet(&device, 0), "cuDeviceGet");
    void *ctx = nullptr;
    check(cuDevicePrimaryCtxRetain(&ctx, device), "cuDevicePrimaryCtxRetain");
    check(cuCtxPushCurrent(ctx), "cuCtxPushCurrent");
    check(cuEventCreate(&start, 0), "cuEventCreate");
    check(cuEventCreate(&stop, 0), "cuEventCreate");
  }
  void *alloc(size_t bytes) {
    CUdeviceptr p = 0;
    check(cuMemAlloc(&p, std::max<size_t>(bytes, 64)), "cuMemAlloc");
    allocations.push_back(p);
    return reinterpret_cast<void *>(p);
  }
  void toDevice(void *dst, const void *src, size_t bytes) {
    check(cuMemcpyHtoD(CUdeviceptr(dst), src, bytes), "cuMemcpyHtoD");
  }
  void toHost(void *dst, const void *src, size_t bytes) {
    check(cuMemcpyDtoH(dst, CUdeviceptr(src), bytes), "cuMemcpyDtoH");
  }
  void sync() { check(cuCtxSynchronize(), "cuCtxSynchronize"); }
  ~CudaDevice() {
    for (CUdeviceptr p : allocations)
      cuMemFree(p);
  }
};

//===----------------------------------------------------------------------===//
// Progress on stderr.
//===----------------------------------------------------------------------===//

/// Prints "attn-run: [12.3 s] <what>" lines on stderr: with --progress=auto
/// when stderr is a terminal, once the run has taken 3 s, at most one a
/// second; with always, every phase and at most one a second in loops.
class ProgressReporter {
public:
  explicit ProgressReporter(Options::Progress mode)
      : enabled(mode == Options::Progress::Always ||
                (mode == Options::Progress::Auto && isatty(2))),
        always(mode == Options::Progress::Always),
        start(std::chrono::steady_clock::now()), last(start) {}

  /// A phase begins (always reported once past the threshold).
  void phase(const std::string &what) { report(what); }
  /// Step i of n of a loop (reported at most once a second).
  /// (The first and last steps, and the others at most once a second.)
  void step(const char *what, int64_t i, int64_t n) {
    if (!enabled)
      return;
    if (i != 1 && i != n &&
        std::chrono::steady_clock::now() - last < std::chrono::seconds(1))
      return;
    report(std::string(what) + " " + std::to_string(i) + "/" +
           std::to_string(n));
  }

private:
  void report(const std::string &what) {
    if (!enabled)
      return;
    auto now = std::chrono::steady_clock::now();
    double s = std::chrono::duration<double>(now - start).count();
    if (!always && s < 3.0)
      return;
    last = now;
    std::fprintf(stderr, "attn-run: [%.1f s] %s\n", s, what.c_str());
  }
  bool enabled, always;
  std::chrono::steady_clock::time_point start, last;
};

/// min, median, mean and (sample) standard deviation of `v`.
struct Stats {
  double min = NAN, median = NAN, mean = NAN, stddev = NAN;
  int64_t count = 0;
};
Stats statsOf(std::vector<double> v) {
  Stats s;
  s.count = int64_t(v.size());
  if (v.empty())
    return s;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  s.min = v.front();
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  double sum = 0;
  for (double x : v)
    sum += x;
  s.mean = sum / double(n);
  double sq = 0;
  for (double x : v)
    sq += (x - s.mean) * (x - s.mean);
  s.stddev = n > 1 ? std::sqrt(sq / double(n - 1)) : 0.0;
  return s;
}

} // namespace

/// The version of the --json object's layout (docs/attn-run.md, "JSON").
/// 1 was the unversioned layout before it; 2 added schema, attn_version,
/// device, kernel_variant, the effective scale and tiles, the time
/// statistics, data_seed as a string, loaded_from and saved_to.
/// 3 added memory (where the tensors live: host, or device buffers); 4
/// added "model" (the performance model's prediction with --model, null
/// without); 5 added device_b2b_ms and b2b_ms (vulkan: the --bench
/// launches back to back).
constexpr int kJsonSchema = 5;

/// The arrays --save writes and --load reads (inputs only, or all).
std::vector<NpyArray> arraysOf(const Options &o, const Problem &p,
                               bool outputs) {
  std::vector<NpyArray> a = {
      {"q", o.dtype, {o.batch, o.heads, o.seqQ, o.headDim}, p.args.q},
      {"k", o.dtype, {o.batch, o.kvHeads, o.seqKv, o.headDim}, p.args.k},
      {"v", o.dtype, {o.batch, o.kvHeads, o.seqKv, o.valueDim}, p.args.v}};
  if (o.mask != ATTN_MASK_NONE)
    a.push_back({"mask", o.mask == ATTN_MASK_BOOL ? ATTN_DTYPE_BOOL : o.dtype,
                 {p.maskB, p.maskH, o.seqQ, o.seqKv}, p.args.mask});
  if (outputs) {
    a.push_back({"out", o.dtype, {o.batch, o.heads, o.seqQ, o.valueDim},
                 p.args.out});
    if (o.lse)
      a.push_back(
          {"lse", ATTN_DTYPE_F32, {o.batch, o.heads, o.seqQ}, p.args.lse});
  }
  return a;
}

/// The model's input from the options (and what the kernel reported).
attn_run::ModelInput modelInput(const Options &o, const attn_kernel_info *info) {
  attn_run::ModelInput in;
  in.target = o.target;
  in.device = o.modelDevice;
  in.geometry = o.modelGeometry;
  if (info && info->device)
    in.deviceSeen = info->device;
  attn::model::Problem &p = in.problem;
  p.batch = o.batch;
  p.headsQ = o.heads;
  p.headsKv = o.kvHeads;
  p.seqQ = o.seqQ;
  p.seqKv = o.seqKv;
  p.headDim = o.headDim;
  p.valueDim = o.valueDim;
  p.dtype = attn::model::modelDType(o.dtype);
  p.causal = o.causal;
  p.mask = attn::model::modelMask(o.mask);
  p.maskBroadcast = o.maskBroadcastB && o.maskBroadcastH;
  p.dropout = o.dropout;
  p.lse = o.lse;
  in.specKvSplits = o.kvSplits;
  in.blockQ = info ? info->block_q : o.blockQ;
  in.blockKv = info ? info->block_kv : o.blockKv;
  in.kvSplits = info ? info->kv_splits : 0;
  return in;
}

/// --mha: compile the layer (attn_mha_compile), run it on random inputs
/// with a poisoned output, check it against the float64 layer reference
/// and/or time it.
int runMha(const Options &o, attn_context *ctx) {
  attn_mha_spec spec;
  attn_mha_spec_init(&spec);
  spec.dtype = o.dtype;
  spec.batch = o.batch;
  spec.seq = o.seqQ;
  spec.embed = o.embed;
  spec.heads_q = o.heads;
  spec.heads_kv = o.kvHeads;
  spec.head_dim = o.headDim;
  spec.value_dim = o.valueDim;
  spec.cross = o.seqKvGiven || o.kvEmbed;
  spec.seq_kv = spec.cross ? o.seqKv : 0;
  spec.kv_embed = spec.cross ? (o.kvEmbed ? o.kvEmbed : o.embed) : 0;
  spec.fused_qkv = o.fusedQkv;
  spec.bias = o.bias;
  spec.causal = o.causal;
  spec.scale = o.scale;

  Outcome res;
  attn_mha_kernel *kernel = nullptr;
  auto compileStart = std::chrono::steady_clock::now();
  checkStatus(attn_mha_compile(ctx, &spec, o.target, &kernel),
              "attn_mha_compile");
  res.compileMs = msSince(compileStart);
  const attn_mha_spec &n = *attn_mha_kernel_spec(kernel);
  if (o.dumpIr) {
    std::fputs(attn_mha_kernel_source(kernel), stdout);
    if (!o.check && !o.bench)
      return 0;
  }

  const int64_t B = n.batch, S = n.seq, E = n.embed, Skv = n.seq_kv,
                Ekv = n.kv_embed, qw = n.heads_q * n.head_dim,
                kw = n.heads_kv * n.head_dim, vw = n.heads_kv * n.value_dim,
                ow = n.heads_q * n.value_dim;
  auto count = [](std::initializer_list<int64_t> dims) {
    return elements("layer tensor", dims, ATTN_DTYPE_F32);
  };
  // Inputs of unit size (x, kv in [-1, 1]); weights and biases uniform in
  // +-1/sqrt(fan_in), torch.nn.Linear's range, so every activation stays
  // of order one whatever E.
  struct In {
    Buffer buf;
    double scale;
    size_t field; // offset of its pointer in attn_mha_args
  };
  std::vector<In> ins;
  attn_mha_args args{};
  auto input = [&](const void *&slot, std::initializer_list<int64_t> dims,
                   double scale) {
    ins.push_back({Buffer(o.dtype, count(dims)), scale,
                   size_t(reinterpret_cast<char *>(&slot) -
                          reinterpret_cast<char *>(&args))});
    slot = ins.back().buf.data();
  };
  ins.reserve(13);
  input(args.x, {B, S, E}, 1.0);
  if (n.cross)
    input(args.kv, {B, Skv, Ekv}, 1.0);
  const double inScale = 1.0 / std::sqrt(double(E)),
               kvScale = 1.0 / std::sqrt(double(Ekv)),
               oScale = 1.0 / std::sqrt(double(ow));
  if (n.fused_qkv) {
    input(args.w_qkv, {qw + kw + vw, E}, inScale);
  } else {
    input(args.w_q, {qw, E}, inScale);
    input(args.w_k, {kw, Ekv}, kvScale);
    input(args.w_v, {vw, Ekv}, kvScale);
  }
  input(args.w_o, {E, ow}, oScale);
  if (n.bias) {
    if (n.fused_qkv) {
      input(args.b_qkv, {qw + kw + vw}, inScale);
    } else {
      input(args.b_q, {qw}, inScale);
      input(args.b_k, {kw}, kvScale);
      input(args.b_v, {vw}, kvScale);
    }
    input(args.b_o, {E}, oScale);
  }
  Buffer y(o.dtype, count({B, S, E}));
  args.y = y.data();
  // cuda: the layer runs on device copies of every tensor (launchArgs);
  // inputs are uploaded after each fill, y fetched after each launch.
  const bool onCuda = o.target == ATTN_TARGET_CUDA;
  CudaDevice cuda;
  attn_mha_args launchArgs = args;
  if (onCuda) {
    cuda.open();
    for (const In &in : ins)
      *reinterpret_cast<const void **>(reinterpret_cast<char *>(&launchArgs) +
                                       in.field) =
          cuda.alloc(in.buf.count * dtypeSize(o.dtype));
    launchArgs.y = cuda.alloc(y.count * dtypeSize(o.dtype));
  }
  // vulkan: host memory (staged by every launch), or with --memory=device
  // (the default with --bench) device buffers, uploaded after each fill
  // like cuda's, so that a timed launch copies nothing.
  const bool onVulkanDevice =
      o.target == ATTN_TARGET_VULKAN &&
      (o.memory == "device" || (o.memory.empty() && o.bench));
  const std::string memory = onCuda || onVulkanDevice ? "device" : "host";
  VulkanBuffers vulkanBuffers; // ins' order, then y
  auto vulkanBuffer = [&](uint64_t bytes) {
    return attn_vulkan_buffer_pointer(vulkanBuffers.create(ctx, bytes));
  };
  if (onVulkanDevice) {
    for (const In &in : ins)
      *reinterpret_cast<void **>(reinterpret_cast<char *>(&launchArgs) +
                                 in.field) =
          vulkanBuffer(in.buf.count * dtypeSize(o.dtype));
    launchArgs.y = vulkanBuffer(y.count * dtypeSize(o.dtype));
  }
  auto uploadInputs = [&] {
    if (onVulkanDevice) {
      for (size_t i = 0; i < ins.size(); ++i)
        checkStatus(attn_vulkan_buffer_upload(vulkanBuffers.all[i], 0,
                                              ins[i].buf.data(),
                                              ins[i].buf.count *
                                                  dtypeSize(o.dtype)),
                    "attn_vulkan_buffer_upload");
      return;
    }
    if (!onCuda)
      return;
    for (const In &in : ins)
      cuda.toDevice(
          const_cast<void *>(*reinterpret_cast<const void *const *>(
              reinterpret_cast<const char *>(&launchArgs) + in.field)),
          in.buf.data(), in.buf.count * dtypeSize(o.dtype));
  };
  auto launchLayer = [&](const char *what) {
    const uint64_t yBytes = y.count * dtypeSize(o.dtype);
    // The poisoned y, so an element never written shows.
    if (onCuda)
      cuda.toDevice(launchArgs.y, y.data(), yBytes);
    if (onVulkanDevice)
      checkStatus(attn_vulkan_buffer_upload(vulkanBuffers.all.back(), 0,
                                            y.data(), yBytes),
                  "attn_vulkan_buffer_upload");
    checkStatus(attn_mha_launch(kernel, &launchArgs), what);
    if (onCuda) {
      cuda.sync();
      cuda.toHost(y.data(), launchArgs.y, yBytes);
    }
    if (onVulkanDevice)
      checkStatus(attn_vulkan_buffer_download(vulkanBuffers.all.back(), 0,
                                              y.data(), yBytes),
                  "attn_vulkan_buffer_download");
  };
  attn_tensor yView{};
  yView.data = y.data();
  const int64_t yShape[4] = {B, 1, S, E}, yStrides[4] = {S * E, S * E, E, 1};
  for (int d = 0; d < 4; ++d) {
    yView.shape[d] = yShape[d];
    yView.strides[d] = yStrides[d];
  }

  std::mt19937_64 rng(o.dataSeed);
  const Tolerance tol = mhaToleranceFor(o.dtype);
  if (o.check) {
    const int64_t reps = std::max<int64_t>(1, o.repeatCheck);
    for (int64_t rep = 0; rep < reps; ++rep) {
      for (In &in : ins)
        fillRandom(rng, o.dtype, in.buf.data(), in.buf.count, in.scale);
      uploadInputs();
      poison(o.dtype, y.data(), y.count);
      launchLayer("attn_mha_launch");
      Result ref;
      std::string error;
      if (!computeMhaReference(n, args, ref, error))
        fatal("reference: " + error);
      record(res, compare(ref, o.dtype, yView, nullptr, tol));
      if (!res.ok && !o.json)
        std::fprintf(stderr, "attn-run: check %lld failed: %s\n",
                     static_cast<long long>(rep), res.message.c_str());
      if (!res.ok)
        break;
    }
  } else {
    for (In &in : ins)
      fillRandom(rng, o.dtype, in.buf.data(), in.buf.count, in.scale);
    uploadInputs();
  }

  // Multiply-adds x 2: the projections, the attention (visible pairs),
  // the output projection.
  const bool halfCausal = n.causal && S == Skv;
  const double flops =
      2.0 * B * S * E * double(qw) + 2.0 * B * Skv * Ekv * double(kw + vw) +
      2.0 * B * n.heads_q * S * double(Skv) * double(n.head_dim + n.value_dim) *
          (halfCausal ? 0.5 : 1.0) +
      2.0 * B * S * double(ow) * E;
  Stats times, deviceStats;
  if (o.bench) {
    for (int w = 0; w < 2; ++w)
      launchLayer("attn_mha_launch (warm-up)");
    // Host time: the launch sequence and, on cuda, its synchronization (no
    // copies); device time on cuda: events around the sequence.
    std::vector<double> ms, deviceMs;
    for (int64_t r = 0; r < o.bench; ++r) {
      if (onCuda)
        cuda.check(cuda.cuEventRecord(cuda.start, nullptr), "cuEventRecord");
      auto start = std::chrono::steady_clock::now();
      checkStatus(attn_mha_launch(kernel, &launchArgs),
                  "attn_mha_launch (bench)");
      if (onCuda) {
        cuda.check(cuda.cuEventRecord(cuda.stop, nullptr), "cuEventRecord");
        cuda.sync();
      }
      ms.push_back(msSince(start));
      if (onCuda) {
        float dms = 0;
        cuda.check(cuda.cuEventElapsedTime(&dms, cuda.start, cuda.stop),
                   "cuEventElapsedTime");
        deviceMs.push_back(dms);
      }
      // On vulkan: GPU timestamps around the layer's dispatches (not the
      // staging copies of its host tensors).
      if (o.target == ATTN_TARGET_VULKAN && attn::vulkan::lastRunGpuMs() >= 0)
        deviceMs.push_back(attn::vulkan::lastRunGpuMs());
    }
    times = statsOf(ms);
    res.medianMs = times.median;
    res.tflops = flops / (res.medianMs * 1e-3) / 1e12;
    if (!deviceMs.empty()) {
      deviceStats = statsOf(deviceMs);
      res.deviceMs = deviceStats.median;
      res.deviceTflops = flops / (res.deviceMs * 1e-3) / 1e12;
    }
  }

  if (o.json) {
    std::ostringstream js;
    js << "{\"schema\": " << kJsonSchema
       << ", \"attn_version\": " << jsonString(attn_version())
       << ", \"op\": \"mha\""
       << ", \"target\": " << jsonString(attn_target_name(o.target))
       << ", \"dtype\": " << jsonString(attn_dtype_name(o.dtype))
       << ", \"batch\": " << B << ", \"seq\": " << S
       << ", \"seq_kv\": " << Skv << ", \"embed\": " << E
       << ", \"kv_embed\": " << Ekv << ", \"heads\": " << n.heads_q
       << ", \"kv_heads\": " << n.heads_kv
       << ", \"head_dim\": " << n.head_dim
       << ", \"value_dim\": " << n.value_dim
       << ", \"cross\": " << (n.cross ? "true" : "false")
       << ", \"fused_qkv\": " << (n.fused_qkv ? "true" : "false")
       << ", \"bias\": " << (n.bias ? "true" : "false")
       << ", \"causal\": " << (n.causal ? "true" : "false")
       << ", \"scale\": "
       << jsonNumber(n.scale > 0 ? n.scale
                                 : 1.0 / std::sqrt(double(n.head_dim)))
       << ", \"data_seed\": " << jsonString(std::to_string(o.dataSeed))
       << ", \"checked\": " << (res.checked ? "true" : "false")
       << ", \"ok\": " << (res.ok ? "true" : "false")
       << ", \"max_abs_err\": "
       << (res.checked ? jsonNumber(res.maxAbsErr) : "null")
       << ", \"rel_l2_err\": "
       << (res.checked ? jsonNumber(res.relL2Err) : "null")
       << ", \"rel_l2_tol\": "
       << (res.checked ? jsonNumber(res.relL2Tol) : "null");
    if (!res.ok)
      js << ", \"message\": " << jsonString(res.message);
    js << ", \"compile_ms\": " << jsonNumber(res.compileMs)
       << ", \"median_ms\": " << jsonNumber(res.medianMs)
       << ", \"min_ms\": " << jsonNumber(times.min)
       << ", \"tflops\": " << jsonNumber(res.tflops)
       << ", \"device_ms\": " << jsonNumber(res.deviceMs)
       << ", \"device_tflops\": " << jsonNumber(res.deviceTflops)
       << ", \"memory\": " << jsonString(memory) << "}\n";
    std::fputs(js.str().c_str(), stdout);
  } else {
    std::printf("attn-run: mha target=%s dtype=%s B=%lld S=%lld Skv=%lld "
                "E=%lld Ekv=%lld Hq=%lld Hkv=%lld D=%lld Dv=%lld%s%s%s%s\n",
                attn_target_name(o.target), attn_dtype_name(o.dtype),
                (long long)B, (long long)S, (long long)Skv, (long long)E,
                (long long)Ekv, (long long)n.heads_q, (long long)n.heads_kv,
                (long long)n.head_dim, (long long)n.value_dim,
                n.cross ? " cross" : "", n.fused_qkv ? " fused-qkv" : "",
                n.bias ? " bias" : "", n.causal ? " causal" : "");
    std::printf("  data_seed     %llu\n", (unsigned long long)o.dataSeed);
    if (o.target == ATTN_TARGET_VULKAN)
      printMemory(memory);
    std::printf("  compile_ms    %.3f\n", res.compileMs);
    if (res.checked) {
      std::printf("  check         %s (%lld run%s)\n", res.ok ? "ok" : "FAILED",
                  (long long)res.checks, res.checks == 1 ? "" : "s");
      std::printf("  max_abs_err   %.3g (tol %.3g x max(1,|ref|))\n",
                  res.maxAbsErr, tol.maxAbs);
      std::printf("  rel_l2_err    %.3g (tol %.3g)\n", res.relL2Err,
                  res.relL2Tol);
      if (!res.ok)
        std::printf("  failure       %s\n", res.message.c_str());
    }
    if (std::isfinite(res.medianMs)) {
      std::printf("  median_ms     %.4f\n", res.medianMs);
      std::printf("  times_ms      min %.4f mean %.4f stddev %.4f (%lld "
                  "runs)\n",
                  times.min, times.mean, times.stddev, (long long)times.count);
      std::printf("  tflops        %.4f\n", res.tflops);
    }
    if (std::isfinite(res.deviceMs)) {
      std::printf("  device_ms     %.4f (the launch sequence: %s)\n",
                  res.deviceMs,
                  onCuda ? "CUDA events" : "GPU timestamps, no staging");
      std::printf("  device_tflops %.4f\n", res.deviceTflops);
    }
  }
  return res.ok ? 0 : 1;
}

int main(int argc, char **argv) {
  Options o = parseArgs(argc, argv);
  // --model-only: the prediction alone, for any target, with no device or
  // compiler needed (offline validation against committed timings).
  if (o.modelOnly) {
    if (o.variant == ATTN_VARIANT_MATH)
      fatal("--model-only: the model covers the tiled kernels, not "
            "--variant=math");
    attn_run::ModelOutput m = attn_run::runModel(modelInput(o, nullptr));
    if (o.json)
      std::printf("{\"schema\": %d, \"target\": %s, \"model_only\": true, "
                  "\"model\": %s}\n",
                  kJsonSchema, jsonString(attn_target_name(o.target)).c_str(),
                  attn_run::modelJson(m, NAN).c_str());
    else
      attn_run::printModel(m, NAN);
    return m.ok ? 0 : 2;
  }
  // The SPIR-V kernels are best compiled for one shape (docs/Vulkan.md:
  // the tiled variant needs it; with dynamic sizes the others read them at
  // launch).
  if (o.target == ATTN_TARGET_VULKAN && !o.shapesGiven)
    o.staticShapes = true;
  ProgressReporter progress(o.progress);

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
  // A target that cannot run here (no GPU, no driver, no Vulkan device):
  // one clear message (and, with --json, a row that says so) before
  // anything is compiled.
  if (attn_target_available(ctx, o.target) != ATTN_OK) {
    std::string why = attn_last_error();
    if (o.json)
      std::printf("{\"schema\": %d, \"attn_version\": %s, \"target\": %s, "
                  "\"available\": false, \"ok\": false, \"message\": %s}\n",
                  kJsonSchema, jsonString(attn_version()).c_str(),
                  jsonString(attn_target_name(o.target)).c_str(),
                  jsonString(why).c_str());
    fatal(std::string("target ") + attn_target_name(o.target) +
          " is not available here: " + why);
  }

  if (o.mha)
    return runMha(o, ctx);

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
  const double scale = o.scale > 0 ? o.scale : 1.0 / std::sqrt(double(o.headDim));

  Outcome res;
  attn_kernel *kernel = nullptr;
  progress.phase(std::string("compiling for ") + attn_target_name(o.target));
  auto compileStart = std::chrono::steady_clock::now();
  checkStatus(attn_compile(ctx, &spec, o.target, &kernel), "attn_compile");
  res.compileMs = msSince(compileStart);
  progress.phase("compiled in " + std::to_string(int64_t(res.compileMs)) +
                 " ms");

  if (o.dumpIr) {
    const char *source = attn_kernel_source(kernel);
    if (!source)
      fatal("the kernel has no IR (loaded ahead of time)");
    std::fputs(source, stdout);
    if (!o.check && !o.bench && o.save.empty())
      return 0;
  }

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

  // The cpu and vulkan targets take host memory (vulkan stages it into
  // device buffers, docs/Vulkan.md); cuda takes device memory, which
  // mirrors the host buffers here: inputs go up after they are made,
  // outputs come back after each launch.
  const bool onCuda = o.target == ATTN_TARGET_CUDA;
  // Vulkan on device buffers (attn_vulkan.h): the tensors live on the
  // device like cuda's, so a launch copies nothing; they must be dense.
  const bool denseTensors =
      !o.bshd && (o.mask == ATTN_MASK_NONE || o.maskBroadcast == "none");
  if (o.memory == "device" && !denseTensors)
    fatal("--memory=device takes dense tensors: --layout=bhsd and, with a "
          "mask, --mask-broadcast=none (device buffers hold each tensor "
          "densely in its shape)");
  const bool onVulkanDevice =
      o.target == ATTN_TARGET_VULKAN &&
      (o.memory == "device" || (o.memory.empty() && o.bench && denseTensors));
  const std::string memory = onCuda || onVulkanDevice ? "device" : "host";
  CudaDevice cuda;
  VulkanBuffers vulkanBuffers;
  attn_launch_args launchArgs = p.args;
  auto mirror = [&](const Buffer &b, attn_tensor &t) {
    if (!b.data())
      return;
    if (onCuda) {
      t.data = cuda.alloc(b.count * dtypeSize(b.dtype));
      return;
    }
    t.data = attn_vulkan_buffer_pointer(
        vulkanBuffers.create(ctx, b.count * dtypeSize(b.dtype)));
  };
  auto upload = [&](const Buffer &b, const attn_tensor &t) {
    if (!b.data())
      return;
    if (onCuda)
      cuda.toDevice(t.data, b.data(), b.count * dtypeSize(b.dtype));
    else if (onVulkanDevice)
      checkStatus(attn_vulkan_buffer_upload(
                      static_cast<attn_vulkan_buffer *>(t.data), 0, b.data(),
                      b.count * dtypeSize(b.dtype)),
                  "attn_vulkan_buffer_upload");
  };
  auto download = [&](Buffer &b, const attn_tensor &t) {
    if (!b.data())
      return;
    if (onCuda)
      cuda.toHost(b.data(), t.data, b.count * dtypeSize(b.dtype));
    else if (onVulkanDevice)
      checkStatus(attn_vulkan_buffer_download(
                      static_cast<attn_vulkan_buffer *>(t.data), 0, b.data(),
                      b.count * dtypeSize(b.dtype)),
                  "attn_vulkan_buffer_download");
  };
  if (onCuda || onVulkanDevice) {
    if (onCuda)
      cuda.open();
    mirror(p.q, launchArgs.q);
    mirror(p.k, launchArgs.k);
    mirror(p.v, launchArgs.v);
    mirror(p.mask, launchArgs.mask);
    mirror(p.out, launchArgs.out);
    mirror(p.lse, launchArgs.lse);
  }
  auto uploadInputs = [&] {
    upload(p.q, launchArgs.q);
    upload(p.k, launchArgs.k);
    upload(p.v, launchArgs.v);
    upload(p.mask, launchArgs.mask);
  };
  auto poisonAll = [&] {
    poisonOutputs(o, p);
    upload(p.out, launchArgs.out);
    upload(p.lse, launchArgs.lse);
  };
  auto launch = [&](const char *what) {
    checkStatus(attn_launch(kernel, &launchArgs), what);
    if (onCuda)
      cuda.sync();
  };
  auto fetchOutputs = [&] {
    download(p.out, launchArgs.out);
    download(p.lse, launchArgs.lse);
  };
  auto launchOnce = [&](const char *what) {
    poisonAll();
    launch(what);
    fetchOutputs();
  };
  auto checkAgainstReference = [&]() {
    std::string error;
    if (!computeReference(spec, p.args, ref, error))
      fatal("reference: " + error);
    record(res, compare(ref, o.dtype, p.args.out, o.lse ? &p.args.lse : nullptr,
                        tol));
  };
  auto makeInputs = [&] {
    if (!o.load.empty()) {
      for (const NpyArray &a : arraysOf(o, p, /*outputs=*/false))
        loadNpy(o.load, a);
    } else {
      fillInputs(o, p, rng);
    }
    uploadInputs();
  };

  makeInputs();
  if (o.check) {
    const int64_t reps = std::max<int64_t>(1, o.repeatCheck);
    for (int64_t rep = 0; rep < reps; ++rep) {
      progress.step("check", rep + 1, reps);
      if (rep > 0)
        makeInputs();
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
  Stats times, deviceStats;
  if (o.bench) {
    for (int w = 0; w < 2; ++w)
      launchOnce("attn_launch (warm-up)");
    std::vector<double> hostTimes, deviceTimes;
    for (int64_t n = 0; n < o.bench; ++n) {
      progress.step("bench", n + 1, o.bench);
      poisonAll();
      if (onCuda)
        cuda.check(cuda.cuEventRecord(cuda.start, nullptr), "cuEventRecord");
      auto start = std::chrono::steady_clock::now();
      if (onVulkanDevice) {
        // Submitted, then waited on: the time from the submit to the
        // wait's return is the launch's end to end (no copies); the event
        // has the dispatches' own time from GPU timestamps.
        attn_vulkan_event *event = nullptr;
        checkStatus(attn_vulkan_launch_async(kernel, &launchArgs, &event),
                    "attn_vulkan_launch_async (bench)");
        attn_status waited = attn_vulkan_event_wait(event);
        hostTimes.push_back(msSince(start));
        double ms = -1.0;
        if (waited == ATTN_OK &&
            attn_vulkan_event_kernel_ms(event, &ms) == ATTN_OK)
          deviceTimes.push_back(ms);
        attn_vulkan_event_destroy(event);
        checkStatus(waited, "attn_vulkan_event_wait (bench)");
        continue;
      }
      checkStatus(attn_launch(kernel, &launchArgs), "attn_launch (bench)");
      if (onCuda) {
        cuda.check(cuda.cuEventRecord(cuda.stop, nullptr), "cuEventRecord");
        cuda.sync();
      }
      hostTimes.push_back(msSince(start));
      if (onCuda) {
        float ms = 0;
        cuda.check(cuda.cuEventSynchronize(cuda.stop), "cuEventSynchronize");
        cuda.check(cuda.cuEventElapsedTime(&ms, cuda.start, cuda.stop),
                   "cuEventElapsedTime");
        deviceTimes.push_back(ms);
      }
      if (o.target == ATTN_TARGET_VULKAN && attn::vulkan::lastRunGpuMs() >= 0)
        deviceTimes.push_back(attn::vulkan::lastRunGpuMs());
    }
    if (onVulkanDevice) {
      // The same launches back to back: all submitted, then waited on, so
      // the device never idles between them for the host's poisoning (the
      // runs above each start on an idle device after host work).
      // First --warmup-ms of launches back to back (at most 4 in
      // flight), untimed.
      {
        std::vector<attn_vulkan_event *> inFlight;
        auto warmStart = std::chrono::steady_clock::now();
        attn_status warmFailed = ATTN_OK;
        while (warmFailed == ATTN_OK && msSince(warmStart) < double(o.warmupMs)) {
          if (inFlight.size() == 4) {
            warmFailed = attn_vulkan_event_wait(inFlight.front());
            attn_vulkan_event_destroy(inFlight.front());
            inFlight.erase(inFlight.begin());
            continue;
          }
          attn_vulkan_event *event = nullptr;
          warmFailed = attn_vulkan_launch_async(kernel, &launchArgs, &event);
          if (warmFailed == ATTN_OK)
            inFlight.push_back(event);
        }
        for (attn_vulkan_event *event : inFlight) {
          attn_status waited = attn_vulkan_event_wait(event);
          if (warmFailed == ATTN_OK)
            warmFailed = waited;
          attn_vulkan_event_destroy(event);
        }
        checkStatus(warmFailed, "attn_vulkan_launch_async (clock warm-up)");
      }
      std::vector<attn_vulkan_event *> events;
      std::vector<double> b2bTimes;
      auto start = std::chrono::steady_clock::now();
      attn_status failed = ATTN_OK;
      for (int64_t n = 0; n < o.bench && failed == ATTN_OK; ++n) {
        attn_vulkan_event *event = nullptr;
        failed = attn_vulkan_launch_async(kernel, &launchArgs, &event);
        if (failed == ATTN_OK)
          events.push_back(event);
      }
      for (attn_vulkan_event *event : events) {
        attn_status waited = attn_vulkan_event_wait(event);
        double ms = -1.0;
        if (waited == ATTN_OK &&
            attn_vulkan_event_kernel_ms(event, &ms) == ATTN_OK)
          b2bTimes.push_back(ms);
        if (failed == ATTN_OK)
          failed = waited;
      }
      double wall = msSince(start);
      for (attn_vulkan_event *event : events)
        attn_vulkan_event_destroy(event);
      checkStatus(failed, "attn_vulkan_launch_async (back to back)");
      res.b2bMs = wall / double(events.size());
      if (b2bTimes.size() == events.size())
        res.deviceB2bMs = statsOf(b2bTimes).median;
    }
    fetchOutputs();
    times = statsOf(hostTimes);
    setRate(times.median);
    if (!deviceTimes.empty() && deviceTimes.size() == hostTimes.size()) {
      deviceStats = statsOf(deviceTimes);
      res.deviceMs = deviceStats.median;
      res.deviceTflops = flops / (res.deviceMs * 1e-3) / 1e12;
      res.deviceKvGBps = kvBytes / (res.deviceMs * 1e-3) / 1e9;
    }
    // The last timed run must be as right as the checked one.
    if (o.check && res.ok)
      record(res, compare(ref, o.dtype, p.args.out,
                          o.lse ? &p.args.lse : nullptr, tol));
  } else if (!o.check) {
    poisonAll();
    auto start = std::chrono::steady_clock::now();
    launch("attn_launch");
    double ms = msSince(start);
    fetchOutputs();
    times = statsOf({ms});
    setRate(ms);
  }

  if (!o.save.empty()) {
    if (mkdir(o.save.c_str(), 0777) != 0 && errno != EEXIST)
      fatal("--save: cannot create directory '" + o.save +
            "': " + std::strerror(errno));
    for (const NpyArray &a : arraysOf(o, p, /*outputs=*/true))
      saveNpy(o.save, a);
  }

  // What the target chose where the spec left it open.
  attn_kernel_info info{};
  checkStatus(attn_kernel_get_info(kernel, &info), "attn_kernel_get_info");
  const std::string device = info.device ? info.device : "";
  const std::string kernelVariant = info.variant ? info.variant : "";

  // --model: the prediction for the geometry the kernel reported, set
  // against the device time where there is one (GPU timestamps), else the
  // host's median.
  attn_run::ModelOutput modelOut;
  const double measuredMs =
      std::isfinite(res.deviceMs) ? res.deviceMs : res.medianMs;
  if (o.model && o.variant == ATTN_VARIANT_MATH)
    modelOut.error = "model: the model covers the tiled kernels, not "
                     "--variant=math";
  else if (o.model)
    modelOut = attn_run::runModel(modelInput(o, &info));
  std::string maskText = maskName(o.mask);
  if (o.mask != ATTN_MASK_NONE)
    maskText += "(" + o.maskBroadcast + ")";
  if (o.json) {
    std::ostringstream js;
    js << "{\"schema\": " << kJsonSchema
       << ", \"attn_version\": " << jsonString(attn_version())
       << ", \"target\": " << jsonString(attn_target_name(o.target))
       << ", \"device\": " << jsonString(device)
       << ", \"variant\": "
       << jsonString(o.variant == ATTN_VARIANT_MATH ? "math" : "tiled")
       << ", \"kernel_variant\": " << jsonString(kernelVariant)
       << ", \"dtype\": " << jsonString(attn_dtype_name(o.dtype))
       << ", \"batch\": " << o.batch << ", \"heads\": " << o.heads
       << ", \"kv_heads\": " << o.kvHeads << ", \"seq_q\": " << o.seqQ
       << ", \"seq_kv\": " << o.seqKv << ", \"head_dim\": " << o.headDim
       << ", \"value_dim\": " << o.valueDim
       << ", \"causal\": " << (o.causal ? "true" : "false")
       << ", \"mask\": " << jsonString(maskName(o.mask))
       << ", \"mask_broadcast\": " << jsonString(o.maskBroadcast)
       << ", \"dropout\": " << jsonNumber(o.dropout)
       << ", \"seed\": " << jsonString(std::to_string(o.seed))
       << ", \"lse\": " << (o.lse ? "true" : "false")
       << ", \"scale\": " << jsonNumber(scale)
       << ", \"layout\": " << jsonString(o.bshd ? "bshd" : "bhsd")
       << ", \"memory\": " << jsonString(memory)
       << ", \"static_shapes\": " << (o.staticShapes ? "true" : "false")
       << ", \"block_q\": " << info.block_q
       << ", \"block_kv\": " << info.block_kv
       << ", \"kv_splits\": " << info.kv_splits
       << ", \"data_seed\": " << jsonString(std::to_string(o.dataSeed))
       << ", \"loaded_from\": "
       << (o.load.empty() ? "null" : jsonString(o.load))
       << ", \"saved_to\": " << (o.save.empty() ? "null" : jsonString(o.save))
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
    js << ", \"runs\": " << times.count
       << ", \"min_ms\": " << jsonNumber(times.min)
       << ", \"median_ms\": " << jsonNumber(res.medianMs)
       << ", \"mean_ms\": " << jsonNumber(times.mean)
       << ", \"stddev_ms\": " << jsonNumber(times.stddev)
       << ", \"tflops\": " << jsonNumber(res.tflops)
       << ", \"kv_gbps\": " << jsonNumber(res.kvGBps)
       << ", \"device_ms\": " << jsonNumber(res.deviceMs)
       << ", \"device_min_ms\": " << jsonNumber(deviceStats.min)
       << ", \"device_mean_ms\": " << jsonNumber(deviceStats.mean)
       << ", \"device_stddev_ms\": " << jsonNumber(deviceStats.stddev)
       << ", \"device_tflops\": " << jsonNumber(res.deviceTflops)
       << ", \"device_kv_gbps\": " << jsonNumber(res.deviceKvGBps)
       << ", \"device_b2b_ms\": " << jsonNumber(res.deviceB2bMs)
       << ", \"b2b_ms\": " << jsonNumber(res.b2bMs)
       << ", \"compile_ms\": " << jsonNumber(res.compileMs)
       << ", \"model\": "
       << (o.model ? attn_run::modelJson(modelOut, measuredMs) : "null")
       << "}";
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
    std::printf("  device        %s\n", device.c_str());
    if (o.target == ATTN_TARGET_VULKAN)
      printMemory(memory);
    std::printf("  kernel        %s (block_q %lld, block_kv %lld, kv_splits "
                "%lld)\n",
                kernelVariant.c_str(), (long long)info.block_q,
                (long long)info.block_kv, (long long)info.kv_splits);
    std::printf("  scale         %g\n", scale);
    if (!o.load.empty())
      std::printf("  inputs        %s (--load)\n", o.load.c_str());
    else
      std::printf("  data_seed     %llu\n", (unsigned long long)o.dataSeed);
    if (!o.save.empty())
      std::printf("  saved         %s\n", o.save.c_str());
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
      if (o.bench)
        std::printf("  times_ms      min %.4f mean %.4f stddev %.4f (%lld "
                    "runs)\n",
                    times.min, times.mean, times.stddev,
                    (long long)times.count);
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
    if (std::isfinite(res.b2bMs))
      std::printf("  b2b_ms        %.4f per launch, %d submitted back to back "
                  "(device %.4f: GPU timestamps)\n",
                  res.b2bMs, int(o.bench), res.deviceB2bMs);
    if (o.model)
      attn_run::printModel(modelOut, measuredMs);
  }
  return res.ok ? 0 : 1;
}
