//===- KernelSource.cpp - the entry-function IR the JIT compiles per spec -===//
#include "attn/JIT/JIT.h"

#include <cstdio>
#include <cstring>
#include <sstream>
#include <vector>

using namespace mlir::attn;

namespace {
std::string dim(int64_t d) {
  return d == ATTN_DYNAMIC ? std::string("?") : std::to_string(d);
}

const char *eltType(attn_dtype t) {
  switch (t) {
  case ATTN_DTYPE_F16:
    return "f16";
  case ATTN_DTYPE_BF16:
    return "bf16";
  case ATTN_DTYPE_F32:
    return "f32";
  case ATTN_DTYPE_BOOL:
    return "i8";
  }
  return "f32";
}

std::string fp(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17e", v);
  return buf;
}

struct Shaped {
  std::string dims; // "2x?x128x64xf16"
  int rank;
  std::string memref() const {
    std::string strides = rank == 4 ? "[?, ?, ?, 1]" : "[?, ?, 1]";
    return "memref<" + dims + ", strided<" + strides + ", offset: ?>>";
  }
  std::string tensor() const { return "tensor<" + dims + ">"; }
};

Shaped make(std::initializer_list<int64_t> ds, const char *elt) {
  std::string s;
  for (int64_t d : ds)
    s += dim(d) + "x";
  return {s + elt, static_cast<int>(ds.size())};
}
} // namespace

std::string jit::buildKernelSource(const attn_spec &spec) {
  const char *elt = eltType(spec.dtype);
  int64_t dv = spec.value_dim ? spec.value_dim : spec.head_dim;
  Shaped q = make({spec.batch, spec.heads_q, spec.seq_q, spec.head_dim}, elt);
  Shaped k = make({spec.batch, spec.heads_kv, spec.seq_kv, spec.head_dim}, elt);
  Shaped v = make({spec.batch, spec.heads_kv, spec.seq_kv, dv}, elt);
  Shaped out = make({spec.batch, spec.heads_q, spec.seq_q, dv}, elt);
  Shaped lse = make({spec.batch, spec.heads_q, spec.seq_q}, "f32");
  // The runtime expands a broadcast mask to [B, Hq] with stride 0.
  Shaped mask = make({spec.batch, spec.heads_q, spec.seq_q, spec.seq_kv},
                     spec.mask == ATTN_MASK_BOOL ? "i8"
                                                 : eltType(spec.mask_dtype));
  bool hasMask = spec.mask != ATTN_MASK_NONE;
  bool hasLse = spec.return_lse != 0;
  bool hasDropout = spec.dropout_p > 0.0;

  std::ostringstream os;
  os << "// attn kernel: dtype=" << elt << " D=" << spec.head_dim
     << " Dv=" << dv << (spec.causal ? " causal" : "")
     << (hasMask ? (spec.mask == ATTN_MASK_BOOL ? " mask=bool" : " mask=additive")
                 : "")
     << (hasDropout ? " dropout" : "") << (hasLse ? " lse" : "") << "\n";
  os << "func.func @" << kEntryName << "(%q: " << q.memref()
     << ", %k: " << k.memref() << ", %v: " << v.memref();
  if (hasMask)
    os << ", %mask: " << mask.memref();
  os << ", %out: " << out.memref();
  if (hasLse)
    os << ", %lse: " << lse.memref();
  if (hasDropout)
    os << ", %seed: i64";
  os << ") attributes {llvm.emit_c_interface} {\n";
  auto toTensor = [&](const char *name, const Shaped &s) {
    os << "  %" << name << "_t = bufferization.to_tensor %" << name
       << " restrict : " << s.memref() << " to " << s.tensor() << "\n";
  };
  toTensor("q", q);
  toTensor("k", k);
  toTensor("v", v);
  if (hasMask)
    toTensor("mask", mask);
  os << "  " << (hasLse ? "%o, %l" : "%o") << " = attn.sdpa %q_t, %k_t, %v_t";
  if (hasMask)
    os << " mask(%mask_t : " << mask.tensor() << ")";
  if (spec.causal)
    os << " causal";
  if (spec.scale != 0.0)
    os << " scale(" << fp(spec.scale) << ")";
  if (hasDropout)
    os << " dropout(" << fp(spec.dropout_p) << ", seed %seed)";
  os << " : " << q.tensor() << ", " << k.tensor() << ", " << v.tensor()
     << " -> " << out.tensor();
  if (hasLse)
    os << ", " << lse.tensor();
  os << "\n";
  os << "  bufferization.materialize_in_destination %o in restrict writable "
        "%out : ("
     << out.tensor() << ", " << out.memref() << ") -> ()\n";
  if (hasLse)
    os << "  bufferization.materialize_in_destination %l in restrict writable "
          "%lse : ("
       << lse.tensor() << ", " << lse.memref() << ") -> ()\n";
  os << "  return\n}\n";
  return os.str();
}

