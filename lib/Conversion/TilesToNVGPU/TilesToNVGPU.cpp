//===- TilesToNVGPU.cpp - the tiled form on tensor cores (mma.sync) -------===//
//
// convert-attn-tiles-to-nvgpu: maps the tiled attention (attn-tile-sdpa +
// attn-decompose-online-attention, with an #attn.mma_sync mapping) onto a
// workgroup of warps. It holds no attention math: it walks the tiled form
// and gives each of its tensors a place on the threads, evaluating the
// decomposition's generic bodies on the elements each thread owns.
//
// Places (PTX ISA, mma.m16n8k16; lane = 4 g + t):
//   [Br, X] tiles  C fragments: a warp owns 16 row_tiles rows; of each m16
//                  row tile and each 8-column tile, thread 4g + t holds
//                  rows g and g + 8, columns 2t and 2t + 1
//                  (c[half][j] = C[g + 8 half][2t + j]).
//   [Br] vectors   the thread's rows (2 per row tile), reduced over the
//                  quad (xor shuffles 1 and 2), except a sum whose every
//                  use is linear (the running sum): it stays a per-thread
//                  partial until a non-linear use reduces it.
//   Q, K, V tiles  dynamic shared memory (Q once; K/V in a ring of
//                  `stages` blocks filled by cp.async, rows past the end
//                  zero-filled, 16-byte chunks XOR-swizzled against bank
//                  conflicts), read by ldmatrix into A and B fragments:
//                  A (16x16): a[0] = A[g][2t..], a[1] = A[g+8][2t..],
//                             a[2] = A[g][8+2t..], a[3] = A[g+8][8+2t..]
//                  B (16x8):  b[0] = B[2t..2t+1][g], b[1] = B[8+2t..][g]
//                  ldmatrix .x4: lanes 8i..8i+7 give the row addresses of
//                  matrix i, which lands in register i.
//   mask tiles     read per element from global memory (indices clamped
//                  into the tensor where the tile is padded).
//   P . V          P's C fragments, rounded to the element type, are its A
//                  fragments (the m16n8 C layout is half an A fragment).
//
// The key loops of a tile become one software pipeline: block j +
// stages - 1 is copied while block j is computed.
//
//===----------------------------------------------------------------------===//
#include "attn/Conversion/TilesToNVGPU/TilesToNVGPU.h"
#include "attn/Conversion/KernelOperands.h"
#include "attn/Conversion/Passes.h"
#include "attn/Conversion/TileDistribution.h"

#include "attn/Dialect/Attn/IR/AttnAttrs.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Dialect/Attn/Transforms/Transforms.h"
#include "attn/runtime/LaunchCondition.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <tuple>

namespace mlir::attn {
#define GEN_PASS_DEF_CONVERTATTNTILESTONVGPUPASS
#include "attn/Conversion/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

constexpr int64_t kWarp = 32;
/// Causal grids with at least this many query blocks start their
/// workgroups heaviest first across heads (heaviestFirst).
constexpr int64_t kHeaviestFirstBlocks = 16;

/// The XOR swizzle of a tile with rows of `width` elements (16-bit), in
/// 16-byte chunks: chunk c of row r is stored at c ^ ((r / rowDiv) % p).
/// p is a power of two dividing the chunk count (so c ^ x stays in the
/// row); rowDiv > 1 when a row is narrower than the 128 bytes of the 32
/// banks (several rows per bank line). For every width here, p * rowDiv
/// divides 8, so rows r and r + 16 k swizzle alike: ldmatrix addresses (a
/// multiple of 16 plus a lane's row) need only the lane's part.
struct Swizzle {
  int64_t p, rowDiv;
  static Swizzle forWidth(int64_t width) {
    int64_t n = width / 8;
    int64_t p = std::min<int64_t>(8, n & -n);
    int64_t rowDiv = (p == n && n < 8) ? 8 / n : 1;
    return {p, rowDiv};
  }
};

/// Where one tensor of the tiled form lives in the kernel.
struct Frag {
  enum Kind { None, C, Row, Scalar, View, Fill };
  Kind kind = None;
  Type elt;
  /// C: 8-column tiles per m16 row tile; fragment i = mt * nts + n.
  int64_t nts = 0;
  /// C: the fragments as vector<2x2xelt> (entries may be null until an MMA
  /// or a loop needs them), and their elements (i * 4 + 2 half + j, null
  /// until an elementwise op needs them).
  SmallVector<Value> vecs, elems;
  /// Row: the thread's rows (2 mt + half); Scalar, Fill: elems[0].
  /// Row: per-thread partial sums (the quad's sum is the value).
  bool partial = false;
  /// C, Row: only rows [0, rowLimit) are valid (the original IR's value;
  /// null: all).
  Value rowLimit;
  /// C: computes element (tile i, half, j) on first use (an elementwise
  /// op's result: its elements are evaluated where their first consumer
  /// needs them, so a chain of elementwise ops and the reduction after it
  /// run element by element, as one would write the kernel by hand).
  std::function<Value(int64_t, int64_t, int64_t)> gen;
  /// C: the lazy tiles computed from this one element by element: when an
  /// element of this tile is computed, theirs are too (the chain runs per
  /// element, dropout's decision right after its probability).
  SmallVector<Value, 2> lazyUsers;
  /// View: a [rows, cols] slice at `offsets` (original IR values) of the
  /// function tensor `source`, padded (tensor.pad) to the static tile.
  Value source;
  SmallVector<OpFoldResult> offsets;
  bool padded = false;
};

/// One attention forall as a tensor-core kernel.
class MmaKernel {
public:
  MmaKernel(OpBuilder &b, TiledKernelSource &src, scf::ForallOp forall,
            bool partial)
      : b(b), loc(forall.getLoc()), src(src), forall(forall),
        partial(partial) {
    tiling = src.tiling;
    mapping = cast<MmaSyncAttr>(tiling.getMapping());
  }

  LogicalResult build(FlatSymbolRefAttr module, FlatSymbolRefAttr function);

private:
  OpBuilder &b;
  Location loc;
  TiledKernelSource &src;
  scf::ForallOp forall;
  bool partial;
  TilingAttr tiling;
  MmaSyncAttr mapping;
  gpu::LaunchOp launchOp;
  /// Original IR values -> kernel values (index computations, scalars).
  IRMapping map;
  /// Original IR tensors -> where they live.
  DenseMap<Value, Frag> frags;

  // Geometry.
  int64_t warps = 4, mts = 1, stages = 2, br = 64, bc = 64, d = 0, dv = 0;
  int64_t eltBytes = 2, stageBytes = 0, qOffset = 0, sharedBytes = 0;
  Type elt;
  bool qFromSmem = false;
  // The function tensors of the attention: q (or its packed view), k, v.
  Value qT, kT, vT;
  // Their memrefs in the kernel.
  Value qM, kM, vM;
  Value smem, flat;
  // Split-KV: the launch's chunk count and this workgroup's chunk.
  Value splits, split;
  // The current key block's ring stage (element offsets of K and V).
  Value kBase, vBase;
  // The first block the tile walks (its chunk's begin, else 0).
  Value blockBase;
  // The thread's place.
  Value tid, lane, warp, g, t2, warpRow;
  SmallVector<Value> qFrag; // held Q fragments, mt * (d / 16) + kc

