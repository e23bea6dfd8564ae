//===- AttnToNVGPU.cpp - attn.sdpa to a tensor-core (mma.sync) gpu.launch --===//
//
// The FlashAttention-2 kernel on tensor cores (f16, bf16): a workgroup of
// 4 or 8 warps (1 or 2 for short static query lengths such as decode),
// each warp owning 16 or 32 query rows (one or two m16 row tiles; decode
// may pack a GQA group's query heads into the rows). Q.K^T and P.V are mma.sync
// m16n8k16 (f16/bf16 in, f32 accumulators): nvgpu.mma.sync for f16,
// nvvm.mma.sync for bf16 (MLIR 22's nvgpu.mma.sync cannot deduce bf16 PTX
// types).
//
// D and Dv up to 256 (over 128: one row tile, Q read from shared memory
// per block, 16-key blocks).
//
// Shared memory (dynamic, one i8 buffer cut by memref.view) is a ring of
// `stages` K/V tiles of 64 keys (16 or 32 in some geometries), filled by
// cp.async (nvgpu.device_async_copy,
// 16-byte chunks, rows past the end zero-filled by a source size of 0):
// block j + stages - 1 is in flight while block j is computed. Within a
// tile row, 16-byte chunk c is stored at chunk c ^ swizzle(row), so that
// the 8 row addresses of every ldmatrix (same logical chunk, 8 consecutive
// rows) fall into 8 distinct 16-byte bank groups. Q goes through the same
// path once (cp.async, then ldmatrix x4 to A fragments), aliasing the last
// stage, which the prologue does not fill.
//
// The online softmax runs on the accumulator fragments: each thread holds
// two rows per row tile (g and g + 8 of its 16) and reduces row maxima across its
// quad with xor shuffles; the row sums stay per-thread partial until the
// end. P is converted to the element type in registers and reused as the A
// operand of P.V (the C fragment of m16n8k16 is laid out as half of an A
// fragment). Masks (bool keep-mask or additive float, broadcast over B/H)
// are read per S fragment element. With split-KV (SplitKV.h) grid y is
// Hq x splits and each workgroup walks one chunk of its key blocks, writing
// the chunk's partial output and lse for the merge kernel (or, when the
// launch's split count is 1, out and lse directly). Dropout applies the
// shared Philox decision to each P element before P.V (docs/NVIDIA.md).
//
// Fragment layouts (PTX ISA, mma.m16n8k16), lane = 4 g + t:
//   A (16x16): a[0] = A[g][2t..2t+1], a[1] = A[g+8][2t..], a[2] = A[g][8+2t..],
//              a[3] = A[g+8][8+2t..]
//   B (16x8):  b[0] = B[2t..2t+1][g], b[1] = B[8+2t..][g]
//   C (16x8):  c[0] = C[g][2t..2t+1], c[1] = C[g+8][2t..]
// ldmatrix .x4: lanes 8i..8i+7 give the row addresses of matrix i, which
// lands in register i (thread 4g + t gets row g, columns 2t, 2t + 1; with
// .trans, column g, rows 2t, 2t + 1).
//
//===----------------------------------------------------------------------===//
#include "attn/Conversion/AttnToNVGPU/AttnToNVGPU.h"
#include "attn/Conversion/KernelOperands.h"
#include "attn/Conversion/SplitKV.h"

#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Dialect/Attn/Transforms/Transforms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <tuple>

using namespace mlir;
using namespace mlir::attn;

namespace {

constexpr int64_t kWarp = 32;
/// Causal grids with at least this many query blocks start their
/// workgroups heaviest first across heads (heaviestFirst).
constexpr int64_t kHeaviestFirstBlocks = 16;
/// How far (log2 units) a row's running max may lag its block max before
/// the kernel rescales: P stays below 2^8 (foldBlock).
constexpr double kLazyRescaleLog2 = 8.0;

/// The XOR swizzle of a tile with rows of `width` elements (16-bit), in
/// 16-byte chunks: chunk c of row r is stored at c ^ ((r / rowDiv) % p).
/// p is a power of two dividing the chunk count (so c ^ x stays in the
/// row); rowDiv > 1 when a row is narrower than the 128 bytes of the 32
/// banks (several rows per bank line). For every width here, p * rowDiv
/// divides 8, so rows r and r + 16 k swizzle alike: ldmatrix addresses
/// (a multiple of 16 plus a lane's row) need only the lane's part.
struct Swizzle {
  int64_t p, rowDiv;
  static Swizzle forWidth(int64_t width) {
    int64_t n = width / 8;
    int64_t p = std::min<int64_t>(8, n & -n);
    int64_t rowDiv = (p == n && n < 8) ? 8 / n : 1;
    return {p, rowDiv};
  }
};

class TensorCoreKernel {
public:
  TensorCoreKernel(OpBuilder &b, Location loc, SdpaOp op, Value q, Value k,
                   Value v, Value mask, Value out, Value lse,
                   const NVGPUGeometry &geo,
                   std::optional<SplitKVWorkspace> ws = std::nullopt,
                   SplitKVKernelNames names = {})
      : b(b), loc(loc), op(op), q(q), k(k), v(v), mask(mask), out(out),
        lse(lse), geo(geo), ws(ws), names(names) {
    elt = cast<MemRefType>(q.getType()).getElementType();
    d = cast<MemRefType>(q.getType()).getDimSize(3);
    dv = cast<MemRefType>(v.getType()).getDimSize(3);
    eltBytes = elt.getIntOrFloatBitWidth() / 8;
    // One query row sees every key: causal changes nothing (and packed
    // rows are heads, not positions).
    causal = op.getCausal() && !geo.packHeads;
    stageBytes = geo.blockKv * (d + dv) * eltBytes;
    int64_t qBytes = geo.blockQ * d * eltBytes;
    // Q aliases the last stage when it fits and its fragments stay in
    // registers; re-read per block (two row tiles), it needs its own space.
    qOffset = qBytes <= stageBytes && !geo.qFromSmem
                  ? (geo.stages - 1) * stageBytes
                  : geo.stages * stageBytes;
  }

  void build() {
    Value sq = dim(q, 2), hq = dim(q, 1), batch = dim(q, 0);
    Value gx = arith::DivUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, sq, idx(geo.blockQ - 1)),
        idx(geo.blockQ));
    Value one = idx(1);
    Value shared = arith::ConstantOp::create(
        b, loc, b.getI32IntegerAttr(static_cast<int32_t>(geo.sharedBytes)));
    // Packed decode: rows are the query heads of one KV head's group.
    Value hkv = dim(k, 1), group;
    if (geo.packHeads) {
      group = arith::DivUIOp::create(b, loc, hq, hkv);
      gx = arith::DivUIOp::create(
          b, loc, arith::AddIOp::create(b, loc, group, idx(geo.blockQ - 1)),
          idx(geo.blockQ));
      hq = hkv;
    }
    // Split-KV: grid y enumerates (head, chunk) pairs.
    Value gy = ws ? mul(hq, splitCountOf(b, loc, *ws)) : hq;
    auto launch = gpu::LaunchOp::create(
        b, loc, gx, gy, batch, idx(kWarp * geo.warps), one, one, shared,
        /*asyncTokenType=*/nullptr, /*asyncDependencies=*/{},
        /*workgroupAttributions=*/{}, /*privateAttributions=*/{}, nullptr,
        nullptr, nullptr, names.module, names.partial);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&launch.getBody().front());
    // The dynamic shared memory, 16-byte aligned; every view below starts
    // at a multiple of 16 bytes, as cp.async and ldmatrix need.
    auto base = memref::GetGlobalOp::create(b, loc, smemGlobalType(),
                                            smemGlobal());
    if (geo.maxRegisters > 0)
      base->setAttr(kNVVMMaxRegistersAttr,
                    b.getI32IntegerAttr(static_cast<int32_t>(geo.maxRegisters)));
    smem = memref::CastOp::create(
        b, loc,
        MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                        MemRefLayoutAttrInterface{}, workgroup()),
        base);
    launchOp = launch;
    if (ws)
      splits = splitCountOf(b, loc, *ws);
    if (geo.packHeads) {
      // The body then runs unchanged on [B, Hkv, group, ...] views: h is
      // the KV head, rows are its group's query heads, K and V's head
      // ratio is 1.
      Value hkvIn = dim(k, 1);
      Value groupIn = arith::DivUIOp::create(b, loc, dim(q, 1), hkvIn);
      q = packedView(q, 2, hkvIn, groupIn);
      out = packedView(out, 2, hkvIn, groupIn);
      if (lse)
        lse = packedView(lse, 2, hkvIn, groupIn);
      if (ws) {
        ws->partialOut = packedView(ws->partialOut, 3, hkvIn, groupIn);
        ws->partialLse = packedView(ws->partialLse, 3, hkvIn, groupIn);
      }
    }
    body(launch.getThreadIds().x);
    gpu::TerminatorOp::create(b, loc);
  }

