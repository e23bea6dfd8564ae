//===- SPIRVCoopMatKernel.cpp - attn.sdpa as a cooperative-matrix kernel --===//
//
// The first step of attn-to-spirv-pipeline{variant=coopmat}. It replaces the
// body of a kernel-source function (memref arguments, bufferization.to_tensor
// of them, one attn.sdpa, bufferization.materialize_in_destination of its
// results into arguments; the form jit::buildKernelSource emits) with one
// gpu.launch that computes the same attention with cooperative matrices
// (gpu.subgroup_mma_*, which convert-gpu-to-spirv turns into
// spirv.KHR.CooperativeMatrix*):
//
//   - grid (B*Hq, ceil(Sq/Br)[, kv splits]); a workgroup is ONE subgroup
//     (subgroup-size invocations) and owns Br query rows;
//   - the Q tile (once) and each key block's K and V tiles are copied into
//     workgroup memory, zero past Sq / Skv, so any lengths work;
//   - per key block of Bc keys: S = Q K^T on 16x16x16 16-bit tiles with f32
//     accumulators (K^T as a column-major load of K's tile), stored to
//     workgroup memory;
//   - the online softmax runs with each invocation owning whole rows of S
//     (a cooperative matrix's elements cannot be addressed): scale, padded
//     rows/keys, causal and explicit masks, running max/sum in workgroup
//     memory, P = exp2(S - m) (dropout: the shared Philox decision) written
//     as 16-bit, the row of O rescaled;
//   - O += P V on cooperative matrices, O kept in workgroup memory (f32);
//   - the owner of each row below Sq writes out = O / l (0 for a row that
//     saw no key) and lse = m ln2 + ln l (-inf for such a row), or with
//     split-KV its chunk's partials for the merge kernel (SplitKV.h).
// A bf16 kernel on cooperative matrices is written in f16 and retyped after
// the SPIR-V conversion (SPIRVCoopMatBf16.cpp).
// With scalar-matrices the two products are scalar loops over the same
// workgroup buffers instead (the invocations split each 16x16 tile's
// elements): the same kernel for any Vulkan 1.1 device, which is how its
// structure is checked numerically where no cooperative matrices exist.
//
// Workgroup buffers have padded row strides (a multiple of 16 bytes, and not
// of 128) against bank conflicts. The kernel is built as text and parsed, so
// what it computes reads like the MLIR it is.
//
//===----------------------------------------------------------------------===//
#include "attn/Conversion/SplitKV.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Dialect/Attn/Transforms/Transforms.h"
#include "attn/Pipelines/Pipelines.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"

#include <cmath>
#include <cstdio>
#include <sstream>

using namespace mlir;
using mlir::attn::buildDropoutKeep;
using mlir::attn::emitWithSplitKV;
using mlir::attn::splitKeyBlocks;
using mlir::attn::SplitKVKernelNames;
using mlir::attn::SplitKVWorkspace;