  //===--------------------------------------------------------------------===//
  // Small builders
  //===--------------------------------------------------------------------===//
  Value idx(int64_t x) { return arith::ConstantIndexOp::create(b, loc, x); }
  Value f32(double x) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(x));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  /// x + y right after the later of their definitions when both are ops of
  /// one block (else here): a sum of values that live through a loop, made
  /// before it so that the sum, not both, stays live.
  Value addEarly(Value x, Value y) {
    Operation *dx = x.getDefiningOp(), *dy = y.getDefiningOp();
    if (!dx || !dy || dx->getBlock() != dy->getBlock())
      return add(x, y);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointAfter(dx->isBeforeInBlock(dy) ? dy : dx);
    return add(x, y);
  }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value divui(Value x, int64_t y) {
    return arith::DivUIOp::create(b, loc, x, idx(y));
  }
  Value remui(Value x, int64_t y) {
    return arith::RemUIOp::create(b, loc, x, idx(y));
  }
  Value ult(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x, y);
  }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  Value dim(Value m, int64_t i) {
    auto t = cast<MemRefType>(m.getType());
    if (!t.isDynamicDim(i))
      return idx(t.getDimSize(i));
    return memref::DimOp::create(b, loc, m, i);
  }
  Attribute workgroup() {
    return gpu::AddressSpaceAttr::get(b.getContext(),
                                      gpu::AddressSpace::Workgroup);
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

  /// An original IR value in the kernel: mapped; or an index computation of
  /// the tile (cloned where it is first used, so that a value the epilogue
  /// needs is not held across the key loops); or (a host-side index
  /// computation or constant) sunk into the kernel.
  Value value(Value v) {
    if (Value m = map.lookupOrNull(v))
      return m;
    Operation *def = v.getDefiningOp();
    if (def && deferred.contains(def)) {
      for (Value operand : def->getOperands())
        value(operand);
      Operation *clone = b.clone(*def, map);
      for (auto [o, n] : llvm::zip(def->getResults(), clone->getResults()))
        map.map(o, n);
      return map.lookup(v);
    }
    return sinkIndexValue(b, v, map);
  }
  /// The tile's scalar ops, cloned on first use (value()).
  DenseSet<Operation *> deferred;
  /// A region's values stay in it: what emitting it maps or caches is
  /// forgotten after it.
  struct Scope {
    MmaKernel &k;
    DenseMap<Value, Frag> frags;
    IRMapping map;
    explicit Scope(MmaKernel &k) : k(k), frags(k.frags), map(k.map) {}
    ~Scope() {
      k.frags = std::move(frags);
      k.map = std::move(map);
    }
  };
  /// value() as the callback cloneGenericBody resolves outer values with.
  std::function<Value(Value)> resolver() {
    return [this](Value v) { return value(v); };
  }
  Value value(OpFoldResult v) {
    if (auto a = dyn_cast<Attribute>(v))
      return idx(cast<IntegerAttr>(a).getInt());
    return value(cast<Value>(v));
  }

  //===--------------------------------------------------------------------===//
  // Fragment access
  //===--------------------------------------------------------------------===//
  /// Element (tile i, half, j) of a C fragment.
  Value elem(Frag &f, int64_t i, int64_t half, int64_t j) {
    int64_t e = i * 4 + half * 2 + j;
    if (f.kind == Frag::Fill)
      return f.elems[0];
    if (f.elems[e])
      return f.elems[e];
    if (!f.gen) {
      f.elems[e] = vector::ExtractOp::create(b, loc, f.vecs[i],
                                             ArrayRef<int64_t>{half, j});
      return f.elems[e];
    }
    Value v = f.gen(i, half, j);
    f.elems[e] = v;
    // (f may move: the users are looked up after it is written.)
    SmallVector<Value, 2> users(f.lazyUsers);
    for (Value u : users)
      if (auto it = frags.find(u); it != frags.end() && it->second.gen)
        elem(it->second, i, half, j);
    return v;
  }
  /// Computes every element of every lazy tile now (before a region whose
  /// first use of an element would define it where later uses cannot see
  /// it).
  void forceLazy() {
    for (auto &[v, f] : frags) {
      if (f.kind != Frag::C || !f.gen)
        continue;
      for (int64_t i = 0; i < mts * f.nts; ++i)
        for (int64_t half = 0; half < 2; ++half)
          for (int64_t j = 0; j < 2; ++j)
            elem(f, i, half, j);
      f.gen = nullptr;
    }
  }
  /// Fragment i of a C frag as vector<2x2xelt>.
  Value vec(Frag &f, int64_t i) {
    if (f.kind == Frag::Fill) {
      auto t = VectorType::get({2, 2}, f.elems[0].getType());
      auto cst = f.elems[0].getDefiningOp<arith::ConstantOp>();
      return arith::ConstantOp::create(
          b, loc, DenseElementsAttr::get(t, cast<TypedAttr>(cst.getValue())));
    }
    if (!f.vecs[i]) {
      SmallVector<Value> e;
      for (int64_t k = 0; k < 4; ++k)
        e.push_back(elem(f, i, k / 2, k % 2));
      f.vecs[i] = vector::FromElementsOp::create(
          b, loc, VectorType::get({2, 2}, e[0].getType()), e);
    }
    return f.vecs[i];
  }
  Frag newC(Type type, int64_t nts) {
    Frag f;
    f.kind = Frag::C;
    f.elt = type;
    f.nts = nts;
    f.vecs.assign(mts * nts, Value());
    f.elems.assign(mts * nts * 4, Value());
    return f;
  }
  /// A quad-uniform value: combine over the 4 threads of a quad with
  /// `combine(x, other)`.
  Value quadReduce(Value x, function_ref<Value(Value, Value)> combine) {
    for (int32_t offset : {1, 2}) {
      Value other = gpu::ShuffleOp::create(b, loc, x, offset, kWarp,
                                           gpu::ShuffleMode::XOR)
                        .getShuffleResult();
      x = combine(x, other);
    }
    return x;
  }
  /// The row vector's value for row r, quad-uniform (a partial sum is
  /// reduced once and remembered).
  Value rowValue(Frag &f, int64_t r) {
    if (f.kind == Frag::Fill)
      return f.elems[0];
    if (f.partial) {
      for (Value &x : f.elems)
        x = quadReduce(x, [&](Value p, Value q) {
          return arith::AddFOp::create(b, loc, p, q);
        });
      f.partial = false;
    }
    return f.elems[r];
  }
  /// The tile-local row of element (mt, half) of this thread.
  Value tileRow(int64_t mt, int64_t half) {
    return add(warpRow, idx(16 * mt + 8 * half));
  }
  Value tileCol(int64_t n, int64_t j) { return add(t2, idx(8 * n + j)); }

  //===--------------------------------------------------------------------===//
  // Shared memory, cp.async, ldmatrix, mma
  //===--------------------------------------------------------------------===//
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
    auto module = forall->getParentOfType<ModuleOp>();
    if (!module.lookupSymbol(name)) {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(module.getBody());
      memref::GlobalOp::create(b, loc, name, b.getStringAttr("public"),
                               smemGlobalType(), Attribute(),
                               /*constant=*/false, b.getI64IntegerAttr(16));
    }
    return name;
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
  void issueTile(Value srcM, Value tile, int64_t rows, int64_t width, Value bi,
                 Value head, Value row0, Value limit, bool inRange = false) {
    int64_t perRow = width / 8, total = rows * perRow,
            threads = kWarp * warps;
    Swizzle s = Swizzle::forWidth(width);
    Value last = sub(limit, idx(1));
    for (int64_t base = 0; base < total; base += threads) {
      auto copy = [&] {
        Value e = add(tid, idx(base));
        Value r = divui(e, perRow), c = remui(e, perRow);
        Value row = add(row0, r);
        if (inRange) {
          nvgpu::DeviceAsyncCopyOp::create(
              b, loc, tile, ValueRange{r, physColumn(c, swizzle(s, r))}, srcM,
              ValueRange{bi, head, row, mul(c, idx(8))}, b.getIndexAttr(8),
              Value(), b.getUnitAttr());
          return;
        }
        Value valid = ult(row, limit);
        Value safeRow = arith::MinUIOp::create(b, loc, row, last);
        Value srcElements = select(valid, idx(8), idx(0));
        nvgpu::DeviceAsyncCopyOp::create(
            b, loc, tile, ValueRange{r, physColumn(c, swizzle(s, r))}, srcM,
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
  Value kTile(Value stage) { return view(bc, d, stageShift(stage)); }
  Value vTile(Value stage) {
    return view(bc, dv, add(stageShift(stage), idx(bc * d * eltBytes)));
  }

  /// Issues the tile's key block `blk` (counted from blockBase) into ring
  /// stage blk % stages when blk < nBlocks, then commits a cp.async group
  /// (always, so that every thread counts the same groups).
  void issueBlock(Value blk, Value nBlocks, Value bi, Value hk, Value skv) {
    auto ifOp = scf::IfOp::create(b, loc, ult(blk, nBlocks), false);
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      Value stage = remui(blk, stages);
      Value j0 = mul(add(blockBase, blk), idx(bc));
      // Two row tiles (the kernels at the register limit): every block but
      // the last is whole, and its copies skip the row checks, which keeps
      // fewer values live across the key loop. With one row tile the
      // second copy of the issue code made ptxas spill instead.
      if (mts > 1) {
        auto whole = scf::IfOp::create(
            b, loc,
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule,
                                  add(j0, idx(bc)), skv),
            /*withElseRegion=*/true);
        b.setInsertionPointToStart(&whole.getThenRegion().front());
        // The whole block's first key through opaque(): as an affine
        // function of the loop's counter, LLVM's loop strength reduction
        // turns each thread's copy addresses into pointers carried by the
        // loop (8 64-bit ones for K and V), which left the kernels with
        // static head counts spilling at 255 registers; recomputed per
        // block they cost a few integer instructions. (Through the edge
        // copies too, the causal kernels spilled instead.)
        Value j0w = opaque(j0);
        issueTile(kM, kTile(stage), bc, d, bi, hk, j0w, skv, /*inRange=*/true);
        issueTile(vM, vTile(stage), bc, dv, bi, hk, j0w, skv, /*inRange=*/true);
        b.setInsertionPointToStart(&whole.getElseRegion().front());
      }
      issueTile(kM, kTile(stage), bc, d, bi, hk, j0, skv);
      issueTile(vM, vTile(stage), bc, dv, bi, hk, j0, skv);
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
    // bf16: nvvm.mma.sync takes each pair of bf16 as an i32 register
    // (MLIR 22's nvgpu.mma.sync cannot deduce bf16 PTX types).
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
        cRegs.push_back(
            vector::ExtractOp::create(b, loc, c, ArrayRef<int64_t>{i, j}));
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
        e.push_back(vector::ExtractOp::create(
            b, loc, x4, ArrayRef<int64_t>{2 * which + i, j}));
    return vector::FromElementsOp::create(b, loc, VectorType::get({2, 2}, elt),
                                          e);
  }

  /// A lane's ldmatrix row address in a swizzled tile of `width` elements
  /// per row, as an element index relative to the tile: row `laneRow` (the
  /// lane's part of the row; the swizzle is the same for every multiple of
  /// 16 rows added to it), chunk `half` (0 or 1: which 8 columns of a
  /// 16-column fragment the lane addresses) through the swizzle.
  Value laneAddress(Value laneRow, Value half, int64_t width) {
    Swizzle s = Swizzle::forWidth(width);
    return add(mul(laneRow, idx(width)), physColumn(half, swizzle(s, laneRow)));
  }

  /// ldmatrix x4 from the flat shared-memory view at element `tileBase`
  /// (the tile's start) + `laneAddr` (laneAddress) for the fragment of
  /// columns [16 c2, 16 c2 + 16) and rows `rowImm` further (a multiple of
  /// 16). Physical chunk (2 c2 + half) ^ sw = hi + ((lo + half) ^ sw) with
  /// lo = 2 c2 mod p, the bits the swizzle touches, and hi the rest; as
  /// tile and row starts are multiples of 8 p elements, the address is
  /// ((tileBase + laneAddr) ^ 8 lo) + 8 hi + rowImm: one base register per
  /// operand, one XOR per fragment, the rest an immediate offset. (As
  /// separate column indices, each swizzled column was hoisted out of the
  /// key loop into a register of its own.) `tileBase` must vary per key
  /// block (a stage offset, or opaque()), or LLVM hoists every fragment's
  /// address again.
  Value fragment(Value tileBase, Value laneAddr, int64_t width, int64_t c2,
                 int64_t rowImm, bool transpose) {
    Swizzle s = Swizzle::forWidth(width);
    int64_t lo = (2 * c2) % s.p, hi = 2 * c2 - lo;
    Value at = add(tileBase, laneAddr);
    if (lo)
      at = arith::XOrIOp::create(b, loc, at, idx(8 * lo));
    if (int64_t imm = 8 * hi + rowImm * width)
      at = add(at, idx(imm));
    return nvgpu::LdMatrixOp::create(b, loc, VectorType::get({4, 2}, elt),
                                     flat, ValueRange{at}, transpose,
                                     /*numTiles=*/4);
  }

  /// Q's A fragment for the warp's row tile `mt` and D columns [16 kc,
  /// 16 kc + 16), by ldmatrix x4 from the Q tile at element `qBase`:
  /// lanes 0-15 address rows 16 rowTiles warp + 16 mt + l at chunk 2 kc,
  /// lanes 16-31 the same rows at chunk 2 kc + 1 (registers a0..a3 in A
  /// order).
  Value qFragment(Value qBase, int64_t mt, int64_t kc) {
    Value l16 = remui(lane, 16), hi16 = divui(lane, 16);
    Value row = add(mul(warp, idx(16 * mts)), l16);
    return fragment(qBase, laneAddress(row, hi16, d), d, kc, 16 * mt,
                    /*transpose=*/false);
  }

  //===--------------------------------------------------------------------===//
  // Grid
  //===--------------------------------------------------------------------===//
  std::tuple<Value, Value, Value> heaviestFirst(bool fresh);
  struct Coords {
    Value qb, h, bi;
  };
  Coords blockCoords(bool fresh);
  /// The forall's induction variables (b, head, query block[, split]) to
  /// the workgroup's coordinates `c` (and the split blockCoords set).
  void mapCoords(IRMapping &m, const Coords &c) {
    auto ivs = forall.getInductionVars();
    m.map(ivs[0], c.bi);
    m.map(ivs[1], c.h);
    m.map(ivs[2], c.qb);
    if (partial)
      m.map(ivs[3], split);
  }

  //===--------------------------------------------------------------------===//
  // The walk
  //===--------------------------------------------------------------------===//
  LogicalResult emitBody(Block &body);
  LogicalResult emitOp(Operation &op);
  LogicalResult emitGeneric(linalg::GenericOp g);
  LogicalResult emitContraction(linalg::GenericOp g);
  LogicalResult emitElementwise(linalg::GenericOp g);
  LogicalResult emitRowReduction(linalg::GenericOp g);
  LogicalResult emitAllReduction(linalg::GenericOp g);
  LogicalResult emitIf(scf::IfOp op);
  LogicalResult emitKeyLoops(ArrayRef<scf::ForOp> loops);
  LogicalResult emitStores(scf::InParallelOp par);
  void lowerApproximateExp2(gpu::LaunchOp launch);
  void registerLaterElementwise(Operation &from);
  /// Ops registered ahead of their place (registerLaterElementwise).
  DenseSet<Operation *> preEmitted;

  /// Flattened SSA values of frags for loop-carried state and branch
  /// results, and back.
  void flatten(Frag &f, Frag::Kind kind, bool partialRow, int64_t nts,
               SmallVectorImpl<Value> &out);
  Frag unflatten(const Frag &like, ValueRange &values);
  /// The layout a loop-carried or yielded tensor takes.
  Frag layoutFor(Value yielded, Value init);
};

//===----------------------------------------------------------------------===//
// Grid
//===----------------------------------------------------------------------===//

/// Causal: query block i sees (i + 1) blocks' worth of keys, so the order in
/// which workgroups start decides how long the last ones run alone. The
/// hardware starts them in linear id order (x fastest); this maps the
/// linear id to (query block, y, z) so that, within a group of G (y, z)
/// pairs, the heaviest query block of every pair starts first, then the
/// next heaviest (longest processing time first). G keeps the K and V of
/// the group's heads within the tiling's heaviest_first bytes, so that the
/// workgroups in flight read K and V that L2 holds. A bijection of the
/// grid in 32-bit arithmetic (the runtime refuses grids of 2^32 or more
/// workgroups). Only from kHeaviestFirstBlocks query blocks up
/// (cuda-h100-2026-11-22m: below, the mapping cost more than it gained).
/// `fresh`: the linear id and the lengths through opaque(), so that LLVM
/// computes the coordinates again instead of keeping the first
/// computation's values live across the key loop.
std::tuple<Value, Value, Value> MmaKernel::heaviestFirst(bool fresh) {
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
  auto ids = launchOp.getBlockIds();
  auto grid = launchOp.getGridSize();
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
  // sharing K and V) / Skv; fresh, from opaque copies of the lengths, or
  // LLVM would keep G live. Skv is clamped to 32 bits and the ratio to
  // 2^12 (G is at most the pair count anyway), so that the product (keys
  // <= 2^18) stays below 2^32.
  auto shape = [&](Value m, int64_t i) {
    return fresh ? opaque(dim(m, i)) : dim(m, i);
  };
  Value skv = narrow(minu(shape(kM, 2), idx(INT32_MAX)));
  Value qHeads = dim(qM, 1);
  Value ratio = minu(divu(narrow(fresh ? opaque(qHeads) : qHeads),
                          maxu(narrow(shape(kM, 1)), one)),
                     c32(1 << 12));
  int64_t keys = std::clamp<int64_t>(
      tiling.getHeaviestFirst() / ((d + dv) * eltBytes), 1, int64_t(1) << 18);
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

/// This workgroup's query block, head (the KV head when packed) and batch,
/// and (split-KV: grid y is head x chunks) sets `split`. Causal grids in
/// heaviest-first order: the coordinates are then computed values, not the
/// block-id registers ptxas reads again where needed, so the epilogue asks
/// for them again (`fresh`) rather than holding them across the key loop.
MmaKernel::Coords MmaKernel::blockCoords(bool fresh) {
  auto ids = launchOp.getBlockIds();
  Coords c{ids.x, ids.y, ids.z};
  if (tiling.getHeaviestFirst() > 0)
    std::tie(c.qb, c.h, c.bi) = heaviestFirst(fresh);
  if (partial) {
    split = arith::RemUIOp::create(b, loc, c.h, splits);
    c.h = arith::DivUIOp::create(b, loc, c.h, splits);
  }
  return c;
}

//===----------------------------------------------------------------------===//
// Flattening of frags (loop-carried state, branch results)
//===----------------------------------------------------------------------===//

void MmaKernel::flatten(Frag &f, Frag::Kind kind, bool partialRow,
                        int64_t nts, SmallVectorImpl<Value> &out) {
  if (kind == Frag::C) {
    for (int64_t i = 0; i < mts * nts; ++i)
      out.push_back(vec(f, i));
    return;
  }
  // Row (or Scalar)
  int64_t n = kind == Frag::Row ? 2 * mts : 1;
  for (int64_t r = 0; r < n; ++r) {
    if (f.kind == Frag::Fill) {
      out.push_back(f.elems[0]);
      continue;
    }
    out.push_back(partialRow ? f.elems[r] : rowValue(f, r));
  }
}

Frag MmaKernel::unflatten(const Frag &like, ValueRange &values) {
  Frag f;
  f.kind = like.kind;
  f.elt = like.elt;
  f.nts = like.nts;
  f.partial = like.partial;
  if (like.kind == Frag::C) {
    f.vecs.assign(values.begin(), values.begin() + mts * like.nts);
    f.elems.assign(mts * like.nts * 4, Value());
    values = values.drop_front(mts * like.nts);
    return f;
  }
  int64_t n = like.kind == Frag::Row ? 2 * mts : 1;
  f.elems.assign(values.begin(), values.begin() + n);
  values = values.drop_front(n);
  return f;
}

//===----------------------------------------------------------------------===//
// The walk over the tiled form
//===----------------------------------------------------------------------===//

LogicalResult MmaKernel::emitBody(Block &body) {
  // The key loops are emitted together (one software pipeline); the rest
  // in order.
  SmallVector<scf::ForOp> keyLoops;
  for (Operation &op : body.without_terminator())
    if (auto f = dyn_cast<scf::ForOp>(op); f && f.getNumResults() == 3 &&
                                           isa<RankedTensorType>(
                                               f.getResult(0).getType()))
      keyLoops.push_back(f);
  if (keyLoops.empty() || keyLoops.size() > 2)
    return forall.emitOpError("convert-attn-tiles-to-nvgpu: expected one or "
                              "two key loops in the tile, found ")
           << keyLoops.size();
  for (Operation &op : body.without_terminator()) {
    if (auto f = dyn_cast<scf::ForOp>(op); f && f == keyLoops.front()) {
      if (failed(emitKeyLoops(keyLoops)))
        return failure();
      continue;
    }
    if (llvm::is_contained(keyLoops, &op))
      continue;
    if (failed(emitOp(op)))
      return failure();
  }
  return emitStores(cast<scf::InParallelOp>(body.getTerminator()));
}

/// Before a reduction asks for a lazy tile's elements, the elementwise ops
/// later in the block that can already be defined (every operand known)
/// are registered, so that each element's whole chain is computed where
/// the reduction first needs it (a probability, its dropout decision and
/// its rounding next to each other, as a kernel written by hand would).
void MmaKernel::registerLaterElementwise(Operation &from) {
  for (Operation *op = from.getNextNode(); op; op = op->getNextNode()) {
    auto g = dyn_cast<linalg::GenericOp>(op);
    if (!g || preEmitted.contains(op) ||
        classifyTileOp(g) != TileOpKind::Elementwise ||
        cast<RankedTensorType>(g.getResult(0).getType()).getRank() != 2)
      continue;
    Block &body = g.getRegion().front();
    bool ready = llvm::all_of(g->getOpOperands(), [&](OpOperand &o) {
      return body.getArgument(o.getOperandNumber()).use_empty() ||
             frags.count(o.get());
    });
    if (ready && succeeded(emitElementwise(g)))
      preEmitted.insert(op);
  }
}

LogicalResult MmaKernel::emitOp(Operation &op) {
  if (preEmitted.contains(&op))
    return success();
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
    Value source = slice.getSource();
    if (auto it = frags.find(source); it != frags.end()) {
      // The valid rows of a finalized tile: [0, rows).
      Frag f = it->second;
      f.rowLimit = slice.getMixedSizes()[0].dyn_cast<Value>();
      if (!f.rowLimit)
        f.rowLimit = Value(); // static: all rows of the tile are valid
      frags[slice.getResult()] = f;
      return success();
    }
    Frag f;
    f.kind = Frag::View;
    f.source = source;
    f.offsets = slice.getMixedOffsets();
    frags[slice.getResult()] = f;
    return success();
  }
  if (auto pad = dyn_cast<tensor::PadOp>(op)) {
    auto it = frags.find(pad.getSource());
    if (it == frags.end() || it->second.kind != Frag::View)
      return pad.emitOpError("convert-attn-tiles-to-nvgpu: a pad of what is "
                             "not a slice of the function's tensors");
    Frag f = it->second;
    f.padded = true;
    frags[pad.getResult()] = f;
    return success();
  }
  if (isa<tensor::EmptyOp>(op)) {
    frags[op.getResult(0)] = Frag();
    return success();
  }
  if (auto fill = dyn_cast<linalg::FillOp>(op)) {
    Frag f;
    f.kind = Frag::Fill;
    f.elems.push_back(value(fill.getInputs()[0]));
    frags[fill.getResult(0)] = f;
    return success();
  }
  if (auto g = dyn_cast<linalg::GenericOp>(op))
    return emitGeneric(g);
  if (auto ifOp = dyn_cast<scf::IfOp>(op))
    return emitIf(ifOp);
  if (auto extract = dyn_cast<tensor::ExtractOp>(op)) {
    auto it = frags.find(extract.getTensor());
    if (it == frags.end() || it->second.kind != Frag::Scalar)
      return extract.emitOpError("convert-attn-tiles-to-nvgpu: unexpected "
                                 "extract");
    map.map(extract.getResult(), it->second.elems[0]);
    return success();
  }
  if (auto dimOp = dyn_cast<tensor::DimOp>(op)) {
    // A workspace's extent (the split count): its memref's.
    Value t = dimOp.getSource();
    Value m = map.lookupOrNull(t);
    if (!m)
      return dimOp.emitOpError("convert-attn-tiles-to-nvgpu: the extent of "
                               "an unexpected tensor");
    map.map(dimOp.getResult(),
            memref::DimOp::create(b, loc, m, value(dimOp.getIndex())));
    return success();
  }
  // Scalars and index computations: as they are.
  if (llvm::any_of(op.getOperandTypes(), llvm::IsaPred<ShapedType>) ||
      llvm::any_of(op.getResultTypes(), llvm::IsaPred<ShapedType>) ||
      op.getNumRegions())
    return op.emitOpError("convert-attn-tiles-to-nvgpu: unexpected op in the "
                          "tiled form");
  deferred.insert(&op);
  return success();
}

LogicalResult MmaKernel::emitGeneric(linalg::GenericOp g) {
  switch (classifyTileOp(g)) {
  case TileOpKind::Contraction:
    return emitContraction(g);
  case TileOpKind::Elementwise:
    return emitElementwise(g);
  case TileOpKind::RowReduction:
    registerLaterElementwise(*g);
    return emitRowReduction(g);
  case TileOpKind::AllReduction:
    return emitAllReduction(g);
  case TileOpKind::Other:
    break;
  }
  return g.emitOpError("convert-attn-tiles-to-nvgpu: a generic the "
                       "tensor-core mapping does not know");
}

LogicalResult MmaKernel::emitContraction(linalg::GenericOp g) {
  Value lhs = g.getDpsInputs()[0], rhs = g.getDpsInputs()[1],
        init = g.getDpsInits()[0];
  Frag &rhsF = frags[rhs];
  if (rhsF.kind != Frag::View)
    return g.emitOpError("convert-attn-tiles-to-nvgpu: the right operand of "
                         "a product must be a K or V tile");
  auto outTy = cast<RankedTensorType>(g.getResult(0).getType());
  int64_t nOut = outTy.getDimSize(1) / 8;
  auto fragX4 = VectorType::get({4, 2}, elt);
  Value laneV = lane;
  Value l8 = remui(laneV, 8), l16 = remui(laneV, 16);
  Value bit3 = remui(divui(laneV, 8), 2), hi16 = divui(laneV, 16);

  if (rhsTransposed(g)) {
    // S = Q . K^T, two 8-key n-tiles (16 keys) at a time: ldmatrix x4 lanes
    // 0-7 address keys 16 np + l at chunk 2 kc, lanes 8-15 the same keys at
    // chunk 2 kc + 1, lanes 16-31 keys 16 np + 8 + l likewise, so
    // registers 0-1 are tile 2 np's B fragment and 2-3 tile 2 np + 1's.
    Frag &q = frags[lhs];
    if (q.kind != Frag::View || q.source != qT)
      return g.emitOpError("convert-attn-tiles-to-nvgpu: Q.K^T's left "
                           "operand must be the Q tile");
    Frag s = newC(b.getF32Type(), nOut);
    Frag &initF = frags[init];
    for (int64_t i = 0; i < mts * nOut; ++i)
      s.vecs[i] = vec(initF, i);
    Value kLane = laneAddress(add(mul(hi16, idx(8)), l8), bit3, d);
    auto kFragsTimesQ = [&](int64_t np, int64_t kc, ArrayRef<Value> a) {
      Value x4 = fragment(kBase, kLane, d, kc, 16 * np, /*transpose=*/false);
      for (int64_t mt = 0; mt < mts; ++mt) {
        Value &c0 = s.vecs[mt * nOut + 2 * np], &c1 = s.vecs[mt * nOut + 2 * np + 1];
        c0 = mma(a[mt], halfOf(x4, 0), c0);
        c1 = mma(a[mt], halfOf(x4, 1), c1);
      }
    };
    if (qFromSmem) {
      // Q's fragments for this 16 of D, read from shared memory, then every
      // key tile: 32 registers fewer held across the key loop.
      Value qBase = opaque(idx(qOffset / eltBytes));
      for (int64_t kc = 0; kc < d / 16; ++kc) {
        SmallVector<Value> a;
        for (int64_t mt = 0; mt < mts; ++mt)
          a.push_back(qFragment(qBase, mt, kc));
        for (int64_t np = 0; np < nOut / 2; ++np)
          kFragsTimesQ(np, kc, a);
      }
    } else {
      for (int64_t np = 0; np < nOut / 2; ++np)
        for (int64_t kc = 0; kc < d / 16; ++kc) {
          SmallVector<Value> a;
          for (int64_t mt = 0; mt < mts; ++mt)
            a.push_back(qFrag[mt * (d / 16) + kc]);
          kFragsTimesQ(np, kc, a);
        }
    }
    frags[g.getResult(0)] = s;
    return success();
  }

  // acc' = acc + P . V. P's C fragments are its A fragments (16 keys each,
  // tiles 2 kk and 2 kk + 1); V's B fragments by ldmatrix x4 .trans: lanes
  // 0-15 address keys 16 kk + l at chunk 2 np (registers 0-1: output tile
  // 2 np), lanes 16-31 the same keys at chunk 2 np + 1 (tile 2 np + 1).
  Frag &p = frags[lhs];
  if (p.kind != Frag::C || p.elt != elt)
    return g.emitOpError("convert-attn-tiles-to-nvgpu: P . V's left operand "
                         "must be a tile of the element type (p_type)");
  int64_t nTiles = p.nts;
  SmallVector<Value> pFrag(mts * (nTiles / 2));
  for (int64_t mt = 0; mt < mts; ++mt)
    for (int64_t kk = 0; kk < nTiles / 2; ++kk) {
      SmallVector<Value> e;
      for (auto [tile, half] : {std::pair{2 * kk, 0}, std::pair{2 * kk, 1},
                                std::pair{2 * kk + 1, 0},
                                std::pair{2 * kk + 1, 1}})
        for (int64_t j = 0; j < 2; ++j)
          e.push_back(elem(p, mt * nTiles + tile, half, j));
      pFrag[mt * (nTiles / 2) + kk] =
          vector::FromElementsOp::create(b, loc, fragX4, e);
    }
  Frag acc = newC(b.getF32Type(), nOut);
  Frag &initF = frags[init];
  for (int64_t i = 0; i < mts * nOut; ++i)
    acc.vecs[i] = vec(initF, i);
  Value vLane = laneAddress(l16, hi16, dv);
  for (int64_t np = 0; np < nOut / 2; ++np)
    for (int64_t kk = 0; kk < nTiles / 2; ++kk) {
      Value x4 = fragment(vBase, vLane, dv, np, 16 * kk, /*transpose=*/true);
      for (int64_t mt = 0; mt < mts; ++mt) {
        Value &a0 = acc.vecs[mt * nOut + 2 * np],
              &a1 = acc.vecs[mt * nOut + 2 * np + 1];
        a0 = mma(pFrag[mt * (nTiles / 2) + kk], halfOf(x4, 0), a0);
        a1 = mma(pFrag[mt * (nTiles / 2) + kk], halfOf(x4, 1), a1);
      }
    }
  frags[g.getResult(0)] = acc;
  return success();
}

LogicalResult MmaKernel::emitElementwise(linalg::GenericOp g) {
  auto outTy = cast<RankedTensorType>(g.getResult(0).getType());
  Type outElt = outTy.getElementType();
  Block &bodyBlock = g.getRegion().front();
  bool usesIndex = !bodyBlock.getOps<linalg::IndexOp>().empty();
  // The operands the body reads, with how each is indexed.
  SmallVector<OpOperand *> operands;
  for (OpOperand &o : g->getOpOperands())
    operands.push_back(&o);

  if (outTy.getRank() == 1) {
    // Row vectors: per row of the thread. A product of a partial sum and a
    // quad-uniform factor stays partial (the running sum's rescale).
    SmallVector<Value> partialIns;
    for (OpOperand *o : operands)
      if (!bodyBlock.getArgument(o->getOperandNumber()).use_empty())
        if (frags[o->get()].kind == Frag::Row && frags[o->get()].partial)
          partialIns.push_back(o->get());
    bool keepPartial = false;
    if (partialIns.size() == 1) {
      Operation &first = bodyBlock.front();
      keepPartial = isa<arith::MulFOp>(first) &&
                    &first == bodyBlock.getTerminator()->getPrevNode() &&
                    bodyBlock.getTerminator()->getOperand(0) ==
                        first.getResult(0);
    }
    Frag out;
    out.kind = Frag::Row;
    out.elt = outElt;
    out.partial = keepPartial;
    for (int64_t r = 0; r < 2 * mts; ++r) {
      SmallVector<Value> args;
      for (OpOperand *o : operands) {
        if (bodyBlock.getArgument(o->getOperandNumber()).use_empty()) {
          args.push_back(Value());
          continue;
        }
        Frag &f = frags[o->get()];
        if (f.kind == Frag::Row && f.partial && keepPartial)
          args.push_back(f.elems[r]);
        else if (f.kind == Frag::Row || f.kind == Frag::Fill)
          args.push_back(rowValue(f, r));
        else
          return g.emitOpError("convert-attn-tiles-to-nvgpu: unexpected "
                               "operand of a row operation");
      }
      SmallVector<Value> indices;
      if (usesIndex)
        indices.push_back(tileRow(r / 2, r % 2));
      out.elems.push_back(cloneGenericBody(b, g, args, indices, map, resolver())[0]);
    }
    frags[g.getResult(0)] = out;
    return success();
  }

  // [Br, X] tiles: per element of the thread's C fragments, computed where
  // the first consumer asks for it.
  int64_t nts = outTy.getDimSize(1) / 8;
  for (OpOperand *o : operands) {
    if (bodyBlock.getArgument(o->getOperandNumber()).use_empty())
      continue;
    auto it = frags.find(o->get());
    AffineMap m = g.getMatchingIndexingMap(o);
    bool known =
        it != frags.end() &&
        (it->second.kind == Frag::Fill ||
         (it->second.kind == Frag::Row && m.getNumResults() == 1) ||
         ((it->second.kind == Frag::C || it->second.kind == Frag::View) &&
          m.isIdentity()));
    if (!known)
      return g.emitOpError("convert-attn-tiles-to-nvgpu: unexpected operand "
                           "of an elementwise tile op");
  }
  Frag out = newC(outElt, nts);
  for (OpOperand *o : operands)
    if (auto it = frags.find(o->get());
        it != frags.end() && it->second.kind == Frag::C && it->second.gen &&
        !bodyBlock.getArgument(o->getOperandNumber()).use_empty())
      it->second.lazyUsers.push_back(g.getResult(0));
  out.gen = [this, g, operands, usesIndex](int64_t i, int64_t half,
                                           int64_t j) mutable -> Value {
    Block &bodyBlock = g.getRegion().front();
    int64_t nts = cast<RankedTensorType>(g.getResult(0).getType())
                      .getDimSize(1) / 8;
    int64_t mt = i / nts, n = i % nts;
    SmallVector<Value> args;
    for (OpOperand *o : operands) {
      if (bodyBlock.getArgument(o->getOperandNumber()).use_empty()) {
        args.push_back(Value());
        continue;
      }
      Frag &f = frags.find(o->get())->second;
      if (f.kind == Frag::Fill) {
        args.push_back(f.elems[0]);
      } else if (f.kind == Frag::Row) {
        args.push_back(rowValue(f, 2 * mt + half));
      } else if (f.kind == Frag::C) {
        args.push_back(elem(f, i, half, j));
      } else {
        // A tile read element by element (a mask) from global memory;
        // padded dimensions clamped into the tensor (their elements are
        // poison: any value is right).
        Value srcM = map.lookup(f.source);
        SmallVector<Value> at;
        for (OpFoldResult off : f.offsets)
          at.push_back(value(off));
        at[2] = add(at[2], tileRow(mt, half));
        at[3] = add(at[3], tileCol(n, j));
        if (f.padded)
          for (int64_t k : {2, 3})
            at[k] = arith::MinUIOp::create(b, loc, at[k],
                                           sub(dim(srcM, k), idx(1)));
        args.push_back(memref::LoadOp::create(b, loc, srcM, at));
      }
    }
    SmallVector<Value> indices;
    if (usesIndex)
      indices = {tileRow(mt, half), tileCol(n, j)};
    return cloneGenericBody(b, g, args, indices, map, resolver())[0];
  };
  frags[g.getResult(0)] = out;
  return success();
}

namespace {
/// The combiner's identity, when `fill` is it (a reduction from it needs
/// no combine with the init).
bool isIdentityOf(Combiner c, Value fill) {
  auto cst = fill.getDefiningOp<arith::ConstantOp>();
  if (!cst)
    return false;
  if (auto f = dyn_cast<FloatAttr>(cst.getValue())) {
    double v = f.getValueAsDouble();
    return (c == Combiner::MaxF && std::isinf(v) && v < 0) ||
           (c == Combiner::AddF && v == 0.0 && !std::signbit(v));
  }
  if (auto i = dyn_cast<IntegerAttr>(cst.getValue()))
    return c == Combiner::OrI && i.getValue().isZero();
  return false;
}
} // namespace

LogicalResult MmaKernel::emitRowReduction(linalg::GenericOp g) {
  Frag &in = frags[g.getDpsInputs()[0]];
  Frag &init = frags[g.getDpsInits()[0]];
  Combiner comb = combinerOf(g);
  if (in.kind != Frag::C || comb == Combiner::Other)
    return g.emitOpError("convert-attn-tiles-to-nvgpu: a row reduction of "
                         "an unexpected tile");
  auto combine = [&](Value x, Value acc) {
    return cloneGenericBody(b, g, {x, acc}, {}, map, resolver())[0];
  };
  // A sum stays per thread: each thread adds its elements to its part of
  // the init (the running sum is partial across iterations too).
  bool keepPartial = comb == Combiner::AddF &&
                     (init.kind == Frag::Fill || init.partial);
  Frag out;
  out.kind = Frag::Row;
  out.elt = in.elt;
  out.partial = keepPartial;
  // The thread's elements in their storage order, each combined into its
  // row; then each row over the quad; then the init.
  SmallVector<Value> local(2 * mts);
  for (int64_t mt = 0; mt < mts; ++mt)
    for (int64_t n = 0; n < in.nts; ++n)
      for (int64_t half = 0; half < 2; ++half)
        for (int64_t j = 0; j < 2; ++j) {
          Value x = elem(in, mt * in.nts + n, half, j);
          Value &acc = local[2 * mt + half];
          acc = acc ? combine(x, acc) : x;
        }
  for (int64_t r = 0; r < 2 * mts; ++r) {
    Value v = local[r];
    Value initV = init.kind == Frag::Fill ? init.elems[0]
                  : keepPartial          ? init.elems[r]
                                         : rowValue(init, r);
    if (!keepPartial)
      v = quadReduce(v, [&](Value x, Value y) { return combine(y, x); });
    if (!(init.kind == Frag::Fill && isIdentityOf(comb, initV)))
      v = combine(v, initV);
    out.elems.push_back(v);
  }
  frags[g.getResult(0)] = out;
  return success();
}

LogicalResult MmaKernel::emitAllReduction(linalg::GenericOp g) {
  // The rescale guard: any row of the warp (the reduction is row-local, so
  // a warp decides for its own rows), by a vote.
  if (!g->hasAttr(kRowLocalGuardAttrName) || combinerOf(g) != Combiner::OrI)
    return g.emitOpError("convert-attn-tiles-to-nvgpu: a reduction over "
                         "rows that is not a row-local guard (a workgroup-"
                         "wide reduction is not mapped)");
  Block &bodyBlock = g.getRegion().front();
  Value acc;
  for (int64_t r = 0; r < 2 * mts; ++r) {
    SmallVector<Value> args;
    for (Value in : g.getDpsInputs())
      args.push_back(rowValue(frags[in], r));
    // The combine starts from the first row (the init is OR's identity).
    Value zero = arith::ConstantOp::create(
        b, loc, b.getIntegerAttr(bodyBlock.getArguments().back().getType(), 0));
    args.push_back(acc ? acc : zero);
    acc = cloneGenericBody(b, g, args, {}, map, resolver())[0];
  }
  Value any = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ne, acc,
      arith::ConstantOp::create(b, loc, b.getIntegerAttr(acc.getType(), 0)));
  Value vote = NVVM::VoteSyncOp::create(
      b, loc, b.getI1Type(),
      arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(-1)), any,
      NVVM::VoteSyncKind::any);
  Frag out;
  out.kind = Frag::Scalar;
  out.elems.push_back(arith::ExtUIOp::create(b, loc, acc.getType(), vote));
  frags[g.getResult(0)] = out;
  return success();
}

Frag MmaKernel::layoutFor(Value yielded, Value init) {
  auto t = cast<RankedTensorType>(yielded.getType());
  Frag f;
  if (t.getRank() == 2) {
    f.kind = Frag::C;
    f.elt = t.getElementType();
    f.nts = t.getDimSize(1) / 8;
    return f;
  }
  f.kind = t.getRank() == 1 ? Frag::Row : Frag::Scalar;
  f.elt = t.getElementType();
  // A running sum is carried per thread.
  if (auto g = yielded.getDefiningOp<linalg::GenericOp>())
    f.partial = classifyTileOp(g) == TileOpKind::RowReduction &&
                combinerOf(g) == Combiner::AddF;
  return f;
}

LogicalResult MmaKernel::emitIf(scf::IfOp op) {
  // The rescale guard. The else branch (the state as it was) is emitted
  // first and gives the results' layouts; then the then branch. Each
  // branch's values are flattened inside it, and what a branch computes or
  // extracts stays in it: the frags as they were before are restored
  // after. The op is then rebuilt with the results' types.
  forceLazy();
  Value cond = value(op.getCondition());
  auto tmp = scf::IfOp::create(b, loc, TypeRange{}, cond,
                               /*withElseRegion=*/true);
  SmallVector<Frag, 4> likes;
  SmallVector<Value> thenVals, elseVals;
  auto emitBranch = [&](Region &from, Block &into, bool isElse,
                        SmallVectorImpl<Value> &vals) -> LogicalResult {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(into.getTerminator());
    Scope scope(*this);
    Block &blk = from.front();
    for (Operation &o : blk.without_terminator())
      if (failed(emitOp(o)))
        return failure();
    for (auto [i, y] : llvm::enumerate(blk.getTerminator()->getOperands())) {
      Frag &f = frags[y];
      if (isElse) {
        Frag like = layoutFor(op.getResult(i), Value());
        like.partial = f.kind == Frag::Row && f.partial;
        likes.push_back(like);
      }
      flatten(f, likes[i].kind, likes[i].partial, likes[i].nts, vals);
    }
    return success();
  };
  if (failed(emitBranch(op.getElseRegion(), tmp.getElseRegion().front(),
                        /*isElse=*/true, elseVals)) ||
      failed(emitBranch(op.getThenRegion(), tmp.getThenRegion().front(),
                        /*isElse=*/false, thenVals)))
    return failure();
  SmallVector<Type> types;
  for (Value v : elseVals)
    types.push_back(v.getType());
  auto ifOp = scf::IfOp::create(b, loc, types, cond, /*withElseRegion=*/true);
  ifOp.getThenRegion().takeBody(tmp.getThenRegion());
  ifOp.getElseRegion().takeBody(tmp.getElseRegion());
  tmp.erase();
  for (auto [region, vals] : {std::pair{&ifOp.getThenRegion(), &thenVals},
                              std::pair{&ifOp.getElseRegion(), &elseVals}}) {
    Operation *term = region->front().getTerminator();
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(term);
    scf::YieldOp::create(b, loc, *vals);
    term->erase();
  }
  ValueRange results = ifOp.getResults();
  for (auto [i, r] : llvm::enumerate(op.getResults()))
    frags[r] = unflatten(likes[i], results);
  return success();
}

LogicalResult MmaKernel::emitKeyLoops(ArrayRef<scf::ForOp> loopsIn) {
  SmallVector<scf::ForOp> loops(loopsIn);
  scf::ForOp first = loops.front(), lastLoop = loops.back();
  // The K and V tiles: the products' right operands in the first loop;
  // the Q tile: Q.K^T's left operand (defined before the loops).
  Value kTileV, vTileV, qTileV;
  first.getBody()->walk([&](linalg::GenericOp g) {
    if (classifyTileOp(g) != TileOpKind::Contraction)
      return;
    if (rhsTransposed(g)) {
      kTileV = g.getDpsInputs()[1];
      qTileV = g.getDpsInputs()[0];
    } else {
      vTileV = g.getDpsInputs()[1];
    }
  });
  if (!kTileV || !vTileV || !qTileV)
    return first.emitOpError("convert-attn-tiles-to-nvgpu: expected Q.K^T "
                             "and P.V in the key loop");
  forceLazy();
  auto sliceOf = [](Value t) {
    if (auto pad = t.getDefiningOp<tensor::PadOp>())
      t = pad.getSource();
    return t.getDefiningOp<tensor::ExtractSliceOp>();
  };
  auto kSlice = sliceOf(kTileV), vSlice = sliceOf(vTileV);
  Frag &qF = frags[qTileV];
  if (!kSlice || !vSlice || qF.kind != Frag::View)
    return first.emitOpError("convert-attn-tiles-to-nvgpu: K, V and Q tiles "
                             "must be slices of the function's tensors");
  // (b, kv head) of the K/V slices: loop-invariant.
  Value bi = value(kSlice.getMixedOffsets()[0]);
  Value hk = value(kSlice.getMixedOffsets()[1]);
  Value skv = dim(kM, 2);

  // The tile's key blocks [lo, hi), split at mid into the unmasked and the
  // masked loop; counted from lo (blockBase).
  blockBase = value(first.getLowerBound());
  Value hi = value(lastLoop.getUpperBound());
  Value nBlocks = sub(hi, blockBase);
  Value nWhole = loops.size() == 2 ? sub(value(first.getUpperBound()), blockBase)
                                   : nBlocks;

  // Prologue: Q (one group), then blocks 0 .. stages - 2 (a group each). Q
  // sits in the last stage's space when it fits there, which no block uses
  // before the first iteration's barrier.
  Value qTileSmem = view(br, d, idx(qOffset));
  Value qSrcM = map.lookup(qF.source);
  Value qB = value(qF.offsets[0]), qH = value(qF.offsets[1]),
        qRow0 = value(qF.offsets[2]);
  issueTile(qSrcM, qTileSmem, br, d, qB, qH, qRow0, dim(qSrcM, 2));
  NVVM::CpAsyncCommitGroupOp::create(b, loc);
  for (int64_t s = 0; s + 1 < stages; ++s)
    issueBlock(idx(s), nBlocks, bi, hk, skv);
  waitGroups(stages - 1); // the Q group is complete
  gpu::BarrierOp::create(b, loc);
  // Q's A fragments, held in registers across the key loop (q_from_smem:
  // read again per key block instead).
  if (!qFromSmem)
    for (int64_t mt = 0; mt < mts; ++mt)
      for (int64_t kc = 0; kc < d / 16; ++kc)
        qFrag.push_back(qFragment(idx(qOffset / eltBytes), mt, kc));

  // The loop-carried state's layouts, from what the loop yields.
  Frag carried[3];
  {
    Operation *yield = lastLoop.getBody()->getTerminator();
    for (int i = 0; i < 3; ++i)
      carried[i] = layoutFor(yield->getOperand(i), first.getInitArgs()[i]);
  }
  SmallVector<Value> state;
  for (int i = 0; i < 3; ++i)
    flatten(frags[first.getInitArgs()[i]], carried[i].kind, carried[i].partial,
            carried[i].nts, state);

  // Each loop: block jb's group is complete once at most stages - 2 newer
  // groups are pending; the barrier publishes every thread's copies and
  // ensures all warps are done with block jb - 1, whose stage the next
  // issue overwrites (at jb = 0: the stage holding Q when it aliases).
  Value lo = idx(0);
  for (auto [li, loopOp] : llvm::enumerate(loops)) {
    Value hiRel = li + 1 == loops.size() ? nBlocks : nWhole;
    auto loop = scf::ForOp::create(b, loc, lo, hiRel, idx(1), state);
    lo = hiRel;
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value jr = loop.getInductionVar();
      waitGroups(stages - 2);
      gpu::BarrierOp::create(b, loc);
      issueBlock(add(jr, idx(stages - 1)), nBlocks, bi, hk, skv);
      Value stage = remui(jr, stages);
      kBase = mul(stage, idx(stageBytes / eltBytes));
      vBase = add(kBase, idx(bc * d));
      // What the body computes or extracts stays in the body.
      Scope scope(*this);
      map.map(loopOp.getInductionVar(), add(blockBase, jr));
      ValueRange iter = loop.getRegionIterArgs();
      for (int i = 0; i < 3; ++i)
        frags[loopOp.getRegionIterArgs()[i]] = unflatten(carried[i], iter);
      Block &body = *loopOp.getBody();
      for (Operation &op : body.without_terminator())
        if (failed(emitOp(op)))
          return failure();
      SmallVector<Value> next;
      for (int i = 0; i < 3; ++i)
        flatten(frags[body.getTerminator()->getOperand(i)], carried[i].kind,
                carried[i].partial, carried[i].nts, next);
      scf::YieldOp::create(b, loc, next);
    }
    state.assign(loop.getResults().begin(), loop.getResults().end());
    ValueRange results = loop.getResults();
    for (int i = 0; i < 3; ++i)
      frags[loopOp.getResult(i)] = unflatten(carried[i], results);
  }
  return success();
}

