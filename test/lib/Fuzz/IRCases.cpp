//===- IRCases.cpp - attn-fuzz: attn IR cases and their in-process runners -===//
//
// Generates attn IR from structured choices (shapes with 0, 1, odd, huge
// and dynamic extents; dtypes; causal, scale incl. 0/inf/nan/huge,
// dropout, #attn.tiling; masks and their broadcast shapes; GQA ratios that
// do and do not divide; the tensor form attn-opt takes and the
// destination-passing form the GPU pipelines take), or mutates generated
// and corpus IR byte by byte, and runs one case through the parser and
// verifier, the tiling and online-softmax passes, or a target pipeline,
// the way attn-opt does. The input is text on purpose: text is what the
// parser and every tool take, and a saved case is then a file attn-opt
// runs as is.
//
//===----------------------------------------------------------------------===//
#include "Fuzz.h"

#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/InitAll.h"
#include "attn/Pipelines/Pipelines.h"
#include "attn/Target/SPIRV/SPIRVArtifact.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <climits>
#include <cmath>
#include <cstdio>
#include <sstream>

using namespace mlir;

namespace attn_fuzz {
namespace {

constexpr int64_t kDynamic = INT64_MIN; // '?' in a shape

// Extents: mostly ones a kernel really sees, then the edges of the key
// loop (block multiples +-1, lavapipe's 65535), then sizes whose products
// overflow int64 and i32.
int64_t pickExtent(Rng &rng, double pDynamic) {
  static const int64_t typical[] = {1, 2, 3, 4, 7, 8, 16, 17, 33, 64, 100, 128};
  static const int64_t edges[] = {0,   1,    63,   64,    65,    255,    256,
                                  511, 512,  513,  1000,  4096,  65535,  65536,
                                  1 << 20};
  static const int64_t huge[] = {(1LL << 31) - 1, 1LL << 31,       1LL << 32,
                                 1LL << 40,       1LL << 62,       INT64_MAX - 1,
                                 INT64_MAX};
  if (chance(rng, pDynamic))
    return kDynamic;
  double r = std::uniform_real_distribution<double>(0, 1)(rng);
  if (r < 0.04)
    return 0; // empty: every size product and tile count must cope
  if (r < 0.72)
    return pick(rng, typical);
  if (r < 0.92)
    return pick(rng, edges);
  return pick(rng, huge);
}

int64_t pickHeadDim(Rng &rng) {
  static const int64_t typical[] = {1, 2, 3, 4, 8, 9, 16, 24, 32, 48, 64, 80, 128, 256};
  static const int64_t odd[] = {0, 257, 512, 1024, 65536, 1LL << 31, INT64_MAX};
  return chance(rng, 0.94) ? pick(rng, typical) : pick(rng, odd);
}

// Block sizes and split counts, for #attn.tiling and the pass options.
int64_t pickBlock(Rng &rng) {
  static const int64_t v[] = {1,  2,  3,    7,    8,         16,
                              32, 64, 100,  128,  256,       0,
                              -1, 65535, 1LL << 31, 1LL << 62, INT64_MAX};
  return pick(rng, v);
}
int64_t pickSplits(Rng &rng) {
  static const int64_t v[] = {0, 1, 2, 3, 4, 7, 64, 1000, 65536, 1LL << 40,
                              INT64_MAX, -1};
  return pick(rng, v);
}

std::string dimText(int64_t d) {
  return d == kDynamic ? "?" : std::to_string(d);
}

std::string shapeText(const std::vector<int64_t> &dims) {
  std::string s;
  for (int64_t d : dims)
    s += dimText(d) + "x";
  return s;
}

// An f64 attribute value as MLIR spells it: a decimal with a '.', or the
// bit pattern for inf and nan (which have no decimal form).
std::string floatText(double v) {
  if (!std::isfinite(v)) {
    uint64_t bits;
    static_assert(sizeof(bits) == sizeof(v));
    std::memcpy(&bits, &v, sizeof(v));
    char buf[32];
    std::snprintf(buf, sizeof(buf), "0x%016llX", (unsigned long long)bits);
    return buf;
  }
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17e", v);
  return buf;
}

double pickScale(Rng &rng) {
  static const double v[] = {0.125,     1.0,      0.0,      -1.0,    1e-30,
                             1e30,      1e300,    5e-324,   1000.0,  3.4028234663852886e38,
                             2.4e38,    INFINITY, -INFINITY, NAN,    -0.0};
  return pick(rng, v);
}

double pickDropout(Rng &rng) {
  static const double v[] = {0.0, 0.1,  0.5,    0.999999, 1.0,
                             -0.1, 1e-300, 0.9999999999999999, NAN, INFINITY};
  return pick(rng, v);
}

/// The choices one attn.sdpa case is built from.
struct Sdpa {
  std::string dtype = "f32", kDtype, vDtype, outDtype, lseDtype = "f32";
  int64_t b = 1, hq = 1, hkv = 1, sq = 1, skv = 1, d = 16, dv = 16;
  // Per-operand shape overrides that make the op invalid on purpose.
  std::vector<int64_t> q, k, v, out, lse, mask;
  std::string maskType; // "" none, else the element type
  bool causal = false, hasScale = false, hasDropout = false, hasLse = false;
  double scale = 0, dropout = 0;
  std::string tiling; // "" or the #attn.tiling<...> body
  bool dps = false;   // destination-passing form (memrefs) vs tensors
  bool stridedMemrefs = false;
};

Sdpa generateSdpa(Rng &rng, bool dps) {
  Sdpa s;
  s.dps = dps;
  s.stridedMemrefs = chance(rng, 0.5);
  static const char *dtypes[] = {"f16", "bf16", "f32"};
  static const char *oddTypes[] = {"f64", "i8", "i1", "f8E4M3FN", "index", "i32"};
  s.dtype = chance(rng, 0.97) ? pick(rng, dtypes) : pick(rng, oddTypes);
  s.kDtype = s.vDtype = s.outDtype = s.dtype;
  if (chance(rng, 0.03))
    s.kDtype = pick(rng, dtypes);
  if (chance(rng, 0.03))
    s.vDtype = pick(rng, dtypes);
  if (chance(rng, 0.02))
    s.outDtype = pick(rng, dtypes);

  double pDyn = chance(rng, 0.3) ? 0.5 : 0.08;
  s.b = pickExtent(rng, pDyn);
  s.hkv = pickExtent(rng, pDyn);
  // GQA: Hq a multiple of Hkv, sometimes not (the verifier's rule), sometimes
  // both huge.
  static const int64_t ratios[] = {1, 1, 1, 2, 3, 4, 8};
  if (s.hkv == kDynamic || chance(rng, 0.05))
    s.hq = pickExtent(rng, pDyn);
  else
    s.hq = s.hkv > INT64_MAX / 8 ? s.hkv : s.hkv * pick(rng, ratios) +
                                              (chance(rng, 0.04) ? 1 : 0);
  s.sq = pickExtent(rng, pDyn);
  s.skv = chance(rng, 0.3) ? s.sq : pickExtent(rng, pDyn);
  s.d = pickHeadDim(rng);
  s.dv = chance(rng, 0.75) ? s.d : pickHeadDim(rng);
  if (chance(rng, 0.02))
    s.d = kDynamic;

  s.q = {s.b, s.hq, s.sq, s.d};
  s.k = {s.b, s.hkv, s.skv, s.d};
  s.v = {s.b, s.hkv, s.skv, s.dv};
  s.out = {s.b, s.hq, s.sq, s.dv};
  s.hasLse = chance(rng, 0.4);
  s.lse = {s.b, s.hq, s.sq};
  if (chance(rng, 0.02))
    s.lseDtype = "f16";

  double m = std::uniform_real_distribution<double>(0, 1)(rng);
  if (m < 0.2)
    s.maskType = "i1";
  else if (m < 0.4)
    s.maskType = chance(rng, 0.7) ? s.dtype : pick(rng, dtypes);
  else if (m < 0.42)
    s.maskType = pick(rng, oddTypes);
  if (!s.maskType.empty()) {
    int64_t mb = chance(rng, 0.5) ? s.b : 1;
    int64_t mh = chance(rng, 0.5) ? s.hq : 1;
    s.mask = {mb, mh, s.sq, s.skv};
    if (chance(rng, 0.15))
      s.mask[below(rng, 4)] = pickExtent(rng, 0.3); // broadcast or mismatch
  }

  // A few cases break one shape rule on purpose (verifier coverage).
  if (chance(rng, 0.08)) {
    std::vector<int64_t> *shapes[] = {&s.q, &s.k, &s.v, &s.out, &s.lse};
    auto *shape = shapes[below(rng, 5)];
    if (chance(rng, 0.2))
      shape->push_back(pickExtent(rng, 0.1)); // wrong rank
    else if (chance(rng, 0.2) && !shape->empty())
      shape->pop_back();
    else
      (*shape)[below(rng, shape->size())] = pickExtent(rng, 0.2);
  }

  s.causal = chance(rng, 0.4);
  if ((s.hasScale = chance(rng, 0.5)))
    s.scale = pickScale(rng);
  if ((s.hasDropout = chance(rng, 0.15)))
    s.dropout = pickDropout(rng);
  if (chance(rng, 0.35)) {
    std::ostringstream t;
    t << "block_q = " << pickBlock(rng) << ", block_kv = " << pickBlock(rng);
    if (chance(rng, 0.6))
      t << ", kv_splits = " << pickSplits(rng);
    if (chance(rng, 0.1))
      t << ", launch_splits = true";
    if (chance(rng, 0.1))
      t << ", static_tiles = true";
    if (chance(rng, 0.1))
      t << ", pack_heads = true";
    if (chance(rng, 0.1))
      t << ", rescale_threshold = " << pickOf(rng, {0, 8, -1, 64});
    if (chance(rng, 0.1))
      t << ", p_type = " << pickOf(rng, {"f16", "bf16", "f32", "i8"});
    if (chance(rng, 0.1))
      t << ", heaviest_first = " << pickOf(rng, {0, 1, 2, -1});
    s.tiling = t.str();
  }
  return s;
}

std::string tensorType(const std::vector<int64_t> &shape, const std::string &et) {
  return "tensor<" + shapeText(shape) + et + ">";
}
std::string memrefType(const std::vector<int64_t> &shape, const std::string &et,
                       bool strided) {
  std::string t = "memref<" + shapeText(shape) + et;
  if (strided && !shape.empty()) {
    t += ", strided<[";
    for (size_t i = 0; i < shape.size(); ++i)
      t += i + 1 == shape.size() ? "1" : "?, ";
    t += "], offset: ?>";
  }
  return t + ">";
}

/// The function holding one attn.sdpa, in the tensor form (examples/) or the
/// destination-passing form the JIT builds (test/Pipelines/).
std::string printSdpa(const Sdpa &s) {
  std::ostringstream os;
  std::string qt = tensorType(s.q, s.dtype), kt = tensorType(s.k, s.kDtype),
              vt = tensorType(s.v, s.vDtype), ot = tensorType(s.out, s.outDtype),
              lt = tensorType(s.lse, s.lseDtype),
              mt = s.maskType.empty() ? "" : tensorType(s.mask, s.maskType);
  struct Arg {
    std::string name, tensor, elem;
    const std::vector<int64_t> *shape;
  };
  std::vector<Arg> ins = {{"q", qt, s.dtype, &s.q}, {"k", kt, s.kDtype, &s.k},
                          {"v", vt, s.vDtype, &s.v}};
  if (!mt.empty())
    ins.push_back({"m", mt, s.maskType, &s.mask});
  std::string seedArg = s.hasDropout ? ", %seed: i64" : "";

  std::ostringstream op;
  op << "attn.sdpa %" << (s.dps ? "qt" : "q") << ", %" << (s.dps ? "kt" : "k")
     << ", %" << (s.dps ? "vt" : "v");
  if (!mt.empty())
    op << " mask(%" << (s.dps ? "mt" : "m") << " : " << mt << ")";
  if (s.causal)
    op << " causal";
  if (s.hasScale)
    op << " scale(" << floatText(s.scale) << ")";
  if (s.hasDropout)
    op << " dropout(" << floatText(s.dropout) << ", seed %seed)";
  if (!s.tiling.empty())
    op << " {tiling = #attn.tiling<" << s.tiling << ">}";
  op << " : " << qt << ", " << kt << ", " << vt << " -> " << ot;
  if (s.hasLse)
    op << ", " << lt;

  if (!s.dps) {
    os << "func.func @fuzz(";
    for (size_t i = 0; i < ins.size(); ++i)
      os << (i ? ", " : "") << "%" << ins[i].name << ": " << ins[i].tensor;
    os << seedArg << ") -> (" << ot << (s.hasLse ? ", " + lt : "") << ") {\n";
    os << "  " << (s.hasLse ? "%o, %l" : "%o") << " = " << op.str() << "\n";
    os << "  return %o" << (s.hasLse ? ", %l" : "") << " : " << ot
       << (s.hasLse ? ", " + lt : "") << "\n}\n";
    return os.str();
  }
  std::string om = memrefType(s.out, s.outDtype, s.stridedMemrefs),
              lm = memrefType(s.lse, s.lseDtype, s.stridedMemrefs);
  os << "func.func @fuzz(";
  for (size_t i = 0; i < ins.size(); ++i)
    os << (i ? ", " : "") << "%" << ins[i].name << ": "
       << memrefType(*ins[i].shape, ins[i].elem, s.stridedMemrefs);
  os << ", %out: " << om << (s.hasLse ? ", %lse: " + lm : "") << seedArg
     << ") {\n";
  for (const Arg &a : ins)
    os << "  %" << a.name << "t = bufferization.to_tensor %" << a.name
       << " restrict : " << memrefType(*a.shape, a.elem, s.stridedMemrefs)
       << " to " << a.tensor << "\n";
  os << "  " << (s.hasLse ? "%o, %l" : "%o") << " = " << op.str() << "\n";
  os << "  bufferization.materialize_in_destination %o in restrict writable "
        "%out : ("
     << ot << ", " << om << ") -> ()\n";
  if (s.hasLse)
    os << "  bufferization.materialize_in_destination %l in restrict writable "
          "%lse : ("
       << lt << ", " << lm << ") -> ()\n";
  os << "  return\n}\n";
  return os.str();
}

// Byte-level mutation: numbers swapped for interesting ones, type names
// swapped, tokens inserted, spans deleted or duplicated, random bytes.
std::string mutateBytes(Rng &rng, std::string text) {
  static const char *numbers[] = {"0", "1", "-1", "3", "?", "2147483648",
                                  "4294967296", "4611686018427387904",
                                  "9223372036854775807", "9223372036854775808",
                                  "18446744073709551616", "0x7FF8000000000000",
                                  "1.0e308", "-0.0", "65535"};
  static const char *tokens[] = {"?",       "x",      "xf16",    "causal",
                                 " mask(",  ")",      ":",       ",",
                                 "tensor<", ">",      "-> ",     "%q",
                                 "i1",      "bf16",   "f32",     "scale(",
                                 "{",       "}",      "#attn.tiling<block_q = 0, block_kv = 0>",
                                 "\"",      "\n",     "attn.sdpa", "// -----"};
  static const char *types[] = {"f16", "bf16", "f32", "i1", "f64", "i8", "index"};
  int n = 1 + below(rng, 4);
  for (int i = 0; i < n && !text.empty(); ++i) {
    size_t at = below(rng, text.size());
    switch (below(rng, 7)) {
    case 0: { // replace the number (or '?') at or after `at`
      size_t s = text.find_first_of("0123456789?", at);
      if (s == std::string::npos)
        break;
      size_t e = s + 1;
      while (e < text.size() && std::isdigit((unsigned char)text[e]))
        ++e;
      text.replace(s, e - s, pick(rng, numbers));
      break;
    }
    case 1: { // swap a type name
      for (const char *t : types) {
        size_t s = text.find(t, at);
        if (s != std::string::npos) {
          text.replace(s, std::strlen(t), pick(rng, types));
          break;
        }
      }
      break;
    }
    case 2:
      text.insert(at, pick(rng, tokens));
      break;
    case 3:
      text.erase(at, 1 + below(rng, 16));
      break;
    case 4: {
      size_t len = 1 + below(rng, 32);
      text.insert(below(rng, text.size()), text.substr(at, len));
      break;
    }
    case 5:
      text[at] = static_cast<char>(below(rng, 256));
      break;
    default:
      text[at] = static_cast<char>(' ' + below(rng, 95));
      break;
    }
  }
  return text;
}

/// Pipeline options as the registered pipelines and passes spell them.
std::string generateOptions(Rng &rng, const std::string &stage) {
  std::ostringstream o;
  auto blockOpt = [&](const char *name) {
    if (chance(rng, 0.5))
      o << " " << name << "=" << pickBlock(rng);
  };
  if (stage == "tile" || stage == "decompose") {
    blockOpt("block-q");
    blockOpt("block-kv");
    if (chance(rng, 0.6))
      o << " kv-splits=" << pickSplits(rng);
    // 0 queries the host: kept rare so a run is the same on every machine.
    o << " parallelism=" << pickOf(rng, {1, 2, 16, 1000, 0});
  } else if (stage == "cpu") {
    if (chance(rng, 0.15))
      o << " math=1";
    blockOpt("block-q");
    blockOpt("block-kv");
    if (chance(rng, 0.5))
      o << " kv-splits=" << pickSplits(rng);
    o << " parallelism=" << pickOf(rng, {1, 2, 16, 1000});
    if (chance(rng, 0.3))
      o << " parallel=0";
  } else if (stage == "nvvm") {
    o << " chip=" << pickOf(rng, {"sm_80", "sm_90", "sm_90a"});
    if (chance(rng, 0.5))
      o << " tensor-cores=1";
    blockOpt("block-q");
    blockOpt("block-kv");
    if (chance(rng, 0.3))
      o << " warps=" << pickOf(rng, {0, 4, 8, 3, 16});
    if (chance(rng, 0.3))
      o << " stages=" << pickOf(rng, {0, 2, 3, 4, 5, 1});
    if (chance(rng, 0.3))
      o << " row-tiles=" << pickOf(rng, {0, 1, 2, 3});
    if (chance(rng, 0.3))
      o << " kv-splits=" << pickSplits(rng);
  } else if (stage == "spirv") {
    o << " variant="
      << pickOf(rng, {"portable", "portable", "portable",
                                         "tiled", "coopmat", "coopmat-scalar"});
    blockOpt("block-q");
    blockOpt("block-kv");
    if (chance(rng, 0.4))
      o << " subgroup-size=" << pickOf(rng, {0, 8, 16, 32, 64, 24, 1});
    if (chance(rng, 0.3))
      o << " shared-memory-bytes="
        << pickOf(rng, {32768, 16384, 1024, 0, 65536, 49152});
    if (chance(rng, 0.3))
      o << " max-loop-iterations=" << pickOf(rng, {65535, 100, 0, 1});
    if (chance(rng, 0.3))
      o << " max-dynamic-extent=" << pickOf(rng, {16384, 0, 1, 65535});
    if (chance(rng, 0.2))
      o << " f16=0";
    if (chance(rng, 0.2))
      o << " int16=0";
    if (chance(rng, 0.3))
      o << " kv-splits=" << pickSplits(rng);
  } else if (stage == "translate") {
    // attn-translate's own flags (tools/attn-translate).
    switch (below(rng, 3)) {
    case 0:
      o << "--attn-to-llvmir";
      if (chance(rng, 0.2))
        o << " --math";
      if (chance(rng, 0.4))
        o << " --block-q=" << pickBlock(rng);
      if (chance(rng, 0.4))
        o << " --block-kv=" << pickBlock(rng);
      break;
    case 1:
      o << "--attn-to-ptx --chip="
        << pickOf(rng, {"sm_80", "sm_90", "sm_90a"});
      if (chance(rng, 0.5))
        o << " --tensor-cores";
      if (chance(rng, 0.3))
        o << " --block-kv=" << pickOf(rng, {16, 32, 64, 7, 0});
      if (chance(rng, 0.3))
        o << " --kv-splits=" << pickOf(rng, {0, 1, 2, 5, 64});
      break;
    default:
      o << "--attn-to-spirv --variant="
        << pickOf(rng, {"portable", "portable", "coopmat",
                                           "coopmat-scalar"});
      if (chance(rng, 0.5))
        o << " --subgroup-size=" << pickOf(rng, {8, 16, 32, 0});
      if (chance(rng, 0.3))
        o << " --kv-splits=" << pickOf(rng, {1, 2, 3, 64});
      break;
    }
  }
  std::string s = o.str();
  return s.empty() || s[0] != ' ' ? s : s.substr(1);
}

// --- The child side --------------------------------------------------------

/// One line describing the attn.sdpa ops of a parsed module: what the
/// known-failure patterns and a reader of the report match on.
std::string describeModule(ModuleOp module) {
  std::ostringstream os;
  int count = 0;
  module.walk([&](mlir::attn::SdpaOp op) {
    if (count++)
      os << " |";
    auto dims = [](Type t) {
      std::vector<int64_t> d;
      if (auto r = dyn_cast<RankedTensorType>(t))
        for (int64_t x : r.getShape())
          d.push_back(ShapedType::isDynamic(x) ? kDynamic : x);
      return d;
    };
    auto q = dims(op.getQuery().getType()), k = dims(op.getKey().getType()),
         v = dims(op.getValue().getType());
    auto at = [](const std::vector<int64_t> &d, size_t i) {
      return i < d.size() ? dimText(d[i]) : std::string("-");
    };
    std::string et;
    llvm::raw_string_ostream ets(et);
    ets << cast<ShapedType>(op.getQuery().getType()).getElementType();
    os << " sdpa dtype=" << et << " b=" << at(q, 0) << " hq=" << at(q, 1)
       << " hkv=" << at(k, 1) << " sq=" << at(q, 2) << " skv=" << at(k, 2)
       << " d=" << at(q, 3) << " dv=" << at(v, 3);
    if (Value m = op.getMask()) {
      auto md = dims(m.getType());
      std::string mt;
      llvm::raw_string_ostream mts(mt);
      mts << cast<ShapedType>(m.getType()).getElementType();
      os << " mask=" << mt << "[" << at(md, 0) << "," << at(md, 1) << "]";
    } else {
      os << " mask=none";
    }
    os << " causal=" << (op.getCausal() ? 1 : 0);
    if (auto s = op.getScaleAttr())
      os << " scale=" << s.getValueAsDouble();
    if (auto p = op.getDropoutPAttr())
      os << " dropout=" << p.getValueAsDouble();
    os << " lse=" << (op.getLse() ? 1 : 0);
    if (auto t = op.getTilingAttr())
      os << " tiling=" << t.getBlockQ() << "," << t.getBlockKv() << ","
         << t.getKvSplits();
  });
  if (!count)
    os << " sdpa=none";
  // The form: tensors, or memrefs (dense or strided) in the DPS form.
  std::string form = "tensor";
  module.walk([&](func::FuncOp f) {
    for (Type t : f.getArgumentTypes())
      if (auto m = dyn_cast<MemRefType>(t))
        form = m.getLayout().isIdentity() ? "dense" : "strided";
  });
  os << " form=" << form;
  return os.str();
}

/// Runs the pass manager; a failed conversion of verifier-valid IR is an
/// internal error (it should have been refused up front with a reason).
int runPasses(PassManager &pm, ModuleOp module, const std::string &diags) {
  if (succeeded(pm.run(module)))
    return kAccepted;
  return diags.find("failed to legalize") != std::string::npos ? kInternalError
                                                               : kRefused;
}

template <typename Options>
std::unique_ptr<Options> parseOptions(const std::string &text) {
  return Options::createFromString(text);
}

} // namespace

Case generateIRCase(Rng &rng, const std::string &stage, bool mutate,
                    const Corpus &corpus) {
  Case c;
  c.stage = stage;
  c.origin = "gen";
  // The GPU pipelines take the destination-passing form; the others the
  // tensor form (the spirv pipeline refuses a tensor-level function).
  bool dps = stage == "nvvm" || stage == "spirv" ||
             (stage == "parse" && chance(rng, 0.3));
  c.text = printSdpa(generateSdpa(rng, dps));
  if (mutate) {
    if (!corpus.entries.empty() && chance(rng, 0.5)) {
      const auto &e = corpus.entries[below(rng, corpus.entries.size())];
      c.text = e.second;
      c.origin = "corpus:" + e.first;
    }
    c.text = mutateBytes(rng, c.text);
    c.origin = "mutate:" + c.origin;
  }
  c.options = generateOptions(rng, stage);
  return c;
}

std::vector<std::string> translateArguments(const Case &c,
                                            const std::string &inputPath,
                                            const std::string &outputPrefix) {
  std::vector<std::string> args;
  std::istringstream is(c.options);
  for (std::string a; is >> a;)
    args.push_back(a);
  std::string ext = c.options.find("--attn-to-spirv") != std::string::npos ? ".spv"
                    : c.options.find("--attn-to-ptx") != std::string::npos ? ".ptx"
                                                                           : ".ll";
  args.push_back(inputPath);
  args.push_back("-o");
  args.push_back(outputPrefix + ext);
  return args;
}

std::string reproduceCommand(const Case &c, const std::string &path) {
  auto quoted = [](const std::string &s) { return "\"" + s + "\""; };
  if (c.stage == "parse")
    return "attn-opt " + path + " && attn-opt " + path +
           " --mlir-print-op-generic | attn-opt";
  if (c.stage == "tile")
    return "attn-opt " + path + " --attn-tile-sdpa=" + quoted(c.options);
  if (c.stage == "decompose")
    return "attn-opt " + path + " --attn-tile-sdpa=" + quoted(c.options) +
           " --attn-decompose-online-attention";
  if (c.stage == "cpu")
    return "attn-opt " + path + " --attn-to-cpu-pipeline=" + quoted(c.options) +
           " | attn-translate --mlir-to-llvmir";
  if (c.stage == "nvvm")
    return "attn-opt " + path + " --attn-to-nvvm-pipeline=" + quoted(c.options);
  if (c.stage == "spirv")
    return "attn-opt " + path + " --attn-to-spirv-pipeline=" +
           quoted(c.options) + " | attn-translate --attn-to-spirv -o out.spv";
  if (c.stage == "translate")
    return "attn-translate " + c.options + " " + path + " -o out";
  return "";
}

int runIRCase(const Case &c) {
  DialectRegistry registry;
  mlir::attn::registerAllDialects(registry);
  registerAllToLLVMIRTranslations(registry);
  MLIRContext context(registry);
  // One thread per child: the driver runs --jobs children side by side.
  context.disableMultithreading();

  // Diagnostics go to stderr (the report shows them) and are kept, to tell
  // a legalization failure from a refusal.
  std::string diags;
  llvm::raw_string_ostream diagStream(diags);
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    std::string line;
    llvm::raw_string_ostream ls(line);
    ls << d.getLocation() << ": " << d << "\n";
    diagStream << line;
    llvm::errs() << line;
    return success();
  });

  describe("input=" + c.origin);
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(c.text, ParserConfig(&context), "case");
  if (!module)
    return kRefused;
  describe(describeModule(*module));

  if (c.stage == "parse") {
    // The printer's output (custom and generic) must parse back and verify.
    for (bool generic : {false, true}) {
      std::string printed;
      llvm::raw_string_ostream ps(printed);
      OpPrintingFlags flags;
      if (generic)
        flags.printGenericOpForm();
      module->print(ps, flags);
      if (!parseSourceString<ModuleOp>(printed, ParserConfig(&context))) {
        llvm::errs() << "attn-fuzz: the printed " << (generic ? "generic" : "custom")
                     << " form does not parse back:\n"
                     << printed << "\n";
        return kRoundTrip;
      }
    }
    return kAccepted;
  }

  PassManager pm(&context);
  std::string error;
  llvm::raw_string_ostream errorStream(error);
  if (c.stage == "tile" || c.stage == "decompose") {
    std::string pipeline = "builtin.module(attn-tile-sdpa{" + c.options + "}";
    if (c.stage == "decompose")
      pipeline += ",attn-decompose-online-attention";
    pipeline += ")";
    if (failed(parsePassPipeline(pipeline, pm, errorStream))) {
      llvm::errs() << error << "\n";
      return kRefused;
    }
    return runPasses(pm, *module, diags);
  }
  if (c.stage == "cpu") {
    auto options = parseOptions<mlir::attn::AttnToCPUPipelineOptions>(c.options);
    if (!options)
      return kRefused;
    mlir::attn::buildAttnToCPUPipeline(pm, *options);
    if (int rc = runPasses(pm, *module, diags))
      return rc;
    llvm::LLVMContext llvmContext;
    auto llvmModule = translateModuleToLLVMIR(*module, llvmContext);
    if (!llvmModule)
      return kRefused;
    llvm::raw_null_ostream sink;
    llvmModule->print(sink, nullptr);
    return kAccepted;
  }
  if (c.stage == "nvvm") {
    auto options = parseOptions<mlir::attn::AttnToNVVMPipelineOptions>(c.options);
    if (!options)
      return kRefused;
    mlir::attn::buildAttnToNVVMPipeline(pm, *options);
    return runPasses(pm, *module, diags);
  }
  if (c.stage == "spirv") {
    auto options = parseOptions<mlir::attn::AttnToSPIRVPipelineOptions>(c.options);
    if (!options)
      return kRefused;
    if (failed(mlir::attn::buildAttnToSPIRVPipeline(pm, *options, error))) {
      llvm::errs() << error << "\n";
      return kRefused;
    }
    if (int rc = runPasses(pm, *module, diags))
      return rc;
    mlir::attn::SPIRVKernelArtifact artifact;
    if (failed(mlir::attn::extractSPIRVKernel(*module, artifact, error))) {
      llvm::errs() << error << "\n";
      return kRefused;
    }
    return kAccepted;
  }
  llvm::errs() << "attn-fuzz: unknown IR stage '" << c.stage << "'\n";
  return kUsage;
}

} // namespace attn_fuzz
