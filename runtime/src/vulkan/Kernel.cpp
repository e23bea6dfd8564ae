//===- Kernel.cpp - vulkan kernels: metadata, the launch path, AOT artifacts -===//
//
// One launch path for the vulkan target, whoever compiled the kernel (the
// JIT, or attn-translate ahead of time): the host arguments in the kernel's
// order, the size expressions of dynamic shapes evaluated for the launch
// (grids, size buffers, workspaces), then the program's dispatches.
//
//===----------------------------------------------------------------------===//
#include "attn/runtime/VulkanKernel.h"
#include "attn/runtime/Checked.h"
#include "attn/runtime/attn_vulkan.h"

#include "../Internal.h"
#include "../Json.h"
#include "Buffers.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

using namespace attn;
using namespace attn::vulkan;
using namespace attn::json;

namespace {

const char *const kExprNames[] = {"const", "dim",      "add",  "sub",
                                  "mul",   "divu",     "ceildivu", "remu",
                                  "minu",  "maxu"};

/// Bytes of a workspace element type named like "f32", "i32", "bf16".
uint32_t elementBytesOf(const std::string &type) {
  size_t digits = type.find_first_of("0123456789");
  if (digits == std::string::npos || digits == 0)
    return 0;
  const std::string prefix = type.substr(0, digits);
  if (prefix != "f" && prefix != "i" && prefix != "bf" && prefix != "ui" &&
      prefix != "si")
    return 0;
  char *end = nullptr;
  unsigned long bits = std::strtoul(type.c_str() + digits, &end, 10);
  if (*end || bits == 0 || bits % 8 || bits > 64)
    return 0;
  return static_cast<uint32_t>(bits / 8);
}

/// A workgroup count or workspace extent: a number or {"expr": id}.
bool extent(const Json &v, const std::string &where, int64_t lo, int64_t hi,
            size_t exprs, int64_t &value, int &expr, std::string &error) {
  expr = -1;
  if (v.kind == Json::Object) {
    Fields f(v, where + ": ", error);
    int64_t id = 0;
    if (!f.integer("expr", id, 0, int64_t(exprs) - 1)) {
      if (exprs == 0)
        error = "metadata: " + where + " refers to a size expression, but "
                "'exprs' is empty or missing";
      return false;
    }
    expr = static_cast<int>(id);
    value = -1;
    return true;
  }
  if (v.kind != Json::Number || !v.integral || v.integer < lo ||
      v.integer > hi) {
    error = "metadata: " + where + " must be an integer in [" +
            std::to_string(lo) + ", " + std::to_string(hi) +
            "] or {\"expr\": N}";
    return false;
  }
  value = v.integer;
  return true;
}

bool parseExprs(const Json &root, KernelMetadata &m, std::string &error) {
  const Json *exprs = root.get("exprs");
  if (!exprs)
    return true;
  if (exprs->kind != Json::Array) {
    error = "metadata: 'exprs' must be an array";
    return false;
  }
  for (size_t i = 0; i < exprs->items.size(); ++i) {
    const Json &e = exprs->items[i];
    const std::string where = "exprs[" + std::to_string(i) + "]";
    if (e.kind != Json::Array || e.items.empty() ||
        e.items[0].kind != Json::String) {
      error = "metadata: " + where + " must be [\"kind\", operands...]";
      return false;
    }
    SizeExpr x;
    bool known = false;
    for (size_t k = 0; k < std::size(kExprNames); ++k)
      if (e.items[0].str == kExprNames[k]) {
        x.kind = static_cast<SizeExpr::Kind>(k);
        known = true;
      }
    if (!known) {
      error = "metadata: " + where + " is a '" + e.items[0].str +
              "'; expected const, dim, add, sub, mul, divu, ceildivu, remu, "
              "minu or maxu";
      return false;
    }
    const size_t operands = x.kind == SizeExpr::Const ? 1 : 2;
    if (e.items.size() != operands + 1) {
      error = "metadata: " + where + " has " +
              std::to_string(e.items.size() - 1) + " operands; '" +
              e.items[0].str + "' takes " + std::to_string(operands);
      return false;
    }
    for (size_t k = 1; k < e.items.size(); ++k)
      if (e.items[k].kind != Json::Number || !e.items[k].integral) {
        error = "metadata: " + where + "'s operands must be integers";
        return false;
      }
    if (x.kind == SizeExpr::Const) {
      x.value = e.items[1].integer;
    } else {
      const int64_t a = e.items[1].integer, b = e.items[2].integer;
      // Dim: a host argument and a dimension; others: earlier expressions.
      const bool ok = x.kind == SizeExpr::Dim
                          ? a >= 0 && a < int64_t(m.hostArgs) && b >= 0 && b < 4
                          : a >= 0 && a < int64_t(i) && b >= 0 && b < int64_t(i);
      if (!ok) {
        error = "metadata: " + where + " refers to " +
                (x.kind == SizeExpr::Dim
                     ? "a host argument or dimension that does not exist"
                     : "an expression that does not precede it");
        return false;
      }
      x.a = static_cast<uint32_t>(a);
      x.b = static_cast<uint32_t>(b);
    }
    m.exprs.push_back(x);
  }
  return true;
}

bool parseWorkspaces(const Json &root, KernelMetadata &m, std::string &error) {
  Fields top(root, "", error);
  const Json *list = top.need("workspaces", Json::Array, "an array");
  if (!list)
    return false;
  for (size_t i = 0; i < list->items.size(); ++i) {
    const Json &wj = list->items[i];
    const std::string where = "workspaces[" + std::to_string(i) + "]";
    if (wj.kind != Json::Object) {
      error = "metadata: " + where + " must be an object";
      return false;
    }
    Fields f(wj, where + ": ", error);
    WorkspaceDesc w;
    const Json *shape = f.need("shape", Json::Array, "an array");
    int64_t bytes = 0;
    if (!shape || !f.str("element", w.elementType) ||
        !f.integer("bytes", bytes, 0, kMaxSize))
      return false;
    w.elementBytes = elementBytesOf(w.elementType);
    if (!w.elementBytes) {
      error = "metadata: " + where + ": 'element' is '" + w.elementType +
              "', not a type of whole bytes (f32, i32, f16, ...)";
      return false;
    }
    if (shape->items.empty() || shape->items.size() > 8) {
      error = "metadata: " + where + ": 'shape' must have 1 to 8 dimensions";
      return false;
    }
    bool dynamicShape = false;
    int64_t elements = 1;
    for (size_t d = 0; d < shape->items.size(); ++d) {
      int64_t v = 0;
      int id = -1;
      if (!extent(shape->items[d],
                  where + ".shape[" + std::to_string(d) + "]", 0, kMaxSize,
                  m.exprs.size(), v, id, error))
        return false;
      w.shape.push_back(v);
      w.shapeExprs.push_back(id);
      dynamicShape |= id >= 0;
      if (id < 0 && !checkedMul(elements, v, elements)) {
        error = "metadata: " + where + ": the shape's size overflows";
        return false;
      }
    }
    if (!dynamicShape) {
      w.shapeExprs.clear();
      int64_t expected = 0;
      if (!checkedMul(elements, int64_t(w.elementBytes), expected) ||
          expected != bytes) {
        error = "metadata: " + where + ": 'bytes' is " +
                std::to_string(bytes) + "; its shape and element make " +
                std::to_string(expected);
        return false;
      }
      w.bytes = static_cast<uint64_t>(bytes);
    }
    if (const Json *writes = wj.get("host_writes")) {
      if (writes->kind != Json::Array || dynamicShape ||
          w.shape.size() != 1 || w.elementType != "i32" ||
          int64_t(writes->items.size()) != w.shape[0]) {
        error = "metadata: " + where + ": a buffer with 'host_writes' must "
                "be a static [N] of i32 with N entries in 'host_writes'";
        return false;
      }
      w.hostWritten = true;
      for (size_t k = 0; k < writes->items.size(); ++k) {
        int64_t v = 0;
        int id = -1;
        if (!extent(writes->items[k],
                    where + ".host_writes[" + std::to_string(k) + "]", 0, 0,
                    m.exprs.size(), v, id, error))
          return false;
        if (id < 0) {
          error = "metadata: " + where + ".host_writes[" + std::to_string(k) +
                  "] must be {\"expr\": N}";
          return false;
        }
        w.contents.push_back(id);
      }
    }
    m.workspaces.push_back(std::move(w));
  }
  return true;
}

bool parseDispatches(const Json &root, KernelMetadata &m, std::string &error) {
  Fields top(root, "", error);
  const Json *list = top.need("dispatches", Json::Array, "an array");
  if (!list)
    return false;
  if (list->items.empty() || list->items.size() > 8) {
    error = "metadata: 'dispatches' has " + std::to_string(list->items.size()) +
            " entries; expected 1 to 8";
    return false;
  }
  for (size_t i = 0; i < list->items.size(); ++i) {
    const Json &dj = list->items[i];
    const std::string where = "dispatches[" + std::to_string(i) + "]";
    if (dj.kind != Json::Object) {
      error = "metadata: " + where + " must be an object";
      return false;
    }
    Fields f(dj, where + ": ", error);
    DispatchDesc d;
    const Json *grid = f.need("workgroups", Json::Array, "an array of 3");
    const Json *block = f.need("workgroup_size", Json::Array, "an array of 3");
    const Json *bindings = f.need("bindings", Json::Array, "an array");
    if (!f.str("entry", d.entry) || !grid || !block || !bindings)
      return false;
    // (absent in metadata written before it was recorded: not known)
    if (f.has("workgroup_memory_bytes")) {
      int64_t bytes = 0;
      if (!f.integer("workgroup_memory_bytes", bytes, 0, INT32_MAX))
        return false;
      d.workgroupBytes = static_cast<uint64_t>(bytes);
    }
    if (d.entry.empty() || grid->items.size() != 3 ||
        block->items.size() != 3) {
      error = "metadata: " + where +
              ": 'entry' must be a name, 'workgroups' and 'workgroup_size' "
              "3 numbers each";
      return false;
    }
    for (int k = 0; k < 3; ++k) {
      int64_t g = 0, b = 0;
      int id = -1, none = -1;
      if (!extent(grid->items[k],
                  where + ".workgroups[" + std::to_string(k) + "]", 1,
                  UINT32_MAX, m.exprs.size(), g, id, error) ||
          !extent(block->items[k],
                  where + ".workgroup_size[" + std::to_string(k) + "]", 1,
                  1024, 0, b, none, error))
        return false;
      d.grid[k] = id >= 0 ? 0 : static_cast<uint32_t>(g);
      d.gridExprs[k] = id;
      d.block[k] = static_cast<uint32_t>(b);
    }
    for (size_t k = 0; k < bindings->items.size(); ++k) {
      const Json &bj = bindings->items[k];
      const std::string bw = where + ".bindings[" + std::to_string(k) + "]";
      if (bj.kind != Json::Object) {
        error = "metadata: " + bw + " must be an object";
        return false;
      }
      Fields bf(bj, bw + ": ", error);
      int64_t set = 0, binding = 0, index = 0;
      if (!bf.integer("set", set, 0, 0) ||
          !bf.integer("binding", binding, int64_t(k), int64_t(k)))
        return false;
      BufferRef ref;
      ref.workspace = bf.has("workspace");
      if (ref.workspace ? !bf.integer("workspace", index, 0,
                                      int64_t(m.workspaces.size()) - 1)
                        : !bf.integer("arg", index, 0, int64_t(m.hostArgs) - 1))
        return false;
      ref.index = static_cast<uint32_t>(index);
      d.bindings.push_back(ref);
    }
    if (d.bindings.empty()) {
      error = "metadata: " + where + " binds no buffer";
      return false;
    }
    m.dispatches.push_back(std::move(d));
  }
  return true;
}

std::string slurpError(const std::string &path) {
  return "cannot read '" + path + "': " + std::strerror(errno);
}

bool slurp(const std::string &path, std::string &out, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = slurpError(path);
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

//===--- The executable ---===//

HostTensor hostTensor(const TensorView &t, size_t es, bool input) {
  HostTensor h;
  h.data = t.data;
  h.rank = static_cast<int>(t.rank);
  for (int i = 0; i < 4; ++i) {
    h.shape[i] = t.shape[i];
    h.strides[i] = t.strides[i];
  }
  h.elemSize = es;
  h.input = input;
  h.output = !input;
  return h;
}

/// Where `tensors` (name, pointer) live: all in device buffers (`onDevice`)
/// or all in host memory. Mixed memory is ATTN_ERROR_INVALID_ARGUMENT
/// naming which are where; `what` is what takes them ("a launch").
attn_status memoryOf(const char *what,
                     const std::vector<std::pair<const char *, const void *>>
                         &tensors,
                     bool &onDevice, std::string &error) {
  size_t device = 0;
  for (const auto &[name, data] : tensors)
    device += isDeviceAddress(data);
  onDevice = device != 0;
  if (device == 0 || device == tensors.size())
    return ATTN_OK;
  std::string inHost, inDevice;
  for (const auto &[name, data] : tensors) {
    std::string &list = isDeviceAddress(data) ? inDevice : inHost;
    list += (list.empty() ? "" : ", ") + std::string(name);
  }
  error = std::string("vulkan: ") + what +
          " takes either host memory or device buffers for all its "
          "tensors; " + inDevice + " in device buffers, " + inHost +
          " in host memory";
  return ATTN_ERROR_INVALID_ARGUMENT;
}

class VulkanExecutable final : public Executable {
public:
  VulkanExecutable(std::unique_ptr<Program> program,
                   std::shared_ptr<const KernelMetadata> metadata,
                   std::vector<Dispatch> dispatches, const attn_spec &spec,
                   KernelInfo info)
      : program(std::move(program)), m(std::move(metadata)),
        dispatches(std::move(dispatches)), spec(spec), info(std::move(info)) {}

  void kernelInfo(KernelInfo &out) const override {
    out = info;
    // The chunk count is fixed in the module; it is reported once a
    // launch ran it, as the other targets' counts of their last launch.
    if (!launched.load(std::memory_order_relaxed))
      out.kvSplits = 0;
  }

  attn_status run(const KernelArgs &a, std::string &error) override {
    std::shared_ptr<Submission> done;
    if (attn_status s = submit(a, /*wait=*/true, done, error))
      return s;
    return ATTN_OK;
  }

  attn_status submit(const KernelArgs &a, bool wait,
                     std::shared_ptr<Submission> &pending,
                     std::string &error) override {
    std::vector<HostTensor> args;
    std::vector<Dispatch> run;
    // The seed and the size buffers' values are staged by the submit,
    // before it returns.
    uint64_t seed = a.seed;
    std::vector<std::vector<int32_t>> sizeBuffers;
    if (attn_status s = prepare(a, seed, sizeBuffers, args, run, error))
      return s;
    launched.store(true, std::memory_order_relaxed);
    return program->submit(args, {}, run, wait, pending, error);
  }

private:
  /// The run's buffers (host arguments, then for dynamic sizes the size
  /// buffers and workspaces) and its dispatches with their grids.
  attn_status prepare(const KernelArgs &a, uint64_t &seed,
                      std::vector<std::vector<int32_t>> &sizeBuffers,
                      std::vector<HostTensor> &args, std::vector<Dispatch> &run,
                      std::string &error) {
    // Host function arguments in order: q, k, v, [mask], out, [lse], [seed].
    size_t es = static_cast<size_t>(dtypeBytes(spec.dtype));
    args = {hostTensor(a.q, es, true), hostTensor(a.k, es, true),
            hostTensor(a.v, es, true)};
    if (spec.mask != ATTN_MASK_NONE)
      args.push_back(hostTensor(
          a.mask, static_cast<size_t>(dtypeBytes(spec.mask_dtype)), true));
    args.push_back(hostTensor(a.out, es, false));
    if (spec.return_lse)
      args.push_back(hostTensor(a.lse, 4, false));
    // The dropout seed, a 64-bit scalar argument, reaches the kernel as a
    // one-element storage buffer (MLIR's SPIR-V ABI for scalar arguments).
    if (spec.dropout_p > 0.0) {
      HostTensor t;
      t.data = &seed;
      t.rank = 1;
      t.shape[0] = 1;
      t.strides[0] = 1;
      t.elemSize = sizeof(seed);
      t.input = true;
      t.output = false;
      args.push_back(t);
    }
    if (args.size() != m->hostArgs) {
      error = "vulkan: the kernel takes " + std::to_string(m->hostArgs) +
              " tensors but the spec implies " + std::to_string(args.size());
      return ATTN_ERROR_BACKEND;
    }
    if (attn_status s = bindDeviceBuffers(a.context, args, error))
      return s;
    run = dispatches;
    if (!m->dynamic())
      return ATTN_OK;

    // Dynamic sizes: the grids, the workspaces' sizes and the size
    // buffers' contents are the host function's expressions of this
    // launch's shapes; workspaces and size buffers follow the host
    // arguments as buffers of the run (SPIRVDynamicShapes.cpp).
    const unsigned hostArgs = m->hostArgs;
    auto shape = [&](unsigned arg, unsigned dim) -> int64_t {
      if (arg >= hostArgs || int(dim) >= args[arg].rank)
        return -1; // evaluate() refuses it
      return args[arg].shape[dim];
    };
    auto eval = [&](int id, int64_t &v) -> attn_status {
      if (!m->evaluate(id, shape, v, error)) {
        error = "vulkan: " + error;
        return ATTN_ERROR_BACKEND;
      }
      return ATTN_OK;
    };
    sizeBuffers.reserve(m->workspaces.size());
    for (const WorkspaceDesc &w : m->workspaces) {
      HostTensor t;
      t.rank = 1;
      t.strides[0] = 1;
      t.output = false;
      if (w.hostWritten) {
        std::vector<int32_t> &values = sizeBuffers.emplace_back();
        for (int id : w.contents) {
          int64_t v = 0;
          if (attn_status st = eval(id, v))
            return st;
          // The kernels were built (and their loop budget checked) for
          // sizes up to the clamp; a larger one would be read as the clamp.
          // Refused before anything is staged.
          if (int64_t cap = m->maxDynamicExtent; cap && v > cap) {
            error = "vulkan: a size of " + std::to_string(v) +
                    " is above the " + std::to_string(cap) +
                    " this kernel was built for with dynamic sizes (its "
                    "loops were checked against the device's loop budget "
                    "up to that size; ATTN_VULKAN_MAX_DYNAMIC_EXTENT raises "
                    "it, or give the sizes in the spec)";
            return ATTN_ERROR_UNSUPPORTED;
          }
          // The kernels index in 32 bits: a size beyond that would wrap.
          if (v < 0 || v > INT32_MAX) {
            error = "vulkan: a size of " + std::to_string(v) +
                    " is beyond 2^31 - 1, the largest the kernels' 32-bit "
                    "indices hold";
            return ATTN_ERROR_UNSUPPORTED;
          }
          values.push_back(static_cast<int32_t>(v));
        }
        t.data = values.data();
        t.shape[0] = static_cast<int64_t>(values.size());
        t.elemSize = sizeof(int32_t);
        t.input = true;
      } else {
        // Scratch the kernels write before they read; never staged in or
        // out.
        int64_t elements = 1;
        for (size_t d = 0; d < w.shape.size(); ++d) {
          int64_t v = w.shape[d];
          if (v < 0)
            if (attn_status st = eval(w.shapeExprs[d], v))
              return st;
          if (v < 0 || !checkedMul(elements, v, elements) ||
              elements > kMaxSize) {
            error = "vulkan: split-KV workspace " +
                    std::to_string(&w - m->workspaces.data()) +
                    " would have more than 2^62 elements for this launch";
            return ATTN_ERROR_UNSUPPORTED;
          }
        }
        t.data = nullptr;
        t.shape[0] = elements;
        t.elemSize = w.elementBytes;
        t.input = false;
      }
      args.push_back(t);
    }
    for (size_t k = 0; k < run.size(); ++k)
      for (int i = 0; i < 3; ++i)
        if (int id = m->dispatches[k].gridExprs[i]; id >= 0) {
          int64_t v = 0;
          if (attn_status st = eval(id, v))
            return st;
          // Checked against the device's maxComputeWorkGroupCount when
          // run; out of uint32_t range it would wrap into a valid-looking
          // count first.
          if (v < 1 || v > int64_t(UINT32_MAX)) {
            error = "vulkan: workgroup count " + std::to_string(v) +
                    " in dimension " + std::to_string(i) + " of dispatch " +
                    std::to_string(k) + " is outside [1, 2^32 - 1]";
            return ATTN_ERROR_UNSUPPORTED;
          }
          run[k].groups[i] = static_cast<uint32_t>(v);
        }
    return ATTN_OK;
  }

  /// Tensors whose data is a device-buffer address are bound in that
  /// buffer: all or none of the launch's tensors (the seed aside), each
  /// densely packed in its shape.
  attn_status bindDeviceBuffers(uint64_t context, std::vector<HostTensor> &args,
                                std::string &error) {
    static const char *const names[] = {"q", "k", "v", "mask", "out", "lse"};
    std::vector<const char *> tensorNames = {"q", "k", "v"};
    if (spec.mask != ATTN_MASK_NONE)
      tensorNames.push_back(names[3]);
    tensorNames.push_back(names[4]);
    if (spec.return_lse)
      tensorNames.push_back(names[5]);
    std::vector<std::pair<const char *, const void *>> named;
    for (size_t i = 0; i < tensorNames.size(); ++i)
      named.push_back({tensorNames[i], args[i].data});
    bool onDevice = false;
    if (attn_status s = memoryOf("a launch", named, onDevice, error))
      return s;
    if (!onDevice)
      return ATTN_OK;
    for (size_t i = 0; i < tensorNames.size(); ++i) {
      HostTensor &t = args[i];
      // Densely packed in the logical shape: the kernels index it so.
      int64_t expected = 1;
      for (int d = t.rank - 1; d >= 0; --d) {
        if (t.shape[d] > 1 && t.strides[d] != expected) {
          error = std::string("vulkan: ") + tensorNames[i] +
                  " is in a device buffer, where tensors must be densely "
                  "packed in their shape (row-major, no broadcast): its "
                  "stride " + std::to_string(d) + " is " +
                  std::to_string(t.strides[d]) + ", not " +
                  std::to_string(expected);
          return ATTN_ERROR_INVALID_ARGUMENT;
        }
        expected *= t.shape[d]; // bounded by validation (2^62 bytes)
      }
      if (attn_status s = resolveDeviceAddress(
              t.data, context, (std::string(tensorNames[i]) + ".data").c_str(),
              t.buffer, t.offset, error))
        return s;
    }
    return ATTN_OK;
  }

  std::unique_ptr<Program> program;
  std::shared_ptr<const KernelMetadata> m;
  std::vector<Dispatch> dispatches;
  attn_spec spec;
  KernelInfo info;
  std::atomic<bool> launched{false};
};

//===--- Loaded artifacts ---===//

struct Store {
  std::mutex mutex;
  std::map<detail::CacheKey, std::shared_ptr<const KernelMetadata>> entries;
};
Store &store() {
  static Store s;
  return s;
}

/// Serves attn_compile for the vulkan target from loaded artifacts when no
/// JIT is linked in.
class ArtifactCompiler final : public Compiler {
public:
  attn_status available(std::string &error) override {
    DeviceInfo info;
    return deviceInfo(info, error);
  }
  attn_status compile(const attn_spec &spec, CompileResult &result,
                      std::string &error) override {
    auto m = findArtifact(spec);
    if (!m) {
      error = "vulkan: no loaded artifact matches this spec and no Vulkan "
              "JIT is linked in (load one with attn_vulkan_load_artifact, "
              "or link libattn.so)";
      return ATTN_ERROR_UNSUPPORTED;
    }
    KernelInfo info;
    info.variant = m->variant;
    info.blockQ = m->blockQ;
    info.blockKv = m->blockKv;
    info.kvSplits = m->kvSplits;
    return createExecutable(*m, spec, info, result.executable, error);
  }
};

} // namespace

bool KernelMetadata::evaluate(
    int id, const std::function<int64_t(unsigned, unsigned)> &argShape,
    int64_t &value, std::string &error) const {
  if (id < 0 || id >= static_cast<int>(exprs.size())) {
    error = "no size expression " + std::to_string(id);
    return false;
  }
  const SizeExpr &e = exprs[id];
  int64_t a = 0, b = 0;
  if (e.kind == SizeExpr::Const) {
    value = e.value;
  } else if (e.kind == SizeExpr::Dim) {
    value = argShape(e.a, e.b);
  } else {
    // Operands precede their users in the pool (built bottom-up).
    if (static_cast<int>(e.a) >= id || static_cast<int>(e.b) >= id) {
      error = "size expression " + std::to_string(id) + " refers forward";
      return false;
    }
    if (!evaluate(e.a, argShape, a, error) ||
        !evaluate(e.b, argShape, b, error))
      return false;
    uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
    bool div = e.kind == SizeExpr::DivU || e.kind == SizeExpr::CeilDivU ||
               e.kind == SizeExpr::RemU;
    if (div && ub == 0) {
      error = "a size divides by zero";
      return false;
    }
    // Operands are in [0, 2^32): no operation here overflows int64_t.
    switch (e.kind) {
    case SizeExpr::Add: value = a + b; break;
    case SizeExpr::Sub: value = a - b; break;
    case SizeExpr::Mul: value = a * b; break;
    case SizeExpr::DivU: value = static_cast<int64_t>(ua / ub); break;
    case SizeExpr::CeilDivU:
      value = static_cast<int64_t>((ua + ub - 1) / ub);
      break;
    case SizeExpr::RemU: value = static_cast<int64_t>(ua % ub); break;
    case SizeExpr::MinU: value = static_cast<int64_t>(std::min(ua, ub)); break;
    case SizeExpr::MaxU: value = static_cast<int64_t>(std::max(ua, ub)); break;
    default: break;
    }
  }
  // The host's arithmetic is on sizes: a value outside [0, 2^32) means
  // shapes the kernels cannot index.
  if (value < 0 || value >= (int64_t(1) << 32)) {
    error = "a size evaluates to " + std::to_string(value) +
            ", outside [0, 2^32)";
    return false;
  }
  return true;
}

uint32_t attn::vulkan::hostArgsOf(const attn_spec &spec) {
  return 4 + (spec.mask != ATTN_MASK_NONE) + (spec.return_lse != 0) +
         (spec.dropout_p > 0.0);
}

std::string attn::vulkan::writeMetadata(const KernelMetadata &a) {
  std::ostringstream os;
  auto dim3 = [&](const uint32_t *v) {
    os << "[" << v[0] << ", " << v[1] << ", " << v[2] << "]";
  };
  // A workgroup count or size: the number, or {"expr": id} into "exprs".
  auto extentOut = [&](int64_t v, int id) {
    if (id >= 0)
      os << "{\"expr\": " << id << "}";
    else
      os << v;
  };
  auto bindings = [&](const std::vector<BufferRef> &refs) {
    os << "[";
    for (size_t i = 0; i < refs.size(); ++i)
      os << (i ? ", " : "") << "{\"set\": 0, \"binding\": " << i << ", "
         << (refs[i].workspace ? "\"workspace\": " : "\"arg\": ")
         << refs[i].index << "}";
    os << "]";
  };
  os << "{\n  \"format\": \"" << kMetadataFormat << "\",\n  \"version\": "
     << kMetadataVersion << ",\n  \"binary\": " << quote(a.binaryFile)
     << ",\n  \"variant\": " << quote(a.variant) << ",";
  // The single-dispatch keys, only where one dispatch is the whole kernel
  // (a reader that knows only them must not launch half of a split-KV
  // pair). The runtime reads "dispatches".
  const bool single =
      a.dispatches.size() == 1 && a.workspaces.empty() && !a.dynamic();
  if (single) {
    const DispatchDesc &d = a.dispatches.front();
    os << "\n  \"entry\": " << quote(d.entry) << ",\n  \"workgroups\": ";
    dim3(d.grid);
    os << ",\n  \"workgroup_size\": ";
    dim3(d.block);
    os << ",";
  }
  os << "\n  \"push_constant_bytes\": 0,"
     << "\n  \"host_args\": " << a.hostArgs << ",";
  if (!a.argTypes.empty()) {
    os << "\n  \"arg_types\": [";
    for (size_t i = 0; i < a.argTypes.size(); ++i)
      os << (i ? ", " : "") << quote(a.argTypes[i]);
    os << "],";
  }
  if (single) {
    os << "\n  \"bindings\": ";
    bindings(a.dispatches.front().bindings);
    os << ",";
  }
  os << "\n  \"block_q\": " << a.blockQ << ",\n  \"block_kv\": " << a.blockKv
     << ",\n  \"kv_splits\": " << a.kvSplits << ",";
  if (a.dynamic()) {
    // Sizes computed from the host arguments' sizes at each launch
    // ("dim": [arg, dimension]; binary ops on unsigned integers).
    os << "\n  \"max_dynamic_extent\": " << a.maxDynamicExtent << ","
       << "\n  \"exprs\": [";
    for (size_t i = 0; i < a.exprs.size(); ++i) {
      const SizeExpr &e = a.exprs[i];
      os << (i ? ", " : "") << "[\"" << kExprNames[e.kind] << "\"";
      if (e.kind == SizeExpr::Const)
        os << ", " << e.value;
      else
        os << ", " << e.a << ", " << e.b;
      os << "]";
    }
    os << "],";
  }
  os << "\n  \"workspaces\": [";
  for (size_t i = 0; i < a.workspaces.size(); ++i) {
    const WorkspaceDesc &w = a.workspaces[i];
    os << (i ? ", " : "") << "{\"shape\": [";
    for (size_t j = 0; j < w.shape.size(); ++j) {
      os << (j ? ", " : "");
      extentOut(w.shape[j], w.shapeExprs.empty() ? -1 : w.shapeExprs[j]);
    }
    os << "], \"element\": " << quote(w.elementType)
       << ", \"bytes\": " << w.bytes;
    if (w.hostWritten) {
      os << ", \"host_writes\": [";
      for (size_t j = 0; j < w.contents.size(); ++j)
        os << (j ? ", " : "") << "{\"expr\": " << w.contents[j] << "}";
      os << "]";
    }
    os << "}";
  }
  os << "],\n  \"dispatches\": [";
  for (size_t i = 0; i < a.dispatches.size(); ++i) {
    const DispatchDesc &d = a.dispatches[i];
    os << (i ? "," : "") << "\n    {\"entry\": " << quote(d.entry)
       << ", \"workgroups\": [";
    for (int j = 0; j < 3; ++j) {
      os << (j ? ", " : "");
      extentOut(d.grid[j], d.gridExprs[j]);
    }
    os << "]";
    os << ", \"workgroup_size\": ";
    dim3(d.block);
    os << ", \"workgroup_memory_bytes\": " << d.workgroupBytes;
    os << ",\n     \"bindings\": ";
    bindings(d.bindings);
    os << "}";
  }
  auto flag = [](bool b) { return b ? "true" : "false"; };
  os << "],\n  \"needs_float16\": " << flag(a.needsFloat16)
     << ",\n  \"needs_int16\": " << flag(a.needsInt16)
     << ",\n  \"needs_bfloat16\": " << flag(a.needsBFloat16)
     << ",\n  \"needs_cooperative_matrix\": "
     << flag(a.needsCooperativeMatrix)
     << ",\n  \"needs_subgroup_arithmetic\": "
     << flag(a.needsSubgroupArithmetic)
     << ",\n  \"needs_subgroup_shuffle\": " << flag(a.needsSubgroupShuffle)
     << ",\n  \"required_subgroup_size\": " << a.subgroupSize;
  if (a.hasSpec) {
    os << ",\n  \"spec\": ";
    writeSpec(os, a.spec);
  }
  os << "\n}\n";
  return os.str();
}

bool attn::vulkan::parseMetadata(const std::string &text, KernelMetadata &m,
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
  std::string format;
  int64_t version = 0, hostArgs = 0, pushConstants = 0, subgroup = 0;
  if (!top.str("format", format))
    return false;
  if (format != kMetadataFormat) {
    error = "metadata: 'format' is '" + format + "'; expected '" +
            kMetadataFormat + "'";
    return false;
  }
  if (!top.integer("version", version, kMetadataVersion, kMetadataVersion) ||
      !top.str("binary", m.binaryFile) || !top.str("variant", m.variant) ||
      !top.integer("host_args", hostArgs, 4, 16) ||
      !top.integer("push_constant_bytes", pushConstants, 0, 0) ||
      !top.integer("required_subgroup_size", subgroup, 0, 1024))
    return false;
  if (m.binaryFile.empty()) {
    error = "metadata: 'binary' must not be empty";
    return false;
  }
  m.hostArgs = static_cast<uint32_t>(hostArgs);
  // (absent in metadata written before it was recorded)
  if (top.has("arg_types")) {
    const Json *types = top.need("arg_types", Json::Array, "an array of names");
    if (!types)
      return false;
    if (types->items.size() != m.hostArgs) {
      error = "metadata: 'arg_types' has " +
              std::to_string(types->items.size()) + " names; 'host_args' is " +
              std::to_string(m.hostArgs);
      return false;
    }
    for (const Json &t : types->items) {
      if (t.kind != Json::String || t.str.empty()) {
        error = "metadata: 'arg_types' must be an array of names";
        return false;
      }
      m.argTypes.push_back(t.str);
    }
  }
  m.subgroupSize = static_cast<uint32_t>(subgroup);
  if ((top.has("block_q") && !top.integer("block_q", m.blockQ, 0, INT32_MAX)) ||
      (top.has("block_kv") &&
       !top.integer("block_kv", m.blockKv, 0, INT32_MAX)) ||
      (top.has("kv_splits") &&
       !top.integer("kv_splits", m.kvSplits, 0, INT32_MAX)) ||
      (top.has("max_dynamic_extent") &&
       !top.integer("max_dynamic_extent", m.maxDynamicExtent, 0, INT32_MAX)))
    return false;
  if (!top.boolean("needs_float16", m.needsFloat16) ||
      !top.boolean("needs_int16", m.needsInt16) ||
      !top.boolean("needs_bfloat16", m.needsBFloat16) ||
      !top.boolean("needs_cooperative_matrix", m.needsCooperativeMatrix) ||
      !top.boolean("needs_subgroup_arithmetic", m.needsSubgroupArithmetic) ||
      !top.boolean("needs_subgroup_shuffle", m.needsSubgroupShuffle))
    return false;
  if (!parseExprs(root, m, error) || !parseWorkspaces(root, m, error) ||
      !parseDispatches(root, m, error))
    return false;
  if (const Json *specJson = root.get("spec")) {
    if (specJson->kind != Json::Object) {
      error = "metadata: 'spec' must be an object";
      return false;
    }
    attn_spec s;
    if (!parseSpec(*specJson, s, error))
      return false;
    std::string specError;
    if (!detail::validateSpec(s, ATTN_TARGET_VULKAN, m.spec, specError)) {
      error = "metadata: the spec is invalid: " + specError;
      return false;
    }
    if (hostArgsOf(m.spec) != m.hostArgs) {
      error = "metadata: the spec's kernel takes " +
              std::to_string(hostArgsOf(m.spec)) +
              " host arguments (q, k, v, [mask], out, [lse], [seed]); "
              "'host_args' is " + std::to_string(m.hostArgs);
      return false;
    }
    // The module's buffers against the spec's dtype: q, k, v and out (bf16
    // is read as bf16, or as 16-bit integers by the portable kernels).
    if (!m.argTypes.empty()) {
      const std::string want = attn_dtype_name(m.spec.dtype);
      const uint32_t out = m.spec.mask != ATTN_MASK_NONE ? 4 : 3;
      const std::pair<uint32_t, const char *> tensors[] = {
          {0, "q"}, {1, "k"}, {2, "v"}, {out, "out"}};
      for (auto [i, name] : tensors) {
        const std::string &got = m.argTypes[i];
        if (got == want || (want == "bf16" && got == "i16"))
          continue;
        error = std::string("metadata: the spec's dtype is ") + want +
                "; the kernel reads " + name + " as " + got +
                " ('arg_types'): it was built for another dtype";
        return false;
      }
    }
    m.hasSpec = true;
  }
  return true;
}

bool attn::vulkan::readArtifact(const std::string &metadataPath,
                                KernelMetadata &m, std::string &error) {
  std::string text, binary;
  if (!slurp(metadataPath, text, error))
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
  if (!slurp(path, binary, error))
    return false;
  if (binary.size() < 20 || binary.size() % 4) {
    error = "'" + path + "' is not SPIR-V: " + std::to_string(binary.size()) +
            " bytes, not whole 32-bit words of a module header and more";
    return false;
  }
  m.words.resize(binary.size() / 4);
  std::memcpy(m.words.data(), binary.data(), binary.size());
  if (m.words[0] != 0x07230203u) {
    error = "'" + path + "' is not SPIR-V (bad magic number)";
    return false;
  }
  std::vector<std::string> names = entryPointNames(m.words);
  for (const DispatchDesc &d : m.dispatches)
    if (std::find(names.begin(), names.end(), d.entry) == names.end()) {
      error = "'" + path + "' has no entry point '" + d.entry +
              "', which the metadata dispatches";
      return false;
    }
  return true;
}

namespace {
/// The program of `m` on the process's device and its dispatches (grids of
/// dynamic sizes left to the launch): the one place the metadata becomes
/// a ProgramDesc, for attention kernels and layers alike.
attn_status programFor(const KernelMetadata &m,
                       std::unique_ptr<Program> &program,
                       std::vector<Dispatch> &dispatches, std::string &error) {
  ProgramDesc desc;
  desc.spirv = m.words;
  dispatches.clear();
  for (const DispatchDesc &d : m.dispatches) {
    Dispatch dispatch;
    auto it = std::find_if(
        desc.entries.begin(), desc.entries.end(),
        [&](const EntryPointDesc &e) { return e.name == d.entry; });
    dispatch.entry = static_cast<uint32_t>(it - desc.entries.begin());
    if (it == desc.entries.end())
      desc.entries.push_back({d.entry,
                              static_cast<uint32_t>(d.bindings.size()),
                              d.workgroupBytes});
    else if (it->numBuffers != d.bindings.size()) {
      error = "vulkan: entry point '" + d.entry +
              "' is dispatched with different binding counts";
      return ATTN_ERROR_INVALID_ARGUMENT;
    }
    for (int i = 0; i < 3; ++i)
      dispatch.groups[i] = d.grid[i];
    // Dynamic sizes: workspaces and size buffers are buffers of the run,
    // after the host arguments; static workspaces live in the program.
    for (const BufferRef &ref : d.bindings)
      dispatch.bindings.push_back(
          m.dynamic() && ref.workspace ? BufferRef{false, m.hostArgs + ref.index}
                                       : ref);
    dispatches.push_back(std::move(dispatch));
  }
  desc.entry = desc.entries.front().name;
  desc.numBuffers = desc.entries.front().numBuffers;
  if (!m.dynamic())
    for (const WorkspaceDesc &w : m.workspaces)
      desc.workspaceBytes.push_back(w.bytes);
  desc.needsFloat16 = m.needsFloat16;
  desc.needsInt16 = m.needsInt16;
  desc.needsBFloat16 = m.needsBFloat16;
  desc.needsCooperativeMatrix = m.needsCooperativeMatrix;
  // The subgroup size the kernels were built for (coopmat, the portable
  // subgroup kernel), from the module.
  desc.requiredSubgroupSize = m.subgroupSize;
  desc.requireFullSubgroups = m.subgroupSize > 0;
  for (const DispatchDesc &d : m.dispatches)
    if (m.subgroupSize && d.block[0] % m.subgroupSize)
      desc.requireFullSubgroups = false;
  desc.needsSubgroupArithmetic = m.needsSubgroupArithmetic;
  desc.needsSubgroupShuffle = m.needsSubgroupShuffle;
  return createProgram(desc, program, error);
}

/// A layer (attn.mha): its kernels (projections, attention, output
/// projection) dispatched in order in one command buffer, each after the
/// previous one's writes; the intermediates are the program's workspaces.
class VulkanLayerExecutable final : public LayerExecutable {
public:
  VulkanLayerExecutable(std::unique_ptr<Program> program,
                        std::vector<Dispatch> dispatches,
                        const attn_mha_spec &spec)
      : program(std::move(program)), dispatches(std::move(dispatches)),
        spec(spec) {}