LogicalResult MmaKernel::emitStores(scf::InParallelOp par) {
  // Causal grids in heaviest-first order recompute their coordinates here
  // rather than hold them across the key loop: the stores' indices are
  // rebuilt from fresh ones.
  IRMapping fresh;
  bool remat = tiling.getHeaviestFirst() > 0;
  if (remat)
    mapCoords(fresh, blockCoords(/*fresh=*/true));
  // An index of the original IR in the epilogue: rebuilt from the fresh
  // coordinates where it depends on them.
  std::function<Value(Value)> at = [&](Value v) -> Value {
    if (!remat)
      return value(v);
    if (Value m = fresh.lookupOrNull(v))
      return m;
    Operation *def = v.getDefiningOp();
    if (!def || !forall->isProperAncestor(def))
      return value(v);
    for (Value o : def->getOperands())
      at(o);
    IRMapping m = map;
    for (Value o : def->getOperands())
      if (Value f = fresh.lookupOrNull(o))
        m.map(o, f);
    Operation *clone = b.clone(*def, m);
    for (auto [o, n] : llvm::zip(def->getResults(), clone->getResults()))
      fresh.map(o, n);
    return fresh.lookup(v);
  };
  auto atFold = [&](OpFoldResult o) -> Value {
    if (auto a = dyn_cast<Attribute>(o))
      return idx(cast<IntegerAttr>(a).getInt());
    return at(cast<Value>(o));
  };

  // Row vectors (the lse) first, then the tiles: the row statistics die
  // before the tile's conversions and stores (with the lse last, the
  // causal D = 128 partial kernel spilled at 255 registers).
  SmallVector<tensor::ParallelInsertSliceOp> inserts;
  for (Operation &op : par.getYieldingOps())
    inserts.push_back(cast<tensor::ParallelInsertSliceOp>(op));
  llvm::stable_sort(inserts, [&](auto x, auto y) {
      return frags[x.getSource()].kind == Frag::Row &&
             frags[y.getSource()].kind != Frag::Row;
    });
  for (tensor::ParallelInsertSliceOp insert : inserts) {
    Frag &f = frags[insert.getSource()];
    Value dest = map.lookup(insert.getDest());
    SmallVector<Value> offs;
    for (OpFoldResult o : insert.getMixedOffsets())
      offs.push_back(atFold(o));
    int64_t rank = offs.size();
    // Rows as destination indices: the thread's first row in the
    // destination (offset + warpRow) plus a constant per fragment row, and
    // the valid rows as a bound in the destination too, so that one value
    // (not the tile's offset and the thread's row apart) stays live
    // through the key loop for the stores.
    // Both sums sit where their operands are defined (the kernel's start,
    // unless heaviest-first rebuilt them here).
    Value rowOffset = f.kind == Frag::C ? offs[rank - 2] : offs[rank - 1];
    Value firstRow = addEarly(rowOffset, warpRow);
    auto destRow = [&](int64_t mt, int64_t half) {
      return add(firstRow, idx(16 * mt + 8 * half));
    };
    Value limit = f.rowLimit ? addEarly(rowOffset, at(f.rowLimit)) : Value();
    if (f.kind == Frag::C) {
      for (int64_t mt = 0; mt < mts; ++mt)
        for (int64_t half = 0; half < 2; ++half) {
          Value r = destRow(mt, half);
          OpBuilder::InsertionGuard guard(b);
          if (limit) {
            auto ifOp = scf::IfOp::create(b, loc, ult(r, limit), false);
            b.setInsertionPointToStart(&ifOp.getThenRegion().front());
          }
          SmallVector<Value> idxs(offs);
          idxs[rank - 2] = r;
          for (int64_t n = 0; n < f.nts; ++n)
            for (int64_t j = 0; j < 2; ++j) {
              idxs[rank - 1] = add(offs[rank - 1], tileCol(n, j));
              memref::StoreOp::create(b, loc, elem(f, mt * f.nts + n, half, j),
                                      dest, idxs);
            }
        }
      continue;
    }
    if (f.kind != Frag::Row)
      return insert.emitOpError("convert-attn-tiles-to-nvgpu: unexpected "
                                "inserted tile");
    // A row vector (the lse): one thread of the quad writes each row.
    for (int64_t r = 0; r < 2 * mts; ++r) {
      Value row = destRow(r / 2, r % 2);
      Value v = rowValue(f, r);
      Value cond = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, t2,
                                         idx(0));
      if (limit)
        cond = arith::AndIOp::create(b, loc, cond, ult(row, limit));
      auto ifOp = scf::IfOp::create(b, loc, cond, false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      SmallVector<Value> idxs(offs);
      idxs[rank - 1] = row;
      memref::StoreOp::create(b, loc, v, dest, idxs);
    }
  }
  return success();
}