std::string jit::buildDenseKernelSource(const attn_spec &spec) {
  std::string s = buildKernelSource(spec);
  for (const char *layout :
       {", strided<[?, ?, ?, 1], offset: ?>", ", strided<[?, ?, 1], offset: ?>"})
    for (size_t pos; (pos = s.find(layout)) != std::string::npos;)
      s.erase(pos, std::strlen(layout));
  return s;
}

std::string jit::buildMhaKernelSource(const attn_mha_spec &s) {
  const char *elt = eltType(s.dtype);
  const int64_t qw = s.heads_q * s.head_dim, kw = s.heads_kv * s.head_dim,
                vw = s.heads_kv * s.value_dim, ow = s.heads_q * s.value_dim;
  struct Arg {
    const char *name, *keyword; // keyword: the op's operand group
    Shaped type;
  };
  std::vector<Arg> args = {{"x", nullptr, make({s.batch, s.seq, s.embed}, elt)}};
  if (s.cross)
    args.push_back({"kv", "kv", make({s.batch, s.seq_kv, s.kv_embed}, elt)});
  if (s.fused_qkv) {
    args.push_back({"w_qkv", "wqkv", make({qw + kw + vw, s.embed}, elt)});
  } else {
    args.push_back({"w_q", "wq", make({qw, s.embed}, elt)});
    args.push_back({"w_k", "wk", make({kw, s.kv_embed}, elt)});
    args.push_back({"w_v", "wv", make({vw, s.kv_embed}, elt)});
  }
  args.push_back({"w_o", "wo", make({s.embed, ow}, elt)});
  if (s.bias) {
    if (s.fused_qkv) {
      args.push_back({"b_qkv", "bqkv", make({qw + kw + vw}, elt)});
    } else {
      args.push_back({"b_q", "bq", make({qw}, elt)});
      args.push_back({"b_k", "bk", make({kw}, elt)});
      args.push_back({"b_v", "bv", make({vw}, elt)});
    }
    args.push_back({"b_o", "bo", make({s.embed}, elt)});
  }
  Shaped y = make({s.batch, s.seq, s.embed}, elt);
  // Dense memrefs: the layer's C API takes dense row-major tensors.
  auto memref = [](const Shaped &t) { return "memref<" + t.dims + ">"; };

  std::ostringstream os;
  os << "// attn layer: dtype=" << elt << " E=" << s.embed
     << " Hq=" << s.heads_q << " Hkv=" << s.heads_kv << " D=" << s.head_dim
     << " Dv=" << s.value_dim << (s.cross ? " cross" : "")
     << (s.fused_qkv ? " fused-qkv" : "") << (s.bias ? " bias" : "")
     << (s.causal ? " causal" : "") << "\n";
  os << "func.func @" << kEntryName << "(";
  for (const Arg &a : args)
    os << "%" << a.name << ": " << memref(a.type) << ", ";
  os << "%y: " << memref(y) << ") attributes {llvm.emit_c_interface} {\n";
  for (const Arg &a : args)
    os << "  %" << a.name << "_t = bufferization.to_tensor %" << a.name
       << " restrict : " << memref(a.type) << " to " << a.type.tensor()
       << "\n";
  os << "  %y_t = attn.mha %x_t";
  for (const Arg &a : args)
    if (a.keyword)
      os << " " << a.keyword << "(%" << a.name << "_t : " << a.type.tensor()
         << ")";
  os << " heads(" << s.heads_q << ", " << s.heads_kv << ") head_dim("
     << s.head_dim << ")";
  if (s.value_dim != s.head_dim)
    os << " value_dim(" << s.value_dim << ")";
  if (s.causal)
    os << " causal";
  if (s.scale != 0.0)
    os << " scale(" << fp(s.scale) << ")";
  os << " : " << args.front().type.tensor() << " -> " << y.tensor() << "\n";
  os << "  bufferization.materialize_in_destination %y_t in restrict "
        "writable %y : ("
     << y.tensor() << ", " << memref(y) << ") -> ()\n";
  os << "  return\n}\n";
  return os.str();
}
