//===- KernelMetadata.cpp - CUDA artifact metadata: JSON, grid, parameters -===//
#include "attn/runtime/CudaKernel.h"
#include "attn/runtime/KeyChunks.h"

#include "../Internal.h"
#include "../Json.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

using namespace attn;
using namespace attn::cuda;
using namespace attn::json;

namespace {


//===--- Names ---===//

const char *extentName(Extent e) {
  switch (e) {
  case Extent::One: return "1";
  case Extent::B: return "B";
  case Extent::Hq: return "Hq";
  case Extent::Sq: return "Sq";
  case Extent::Skv: return "Skv";
  case Extent::Hkv: return "Hkv";
  case Extent::Group: return "Group";
  }
  return "1";
}
const char *fieldName(ParamField f) {
  switch (f) {
  case ParamField::Data: return "data";
  case ParamField::Offset: return "offset";
  case ParamField::Size: return "size";
  case ParamField::Stride: return "stride";
  case ParamField::Seed: return "seed";
  }
  return "data";
}
const char *typeName(ParamType t) {
  switch (t) {
  case ParamType::Ptr: return "ptr";
  case ParamType::I64: return "i64";
  case ParamType::I32: return "i32";
  }
  return "ptr";
}
const std::pair<const char *, Extent> kExtents[] = {
    {"1", Extent::One}, {"B", Extent::B}, {"Hq", Extent::Hq},
    {"Sq", Extent::Sq}, {"Skv", Extent::Skv}, {"Hkv", Extent::Hkv},
    {"Group", Extent::Group}};
const std::pair<const char *, ParamField> kFields[] = {
    {"data", ParamField::Data},     {"offset", ParamField::Offset},
    {"size", ParamField::Size},     {"stride", ParamField::Stride},
    {"seed", ParamField::Seed}};
const std::pair<const char *, ParamType> kTypes[] = {
    {"ptr", ParamType::Ptr}, {"i64", ParamType::I64}, {"i32", ParamType::I32}};
const char *const kTensors[] = {"q", "k", "v", "mask", "out", "lse"};

int64_t extentOf(Extent e, const KernelArgs &a) {
  switch (e) {
  case Extent::One: return 1;
  case Extent::B: return a.q.shape[0];
  case Extent::Hq: return a.q.shape[1];
  case Extent::Sq: return a.q.shape[2];
  case Extent::Skv: return a.k.shape[2];
  case Extent::Hkv: return a.k.shape[1];
  case Extent::Group:
    return a.k.shape[1] > 0 ? a.q.shape[1] / a.k.shape[1] : 0;
  }
  return 1;
}

const TensorView *tensorOf(const std::string &name, const KernelArgs &a) {
  if (name == "q") return &a.q;
  if (name == "k") return &a.k;
  if (name == "v") return &a.v;
  if (name == "mask") return &a.mask;
  if (name == "out") return &a.out;
  if (name == "lse") return &a.lse;
  return nullptr;
}

bool isLaunchTensor(const std::string &name) {
  for (const char *t : kTensors)
    if (name == t)
      return true;
  return false;
}

/// "[2, 16]", "[17, inf)": an Sq range for messages.
std::string rangeText(int64_t lo, int64_t hi) {
  return "[" + std::to_string(lo) + ", " +
         (hi == LaunchCondition::kUnbounded ? std::string("inf)")
                                            : std::to_string(hi) + "]");
}

/// The alternatives of `m` (kernels with the same Sq range form one)
/// partition the launches: their Sq ranges neither overlap nor leave a gap
/// over the Sq the spec admits (every Sq >= 1 when dynamic).
bool checkAlternatives(const KernelMetadata &m, std::string &error) {
  // The first kernel of each distinct Sq range.
  std::vector<size_t> firsts;
  for (size_t i = 0; i < m.kernels.size(); ++i) {
    bool known = false;
    for (size_t f : firsts)
      known |= m.kernels[f].when.sameSq(m.kernels[i].when);
    if (!known)
      firsts.push_back(i);
  }
  auto describe = [&](size_t i) {
    return "kernels[" + std::to_string(i) + "] ('" + m.kernels[i].when.str() +
           "')";
  };
  for (size_t a = 0; a < firsts.size(); ++a)
    for (size_t b = a + 1; b < firsts.size(); ++b) {
      const LaunchCondition &x = m.kernels[firsts[a]].when,
                            &y = m.kernels[firsts[b]].when;
      int64_t lo = std::max(x.sqMin, y.sqMin), hi = std::min(x.sqMax, y.sqMax);
      if (lo <= hi) {
        error = "metadata: " + describe(firsts[a]) + " and " +
                describe(firsts[b]) + " overlap at Sq = " + std::to_string(lo) +
                ": they are alternatives (different Sq ranges), so a launch "
                "would run both; the Sq ranges of the alternatives must be "
                "disjoint";
        return false;
      }
    }
  // Coverage, in increasing Sq.
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (size_t f : firsts)
    ranges.push_back({m.kernels[f].when.sqMin, m.kernels[f].when.sqMax});
  std::sort(ranges.begin(), ranges.end());
  std::string covered;
  for (auto [lo, hi] : ranges)
    covered += (covered.empty() ? "" : ", ") + rangeText(lo, hi);
  auto gap = [&](int64_t lo, int64_t hi) {
    error = "metadata: no kernel runs when Sq is in " + rangeText(lo, hi) +
            " (the kernels' Sq ranges are " + covered +
            "); the alternatives must cover every query length the spec "
            "admits";
    return false;
  };
  if (m.spec.seq_q != ATTN_DYNAMIC) {
    bool any = false;
    for (auto [lo, hi] : ranges)
      any |= lo <= m.spec.seq_q && m.spec.seq_q <= hi;
    if (!any)
      return gap(m.spec.seq_q, m.spec.seq_q);
  } else {
    int64_t next = 1; // the least Sq not yet covered
    for (auto [lo, hi] : ranges) {
      if (lo > next)
        return gap(next, lo - 1);
      if (hi == LaunchCondition::kUnbounded)
        return true;
      next = std::max(next, hi + 1);
    }
    return gap(next, LaunchCondition::kUnbounded);
  }
  return true;
}

/// Whether, in the alternative of kernel `first` (the kernels with its Sq
/// range), some kernel runs at split count `splits`.
bool alternativeRuns(const KernelMetadata &m, size_t first, int64_t splits) {
  for (const Kernel &k : m.kernels)
    if (k.when.sameSq(m.kernels[first].when) && k.when.holdsForSplits(splits))
      return true;
  return false;
}

int findWorkspace(const KernelMetadata &m, const std::string &name) {
  for (size_t i = 0; i < m.workspaces.size(); ++i)
    if (m.workspaces[i].name == name)
      return static_cast<int>(i);
  return -1;
}

/// A workspace dimension's extent for a launch with `splits` splits.
int64_t workspaceExtent(const WorkspaceDim &d, const KernelArgs &a,
                        int64_t splits) {
  return d.kind == WorkspaceDim::Kind::Extent ? extentOf(d.extent, a)
         : d.kind == WorkspaceDim::Kind::Splits ? splits
                                                : d.value;
}

/// A workspace's extents for a launch with `splits` splits.
std::vector<int64_t> workspaceShape(const Workspace &w, const KernelArgs &a,
                                    int64_t splits) {
  std::vector<int64_t> shape;
  shape.reserve(w.shape.size());
  for (const WorkspaceDim &d : w.shape)
    shape.push_back(workspaceExtent(d, a, splits));
  return shape;
}

std::string dimName(const WorkspaceDim &d) {
  switch (d.kind) {
  case WorkspaceDim::Kind::Extent: return extentName(d.extent);
  case WorkspaceDim::Kind::Splits: return "splits";
  case WorkspaceDim::Kind::Constant: return std::to_string(d.value);
  }
  return "";
}

std::string list(const std::vector<int64_t> &v) {
  std::string s;
  for (int64_t x : v)
    s += (s.empty() ? "" : ", ") + std::to_string(x);
  return "[" + s + "]";
}

/// "kernels[1]" -> "kernels[1]: " for Fields, "kernels[1].grid[0]" for a
/// nested key; a version 1 kernel (the top level) has an empty path.
std::string fieldsWhere(const std::string &path) {
  return path.empty() ? "" : path + ": ";
}
std::string nested(const std::string &path, const std::string &key) {
  return path.empty() ? key : path + "." + key;
}

bool parseKvSplits(const Json &root, KvSplits &out, std::string &error) {
  out = KvSplits();
  Fields top(root, "", error);
  if (!top.has("kv_splits"))
    return true;
  const Json *k = top.need("kv_splits", Json::Object, "an object");
  if (!k)
    return false;
  Fields f(*k, "kv_splits: ", error);
  return f.integer("block_q", out.blockQ, 1, INT32_MAX) &&
         f.integer("block_kv", out.blockKv, 1, INT32_MAX) &&
         f.integer("max", out.max, 1, INT32_MAX);
}

bool parseWorkspaces(const Json &root, bool splits,
                     std::vector<Workspace> &out, std::string &error) {
  out.clear();
  Fields top(root, "", error);
  if (!top.has("workspace"))
    return true;
  const Json *array = top.need("workspace", Json::Array, "an array");
  if (!array)
    return false;
  for (size_t i = 0; i < array->items.size(); ++i) {
    const Json &wj = array->items[i];
    std::string path = "workspace[" + std::to_string(i) + "]";
    if (wj.kind != Json::Object) {
      error = "metadata: " + path + " must be an object";
      return false;
    }
    Fields f(wj, path + ": ", error);
    Workspace w;
    if (!f.str("name", w.name))
      return false;
    bool wellFormed = !w.name.empty();
    for (char c : w.name)
      wellFormed &= std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    if (!wellFormed) {
      error = "metadata: " + path + ": 'name' is '" + w.name +
              "'; it must be non-empty and made of A-Z, a-z, 0-9 and _";
      return false;
    }
    if (isLaunchTensor(w.name)) {
      error = "metadata: " + path + ": 'name' is '" + w.name +
              "', which is a launch tensor (q, k, v, mask, out, lse)";
      return false;
    }
    for (size_t j = 0; j < out.size(); ++j)
      if (out[j].name == w.name) {
        error = "metadata: " + path + ": 'name' is '" + w.name +
                "', which workspace[" + std::to_string(j) + "] already has";
        return false;
      }
    const Json *shape = f.need("shape", Json::Array, "an array");
    if (!shape)
      return false;
    if (shape->items.empty() || shape->items.size() > 6) {
      error = "metadata: " + path + ": 'shape' has " +
              std::to_string(shape->items.size()) +
              " entries; expected 1 to 6";
      return false;
    }
    for (size_t d = 0; d < shape->items.size(); ++d) {
      const Json &e = shape->items[d];
      std::string where = "metadata: " + path + ".shape[" + std::to_string(d) +
                          "]: ";
      const char *expected =
          "; expected B, Hq, Sq, Skv, splits or a positive integer";
      WorkspaceDim dim;
      if (e.kind == Json::String) {
        Extent x;
        if (e.str == "splits") {
          if (!splits) {
            error = where + "is \"splits\", but the metadata has no "
                            "'kv_splits' (the split count is always 1)";
            return false;
          }
          dim = WorkspaceDim::splits();
        } else if (e.str != "1" && lookup(e.str, kExtents, x)) {
          dim = WorkspaceDim::of(x);
        } else {
          error = where + "'" + e.str + "' is not an extent" + expected;
          return false;
        }
      } else if (e.kind == Json::Number && e.integral && e.integer >= 1 &&
                 e.integer <= INT32_MAX) {
        dim = WorkspaceDim::constant(e.integer);
      } else if (e.kind == Json::Number) {
        error = where + number(e.num) + " is not a positive integer (at most " +
                std::to_string(INT32_MAX) + ")" + expected;
        return false;
      } else {
        error = where + "must be a string or an integer" + expected;
        return false;
      }
      w.shape.push_back(dim);
    }
    int64_t bytes = 0;
    if (!f.integer("element_bytes", bytes, 1, 8))
      return false;
    if (bytes & (bytes - 1)) {
      error = "metadata: " + path + ": 'element_bytes' is " +
              std::to_string(bytes) + "; expected 1, 2, 4 or 8";
      return false;
    }
    w.elementBytes = static_cast<unsigned>(bytes);
    out.push_back(std::move(w));
  }
  return true;
}

/// One kernel: the object at `path` (the top level for version 1). Tensor
/// names are checked against the launch tensors and `m.workspaces`.
bool parseKernel(const Json &obj, const std::string &path,
                 const KernelMetadata &m, Kernel &k, std::string &error) {
  Fields top(obj, fieldsWhere(path), error);
  std::string prefix = "metadata: " + fieldsWhere(path);
  if (!top.str("entry", k.entry))
    return false;
  if (k.entry.empty()) {
    error = prefix + "'entry' must not be empty";
    return false;
  }

  const Json *grid = top.need("grid", Json::Array, "an array of 3 objects");
  if (!grid)
    return false;
  if (grid->items.size() != 3) {
    error = prefix + "'grid' has " + std::to_string(grid->items.size()) +
            " entries; expected 3 (x, y, z)";
    return false;
  }
  for (int i = 0; i < 3; ++i) {
    const Json &g = grid->items[i];
    std::string gpath = nested(path, "grid[" + std::to_string(i) + "]");
    if (g.kind != Json::Object) {
      error = "metadata: " + gpath + ": must be an object";
      return false;
    }
    Fields f(g, gpath + ": ", error);
    GridDim &d = k.grid[i];
    if (!f.name("of", kExtents, d.of) ||
        !f.integer("ceildiv", d.ceildiv, 1, INT32_MAX))
      return false;
    // A constant factor, or the split count chosen at launch.
    const Json *times = g.get("times");
    d.times = 1;
    d.timesSplits = false;
    if (times && times->kind == Json::String) {
      if (times->str != "splits") {
        error = "metadata: " + gpath + ": 'times' is '" + times->str +
                "'; expected a positive integer or \"splits\"";
        return false;
      }
      if (m.kvSplits.max == 0) {
        error = "metadata: " + gpath +
                ": 'times' is \"splits\", but the metadata has no "
                "'kv_splits' (the split count is always 1)";
        return false;
      }
      d.timesSplits = true;
    } else if (times && times->kind != Json::Number) {
      error = "metadata: " + gpath +
              ": 'times' must be a positive integer or \"splits\"";
      return false;
    } else if (!f.integer("times", d.times, 1, INT32_MAX)) {
      return false;
    }
  }

  const Json *block = top.need("block", Json::Array, "an array of 3 integers");
  if (!block)
    return false;
  if (block->items.size() != 3) {
    error = prefix + "'block' must have 3 entries (x, y, z)";
    return false;
  }
  int64_t threads = 1;
  for (int i = 0; i < 3; ++i) {
    const Json &b = block->items[i];
    if (b.kind != Json::Number || !b.integral || b.integer < 1 ||
        b.integer > 1024) {
      error = "metadata: " + nested(path, "block[" + std::to_string(i) + "]") +
              " must be an integer in [1, 1024]";
      return false;
    }
    k.block[i] = static_cast<unsigned>(b.integer);
    threads *= b.integer;
  }
  if (threads > 1024) {
    error = prefix + "the block has " + std::to_string(threads) +
            " threads; CUDA allows at most 1024";
    return false;
  }
  int64_t shared = 0;
  // 227 KB is the most any current GPU grants one block (sm_90).
  if (!top.integer("shared_bytes", shared, 0, 227 * 1024))
    return false;
  k.sharedBytes = static_cast<unsigned>(shared);

  const Json *params = top.need("params", Json::Array, "an array");
  if (!params)
    return false;
  k.params.clear();
  for (size_t i = 0; i < params->items.size(); ++i) {
    const Json &pj = params->items[i];
    std::string ppath = nested(path, "params[" + std::to_string(i) + "]");
    if (pj.kind != Json::Object) {
      error = "metadata: " + ppath + ": must be an object";
      return false;
    }
    Fields f(pj, ppath + ": ", error);
    Param p;
    if (!f.name("field", kFields, p.field) || !f.name("type", kTypes, p.type))
      return false;
    int workspace = -1;
    if (p.field != ParamField::Seed) {
      if (!f.str("tensor", p.tensor))
        return false;
      workspace = findWorkspace(m, p.tensor);
      if (!isLaunchTensor(p.tensor) && workspace < 0) {
        std::string names;
        for (const Workspace &w : m.workspaces)
          names += (names.empty() ? "" : ", ") + w.name;
        error = "metadata: " + ppath + ": 'tensor' is '" + p.tensor +
                "'; expected q, k, v, mask, out" +
                (names.empty() ? std::string(" or lse")
                               : ", lse or a workspace (" + names + ")");
        return false;
      }
    }
    if (p.field == ParamField::Size || p.field == ParamField::Stride) {
      int64_t rank = workspace >= 0 ? static_cast<int64_t>(
                                          m.workspaces[workspace].shape.size())
                     : p.tensor == "lse" ? 3
                                         : 4;
      int64_t dim = 0;
      if (!f.integer("dim", dim, 0, rank - 1))
        return false;
      p.dim = static_cast<int>(dim);
    }
    bool pointer = p.field == ParamField::Data;
    if (pointer != (p.type == ParamType::Ptr)) {
      error = "metadata: " + ppath + ": a '" + fieldName(p.field) +
              "' parameter must have type " +
              (pointer ? "'ptr'" : "'i64' or 'i32'");
      return false;
    }
    k.params.push_back(p);
  }
  return true;
}

void writeKernel(std::ostream &os, const Kernel &k) {
  os << "    {\n      \"entry\": " << quote(k.entry) << ",\n      \"when\": "
     << quote(k.when.str()) << ",\n";
  if (k.blockKv > 0)
    os << "      \"block_kv\": " << k.blockKv << ",\n";
  os << "      \"grid\": [";
  for (int i = 0; i < 3; ++i) {
    os << (i ? ", " : "") << "{\"of\": \"" << extentName(k.grid[i].of)
       << "\", \"ceildiv\": " << k.grid[i].ceildiv << ", \"times\": ";
    if (k.grid[i].timesSplits)
      os << "\"splits\"";
    else
      os << k.grid[i].times;
    os << "}";
  }
  os << "],\n      \"block\": [" << k.block[0] << ", " << k.block[1] << ", "
     << k.block[2] << "],\n      \"shared_bytes\": " << k.sharedBytes
     << ",\n      \"params\": [";
  for (size_t i = 0; i < k.params.size(); ++i) {
    const Param &p = k.params[i];
    os << (i ? ",\n        " : "\n        ") << "{\"field\": \""
       << fieldName(p.field) << "\"";
    if (p.field != ParamField::Seed)
      os << ", \"tensor\": " << quote(p.tensor);
    if (p.field == ParamField::Size || p.field == ParamField::Stride)
      os << ", \"dim\": " << p.dim;
    os << ", \"type\": \"" << typeName(p.type) << "\"}";
  }
  os << "\n      ]\n    }";
}

/// Whether `ptx` declares `.entry name`: the name must end there, since
/// "k_kernel" is a prefix of "k_kernel_0" (a split artifact's merge kernel).
bool hasPtxEntry(const std::string &ptx, const std::string &name) {
  for (const char *directive : {".entry ", ".entry\t"}) {
    std::string needle = directive + name;
    for (size_t at = ptx.find(needle); at != std::string::npos;
         at = ptx.find(needle, at + 1)) {
      size_t end = at + needle.size();
      if (end == ptx.size())
        return true;
      char c = ptx[end];
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '$')
        return true;
    }
  }
  return false;
}