private:
  /// Causal: query block i sees (i + 1) blocks' worth of keys, so the
  /// order in which workgroups start decides how long the last ones run
  /// alone. The hardware starts them in linear id order (x fastest); this
  /// maps the linear id to (query block, y, z) so that, within a group of
  /// G (y, z) pairs, the heaviest query block of every pair starts first,
  /// then the next heaviest (longest processing time first: the
  /// workgroups left at the end are the shortest). With the query block
  /// fastest instead (x = query block), each head's blocks form a
  /// sawtooth and the heavy blocks of the last heads end alone: a list
  /// scheduling model of 264 slots puts that at 0.87-0.89 of the ideal at
  /// S = 4k-16k against 0.99 here. G keeps the K and V of the group's heads
  /// (Skv * (D + Dv) * element bytes each, shared by a GQA group) within
  /// geo.causalGroupBytes, so that the workgroups in flight, which all
  /// belong to one group, read K and V that L2 holds. A bijection of the
  /// grid: any G is correct, it only changes the order. (With split-KV,
  /// y counts (head, chunk) pairs and a chunk reads 1 / splits of its
  /// head's K and V: such a group holds less than the budget.)
  /// All of it in 32-bit arithmetic (a 64-bit division is a subroutine of
  /// ~70 instructions, and the coordinates are computed twice); the
  /// runtime refuses grids of 2^32 or more workgroups (computeGrid). Only
  /// from kHeaviestFirstBlocks query blocks up: below, the workgroups are
  /// short and many, their order matters little, and the H100 measured
  /// the mapping's cost instead (D = 64 causal, S = 512-1k: -7-15%;
  /// bench/results/cuda-h100-2026-11-22m). `fresh`: the linear id and the
  /// lengths through opaque(), so that LLVM computes the coordinates again
  /// instead of keeping the first computation's values live (see
  /// blockCoords()).
  std::tuple<Value, Value, Value> heaviestFirst(gpu::LaunchOp launch,
                                                bool fresh) {
    Type i32 = b.getI32Type();
    auto narrow = [&](Value x) -> Value {
      return arith::IndexCastOp::create(b, loc, i32, x);
    };
    auto widen = [&](Value x) -> Value {
      return arith::IndexCastUIOp::create(b, loc, b.getIndexType(), x);
    };
    auto c32 = [&](int64_t x) -> Value {
      return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(x));
    };
    auto divu = [&](Value x, Value y) -> Value {
      return arith::DivUIOp::create(b, loc, x, y);
    };
    auto remu = [&](Value x, Value y) -> Value {
      return arith::RemUIOp::create(b, loc, x, y);
    };
    auto minu = [&](Value x, Value y) -> Value {
      return arith::MinUIOp::create(b, loc, x, y);
    };
    auto maxu = [&](Value x, Value y) -> Value {
      return arith::MaxUIOp::create(b, loc, x, y);
    };
    auto ids = launch.getBlockIds();
    auto grid = launch.getGridSize();
    Value gx = narrow(grid.x), one = c32(1);
    Value last = sub(gx, one);
    Value many = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, gx,
                                       c32(kHeaviestFirstBlocks));
    Type index = b.getIndexType();
    auto ifOp = scf::IfOp::create(b, loc, TypeRange{index, index, index}, many,
                                  /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    // Few query blocks: x = query block, the last (heaviest) first.
    b.setInsertionPointToStart(&ifOp.getElseRegion().front());
    scf::YieldOp::create(
        b, loc, ValueRange{widen(sub(last, narrow(ids.x))), ids.y, ids.z});
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    Value gy = narrow(grid.y), gz = narrow(grid.z);
    Value linear =
        add(narrow(ids.x), mul(gx, add(narrow(ids.y), mul(gy, narrow(ids.z)))));
    if (fresh)
      linear = narrow(opaque(widen(linear)));
    Value pairs = mul(gy, gz);
    // G = the keys whose K and V fit the budget x the GQA ratio (heads
    // sharing K and V) / Skv; fresh, from opaque copies of the lengths,
    // or LLVM would keep G live. Skv is clamped to 32 bits and the ratio
    // to 2^12 (G is at most the pair count anyway), so that the product
    // (keys <= 2^18) stays below 2^32.
    auto shape = [&](Value m, int64_t i) {
      return fresh ? opaque(dim(m, i)) : dim(m, i);
    };
    Value skv = narrow(minu(shape(k, 2), idx(INT32_MAX)));
    Value ratio =
        minu(divu(narrow(shape(q, 1)), maxu(narrow(shape(k, 1)), one)),
             c32(1 << 12));
    int64_t keys = std::clamp<int64_t>(
        geo.causalGroupBytes / ((d + dv) * eltBytes), 1, int64_t(1) << 18);
    Value group = divu(mul(c32(keys), maxu(ratio, one)), maxu(skv, one));
    group = minu(maxu(group, one), pairs);
    Value span = mul(group, gx);
    Value chunk = divu(linear, span);
    Value first = mul(chunk, group);
    Value inGroup = minu(group, sub(pairs, first));
    Value r = sub(linear, mul(chunk, span));
    Value rank = divu(r, inGroup);
    Value pair = add(first, remu(r, inGroup));
    scf::YieldOp::create(b, loc,
                         ValueRange{widen(sub(last, rank)),
                                    widen(remu(pair, gy)),
                                    widen(divu(pair, gy))});
    return {ifOp.getResult(0), ifOp.getResult(1), ifOp.getResult(2)};
  }

  /// This workgroup's query block, head (the KV head for packed decode)
  /// and batch, and sets `split` (split-KV: grid y is head x chunks + s).
  /// Causal: in heaviest-first order. Those coordinates are then computed
  /// values, not the block-id registers ptxas reads again where needed, so
  /// the epilogue asks for them again (`fresh`) rather than holding them
  /// across the key loop (held, D = 128 causal spilled 4 bytes).
  struct Coords {
    Value qb, h, bi;
  };
  Coords blockCoords(bool fresh) {
    auto ids = launchOp.getBlockIds();
    Coords c{ids.x, ids.y, ids.z};
    if (causal)
      std::tie(c.qb, c.h, c.bi) = heaviestFirst(launchOp, fresh);
    if (ws) {
      split = arith::RemUIOp::create(b, loc, c.h, splits);
      c.h = arith::DivUIOp::create(b, loc, c.h, splits);
    }
    return c;
  }

  OpBuilder &b;
  Location loc;
  SdpaOp op;
  gpu::LaunchOp launchOp;
  Value q, k, v, mask, out, lse, smem;
  NVGPUGeometry geo;
  std::optional<SplitKVWorkspace> ws;
  SplitKVKernelNames names;
  // Split-KV: the launch's chunk count and this workgroup's chunk.
  Value splits, split;
  // The first key block this workgroup walks (its chunk's begin, else 0):
  // loop indices and ring stages count from it, key positions add it.
  Value blockBase;
  int64_t d = 0, dv = 0, eltBytes = 2, stageBytes = 0, qOffset = 0;
  Value flat; // flatSmem()
  Type elt;
  bool causal = false;

  /// geo.packHeads: `m` ([B, Hq, 1, ...] at dims 0, 1, rowDim) seen as
  /// [B, Hkv, Hq / Hkv, ...]: element (b, hk, r) is m's (b, hk * group + r,
  /// 0), strides (sB, sH * group, sH). Same memory, so the merge kernel and
  /// the host see the usual layout.
  Value packedView(Value m, int64_t rowDim, Value hkv, Value group) {
    auto type = cast<MemRefType>(m.getType());
    auto [srcStrides, srcOffset] = type.getStridesAndOffset();
    auto meta = memref::ExtractStridedMetadataOp::create(b, loc, m);
    int64_t rank = type.getRank();
    SmallVector<OpFoldResult> sizes, strides;
    SmallVector<int64_t> shape, staticStrides;
    for (int64_t i = 0; i < rank; ++i) {
      bool moved = i == 1 || i == rowDim;
      // Sizes: Hkv and the group where heads and rows were, the rest as
      // they are (a static size stays static: D, Dv).
      if (i == 1)
        sizes.push_back(hkv);
      else if (i == rowDim)
        sizes.push_back(group);
      else if (!type.isDynamicDim(i))
        sizes.push_back(b.getIndexAttr(type.getDimSize(i)));
      else
        sizes.push_back(meta.getSizes()[i]);
      shape.push_back(moved ? ShapedType::kDynamic : type.getDimSize(i));
      // Strides: sH * group for heads, sH for rows, the rest as they are
      // (a static one stays static: cp.async needs the unit stride of D).
      if (i == 1)
        strides.push_back(mul(meta.getStrides()[1], group));
      else if (i == rowDim)
        strides.push_back(meta.getStrides()[1]);
      else if (!ShapedType::isDynamic(srcStrides[i]))
        strides.push_back(b.getIndexAttr(srcStrides[i]));
      else
        strides.push_back(meta.getStrides()[i]);
      staticStrides.push_back(moved ? ShapedType::kDynamic : srcStrides[i]);
    }
    auto viewType = MemRefType::get(
        shape, type.getElementType(),
        StridedLayoutAttr::get(b.getContext(), srcOffset, staticStrides),
        type.getMemorySpace());
    OpFoldResult offset = ShapedType::isDynamic(srcOffset)
                              ? OpFoldResult(meta.getOffset())
                              : OpFoldResult(b.getIndexAttr(srcOffset));
    return memref::ReinterpretCastOp::create(b, loc, viewType, m, offset,
                                             sizes, strides);
  }

  MemRefType smemGlobalType() {
    return MemRefType::get({0}, b.getI8Type(), MemRefLayoutAttrInterface{},
                           workgroup());
  }
  /// The dynamic shared memory as an external, zero-sized workgroup global
  /// (PTX `.extern .shared .align 16 .b8 name[]`). Not
  /// gpu.dynamic_shared_memory: MLIR 22 lowers that to an internal global,
  /// which the NVPTX backend demotes to a 1-byte static variable.
  StringRef smemGlobal() {
    static constexpr StringLiteral name = "__attn_tc_dynamic_smem";
    auto module = op->getParentOfType<ModuleOp>();
    if (!module.lookupSymbol(name)) {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(module.getBody());
      memref::GlobalOp::create(b, loc, name, b.getStringAttr("public"),
                               smemGlobalType(), Attribute(),
                               /*constant=*/false, b.getI64IntegerAttr(16));
    }
    return name;
  }
  Attribute workgroup() {
    return gpu::AddressSpaceAttr::get(b.getContext(),
                                      gpu::AddressSpace::Workgroup);
  }
  Value idx(int64_t x) { return arith::ConstantIndexOp::create(b, loc, x); }
  Value f32(double x) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(x));
  }
  Value dim(Value m, int64_t i) {
    auto t = cast<MemRefType>(m.getType());
    if (!t.isDynamicDim(i))
      return idx(t.getDimSize(i));
    return memref::DimOp::create(b, loc, m, i);
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value divui(Value x, int64_t y) {
    return arith::DivUIOp::create(b, loc, x, idx(y));
  }
  Value remui(Value x, int64_t y) {
    return arith::RemUIOp::create(b, loc, x, idx(y));
  }
  Value addf(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value mulf(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value subf(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value maxf(Value x, Value y) {
    return arith::MaximumFOp::create(b, loc, x, y);
  }
  /// 2^x by one MUFU.EX2 (ex2.approx.ftz.f32). math.exp2 becomes
  /// ex2.approx.f32, which ptxas wraps in a subnormal range check and two
  /// conditional multiplies (4 instructions per element instead of 1).
  /// Flushing subnormals is harmless here: an exponent below -126 is a
  /// probability or rescale factor under 2^-126 next to a row sum of at
  /// least 1 (the row max contributes 2^0 or more), and -inf still gives 0.
  Value exp2(Value x) {
    return LLVM::CallIntrinsicOp::create(
               b, loc, b.getF32Type(),
               b.getStringAttr("llvm.nvvm.ex2.approx.ftz.f32"), ValueRange{x})
        .getResult(0);
  }
  Value ult(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x, y);
  }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  Value extract(Value vec, int64_t i, int64_t j) {
    return vector::ExtractOp::create(b, loc, vec, ArrayRef<int64_t>{i, j});
  }
  Value toF32(Value x) {
    Type t = x.getType();
    if (t.isF32())
      return x;
    if (t.getIntOrFloatBitWidth() > 32)
      return arith::TruncFOp::create(b, loc, b.getF32Type(), x);
    return arith::ExtFOp::create(b, loc, b.getF32Type(), x);
  }
  /// A quad-uniform value: combine over the 4 threads of a quad.
  Value quadReduce(Value x, bool isMax) {
    for (int32_t offset : {1, 2}) {
      Value other = gpu::ShuffleOp::create(b, loc, x, offset, kWarp,
                                           gpu::ShuffleMode::XOR)
                        .getShuffleResult();
      x = isMax ? maxf(x, other) : addf(x, other);
    }
    return x;
  }

  /// A [rows x width] tile of the shared buffer at `byteShift`.
  Value view(int64_t rows, int64_t width, Value byteShift) {
    auto type = MemRefType::get({rows, width}, elt, MemRefLayoutAttrInterface{},
                                workgroup());
    return memref::ViewOp::create(b, loc, type, smem, byteShift, ValueRange{});
  }
  Value swizzle(const Swizzle &s, Value row) {
    return remui(divui(row, s.rowDiv), s.p);
  }
  /// Element column of logical 16-byte chunk `chunk` in a row whose swizzle
  /// is `sw`.
  Value physColumn(Value chunk, Value sw) {
    return mul(arith::XOrIOp::create(b, loc, chunk, sw), idx(8));
  }

  /// cp.async of rows [row0, row0 + rows) of src[bi, head] into `tile`
  /// ([rows x width], swizzled), 16 bytes per copy, consecutive threads on
  /// consecutive chunks (coalesced). Rows at or past `limit` (>= 1) are
  /// zero-filled: source size 0, source address clamped to row limit - 1,
  /// so a stale or NaN value never reaches the tile. `inRange`: the caller
  /// knows row0 + rows <= limit, so the copies need neither (fewer live
  /// values across the key loop).
  void issueTile(Value src, Value tile, int64_t rows, int64_t width,
                 Value bi, Value head, Value row0, Value limit, Value tid,
                 bool inRange = false) {
    int64_t perRow = width / 8, total = rows * perRow,
            threads = kWarp * geo.warps;
    Swizzle s = Swizzle::forWidth(width);
    Value last = sub(limit, idx(1));
    for (int64_t base = 0; base < total; base += threads) {
      auto copy = [&] {
        Value e = add(tid, idx(base));
        Value r = divui(e, perRow), c = remui(e, perRow);
        Value row = add(row0, r);
        if (inRange) {
          nvgpu::DeviceAsyncCopyOp::create(
              b, loc, tile, ValueRange{r, physColumn(c, swizzle(s, r))}, src,
              ValueRange{bi, head, row, mul(c, idx(8))}, b.getIndexAttr(8),
              Value(), b.getUnitAttr());
          return;
        }
        Value valid = ult(row, limit);
        Value safeRow = arith::MinUIOp::create(b, loc, row, last);
        Value srcElements = select(valid, idx(8), idx(0));
        nvgpu::DeviceAsyncCopyOp::create(
            b, loc, tile, ValueRange{r, physColumn(c, swizzle(s, r))}, src,
            ValueRange{bi, head, safeRow, mul(c, idx(8))}, b.getIndexAttr(8),
            srcElements, b.getUnitAttr());
      };
      if (base + threads <= total) {
        copy();
        continue;
      }
      auto ifOp = scf::IfOp::create(b, loc, ult(add(tid, idx(base)),
                                                idx(total)),
                                    /*withElseRegion=*/false);
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      copy();
    }
  }

  Value stageShift(Value stage) { return mul(stage, idx(stageBytes)); }
  Value kTile(Value stage) {
    return view(geo.blockKv, d, stageShift(stage));
  }
  Value vTile(Value stage) {
    return view(geo.blockKv, dv,
                add(stageShift(stage), idx(geo.blockKv * d * eltBytes)));
  }

  /// Issues the workgroup's key block `blk` (counted from blockBase) into
  /// ring stage blk % stages when blk < nBlocks, then commits a cp.async
  /// group (always, so that every thread counts the same groups).
  void issueBlock(Value blk, Value nBlocks, Value bi, Value hk, Value skv,
                  Value tid) {
    auto ifOp = scf::IfOp::create(b, loc, ult(blk, nBlocks), false);
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      Value stage = remui(blk, geo.stages);
      Value j0 = mul(add(blockBase, blk), idx(geo.blockKv));
      // Two row tiles (the kernels at the register limit): every block but
      // the last is whole, and its copies skip the row checks, which keeps
      // fewer values live across the key loop (at D = 128: no spill with
      // 32-key blocks, 8 bytes without this). With one row tile the second
      // copy of the issue code made ptxas spill instead (sm_80, causal).
      if (geo.rowTiles > 1) {
        auto whole = scf::IfOp::create(
            b, loc,
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule,
                                  add(j0, idx(geo.blockKv)), skv),
            /*withElseRegion=*/true);
        b.setInsertionPointToStart(&whole.getThenRegion().front());
        issueTile(k, kTile(stage), geo.blockKv, d, bi, hk, j0, skv, tid,
                  /*inRange=*/true);
        issueTile(v, vTile(stage), geo.blockKv, dv, bi, hk, j0, skv, tid,
                  /*inRange=*/true);
        b.setInsertionPointToStart(&whole.getElseRegion().front());
      }
      issueTile(k, kTile(stage), geo.blockKv, d, bi, hk, j0, skv, tid);
      issueTile(v, vTile(stage), geo.blockKv, dv, bi, hk, j0, skv, tid);
    }
    NVVM::CpAsyncCommitGroupOp::create(b, loc);
  }
  void waitGroups(int64_t pending) {
    NVVM::CpAsyncWaitGroupOp::create(b, loc, b.getI32IntegerAttr(pending));
  }

  /// D = A B + C on one m16n8k16 tile.
  Value mma(Value a, Value bFrag, Value c) {
    if (elt.isF16())
      return nvgpu::MmaSyncOp::create(b, loc, a, bFrag, c,
                                      ArrayRef<int64_t>{16, 8, 16});
    // bf16: nvvm.mma.sync takes each pair of bf16 as an i32 register.
    Type i32 = b.getI32Type();
    auto pack = [&](Value frag, int64_t i) {
      Value pair = vector::ExtractOp::create(b, loc, frag, ArrayRef<int64_t>{i});
      Value asInt = vector::BitCastOp::create(
          b, loc, VectorType::get({1}, i32), pair);
      return Value(
          vector::ExtractOp::create(b, loc, asInt, ArrayRef<int64_t>{0}));
    };
    SmallVector<Value> aRegs, bRegs, cRegs;
    for (int64_t i = 0; i < 4; ++i)
      aRegs.push_back(pack(a, i));
    for (int64_t i = 0; i < 2; ++i)
      bRegs.push_back(pack(bFrag, i));
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 2; ++j)
        cRegs.push_back(extract(c, i, j));
    Type f32t = b.getF32Type();
    auto resultType = LLVM::LLVMStructType::getLiteral(
        b.getContext(), {f32t, f32t, f32t, f32t});
    Value res = NVVM::MmaOp::create(
        b, loc, resultType, aRegs, bRegs, cRegs, ArrayRef<int64_t>{16, 8, 16},
        std::nullopt, std::nullopt,
        std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::bf16,
                                      NVVM::MMATypes::bf16},
        std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                       NVVM::MMALayout::col});
    SmallVector<Value> d4;
    for (int64_t i = 0; i < 4; ++i)
      d4.push_back(LLVM::ExtractValueOp::create(b, loc, res, i));
    return vector::FromElementsOp::create(b, loc, c.getType(), d4);
  }

  /// Rows 0-1 (matrices 0, 1) or 2-3 of an ldmatrix x4 result as a B
  /// fragment.
  Value halfOf(Value x4, int64_t which) {
    SmallVector<Value> e;
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 2; ++j)
        e.push_back(extract(x4, 2 * which + i, j));
    return vector::FromElementsOp::create(b, loc, VectorType::get({2, 2}, elt),
                                          e);
  }

  /// Index of a possibly broadcast mask dimension (KernelOperands.h).
  Value maskIndex(int64_t i, Value at) {
    return broadcastIndex(b, loc, mask, i, at);
  }

  /// A thread's place. Its rows, r = 2 mt + half for the warp's m16 tile
  /// mt (geo.rowTiles of them, 16 rows each) and fragment half: row0 +
  /// 16 rowTiles warp + 16 mt + g + 8 half.
  struct Lane {
    Value tid, lane, warp, t2;
    Value rowBase;                  // row0 + 16 rowTiles warp + g
    SmallVector<Value, 4> maskRows; // rows clamped to Sq - 1 (mask reads)
    Value maskB, maskH;
  };

  /// The thread's row r (built where it is used: held from the prologue,
  /// the rows would stay live across the key loops that do not need them).
  Value rowOf(const Lane &ln, int64_t r) {
    return add(ln.rowBase, idx(16 * (r / 2) + 8 * (r % 2)));
  }

  /// A lane's ldmatrix row address in a swizzled tile of `width`
  /// elements per row, as an element index relative to the tile: row
  /// `laneRow` (the lane's part of the row; the swizzle is the same for
  /// every multiple of 16 rows added to it), chunk `half` (0 or 1: which
  /// 8 columns of a 16-column fragment the lane addresses) through the
  /// swizzle. See fragment().
  Value laneAddress(Value laneRow, Value half, int64_t width) {
    Swizzle s = Swizzle::forWidth(width);
    return add(mul(laneRow, idx(width)), physColumn(half, swizzle(s, laneRow)));
  }

  /// ldmatrix x4 from the flat shared-memory view at element `tileBase`
  /// (the tile's start) + `lane` (laneAddress) for the fragment of columns
  /// [16 c2, 16 c2 + 16) and rows `rowImm` further (a multiple of 16).
  /// Physical chunk (2 c2 + half) ^ sw = hi + ((lo + half) ^ sw) with lo =
  /// 2 c2 mod p, the bits the swizzle touches, and hi the rest; as tile
  /// and row starts are multiples of 8 p elements, the address is
  /// ((tileBase + lane) ^ 8 lo) + 8 hi + rowImm: one base register per
  /// operand, one XOR per fragment, the rest an immediate offset. (Written
  /// as separate column indices, each of the D / 16 swizzled columns was
  /// hoisted out of the key loop into a register of its own: 40 registers
  /// at D = 128.) `tileBase` must vary per key block (a stage offset, or
  /// opaque()), or LLVM hoists every fragment's address again.
  Value fragment(Value tileBase, Value lane, int64_t width, int64_t c2,
                 int64_t rowImm, bool transpose) {
    Swizzle s = Swizzle::forWidth(width);
    int64_t lo = (2 * c2) % s.p, hi = 2 * c2 - lo;
    Value at = add(tileBase, lane);
    if (lo)
      at = arith::XOrIOp::create(b, loc, at, idx(8 * lo));
    if (int64_t imm = 8 * hi + rowImm * width)
      at = add(at, idx(imm));
    return nvgpu::LdMatrixOp::create(b, loc, VectorType::get({4, 2}, elt),
                                     flatSmem(), ValueRange{at}, transpose,
                                     /*numTiles=*/4);
  }

  /// The dynamic shared memory as one array of the element type.
  Value flatSmem() {
    if (!flat) {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointAfterValue(smem);
      auto type = MemRefType::get({geo.sharedBytes / eltBytes}, elt,
                                  MemRefLayoutAttrInterface{}, workgroup());
      flat = memref::ViewOp::create(b, loc, type, smem, idx(0), ValueRange{});
    }
    return flat;
  }

  /// `x` through an inline-asm move with side effects, which LLVM can
  /// neither see through nor hoist: an index the compiler treats as new in
  /// every key block (see fragment()).
  Value opaque(Value x) {
    Type i64 = b.getI64Type();
    Value in = arith::IndexCastOp::create(b, loc, i64, x);
    auto asmOp = LLVM::InlineAsmOp::create(
        b, loc, i64, ValueRange{in}, "mov.b64 $0, $1;", "=l,l",
        /*has_side_effects=*/true, /*is_align_stack=*/false,
        LLVM::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr());
    return arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                      asmOp.getResult(0));
  }

  /// Q's A fragment for the warp's row tile `mt` and D columns [16 kc,
  /// 16 kc + 16), by ldmatrix x4 from the Q tile at element `qBase`:
  /// lanes 0-15 address rows 16 rowTiles warp + 16 mt + l at chunk 2 kc,
  /// lanes 16-31 the same rows at chunk 2 kc + 1 (registers a0..a3 in A
  /// order).
  Value qFragment(Value qBase, const Lane &ln, int64_t mt, int64_t kc) {
    Value l16 = remui(ln.lane, 16), hi16 = divui(ln.lane, 16);
    Value row = add(mul(ln.warp, idx(16 * geo.rowTiles)), l16);
    return fragment(qBase, laneAddress(row, hi16, d), d, kc, 16 * mt,
                    /*transpose=*/false);
  }

  void body(Value tid) {
    auto [qb, h, bi] = blockCoords(/*fresh=*/false);
    Value sq = dim(q, 2), skv = dim(k, 2);
    Value hk = arith::DivUIOp::create(
        b, loc, h, arith::DivUIOp::create(b, loc, dim(q, 1), dim(k, 1)));
    Lane ln;
    ln.tid = tid;
    ln.warp = divui(tid, kWarp);
    ln.lane = remui(tid, kWarp);
    Value g = divui(ln.lane, 4);
    ln.t2 = mul(remui(ln.lane, 4), idx(2));
    Value row0 = mul(qb, idx(geo.blockQ));
    const int64_t mts = geo.rowTiles;
    Value warpRow = add(mul(ln.warp, idx(16 * mts)), g);
    ln.rowBase = add(row0, warpRow);
    if (mask) {
      Value lastRow = sub(sq, idx(1));
      for (int64_t r = 0; r < 2 * mts; ++r)
        ln.maskRows.push_back(
            arith::MinUIOp::create(b, loc, rowOf(ln, r), lastRow));
      ln.maskB = maskIndex(0, bi);
      ln.maskH = maskIndex(1, h);
    }
    Value diag = sub(skv, sq);

    // Causal: stop after the workgroup's last visible key.
    Value kvEnd = skv;
    if (causal) {
      Value rowsEnd =
          arith::MinUIOp::create(b, loc, add(row0, idx(geo.blockQ)), sq);
      kvEnd = arith::MinSIOp::create(
          b, loc, arith::MaxSIOp::create(b, loc, add(rowsEnd, diag), idx(0)),
          skv);
    }
    Value nBlocks = divui(add(kvEnd, idx(geo.blockKv - 1)), geo.blockKv);
    // Split-KV: this workgroup's chunk of those blocks.
    blockBase = idx(0);
    if (ws) {
      auto [begin, end] = splitKeyBlocks(b, loc, nBlocks, split, splits);
      blockBase = begin;
      nBlocks = sub(end, begin);
    }

    // Prologue: Q (one group), then blocks 0 .. stages - 2 (a group each).
    // Q sits in the last stage's space, which no block uses before the
    // first iteration's barrier.
    Value qTile = view(geo.blockQ, d, idx(qOffset));
    issueTile(q, qTile, geo.blockQ, d, bi, h, row0, sq, tid);
    NVVM::CpAsyncCommitGroupOp::create(b, loc);
    for (int64_t s = 0; s + 1 < geo.stages; ++s)
      issueBlock(idx(s), nBlocks, bi, hk, skv, tid);
    waitGroups(geo.stages - 1); // the Q group is complete
    gpu::BarrierOp::create(b, loc);

    // qFrag[mt][kc]: Q's A fragments, held in registers across the key
    // loop (geo.qFromSmem: read again per key block instead).
    SmallVector<SmallVector<Value>> qFrag(mts);
    for (int64_t mt = 0; mt < mts && !geo.qFromSmem; ++mt)
      for (int64_t kc = 0; kc < d / 16; ++kc)
        qFrag[mt].push_back(qFragment(idx(qOffset / eltBytes), ln, mt, kc));

    auto fragC = VectorType::get({2, 2}, b.getF32Type());
    Value zeroC = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(fragC, b.getF32FloatAttr(0.0)));
    // The loop state: accumulator fragment n of tile mt at mt nOut + n,
    // then the running max of each row r (2 rowTiles), then its partial
    // sum (this thread's columns only).
    int64_t nOut = dv / 8, nRows = 2 * mts;
    SmallVector<Value> init(nOut * mts, zeroC);
    Value negInf = f32(-INFINITY), zero = f32(0.0);
    init.append(SmallVector<Value>(nRows, negInf));
    init.append(SmallVector<Value>(nRows, zero));

    // The key blocks in two loops: first those every row of the workgroup
    // sees whole (all keys < Skv and, causal, at or below the first row's
    // diagonal), which need no per-element tail or causal mask, then the
    // rest (the tail block, the diagonal blocks), which do. Both bounds are
    // uniform over the workgroup, as the barriers inside need. Absolute
    // block a is whole when (a + 1) * block_kv <= limit.
    Value limit = skv;
    if (causal)
      limit = arith::MinSIOp::create(
          b, loc, skv,
          arith::MaxSIOp::create(b, loc, add(add(row0, diag), idx(1)),
                                 idx(0)));
    Value wholeAbs = divui(limit, geo.blockKv);
    Value nWhole = arith::MinUIOp::create(
        b, loc,
        sub(arith::MaxUIOp::create(b, loc, wholeAbs, blockBase), blockBase),
        nBlocks);
    auto keyLoop = [&](Value lo, Value hi, ValueRange carried, bool edge) {
      auto loop = scf::ForOp::create(b, loc, lo, hi, idx(1), carried);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value jb = loop.getInductionVar();
      // Block jb's group is complete once at most stages - 2 newer groups
      // are pending; the barrier publishes every thread's copies and
      // ensures all warps are done with block jb - 1, whose stage the next
      // issue overwrites (at jb = 0: the stage holding Q).
      waitGroups(geo.stages - 2);
      gpu::BarrierOp::create(b, loc);
      issueBlock(add(jb, idx(geo.stages - 1)), nBlocks, bi, hk, skv, tid);
      SmallVector<Value> next =
          foldBlock(loop.getRegionIterArgs(), jb, qFrag, bi, h, ln, skv,
                    diag, nOut, edge);
      scf::YieldOp::create(b, loc, next);
      return loop;
    };
    auto whole = keyLoop(idx(0), nWhole, init, /*edge=*/false);
    auto edges = keyLoop(nWhole, nBlocks, whole.getResults(), /*edge=*/true);
    ValueRange res = edges.getResults();
    SmallVector<Value> m, l;
    for (int64_t r = 0; r < nRows; ++r) {
      m.push_back(res[nOut * mts + r]);
      l.push_back(quadReduce(res[nOut * mts + nRows + r], false));
    }

    if (causal) {
      Coords c = blockCoords(/*fresh=*/true);
      h = c.h;
      bi = c.bi;
      ln.rowBase = add(mul(c.qb, idx(geo.blockQ)), warpRow);
    }
    // Without splits (or with a launch's count of 1): out and lse.
    // Otherwise the chunk's O_s = acc / l and lse_s = m + log2 l (log2
    // units) go to the workspace for the merge kernel.
    if (!ws) {
      writeResult(res, m, l, bi, h, ln, sq, nOut, /*partial=*/false);
      return;
    }
    Value single = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                         splits, idx(1));
    auto ifOp = scf::IfOp::create(b, loc, single, /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    writeResult(res, m, l, bi, h, ln, sq, nOut, /*partial=*/false);
    b.setInsertionPointToStart(&ifOp.getElseRegion().front());
    writeResult(res, m, l, bi, h, ln, sq, nOut, /*partial=*/true);
  }

  /// The epilogue: out = l == 0 ? 0 : acc / l and lse = l == 0 ? -inf :
  /// (m + log2 l) ln 2, or for a split-KV chunk (`partial`) the f32 acc / l
  /// and m + log2 l into the workspace at this workgroup's chunk.
  void writeResult(ValueRange res, ArrayRef<Value> m, ArrayRef<Value> l,
                   Value bi, Value h, const Lane &ln, Value sq, int64_t nOut,
                   bool partial) {
    Value negInf = f32(-INFINITY), zero = f32(0.0);
    for (int64_t r = 0; r < 2 * geo.rowTiles; ++r) {
      int64_t mt = r / 2, half = r % 2;
      Value row = rowOf(ln, r);
      Value empty = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                          l[r], zero);
      Value inv = arith::DivFOp::create(b, loc, f32(1.0), l[r]);
      auto ifOp = scf::IfOp::create(b, loc, ult(row, sq), false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      for (int64_t n = 0; n < nOut; ++n)
        for (int64_t j = 0; j < 2; ++j) {
          Value o = mulf(extract(res[mt * nOut + n], half, j), inv);
          o = select(empty, zero, o);
          Value col = add(ln.t2, idx(n * 8 + j));
          if (partial) {
            memref::StoreOp::create(b, loc, o, ws->partialOut,
                                    ValueRange{bi, h, split, row, col});
            continue;
          }
          o = arith::TruncFOp::create(b, loc, elt, o);
          memref::StoreOp::create(b, loc, o, out, ValueRange{bi, h, row, col});
        }
      if (lse || partial) {
        // One thread of the quad writes the row's lse.
        Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                            ln.t2, idx(0));
        auto w = scf::IfOp::create(b, loc, first, false);
        OpBuilder::InsertionGuard g2(b);
        b.setInsertionPointToStart(&w.getThenRegion().front());
        Value x = addf(m[r], math::Log2Op::create(b, loc, l[r]));
        if (partial) {
          x = select(empty, negInf, x);
          memref::StoreOp::create(b, loc, x, ws->partialLse,
                                  ValueRange{bi, h, split, row});
          continue;
        }
        x = select(empty, negInf, mulf(x, f32(kLn2)));
        memref::StoreOp::create(b, loc, x, lse, ValueRange{bi, h, row});
      }
    }
  }

  /// One key block folded into the running state. `edge`: the block may
  /// hold keys past Skv or above a row's causal diagonal, masked to -inf
  /// element by element; otherwise every key is visible to every row (only
  /// an explicit mask applies). Each K and V fragment loaded by ldmatrix
  /// feeds the MMAs of all the warp's m16 tiles.
  SmallVector<Value> foldBlock(ValueRange st, Value jb,
                               ArrayRef<SmallVector<Value>> qFrag, Value bi,
                               Value h, const Lane &ln, Value skv, Value diag,
                               int64_t nOut, bool edge) {
    const int64_t mts = geo.rowTiles, nRows = 2 * mts;
    Value j0 = mul(add(blockBase, jb), idx(geo.blockKv));
    // The key of this thread's S element (tile n, column j of its pair).
    auto keyAt = [&](int64_t n, int64_t j) {
      return add(j0, add(ln.t2, idx(n * 8 + j)));
    };
    Value stage = remui(jb, geo.stages);
    Value kBase = mul(stage, idx(stageBytes / eltBytes));
    Value vBase = add(kBase, idx(geo.blockKv * d));
    Value lane = ln.lane;
    Value l8 = remui(lane, 8), l16 = remui(lane, 16);
    Value bit3 = remui(divui(lane, 8), 2), hi16 = divui(lane, 16);
    auto fragX4 = VectorType::get({4, 2}, elt);
    auto fragC = VectorType::get({2, 2}, b.getF32Type());
    Value zeroC = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(fragC, b.getF32FloatAttr(0.0)));
    int64_t nTiles = geo.blockKv / 8;
    Value scale = f32(op.getEffectiveScale() * kLog2e);
    Value negInf = f32(-INFINITY);

    // S = Q . K^T, two 8-key n-tiles (16 keys) at a time: ldmatrix x4
    // lanes 0-7 address keys 16 np + l at chunk 2 kc, lanes 8-15 the same
    // keys at chunk 2 kc + 1, lanes 16-31 keys 16 np + 8 + l likewise, so
    // registers 0-1 are tile 2 np's B fragment and 2-3 tile 2 np + 1's.
    Value kLane = laneAddress(add(mul(hi16, idx(8)), l8), bit3, d);
    SmallVector<SmallVector<Value>> sAcc(mts,
                                         SmallVector<Value>(nTiles, zeroC));
    auto kFragsTimesQ = [&](int64_t np, int64_t kc, ArrayRef<Value> a) {
      Value x4 = fragment(kBase, kLane, d, kc, 16 * np, /*transpose=*/false);
      for (int64_t mt = 0; mt < mts; ++mt) {
        sAcc[mt][2 * np] = mma(a[mt], halfOf(x4, 0), sAcc[mt][2 * np]);
        sAcc[mt][2 * np + 1] = mma(a[mt], halfOf(x4, 1), sAcc[mt][2 * np + 1]);
      }
    };
    if (geo.qFromSmem) {
      // Q's fragments for this 16 of D, read from shared memory, then
      // every key tile: 32 registers fewer held across the key loop.
      Value qBase = opaque(idx(qOffset / eltBytes));
      for (int64_t kc = 0; kc < d / 16; ++kc) {
        SmallVector<Value> a;
        for (int64_t mt = 0; mt < mts; ++mt)
          a.push_back(qFragment(qBase, ln, mt, kc));
        for (int64_t np = 0; np < nTiles / 2; ++np)
          kFragsTimesQ(np, kc, a);
      }
    } else {
      for (int64_t np = 0; np < nTiles / 2; ++np)
        for (int64_t kc = 0; kc < d / 16; ++kc) {
          SmallVector<Value> a;
          for (int64_t mt = 0; mt < mts; ++mt)
            a.push_back(qFrag[mt][kc]);
          kFragsTimesQ(np, kc, a);
        }
    }

    // Without an additive mask and with a positive scale, the scores stay
    // unscaled until the exponential: the row max of raw scores times the
    // scale is the max of the scaled ones, and S scale - m is one FMA per
    // element (as in FlashAttention) instead of a multiply and a subtract.
    // Otherwise scale by scale log2 e first and add the mask. Then -inf
    // past Skv and above the causal diagonal (edge blocks only).
    // s[mt][tile][half][j]: row rows[2 mt + half], key j0 + 8 tile + 2t + j.
    bool additive = mask && !cast<MemRefType>(mask.getType())
                                 .getElementType()
                                 .isInteger(1);
    bool rawScores = !additive && op.getEffectiveScale() > 0.0;
    double dropP = op.getEffectiveDropout();
    SmallVector<SmallVector<std::array<std::array<Value, 2>, 2>>> s(
        mts, SmallVector<std::array<std::array<Value, 2>, 2>>(nTiles));
    SmallVector<Value> rowMax(nRows, negInf);
    Value lastKey = mask ? sub(skv, idx(1)) : Value();
    for (int64_t mt = 0; mt < mts; ++mt)
      for (int64_t n = 0; n < nTiles; ++n)
        for (int64_t half = 0; half < 2; ++half)
          for (int64_t j = 0; j < 2; ++j) {
            int64_t r = 2 * mt + half;
            Value x = extract(sAcc[mt][n], half, j);
            if (!rawScores)
              x = mulf(x, scale);
            Value key = keyAt(n, j);
            if (mask) {
              Value safeKey = arith::MinUIOp::create(b, loc, key, lastKey);
              Value mv = memref::LoadOp::create(
                  b, loc, mask,
                  ValueRange{ln.maskB, ln.maskH, ln.maskRows[r], safeKey});
              if (mv.getType().isInteger(1))
                x = select(mv, x, negInf);
              else
                x = addf(x, mulf(toF32(mv), f32(kLog2e)));
            }
            if (edge) {
              Value hidden = arith::CmpIOp::create(
                  b, loc, arith::CmpIPredicate::uge, key, skv);
              if (causal) {
                Value above =
                    arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt,
                                          key, add(rowOf(ln, r), diag));
                hidden = arith::OrIOp::create(b, loc, hidden, above);
              }
              x = select(hidden, negInf, x);
            }
            s[mt][n][half][j] = x;
            rowMax[r] = maxf(rowMax[r], x);
          }

    // The running max moves only when a row's block max exceeds it by more
    // than kLazyRescaleLog2 (log2 units), or when it is -inf (the first
    // block a row sees): otherwise P = exp2(S - m) uses the stale max, at
    // most 2^kLazyRescaleLog2, and acc and l are not rescaled. The result
    // is the same up to rounding (out = acc / l and lse = m + log2 l hold
    // for any shift m; f32 acc and l, and P in f16 or bf16, keep their
    // relative precision at 2^8). The decision is warp-uniform (vote.any
    // over the rows of every lane), so one branch skips the 4 rowTiles
    // nOut multiplies of the rescale in most blocks.
    SmallVector<Value> blockMax(nRows), mOld(nRows);
    Value anyRow;
    for (int64_t r = 0; r < nRows; ++r) {
      mOld[r] = st[nOut * mts + r];
      blockMax[r] = quadReduce(rowMax[r], true);
      if (rawScores)
        blockMax[r] = mulf(blockMax[r], scale);
      Value grows = arith::CmpFOp::create(
          b, loc, arith::CmpFPredicate::OGT, blockMax[r],
          addf(mOld[r], f32(kLazyRescaleLog2)));
      anyRow = anyRow ? arith::OrIOp::create(b, loc, anyRow, grows) : grows;
    }
    Value warpAny = NVVM::VoteSyncOp::create(
        b, loc, b.getI1Type(), arith::ConstantOp::create(
                                   b, loc, b.getI32IntegerAttr(-1)),
        anyRow, NVVM::VoteSyncKind::any);
    // (m, acc, l) after the rescale: m' = max(m, block max), alpha =
    // exp2(m - m'_safe) with m'_safe = m' == -inf ? 0 : m' (no NaN from
    // -inf - -inf), acc' = alpha acc, l' = alpha l; or unchanged.
    SmallVector<Value> carried;
    for (int64_t r = 0; r < nRows; ++r)
      carried.push_back(mOld[r]);
    for (int64_t i = 0; i < nOut * mts; ++i)
      carried.push_back(st[i]);
    for (int64_t r = 0; r < nRows; ++r)
      carried.push_back(st[nOut * mts + nRows + r]);
    SmallVector<Type> carriedTypes;
    for (Value x : carried)
      carriedTypes.push_back(x.getType());
    auto rescale = scf::IfOp::create(b, loc, carriedTypes, warpAny,
                                     /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&rescale.getThenRegion().front());
      SmallVector<Value> next, alpha(nRows);
      for (int64_t r = 0; r < nRows; ++r) {
        Value mNew = maxf(mOld[r], blockMax[r]);
        Value isInf = arith::CmpFOp::create(
            b, loc, arith::CmpFPredicate::OEQ, mNew, negInf);
        alpha[r] = exp2(subf(mOld[r], select(isInf, f32(0.0), mNew)));
        next.push_back(mNew);
      }
      for (int64_t mt = 0; mt < mts; ++mt)
        for (int64_t n = 0; n < nOut; ++n) {
          SmallVector<Value> scaled;
          for (int64_t half = 0; half < 2; ++half)
            for (int64_t j = 0; j < 2; ++j)
              scaled.push_back(mulf(extract(st[mt * nOut + n], half, j),
                                    alpha[2 * mt + half]));
          next.push_back(
              vector::FromElementsOp::create(b, loc, fragC, scaled));
        }
      for (int64_t r = 0; r < nRows; ++r)
        next.push_back(mulf(alpha[r], st[nOut * mts + nRows + r]));
      scf::YieldOp::create(b, loc, next);
      b.setInsertionPointToStart(&rescale.getElseRegion().front());
      scf::YieldOp::create(b, loc, carried);
    }
    ValueRange rescaled = rescale.getResults();

    // Per row: m_safe = m == -inf ? 0 : m, P = exp2(S - m_safe), partial l.
    SmallVector<Value> mNew(nRows), lNew(nRows);
    for (int64_t r = 0; r < nRows; ++r) {
      int64_t mt = r / 2, half = r % 2;
      mNew[r] = rescaled[r];
      Value isInf = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                          mNew[r], negInf);
      Value mSafe = select(isInf, f32(0.0), mNew[r]);
      Value negM = arith::NegFOp::create(b, loc, mSafe);
      Value sum = f32(0.0);
      for (int64_t n = 0; n < nTiles; ++n)
        for (int64_t j = 0; j < 2; ++j) {
          Value sv = s[mt][n][half][j];
          Value e = rawScores
                        ? math::FmaOp::create(b, loc, sv, scale, negM)
                              .getResult()
                        : subf(sv, mSafe);
          Value p = exp2(e);
          // l sums P before dropout; P . V takes keep ? P / (1 - p) : 0,
          // the Philox decision every path shares (docs/Semantics.md).
          Value used = p;
          if (dropP > 0.0) {
            Value keep = buildDropoutKeep(b, loc, op.getSeed(), bi, h,
                                          rowOf(ln, r), keyAt(n, j), dropP);
            used = select(keep, mulf(p, f32(1.0 / (1.0 - dropP))), f32(0.0));
          }
          s[mt][n][half][j] = used;
          sum = addf(sum, p);
        }
      lNew[r] = addf(rescaled[nRows + nOut * mts + r], sum);
    }

    // P as A fragments (16 keys each) in the element type, straight from
    // the score fragments: tiles 2kk and 2kk + 1.
    SmallVector<SmallVector<Value>> pFrag(mts);
    for (int64_t mt = 0; mt < mts; ++mt)
      for (int64_t kk = 0; kk < nTiles / 2; ++kk) {
        SmallVector<Value> e;
        for (auto [tile, half] : {std::pair{2 * kk, 0}, std::pair{2 * kk, 1},
                                  std::pair{2 * kk + 1, 0},
                                  std::pair{2 * kk + 1, 1}})
          for (int64_t j = 0; j < 2; ++j)
            e.push_back(
                arith::TruncFOp::create(b, loc, elt, s[mt][tile][half][j]));
        pFrag[mt].push_back(vector::FromElementsOp::create(b, loc, fragX4, e));
      }

    // acc' = alpha acc + P . V. V's B fragments by ldmatrix x4 .trans: lanes
    // 0-15 address keys 16 kk + l at chunk 2 np (registers 0-1: output
    // tile 2 np), lanes 16-31 the same keys at chunk 2 np + 1 (tile
    // 2 np + 1).
    SmallVector<Value> acc(rescaled.begin() + nRows,
                           rescaled.begin() + nRows + nOut * mts);
    Value vLane = laneAddress(l16, hi16, dv);
    for (int64_t np = 0; np < nOut / 2; ++np)
      for (int64_t kk = 0; kk < nTiles / 2; ++kk) {
        Value x4 = fragment(vBase, vLane, dv, np, 16 * kk, /*transpose=*/true);
        for (int64_t mt = 0; mt < mts; ++mt) {
          Value &a0 = acc[mt * nOut + 2 * np], &a1 = acc[mt * nOut + 2 * np + 1];
          a0 = mma(pFrag[mt][kk], halfOf(x4, 0), a0);
          a1 = mma(pFrag[mt][kk], halfOf(x4, 1), a1);
        }
      }
    SmallVector<Value> next(acc);
    next.append(mNew.begin(), mNew.end());
    next.append(lNew.begin(), lNew.end());
    return next;
  }
};