LogicalResult MmaKernel::build(FlatSymbolRefAttr module,
                               FlatSymbolRefAttr function) {
  // Geometry from the tiling and the tiles' types.
  warps = mapping.getWarps();
  mts = mapping.getRowTiles();
  stages = mapping.getStages();
  qFromSmem = mapping.getQFromSmem();
  sharedBytes = mapping.getSharedBytes();
  br = tiling.getBlockQ();
  bc = tiling.getBlockKv();
  if (br != 16 * warps * mts)
    return forall.emitOpError("convert-attn-tiles-to-nvgpu: block_q ")
           << br << " is not 16 x warps x row_tiles of the mapping";
  if (bc != 16 && bc != 32 && bc != 64)
    return forall.emitOpError("convert-attn-tiles-to-nvgpu: block_kv must "
                              "be 16, 32 or 64, got ")
           << bc;
  // Whole tiles in registers: every tile of the loops has the static
  // block shape (padded edges).
  if (!tiling.getStaticTiles())
    return forall.emitOpError("convert-attn-tiles-to-nvgpu: the mapping "
                              "needs static_tiles");
  // Q, K and V (and with them D, Dv and the element type) from the
  // products.
  auto sliceSource = [](Value t) -> Value {
    if (auto pad = t.getDefiningOp<tensor::PadOp>())
      t = pad.getSource();
    auto slice = t.getDefiningOp<tensor::ExtractSliceOp>();
    return slice ? slice.getSource() : Value();
  };
  Value qTile;
  forall.getBody()->walk([&](linalg::GenericOp g) {
    if (classifyTileOp(g) != TileOpKind::Contraction)
      return;
    if (rhsTransposed(g)) {
      qTile = g.getDpsInputs()[0];
      kT = sliceSource(g.getDpsInputs()[1]);
    } else {
      dv = cast<RankedTensorType>(g.getResult(0).getType()).getDimSize(1);
      vT = sliceSource(g.getDpsInputs()[1]);
    }
  });
  if (!qTile || !kT || !vT || !dv)
    return forall.emitOpError("convert-attn-tiles-to-nvgpu: expected Q.K^T "
                              "and P.V on slices of the function's tensors");
  auto qTileTy = cast<RankedTensorType>(qTile.getType());
  elt = qTileTy.getElementType();
  d = qTileTy.getDimSize(1);
  eltBytes = elt.getIntOrFloatBitWidth() / 8;
  Value qSlice = qTile;
  if (auto pad = qSlice.getDefiningOp<tensor::PadOp>())
    qSlice = pad.getSource();
  auto qs = qSlice.getDefiningOp<tensor::ExtractSliceOp>();
  if (!qs)
    return forall.emitOpError("convert-attn-tiles-to-nvgpu: Q must be a slice");
  qT = qs.getSource();
  // P feeds the second mma.sync as an A operand of the element type.
  if (tiling.getPType() != elt)
    return forall.emitOpError("convert-attn-tiles-to-nvgpu: the mapping "
                              "needs p_type = the element type ")
           << elt;
  stageBytes = bc * (d + dv) * eltBytes;
  int64_t qBytes = br * d * eltBytes;
  qOffset = qBytes <= stageBytes && !qFromSmem ? (stages - 1) * stageBytes
                                               : stages * stageBytes;
  int64_t needed = std::max(stages * stageBytes, qOffset + qBytes);
  if (sharedBytes < needed)
    return forall.emitOpError("convert-attn-tiles-to-nvgpu: shared_bytes ")
           << sharedBytes << " is less than the " << needed
           << " bytes of the K/V ring and Q";

  // The grid: x = query blocks, y = heads (x chunks), z = batch.
  auto ubs = forall.getMixedUpperBound();
  auto host = [&](OpFoldResult o) {
    return getValueOrCreateConstantIndexOp(b, loc, o);
  };
  Value gx = host(ubs[2]), gy = host(ubs[1]), gz = host(ubs[0]);
  if (partial)
    gy = arith::MulIOp::create(b, loc, gy, host(ubs[3]));
  Value one = idx(1);
  Value shared = arith::ConstantOp::create(
      b, loc, b.getI32IntegerAttr(static_cast<int32_t>(sharedBytes)));
  auto launch = gpu::LaunchOp::create(
      b, loc, gx, gy, gz, idx(kWarp * warps), one, one, shared,
      /*asyncTokenType=*/nullptr, /*asyncDependencies=*/{},
      /*workgroupAttributions=*/{}, /*privateAttributions=*/{}, nullptr,
      nullptr, nullptr, module, function);
  launchOp = launch;
  LaunchInfo info;
  info.packed = tiling.getPackHeads();
  info.blockQ = br;
  info.blockKv = bc;
  info.splits = partial;
  info.when = launchWhen(forall);
  markLaunch(launch, info);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(&launch.getBody().front());
  // The dynamic shared memory, 16-byte aligned; every view starts at a
  // multiple of 16 bytes, as cp.async and ldmatrix need.
  auto base =
      memref::GetGlobalOp::create(b, loc, smemGlobalType(), smemGlobal());
  if (mapping.getMaxRegisters() > 0)
    base->setAttr(kNVVMMaxRegistersAttr,
                  b.getI32IntegerAttr(
                      static_cast<int32_t>(mapping.getMaxRegisters())));
  smem = memref::CastOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                      MemRefLayoutAttrInterface{}, workgroup()),
      base);
  flat = memref::ViewOp::create(
      b, loc,
      MemRefType::get({sharedBytes / eltBytes}, elt,
                      MemRefLayoutAttrInterface{}, workgroup()),
      smem, idx(0), ValueRange{});

  // The function's tensors as memrefs in the kernel (packed decode: q, out
  // and lse seen as [B, Hkv, group, ...]); the forall's outputs as their
  // destinations.
  splits = Value();
  if (partial) {
    Value ws = src.destinations[forall.getResult(1)];
    splits = dim(ws, 2);
  }
  // (Packed: Hkv from the forall's heads extent.)
  mapKernelTensors(b, loc, src, forall, qT, [&] { return value(ubs[1]); },
                   map, /*reshape=*/false);
  qM = map.lookup(qT);
  kM = map.lookup(kT);
  vM = map.lookup(vT);

  // The thread's place.
  tid = launch.getThreadIds().x;
  warp = divui(tid, kWarp);
  lane = remui(tid, kWarp);
  g = divui(lane, 4);
  t2 = mul(remui(lane, 4), idx(2));
  warpRow = add(mul(warp, idx(16 * mts)), g);

  mapCoords(map, blockCoords(/*fresh=*/false));

  if (failed(emitBody(*forall.getBody())))
    return failure();
  gpu::TerminatorOp::create(b, loc);
  lowerApproximateExp2(launch);
  return success();
}