// Workspaces larger than this are a metadata or shape bug, not a request.
constexpr uint64_t kMaxWorkspaceBytes = uint64_t(1) << 40;
// cudaMalloc's alignment; every workspace starts on such a boundary.
constexpr uint64_t kWorkspaceAlignment = 256;
} // namespace

std::string cuda::writeMetadata(const KernelMetadata &m) {
  std::ostringstream os;
  os << "{\n  \"format\": \"attn-cuda-kernel\",\n  \"version\": 3,\n"
     << "  \"binary\": " << quote(m.binaryFile) << ",\n"
     << "  \"binary_format\": \"" << (m.format == BinaryFormat::PTX ? "ptx" : "cubin")
     << "\",\n  \"chip\": " << quote(m.chip) << ",\n  \"align_bytes\": "
     << m.alignBytes << ",\n";
  if (m.kvSplits.max > 0)
    os << "  \"kv_splits\": {\"block_q\": " << m.kvSplits.blockQ
       << ", \"block_kv\": " << m.kvSplits.blockKv
       << ", \"max\": " << m.kvSplits.max << "},\n";
  os << "  \"workspace\": [";
  for (size_t i = 0; i < m.workspaces.size(); ++i) {
    const Workspace &w = m.workspaces[i];
    os << (i ? ",\n    " : "\n    ") << "{\"name\": " << quote(w.name)
       << ", \"shape\": [";
    for (size_t d = 0; d < w.shape.size(); ++d) {
      os << (d ? ", " : "");
      if (w.shape[d].kind == WorkspaceDim::Kind::Constant)
        os << w.shape[d].value;
      else
        os << "\"" << dimName(w.shape[d]) << "\"";
    }
    os << "], \"element_bytes\": " << w.elementBytes << "}";
  }
  os << (m.workspaces.empty() ? "],\n" : "\n  ],\n") << "  \"kernels\": [\n";
  for (size_t i = 0; i < m.kernels.size(); ++i) {
    if (i)
      os << ",\n";
    writeKernel(os, m.kernels[i]);
  }
  os << "\n  ],\n  \"spec\": ";
  writeSpec(os, m.spec);
  os << "\n}\n";
  return os.str();
}