struct ConvertAttnToNVGPUPass
    : public PassWrapper<ConvertAttnToNVGPUPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ConvertAttnToNVGPUPass)

  ConvertAttnToNVGPUPass() = default;
  ConvertAttnToNVGPUPass(const ConvertAttnToNVGPUPass &other)
      : PassWrapper(other) {}
  explicit ConvertAttnToNVGPUPass(const ConvertAttnToNVGPUOptions &o) {
    warps = o.warps;
    stages = o.stages;
    kvSplits = o.kvSplits;
    rowTiles = o.rowTiles;
    blockKv = o.blockKv;
    chip = o.chip;
  }

  StringRef getArgument() const final { return "convert-attn-to-nvgpu"; }
  StringRef getDescription() const final {
    return "Lower the attn.sdpa ops the tensor-core kernel supports (f16 or "
           "bf16, D and Dv multiples of 16 up to 256, an optional bool or "
           "additive mask, optional dropout; destination-passing form) to a "
           "gpu.launch of cp.async (a swizzled multi-stage K/V ring in "
           "dynamic shared memory), ldmatrix and mma.sync; requires q, k, v "
           "rows 16-byte aligned in global memory (the runtime checks it at "
           "launch); others are left for convert-attn-to-gpu. With "
           "kv-splits > 1, a split-KV pair: the kernel over (query block, "
           "head x chunk, batch) writing partials to host-allocated "
           "workspaces, then a merge kernel (both read the chunk count from "
           "the workspace, so a runtime may choose it per launch)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, gpu::GPUDialect, LLVM::LLVMDialect,
                    math::MathDialect, memref::MemRefDialect,
                    nvgpu::NVGPUDialect, NVVM::NVVMDialect, scf::SCFDialect,
                    vector::VectorDialect>();
  }

  Option<int64_t> warps{
      *this, "warps",
      llvm::cl::desc("Warps per workgroup (16 query rows each): 1, 2, 4 or "
                     "8; 0 = 1 or 2 for a static Sq <= 16 or 32, else 4 when "
                     "causal or D, Dv <= 64, else 8"),
      llvm::cl::init(0)};
  Option<int64_t> stages{
      *this, "stages",
      llvm::cl::desc("K/V tiles in flight in the cp.async ring (2 to 4; 0 "
                     "= 3 for the non-causal two-tile kernels at D, Dv in "
                     "(64, 128], else 2)"),
      llvm::cl::init(0)};
  Option<int64_t> kvSplits{
      *this, "kv-splits",
      llvm::cl::desc("1: one kernel; N > 1: split-KV kernels (partials + "
                     "merge) launched here with N key chunks"),
      llvm::cl::init(1)};
  Option<int64_t> rowTiles{
      *this, "row-tiles",
      llvm::cl::desc("m16 tiles of query rows per warp, 1 or 2 (each K/V "
                     "fragment feeds the MMAs of both; 0 = 1; decode keeps "
                     "1)"),
      llvm::cl::init(0)};
  Option<int64_t> blockKv{
      *this, "block-kv",
      llvm::cl::desc("Keys per K/V tile (one ring stage): 16, 32 or 64; 0 "
                     "= 32 for the two-row-tile kernels at D or Dv > 64, "
                     "else 64"),
      llvm::cl::init(0)};
  Option<std::string> chip{
      *this, "chip",
      llvm::cl::desc("Target GPU (sm_80, sm_90, sm_90a): the default "
                     "geometry of D, Dv > 64 depends on it"),
      llvm::cl::init("sm_90a")};

  void runOnOperation() override {
    if ((warps != 0 && warps != 1 && warps != 2 && warps != 4 && warps != 8) ||
        (stages != 0 && (stages < 2 || stages > 4)) || kvSplits < 1 ||
        rowTiles < 0 || rowTiles > 2 ||
        (blockKv != 0 && blockKv != 16 && blockKv != 32 && blockKv != 64)) {
      getOperation().emitError("convert-attn-to-nvgpu: warps must be 0, 1, "
                               "2, 4 or 8, stages 0 or in [2, 4], kv-splits "
                               ">= 1, row-tiles 0, 1 or 2 and block-kv 0, "
                               "16, 32 or 64");
      return signalPassFailure();
    }
    SmallVector<SdpaOp> ops;
    getOperation().walk([&](SdpaOp op) { ops.push_back(op); });
    for (SdpaOp op : ops)
      convert(op);
  }

  void convert(SdpaOp op) {
    Type elt = op.getQueryType().getElementType();
    int64_t d = op.getQueryType().getDimSize(3);
    int64_t dv = op.getValueType().getDimSize(3);
    if (!(elt.isF16() || elt.isBF16()) || d % 16 || dv % 16 || d > 256 ||
        dv > 256)
      return;
    Value q = sourceMemRef(op.getQuery()), k = sourceMemRef(op.getKey()),
          v = sourceMemRef(op.getValue());
    Value mask = op.getMask() ? sourceMemRef(op.getMask()) : Value();
    auto outMat = destinationOf(op.getOut());
    auto lseMat = op.getLse() ? destinationOf(op.getLse())
                              : bufferization::MaterializeInDestinationOp();
    if (!q || !k || !v || (op.getMask() && !mask) || !outMat ||
        (op.getLse() && !lseMat))
      return; // convert-attn-to-gpu reports the form
    // cp.async needs unit-stride rows.
    for (Value m : {q, k, v}) {
      int64_t offset;
      SmallVector<int64_t> strides;
      if (failed(cast<MemRefType>(m.getType()).getStridesAndOffset(strides,
                                                                   offset)) ||
          strides.back() != 1)
        return;
    }
    ConvertAttnToNVGPUOptions o;
    o.warps = warps;
    o.stages = stages;
    o.rowTiles = rowTiles;
    o.blockKv = blockKv;
    o.chip = chip;
    o.kvSplits = kvSplits;
    NVGPUGeometry geo = resolveNVGPUGeometry(
        o, d, dv, 2, op.getCausal(), op.getQueryType().getDimSize(2),
        mask != nullptr, op.getEffectiveDropout() > 0.0,
        op.getKeyType().getDimSize(2), lseMat != nullptr);
    OpBuilder b(op);
    Location loc = op.getLoc();
    Value out = outMat.getDest(), lse = lseMat ? lseMat.getDest() : Value();
    emitWithSplitKV(b, loc, op, q, dv, out, lse, kvSplits,
                    /*staticSplits=*/false, [&](auto ws, auto names) {
                      TensorCoreKernel(b, loc, op, q, k, v, mask, out, lse,
                                       geo, ws, names)
                          .build();
                    });
    outMat.erase();
    if (lseMat)
      lseMat.erase();
    SmallVector<Operation *> inputs;
    for (Value t : op->getOperands())
      if (Operation *def = t.getDefiningOp())
        inputs.push_back(def);
    op.erase();
    for (Operation *def : inputs)
      if (def->use_empty() && isa<bufferization::ToTensorOp>(def))
        def->erase();
  }
};
} // namespace