  attn_status run(const attn_mha_args &a, std::string &error) override {
    return run(a, /*context=*/0, error);
  }

  /// Host memory (staged in and out), or device buffers of `context` for
  /// every operand (bound where they are, nothing copied).
  attn_status run(const attn_mha_args &a, uint64_t context,
                  std::string &error) override {
    const size_t es = static_cast<size_t>(dtypeBytes(spec.dtype));
    std::vector<LayerOperand> operands = layerOperands(spec, a);
    std::vector<std::pair<const char *, const void *>> named;
    for (const LayerOperand &o : operands)
      named.push_back({o.name, o.data});
    bool onDevice = false;
    if (attn_status s = memoryOf("a layer", named, onDevice, error))
      return s;
    std::vector<HostTensor> tensors;
    for (const LayerOperand &o : operands) {
      HostTensor t;
      t.data = o.data;
      t.rank = o.rank;
      int64_t stride = 1;
      for (int d = o.rank - 1; d >= 0; --d) {
        t.shape[d] = o.shape[d];
        t.strides[d] = stride;
        stride *= o.shape[d];
      }
      t.elemSize = es;
      t.input = !o.output;
      t.output = o.output;
      // A device buffer's range and alignment are checked by the run.
      if (onDevice)
        if (attn_status s = resolveDeviceAddress(o.data, context,
                                                 (std::string("args.") +
                                                  o.name).c_str(),
                                                 t.buffer, t.offset, error))
          return s;
      tensors.push_back(t);
    }
    return program->runDispatches(tensors, {}, dispatches, nullptr, error);
  }

private:
  std::unique_ptr<Program> program;
  std::vector<Dispatch> dispatches;
  attn_mha_spec spec;
};
} // namespace

attn_status attn::vulkan::createLayerExecutable(
    const KernelMetadata &m, const attn_mha_spec &spec,
    std::unique_ptr<LayerExecutable> &executable, std::string &error) {
  attn_mha_args none{};
  const size_t operands = layerOperands(spec, none).size();
  if (m.hostArgs != operands || m.dynamic()) {
    error = "vulkan: the layer's kernels take " + std::to_string(m.hostArgs) +
            " host arguments" + (m.dynamic() ? " of dynamic sizes" : "") +
            "; the spec implies " + std::to_string(operands) +
            " of static sizes";
    return ATTN_ERROR_INVALID_ARGUMENT;
  }
  std::unique_ptr<Program> program;
  std::vector<Dispatch> dispatches;
  if (attn_status s = programFor(m, program, dispatches, error))
    return s;
  executable = std::make_unique<VulkanLayerExecutable>(
      std::move(program), std::move(dispatches), spec);
  return ATTN_OK;
}

attn_status attn::vulkan::createExecutable(
    const KernelMetadata &m, const attn_spec &spec, const KernelInfo &chosen,
    std::unique_ptr<Executable> &executable, std::string &error) {
  if (m.hostArgs != hostArgsOf(spec)) {
    error = "vulkan: the kernel takes " + std::to_string(m.hostArgs) +
            " host arguments but the spec implies " +
            std::to_string(hostArgsOf(spec));
    return ATTN_ERROR_INVALID_ARGUMENT;
  }
  std::unique_ptr<Program> program;
  std::vector<Dispatch> dispatches;
  if (attn_status s = programFor(m, program, dispatches, error))
    return s;
  KernelInfo info = chosen;
  if (info.device.empty()) {
    DeviceInfo dev;
    std::string ignored;
    if (deviceInfo(dev, ignored) == ATTN_OK)
      info.device = dev.name;
  }
  auto metadata = std::make_shared<KernelMetadata>(m);
  metadata->words.clear(); // the program holds the module
  executable = std::make_unique<VulkanExecutable>(
      std::move(program), std::move(metadata), std::move(dispatches), spec,
      std::move(info));
  return ATTN_OK;
}

std::shared_ptr<const KernelMetadata>
attn::vulkan::findArtifact(const attn_spec &spec) {
  Store &s = store();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.entries.find(detail::makeCacheKey(spec, ATTN_TARGET_VULKAN));
  return it == s.entries.end() ? nullptr : it->second;
}

extern "C" attn_status attn_vulkan_load_artifact(const char *metadataPath,
                                                 attn_spec *spec) {
  if (!metadataPath) {
    setLastError("attn_vulkan_load_artifact: metadata_path is NULL");
    return ATTN_ERROR_INVALID_ARGUMENT;
  }
  auto m = std::make_shared<KernelMetadata>();
  std::string error;
  if (!readArtifact(metadataPath, *m, error)) {
    setLastError("attn_vulkan_load_artifact: " + error);
    return ATTN_ERROR_INVALID_ARGUMENT;
  }
  if (!m->hasSpec) {
    setLastError(std::string("attn_vulkan_load_artifact: ") + metadataPath +
                 ": metadata: missing key 'spec' (attn-translate writes it "
                 "when its input is an attn.sdpa on tensors; already-lowered "
                 "IR has no spec to load it under)");
    return ATTN_ERROR_INVALID_ARGUMENT;
  }
  {
    Store &s = store();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.entries[detail::makeCacheKey(m->spec, ATTN_TARGET_VULKAN)] = m;
  }
  // Without a JIT, the artifacts are the vulkan target's compiler.
  if (!detail::findCompiler(ATTN_TARGET_VULKAN))
    registerCompiler(ATTN_TARGET_VULKAN, std::make_shared<ArtifactCompiler>());
  if (spec)
    *spec = m->spec;
  setLastError("");
  return ATTN_OK;
}