bool cuda::parseMetadata(const std::string &text, KernelMetadata &m,
                         std::string &error) {
  m = KernelMetadata();
  Json root;
  if (!Reader(text).parse(root, error))
    return false;
  if (root.kind != Json::Object) {
    error = "metadata: the top level must be an object";
    return false;
  }
  Fields top(root, "", error);
  std::string format, binaryFormat;
  int64_t version = 0;
  if (!top.str("format", format))
    return false;
  if (format != "attn-cuda-kernel") {
    error = "metadata: 'format' is '" + format + "'; expected 'attn-cuda-kernel'";
    return false;
  }
  if (!top.integer("version", version, 1, 3) ||
      !top.str("binary", m.binaryFile) ||
      !top.str("binary_format", binaryFormat) || !top.str("chip", m.chip))
    return false;
  if (m.binaryFile.empty()) {
    error = "metadata: 'binary' must not be empty";
    return false;
  }
  if (binaryFormat == "ptx")
    m.format = BinaryFormat::PTX;
  else if (binaryFormat == "cubin")
    m.format = BinaryFormat::Cubin;
  else {
    error = "metadata: 'binary_format' is '" + binaryFormat +
            "'; expected 'ptx' or 'cubin'";
    return false;
  }
  // Optional (artifacts written before it existed have no requirement).
  if (top.has("align_bytes")) {
    int64_t align = 0;
    if (!top.integer("align_bytes", align, 0, 256))
      return false;
    if (align & (align - 1)) {
      error = "metadata: 'align_bytes' is " + std::to_string(align) +
              "; it must be 0 or a power of two";
      return false;
    }
    m.alignBytes = static_cast<unsigned>(align);
  }

  if (version == 1) {
    // One kernel, its keys at the top level; no workspace, no split count.
    m.kernels.emplace_back();
    if (!parseKernel(root, "", m, m.kernels.back(), error))
      return false;
  } else {
    if (!parseKvSplits(root, m.kvSplits, error) ||
        !parseWorkspaces(root, m.kvSplits.max > 0, m.workspaces, error))
      return false;
    const Json *kernels = top.need("kernels", Json::Array, "an array");
    if (!kernels)
      return false;
    // Version 2: at most 4 kernels, conditions on the split count only.
    size_t most = version == 2 ? 4 : kMaxKernels;
    if (kernels->items.empty() || kernels->items.size() > most) {
      error = "metadata: 'kernels' has " +
              std::to_string(kernels->items.size()) +
              " entries; expected 1 to " + std::to_string(most);
      return false;
    }
    for (size_t i = 0; i < kernels->items.size(); ++i) {
      const Json &kj = kernels->items[i];
      std::string path = "kernels[" + std::to_string(i) + "]";
      if (kj.kind != Json::Object) {
        error = "metadata: " + path + " must be an object";
        return false;
      }
      Kernel k;
      Fields f(kj, path + ": ", error);
      if (f.has("when")) {
        std::string when, why;
        if (!f.str("when", when))
          return false;
        if (!LaunchCondition::parse(when, k.when, why)) {
          error = "metadata: " + path + ": 'when' is " + why;
          return false;
        }
        if (version == 2 && k.when.boundsSq()) {
          error = "metadata: " + path + ": 'when' is '" + when +
                  "'; version 2 knows always, split and unsplit (conditions "
                  "on Sq need version 3)";
          return false;
        }
      }
      if (version >= 3 && f.has("block_kv") &&
          !f.integer("block_kv", k.blockKv, 1, INT32_MAX))
        return false;
      if (!parseKernel(kj, path, m, k, error))
        return false;
      m.kernels.push_back(std::move(k));
    }
  }

  const Json *specJson = top.need("spec", Json::Object, "an object");
  if (!specJson)
    return false;
  attn_spec s;
  if (!parseSpec(*specJson, s, error))
    return false;
  std::string specError;
  if (!detail::validateSpec(s, ATTN_TARGET_CUDA, m.spec, specError)) {
    error = "metadata: the spec is invalid: " + specError;
    return false;
  }
  // Every tensor a parameter names must exist for this spec.
  for (size_t i = 0; i < m.kernels.size(); ++i) {
    std::string prefix =
        "metadata: " + (version == 1 ? std::string()
                                     : "kernels[" + std::to_string(i) + "]: ");
    for (const Param &p : m.kernels[i].params) {
      if ((p.tensor == "mask" && m.spec.mask == ATTN_MASK_NONE) ||
          (p.tensor == "lse" && !m.spec.return_lse)) {
        error = prefix + "a parameter reads '" + p.tensor +
                "', which the spec does not have";
        return false;
      }
      if (p.field == ParamField::Seed && m.spec.dropout_p == 0.0) {
        error = prefix + "a parameter is the dropout seed, but the spec has "
                         "no dropout";
        return false;
      }
    }
  }
  return checkLaunchConditions(m, error);
}