NVGPUGeometry mlir::attn::resolveNVGPUGeometry(
    const ConvertAttnToNVGPUOptions &options, int64_t headDim, int64_t valueDim,
    int64_t elementBytes, bool causal, int64_t seqQ, bool masked, bool dropout,
    int64_t seqKv, bool lse) {
  NVGPUGeometry g;
  const bool small = std::max(headDim, valueDim) <= 64;
  // D or Dv in (128, 256]: one row tile of 4 warps, Q read from shared
  // memory per block (held, its fragments would take 64 registers), 32-key
  // blocks for the split-KV kernels without causal, a mask or dropout
  // (+18-20% over 16 on the H100, cuda-h100-2026-11-22k), else 16: the
  // accumulators alone take Dv / 2 registers, and with 32 keys ptxas
  // spilled 20 bytes causal, 8 in the unsplit kernel (28-48 with a static
  // key length), with 64 keys 52-76; the 2-warp decode kernel with 32
  // keys 4-8 (48 before the ldmatrix addressing of 2026-11-22).
  const bool huge = std::max(headDim, valueDim) > 128;
  // A mask's loads and dropout's Philox decision need registers that the
  // two-tile and 168-register geometries do not leave.
  const bool heavy = masked || dropout;
  // A static query length of at most 32 rows (decode), warps not given.
  const bool decode = !options.warps && !ShapedType::isDynamic(seqQ) &&
                      seqQ > 0 && seqQ <= 32;
  // Two m16 row tiles per warp at D or Dv in (64, 128] (the accumulators
  // of 32 rows, 128 + 32 registers with 32-key blocks) without a mask or
  // dropout. They fit 255 registers once the ldmatrix addresses stopped
  // taking a register per swizzled column (2026-11-22; before, only
  // non-causal on sm_90 fit). Measured on the H100
  // (bench/results/cuda-h100-2026-11-22l, 4 runs at S = 4k-16k):
  // non-causal 0.95-1.11 of FlashAttention-2 (median 1.02), causal
  // 0.96-1.08 (median 1.02; one tile of 4 warps over 64 keys with the
  // same code generation 0.95-1.01, median 0.98). On sm_90 only: for
  // sm_80 ptxas still spilled 4 bytes in one configuration (bf16, static
  // lengths, lse, one kernel). Causal only with a dynamic key length, and
  // not as a single kernel with lse: ptxas spilled 8 bytes with a static
  // one (Skv = 300, 3000, 4096), 4 for kv-splits=1 with lse, none
  // otherwise. ptxas at 255 registers is chaotic: each exclusion is a
  // configuration that spilled, and the lit tests assemble the ones that
  // remain.
  const bool hopper = options.chip.size() > 3 &&
                      std::atoi(options.chip.c_str() + 3) >= 90;
  const bool wideTwoTiles =
      hopper && !small && !huge && !heavy && !decode && !options.warps &&
      !options.rowTiles && !options.blockKv &&
      (!causal || (seqKv <= 0 && !(lse && options.kvSplits == 1)));
  // Measured on the H100 (bench/results/cuda-h100-2026-11-21b): 4 warps
  // for causal kernels and for D <= 64 (with the register cap of
  // attn-nvvm-max-registers, 3 workgroups of 155 registers per SM beat one
  // of 8 warps by 8-16%), 8 for larger non-causal heads with one row tile.
  g.warps = options.warps ? options.warps
                          : (causal || small || huge || wideTwoTiles ? 4 : 8);
  // Decode needs no more than 2 warps: the others would only multiply
  // masked rows. 1 warp for at most 16 rows where D, Dv <= 64 (at D = 128,
  // ptxas spills a one-warp kernel: each thread issues 32 cp.async per K/V
  // tile).
  if (decode)
    g.warps = seqQ <= 16 && small ? 1 : 2;
  // Two m16 row tiles per warp (32 rows: each K and V fragment loaded
  // feeds twice the MMAs; Q re-read from shared memory per block to stay
  // within 255 registers without spilling) for the 4-warp kernels at
  // D, Dv <= 64 without a mask or dropout: +6-16% on the H100 at S =
  // 4k-16k (bench/results/cuda-h100-2026-11-22d); and wideTwoTiles above.
  // Decode keeps one: the rows would be padding.
  if (decode)
    g.rowTiles = 1;
  else if (options.rowTiles)
    g.rowTiles = options.rowTiles;
  else
    g.rowTiles =
        (g.warps == 4 && small && !heavy) || wideTwoTiles ? 2 : 1;
  g.blockQ = 16 * g.rowTiles * g.warps;
  // Dropout's counter needs the real (head, row) of each row.
  g.packHeads = seqQ == 1 && !masked && !dropout;
  // Three 4-warp workgroups per SM at D, Dv <= 64: ptxas needs 169
  // registers without a budget (two workgroups) and none spill at 168;
  // the H100 A/B of 2026-11-22 (bench/results/cuda-h100-2026-11-22b): 3-5%
  // faster over S = 4k-16k, causal or not. Not with a mask (its loads
  // need 214 with lse) or dropout: 168 would spill.
  if (g.warps == 4 && g.rowTiles == 1 && small && !heavy)
    g.maxRegisters = 168;
  // A third K/V stage for the non-causal two-tile kernels at D, Dv in
  // (64, 128] (80 KB of shared memory, still two workgroups per SM): H100,
  // two repeats in one call (bench/results/cuda-h100-2026-11-22l,
  // sweep-*.csv): f16 +0-5%, bf16 -1-+2% at S = 4k-16k. Causal spilled 8
  // bytes with 3; the one-tile kernels lost 5-10% (2026-11-22i).
  g.stages = options.stages ? options.stages : wideTwoTiles && !causal ? 3 : 2;
  g.blockKv =
      options.blockKv ? options.blockKv
      : huge ? (causal || heavy || decode || options.kvSplits < 2 ? 16 : 32)
      : g.rowTiles > 1 && !small ? 32
                                 : kNVGPUBlockKv;
  int64_t stage = g.blockKv * (headDim + valueDim) * elementBytes;
  int64_t qBytes = g.blockQ * headDim * elementBytes;
  // Q aliases the last stage when it fits there (see the prologue).
  g.qFromSmem = g.rowTiles > 1 || huge;
  g.sharedBytes =
      g.stages * stage + (qBytes <= stage && !g.qFromSmem ? 0 : qBytes);
  // Causal workgroup order (heaviestFirst): K and V of the heads of one
  // group within 16 MiB, a third of the H100's L2 (50 MB; the A100's 40).
  g.causalGroupBytes = int64_t(16) << 20;
  return g;
}

std::unique_ptr<Pass> mlir::attn::createConvertAttnToNVGPUPass(
    const ConvertAttnToNVGPUOptions &options) {
  return std::make_unique<ConvertAttnToNVGPUPass>(options);
}

void mlir::attn::registerConvertAttnToNVGPUPass() {
  PassRegistration<ConvertAttnToNVGPUPass>();
}