/// The softmax's exponentials (math.exp2 with fastmath afn, on f32) as one
/// MUFU.EX2 each (ex2.approx.ftz.f32). math.exp2 becomes ex2.approx.f32,
/// which ptxas wraps in a subnormal range check and two conditional
/// multiplies (4 instructions per element instead of 1); the decomposition
/// marks the ones whose flushed subnormals do not matter.
void MmaKernel::lowerApproximateExp2(gpu::LaunchOp launch) {
  SmallVector<math::Exp2Op> exps;
  launch.walk([&](math::Exp2Op e) {
    if (e.getType().isF32() &&
        bitEnumContainsAll(e.getFastmath(), arith::FastMathFlags::afn))
      exps.push_back(e);
  });
  for (math::Exp2Op e : exps) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(e);
    Value r = LLVM::CallIntrinsicOp::create(
                  b, e.getLoc(), b.getF32Type(),
                  b.getStringAttr("llvm.nvvm.ex2.approx.ftz.f32"),
                  ValueRange{e.getOperand()})
                  .getResult(0);
    e.replaceAllUsesWith(r);
    e.erase();
  }
}

struct ConvertAttnTilesToNVGPUPass
    : mlir::attn::impl::ConvertAttnTilesToNVGPUPassBase<
          ConvertAttnTilesToNVGPUPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<func::FuncOp> funcs(getOperation().getOps<func::FuncOp>());
    for (func::FuncOp fn : funcs) {
      SmallVector<TiledKernelSource> sources;
      if (failed(collectTiledKernels(
              fn, [](TilingAttr t) { return isa_and_nonnull<MmaSyncAttr>(t.getMapping()); },
              sources)))
        return signalPassFailure();
      llvm::StringMap<int64_t> seen;
      for (TiledKernelSource &src : sources) {
        // The alternative's Sq range names its kernels: "<fn>_sq1",
        // "<fn>_sq2to16"; the default (unbounded) keeps "<fn>".
        ::attn::LaunchCondition when;
        std::string why;
        if (!::attn::LaunchCondition::parse(launchWhen(src.main), when, why)) {
          src.main.emitOpError("convert-attn-tiles-to-nvgpu: ")
              << kLaunchWhenAttrName << " " << why;
          return signalPassFailure();
        }
        std::string suffix;
        if (when.sqMax != ::attn::LaunchCondition::kUnbounded)
          suffix = "_sq" + std::to_string(when.sqMin) +
                   (when.sqMin == when.sqMax
                        ? std::string()
                        : "to" + std::to_string(when.sqMax));
        int64_t index = seen[(src.merge ? "split" : "one") + suffix]++;
        if (failed(convert(src, suffix, index)))
          return signalPassFailure();
      }
    }
  }

  LogicalResult convert(TiledKernelSource &src, StringRef suffix,
                        int64_t index) {
    // (index: how many earlier attentions of the function had the same
    // role and suffix, for unique names)
    OpBuilder b(src.main);
    // Every kernel of a function in one gpu.module ("<fn>_kernels"): the
    // alternatives of a split-KV launch ("<fn>" unsplit, "<fn>_split_kv"
    // and "<fn>_split_kv_merge"), and those of other Sq ranges
    // ("<fn>_sq1", ...), are one binary.
    MLIRContext *ctx = &getContext();
    std::string base = src.func.getName().str() + suffix.str();
    if (index)
      base += "_" + std::to_string(index);
    auto module = FlatSymbolRefAttr::get(ctx, src.func.getName().str() + "_kernels");
    auto mainName = FlatSymbolRefAttr::get(ctx, src.merge ? base + "_split_kv" : base);
    auto mergeName = FlatSymbolRefAttr::get(ctx, base + "_split_kv_merge");
    MmaKernel kernel(b, src, src.main, /*partial=*/src.merge != nullptr);
    if (failed(kernel.build(module, mainName)))
      return failure();
    if (src.merge) {
      b.setInsertionPoint(src.merge);
      if (failed(buildMergeKernel(b, src, module, mergeName)))
        return failure();
    }
    finishTiledKernels(src);
    return success();
  }
};
} // namespace