bool cuda::checkLaunchConditions(const KernelMetadata &m, std::string &error) {
  for (size_t i = 0; i < m.kernels.size(); ++i)
    if (m.kernels[i].when.splits != LaunchCondition::Splits::Any &&
        m.kvSplits.max == 0) {
      error = "metadata: kernels[" + std::to_string(i) + "]: 'when' is '" +
              m.kernels[i].when.str() +
              "', but the metadata has no 'kv_splits' (the split count is "
              "always 1)";
      return false;
    }
  // Whatever the launch's Sq, one alternative runs; whatever its split
  // count, something of that alternative computes the result.
  if (!checkAlternatives(m, error))
    return false;
  for (size_t i = 0; i < m.kernels.size(); ++i) {
    bool first = true;
    for (size_t j = 0; j < i; ++j)
      first &= !m.kernels[j].when.sameSq(m.kernels[i].when);
    if (!first)
      continue;
    for (int64_t splits : {int64_t(1), int64_t(2)}) {
      if (splits > 1 && m.kvSplits.max == 0)
        continue;
      if (!alternativeRuns(m, i, splits)) {
        const LaunchCondition &c = m.kernels[i].when;
        error = std::string("metadata: no kernel runs when the split count ") +
                (splits == 1 ? "is 1" : "is above 1") +
                (c.boundsSq() ? " and Sq is in " + rangeText(c.sqMin, c.sqMax)
                              : std::string()) +
                " ('when' of every kernel excludes it)";
        return false;
      }
    }
  }
  return true;
}