namespace {

std::string typeStr(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

std::string fp(double v) {
  if (std::isinf(v))
    return v < 0 ? "0xFF800000" : "0x7F800000";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9e", v);
  return buf;
}

/// Everything the kernel text depends on.
struct CoopMatParams {
  int64_t B, Hq, Hkv, Sq, Skv, D, Dv, Br, Bc, subgroup;
  bool causal, lse;
  /// Scalar loops instead of cooperative matrices for the two products
  /// (each invocation computes elements of the 16x16 tile): the same
  /// kernel on any Vulkan 1.1 device, which is how its structure is tested
  /// numerically on devices without VK_KHR_cooperative_matrix.
  bool scalar = false;
  enum { None, Keep, Additive } mask = None;
  std::string maskElt; // i1, i8 or a float type
  double scale;
  /// The 16-bit element type of q, k, v, out and P in the kernel text: f16,
  /// or bf16 (scalar products only; the cooperative-matrix form of a bf16
  /// kernel is written in f16 and retyped after the SPIR-V conversion,
  /// SPIRVCoopMatBf16.cpp, since gpu.mma_matrix has no bf16).
  std::string elt = "f16";
  /// Dropout probability (0: none); the seed is the last argument.
  double dropout = 0.0;
  /// Split-KV chunks (1: none). With N > 1 grid z enumerates the chunks,
  /// each walks its share of the key blocks and writes O / l and m + log2 l
  /// into the two workspaces, the text function's last two arguments.
  int64_t splits = 1;
  SmallVector<std::string> argTypes; // q, k, v, [mask], out, [lse], [seed]
};

/// Stand-ins in the kernel text for what other paths build too: calls that
/// SPIRVCoopMatKernelPass replaces with buildDropoutKeep (the Philox
/// decision every path shares) and splitKeyBlocks (SplitKV.h's chunk of
/// the key blocks), so that the text does not spell them out again.
constexpr const char *kDropoutKeepFn = "__attn_coopmat_dropout_keep";
constexpr const char *kSplitKeyBlocksFn = "__attn_coopmat_split_key_blocks";

/// The replacement body: `func.func @f(<args>) { gpu.launch ... return }`.
std::string buildKernelText(const CoopMatParams &p) {
  const int64_t padS = p.Bc + 4, padP = p.Bc + 8, padO = p.Dv + 4;
  const double log2e = mlir::attn::kLog2e;
  std::ostringstream o;
  std::string wS = "memref<" + std::to_string(p.Br) + "x" +
                   std::to_string(padS) + "xf32, #spirv.storage_class<Workgroup>>";
  std::string wP = "memref<" + std::to_string(p.Br) + "x" +
                   std::to_string(padP) + "x" + p.elt +
                   ", #spirv.storage_class<Workgroup>>";
  std::string wO = "memref<" + std::to_string(p.Br) + "x" +
                   std::to_string(padO) + "xf32, #spirv.storage_class<Workgroup>>";
  std::string wR = "memref<" + std::to_string(p.Br) +
                   "xf32, #spirv.storage_class<Workgroup>>";
  // Q, K and V tiles, zero-padded past Sq / Skv (any lengths work).
  const int64_t padQK = p.D + 8, padV = p.Dv + 8;
  auto wTile = [&](int64_t rows, int64_t cols) {
    return "memref<" + std::to_string(rows) + "x" + std::to_string(cols) +
           "x" + p.elt + ", #spirv.storage_class<Workgroup>>";
  };
  const std::string wQ = wTile(p.Br, padQK), wK = wTile(p.Bc, padQK),
                    wV = wTile(p.Bc, padV);
  const std::string A = "!gpu.mma_matrix<16x16x" + p.elt + ", \"AOp\">";
  const std::string Bm = "!gpu.mma_matrix<16x16x" + p.elt + ", \"BOp\">";
  const std::string C = "!gpu.mma_matrix<16x16xf32, \"COp\">";
  unsigned a = 0;
  std::string q = "%arg" + std::to_string(a++), k = "%arg" + std::to_string(a++),
              v = "%arg" + std::to_string(a++);
  std::string mask = p.mask != CoopMatParams::None ? "%arg" + std::to_string(a++)
                                                   : "";
  std::string out = "%arg" + std::to_string(a++);
  std::string lse = p.lse ? "%arg" + std::to_string(a++) : "";
  std::string seed = p.dropout > 0.0 ? "%arg" + std::to_string(a++) : "";
  SmallVector<std::string> T(p.argTypes.begin(), p.argTypes.end());
  const bool split = p.splits > 1;
  std::string wsOut, wsLse;
  if (split) {
    std::string lead = std::to_string(p.B) + "x" + std::to_string(p.Hq) +
                       "x" + std::to_string(p.splits) + "x" +
                       std::to_string(p.Sq);
    wsOut = "%arg" + std::to_string(T.size());
    T.push_back("memref<" + lead + "x" + std::to_string(p.Dv) + "xf32>");
    wsLse = "%arg" + std::to_string(T.size());
    T.push_back("memref<" + lead + "xf32>");
  }
  auto ty = [&](const std::string &name) -> const std::string & {
    unsigned i = std::stoi(name.substr(4));
    return T[i];
  };

  if (p.dropout > 0.0)
    o << "func.func private @" << kDropoutKeepFn
      << "(i64, index, index, index, index) -> i1\n";
  if (split)
    o << "func.func private @" << kSplitKeyBlocksFn
      << "(index, index, index) -> (index, index)\n";
  o << "func.func @kernel(";
  for (unsigned i = 0; i < T.size(); ++i)
    o << (i ? ", " : "") << "%arg" << i << ": " << T[i];
  o << ") {\n";
  o << "  %one = arith.constant 1 : index\n"
    << "  %gx = arith.constant " << p.B * p.Hq << " : index\n"
    << "  %gy = arith.constant " << (p.Sq + p.Br - 1) / p.Br << " : index\n"
    << "  %gz = arith.constant " << p.splits << " : index\n"
    << "  %sg = arith.constant " << p.subgroup << " : index\n"
    << "  gpu.launch blocks(%bx, %by, %bz) in (%gsx = %gx, %gsy = %gy, "
       "%gsz = %gz) threads(%tx, %ty, %tz) in (%bsx = %sg, %bsy = %one, "
       "%bsz = %one) {\n";
  o << "    %S = memref.alloc() : " << wS << "\n"
    << "    %P = memref.alloc() : " << wP << "\n"
    << "    %O = memref.alloc() : " << wO << "\n"
    << "    %M = memref.alloc() : " << wR << "\n"
    << "    %L = memref.alloc() : " << wR << "\n"
    << "    %Qs = memref.alloc() : " << wQ << "\n"
    << "    %Ks = memref.alloc() : " << wK << "\n"
    << "    %Vs = memref.alloc() : " << wV << "\n";
  auto idx = [&](const char *name, int64_t value) {
    o << "    %" << name << " = arith.constant " << value << " : index\n";
  };
  idx("c0", 0);
  idx("c1", 1);
  idx("c16", 16);
  idx("c256", 256);
  idx("br", p.Br);
  idx("bc", p.Bc);
  idx("d", p.D);
  idx("dv", p.Dv);
  idx("nsg", p.subgroup);
  idx("hq", p.Hq);
  idx("grp", p.Hq / p.Hkv);
  idx("nkbAll", (p.Skv + p.Bc - 1) / p.Bc);
  idx("diag", p.Skv - p.Sq);
  idx("sq", p.Sq);
  idx("skv", p.Skv);
  idx("qtile", p.Br * p.D);
  idx("ktile", p.Bc * p.D);
  idx("vtile", p.Bc * p.Dv);
  o << "    %zero = arith.constant 0.0 : f32\n"
    << "    %ninf = arith.constant 0xFF800000 : f32\n"
    << "    %sl2e = arith.constant " << fp(p.scale * log2e) << " : f32\n"
    << "    %l2e = arith.constant " << fp(log2e) << " : f32\n"
    << "    %ln2 = arith.constant " << fp(std::log(2.0)) << " : f32\n"
    << (p.elt == "bf16" ? std::string()
                        : "    %zeroh = arith.truncf %zero : f32 to " + p.elt +
                              "\n")
    << "    %b = arith.divui %bx, %hq : index\n"
    << "    %h = arith.remui %bx, %hq : index\n"
    << "    %hk = arith.divui %h, %grp : index\n"
    << "    %q0 = arith.muli %by, %br : index\n"
    << "    %qleft = arith.subi %sq, %q0 : index\n"
    << "    %qrows = arith.minui %qleft, %br : index\n";
  // Running state: m = -inf, l = 0, O = 0 (each invocation its rows).
  o << "    scf.for %r = %tx to %br step %nsg {\n"
    << "      memref.store %ninf, %M[%r] : " << wR << "\n"
    << "      memref.store %zero, %L[%r] : " << wR << "\n"
    << "      scf.for %c = %c0 to %dv step %c1 {\n"
    << "        memref.store %zero, %O[%r, %c] : " << wO << "\n"
    << "      }\n    }\n";
  // Q's tile once per workgroup, rows past Sq zero; K and V per key block
  // alike with keys past Skv: every matrix load reads workgroup memory.
  auto stage = [&](const std::string &src, const std::string &head,
                   const std::string &row0, const std::string &count,
                   const std::string &cols, const std::string &limit,
                   const std::string &dst, const std::string &dstTy,
                   const std::string &ind) {
    // The row is clamped into the tensor (always in bounds) and the value
    // replaced by 0 past it; a bf16 kernel selects in f32 (its 16-bit
    // values only exist as loads and stores, SPIRVBf16Storage.cpp).
    o << ind << "scf.for %e = %tx to " << count << " step %nsg {\n"
      << ind << "  %i = arith.divui %e, " << cols << " : index\n"
      << ind << "  %j = arith.remui %e, " << cols << " : index\n"
      << ind << "  %gr = arith.addi " << row0 << ", %i : index\n"
      << ind << "  %in = arith.cmpi ult, %gr, " << limit << " : index\n"
      << ind << "  %lastr = arith.subi " << limit << ", %c1 : index\n"
      << ind << "  %cr = arith.minui %gr, %lastr : index\n"
      << ind << "  %ld = memref.load " << src << "[%b, " << head
      << ", %cr, %j] : " << ty(src) << "\n";
    if (p.elt == "bf16")
      o << ind << "  %lf = arith.extf %ld : bf16 to f32\n"
        << ind << "  %xf = arith.select %in, %lf, %zero : f32\n"
        << ind << "  %x = arith.truncf %xf : f32 to bf16\n";
    else
      o << ind << "  %x = arith.select %in, %ld, %zeroh : " << p.elt << "\n";
    o << ind << "  memref.store %x, " << dst << "[%i, %j] : " << dstTy << "\n"
      << ind << "}\n";
  };
  stage(q, "%h", "%q0", "%qtile", "%d", "%sq", "%Qs", wQ, "    ");
  o << "    gpu.barrier\n";
  // Key blocks: causal stops after the last block the tile's last row sees.
  if (p.causal) {
    o << "    %lastp1 = arith.addi %q0, %br : index\n"
      << "    %vis = arith.addi %lastp1, %diag : index\n"
      << "    %visc = arith.maxsi %vis, %c0 : index\n"
      << "    %bcm1 = arith.subi %bc, %c1 : index\n"
      << "    %visr = arith.addi %visc, %bcm1 : index\n"
      << "    %nkbc = arith.divui %visr, %bc : index\n"
      << "    %nkb = arith.minui %nkbc, %nkbAll : index\n";
  } else {
      o << "    %nkb = arith.addi %nkbAll, %c0 : index\n";
  }
  // Split-KV: chunk bz of N takes key blocks [begin, end), contiguous
  // chunks of ceil(nkb / N), the last ones possibly empty (SplitKV.h's
  // splitKeyBlocks, spliced in for the stand-in).
  if (split) {
    o << "    %nsp = arith.constant " << p.splits << " : index\n"
      << "    %kbBegin, %kbEnd = func.call @" << kSplitKeyBlocksFn
      << "(%nkb, %bz, %nsp) : (index, index, index) -> (index, index)\n";
  } else {
    o << "    %kbBegin = arith.addi %c0, %c0 : index\n"
      << "    %kbEnd = arith.addi %nkb, %c0 : index\n";
  }
  o << "    scf.for %kb = %kbBegin to %kbEnd step %c1 {\n"
    << "      %k0 = arith.muli %kb, %bc : index\n";
  stage(k, "%hk", "%k0", "%ktile", "%d", "%skv", "%Ks", wK, "      ");
  stage(v, "%hk", "%k0", "%vtile", "%dv", "%skv", "%Vs", wV, "      ");
  o << "      gpu.barrier\n";
  // S = Q K^T.
  if (p.scalar) {
    o << "      scf.for %mt = %c0 to %br step %c16 {\n"
      << "        scf.for %nt = %c0 to %bc step %c16 {\n"
      << "          scf.for %e = %tx to %c256 step %nsg {\n"
      << "            %i = arith.divui %e, %c16 : index\n"
      << "            %j = arith.remui %e, %c16 : index\n"
      << "            %si = arith.addi %mt, %i : index\n"
      << "            %sj = arith.addi %nt, %j : index\n"
      << "            %s = scf.for %dd = %c0 to %d step %c1 iter_args(%acc = "
         "%zero) -> (f32) {\n"
      << "              %qv = memref.load %Qs[%si, %dd] : " << wQ << "\n"
      << "              %kv = memref.load %Ks[%sj, %dd] : " << wK << "\n"
      << "              %qf = arith.extf %qv : " << p.elt << " to f32\n"
      << "              %kf = arith.extf %kv : " << p.elt << " to f32\n"
      << "              %pr = arith.mulf %qf, %kf : f32\n"
      << "              %n = arith.addf %acc, %pr : f32\n"
      << "              scf.yield %n : f32\n"
      << "            }\n"
      << "            memref.store %s, %S[%si, %sj] : " << wS << "\n"
      << "          }\n        }\n      }\n      gpu.barrier\n";
  } else {
    o << "      scf.for %mt = %c0 to %br step %c16 {\n"
      << "        scf.for %nt = %c0 to %bc step %c16 {\n"
      << "          %s0 = gpu.subgroup_mma_constant_matrix %zero : " << C << "\n"
      << "          %s = scf.for %dt = %c0 to %d step %c16 iter_args(%acc = %s0) "
         "-> (" << C << ") {\n"
      << "            %qa = gpu.subgroup_mma_load_matrix %Qs[%mt, %dt] "
         "{leadDimension = " << padQK << " : index} : " << wQ << " -> " << A
      << "\n"
      << "            %kt = gpu.subgroup_mma_load_matrix %Ks[%nt, %dt] "
         "{leadDimension = " << padQK << " : index, transpose} : " << wK
      << " -> " << Bm << "\n"
      << "            %n = gpu.subgroup_mma_compute %qa, %kt, %acc : " << A
      << ", " << Bm << " -> " << C << "\n"
      << "            scf.yield %n : " << C << "\n"
      << "          }\n"
      << "          gpu.subgroup_mma_store_matrix %s, %S[%mt, %nt] "
         "{leadDimension = " << padS << " : index} : " << C << ", " << wS << "\n"
      << "        }\n      }\n      gpu.barrier\n";
  }
  // The online softmax, one row per invocation.
  o << "      scf.for %r = %tx to %br step %nsg {\n"
    << "        %qrow = arith.addi %q0, %r : index\n"
    << "        %qin = arith.cmpi ult, %qrow, %sq : index\n"
    << "        %lim = arith.addi %qrow, %diag : index\n"
    << "        %mold = memref.load %M[%r] : " << wR << "\n"
    << "        %mx = scf.for %c = %c0 to %bc step %c1 iter_args(%acc = %ninf) "
       "-> (f32) {\n"
    << "          %key = arith.addi %k0, %c : index\n"
    << "          %sv = memref.load %S[%r, %c] : " << wS << "\n"
    << "          %x0 = arith.mulf %sv, %sl2e : f32\n";
  // Rows past Sq and keys past Skv (the zero padding of the tiles) are
  // -inf; the mask is read only inside both.
  o << "          %kin = arith.cmpi ult, %key, %skv : index\n"
    << "          %ok = arith.andi %qin, %kin : i1\n";
  std::string x = "%x1";
  if (p.mask == CoopMatParams::None) {
    o << "          %x1 = arith.select %ok, %x0, %ninf : f32\n";
  } else {
    o << "          %x1 = scf.if %ok -> (f32) {\n"
      << "            %mv = memref.load " << mask << "[%b, %h, %qrow, %key] : "
      << ty(mask) << "\n";
    if (p.mask == CoopMatParams::Additive) {
      std::string mv = "%mv";
      if (p.maskElt != "f32") {
        o << "            %mvf = arith.extf %mv : " << p.maskElt
          << " to f32\n";
        mv = "%mvf";
      }
      o << "            %mvl = arith.mulf " << mv << ", %l2e : f32\n"
        << "            %xm = arith.addf %x0, %mvl : f32\n";
    } else {
      std::string keep = "%mv";
      if (p.maskElt != "i1") {
        o << "            %mz = arith.constant 0 : " << p.maskElt << "\n"
          << "            %keep = arith.cmpi ne, %mv, %mz : " << p.maskElt
          << "\n";
        keep = "%keep";
      }
      o << "            %xm = arith.select " << keep << ", %x0, %ninf : f32\n";
    }
    o << "            scf.yield %xm : f32\n"
      << "          } else {\n"
      << "            scf.yield %ninf : f32\n"
      << "          }\n";
  }
  if (p.causal) {
    o << "          %hid = arith.cmpi sgt, %key, %lim : index\n"
      << "          %x2 = arith.select %hid, %ninf, " << x << " : f32\n";
    x = "%x2";
  }
  o << "          memref.store " << x << ", %S[%r, %c] : " << wS << "\n"
    << "          %m2 = arith.maximumf %acc, " << x << " : f32\n"
    << "          scf.yield %m2 : f32\n"
    << "        }\n"
    << "        %mnew = arith.maximumf %mold, %mx : f32\n"
    << "        %isninf = arith.cmpf oeq, %mnew, %ninf : f32\n"
    << "        %msafe = arith.select %isninf, %zero, %mnew : f32\n"
    << "        %da = arith.subf %mold, %msafe : f32\n"
    << "        %alpha = math.exp2 %da : f32\n"
    << "        %sum = scf.for %c = %c0 to %bc step %c1 iter_args(%acc = %zero) "
       "-> (f32) {\n"
    << "          %sv = memref.load %S[%r, %c] : " << wS << "\n"
    << "          %dd = arith.subf %sv, %msafe : f32\n"
    << "          %pv = math.exp2 %dd : f32\n";
  // Dropout: l sums P before dropout, P . V takes keep ? P / (1 - p) : 0
  // (the shared decision, counted by (key, query row, query head, batch)).
  std::string pUse = "%pv";
  if (p.dropout > 0.0) {
    o << "          %dkey = arith.addi %k0, %c : index\n"
      << "          %keep = func.call @" << kDropoutKeepFn << "(" << seed
      << ", %b, %h, %qrow, %dkey) : (i64, index, index, index, index) -> i1\n"
      << "          %pinv = arith.constant " << fp(1.0 / (1.0 - p.dropout))
      << " : f32\n"
      << "          %pscaled = arith.mulf %pv, %pinv : f32\n"
      << "          %pdrop = arith.select %keep, %pscaled, %zero : f32\n";
    pUse = "%pdrop";
  }
  o << "          %ph = arith.truncf " << pUse << " : f32 to " << p.elt
    << "\n"
    << "          memref.store %ph, %P[%r, %c] : " << wP << "\n"
    << "          %a2 = arith.addf %acc, %pv : f32\n"
    << "          scf.yield %a2 : f32\n"
    << "        }\n"
    << "        %lold = memref.load %L[%r] : " << wR << "\n"
    << "        %lsc = arith.mulf %lold, %alpha : f32\n"
    << "        %lnew = arith.addf %lsc, %sum : f32\n"
    << "        memref.store %lnew, %L[%r] : " << wR << "\n"
    << "        memref.store %mnew, %M[%r] : " << wR << "\n"
    << "        scf.for %c = %c0 to %dv step %c1 {\n"
    << "          %ov = memref.load %O[%r, %c] : " << wO << "\n"
    << "          %o2 = arith.mulf %ov, %alpha : f32\n"
    << "          memref.store %o2, %O[%r, %c] : " << wO << "\n"
    << "        }\n      }\n      gpu.barrier\n";
  // O += P V.
  if (p.scalar) {
    o << "      scf.for %mt = %c0 to %br step %c16 {\n"
      << "        scf.for %nt = %c0 to %dv step %c16 {\n"
      << "          scf.for %e = %tx to %c256 step %nsg {\n"
      << "            %i = arith.divui %e, %c16 : index\n"
      << "            %j = arith.remui %e, %c16 : index\n"
      << "            %oi = arith.addi %mt, %i : index\n"
      << "            %oj = arith.addi %nt, %j : index\n"
      << "            %o0 = memref.load %O[%oi, %oj] : " << wO << "\n"
      << "            %on = scf.for %kt = %c0 to %bc step %c1 iter_args(%acc = "
         "%o0) -> (f32) {\n"
      << "              %pv = memref.load %P[%oi, %kt] : " << wP << "\n"
      << "              %vv = memref.load %Vs[%kt, %oj] : " << wV << "\n"
      << "              %pf = arith.extf %pv : " << p.elt << " to f32\n"
      << "              %vf = arith.extf %vv : " << p.elt << " to f32\n"
      << "              %pr = arith.mulf %pf, %vf : f32\n"
      << "              %n = arith.addf %acc, %pr : f32\n"
      << "              scf.yield %n : f32\n"
      << "            }\n"
      << "            memref.store %on, %O[%oi, %oj] : " << wO << "\n"
      << "          }\n        }\n      }\n      gpu.barrier\n";
  } else {
    o << "      scf.for %mt = %c0 to %br step %c16 {\n"
      << "        scf.for %nt = %c0 to %dv step %c16 {\n"
      << "          %oc = gpu.subgroup_mma_load_matrix %O[%mt, %nt] "
         "{leadDimension = " << padO << " : index} : " << wO << " -> " << C
      << "\n"
      << "          %on = scf.for %kt = %c0 to %bc step %c16 iter_args(%acc = %oc) "
         "-> (" << C << ") {\n"
      << "            %pa = gpu.subgroup_mma_load_matrix %P[%mt, %kt] "
         "{leadDimension = " << padP << " : index} : " << wP << " -> " << A
      << "\n"
      << "            %vb = gpu.subgroup_mma_load_matrix %Vs[%kt, %nt] "
         "{leadDimension = " << padV << " : index} : " << wV << " -> " << Bm
      << "\n"
      << "            %n = gpu.subgroup_mma_compute %pa, %vb, %acc : " << A
      << ", " << Bm << " -> " << C << "\n"
      << "            scf.yield %n : " << C << "\n"
      << "          }\n"
      << "          gpu.subgroup_mma_store_matrix %on, %O[%mt, %nt] "
         "{leadDimension = " << padO << " : index} : " << C << ", " << wO
      << "\n"
      << "        }\n      }\n      gpu.barrier\n";
  }
  o << "    }\n";
  // Each row below Sq (the last query tile's padding is not written): out
  // = O / l and lse = m ln2 + ln l, 0 and -inf for a row that saw no key;
  // with split-KV the chunk's partials instead, O / l in f32 and m + log2 l
  // in log2 units, for the merge kernel.
  o << "    scf.for %r = %tx to %qrows step %nsg {\n"
    << "      %l = memref.load %L[%r] : " << wR << "\n"
    << "      %iz = arith.cmpf oeq, %l, %zero : f32\n"
    << "      %qrow = arith.addi %q0, %r : index\n"
    << "      scf.for %c = %c0 to %dv step %c1 {\n"
    << "        %ov = memref.load %O[%r, %c] : " << wO << "\n"
    << "        %dq = arith.divf %ov, %l : f32\n"
    << "        %y = arith.select %iz, %zero, %dq : f32\n";
  if (split)
    o << "        memref.store %y, " << wsOut << "[%b, %h, %bz, %qrow, %c] : "
      << ty(wsOut) << "\n";
  else
    o << "        %yh = arith.truncf %y : f32 to " << p.elt << "\n"
      << "        memref.store %yh, " << out << "[%b, %h, %qrow, %c] : "
      << ty(out) << "\n";
  o << "      }\n";
  if (split || p.lse) {
    // The logarithm of 1 for an empty row, not of 0 (undefined in SPIR-V).
    o << "      %m = memref.load %M[%r] : " << wR << "\n"
      << "      %l1 = arith.constant 1.0 : f32\n"
      << "      %lsafe = arith.select %iz, %l1, %l : f32\n";
    if (split)
      o << "      %lg = math.log2 %lsafe : f32\n"
        << "      %lsum = arith.addf %m, %lg : f32\n";
    else
      o << "      %mm = arith.mulf %m, %ln2 : f32\n"
        << "      %lg = math.log %lsafe : f32\n"
        << "      %lsum = arith.addf %mm, %lg : f32\n";
    o << "      %lv = arith.select %iz, %ninf, %lsum : f32\n";
    if (split)
      o << "      memref.store %lv, " << wsLse << "[%b, %h, %bz, %qrow] : "
        << ty(wsLse) << "\n";
    else
      o << "      memref.store %lv, " << lse << "[%b, %h, %qrow] : "
        << ty(lse) << "\n";
  }
  o << "    }\n    gpu.terminator\n  }\n  return\n}\n";
  return o.str();
}

struct SPIRVCoopMatKernelPass
    : public PassWrapper<SPIRVCoopMatKernelPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(SPIRVCoopMatKernelPass)

  SPIRVCoopMatKernelPass() = default;
  SPIRVCoopMatKernelPass(const SPIRVCoopMatKernelPass &other)
      : PassWrapper(other) {}
  SPIRVCoopMatKernelPass(int64_t bq, int64_t bkv, int64_t sg, bool scalar,
                         int64_t splits) {
    blockQ = bq;
    blockKv = bkv;
    subgroupSize = sg;
    scalarMatrices = scalar;
    kvSplits = splits;
  }

  Option<int64_t> blockQ{*this, "block-q",
                         llvm::cl::desc("Query rows per workgroup (a "
                                        "multiple of 16; a last partial "
                                        "tile is zero-padded)"),
                         llvm::cl::init(16)};
  Option<int64_t> blockKv{*this, "block-kv",
                          llvm::cl::desc("Keys per block (a multiple of 16; "
                                         "a last partial block is "
                                         "zero-padded and masked)"),
                          llvm::cl::init(32)};
  Option<int64_t> subgroupSize{
      *this, "subgroup-size",
      llvm::cl::desc("Invocations per workgroup: one subgroup"),
      llvm::cl::init(32)};
  Option<bool> scalarMatrices{
      *this, "scalar-matrices",
      llvm::cl::desc("Compute the two products with scalar loops instead of "
                     "cooperative matrices (same kernel otherwise; for "
                     "devices without them, and to test it there)"),
      llvm::cl::init(false)};
  Option<int64_t> kvSplits{
      *this, "kv-splits",
      llvm::cl::desc("1 = one kernel; N > 1 = split-KV: grid z enumerates N "
                     "chunks of the key blocks, each writing O / l and "
                     "m + log2 l into f32 workspaces allocated before the "
                     "launch, then the merge kernel (SplitKV.h) writes out "
                     "and lse"),
      llvm::cl::init(1)};

  StringRef getArgument() const final { return "attn-spirv-coopmat-kernel"; }
  StringRef getDescription() const final {
    return "Replace a kernel-source function (memref args -> to_tensor -> "
           "attn.sdpa -> materialize_in_destination) with one gpu.launch "
           "computing it with 16x16x16 f16 cooperative matrices "
           "(gpu.subgroup_mma_*), S and P through workgroup memory, one "
           "subgroup per workgroup; dropout by the shared Philox decision; "
           "with kv-splits > 1 a partial launch over key chunks, workspaces "
           "and the split-KV merge launch; errors name what it does not "
           "support";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, gpu::GPUDialect, math::MathDialect,
                    memref::MemRefDialect, scf::SCFDialect,
                    spirv::SPIRVDialect, func::FuncDialect>();
  }

  LogicalResult rewrite(func::FuncOp fn, attn::SdpaOp op) {
    auto fail = [&](const Twine &why) {
      return op.emitError("attn-spirv-coopmat-kernel: ") << why;
    };
    // The form: every operand a to_tensor of an argument, every result
    // materialized into an argument, nothing else in the body.
    auto argOf = [&](Value t) -> BlockArgument {
      auto tt = t.getDefiningOp<bufferization::ToTensorOp>();
      if (!tt)
        return {};
      auto arg = dyn_cast<BlockArgument>(tt.getBuffer());
      return arg && arg.getOwner() == &fn.getBody().front() ? arg
                                                            : BlockArgument();
    };
    SmallVector<Value> ins{op.getQuery(), op.getKey(), op.getValue()};
    if (op.getMask())
      ins.push_back(op.getMask());
    SmallVector<BlockArgument> argOrder;
    for (Value in : ins) {
      BlockArgument arg = argOf(in);
      if (!arg)
        return fail("operands must be bufferization.to_tensor of function "
                    "arguments (the JIT's kernel source form)");
      argOrder.push_back(arg);
    }
    for (Value res : op->getResults()) {
      if (!res.hasOneUse())
        return fail("each result must be used once, by "
                    "bufferization.materialize_in_destination");
      auto mat = dyn_cast<bufferization::MaterializeInDestinationOp>(
          *res.getUsers().begin());
      auto arg = mat ? dyn_cast<BlockArgument>(mat.getDest()) : nullptr;
      if (!arg)
        return fail("each result must be materialized into a function "
                    "argument");
      argOrder.push_back(arg);
    }
    if (Value seed = op.getSeed()) {
      auto arg = dyn_cast<BlockArgument>(seed);
      if (!arg || arg.getOwner() != &fn.getBody().front())
        return fail("the dropout seed must be a function argument");
      argOrder.push_back(arg);
    }
    for (auto [i, arg] : llvm::enumerate(argOrder))
      if (arg.getArgNumber() != i)
        return fail("arguments must be q, k, v, [mask], out, [lse], [seed] "
                    "in order");
    if (argOrder.size() != fn.getNumArguments())
      return fail("the function has arguments the attention does not use");
    for (Operation &other : fn.getBody().front())
      if (!isa<bufferization::ToTensorOp, attn::SdpaOp,
               bufferization::MaterializeInDestinationOp, func::ReturnOp>(
              other))
        return fail("the function holds more than the attention: '" +
                    other.getName().getStringRef() + "'");

    auto qT = op.getQueryType(), kT = op.getKeyType(), vT = op.getValueType();
    if (!qT.hasStaticShape() || !kT.hasStaticShape() || !vT.hasStaticShape() ||
        (op.getMask() &&
         !cast<RankedTensorType>(op.getMask().getType()).hasStaticShape()))
      return fail("the coopmat kernel needs static shapes");
    if (qT.getRank() != 4)
      return fail("expected rank-4 q/k/v");
    Type elt = qT.getElementType();
    if (!elt.isF16() && !elt.isBF16())
      return fail("the coopmat kernel is f16 or bf16 x the same + f32 only "
                  "(got " + typeStr(elt) + "); use variant=portable");
    // A bf16 kernel on cooperative matrices is written in f16 (the bytes
    // are the same) and retyped after the SPIR-V conversion.
    const bool bf16AsF16 = elt.isBF16() && !scalarMatrices;
    for (BlockArgument arg : fn.getArguments()) {
      if (arg == op.getSeed())
        continue;
      auto mt = dyn_cast<MemRefType>(arg.getType());
      if (!mt || !mt.getLayout().isIdentity() || mt.getMemorySpace())
        return fail("the coopmat kernel needs dense (identity-layout) "
                    "buffers in the default memory space; got " +
                    typeStr(arg.getType()));
    }
    CoopMatParams p;
    p.B = qT.getDimSize(0);
    p.Hq = qT.getDimSize(1);
    p.Sq = qT.getDimSize(2);
    p.D = qT.getDimSize(3);
    p.Hkv = kT.getDimSize(1);
    p.Skv = kT.getDimSize(2);
    p.Dv = vT.getDimSize(3);
    p.Br = blockQ;
    p.Bc = blockKv;
    p.subgroup = subgroupSize;
    p.scalar = scalarMatrices;
    p.causal = op.getCausal();
    p.lse = op.getLse() != nullptr;
    p.scale = op.getEffectiveScale();
    p.elt = elt.isBF16() && !bf16AsF16 ? "bf16" : "f16";
    p.dropout = op.getSeed() ? op.getEffectiveDropout() : 0.0;
    p.splits = kvSplits;
    if (p.splits < 1)
      return fail("kv-splits must be >= 1 (got " + Twine(p.splits) + ")");
    if (p.D % 16 || p.Dv % 16)
      return fail("the coopmat kernel needs D and Dv multiples of 16 (got " +
                  Twine(p.D) + " and " + Twine(p.Dv) + ")");
    if (p.Br <= 0 || p.Br % 16 || p.Bc <= 0 || p.Bc % 16)
      return fail("block-q and block-kv must be positive multiples of 16 "
                  "(block-q " + Twine(p.Br) + ", block-kv " + Twine(p.Bc) +
                  ")");
    if (p.subgroup <= 0)
      return fail("subgroup-size must be positive");
    if (Value m = op.getMask()) {
      auto mt = cast<RankedTensorType>(m.getType());
      if (mt.getDimSize(0) != p.B || mt.getDimSize(1) != p.Hq)
        return fail("the mask must be expanded to [B, Hq, Sq, Skv] (the "
                    "runtime does so)");
      Type e = mt.getElementType();
      p.maskElt = typeStr(e);
      p.mask = isa<FloatType>(e) ? CoopMatParams::Additive
                                 : CoopMatParams::Keep;
      if (isa<FloatType>(e) && !e.isF16() && !e.isBF16() && !e.isF32())
        return fail("additive masks must be f16, bf16 or f32");
      if (isa<FloatType>(e) && (e.isF16() || e.isBF16()) &&
          e.isBF16() != elt.isBF16() && !scalarMatrices)
        return fail("a 16-bit additive mask must have the data's type on "
                    "cooperative matrices (got " + p.maskElt + " with " +
                    typeStr(elt) + ")");
      if (bf16AsF16 && e.isBF16())
        p.maskElt = "f16";
    }
    if (bf16AsF16) {
      // The function's bf16 buffers become f16 buffers of the same bytes;
      // the module is marked for attn-spirv-coopmat-bf16.
      Type f16 = Float16Type::get(&getContext());
      for (BlockArgument arg : fn.getArguments())
        if (auto mt = dyn_cast<MemRefType>(arg.getType());
            mt && mt.getElementType().isBF16())
          arg.setType(MemRefType::get(mt.getShape(), f16, mt.getLayout(),
                                      mt.getMemorySpace()));
      fn.setFunctionType(FunctionType::get(
          &getContext(), fn.getBody().front().getArgumentTypes(),
          fn.getFunctionType().getResults()));
      fn->getParentOfType<ModuleOp>()->setAttr(mlir::attn::kCoopMatBf16Attr,
                                               UnitAttr::get(&getContext()));
    }
    for (BlockArgument arg : fn.getArguments())
      p.argTypes.push_back(typeStr(arg.getType()));

    std::string text = buildKernelText(p);
    ParserConfig config(&getContext());
    OwningOpRef<ModuleOp> parsed =
        parseSourceString<ModuleOp>(text, config, "coopmat-kernel");
    if (!parsed)
      return fail("internal error: the generated kernel does not parse");
    func::FuncOp kernel = parsed->lookupSymbol<func::FuncOp>("kernel");
    // The stand-ins become the shared builders' IR.
    SmallVector<func::CallOp> standIns;
    kernel.walk([&](func::CallOp call) { standIns.push_back(call); });
    for (func::CallOp call : standIns) {
      OpBuilder b(call);
      auto args = call.getOperands();
      SmallVector<Value> results;
      if (call.getCallee() == kDropoutKeepFn) {
        results.push_back(buildDropoutKeep(b, call.getLoc(), args[0], args[1],
                                           args[2], args[3], args[4],
                                           p.dropout));
      } else {
        auto [begin, end] =
            splitKeyBlocks(b, call.getLoc(), args[0], args[1], args[2]);
        results = {begin, end};
      }
      call.replaceAllUsesWith(results);
      call.erase();
    }

    // The parsed body (constants and the launch) goes in front of the
    // attention, its arguments mapped to the function's; with split-KV
    // between the workspaces' allocation and the merge launch, which
    // emitWithSplitKV adds (and names the launches so that outlining puts
    // both kernels in one module).
    Block &body = fn.getBody().front();
    SmallVector<Operation *> old;
    for (Operation &o : body.without_terminator())
      old.push_back(&o);
    OpBuilder b(old.front());
    Location loc = op.getLoc();
    unsigned nArgs = fn.getNumArguments();
    Value q = fn.getArgument(0);
    Value out = argOrder[ins.size()];
    Value lse = p.lse ? Value(argOrder[ins.size() + 1]) : Value();
    emitWithSplitKV(
        b, loc, op, q, p.Dv, out, lse, p.splits, /*staticSplits=*/true,
        [&](std::optional<SplitKVWorkspace> ws, SplitKVKernelNames names) {
          IRMapping map;
          for (unsigned i = 0; i < nArgs; ++i)
            map.map(kernel.getArgument(i), fn.getArgument(i));
          if (ws) {
            map.map(kernel.getArgument(nArgs), ws->partialOut);
            map.map(kernel.getArgument(nArgs + 1), ws->partialLse);
          }
          for (Operation &o : kernel.getBody().front().without_terminator()) {
            Operation *copy = b.clone(o, map);
            if (auto launch = dyn_cast<gpu::LaunchOp>(copy); launch && ws) {
              launch.setModuleAttr(names.module);
              launch.setFunctionAttr(names.partial);
            }
          }
        });
    for (Operation *o : llvm::reverse(old))
      o->erase();
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<func::FuncOp, attn::SdpaOp>> work;
    module.walk([&](attn::SdpaOp op) {
      work.push_back({op->getParentOfType<func::FuncOp>(), op});
    });
    llvm::DenseMap<Operation *, unsigned> perFunction;
    for (auto [fn, op] : work)
      ++perFunction[fn];
    for (auto [fn, op] : work) {
      if (!fn) {
        op.emitError("attn-spirv-coopmat-kernel: attn.sdpa must be in a "
                     "func.func");
        return signalPassFailure();
      }
      if (perFunction[fn] != 1) {
        op.emitError("attn-spirv-coopmat-kernel: one attn.sdpa per function "
                     "(the kernel source form), found ")
            << perFunction[fn];
        return signalPassFailure();
      }
    }
    for (auto [fn, op] : work)
      if (failed(rewrite(fn, op)))
        return signalPassFailure();
  }
};
} // namespace

std::unique_ptr<Pass> mlir::attn::createSPIRVCoopMatKernelPass(
    int64_t blockQ, int64_t blockKv, int64_t subgroupSize, bool scalar,
    int64_t kvSplits) {
  return std::make_unique<SPIRVCoopMatKernelPass>(blockQ, blockKv,
                                                  subgroupSize, scalar,
                                                  kvSplits);
}

void mlir::attn::registerSPIRVCoopMatKernelPass() {
  PassRegistration<SPIRVCoopMatKernelPass>();
}