int cuda::firstKernelFor(const KernelMetadata &m, int64_t sq) {
  for (size_t i = 0; i < m.kernels.size(); ++i)
    if (m.kernels[i].when.holdsForSq(sq))
      return static_cast<int>(i);
  return -1;
}

int64_t cuda::chooseKvSplits(const KernelMetadata &m, const KernelArgs &a,
                             int smCount) {
  const KvSplits &ks = m.kvSplits;
  // The alternative this launch's Sq selects: its first kernel's grid and
  // key blocks.
  int first = firstKernelFor(m, a.q.shape[2]);
  if (first < 0)
    return 1;
  const Kernel &lead = m.kernels[first];
  int64_t blockKv = lead.blockKv > 0 ? lead.blockKv : ks.blockKv;
  int64_t skv = a.k.shape[2];
  // Never fewer chunks than keep each within kMaxChunkKeys keys (accurate
  // f32 sums, KeyChunks.h); 0 where the kernels cannot take that many.
  const int64_t floor = ::attn::minKvSplits(skv, blockKv > 0 ? blockKv : 1);
  if (ks.max <= 0 || blockKv <= 0)
    return floor > 1 ? 0 : 1;
  if (floor > ks.max)
    return 0;
  int64_t blocks = skv > 0 ? (skv - 1) / blockKv + 1 : 0;
  if (blocks <= 1)
    return 1;
  auto clamp = [&](int64_t n) {
    return std::max<int64_t>(1, std::min({std::max(n, floor), ks.max, blocks}));
  };
  int64_t n;
  if (m.spec.kv_splits >= 1) {
    n = m.spec.kv_splits;
  } else {
    // Query tiles of the unsplit launch (the first kernel's grid without
    // the split factor; B x Hq x ceil(Sq / block_q) unless it packs GQA
    // groups); once they fill the GPU, splitting only adds the merge.
    if (smCount < 1)
      return clamp(1);
    int64_t tiles = 1;
    for (const GridDim &g : lead.grid) {
      int64_t e = extentOf(g.of, a);
      if (e < 1 || g.ceildiv < 1 || g.times < 1)
        return clamp(1);
      // Each factor below smCount (< 2^31) keeps the product from
      // overflowing.
      int64_t n = ((e - 1) / g.ceildiv + 1);
      if (n >= smCount || g.times >= smCount)
        return clamp(1);
      tiles *= n * (g.timesSplits ? 1 : g.times);
      if (tiles >= smCount)
        return clamp(1);
    }
    // As many splits as keep every workgroup in one wave of two per SM
    // (floor, not ceil: a count that overshoots 2 x SMs by part of a tile
    // row runs those workgroups as a second wave of whole split-lengths,
    // as long as the first; measured on the H100, Sq 256: 16 splits 0.130
    // ms, 17 0.171; bench/results/model-h100-rank-2026-11-27), each split
    // walking at least 4 key blocks (fewer would spend more on the merge
    // than they save).
    n = std::min<int64_t>({2 * int64_t(smCount) / tiles,
                           std::max<int64_t>(1, blocks / 4), kMaxAutoSplits});
  }
  return clamp(n);
}

bool cuda::computeGrid(const Kernel &k, const KernelArgs &a, int64_t splits,
                       unsigned grid[3], std::string &error) {
  static const char *axis[] = {"x", "y", "z"};
  // CUDA's limits: x up to 2^31-1, y and z up to 65535.
  const int64_t limit[] = {INT32_MAX, 65535, 65535};
  for (int i = 0; i < 3; ++i) {
    const GridDim &g = k.grid[i];
    int64_t e = extentOf(g.of, a);
    int64_t n = e > 0 ? (e - 1) / g.ceildiv + 1 : 0;
    int64_t times = g.timesSplits ? splits : g.times;
    if (n > limit[i] || (n > 0 && times > limit[i] / n)) {
      error = std::string("grid.") + axis[i] + " would exceed CUDA's limit of " +
              std::to_string(limit[i]) + " blocks";
      return false;
    }
    n *= times;
    if (n < 1) {
      error = std::string("grid.") + axis[i] + " is 0 (" + extentName(g.of) +
              " = " + std::to_string(e) +
              (g.timesSplits ? ", splits = " + std::to_string(splits) : "") +
              ")";
      return false;
    }
    grid[i] = static_cast<unsigned>(n);
  }
  // At most 2^32 - 1 workgroups for every kernel: the causal tensor-core
  // kernels number theirs in 32 bits (the linear id they map to a query
  // block, head and batch, heaviest first). No tensor that fits a GPU
  // needs more (each workgroup covers at least 16 query rows).
  uint64_t total = uint64_t(grid[0]) * grid[1] * grid[2];
  if (total > UINT32_MAX) {
    error = "the grid's " + std::to_string(grid[0]) + " x " +
            std::to_string(grid[1]) + " x " + std::to_string(grid[2]) + " = " +
            std::to_string(total) +
            " workgroups exceed 2^32 - 1, the most a kernel numbers";
    return false;
  }
  return true;
}

bool cuda::layoutWorkspaces(const KernelMetadata &m, const KernelArgs &a,
                            int64_t splits,
                            std::vector<WorkspaceLayout> &layouts,
                            uint64_t &totalBytes, std::string &error,
                            const std::vector<bool> *used) {
  layouts.clear();
  totalBytes = 0;
  for (size_t i = 0; i < m.workspaces.size(); ++i) {
    const Workspace &w = m.workspaces[i];
    WorkspaceLayout l;
    if (used && (i >= used->size() || !(*used)[i])) {
      layouts.push_back(std::move(l)); // no bytes, no place
      continue;
    }
    l.shape = workspaceShape(w, a, splits);
    uint64_t bytes = w.elementBytes;
    for (size_t d = 0; d < l.shape.size(); ++d) {
      int64_t e = l.shape[d];
      if (e < 1) {
        error = "workspace '" + w.name + "': dimension " + std::to_string(d) +
                " (" + dimName(w.shape[d]) + ") is " + std::to_string(e) +
                " for this launch";
        return false;
      }
      if (static_cast<uint64_t>(e) > kMaxWorkspaceBytes / bytes) {
        error = "workspace '" + w.name + "' (" + list(l.shape) + " x " +
                std::to_string(w.elementBytes) +
                " bytes) would exceed 2^40 bytes";
        return false;
      }
      bytes *= static_cast<uint64_t>(e);
    }
    l.bytes = bytes;
    l.offset = (totalBytes + kWorkspaceAlignment - 1) / kWorkspaceAlignment *
               kWorkspaceAlignment;
    // Each term is at most 2^40, so the sum cannot wrap before the check.
    if (l.offset + bytes > kMaxWorkspaceBytes) {
      error = "the workspaces would exceed 2^40 bytes in all (workspace '" +
              w.name + "' ends at byte " + std::to_string(l.offset + bytes) +
              ")";
      return false;
    }
    totalBytes = l.offset + bytes;
    layouts.push_back(std::move(l));
  }
  return true;
}

void PackedParams::set(size_t param, ParamType type, uint64_t value) {
  char *at = reinterpret_cast<char *>(storage.data()) + offsets[param];
  if (type == ParamType::I32) {
    uint32_t v32 = static_cast<uint32_t>(value);
    std::memcpy(at, &v32, 4);
  } else {
    std::memcpy(at, &value, 8);
  }
}

std::vector<void *> PackedParams::pointers() {
  std::vector<void *> p;
  p.reserve(offsets.size());
  for (size_t off : offsets)
    p.push_back(reinterpret_cast<char *>(storage.data()) + off);
  return p;
}

bool cuda::packParams(const KernelMetadata &m, const Kernel &k,
                      const KernelArgs &a, int64_t splits,
                      const std::vector<uint64_t> &workspacePointers,
                      PackedParams &packed, std::string &error) {
  packed.storage.clear();
  packed.offsets.clear();
  if (workspacePointers.size() != m.workspaces.size()) {
    error = "kernel '" + k.entry + "': " +
            std::to_string(workspacePointers.size()) +
            " workspace pointers for " + std::to_string(m.workspaces.size()) +
            " workspaces";
    return false;
  }
  if (m.alignBytes > 1) {
    int64_t eltBytes = dtypeBytes(m.spec.dtype);
    const std::pair<const char *, const TensorView *> qkv[] = {
        {"q", &a.q}, {"k", &a.k}, {"v", &a.v}};
    for (auto [name, t] : qkv) {
      bool ok = reinterpret_cast<uintptr_t>(t->data) % m.alignBytes == 0;
      // A dimension of extent 1 is only ever indexed at 0: its stride
      // (PyTorch gives such dimensions strides like 1) moves nothing.
      for (int i = 0; i + 1 < t->rank; ++i)
        ok &= t->shape[i] == 1 ||
              (t->strides[i] * eltBytes) % m.alignBytes == 0;
      if (!ok) {
        std::string strides;
        for (int i = 0; i < t->rank; ++i)
          strides += (i ? ", " : "") + std::to_string(t->strides[i]);
        error = "tensor '" + std::string(name) + "' (strides [" + strides +
                "]) is not " + std::to_string(m.alignBytes) +
                "-byte aligned: this kernel copies its rows in " +
                std::to_string(m.alignBytes) +
                "-byte chunks (cp.async), so the data pointer and every "
                "stride but the last (of a dimension longer than 1) must be "
                "multiples of " +
                std::to_string(m.alignBytes) +
                " bytes; pass aligned tensors, or set "
                "ATTN_CUDA_TENSOR_CORES=0 for the generic kernel";
        return false;
      }
    }
  }
  // Each value at its natural alignment, at most 8 bytes a parameter: the
  // storage is sized (zeroed) for that once and cut to what was used.
  packed.storage.assign(k.params.size(), 0);
  packed.offsets.reserve(k.params.size());
  size_t used = 0; // bytes of storage filled
  for (size_t i = 0; i < k.params.size(); ++i) {
    const Param &p = k.params[i];
    uint64_t value = 0;
    if (p.field == ParamField::Seed) {
      value = a.seed;
    } else if (int w = findWorkspace(m, p.tensor); w >= 0) {
      // Row-major and contiguous: stride(d) is the product of the later
      // sizes.
      const std::vector<WorkspaceDim> &shape = m.workspaces[w].shape;
      if ((p.field == ParamField::Size || p.field == ParamField::Stride) &&
          (p.dim < 0 || p.dim >= static_cast<int>(shape.size()))) {
        error = "parameter " + std::to_string(i) + " reads dimension " +
                std::to_string(p.dim) + " of workspace '" + p.tensor +
                "', which has " + std::to_string(shape.size());
        return false;
      }
      switch (p.field) {
      case ParamField::Data:
        value = workspacePointers[w];
        break;
      case ParamField::Offset:
        value = 0;
        break;
      case ParamField::Size:
        value = static_cast<uint64_t>(workspaceExtent(shape[p.dim], a, splits));
        break;
      case ParamField::Stride:
        value = 1;
        for (size_t d = p.dim + 1; d < shape.size(); ++d)
          value *= static_cast<uint64_t>(workspaceExtent(shape[d], a, splits));
        break;
      case ParamField::Seed:
        break;
      }
    } else {
      const TensorView *t = tensorOf(p.tensor, a);
      if (!t || (!t->data && p.field == ParamField::Data)) {
        error = "parameter " + std::to_string(i) + " reads tensor '" +
                p.tensor + "', which this launch does not have";
        return false;
      }
      switch (p.field) {
      case ParamField::Data:
        value = reinterpret_cast<uintptr_t>(t->data);
        break;
      case ParamField::Offset:
        value = 0;
        break;
      case ParamField::Size:
        value = static_cast<uint64_t>(t->shape[p.dim]);
        break;
      case ParamField::Stride:
        value = static_cast<uint64_t>(t->strides[p.dim]);
        break;
      case ParamField::Seed:
        break;
      }
    }
    if (p.type == ParamType::I32 &&
        (p.field == ParamField::Size || p.field == ParamField::Stride) &&
        static_cast<int64_t>(value) > INT32_MAX) {
      error = "parameter " + std::to_string(i) + " (" + p.tensor + " " +
              fieldName(p.field) + " " + std::to_string(p.dim) + " = " +
              std::to_string(static_cast<int64_t>(value)) +
              ") does not fit the kernel's 32-bit parameter";
      return false;
    }
    size_t size = p.type == ParamType::I32 ? 4 : 8;
    size_t off = (used + size - 1) / size * size;
    used = off + size;
    packed.offsets.push_back(off);
    packed.set(i, p.type, value);
  }
  packed.storage.resize((used + 7) / 8);
  return true;
}

bool cuda::readArtifact(const std::string &metadataPath, KernelMetadata &m,
                        std::string &binary, std::string &error) {
  auto slurp = [&](const std::string &path, std::string &out) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      error = "cannot read '" + path + "': " + std::strerror(errno);
      return false;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    out = ss.str();
    return true;
  };
  std::string text;
  if (!slurp(metadataPath, text))
    return false;
  if (!parseMetadata(text, m, error)) {
    error = metadataPath + ": " + error;
    return false;
  }
  std::string dir;
  size_t slash = metadataPath.rfind('/');
  if (slash != std::string::npos)
    dir = metadataPath.substr(0, slash + 1);
  std::string path = m.binaryFile[0] == '/' ? m.binaryFile : dir + m.binaryFile;
  if (!slurp(path, binary))
    return false;
  if (binary.empty()) {
    error = "'" + path + "' is empty";
    return false;
  }
  if (m.format == BinaryFormat::PTX) {
    for (const Kernel &k : m.kernels)
      if (!hasPtxEntry(binary, k.entry)) {
        error = "'" + path + "' has no PTX entry '" + k.entry + "'";
        return false;
      }
  } else if (binary.size() < 4 || binary.compare(0, 4, "\x7f" "ELF") != 0) {
    error = "'" + path + "' is not a cubin (no ELF header)";
    return false;
  }
  return true;
}
