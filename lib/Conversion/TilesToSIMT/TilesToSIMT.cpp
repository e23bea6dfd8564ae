//===- TilesToSIMT.cpp - the tiled form on SIMT lanes (a thread or subgroup per row) -===//
//
// convert-attn-tiles-to-simt: each tiled attention whose tiling has an
// #attn.simt mapping becomes a gpu.launch in which row r of every tile
// belongs to thread r (lanes = 1) or to subgroup r, whose lane t holds
// columns t, t + lanes, ... (with the accumulator in cooperative-matrix
// registers: a contiguous run of a key block's columns, rowColumnOf). The
// kernel computes every value of the tiled
// form by evaluating the op that defines it, element by element, from its
// body (cloneGenericBody): the softmax, masks, causal, dropout and the
// finalize are the decomposition's, not written here. What is written here
// is the mapping: where each value lives (a scalar of the row, a private
// array of the lane's columns, a K/V tile in workgroup memory), which loops
// evaluate them (the ops over one key block fused into one loop over its
// keys), the staging, and the grid.
//
//===----------------------------------------------------------------------===//
#include "attn/Conversion/TilesToSIMT/TilesToSIMT.h"
#include "attn/Conversion/Passes.h"
#include "attn/Conversion/SPIRVBufferLimits.h"
#include "attn/Conversion/TileDistribution.h"

#include "attn/Dialect/Attn/IR/AttnAttrs.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Dialect/Attn/Transforms/Transforms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVAttributes.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>
#include <limits>

namespace mlir::attn {
#define GEN_PASS_DEF_CONVERTATTNTILESTOSIMTPASS
#include "attn/Conversion/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Where one tensor of the tiled form lives in the kernel.
struct Tile {
  enum Kind {
    None,    // nothing yet (tensor.empty)
    Scalar,  // a row vector: the row's value (`partial`: this lane's share
             // of a sum, the row's value being the subgroup's sum)
    Fill,    // every element is `value`
    View,    // a slice of a function tensor, read element by element
    Staged,  // a K/V tile in workgroup memory: `memref` [keys, width]
    Row,     // the whole row of a tile in a private array (Q)
    Private, // the lane's columns in a private array, slot s = column
             // s * lanes + lane (a value a later loop reads again)
    Lazy,    // computed where its consumers need it, by `op`
    Acc      // a [rows, Dv] accumulator: the lane's value columns in a
             // private array, updated in place
  };
  Kind kind = None;
  Value value;
  bool partial = false;
  /// Scalar, partial: the row's value once reduced over the subgroup.
  Value reduced;
  Value memref;
  /// View: the slice of `source` at `offsets` (original IR values); the
  /// tile's dimensions are the slice's `dims`.
  Value source;
  SmallVector<OpFoldResult> offsets;
  SmallVector<int64_t> dims;
  /// Lazy: the op computing it.
  linalg::GenericOp op;
  /// Acc with #attn.coop_matrix registers: the subgroup's accumulator
  /// matrices (its strip's Dv / 16 16x16 f32 matrices), and the row factor
  /// not yet multiplied into them (null: none).
  SmallVector<Value, 0> frags;
  Value scale;
};

/// The element a loop iteration works on: its slot in the lane's arrays
/// and its column in the tile.
struct Iter {
  Iter(Value slot, Value col) : slot(slot), col(col) {}
  Value slot, col;
  DenseMap<Value, Value> memo;
};

class SimtKernel {
public:
  SimtKernel(OpBuilder &b, TiledKernelSource &src, bool spirv)
      : b(b), loc(src.main.getLoc()), src(src), forall(src.main),
        partial(src.merge != nullptr), spirv(spirv) {
    tiling = src.tiling;
    mapping = dyn_cast<SimtAttr>(tiling.getMapping());
    coop = dyn_cast<CoopMatrixAttr>(tiling.getMapping());
  }

  LogicalResult build(FlatSymbolRefAttr module, FlatSymbolRefAttr function);

private:
  OpBuilder &b;
  Location loc;
  TiledKernelSource &src;
  scf::ForallOp forall;
  bool partial, spirv;
  TilingAttr tiling;
  SimtAttr mapping;

  int64_t rows = 1, lanes = 1, br = 1, bc = 1;
  /// Cooperative matrices: the tiles' rows and keys rounded up to whole
  /// 16x16 matrices (a tile of a short static sequence is smaller: the
  /// rest is zero, or never read).
  int64_t brPad = 1, bcPad = 1;
  bool unroll = false;
  /// The cooperative-matrix mapping (null: the SIMT one): a workgroup of
  /// `invocations`, the products over workgroup-memory tiles.
  CoopMatrixAttr coop;
  int64_t invocations = 1;
  /// #attn.coop_matrix registers: `strips` 16-row strips per subgroup of
  /// 16 x lanes x strips invocations, Q's A matrices (`qFrags`, loaded
  /// once; strip-major) and the accumulator's in registers; `strip0` = the
  /// subgroup's first row; `scaleBuf` the [brPad, 16] f32 tile of the
  /// rows' rescale factors.
  bool regs = false;
  int64_t strips = 1;
  /// Registers: the invocations of a subgroup, and the subgroups.
  int64_t subgroupWidth() const { return 16 * lanes * strips; }
  int64_t subgroupCount() const { return invocations / subgroupWidth(); }
  /// Registers: the first row of the subgroup's strip `s`.
  Value stripRow(int64_t s) { return s ? add(strip0, idx(16 * s)) : strip0; }
  /// Registers: Q's tile is K's (staged into it once, before K's blocks).
  bool qInK = false;
  /// Registers, the finalize: the accumulator's column at S's tile's
  /// column 0 (the window of its columns there).
  int64_t accColumn0 = 0;
  Value strip0, scaleBuf;
  SmallVector<Value> qFrags;
  /// Its workgroup-memory tiles: S (f32), P (p_type), the accumulator
  /// (f32), Q (staged once); their padded row lengths are their shapes'.
  Value sBuf, pBuf, accBuf, qBuf;
  /// Original IR values -> kernel values; tensors -> where they live.
  IRMapping map;
  DenseMap<Value, Tile> tiles;
  /// The tile's scalar ops, cloned where first used (value()).
  DenseSet<Operation *> deferred;
  /// Ops already emitted out of order (a group's look-ahead).
  DenseSet<Operation *> handled;
  /// Column ops whose results are Lazy, in program order.
  SmallVector<linalg::GenericOp> pending;
  /// Where private arrays are allocated (the kernel's entry).
  Block *entry = nullptr;
  /// The invocation's row of the tile, its lane (lanes > 1), its id.
  Value row, lane, tid;
  /// row < the tile's rows (computed once, at the kernel's top level).
  Value rowValid;
  /// Workgroup memory for the staged tiles, per function tensor.
  DenseMap<Value, Value> stagingBuffers;
  /// The most 16-byte vectors of the next key block an invocation carries
  /// through a block (prefetchBlock); past it each block loads its own.
  static constexpr size_t kMaxPrefetchedVectors = 16;
  /// #attn.coop_matrix registers: K and V (function tensors) seen as
  /// 1-d arrays of 16-byte vectors, `per` elements each: the same buffer,
  /// which the launch binds as such (a builtin.unrealized_conversion_cast
  /// of the host's memref; SPIR-V's logical addressing has no pointer
  /// casts).
  /// `strides` are the memref's in vectors. Their tiles are staged with
  /// one 16-byte load and store per vector, into workgroup tiles of such
  /// vectors that the products load as matrices (faster than 16x16 matrix
  /// loads from the buffer and stores into the tile on NVIDIA's Vulkan
  /// driver: bench/results/vulkan-h200-vector-staging-2026-11-28).
  struct VectorView {
    Value memref;
    SmallVector<int64_t> strides;
    int64_t per = 0;
  };
  DenseMap<Value, VectorView> vectorViews;
  /// The private arrays of the values a key loop keeps, in the order the
  /// loop's body asks for them: the next key loop (the same body, blocks
  /// after the first loop's) takes them again.
  SmallVector<Value> keptPool;
  /// (registers) the invocation's columns of the scores' row, read from
  /// S's tile once per key block.
  Value sRow;
  unsigned keptNext = 0;
  /// A private array for a kept value of one key block: the pool's next
  /// one of that shape, else a new one. For SPIR-V one element longer than
  /// the slots: with exactly as many elements as a per-key loop's trip
  /// count, Mesa's NIR unrolls those loops fully (lavapipe then took
  /// minutes to compile a D = 128 kernel); the spare element is never
  /// read.
  Value keptArray(Type elt) {
    int64_t n = slotsOf(bc) + (spirv ? 1 : 0);
    auto ty = MemRefType::get({n}, elt, MemRefLayoutAttrInterface{},
                              privateSpace());
    for (; keptNext < keptPool.size(); ++keptNext)
      if (keptPool[keptNext].getType() == ty)
        return keptPool[keptNext++];
    Value arr = privateArray(n, elt);
    keptPool.push_back(arr);
    keptNext = keptPool.size();
    return arr;
  }
  /// Split-KV: the launch's chunk count and this workgroup's chunk.
  Value splits, split;

  //===--------------------------------------------------------------------===//
  // Small builders
  //===--------------------------------------------------------------------===//
  Value idx(int64_t x) { return arith::ConstantIndexOp::create(b, loc, x); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value ult(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x, y);
  }
  Value ceilDiv(Value x, int64_t by) {
    if (by == 1)
      return x;
    return arith::DivUIOp::create(b, loc, add(x, idx(by - 1)), idx(by));
  }
  Value zeroOf(Type t) {
    return arith::ConstantOp::create(b, loc, t, b.getZeroAttr(t));
  }
  Attribute workgroupSpace() {
    if (spirv)
      return spirv::StorageClassAttr::get(b.getContext(),
                                          spirv::StorageClass::Workgroup);
    return gpu::AddressSpaceAttr::get(b.getContext(),
                                      gpu::AddressSpace::Workgroup);
  }
  Attribute privateSpace() {
    if (spirv)
      return spirv::StorageClassAttr::get(b.getContext(),
                                          spirv::StorageClass::Function);
    return {};
  }
  /// Orders a subgroup's own workgroup-memory writes before its own reads
  /// (the registers mapping's strip of S, P and the factors, which only the
  /// strip's subgroup touches): an execution and memory barrier of
  /// subgroup scope, so that the workgroup's other subgroups run on.
  void subgroupBarrier() {
    auto sg = spirv::Scope::Subgroup;
    spirv::ControlBarrierOp::create(
        b, loc, sg, sg,
        spirv::MemorySemantics::AcquireRelease |
            spirv::MemorySemantics::WorkgroupMemory);
  }
  /// Whether `cond` holds in any invocation of the subgroup (the registers
  /// mapping's 16 x `lanes` x `strips`), the same answer in all: a
  /// butterfly of xor shuffles. (Not gpu.subgroup_reduce: canonicalize marks one outside
  /// any region of the launch uniform, which lowers to the Kernel
  /// capability's OpGroupUMax.)
  Value subgroupAny(Value cond) {
    Value v = xorButterfly(arith::ExtUIOp::create(b, loc, b.getI32Type(), cond),
                           subgroupWidth() / 2, gpu::AllReduceOperation::OR);
    return arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ne, v,
        arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0));
  }
  /// Column `c` (16-bit elements) of a staged tile: its vector's where the
  /// tile is of 16-byte vectors (a vector view's), whose first element it
  /// is.
  Value stagedColumn(Value tile, int64_t c) {
    Type elt = cast<MemRefType>(tile.getType()).getElementType();
    if (auto vt = dyn_cast<VectorType>(elt))
      return idx(c / (vt.getNumElements() * vt.getElementTypeBitWidth() / 16));
    return idx(c);
  }
  /// A private array of `n` elements, allocated at the kernel's entry.
  Value privateArray(int64_t n, Type elt) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(entry);
    return memref::AllocaOp::create(
        b, loc, MemRefType::get({n}, elt, MemRefLayoutAttrInterface{},
                                privateSpace()));
  }
  /// if (cond) fn(); what fn maps or caches stays in the region.
  void when(Value cond, function_ref<void()> fn) {
    auto ifOp = scf::IfOp::create(b, loc, cond, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    Scope scope(*this);
    fn();
  }
  /// for (x = lo; x < hi; ++x) with loop-carried values: an scf.for (what
  /// fn maps or caches stays in it), or with `unrolled` (constant bounds)
  /// the bodies one after another.
  SmallVector<Value> loop(Value lo, Value hi, ValueRange init, bool unrolled,
                          function_ref<SmallVector<Value>(Value, ValueRange)> fn) {
    if (unrolled) {
      std::optional<int64_t> l = getConstantIntValue(lo),
                             h = getConstantIntValue(hi);
      assert(l && h && "unrolled loops have constant bounds");
      SmallVector<Value> carried(init);
      for (int64_t x = *l; x < *h; ++x)
        carried = fn(idx(x), carried);
      return carried;
    }
    auto forOp = scf::ForOp::create(b, loc, lo, hi, idx(1), init);
    // (Without loop-carried values the builder adds the terminator.)
    if (forOp.getBody()->mightHaveTerminator())
      forOp.getBody()->getTerminator()->erase();
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(forOp.getBody());
    Scope scope(*this);
    SmallVector<Value> next =
        fn(forOp.getInductionVar(), forOp.getRegionIterArgs());
    scf::YieldOp::create(b, loc, next);
    return SmallVector<Value>(forOp.getResults());
  }

  /// fn(i0, j0) for each matrix of an m x n grid of 16x16 cooperative
  /// matrices (i0, j0: its first row and column), the workgroup's subgroups
  /// taking them in turn: subgroup s the matrices s, s + #subgroups, ... in
  /// row-major order (a workgroup of one subgroup takes them all).
  void forEachMatrix(int64_t m, int64_t n, function_ref<void(Value, Value)> fn) {
    forEachUnit(m, n, [&](Value i, Value j) {
      fn(mul(i, idx(16)), mul(j, idx(16)));
    });
  }
  /// fn(i, j) for each (i, j) of an m x n grid, the subgroups taking them
  /// in turn as forEachMatrix does.
  void forEachUnit(int64_t m, int64_t n, function_ref<void(Value, Value)> fn) {
    Value first = gpu::SubgroupIdOp::create(b, loc, b.getIndexAttr(invocations));
    Value step = gpu::NumSubgroupsOp::create(b, loc,
                                             b.getIndexAttr(invocations));
    auto forOp = scf::ForOp::create(b, loc, first, idx(m * n), step);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(forOp.getBody());
    Scope scope(*this);
    Value t = forOp.getInductionVar();
    fn(arith::DivUIOp::create(b, loc, t, idx(n)),
       arith::RemUIOp::create(b, loc, t, idx(n)));
  }

  /// A region's values stay in it: what emitting it maps or caches is
  /// forgotten after it.
  struct Scope {
    SimtKernel &k;
    DenseMap<Value, Tile> tiles;
    IRMapping map;
    explicit Scope(SimtKernel &k) : k(k), tiles(k.tiles), map(k.map) {}
    ~Scope() {
      k.tiles = std::move(tiles);
      k.map = std::move(map);
    }
  };

  //===--------------------------------------------------------------------===//
  // Values of the original IR in the kernel
  //===--------------------------------------------------------------------===//
  /// An original IR value in the kernel: mapped; an extent of a tile (its
  /// size in the IR that made it); a scalar op of the tile (cloned where
  /// first used); or a host-side index computation (sunk into the kernel).
  Value value(Value v) {
    if (Value m = map.lookupOrNull(v))
      return m;
    Operation *def = v.getDefiningOp();
    if (auto dim = dyn_cast_or_null<tensor::DimOp>(def)) {
      // (Mapped, so that the ops cloned after it read it.)
      Value r;
      if (std::optional<int64_t> i = getConstantIntValue(dim.getIndex()))
        if (OpFoldResult e = extentOf(dim.getSource(), *i))
          r = value(e);
      if (!r) {
        // A function tensor's or a workspace's extent: its memref's.
        Value m = map.lookupOrNull(dim.getSource());
        assert(m && "the extent of a tensor that is not a function's");
        r = memref::DimOp::create(b, loc, m, value(dim.getIndex()));
      }
      map.map(v, r);
      return r;
    }
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
  Value value(OpFoldResult v) {
    if (auto a = dyn_cast<Attribute>(v))
      return idx(cast<IntegerAttr>(a).getInt());
    return value(cast<Value>(v));
  }
  std::function<Value(Value)> resolver() {
    return [this](Value x) { return value(x); };
  }

  /// Size `i` of a tile as the IR that made it says (a constant, or the
  /// index value it was sized with); null where the IR does not say (a
  /// workspace of the forall, whose memref does).
  OpFoldResult extentOf(Value t, int64_t i) {
    auto ty = cast<RankedTensorType>(t.getType());
    if (!ty.isDynamicDim(i))
      return b.getIndexAttr(ty.getDimSize(i));
    if (auto arg = dyn_cast<BlockArgument>(t)) {
      // A loop-carried tile: its size on entry.
      if (auto forOp = dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp()))
        if (arg.getArgNumber() > 0)
          return extentOf(forOp.getInitArgs()[arg.getArgNumber() - 1], i);
      return {};
    }
    Operation *def = t.getDefiningOp();
    if (auto e = dyn_cast<tensor::EmptyOp>(def))
      return e.getMixedSizes()[i];
    if (auto s = dyn_cast<tensor::ExtractSliceOp>(def)) {
      llvm::SmallBitVector dropped = s.getDroppedDims();
      int64_t seen = 0;
      for (auto [d, size] : llvm::enumerate(s.getMixedSizes()))
        if (!dropped.test(d) && seen++ == i)
          return size;
    }
    if (auto d = dyn_cast<DestinationStyleOpInterface>(def)) {
      auto r = cast<OpResult>(t);
      return extentOf(d.getDpsInits()[r.getResultNumber()], i);
    }
    if (auto forOp = dyn_cast<scf::ForOp>(def))
      return extentOf(forOp.getInitArgs()[cast<OpResult>(t).getResultNumber()],
                      i);
    if (auto ifOp = dyn_cast<scf::IfOp>(def))
      return extentOf(ifOp.elseYield().getOperand(
                          cast<OpResult>(t).getResultNumber()),
                      i);
    return {};
  }

  //===--------------------------------------------------------------------===//
  // Element access
  //===--------------------------------------------------------------------===//
  /// The row's value of a row vector (reduced over the subgroup when it is
  /// a per-lane share).
  Value rowValue(Tile &t) {
    if (t.kind == Tile::Fill)
      return t.value;
    assert(t.kind == Tile::Scalar && "a row vector");
    if (!t.partial)
      return t.value;
    if (!t.reduced)
      t.reduced = rowReduce(t.value, gpu::AllReduceOperation::ADD);
    return t.reduced;
  }
  /// `v` combined over the row's lanes: a subgroup reduction, or with
  /// registers (lanes < the subgroup) a butterfly of xor shuffles within
  /// the row's lanes, which every lane of the row ends with.
  Value rowReduce(Value v, gpu::AllReduceOperation op) {
    if (!regs)
      return gpu::SubgroupReduceOp::create(b, loc, v, op, /*uniform=*/false);
    Type ty = v.getType();
    const bool narrow = ty.isInteger() && ty.getIntOrFloatBitWidth() < 32;
    if (narrow) // (shuffles take 32-bit values)
      v = arith::ExtUIOp::create(b, loc, b.getI32Type(), v);
    v = xorButterfly(v, lanes / 2, op);
    if (narrow)
      v = arith::TruncIOp::create(b, loc, ty, v);
    return v;
  }
  /// `v` combined by `op` (ADD and MAXIMUMF on floats, else OR) over the
  /// invocations whose subgroup lane differs from this one's in the bits
  /// of `widest` and below (registers: xor shuffles within the subgroup's
  /// subgroupWidth() invocations), every one of them ending with the
  /// result.
  Value xorButterfly(Value v, int64_t widest, gpu::AllReduceOperation op) {
    for (int64_t off = widest; off >= 1; off /= 2) {
      Value o = gpu::ShuffleOp::create(b, loc, v, off, subgroupWidth(),
                                       gpu::ShuffleMode::XOR)
                    .getShuffleResult();
      switch (op) {
      case gpu::AllReduceOperation::ADD:
        v = arith::AddFOp::create(b, loc, v, o);
        break;
      case gpu::AllReduceOperation::MAXIMUMF:
        v = arith::MaximumFOp::create(b, loc, v, o);
        break;
      default:
        v = arith::OrIOp::create(b, loc, v, o);
        break;
      }
    }
    return v;
  }
  /// A row value as a per-lane share: the value on lane 0, 0 elsewhere.
  Value asShare(Value v) {
    Value first =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, idx(0));
    return arith::SelectOp::create(b, loc, first, v, zeroOf(v.getType()));
  }
  /// The column of slot `slot` of this lane.
  Value columnOf(Value slot) {
    return lanes == 1 ? slot : add(mul(slot, idx(lanes)), lane);
  }
  /// The column of slot `slot` of this lane in a loop over a key block's
  /// columns. With the accumulator in registers each lane takes a
  /// contiguous run of the block's columns (lane t: t * ceil(block_kv /
  /// lanes) + slot), so that its scores and its P are consecutive in their
  /// workgroup tiles: the driver reads them as 16-byte loads and packs P's
  /// 16-bit stores (interleaved columns took 1.05-1.11x the time:
  /// bench/results/vulkan-h200-row-registers-2026-12-02, "Contiguous
  /// columns").
  Value rowColumnOf(Value slot) {
    if (regs && lanes > 1)
      return add(mul(lane, idx(slotsOf(bc))), slot);
    return columnOf(slot);
  }
  /// Element `slot` of this invocation's row of an array: a private array
  /// of the lane's columns, or (cooperative matrices) a tile in workgroup
  /// memory indexed by (row, the slot's column).
  Value loadSlot(Value array, Value slot) {
    if (cast<MemRefType>(array.getType()).getRank() == 2)
      return memref::LoadOp::create(b, loc, array,
                                    ValueRange{row, columnOf(slot)});
    return memref::LoadOp::create(b, loc, array, slot);
  }
  void storeSlot(Value v, Value array, Value slot) {
    if (cast<MemRefType>(array.getType()).getRank() == 2)
      memref::StoreOp::create(b, loc, v, array,
                              ValueRange{row, columnOf(slot)});
    else
      memref::StoreOp::create(b, loc, v, array, slot);
  }
  /// Zero columns [from, to) of this row of a workgroup tile (P past the
  /// block's keys), the row's lanes taking them in turn.
  void zeroColumns(Value tile, Value from, int64_t to) {
    Value first = lanes > 1 ? add(from, lane) : from;
    auto forOp = scf::ForOp::create(b, loc, first, idx(to), idx(lanes));
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(forOp.getBody());
    memref::StoreOp::create(
        b, loc, zeroOf(cast<MemRefType>(tile.getType()).getElementType()),
        tile, ValueRange{row, forOp.getInductionVar()});
  }
  /// A slice of a function tensor as a View: its source, offsets, and the
  /// dimensions it keeps.
  static Tile viewOf(tensor::ExtractSliceOp slice) {
    Tile t;
    t.kind = Tile::View;
    t.source = slice.getSource();
    t.offsets = slice.getMixedOffsets();
    llvm::SmallBitVector dropped = slice.getDroppedDims();
    for (int64_t d = 0; d < (int64_t)t.offsets.size(); ++d)
      if (!dropped.test(d))
        t.dims.push_back(d);
    return t;
  }
  /// Element (row, col) of a View: a load from the function's memref.
  Value loadView(Tile &t, Value r, Value c) {
    Value m = map.lookup(t.source);
    SmallVector<Value> at;
    for (OpFoldResult o : t.offsets)
      at.push_back(value(o));
    at[t.dims[0]] = add(at[t.dims[0]], r);
    if (t.dims.size() > 1)
      at[t.dims[1]] = add(at[t.dims[1]], c);
    return memref::LoadOp::create(b, loc, m, at);
  }

  /// Element (this row, it.col) of a tile.
  FailureOr<Value> elemAt(Value v, Iter &it) {
    if (auto found = it.memo.find(v); found != it.memo.end())
      return found->second;
    Tile &t = tiles[v];
    Value r;
    switch (t.kind) {
    case Tile::Fill:
      return t.value;
    case Tile::View:
      r = loadView(t, row, it.col);
      break;
    case Tile::Acc:
      if (!t.frags.empty()) {
        if (Operation *def = v.getDefiningOp())
          return def->emitOpError("convert-attn-tiles-to-simt: an "
                                  "accumulator in cooperative-matrix "
                                  "registers read element by element "
                                  "inside the key loops");
        return failure();
      }
      if (accColumn0 && t.memref == accBuf) {
        // (A window of the accumulator's columns in S's tile.)
        r = memref::LoadOp::create(
            b, loc, t.memref, ValueRange{row, arith::SubIOp::create(
                                                  b, loc, it.col,
                                                  idx(accColumn0))});
        break;
      }
      [[fallthrough]];
    case Tile::Private:
      r = loadSlot(t.memref, it.slot);
      break;
    case Tile::Lazy: {
      FailureOr<Value> e = evalLazy(t.op, it);
      if (failed(e))
        return failure();
      r = *e;
      break;
    }
    default:
      if (Operation *def = v.getDefiningOp())
        return def->emitOpError("convert-attn-tiles-to-simt: a tile read "
                                "element by element that lives elsewhere");
      return failure();
    }
    it.memo[v] = r;
    return r;
  }

  /// The body of an elementwise op or a Q.K^T contraction at (row, it.col).
  FailureOr<Value> evalLazy(linalg::GenericOp g, Iter &it) {
    Block &body = g.getRegion().front();
    if (classifyTileOp(g) == TileOpKind::Contraction) {
      // out(r, c) = sum_k lhs(r, k) * rhs(c, k): the row of Q in a private
      // array, K's row c in workgroup memory.
      Tile &lhs = tiles[g.getDpsInputs()[0]];
      Tile &rhs = tiles[g.getDpsInputs()[1]];
      if (lhs.kind != Tile::Row || rhs.kind != Tile::Staged)
        return g.emitOpError("convert-attn-tiles-to-simt: Q.K^T needs Q's "
                             "row in registers and K in workgroup memory");
      FailureOr<Value> init = elemAt(g.getDpsInits()[0], it);
      if (failed(init))
        return failure();
      int64_t depth = cast<RankedTensorType>(g.getDpsInputs()[0].getType())
                          .getDimSize(1);
      Value col = it.col;
      return loop(idx(0), idx(depth), {*init}, unroll,
                  [&](Value k, ValueRange acc) -> SmallVector<Value> {
                    Value x = memref::LoadOp::create(b, loc, lhs.memref, k);
                    Value y = memref::LoadOp::create(b, loc, rhs.memref,
                                                     ValueRange{col, k});
                    return cloneGenericBody(b, g, {x, y, acc[0]}, {}, map,
                                            resolver());
                  })[0];
    }
    SmallVector<Value> args;
    for (OpOperand &o : g->getOpOperands()) {
      if (body.getArgument(o.getOperandNumber()).use_empty()) {
        args.push_back(Value());
        continue;
      }
      AffineMap m = g.getMatchingIndexingMap(&o);
      Tile &t = tiles[o.get()];
      if (m.getNumResults() == 1 && m.getResult(0) == b.getAffineDimExpr(0) &&
          (t.kind == Tile::Scalar || t.kind == Tile::Fill)) {
        args.push_back(rowValue(t));
        continue;
      }
      if (!m.isIdentity())
        return g.emitOpError("convert-attn-tiles-to-simt: an operand of an "
                             "elementwise tile op indexed otherwise than by "
                             "(row) or (row, column)");
      FailureOr<Value> e = elemAt(o.get(), it);
      if (failed(e))
        return failure();
      args.push_back(*e);
    }
    return cloneGenericBody(b, g, args, {row, it.col}, map, resolver())[0];
  }

  //===--------------------------------------------------------------------===//
  // The walk
  //===--------------------------------------------------------------------===//
  LogicalResult emitBlock(Block &blk);
  LogicalResult emitOp(Operation &op);
  LogicalResult emitGeneric(linalg::GenericOp g);
  LogicalResult emitRowOp(linalg::GenericOp g);
  LogicalResult emitInPlace(linalg::GenericOp g);
  LogicalResult emitAllReduction(linalg::GenericOp g);
  LogicalResult emitGroup(linalg::GenericOp trigger);
  LogicalResult emitProductOutsideKeys(linalg::GenericOp g);
  /// Q.K^T of the block into a private array, keys in groups (a thread
  /// per row, loops not unrolled); false when it does not apply.
  FailureOr<bool> emitScoresByKeyGroups(linalg::GenericOp g);
  /// `inits.size()` outputs of the product `g` at once, each a register
  /// through one loop over [0, extent): step k reads the operand they share
  /// once (`shared(k)`), the other per output (`other(k, u)`), and
  /// evaluates g's body on (shared, other, acc[u]). The sums.
  SmallVector<Value> groupedReduction(linalg::GenericOp g, Value extent,
                                      ValueRange inits,
                                      function_ref<Value(Value)> shared,
                                      function_ref<Value(Value, int64_t)> other);
  LogicalResult materialize(Value v, Value into = {});
  LogicalResult emitCoopProduct(linalg::GenericOp g);
  void stageQ(Value tile);
  LogicalResult emitIf(scf::IfOp op);
  LogicalResult emitKeyLoop(scf::ForOp loopOp);
  LogicalResult emitBlockInRowRegions(Block &blk);
  /// The forall's stores: its row vectors where `rowVectors`, and columns
  /// [col0, col0 + cols) of its tiles (cols dynamic: all of them).
  LogicalResult emitStores(scf::InParallelOp par, bool rowVectors = true,
                           int64_t col0 = 0,
                           int64_t cols = ShapedType::kDynamic);
  void stage(tensor::ExtractSliceOp slice, Value buffer, int64_t width,
             int64_t tileRows, ValueRange preloaded = {});
  /// Registers: this subgroup's matrices of a whole key block of each
  /// staged slice, in stage()'s order (subgroup s: matrices s, s + #
  /// subgroups, ...), for the block whose first key is at `iv` (the key
  /// loop's induction variable `loopIv` mapped to it); the block is whole
  /// and loaded where `cond` holds, zero matrices otherwise. Empty where
  /// some slice's block cannot be loaded as whole matrices by every
  /// subgroup alike.
  SmallVector<Value>
  prefetchBlock(ArrayRef<std::pair<tensor::ExtractSliceOp, int64_t>> slices,
                Value loopIv, Value iv, Value ub);
  /// Within a Scope: the key loop's induction variable `loopIv` taken as
  /// `iv`, forgetting what was cloned for the block at `loopIv` itself (so
  /// that the block's values are cloned again for `iv`).
  void mapLoopIvTo(Value loopIv, Value iv) {
    loopIv.getParentBlock()->walk([&](Operation *op) {
      for (Value r : op->getResults())
        map.erase(r);
    });
    map.map(loopIv, iv);
  }
  /// How many values prefetchBlock yields for a slice `width` wide.
  int64_t prefetchedPerSlice(tensor::ExtractSliceOp slice, int64_t width);
  /// A vector view's tile: this invocation's vectors of the [tileRows,
  /// width / per] tile (vector tid + i x invocations for i = 0, 1, ...),
  /// rows at or past `keys` zero (loaded from the first row, which every
  /// block has, so that each load stays in the buffer).
  SmallVector<Value> loadVectors(const Tile &t, const VectorView &vv,
                                 Value keys, int64_t width, int64_t tileRows);
  /// Stores loadVectors' vectors into the workgroup tile `buffer`.
  void storeVectors(ValueRange xs, Value buffer, int64_t width, int64_t per);
  /// Whether the function tensor `source`, whose tiles are `width` wide
  /// and staged `tileRows` rows at a time, can be staged through a vector
  /// view (see VectorView), and its view then, made at `b`'s insertion
  /// point (the host, before the launch).
  bool makeVectorView(Value source, int64_t width, int64_t tileRows,
                      ArrayRef<tensor::ExtractSliceOp> slices);
  /// The stride between a View's rows in its memref where that is a
  /// constant and its columns are contiguous (it loads as matrices).
  std::optional<int64_t> matrixRowStride(const Tile &t);
  LogicalResult preloadRow(Value tile);
  /// The accumulator array of a [rows, Dv] value carried through a loop
  /// or updated in place: Acc tiles as they are, a Fill written into a new
  /// array.
  FailureOr<Value> accArray(Value v);

  bool isColumnOp(linalg::GenericOp g) {
    TileOpKind k = classifyTileOp(g);
    if (k == TileOpKind::Contraction)
      return rhsTransposed(g);
    if (k != TileOpKind::Elementwise)
      return false;
    if (cast<RankedTensorType>(g.getResult(0).getType()).getRank() != 2)
      return false;
    Tile &init = tiles[g.getDpsInits()[0]];
    return init.kind != Tile::Acc;
  }
  bool isColumnConsumer(linalg::GenericOp g) {
    TileOpKind k = classifyTileOp(g);
    if (k == TileOpKind::RowReduction)
      return true;
    return k == TileOpKind::Contraction && !rhsTransposed(g) && unroll;
  }
  /// The columns a consumer iterates over: a row reduction's input's, a
  /// P.V's left operand's.
  OpFoldResult consumerColumns(linalg::GenericOp g) {
    return extentOf(g.getDpsInputs()[0], 1);
  }
  int64_t slotsOf(int64_t columns) { return (columns + lanes - 1) / lanes; }
  /// A key block's columns as a loop bound: its size, which is at most
  /// block_kv; the unsigned min says so to the loop budget's range
  /// analysis, which cannot see it (the size is min(Bc, Skv - j0) of a
  /// block that the loop keeps below Skv).
  Value keyColumns(OpFoldResult columns) {
    Value n = value(columns);
    if (getConstantIntValue(n))
      return n;
    return arith::MinUIOp::create(b, loc, n, idx(bc));
  }
};

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

LogicalResult SimtKernel::emitBlock(Block &blk) {
  for (Operation &op : blk.without_terminator()) {
    if (handled.contains(&op))
      continue;
    if (failed(emitOp(op)))
      return failure();
  }
  return success();
}

LogicalResult SimtKernel::emitOp(Operation &op) {
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
    Value source = slice.getSource();
    if (!map.lookupOrNull(source))
      return slice.emitOpError("convert-attn-tiles-to-simt: a slice of what "
                               "is not one of the function's tensors");
    tiles[slice.getResult()] = viewOf(slice);
    return success();
  }
  if (isa<tensor::PadOp>(op))
    return op.emitOpError("convert-attn-tiles-to-simt: padded (static) "
                          "tiles are not mapped; the SIMT mapping takes "
                          "tail tiles of dynamic size");
  if (isa<tensor::EmptyOp>(op)) {
    tiles[op.getResult(0)] = Tile();
    return success();
  }
  if (auto fill = dyn_cast<linalg::FillOp>(op)) {
    Tile t;
    t.kind = Tile::Fill;
    t.value = value(fill.getInputs()[0]);
    tiles[fill.getResult(0)] = t;
    return success();
  }
  if (auto g = dyn_cast<linalg::GenericOp>(op))
    return emitGeneric(g);
  if (auto ifOp = dyn_cast<scf::IfOp>(op))
    return emitIf(ifOp);
  if (auto forOp = dyn_cast<scf::ForOp>(op)) {
    if (forOp.getNumResults() == 3 &&
        isa<RankedTensorType>(forOp.getResult(0).getType()))
      return emitKeyLoop(forOp);
    return forOp.emitOpError("convert-attn-tiles-to-simt: a loop that is "
                             "not a key loop of the tiled form");
  }
  if (auto extract = dyn_cast<tensor::ExtractOp>(op)) {
    Tile &t = tiles[extract.getTensor()];
    if (t.kind != Tile::Scalar)
      return extract.emitOpError("convert-attn-tiles-to-simt: unexpected "
                                 "extract");
    map.map(extract.getResult(), rowValue(t));
    return success();
  }
  if (isa<tensor::DimOp>(op))
    return success(); // value() resolves it where used
  // Scalars and index computations: cloned where first used.
  if (llvm::any_of(op.getOperandTypes(), llvm::IsaPred<ShapedType>) ||
      llvm::any_of(op.getResultTypes(), llvm::IsaPred<ShapedType>) ||
      op.getNumRegions())
    return op.emitOpError("convert-attn-tiles-to-simt: unexpected op in the "
                          "tiled form");
  deferred.insert(&op);
  return success();
}

LogicalResult SimtKernel::emitGeneric(linalg::GenericOp g) {
  switch (classifyTileOp(g)) {
  case TileOpKind::Contraction:
    if (coop)
      return emitCoopProduct(g);
    if (rhsTransposed(g)) {
      FailureOr<bool> done = emitScoresByKeyGroups(g);
      if (failed(done) || *done)
        return failure(failed(done));
      Tile t;
      t.kind = Tile::Lazy;
      t.op = g;
      tiles[g.getResult(0)] = t;
      pending.push_back(g);
      return success();
    }
    if (unroll)
      return emitGroup(g);
    return emitProductOutsideKeys(g);
  case TileOpKind::Elementwise: {
    auto ty = cast<RankedTensorType>(g.getResult(0).getType());
    if (ty.getRank() == 1)
      return emitRowOp(g);
    if (ty.getRank() != 2)
      break;
    if (tiles[g.getDpsInits()[0]].kind == Tile::Acc)
      return emitInPlace(g);
    Tile t;
    t.kind = Tile::Lazy;
    t.op = g;
    tiles[g.getResult(0)] = t;
    pending.push_back(g);
    return success();
  }
  case TileOpKind::RowReduction:
    return emitGroup(g);
  case TileOpKind::AllReduction:
    return emitAllReduction(g);
  case TileOpKind::Other:
    break;
  }
  return g.emitOpError("convert-attn-tiles-to-simt: a generic the SIMT "
                       "mapping does not know");
}

LogicalResult SimtKernel::emitRowOp(linalg::GenericOp g) {
  // A row vector: one scalar per row. A product of a per-lane share and a
  // row value stays a share (the running sum's rescale).
  Block &body = g.getRegion().front();
  SmallVector<OpOperand *> used;
  for (OpOperand &o : g->getOpOperands())
    if (!body.getArgument(o.getOperandNumber()).use_empty())
      used.push_back(&o);
  SmallVector<Value> shares;
  for (OpOperand *o : used)
    if (tiles[o->get()].kind == Tile::Scalar && tiles[o->get()].partial)
      shares.push_back(o->get());
  bool keepShare = false;
  if (shares.size() == 1) {
    Operation &first = body.front();
    keepShare = isa<arith::MulFOp>(first) &&
                &first == body.getTerminator()->getPrevNode() &&
                body.getTerminator()->getOperand(0) == first.getResult(0);
  }
  SmallVector<Value> args;
  for (OpOperand &o : g->getOpOperands()) {
    if (body.getArgument(o.getOperandNumber()).use_empty()) {
      args.push_back(Value());
      continue;
    }
    Tile &t = tiles[o.get()];
    if (t.kind != Tile::Scalar && t.kind != Tile::Fill)
      return g.emitOpError("convert-attn-tiles-to-simt: an operand of a "
                           "row operation that is not a row vector");
    args.push_back(keepShare && t.kind == Tile::Scalar && t.partial
                       ? t.value
                       : rowValue(t));
  }
  Tile out;
  out.kind = Tile::Scalar;
  out.partial = keepShare;
  out.value = cloneGenericBody(b, g, args, {row}, map, resolver())[0];
  tiles[g.getResult(0)] = out;
  return success();
}

FailureOr<Value> SimtKernel::accArray(Value v) {
  Tile &t = tiles[v];
  if (t.kind == Tile::Acc)
    return t.memref;
  auto ty = cast<RankedTensorType>(v.getType());
  if (t.kind != Tile::Fill || ty.getRank() != 2 || ty.isDynamicDim(1)) {
    if (Operation *def = v.getDefiningOp())
      return def->emitOpError("convert-attn-tiles-to-simt: an accumulator "
                              "that does not start from a fill");
    return failure();
  }
  int64_t n = slotsOf(ty.getDimSize(1));
  Value fillValue = t.value;
  Value arr;
  if (regs) {
    // The subgroup's accumulator matrices, filled (strip-major).
    if (ty.getDimSize(1) % 16)
      return failure();
    auto cTy = gpu::MMAMatrixType::get({16, 16}, b.getF32Type(), "COp");
    Tile acc;
    acc.kind = Tile::Acc;
    acc.memref = accBuf;
    for (int64_t j = 0; j < strips * ty.getDimSize(1) / 16; ++j)
      acc.frags.push_back(
          gpu::SubgroupMmaConstantMatrixOp::create(b, loc, cTy, fillValue));
    tiles[v] = acc;
    return accBuf;
  }
  if (coop) {
    // The accumulator tile in workgroup memory, each invocation filling
    // its row.
    arr = accBuf;
    when(ult(row, idx(br)), [&] {
      loop(idx(0), idx(n), {}, unroll, [&](Value s, ValueRange) {
        storeSlot(fillValue, arr, s);
        return SmallVector<Value>{};
      });
    });
  } else {
    arr = privateArray(n, ty.getElementType());
    loop(idx(0), idx(n), {}, unroll, [&](Value s, ValueRange) {
      storeSlot(fillValue, arr, s);
      return SmallVector<Value>{};
    });
  }
  Tile acc;
  acc.kind = Tile::Acc;
  acc.memref = arr;
  tiles[v] = acc;
  return arr;
}

LogicalResult SimtKernel::emitInPlace(linalg::GenericOp g) {
  // [rows, Dv] elementwise into the accumulator it reads (acc * alpha):
  // the old value must be dead after it (it is in the tiled form: the
  // running state is rescaled in place).
  Value init = g.getDpsInits()[0];
  for (Operation *user : init.getUsers()) {
    if (user == g.getOperation())
      continue;
    bool before = user->getBlock() == g->getBlock() && user->isBeforeInBlock(g);
    bool otherBranch = !g->getParentRegion()->isAncestor(user->getParentRegion());
    if (!before && !otherBranch)
      return g.emitOpError("convert-attn-tiles-to-simt: an update of the "
                           "accumulator whose old value is still read "
                           "after it");
  }
  Tile acc = tiles[init];
  if (!acc.frags.empty()) {
    // In registers: only a rescale by a row factor, acc(r, c) * f(r),
    // which becomes the factor pending on the matrices (the generic's body
    // evaluated with the pending factor, 1 where none, as its `out`).
    Block &body = g.getRegion().front();
    Value outArg = body.getArguments().back();
    auto mulOp = body.getTerminator()->getOperand(0).getDefiningOp<arith::MulFOp>();
    bool rowScale =
        mulOp && (mulOp.getLhs() == outArg) != (mulOp.getRhs() == outArg) &&
        body.getOps<linalg::IndexOp>().empty();
    SmallVector<Value> args;
    for (OpOperand &o : g->getOpOperands()) {
      if (!rowScale)
        break;
      if (o.get() == init) {
        args.push_back(acc.scale ? acc.scale
                                 : Value(arith::ConstantOp::create(
                                       b, loc, b.getF32FloatAttr(1.0f))));
        continue;
      }
      if (body.getArgument(o.getOperandNumber()).use_empty()) {
        args.push_back(Value());
        continue;
      }
      AffineMap m = g.getMatchingIndexingMap(&o);
      Tile &t = tiles[o.get()];
      if (m.getNumResults() != 1 || m.getResult(0) != b.getAffineDimExpr(0) ||
          (t.kind != Tile::Scalar && t.kind != Tile::Fill)) {
        rowScale = false;
        break;
      }
      args.push_back(rowValue(t));
    }
    if (!rowScale || !outArg.hasOneUse())
      return g.emitOpError("convert-attn-tiles-to-simt: with the accumulator "
                           "in cooperative-matrix registers, its only update "
                           "besides P.V is a rescale by a row factor "
                           "(acc * f(row))");
    acc.scale = cloneGenericBody(b, g, args, {row}, map, resolver())[0];
    tiles[g.getResult(0)] = acc;
    return success();
  }
  int64_t n = slotsOf(cast<RankedTensorType>(init.getType()).getDimSize(1));
  int64_t dv = cast<RankedTensorType>(init.getType()).getDimSize(1);
  LogicalResult status = success();
  loop(idx(0), idx(n), {}, unroll, [&](Value s, ValueRange) {
    Iter it(s, columnOf(s));
    auto store = [&] {
      FailureOr<Value> e = evalLazy(g, it);
      if (failed(e)) {
        status = failure();
        return;
      }
      storeSlot(*e, acc.memref, s);
    };
    if (lanes > 1 && dv % lanes)
      when(ult(it.col, idx(dv)), store);
    else
      store();
    return SmallVector<Value>{};
  });
  tiles[g.getResult(0)] = acc;
  return status;
}

LogicalResult SimtKernel::emitAllReduction(linalg::GenericOp g) {
  // The rescale guard: this row's (the reduction is row-local, so an
  // invocation decides for its own row; a subgroup's lanes agree).
  if (!g->hasAttr(kRowLocalGuardAttrName))
    return g.emitOpError("convert-attn-tiles-to-simt: a reduction over rows "
                         "that is not a row-local guard (a workgroup-wide "
                         "reduction is not mapped)");
  Block &body = g.getRegion().front();
  SmallVector<Value> args;
  for (Value in : g.getDpsInputs()) {
    Tile &t = tiles[in];
    if (t.kind != Tile::Scalar && t.kind != Tile::Fill)
      return g.emitOpError("convert-attn-tiles-to-simt: a guard over what "
                           "is not a row vector");
    args.push_back(rowValue(t));
  }
  Tile &init = tiles[g.getDpsInits()[0]];
  if (init.kind != Tile::Fill)
    return g.emitOpError("convert-attn-tiles-to-simt: a guard whose init is "
                         "not a fill");
  args.push_back(body.getArguments().back().use_empty() ? Value() : init.value);
  Tile out;
  out.kind = Tile::Scalar;
  out.value = cloneGenericBody(b, g, args, {row}, map, resolver())[0];
  tiles[g.getResult(0)] = out;
  return success();
}

//===----------------------------------------------------------------------===//
// Loops over a key block's columns
//===----------------------------------------------------------------------===//

LogicalResult SimtKernel::emitGroup(linalg::GenericOp trigger) {
  // The consumers that share the trigger's loop over the block's keys: the
  // ops after it that read none of the loop's results, column ops among
  // them (registered as lazy) and further consumers of the same columns.
  SmallVector<linalg::GenericOp> consumers{trigger};
  DenseSet<Value> results(trigger->result_begin(), trigger->result_end());
  OpFoldResult columns = consumerColumns(trigger);
  auto readsResults = [&](Operation *op) {
    return llvm::any_of(op->getOperands(),
                        [&](Value v) { return results.contains(v); });
  };
  for (Operation *next = trigger->getNextNode();
       next && !next->hasTrait<OpTrait::IsTerminator>();
       next = next->getNextNode()) {
    if (readsResults(next))
      break;
    if (isa<tensor::EmptyOp, linalg::FillOp>(next) ||
        next->hasTrait<OpTrait::ConstantLike>()) {
      if (failed(emitOp(*next)))
        return failure();
      handled.insert(next);
      continue;
    }
    auto g = dyn_cast<linalg::GenericOp>(next);
    if (!g)
      break;
    if (isColumnOp(g)) {
      if (failed(emitOp(*g)))
        return failure();
      handled.insert(g);
      continue;
    }
    if (isColumnConsumer(g) && consumerColumns(g) == columns) {
      consumers.push_back(g);
      results.insert(g->result_begin(), g->result_end());
      handled.insert(g);
      continue;
    }
    break;
  }

  // What the loop evaluates: the consumers' lazy inputs and theirs, and
  // the pending column ops over the same columns whose inputs it has.
  DenseSet<Value> evaluated;
  std::function<void(Value)> need = [&](Value v) {
    Tile &t = tiles[v];
    if (t.kind != Tile::Lazy || !evaluated.insert(v).second)
      return;
    for (Value in : t.op->getOperands())
      need(in);
  };
  for (linalg::GenericOp c : consumers)
    for (Value in : c.getDpsInputs())
      need(in);
  bool grew = true;
  while (grew) {
    grew = false;
    for (linalg::GenericOp g : pending) {
      Value r = g.getResult(0);
      if (evaluated.contains(r) || tiles[r].kind != Tile::Lazy ||
          extentOf(r, 1) != columns)
        continue;
      bool ready = llvm::all_of(g->getOpOperands(), [&](OpOperand &o) {
        Tile &t = tiles[o.get()];
        return t.kind != Tile::Lazy || evaluated.contains(o.get());
      });
      if (ready) {
        evaluated.insert(r);
        grew = true;
      }
    }
  }
  // Kept in private arrays: what an op outside the loop reads again.
  DenseSet<Operation *> inLoop;
  for (Value v : evaluated)
    inLoop.insert(v.getDefiningOp());
  for (linalg::GenericOp c : consumers)
    inLoop.insert(c);
  SmallVector<Value> kept;
  for (linalg::GenericOp g : pending) {
    Value r = g.getResult(0);
    if (evaluated.contains(r) &&
        llvm::any_of(r.getUsers(),
                     [&](Operation *u) { return !inLoop.contains(u); }))
      kept.push_back(r);
  }
  // A kept value may take the array of a private value this loop reads for
  // the last time (read at the same slot before the value is stored: the
  // probabilities over the scores).
  SmallVector<Value> dying;
  for (Value v : evaluated)
    for (Value in : v.getDefiningOp()->getOperands()) {
      Tile &t = tiles[in];
      if (t.kind == Tile::Private && !llvm::is_contained(dying, t.memref) &&
          llvm::all_of(in.getUsers(), [&](Operation *u) {
            return inLoop.contains(u) ||
                   (u->getBlock() == trigger->getBlock() &&
                    u->isBeforeInBlock(trigger));
          }))
        dying.push_back(t.memref);
    }
  DenseMap<Value, Value> keptArrays;
  // What a product on cooperative matrices reads (P) goes to its tile in
  // workgroup memory.
  auto feedsCoopProduct = [&](Value v) {
    return coop && llvm::any_of(v.getUsers(), [](Operation *u) {
             auto g = dyn_cast<linalg::GenericOp>(u);
             return g && classifyTileOp(g) == TileOpKind::Contraction;
           });
  };
  Value pKept;
  for (Value v : kept) {
    Type elt = cast<RankedTensorType>(v.getType()).getElementType();
    if (feedsCoopProduct(v)) {
      if (pKept || elt != cast<MemRefType>(pBuf.getType()).getElementType())
        return v.getDefiningOp()->emitOpError(
            "convert-attn-tiles-to-simt: a product's left operand of other "
            "than the mapping's P type (p_type)");
      keptArrays[v] = pKept = pBuf;
      continue;
    }
    auto reuse = llvm::find_if(dying, [&](Value arr) {
      return cast<MemRefType>(arr.getType()).getElementType() == elt;
    });
    if (reuse != dying.end()) {
      keptArrays[v] = *reuse;
      dying.erase(reuse);
      continue;
    }
    keptArrays[v] = keptArray(elt);
  }

  // The loop's carried values: each row reduction's accumulator, then the
  // accumulator arrays of the products (updated in place).
  struct Reduction {
    linalg::GenericOp op;
    Combiner comb;
    bool share; // a per-lane share of a sum
    Value init; // row value to combine after a subgroup reduction
  };
  SmallVector<Reduction> reductions;
  SmallVector<Value> starts;
  SmallVector<linalg::GenericOp> products;
  for (linalg::GenericOp c : consumers) {
    if (classifyTileOp(c) != TileOpKind::RowReduction) {
      products.push_back(c);
      continue;
    }
    Reduction red{c, combinerOf(c), false, Value()};
    if (red.comb == Combiner::Other)
      return c.emitOpError("convert-attn-tiles-to-simt: a row reduction "
                           "whose combiner is not max, add or or");
    Tile &init = tiles[c.getDpsInits()[0]];
    if (init.kind != Tile::Scalar && init.kind != Tile::Fill)
      return c.emitOpError("convert-attn-tiles-to-simt: a row reduction "
                           "into what is not a row vector");
    if (lanes == 1 || red.comb != Combiner::AddF) {
      // Max and or are idempotent: every lane may start from the row's
      // init.
      starts.push_back(rowValue(init));
    } else {
      // Sums stay per lane: a share of the init (lane 0's) plus the lane's
      // elements.
      red.share = true;
      if (init.kind == Tile::Scalar && init.partial)
        starts.push_back(init.value);
      else
        starts.push_back(asShare(rowValue(init)));
    }
    reductions.push_back(red);
  }
  for (linalg::GenericOp p : products) {
    FailureOr<Value> arr = accArray(p.getDpsInits()[0]);
    if (failed(arr))
      return failure();
  }

  // for slot in [0, ceil(columns / lanes)): column slot * lanes + lane.
  // With the accumulator in registers the loop is unrolled over the
  // block's slots (each guarded by the block's keys): the scores' row is
  // then a private array read at constant indices, which the driver keeps
  // in registers (read through an index it does not know, the row stayed
  // in memory, and the same kernels took 1.27-1.37x the time:
  // bench/results/vulkan-h200-row-registers-2026-12-02).
  Value nCols = keyColumns(columns);
  Value nSlots = ceilDiv(nCols, lanes);
  const bool unrollSlots = coop && regs;
  LogicalResult status = success();
  auto body = [&](Value slotV, ValueRange accs) -> SmallVector<Value> {
    Scope scope(*this);
    Iter it(slotV, rowColumnOf(slotV));
    // The column's contributions: each reduction's combine, each product's
    // left element, the kept values stored.
    auto compute = [&]() -> FailureOr<SmallVector<Value>> {
      SmallVector<Value> out;
      for (auto [red, acc] : llvm::zip(reductions, accs)) {
        FailureOr<Value> x = elemAt(red.op.getDpsInputs()[0], it);
        if (failed(x))
          return failure();
        out.push_back(
            cloneGenericBody(b, red.op, {*x, acc}, {}, map, resolver())[0]);
      }
      for (linalg::GenericOp p : products) {
        FailureOr<Value> x = elemAt(p.getDpsInputs()[0], it);
        if (failed(x))
          return failure();
        out.push_back(*x);
      }
      for (Value v : kept) {
        FailureOr<Value> x = elemAt(v, it);
        if (failed(x))
          return failure();
        if (cast<MemRefType>(keptArrays[v].getType()).getRank() == 2)
          memref::StoreOp::create(b, loc, *x, keptArrays[v],
                                  ValueRange{row, it.col});
        else
          storeSlot(*x, keptArrays[v], it.slot);
      }
      return out;
    };
    SmallVector<Value> got;
    if (lanes == 1 && !unrollSlots) {
      FailureOr<SmallVector<Value>> r = compute();
      if (failed(r)) {
        status = failure();
        return SmallVector<Value>(accs);
      }
      got = *r;
    } else {
      // Past the block's last key (its last slot): nothing is read; the
      // reductions keep their value and the products add 0.
      SmallVector<Type> types;
      for (Value a : accs)
        types.push_back(a.getType());
      for (linalg::GenericOp p : products)
        types.push_back(
            cast<RankedTensorType>(p.getDpsInputs()[0].getType())
                .getElementType());
      auto ifOp = scf::IfOp::create(b, loc, types, ult(it.col, nCols),
                                    /*withElseRegion=*/true);
      {
        OpBuilder::InsertionGuard g2(b);
        b.setInsertionPointToStart(&ifOp.getThenRegion().front());
        Scope inner(*this);
        Iter inIt(it.slot, it.col);
        std::swap(it, inIt);
        FailureOr<SmallVector<Value>> r = compute();
        std::swap(it, inIt);
        if (failed(r)) {
          status = failure();
          return SmallVector<Value>(accs);
        }
        scf::YieldOp::create(b, loc, *r);
        b.setInsertionPointToStart(&ifOp.getElseRegion().front());
        SmallVector<Value> none(accs.begin(), accs.end());
        for (linalg::GenericOp p : products)
          none.push_back(zeroOf(cast<RankedTensorType>(
                                    p.getDpsInputs()[0].getType())
                                    .getElementType()));
        scf::YieldOp::create(b, loc, none);
      }
      got.assign(ifOp.getResults().begin(), ifOp.getResults().end());
    }
    // P . V: each key's probability (from the lane that owns the key)
    // times the lane's columns of V's row for that key.
    for (auto [pi, p] : llvm::enumerate(products)) {
      Value pElem = got[reductions.size() + pi];
      Tile &v = tiles[p.getDpsInputs()[1]];
      if (v.kind != Tile::Staged) {
        status = p.emitOpError("convert-attn-tiles-to-simt: P.V needs V in "
                               "workgroup memory");
        break;
      }
      Value arr = tiles[p.getDpsInits()[0]].memref;
      int64_t dv = cast<RankedTensorType>(p.getResult(0).getType())
                       .getDimSize(1);
      int64_t accSlots = slotsOf(dv);
      Value lastKey = arith::SubIOp::create(b, loc, nCols, idx(1));
      for (int64_t owner = 0; owner < lanes; ++owner) {
        Value pk = pElem, key = it.col;
        if (lanes > 1) {
          pk = gpu::ShuffleOp::create(b, loc, pElem, owner, lanes,
                                      gpu::ShuffleMode::IDX)
                   .getShuffleResult();
          key = arith::MinUIOp::create(
              b, loc, add(mul(it.slot, idx(lanes)), idx(owner)), lastKey);
        }
        for (int64_t j = 0; j < accSlots; ++j) {
          Value col = columnOf(idx(j));
          if ((j + 1) * lanes > dv) // a lane past Dv reads the last column
            col = arith::MinUIOp::create(b, loc, col, idx(dv - 1));
          Value y = memref::LoadOp::create(b, loc, v.memref,
                                           ValueRange{key, col});
          Value a = memref::LoadOp::create(b, loc, arr, idx(j));
          Value n = cloneGenericBody(b, p, {pk, y, a}, {}, map, resolver())[0];
          memref::StoreOp::create(b, loc, n, arr, idx(j));
        }
      }
    }
    return SmallVector<Value>(
        ArrayRef<Value>(got).take_front(reductions.size()));
  };
  SmallVector<Value> reduced =
      loop(idx(0), unrollSlots ? idx(slotsOf(bc)) : nSlots, starts,
           unrollSlots, body);
  if (failed(status))
    return failure();
  // The reductions' results: a share of a sum stays per lane; a max (or an
  // or) over the subgroup.
  for (auto [red, r] : llvm::zip(reductions, reduced)) {
    Tile out;
    out.kind = Tile::Scalar;
    out.value = r;
    if (red.share) {
      out.partial = true;
    } else if (lanes > 1) {
      auto op = red.comb == Combiner::MaxF ? gpu::AllReduceOperation::MAXIMUMF
                                           : gpu::AllReduceOperation::OR;
      out.value = rowReduce(r, op);
    }
    tiles[red.op.getResult(0)] = out;
  }
  for (linalg::GenericOp p : products)
    tiles[p.getResult(0)] = tiles[p.getDpsInits()[0]];
  // P's columns past the block's keys are 0 in its workgroup tile: the
  // product on cooperative matrices runs over whole 16-key tiles.
  if (pKept)
    zeroColumns(pBuf, nCols, bcPad);
  // What the loop evaluated is done: kept in a private array, or read by
  // nothing after it.
  for (Value v : evaluated) {
    Tile t;
    if (keptArrays.count(v)) {
      t.kind = Tile::Private;
      t.memref = keptArrays[v];
    }
    tiles[v] = t;
  }
  llvm::erase_if(pending, [&](linalg::GenericOp g) {
    return evaluated.contains(g.getResult(0));
  });
  return success();
}

LogicalResult SimtKernel::materialize(Value v, Value into) {
  // The lane's columns of a lazy value into a private array (or `into`),
  // in a loop of their own.
  Tile &t = tiles[v];
  if (t.kind != Tile::Lazy)
    return success();
  Value arr = into ? into
                   : keptArray(cast<RankedTensorType>(v.getType())
                                   .getElementType());
  Value nCols = keyColumns(extentOf(v, 1));
  // (With the accumulator in registers unrolled over the block's slots,
  // as the loops of emitGroup are: the scores' row is read by slot.)
  const bool unrolled = coop && regs;
  LogicalResult status = success();
  loop(idx(0), unrolled ? idx(slotsOf(bc)) : ceilDiv(nCols, lanes), {},
       unrolled, [&](Value s, ValueRange) {
    Scope scope(*this);
    Iter it(s, rowColumnOf(s));
    auto store = [&] {
      FailureOr<Value> e = elemAt(v, it);
      if (failed(e)) {
        status = failure();
        return;
      }
      if (cast<MemRefType>(arr.getType()).getRank() == 2)
        memref::StoreOp::create(b, loc, *e, arr, ValueRange{row, it.col});
      else
        storeSlot(*e, arr, it.slot);
    };
    if (lanes > 1 || unrolled)
      when(ult(it.col, nCols), store);
    else
      store();
    return SmallVector<Value>{};
  });
  Tile p;
  p.kind = Tile::Private;
  p.memref = arr;
  tiles[v] = p;
  llvm::erase_if(pending,
                 [&](linalg::GenericOp g) { return g.getResult(0) == v; });
  return status;
}

/// The widest of 8, 4 and 2 that divides `n` (else 1): how many outputs of
/// a product a thread carries in registers through one reduction loop.
static int64_t groupWidth(int64_t n) {
  for (int64_t w : {8, 4, 2})
    if (n % w == 0)
      return w;
  return 1;
}

SmallVector<Value> SimtKernel::groupedReduction(
    linalg::GenericOp g, Value extent, ValueRange inits,
    function_ref<Value(Value)> shared,
    function_ref<Value(Value, int64_t)> other) {
  return loop(idx(0), extent, inits, /*unrolled=*/false,
              [&](Value k, ValueRange acc) -> SmallVector<Value> {
                Value x = shared(k);
                SmallVector<Value> next;
                for (int64_t u = 0; u < (int64_t)acc.size(); ++u)
                  next.push_back(cloneGenericBody(b, g, {x, other(k, u), acc[u]},
                                                  {}, map, resolver())[0]);
                return next;
              });
}

FailureOr<bool> SimtKernel::emitScoresByKeyGroups(linalg::GenericOp g) {
  // S(r, c) = sum_k Q(r, k) K(c, k) for `group` keys at a time, each in a
  // register: Q's row (a private array, in local memory) is read once per
  // `group` products instead of once per product. The scores go to a
  // private array that the ops after read like any kept value. Only where
  // nothing else would keep them in registers: a thread per row with the
  // head-dimension loops not unrolled (the generic CUDA kernel).
  if (unroll || lanes != 1 || coop)
    return false;
  Tile &lhs = tiles[g.getDpsInputs()[0]];
  Tile &rhs = tiles[g.getDpsInputs()[1]];
  Tile &init = tiles[g.getDpsInits()[0]];
  if (lhs.kind != Tile::Row || rhs.kind != Tile::Staged ||
      init.kind != Tile::Fill)
    return false;
  const int64_t group = groupWidth(bc);
  if (group == 1)
    return false;
  Value result = g.getResult(0);
  Value arr =
      keptArray(cast<RankedTensorType>(result.getType()).getElementType());
  int64_t depth =
      cast<RankedTensorType>(g.getDpsInputs()[0].getType()).getDimSize(1);
  // Whole groups up to the block's last key: a group's keys past it read
  // rows of the K tile (block_kv rows, a multiple of the group) that this
  // block did not write, into slots nothing reads.
  Value nCols = keyColumns(extentOf(result, 1));
  Value qArr = lhs.memref, kArr = rhs.memref;
  loop(idx(0), ceilDiv(nCols, group), {}, /*unrolled=*/false,
       [&](Value cBlock, ValueRange) {
         Value c0 = mul(cBlock, idx(group));
         SmallVector<Value> cols;
         for (int64_t u = 0; u < group; ++u)
           cols.push_back(add(c0, idx(u)));
         SmallVector<Value> s = groupedReduction(
             g, idx(depth), SmallVector<Value>(group, init.value),
             [&](Value k) { return memref::LoadOp::create(b, loc, qArr, k); },
             [&](Value k, int64_t u) {
               return memref::LoadOp::create(b, loc, kArr,
                                             ValueRange{cols[u], k});
             });
         for (int64_t u = 0; u < group; ++u)
           storeSlot(s[u], arr, cols[u]);
         return SmallVector<Value>{};
       });
  Tile t;
  t.kind = Tile::Private;
  t.memref = arr;
  tiles[result] = t;
  return true;
}

LogicalResult SimtKernel::emitProductOutsideKeys(linalg::GenericOp g) {
  // acc'(r, d) = acc(r, d) + sum_c P(r, c) V(c, d) with d outside the loop
  // over the keys: acc(r, d) stays in a register through it (a thread per
  // row, head-dimension loops not unrolled).
  if (lanes != 1)
    return g.emitOpError("convert-attn-tiles-to-simt: a subgroup per row "
                         "needs unroll (P.V runs in the key loop)");
  Value pV = g.getDpsInputs()[0];
  if (failed(materialize(pV)))
    return failure();
  Tile &p = tiles[pV];
  Tile &v = tiles[g.getDpsInputs()[1]];
  if (p.kind != Tile::Private || v.kind != Tile::Staged)
    return g.emitOpError("convert-attn-tiles-to-simt: P.V needs P in a "
                         "private array and V in workgroup memory");
  FailureOr<Value> arr = accArray(g.getDpsInits()[0]);
  if (failed(arr))
    return failure();
  int64_t dv = cast<RankedTensorType>(g.getResult(0).getType()).getDimSize(1);
  Value nCols = keyColumns(extentOf(pV, 1));
  Value pArr = p.memref, vArr = v.memref;
  // `width` value columns per pass over the keys, each in a register: P(r,
  // c) is read from its private array once per `width` products (private
  // arrays live in local memory, which the products otherwise read as
  // often as workgroup memory).
  const int64_t width = groupWidth(dv);
  loop(idx(0), idx(dv / width), {}, /*unrolled=*/false,
       [&](Value dBlock, ValueRange) {
         Value d0 = mul(dBlock, idx(width));
         SmallVector<Value> cols, a0;
         for (int64_t u = 0; u < width; ++u) {
           cols.push_back(add(d0, idx(u)));
           a0.push_back(memref::LoadOp::create(b, loc, *arr, cols.back()));
         }
         SmallVector<Value> a = groupedReduction(
             g, nCols, a0,
             [&](Value c) { return memref::LoadOp::create(b, loc, pArr, c); },
             [&](Value c, int64_t u) {
               return memref::LoadOp::create(b, loc, vArr,
                                             ValueRange{c, cols[u]});
             });
         for (int64_t u = 0; u < width; ++u)
           memref::StoreOp::create(b, loc, a[u], *arr, cols[u]);
         return SmallVector<Value>{};
       });
  tiles[g.getResult(0)] = tiles[g.getDpsInits()[0]];
  return success();
}

//===----------------------------------------------------------------------===//
// Products on cooperative matrices
//===----------------------------------------------------------------------===//

void SimtKernel::stageQ(Value tileV) {
  // Q's tile into workgroup memory once, by the whole workgroup, rows past
  // the tile's zero.
  Tile &t = tiles[tileV];
  if (t.kind == Tile::Staged)
    return;
  auto slice = tileV.getDefiningOp<tensor::ExtractSliceOp>();
  int64_t d = cast<RankedTensorType>(tileV.getType()).getDimSize(1);
  stage(slice, qBuf, d, brPad);
  gpu::BarrierOp::create(b, loc);
  if (regs && !coop.getScalar()) {
    // The subgroup's strips of Q as A matrices, for every key block; where
    // Q's tile is K's, before any subgroup stages K's first block into it.
    Type elt = cast<RankedTensorType>(tileV.getType()).getElementType();
    auto aTy = gpu::MMAMatrixType::get({16, 16}, elt, "AOp");
    qFrags.clear();
    for (int64_t s = 0; s < strips; ++s)
      for (int64_t kt = 0; kt < d / 16; ++kt)
        qFrags.push_back(gpu::SubgroupMmaLoadMatrixOp::create(
            b, loc, aTy, qBuf,
            ValueRange{stripRow(s), stagedColumn(qBuf, 16 * kt)},
            b.getIndexAttr(cast<MemRefType>(qBuf.getType()).getDimSize(1)),
            UnitAttr()));
    if (qInK)
      gpu::BarrierOp::create(b, loc);
  }
  Tile q;
  q.kind = Tile::Staged;
  q.memref = qBuf;
  tiles[tileV] = q;
}

LogicalResult SimtKernel::emitCoopProduct(linalg::GenericOp g) {
  // out(i, j) = init(i, j) + sum_k lhs(i, k) rhs(k, j) (Q.K^T: rhs(j, k))
  // over the workgroup-memory tiles, by the whole workgroup: 16x16x16
  // cooperative matrices, or (scalar) the invocations sharing each 16x16
  // output tile's elements, each a loop over k of the product's body.
  const bool qk = rhsTransposed(g);
  Value lhsV = g.getDpsInputs()[0], rhsV = g.getDpsInputs()[1],
        initV = g.getDpsInits()[0];
  Tile &rhs = tiles[rhsV];
  if (rhs.kind != Tile::Staged)
    return g.emitOpError("convert-attn-tiles-to-simt: a product whose right "
                         "operand is not a K or V tile in workgroup memory");
  Value lhsBuf, outBuf, fill;
  int64_t n, k;
  // (registers, P.V with a rescale: whether the subgroup's strip rescales)
  Value rescales;
  if (qk) {
    Tile &lhs = tiles[lhsV];
    Tile &init = tiles[initV];
    if (lhs.kind != Tile::Staged || init.kind != Tile::Fill)
      return g.emitOpError("convert-attn-tiles-to-simt: Q.K^T needs Q in "
                           "workgroup memory and a filled init");
    lhsBuf = lhs.memref;
    outBuf = sBuf;
    fill = init.value;
    n = bcPad;
    k = cast<RankedTensorType>(lhsV.getType()).getDimSize(1);
  } else {
    // P in its workgroup tile (the group that computed it keeps it there),
    // the accumulator in place.
    if (tiles[lhsV].kind == Tile::Lazy) {
      if (failed(materialize(lhsV, pBuf)))
        return failure();
      Value nCols = keyColumns(extentOf(lhsV, 1));
      when(ult(row, idx(brPad)), [&] { zeroColumns(pBuf, nCols, bcPad); });
    }
    Tile &lhs = tiles[lhsV];
    if (lhs.kind != Tile::Private || lhs.memref != pBuf)
      return g.emitOpError("convert-attn-tiles-to-simt: P.V's left operand "
                           "must be P's tile in workgroup memory");
    FailureOr<Value> acc = accArray(initV);
    if (failed(acc) || *acc != accBuf)
      return g.emitOpError("convert-attn-tiles-to-simt: P.V must accumulate "
                           "into the accumulator tile");
    lhsBuf = pBuf;
    outBuf = accBuf;
    n = cast<RankedTensorType>(g.getResult(0).getType()).getDimSize(1);
    k = bcPad;
    if (regs) {
      // The row's rescale factor into its row of the factors' tile (16
      // columns, the row's lanes taking them in turn), for the subgroup to
      // multiply into its accumulator matrices. Over a whole key sequence
      // (no split) the strip first asks whether any of its rows rescales:
      // a factor other than exactly 1, NaN included; multiplying by 1
      // changes nothing, so the strip skips the factors and the
      // multiplications for the blocks where its rows' maxima held, which
      // after the first blocks is most of them. A chunk of a split
      // sequence is short (decode's: some 30 blocks), its maxima move in a
      // larger share of its blocks, and the question costs more than it
      // saves there (bench/results/vulkan-h200-rescale-vote-2026-11-28).
      Tile &accT = tiles[initV];
      if (Value f = accT.scale) {
        if (!partial) {
          Value one = arith::ConstantOp::create(
              b, loc, f.getType(), b.getFloatAttr(f.getType(), 1.0));
          rescales = subgroupAny(
              arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, f, one));
        }
        auto storeFactor = [&] {
          for (int64_t j = 0; j < 16 / lanes; ++j)
            memref::StoreOp::create(b, loc, f, scaleBuf,
                                    ValueRange{row, add(idx(j * lanes), lane)});
        };
        if (rescales)
          when(rescales, storeFactor);
        else
          storeFactor();
      }
    }
    // What the rows wrote (P, the rescaled accumulator, the factors) before
    // the whole workgroup reads it; with registers only the strip's own
    // subgroup reads its rows of P and of the factors.
    if (regs)
      subgroupBarrier();
    else
      gpu::BarrierOp::create(b, loc);
  }
  auto ld = [&](Value buf) {
    return b.getIndexAttr(cast<MemRefType>(buf.getType()).getDimSize(1));
  };
  Value rhsBuf = rhs.memref;
  auto rhsColumn = [&](int64_t c) { return stagedColumn(rhsBuf, c); };
  if (regs) {
    // The subgroup's strips: Q.K^T from Q's matrices in registers into
    // their rows of S; P.V into their accumulator matrices, first
    // multiplied by the rows' factors where the block rescaled them. Each
    // K^T or V matrix loaded enters one product per strip.
    Type elt = cast<RankedTensorType>(lhsV.getType()).getElementType();
    if (!elt.isF16())
      return g.emitOpError("convert-attn-tiles-to-simt: gpu.mma_matrix "
                           "operands are f16 here, got ")
             << elt;
    auto aTy = gpu::MMAMatrixType::get({16, 16}, elt, "AOp");
    auto bTy = gpu::MMAMatrixType::get({16, 16}, elt, "BOp");
    auto cTy = gpu::MMAMatrixType::get({16, 16}, b.getF32Type(), "COp");
    Tile out;
    if (qk) {
      if ((int64_t)qFrags.size() != strips * (k / 16))
        return g.emitOpError("convert-attn-tiles-to-simt: Q.K^T without "
                             "Q's matrices in registers");
      for (int64_t c = 0; c < n / 16; ++c) {
        SmallVector<Value> accs(
            strips, gpu::SubgroupMmaConstantMatrixOp::create(b, loc, cTy, fill));
        for (int64_t kt = 0; kt < k / 16; ++kt) {
          // K^T as a column-major load of K's rows.
          Value bm = gpu::SubgroupMmaLoadMatrixOp::create(
              b, loc, bTy, rhsBuf, ValueRange{idx(16 * c), rhsColumn(16 * kt)},
              ld(rhsBuf), b.getUnitAttr());
          for (int64_t s = 0; s < strips; ++s)
            accs[s] = gpu::SubgroupMmaComputeOp::create(
                b, loc, qFrags[s * (k / 16) + kt], bm, accs[s], UnitAttr(),
                UnitAttr());
        }
        for (int64_t s = 0; s < strips; ++s)
          gpu::SubgroupMmaStoreMatrixOp::create(
              b, loc, accs[s], outBuf, ValueRange{stripRow(s), idx(16 * c)},
              ld(outBuf), UnitAttr());
      }
      out.kind = Tile::Private;
      out.memref = sBuf;
    } else {
      Tile &accT = tiles[initV];
      SmallVector<Value> accs(accT.frags.begin(), accT.frags.end());
      const int64_t perStrip = n / 16;
      if ((int64_t)accs.size() != strips * perStrip)
        return g.emitOpError("convert-attn-tiles-to-simt: P.V without the "
                             "accumulator's matrices in registers");
      auto rescale = [&](ValueRange in) {
        SmallVector<Value> scaled;
        for (int64_t s = 0; s < strips; ++s) {
          Value alpha = gpu::SubgroupMmaLoadMatrixOp::create(
              b, loc, cTy, scaleBuf, ValueRange{stripRow(s), idx(0)},
              ld(scaleBuf), UnitAttr());
          for (Value a : in.slice(s * perStrip, perStrip))
            scaled.push_back(gpu::SubgroupMmaElementwiseOp::create(
                b, loc, cTy, ValueRange{a, alpha},
                gpu::MMAElementwiseOp::MULF));
        }
        return scaled;
      };
      if (accT.scale && !rescales) {
        accs = rescale(accs);
      } else if (accT.scale) {
        // (uniform over the subgroup: its strip's answer)
        auto ifOp = scf::IfOp::create(
            b, loc, SmallVector<Type>(accs.size(), cTy), rescales,
            /*withElseRegion=*/true);
        {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(&ifOp.getThenRegion().front());
          scf::YieldOp::create(b, loc, rescale(accs));
          b.setInsertionPointToStart(&ifOp.getElseRegion().front());
          scf::YieldOp::create(b, loc, accs);
        }
        accs.assign(ifOp.getResults().begin(), ifOp.getResults().end());
      }
      for (int64_t kt = 0; kt < k / 16; ++kt) {
        SmallVector<Value> as;
        for (int64_t s = 0; s < strips; ++s)
          as.push_back(gpu::SubgroupMmaLoadMatrixOp::create(
              b, loc, aTy, lhsBuf, ValueRange{stripRow(s), idx(16 * kt)},
              ld(lhsBuf), UnitAttr()));
        for (int64_t j = 0; j < perStrip; ++j) {
          Value bm = gpu::SubgroupMmaLoadMatrixOp::create(
              b, loc, bTy, rhsBuf, ValueRange{idx(16 * kt), rhsColumn(16 * j)},
              ld(rhsBuf), UnitAttr());
          for (int64_t s = 0; s < strips; ++s) {
            Value &acc = accs[s * perStrip + j];
            acc = gpu::SubgroupMmaComputeOp::create(b, loc, as[s], bm, acc,
                                                    UnitAttr(), UnitAttr());
          }
        }
      }
      out.kind = Tile::Acc;
      out.memref = accBuf;
      out.frags.assign(accs.begin(), accs.end());
    }
    // Q.K^T: its strip of S stored before the strip's rows (lanes of the
    // same subgroup) read it. P.V: every subgroup done with K and V before
    // the next block's staging overwrites them.
    if (qk)
      subgroupBarrier();
    else
      gpu::BarrierOp::create(b, loc);
    if (qk) {
      // The row's scores into registers, all loads before the row's first
      // store: read from S's tile in each loop over the block's keys (the
      // row maximum's, then the probabilities'), the driver left each load
      // behind the store of the column before it (P's tile is workgroup
      // memory too), one round trip to workgroup memory per score.
      const int64_t n = slotsOf(bc);
      if (!sRow)
        sRow = privateArray(n, b.getF32Type());
      for (int64_t j = 0; j < n; ++j)
        memref::StoreOp::create(
            b, loc,
            memref::LoadOp::create(b, loc, sBuf,
                                   ValueRange{row, rowColumnOf(idx(j))}),
            sRow, idx(j));
      out.memref = sRow;
    }
    tiles[g.getResult(0)] = out;
    return success();
  }
  if (!coop.getScalar()) {
    Type elt = cast<MemRefType>(lhsBuf.getType()).getElementType();
    if (!elt.isF16())
      return g.emitOpError("convert-attn-tiles-to-simt: gpu.mma_matrix "
                           "operands are f16 here, got ")
             << elt
             << " (a bf16 kernel is retyped as f16 first: "
                "attn-spirv-bf16-as-f16; or use scalar products)";
    auto aTy = gpu::MMAMatrixType::get({16, 16}, elt, "AOp");
    auto bTy = gpu::MMAMatrixType::get({16, 16}, elt, "BOp");
    auto cTy = gpu::MMAMatrixType::get({16, 16}, b.getF32Type(), "COp");
    // The output's 16-row strips in units of up to 4 matrices (their A
    // matrix loaded once per step of k for all of them), the units over
    // the workgroup's subgroups.
    const int64_t cols = n / 16;
    const int64_t per = cols % 4 == 0 ? 4 : cols % 2 == 0 ? 2 : 1;
    forEachUnit(brPad / 16, cols / per, [&](Value mt, Value unit) {
      Value i0 = mul(mt, idx(16));
      SmallVector<Value> j0s, init;
      for (int64_t c = 0; c < per; ++c) {
        j0s.push_back(mul(add(mul(unit, idx(per)), idx(c)), idx(16)));
        init.push_back(
            qk ? Value(gpu::SubgroupMmaConstantMatrixOp::create(b, loc, cTy,
                                                                fill))
               : Value(gpu::SubgroupMmaLoadMatrixOp::create(
                     b, loc, cTy, outBuf, ValueRange{i0, j0s[c]}, ld(outBuf),
                     UnitAttr())));
      }
      SmallVector<Value> out = loop(
          idx(0), idx(k / 16), init, false,
          [&](Value kt, ValueRange acc) -> SmallVector<Value> {
            Value k0 = mul(kt, idx(16));
            Value a = gpu::SubgroupMmaLoadMatrixOp::create(
                b, loc, aTy, lhsBuf, ValueRange{i0, k0}, ld(lhsBuf),
                UnitAttr());
            SmallVector<Value> next;
            for (int64_t c = 0; c < per; ++c) {
              // K^T as a column-major load of K's rows.
              Value bm = gpu::SubgroupMmaLoadMatrixOp::create(
                  b, loc, bTy, rhsBuf,
                  qk ? ValueRange{j0s[c], k0} : ValueRange{k0, j0s[c]},
                  ld(rhsBuf), qk ? b.getUnitAttr() : UnitAttr());
              next.push_back(gpu::SubgroupMmaComputeOp::create(
                  b, loc, a, bm, acc[c], UnitAttr(), UnitAttr()));
            }
            return next;
          });
      for (int64_t c = 0; c < per; ++c)
        gpu::SubgroupMmaStoreMatrixOp::create(b, loc, out[c], outBuf,
                                              ValueRange{i0, j0s[c]},
                                              ld(outBuf), UnitAttr());
    });
  } else {
    loop(idx(0), idx(brPad / 16), {}, false, [&](Value mt, ValueRange) {
      loop(idx(0), idx(n / 16), {}, false, [&](Value nt, ValueRange) {
        auto forOp = scf::ForOp::create(b, loc, tid, idx(256),
                                        idx(invocations));
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(forOp.getBody());
        Scope scope(*this);
        Value e = forOp.getInductionVar();
        Value i = add(mul(mt, idx(16)), arith::DivUIOp::create(b, loc, e,
                                                               idx(16)));
        Value j = add(mul(nt, idx(16)), arith::RemUIOp::create(b, loc, e,
                                                               idx(16)));
        Value init = qk ? fill
                        : Value(memref::LoadOp::create(b, loc, outBuf,
                                                       ValueRange{i, j}));
        Value r = loop(idx(0), idx(k), {init}, false,
                       [&](Value kk, ValueRange acc) -> SmallVector<Value> {
                         Value x = memref::LoadOp::create(
                             b, loc, lhsBuf, ValueRange{i, kk});
                         Value y = memref::LoadOp::create(
                             b, loc, rhsBuf,
                             qk ? ValueRange{j, kk} : ValueRange{kk, j});
                         return cloneGenericBody(b, g, {x, y, acc[0]}, {},
                                                 map, resolver());
                       })[0];
        memref::StoreOp::create(b, loc, r, outBuf, ValueRange{i, j});
        return SmallVector<Value>{};
      });
      return SmallVector<Value>{};
    });
  }
  // Done before the rows read the result (or the next block's staging
  // overwrites K and V).
  gpu::BarrierOp::create(b, loc);
  Tile out;
  out.kind = qk ? Tile::Private : Tile::Acc;
  out.memref = outBuf;
  tiles[g.getResult(0)] = out;
  return success();
}

//===----------------------------------------------------------------------===//
// Regions: the rescale guard, the key loops
//===----------------------------------------------------------------------===//

LogicalResult SimtKernel::emitIf(scf::IfOp op) {
  // Each branch emitted in a scope of its own; row vectors become the new
  // op's results (a share in either branch: shares in both), accumulators
  // are updated in place and must be the same array in both.
  Value cond = value(op.getCondition());
  auto tmp = scf::IfOp::create(b, loc, TypeRange{}, cond,
                               /*withElseRegion=*/true);
  struct Result {
    bool acc = false, share = false;
    Value arr;
    /// An accumulator in registers: its matrices, and whether a branch
    /// leaves a row factor pending on them (then a result of the if).
    SmallVector<Value, 0> frags;
    bool scaled = false;
  };
  SmallVector<Result> kinds(op.getNumResults());
  SmallVector<SmallVector<Tile>> yielded(2);
  auto emitBranch = [&](Region &from, Block &into, int which) -> LogicalResult {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(into.getTerminator());
    Scope scope(*this);
    SmallVector<linalg::GenericOp> pendingBefore = pending;
    if (failed(emitBlock(from.front())))
      return failure();
    pending = pendingBefore;
    for (Value y : from.front().getTerminator()->getOperands()) {
      Tile t = tiles[y];
      if (t.kind == Tile::Fill && isa<RankedTensorType>(y.getType()) &&
          cast<RankedTensorType>(y.getType()).getRank() == 1) {
        t.kind = Tile::Scalar; // a row vector
      }
      if (t.kind == Tile::Scalar && t.partial)
        t.value = t.value; // keep
      yielded[which].push_back(t);
    }
    return success();
  };
  if (failed(emitBranch(op.getThenRegion(), tmp.getThenRegion().front(), 0)) ||
      failed(emitBranch(op.getElseRegion(), tmp.getElseRegion().front(), 1)))
    return failure();
  SmallVector<Type> types;
  for (unsigned i = 0; i < op.getNumResults(); ++i) {
    Tile &t = yielded[0][i], &e = yielded[1][i];
    if (t.kind == Tile::Acc || e.kind == Tile::Acc) {
      if (t.kind != Tile::Acc || e.kind != Tile::Acc || t.memref != e.memref)
        return op.emitOpError("convert-attn-tiles-to-simt: branches that "
                              "yield different accumulators");
      kinds[i].acc = true;
      kinds[i].arr = t.memref;
      if (!t.frags.empty() || !e.frags.empty()) {
        if (t.frags != e.frags)
          return op.emitOpError("convert-attn-tiles-to-simt: branches that "
                                "yield different accumulator matrices");
        kinds[i].frags = t.frags;
        if (t.scale || e.scale) {
          kinds[i].scaled = true;
          types.push_back(b.getF32Type());
        }
      }
      continue;
    }
    if (t.kind != Tile::Scalar || e.kind != Tile::Scalar)
      return op.emitOpError("convert-attn-tiles-to-simt: a branch result "
                            "that is neither a row vector nor an "
                            "accumulator");
    kinds[i].share = t.partial || e.partial;
    types.push_back(t.value.getType());
  }
  auto ifOp = scf::IfOp::create(b, loc, types, cond, /*withElseRegion=*/true);
  ifOp.getThenRegion().takeBody(tmp.getThenRegion());
  ifOp.getElseRegion().takeBody(tmp.getElseRegion());
  tmp.erase();
  for (int which = 0; which < 2; ++which) {
    Region &region = which == 0 ? ifOp.getThenRegion() : ifOp.getElseRegion();
    Operation *term = region.front().getTerminator();
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(term);
    SmallVector<Value> vals;
    for (unsigned i = 0; i < op.getNumResults(); ++i) {
      Tile &t = yielded[which][i];
      if (kinds[i].acc) {
        if (kinds[i].scaled)
          vals.push_back(t.scale ? t.scale
                                 : Value(arith::ConstantOp::create(
                                       b, loc, b.getF32FloatAttr(1.0f))));
        continue;
      }
      // A share where the other branch yields one.
      vals.push_back(kinds[i].share && !t.partial ? asShare(t.value) : t.value);
    }
    scf::YieldOp::create(b, loc, vals);
    term->erase();
  }
  unsigned next = 0;
  for (unsigned i = 0; i < op.getNumResults(); ++i) {
    Tile t;
    if (kinds[i].acc) {
      t.kind = Tile::Acc;
      t.memref = kinds[i].arr;
      t.frags = kinds[i].frags;
      if (kinds[i].scaled)
        t.scale = ifOp.getResult(next++);
    } else {
      t.kind = Tile::Scalar;
      t.partial = kinds[i].share;
      t.value = ifOp.getResult(next++);
    }
    tiles[op.getResult(i)] = t;
  }
  return success();
}

void SimtKernel::stage(tensor::ExtractSliceOp slice, Value buffer,
                       int64_t width, int64_t tileRows, ValueRange preloaded) {
  // tile[r, c] = src[offsets + (r, c)] for r < the slice's rows, the
  // invocations striding over the flattened tile so that consecutive ones
  // read consecutive elements of a row. For SPIR-V every invocation runs
  // the same number of iterations, the tile's end tested inside: lavapipe
  // stored garbage into workgroup memory when invocations left this loop
  // at different iterations and the stores were emulated sub-word atomics
  // (bf16 in 32-bit words, workgroup sizes that do not divide the tile).
  Tile t = viewOf(slice);
  Value keys = value(extentOf(slice.getResult(), 0));
  if (auto it = vectorViews.find(slice.getSource()); it != vectorViews.end()) {
    const VectorView &vv = it->second;
    if (preloaded.empty())
      storeVectors(loadVectors(t, vv, keys, width, tileRows), buffer, width,
                   vv.per);
    else
      storeVectors(preloaded, buffer, width, vv.per);
    return;
  }
  const int64_t total = tileRows * width, n = invocations;
  // Rows past the slice: untouched, or (cooperative matrices, whose
  // products run over whole tiles) zero.
  auto copy = [&](Value e) {
    Value r = arith::DivUIOp::create(b, loc, e, idx(width));
    Value c = arith::RemUIOp::create(b, loc, e, idx(width));
    if (coop) {
      // Without a branch: the row clamped to the slice's first (a key
      // block or a query tile has at least one row), the value replaced
      // by zero past its rows. Loads under a branch per element stay one
      // in flight per invocation on NVIDIA's Vulkan driver, and the
      // staging then took most of the kernel's time (2.4x slower than
      // unconditional loads, H100, 2026-11-26).
      Scope scope(*this);
      Value in = ult(r, keys);
      Value row = arith::SelectOp::create(b, loc, in, r, idx(0));
      Value x = loadView(t, row, c);
      Type elt = x.getType();
      // A 16-bit value only loaded and stored on the scalar variant's
      // bf16 path (attn-spirv-bf16-storage): selected as f32, exactly.
      if (elt.isBF16())
        x = arith::ExtFOp::create(b, loc, b.getF32Type(), x);
      x = arith::SelectOp::create(b, loc, in, x, zeroOf(x.getType()));
      if (elt.isBF16())
        x = arith::TruncFOp::create(b, loc, elt, x);
      memref::StoreOp::create(b, loc, x, buffer, ValueRange{r, c});
      return;
    }
    auto ifOp = scf::IfOp::create(b, loc, ult(r, keys),
                                  /*withElseRegion=*/false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    Scope scope(*this);
    memref::StoreOp::create(b, loc, loadView(t, r, c), buffer,
                            ValueRange{r, c});
  };
  auto copyElements = [&] {
    if (!spirv || total % n == 0) {
      auto forOp = scf::ForOp::create(b, loc, tid, idx(total), idx(n));
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(forOp.getBody());
      Scope scope(*this);
      copy(forOp.getInductionVar());
      return;
    }
    auto forOp =
        scf::ForOp::create(b, loc, idx(0), idx((total + n - 1) / n), idx(1));
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(forOp.getBody());
    Scope scope(*this);
    Value e = add(mul(forOp.getInductionVar(), idx(n)), tid);
    when(ult(e, idx(total)), [&] { copy(e); });
  };
  // Cooperative matrices: a whole tile (every row in the slice) as 16x16
  // matrices loaded from the function's memref and stored into the tile,
  // which the driver does with wide loads (one element per invocation and
  // iteration left the staging latency-bound on NVIDIA's Vulkan driver);
  // the tail tile element by element, zero-filled. A memref of dynamic
  // shape (matrixRowStride) has every tile go element by element.
  std::optional<int64_t> rowStride = matrixRowStride(t);
  if (!coop || coop.getScalar() || !rowStride || width % 16 ||
      tileRows % 16) {
    copyElements();
    return;
  }
  auto ifOp = scf::IfOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, keys,
                            idx(tileRows)),
      /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    Scope scope(*this);
    Value m = map.lookup(t.source);
    auto ty = gpu::MMAMatrixType::get(
        {16, 16}, cast<MemRefType>(m.getType()).getElementType(), "COp");
    auto load = [&](Value r0, Value c0) -> Value {
      SmallVector<Value> at;
      for (OpFoldResult o : t.offsets)
        at.push_back(value(o));
      at[t.dims[0]] = add(at[t.dims[0]], r0);
      at[t.dims[1]] = add(at[t.dims[1]], c0);
      return gpu::SubgroupMmaLoadMatrixOp::create(
          b, loc, ty, m, at, b.getIndexAttr(*rowStride), UnitAttr());
    };
    auto store = [&](Value x, Value r0, Value c0) {
      gpu::SubgroupMmaStoreMatrixOp::create(
          b, loc, x, buffer, ValueRange{r0, c0},
          b.getIndexAttr(cast<MemRefType>(buffer.getType()).getDimSize(1)),
          UnitAttr());
    };
    if (regs) {
      // The subgroups' count is known (subgroupWidth() invocations each):
      // each subgroup's matrices unrolled, all loads issued before the
      // first store, so that their latencies overlap (a loop of load-store
      // pairs kept one load in flight per subgroup).
      const int64_t groups = subgroupCount();
      const int64_t cols = width / 16, total = tileRows / 16 * cols;
      Value sg = arith::DivUIOp::create(b, loc, strip0, idx(16 * strips));
      SmallVector<std::tuple<Value, Value, Value>> got;
      for (int64_t i = 0; i * groups < total; ++i) {
        Value at = add(sg, idx(i * groups));
        Value r0 = mul(arith::DivUIOp::create(b, loc, at, idx(cols)), idx(16));
        Value c0 = mul(arith::RemUIOp::create(b, loc, at, idx(cols)), idx(16));
        if (!preloaded.empty()) {
          // Loaded during the previous block (prefetchBlock).
          got.push_back({preloaded[i], r0, c0});
          continue;
        }
        if ((i + 1) * groups > total) {
          // The last round, not every subgroup has a matrix.
          when(ult(at, idx(total)), [&] { store(load(r0, c0), r0, c0); });
          continue;
        }
        got.push_back({load(r0, c0), r0, c0});
      }
      for (auto [x, r0, c0] : got)
        store(x, r0, c0);
    } else {
      forEachMatrix(tileRows / 16, width / 16,
                    [&](Value r0, Value c0) { store(load(r0, c0), r0, c0); });
    }
  }
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(&ifOp.getElseRegion().front());
  Scope scope(*this);
  copyElements();
}

SmallVector<Value> SimtKernel::prefetchBlock(
    ArrayRef<std::pair<tensor::ExtractSliceOp, int64_t>> slices, Value loopIv,
    Value iv, Value ub) {
  // Vector views: every slice's, the block past the last one zero; the
  // block's tail rows are zero (loadVectors), so any block loads.
  const auto viewed = [&](std::pair<tensor::ExtractSliceOp, int64_t> s) {
    return vectorViews.contains(s.first.getSource());
  };
  if (llvm::any_of(slices, viewed)) {
    if (!llvm::all_of(slices, viewed))
      return {};
    SmallVector<Type> types;
    for (auto [slice, width] : slices) {
      const VectorView &vv = vectorViews.find(slice.getSource())->second;
      Type vty = cast<MemRefType>(vv.memref.getType()).getElementType();
      types.append(prefetchedPerSlice(slice, width), vty);
    }
    // At most kMaxPrefetchedVectors an invocation carries: on NVIDIA's
    // Vulkan driver prefetching 16 (D = 128 prefill on 2 subgroups) made
    // the kernel faster, 32 (D = 128 decode on one) slower than loading
    // each block in its turn (bench/results/vulkan-h200-vector-staging-
    // 2026-11-28).
    if (types.size() > kMaxPrefetchedVectors)
      return {};
    auto ifOp = scf::IfOp::create(b, loc, types, ult(iv, ub),
                                  /*withElseRegion=*/true);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    {
      Scope scope(*this);
      mapLoopIvTo(loopIv, iv);
      SmallVector<Value> loads;
      for (auto [slice, width] : slices) {
        Value keys = value(extentOf(slice.getResult(), 0));
        llvm::append_range(
            loads, loadVectors(viewOf(slice),
                               vectorViews.find(slice.getSource())->second,
                               keys, width, bcPad));
      }
      scf::YieldOp::create(b, loc, loads);
    }
    b.setInsertionPointToStart(&ifOp.getElseRegion().front());
    SmallVector<Value> zeros;
    for (Type ty : types)
      zeros.push_back(
          arith::ConstantOp::create(b, loc, ty, b.getZeroAttr(ty)));
    scf::YieldOp::create(b, loc, zeros);
    return SmallVector<Value>(ifOp.getResults());
  }
  const int64_t groups = subgroupCount();
  // Which slices qualify: stage()'s whole-tile path, every subgroup with
  // the same number of matrices. Their views and row strides, for the
  // loads.
  SmallVector<Tile> views;
  SmallVector<int64_t> rowStrides;
  for (auto [slice, width] : slices) {
    views.push_back(viewOf(slice));
    std::optional<int64_t> stride = matrixRowStride(views.back());
    if (!stride || width % 16 || bcPad % 16 ||
        (bcPad / 16 * (width / 16)) % groups)
      return {};
    rowStrides.push_back(*stride);
  }
  // The block at `iv`: its offsets and key count, with the loop's
  // induction variable taken as `iv` (what is cloned for it is forgotten
  // after, the ops stay).
  SmallVector<SmallVector<Value>> offsets;
  Value whole = ult(iv, ub);
  {
    Scope scope(*this);
    mapLoopIvTo(loopIv, iv);
    for (auto [slice, width] : slices) {
      SmallVector<Value> at;
      for (OpFoldResult o : slice.getMixedOffsets())
        at.push_back(value(o));
      offsets.push_back(at);
      Value keys = value(extentOf(slice.getResult(), 0));
      whole = arith::AndIOp::create(
          b, loc, whole,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, keys,
                                idx(bcPad)));
    }
  }
  SmallVector<Type> types;
  SmallVector<std::tuple<Value, Value, Value, int64_t>> plan;
  Value sg = arith::DivUIOp::create(b, loc, strip0, idx(16 * strips));
  for (auto [s, sw] : llvm::enumerate(slices)) {
    auto [slice, width] = sw;
    Value m = map.lookup(slice.getSource());
    auto ty = gpu::MMAMatrixType::get(
        {16, 16}, cast<MemRefType>(m.getType()).getElementType(), "COp");
    const int64_t cols = width / 16, total = bcPad / 16 * cols;
    for (int64_t i = 0; i * groups < total; ++i) {
      Value at = add(sg, idx(i * groups));
      Value r0 = mul(arith::DivUIOp::create(b, loc, at, idx(cols)), idx(16));
      Value c0 = mul(arith::RemUIOp::create(b, loc, at, idx(cols)), idx(16));
      plan.push_back({m, r0, c0, (int64_t)s});
      types.push_back(ty);
    }
  }
  auto ifOp = scf::IfOp::create(b, loc, types, whole, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    SmallVector<Value> loads;
    for (auto [i, p] : llvm::enumerate(plan)) {
      auto [m, r0, c0, s] = p;
      ArrayRef<int64_t> dims = views[s].dims;
      SmallVector<Value> at(offsets[s]);
      at[dims[0]] = add(at[dims[0]], r0);
      at[dims[1]] = add(at[dims[1]], c0);
      loads.push_back(gpu::SubgroupMmaLoadMatrixOp::create(
          b, loc, types[i], m, at, b.getIndexAttr(rowStrides[s]), UnitAttr()));
    }
    scf::YieldOp::create(b, loc, loads);
    b.setInsertionPointToStart(&ifOp.getElseRegion().front());
    SmallVector<Value> zeros;
    for (Type ty : types) {
      Type elt = cast<gpu::MMAMatrixType>(ty).getElementType();
      zeros.push_back(gpu::SubgroupMmaConstantMatrixOp::create(
          b, loc, ty, arith::ConstantOp::create(b, loc, b.getZeroAttr(elt))));
    }
    scf::YieldOp::create(b, loc, zeros);
  }
  return SmallVector<Value>(ifOp.getResults());
}

int64_t SimtKernel::prefetchedPerSlice(tensor::ExtractSliceOp slice,
                                       int64_t width) {
  if (auto it = vectorViews.find(slice.getSource()); it != vectorViews.end())
    return bcPad * (width / it->second.per) / invocations;
  return bcPad / 16 * (width / 16) / subgroupCount();
}

bool SimtKernel::makeVectorView(Value source, int64_t width,
                                int64_t tileRows,
                                ArrayRef<tensor::ExtractSliceOp> slices) {
  // A static buffer of 16-bit elements and the identity layout, whose
  // tiles start at whole vectors and hold whole vectors per row, every
  // invocation with as many vectors of a block.
  Value host = src.buffers.lookup(source);
  auto ty = host ? dyn_cast<MemRefType>(host.getType()) : MemRefType();
  if (!ty || !ty.hasStaticShape() || !ty.getLayout().isIdentity() ||
      !ty.getElementType().isIntOrFloat() ||
      ty.getElementTypeBitWidth() != 16 || ty.getRank() < 2)
    return false;
  // The tensor's row-major strides: the buffer's (identity layout), or a
  // packed decode view's ([B, Hq, 1, D] as [B, Hkv, group, D]).
  ArrayRef<int64_t> shape = cast<RankedTensorType>(source.getType()).getShape();
  if (ShapedType::isDynamicShape(shape) ||
      ShapedType::getNumElements(shape) != ty.getNumElements())
    return false;
  const int64_t per = 128 / 16, inner = shape.size() - 1;
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = inner - 1; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  for (int64_t d = 0; d < inner; ++d)
    if (strides[d] % per)
      return false;
  if (width % per || (tileRows * (width / per)) % invocations)
    return false;
  for (tensor::ExtractSliceOp slice : slices) {
    Tile t = viewOf(slice);
    std::optional<int64_t> c = getConstantIntValue(t.offsets[inner]);
    if (t.dims.size() != 2 || t.dims[1] != inner || !c || *c % per)
      return false;
  }
  // (Asked again: the view made before.)
  if (vectorViews.count(source))
    return true;
  VectorView vv;
  vv.per = per;
  for (int64_t d = 0; d < inner; ++d)
    vv.strides.push_back(strides[d] / per);
  vv.strides.push_back(0); // (the innermost offset is a constant)
  auto vty = MemRefType::get({ty.getNumElements() / per},
                             VectorType::get({4}, b.getI32Type()),
                             MemRefLayoutAttrInterface{}, ty.getMemorySpace());
  vv.memref =
      UnrealizedConversionCastOp::create(b, loc, TypeRange{vty}, host)
          .getResult(0);
  vectorViews[source] = vv;
  return true;
}

SmallVector<Value> SimtKernel::loadVectors(const Tile &t, const VectorView &vv,
                                           Value keys, int64_t width,
                                           int64_t tileRows) {
  const int64_t wv = width / vv.per, n = invocations;
  // The tile's first vector.
  Value base = idx(*getConstantIntValue(t.offsets[t.dims[1]]) / vv.per);
  for (auto [d, o] : llvm::enumerate(t.offsets))
    if ((int64_t)d != t.dims[1])
      base = add(base, mul(value(o), idx(vv.strides[d])));
  Type vty = cast<MemRefType>(vv.memref.getType()).getElementType();
  Value zero = arith::ConstantOp::create(b, loc, vty, b.getZeroAttr(vty));
  SmallVector<Value> xs;
  // Without a branch, also for a whole block: the row tested and clamped
  // per vector (a uniform branch between a whole block's loads and the
  // tail's measured slower: bench/results/vulkan-h200-vector-staging-
  // 2026-11-28).
  for (int64_t i = 0; i * n < tileRows * wv; ++i) {
    Value e = add(tid, idx(i * n));
    Value r = arith::DivUIOp::create(b, loc, e, idx(wv));
    Value c = arith::RemUIOp::create(b, loc, e, idx(wv));
    Value in = ult(r, keys);
    Value rowIn = arith::SelectOp::create(b, loc, in, r, idx(0));
    Value at = add(add(base, mul(rowIn, idx(vv.strides[t.dims[0]]))), c);
    Value x = memref::LoadOp::create(b, loc, vv.memref, at);
    xs.push_back(arith::SelectOp::create(b, loc, in, x, zero));
  }
  return xs;
}

void SimtKernel::storeVectors(ValueRange xs, Value buffer, int64_t width,
                              int64_t per) {
  const int64_t wv = width / per;
  for (auto [i, x] : llvm::enumerate(xs)) {
    Value e = add(tid, idx(i * invocations));
    memref::StoreOp::create(
        b, loc, x, buffer,
        ValueRange{arith::DivUIOp::create(b, loc, e, idx(wv)),
                   arith::RemUIOp::create(b, loc, e, idx(wv))});
  }
}

std::optional<int64_t> SimtKernel::matrixRowStride(const Tile &t) {
  // A View's rows as a strided 2-d matrix of its memref: unit stride
  // along its columns, a constant stride between its rows. Only memrefs
  // of static shape: attn-spirv-dynamic-shapes linearizes the others
  // through their element accesses, which a matrix load is not.
  if (t.dims.size() != 2)
    return std::nullopt;
  auto ty = cast<MemRefType>(map.lookup(t.source).getType());
  if (!ty.hasStaticShape())
    return std::nullopt;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(ty.getStridesAndOffset(strides, offset)) ||
      strides[t.dims[1]] != 1 || ShapedType::isDynamic(strides[t.dims[0]]))
    return std::nullopt;
  return strides[t.dims[0]];
}

LogicalResult SimtKernel::preloadRow(Value tileV) {
  // The invocation's row of a loop-invariant tile (Q) into a private array,
  // read once before the key loops.
  Tile &t = tiles[tileV];
  if (t.kind == Tile::Row)
    return success();
  if (t.kind != Tile::View)
    return failure();
  // Kept as f32: the products extend it anyway (and SPIR-V devices without
  // 16-bit integers have no 16-bit private memory for bf16).
  auto ty = cast<RankedTensorType>(tileV.getType());
  int64_t width = ty.getDimSize(1);
  Type f32 = b.getF32Type();
  Value arr = privateArray(width, f32);
  Tile view = t;
  when(rowValid, [&] {
    loop(idx(0), idx(width), {}, unroll, [&](Value k, ValueRange) {
      Value x = loadView(view, row, k);
      if (x.getType() != f32)
        x = arith::ExtFOp::create(b, loc, f32, x);
      memref::StoreOp::create(b, loc, x, arr, k);
      return SmallVector<Value>{};
    });
  });
  Tile r;
  r.kind = Tile::Row;
  r.memref = arr;
  tiles[tileV] = r;
  return success();
}

LogicalResult SimtKernel::emitBlockInRowRegions(Block &blk) {
  // A key block with cooperative matrices: the products run by the whole
  // workgroup; the row work between them (reductions, row vectors, the
  // rescale) runs in `scf.if row < rows` regions, opened at the first row
  // op after a product and closed before the next. What a region defines
  // and later ops read: its row vectors as the region's results (0 for the
  // rows the tile does not have, which nothing stores), memory (P, the
  // accumulator, kept scores) as it is.
  struct Region {
    scf::IfOp tmp;
    OpBuilder::InsertPoint after;
    std::unique_ptr<Scope> scope;
    SmallVector<linalg::GenericOp> pendingBefore;
    SetVector<Operation *> ops;
  };
  std::optional<Region> open;
  auto isRowWork = [&](Operation &op) {
    if (isa<scf::IfOp, tensor::ExtractOp>(op))
      return true;
    auto g = dyn_cast<linalg::GenericOp>(op);
    if (!g)
      return false;
    switch (classifyTileOp(g)) {
    case TileOpKind::RowReduction:
    case TileOpKind::AllReduction:
      return true;
    case TileOpKind::Elementwise:
      return cast<RankedTensorType>(g.getResult(0).getType()).getRank() == 1 ||
             tiles[g.getDpsInits()[0]].kind == Tile::Acc;
    default:
      return false;
    }
  };
  auto openRegion = [&] {
    Region r;
    r.tmp = scf::IfOp::create(b, loc, TypeRange{}, rowValid,
                              /*withElseRegion=*/true);
    r.after = b.saveInsertionPoint();
    b.setInsertionPoint(r.tmp.getThenRegion().front().getTerminator());
    r.scope = std::make_unique<Scope>(*this);
    r.pendingBefore = pending;
    open.emplace(std::move(r));
  };
  auto closeRegion = [&]() -> LogicalResult {
    Region &r = *open;
    // Values defined in the region that an op outside it reads.
    auto inside = [&](Operation *user) {
      for (Operation *o = user; o && o->getBlock(); o = o->getParentOp()) {
        if (r.ops.contains(o))
          return true;
        if (o->getBlock() == &blk)
          return false;
      }
      return false;
    };
    SmallVector<Value> liveOut;
    SmallVector<Tile> liveTiles;
    for (Operation *op : r.ops)
      for (Value v : op->getResults())
        if (llvm::any_of(v.getUsers(),
                         [&](Operation *u) { return !inside(u); })) {
          liveOut.push_back(v);
          liveTiles.push_back(tiles[v]);
        }
    SmallVector<Value> thenVals;
    SmallVector<Type> types;
    // Results that are an accumulator's pending row factor (1 for the rows
    // the tile does not have), not a row vector (0 there).
    SmallVector<bool> isScale;
    SmallVector<bool> scaledOut;
    for (auto [v, t] : llvm::zip(liveOut, liveTiles)) {
      scaledOut.push_back(false);
      if (t.kind == Tile::Scalar) {
        thenVals.push_back(t.value);
        types.push_back(t.value.getType());
        isScale.push_back(false);
        continue;
      }
      if (t.kind == Tile::Acc && t.scale &&
          r.tmp.getThenRegion().isAncestor(t.scale.getParentRegion())) {
        thenVals.push_back(t.scale);
        types.push_back(t.scale.getType());
        isScale.push_back(true);
        scaledOut.back() = true;
        continue;
      }
      if (t.kind == Tile::Lazy || t.kind == Tile::None || t.kind == Tile::Row)
        return v.getDefiningOp()->emitOpError(
            "convert-attn-tiles-to-simt: a value of the softmax that the "
            "products read is neither a row vector nor in memory");
    }
    b.restoreInsertionPoint(r.after);
    auto ifOp = scf::IfOp::create(b, loc, types, rowValid,
                                  /*withElseRegion=*/true);
    ifOp.getThenRegion().takeBody(r.tmp.getThenRegion());
    ifOp.getElseRegion().takeBody(r.tmp.getElseRegion());
    r.tmp.erase();
    {
      OpBuilder::InsertionGuard guard(b);
      Operation *term = ifOp.getThenRegion().front().getTerminator();
      b.setInsertionPoint(term);
      scf::YieldOp::create(b, loc, thenVals);
      term->erase();
      term = ifOp.getElseRegion().front().getTerminator();
      b.setInsertionPoint(term);
      SmallVector<Value> zeros;
      for (auto [t, scale] : llvm::zip(types, isScale))
        zeros.push_back(scale ? Value(arith::ConstantOp::create(
                                    b, loc, b.getF32FloatAttr(1.0f)))
                              : zeroOf(t));
      scf::YieldOp::create(b, loc, zeros);
      term->erase();
    }
    SmallVector<linalg::GenericOp> pendingBefore = r.pendingBefore;
    open.reset(); // (the scope restores the tiles and values before it)
    pending = pendingBefore;
    unsigned next = 0;
    for (auto [v, t, scaled] : llvm::zip(liveOut, liveTiles, scaledOut)) {
      Tile out = t;
      if (t.kind == Tile::Scalar)
        out.value = ifOp.getResult(next++);
      else if (scaled)
        out.scale = ifOp.getResult(next++);
      else if (t.kind == Tile::Fill)
        out.value = b.clone(*t.value.getDefiningOp())->getResult(0);
      tiles[v] = out;
    }
    return success();
  };
  for (Operation &op : blk.without_terminator()) {
    if (handled.contains(&op)) {
      if (open)
        open->ops.insert(&op); // emitted there by a group's look-ahead
      continue;
    }
    auto g = dyn_cast<linalg::GenericOp>(op);
    if (g && classifyTileOp(g) == TileOpKind::Contraction) {
      if (open && failed(closeRegion()))
        return failure();
      if (failed(emitCoopProduct(g)))
        return failure();
      continue;
    }
    if (!open && isRowWork(op))
      openRegion();
    if (open)
      open->ops.insert(&op);
    if (failed(emitOp(op)))
      return failure();
  }
  if (open && failed(closeRegion()))
    return failure();
  return success();
}

LogicalResult SimtKernel::emitKeyLoop(scf::ForOp loopOp) {
  // The products' operands: K and V tiles (slices in the body) staged in
  // workgroup memory per block; Q's row (defined before the loop) read
  // once.
  SmallVector<std::pair<tensor::ExtractSliceOp, int64_t>> staged;
  LogicalResult status = success();
  loopOp.getBody()->walk([&](linalg::GenericOp g) {
    if (classifyTileOp(g) != TileOpKind::Contraction)
      return;
    Value rhs = g.getDpsInputs()[1];
    auto slice = rhs.getDefiningOp<tensor::ExtractSliceOp>();
    if (!slice || slice->getBlock() != loopOp.getBody() ||
        !map.lookupOrNull(slice.getSource())) {
      status = g.emitOpError("convert-attn-tiles-to-simt: a product whose "
                             "right operand is not a K or V tile of the key "
                             "loop");
      return;
    }
    staged.push_back(
        {slice, cast<RankedTensorType>(rhs.getType()).getDimSize(1)});
    if (rhsTransposed(g)) {
      Value lhs = g.getDpsInputs()[0];
      bool outside =
          lhs.getParentRegion()->isAncestor(&loopOp.getBodyRegion()) &&
          lhs.getParentRegion() != &loopOp.getBodyRegion();
      if (!outside || !lhs.getDefiningOp<tensor::ExtractSliceOp>()) {
        status = g.emitOpError("convert-attn-tiles-to-simt: Q.K^T's left "
                               "operand must be a slice of Q defined before "
                               "the key loop");
        return;
      }
      if (coop)
        stageQ(lhs);
      else if (failed(preloadRow(lhs)))
        status = g.emitOpError("convert-attn-tiles-to-simt: Q.K^T's left "
                               "operand must be a slice of Q");
    }
  });
  if (failed(status))
    return failure();

  // The carried state: the accumulator in place, the row vectors as loop
  // values (the running sum as a per-lane share: a row reduction by add
  // computes it).
  Operation *yield = loopOp.getBody()->getTerminator();
  SmallVector<int> carriedKind; // 0: acc, 1: row value, 2: share
  SmallVector<Value> inits;
  SmallVector<Value> accArrays;
  // Accumulators in registers: their matrices as loop values after the
  // row values, acc i's from fragStart[i].
  SmallVector<Value> fragInits;
  SmallVector<int64_t> fragStart, fragCount;
  for (auto [i, init] : llvm::enumerate(loopOp.getInitArgs())) {
    auto ty = cast<RankedTensorType>(init.getType());
    fragStart.push_back(fragInits.size());
    fragCount.push_back(0);
    if (ty.getRank() == 2) {
      FailureOr<Value> arr = accArray(init);
      if (failed(arr))
        return failure();
      carriedKind.push_back(0);
      accArrays.push_back(*arr);
      Tile &t = tiles[init];
      if (!t.frags.empty()) {
        if (t.scale)
          return loopOp.emitOpError("convert-attn-tiles-to-simt: a key loop "
                                    "entered with a rescale of the "
                                    "accumulator pending");
        fragCount.back() = t.frags.size();
        fragInits.append(t.frags.begin(), t.frags.end());
      }
      continue;
    }
    accArrays.push_back(Value());
    Tile &t = tiles[init];
    if (t.kind != Tile::Scalar && t.kind != Tile::Fill)
      return loopOp.emitOpError("convert-attn-tiles-to-simt: a key loop "
                                "carrying what is not a row vector or an "
                                "accumulator");
    bool share = false;
    if (lanes > 1)
      if (auto g = yield->getOperand(i).getDefiningOp<linalg::GenericOp>())
        share = classifyTileOp(g) == TileOpKind::RowReduction &&
                combinerOf(g) == Combiner::AddF;
    carriedKind.push_back(share ? 2 : 1);
    if (share)
      inits.push_back(t.kind == Tile::Scalar && t.partial
                          ? t.value
                          : asShare(rowValue(t)));
    else
      inits.push_back(rowValue(t));
  }

  const unsigned numRowValues = inits.size();
  inits.append(fragInits.begin(), fragInits.end());
  // Registers: each block's K and V loaded into registers during the
  // block before (the first before the loop), so that the loads' latency
  // overlaps that block's products; the loop carries them.
  Value lb = value(loopOp.getLowerBound()), ub = value(loopOp.getUpperBound()),
        step = value(loopOp.getStep());
  SmallVector<Value> prefetched;
  if (regs && !coop.getScalar())
    prefetched = prefetchBlock(staged, loopOp.getInductionVar(), lb, ub);
  const unsigned numBeforePrefetch = inits.size();
  inits.append(prefetched.begin(), prefetched.end());
  auto forOp = scf::ForOp::create(b, loc, lb, ub, step, inits);
  // Loop values (iteration arguments or results) as the tiles of the key
  // loop's values.
  auto bindCarried = [&](ValueRange vals, ValueRange targets) {
    unsigned next = 0;
    for (auto [i, target] : llvm::enumerate(targets)) {
      Tile t;
      if (carriedKind[i] == 0) {
        t.kind = Tile::Acc;
        t.memref = accArrays[i];
        for (int64_t f = 0; f < fragCount[i]; ++f)
          t.frags.push_back(vals[numRowValues + fragStart[i] + f]);
      } else {
        t.kind = Tile::Scalar;
        t.partial = carriedKind[i] == 2;
        t.value = vals[next++];
      }
      tiles[target] = t;
    }
  };
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(forOp.getBody());
    Scope scope(*this);
    SmallVector<linalg::GenericOp> pendingBefore = pending;
    keptNext = 0;
    map.map(loopOp.getInductionVar(), forOp.getInductionVar());
    bindCarried(forOp.getRegionIterArgs(), loopOp.getRegionIterArgs());
    // Every invocation is done with the previous block's tiles before they
    // are overwritten, and the new ones are complete before use. (With
    // cooperative matrices the block's last product, P.V, already ends
    // with a barrier, and before the first block only Q was staged.)
    if (!coop)
      gpu::BarrierOp::create(b, loc);
    ValueRange carried = forOp.getRegionIterArgs();
    unsigned nextCarried = numBeforePrefetch;
    for (auto [slice, width] : staged) {
      Value buffer = stagingBuffers.lookup(slice.getSource());
      SmallVector<Value> preloaded;
      if (!prefetched.empty()) {
        const int64_t per = prefetchedPerSlice(slice, width);
        preloaded.assign(carried.begin() + nextCarried,
                         carried.begin() + nextCarried + per);
        nextCarried += per;
      }
      stage(slice, buffer, width, coop ? bcPad : bc, preloaded);
      Tile t;
      t.kind = Tile::Staged;
      t.memref = buffer;
      tiles[slice.getResult()] = t;
      handled.insert(slice);
    }
    gpu::BarrierOp::create(b, loc);
    SmallVector<Value> nextPrefetched;
    if (!prefetched.empty())
      nextPrefetched = prefetchBlock(staged, loopOp.getInductionVar(),
                                     add(forOp.getInductionVar(), step), ub);
    // The values the block yields for the next one.
    auto nextValues = [&]() -> FailureOr<SmallVector<Value>> {
      SmallVector<Value> next, nextFrags;
      for (auto [i, y] : llvm::enumerate(yield->getOperands())) {
        Tile &t = tiles[y];
        if (carriedKind[i] == 0) {
          if (t.kind != Tile::Acc || t.memref != accArrays[i] ||
              (int64_t)t.frags.size() != fragCount[i] || t.scale)
            return loopOp.emitOpError("convert-attn-tiles-to-simt: a key "
                                      "loop that does not update its "
                                      "accumulator in place (or, in "
                                      "registers, ends a block with a "
                                      "rescale pending)");
          nextFrags.append(t.frags.begin(), t.frags.end());
          continue;
        }
        if (t.kind != Tile::Scalar && t.kind != Tile::Fill)
          return loopOp.emitOpError("convert-attn-tiles-to-simt: a key loop "
                                    "yielding what is not a row vector");
        if (carriedKind[i] == 2)
          next.push_back(t.kind == Tile::Scalar && t.partial
                             ? t.value
                             : asShare(rowValue(t)));
        else
          next.push_back(rowValue(t));
      }
      next.append(nextFrags.begin(), nextFrags.end());
      next.append(nextPrefetched.begin(), nextPrefetched.end());
      return next;
    };
    if (coop) {
      // The products by the whole workgroup, the softmax between them in
      // regions of the rows the tile has.
      if (failed(emitBlockInRowRegions(*loopOp.getBody())))
        return failure();
      FailureOr<SmallVector<Value>> next = nextValues();
      if (failed(next))
        return failure();
      scf::YieldOp::create(b, loc, *next);
    } else {
      // The block folded into the state of the rows the tile has.
      SmallVector<Type> types;
      for (Value v : forOp.getRegionIterArgs())
        types.push_back(v.getType());
      auto ifOp = scf::IfOp::create(b, loc, types, rowValid,
                                    /*withElseRegion=*/true);
      {
        OpBuilder::InsertionGuard g2(b);
        b.setInsertionPointToStart(&ifOp.getThenRegion().front());
        Scope inner(*this);
        if (failed(emitBlock(*loopOp.getBody())))
          return failure();
        FailureOr<SmallVector<Value>> next = nextValues();
        if (failed(next))
          return failure();
        scf::YieldOp::create(b, loc, *next);
        b.setInsertionPointToStart(&ifOp.getElseRegion().front());
        scf::YieldOp::create(b, loc, forOp.getRegionIterArgs());
      }
      scf::YieldOp::create(b, loc, ifOp.getResults());
    }
    pending = pendingBefore;
  }
  // The loop's results.
  bindCarried(forOp.getResults(), loopOp.getResults());
  return success();
}

//===----------------------------------------------------------------------===//
// Stores (emitted for the rows the tile has: the tile's rows are the rows
// the inserts write)
//===----------------------------------------------------------------------===//

LogicalResult SimtKernel::emitStores(scf::InParallelOp par, bool rowVectors,
                                     int64_t col0, int64_t cols) {
  for (Operation &op : par.getYieldingOps()) {
    auto insert = cast<tensor::ParallelInsertSliceOp>(op);
    Value dest = map.lookupOrNull(insert.getDest());
    if (!dest)
      return insert.emitOpError("convert-attn-tiles-to-simt: an insert into "
                                "what is not the forall's output");
    auto srcTy = cast<RankedTensorType>(insert.getSource().getType());
    SmallVector<OpFoldResult> offsets = insert.getMixedOffsets();
    int64_t rank = offsets.size();
    int64_t rowDim = rank - srcTy.getRank();
    Tile &t = tiles[insert.getSource()];
    if (srcTy.getRank() == 1) {
      // A row vector (the lse): one invocation of the row writes it.
      if (!rowVectors)
        continue;
      if (t.kind != Tile::Scalar)
        return insert.emitOpError("convert-attn-tiles-to-simt: an inserted "
                                  "row vector that is not one");
      Value v = rowValue(t);
      auto store = [&] {
        SmallVector<Value> at;
        for (OpFoldResult o : offsets)
          at.push_back(value(o));
        at[rowDim] = add(at[rowDim], row);
        memref::StoreOp::create(b, loc, v, dest, at);
      };
      if (lanes > 1)
        when(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane,
                                   idx(0)),
             store);
      else
        store();
      continue;
    }
    int64_t width = srcTy.getDimSize(1);
    if (ShapedType::isDynamic(width))
      return insert.emitOpError("convert-attn-tiles-to-simt: an inserted "
                                "tile of dynamic width");
    LogicalResult status = success();
    {
      SmallVector<Value> at;
      for (OpFoldResult o : offsets)
        at.push_back(value(o));
      Value r0 = add(at[rowDim], row);
      Value c0 = at[rowDim + 1];
      // (A window of columns starts at a multiple of lanes: of 16.)
      const int64_t end = ShapedType::isDynamic(cols)
                              ? width
                              : std::min(width, col0 + cols);
      assert(col0 % lanes == 0 && "a window of columns at a lane's slot");
      loop(idx(col0 / lanes), idx(slotsOf(end)), {}, unroll,
           [&](Value s, ValueRange) {
        Scope scope(*this);
        Iter it(s, columnOf(s));
        auto store = [&] {
          FailureOr<Value> e = elemAt(insert.getSource(), it);
          if (failed(e)) {
            status = failure();
            return;
          }
          SmallVector<Value> idxs(at);
          idxs[rowDim] = r0;
          idxs[rowDim + 1] = add(c0, it.col);
          memref::StoreOp::create(b, loc, *e, dest, idxs);
        };
        if (lanes > 1 && end % lanes)
          when(ult(it.col, idx(end)), store);
        else
          store();
        return SmallVector<Value>{};
      });
    }
    if (failed(status))
      return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// The kernel
//===----------------------------------------------------------------------===//

LogicalResult SimtKernel::build(FlatSymbolRefAttr module,
                                FlatSymbolRefAttr function) {
  br = tiling.getBlockQ();
  bc = tiling.getBlockKv();
  if (coop) {
    // A row per invocation or per subgroup for the softmax, the loops over
    // the head dimensions kept (the accumulator lives in workgroup memory).
    rows = br;
    lanes = coop.getLanes();
    unroll = false;
    invocations = coop.getInvocations();
    if (!spirv)
      return forall.emitOpError("convert-attn-tiles-to-simt: the "
                                "cooperative-matrix mapping is SPIR-V's "
                                "(spirv=true)");
    brPad = llvm::alignTo(br, 16);
    bcPad = llvm::alignTo(bc, 16);
    regs = coop.getRegisters();
    strips = coop.getStrips();
    if (regs) {
      // Every subgroup's strips exist in the tiles (rows past the tile's
      // are zero, and nothing stores them), also for a tile shorter than
      // block_q (a sequence shorter than it).
      if (brPad * lanes > invocations || invocations % subgroupWidth())
        return forall.emitOpError("convert-attn-tiles-to-simt: the "
                                  "cooperative-matrix mapping with registers "
                                  "needs whole subgroups of ")
               << strips << " 16-row strips of " << 16 * lanes
               << " invocations each (block_q x lanes <= " << invocations
               << "), got block_q " << br;
      brPad = invocations / lanes;
    }
    if (brPad * lanes > invocations)
      return forall.emitOpError("convert-attn-tiles-to-simt: the "
                                "cooperative-matrix mapping needs block_q "
                                "rows of ")
             << lanes << " lanes within its " << invocations
             << " invocations, got block_q " << br;
    if (!tiling.getPType())
      return forall.emitOpError("convert-attn-tiles-to-simt: the "
                                "cooperative-matrix mapping needs a p_type "
                                "(P's tile for P.V)");
  } else {
    rows = mapping.getRows();
    lanes = mapping.getLanes();
    unroll = mapping.getUnroll();
    invocations = rows * lanes;
  }
  if (tiling.getStaticTiles())
    return forall.emitOpError("convert-attn-tiles-to-simt: the SIMT mapping "
                              "takes dynamic tail tiles (no static_tiles)");
  if (br > rows)
    return forall.emitOpError("convert-attn-tiles-to-simt: block_q ")
           << br << " is more than the mapping's " << rows << " rows";
  if (lanes > 1 && !unroll && !coop)
    return forall.emitOpError("convert-attn-tiles-to-simt: a subgroup per "
                              "row needs unroll (P.V runs in the key loop)");

  // The tile's rows: the Q slice's.
  Value qTile, kSource;
  forall.getBody()->walk([&](linalg::GenericOp g) {
    if (classifyTileOp(g) != TileOpKind::Contraction || !rhsTransposed(g))
      return;
    qTile = g.getDpsInputs()[0];
    if (auto k = g.getDpsInputs()[1].getDefiningOp<tensor::ExtractSliceOp>())
      kSource = k.getSource();
  });
  auto qSlice = qTile ? qTile.getDefiningOp<tensor::ExtractSliceOp>()
                      : tensor::ExtractSliceOp();
  if (!qSlice || !src.buffers.count(qSlice.getSource()))
    return forall.emitOpError("convert-attn-tiles-to-simt: expected Q.K^T "
                              "of a slice of Q in the tile");
  const int64_t qWidth =
      cast<RankedTensorType>(qTile.getType()).getDimSize(1);

  // The K and V tiles' workgroup memory, one buffer per function tensor
  // staged (each key loop stages into the same one).
  SmallVector<std::pair<Value, MemRefType>> buffers;
  llvm::MapVector<Value, SmallVector<tensor::ExtractSliceOp>> slicesOf;
  forall.getBody()->walk([&](linalg::GenericOp g) {
    if (classifyTileOp(g) != TileOpKind::Contraction)
      return;
    Value rhs = g.getDpsInputs()[1];
    if (auto slice = rhs.getDefiningOp<tensor::ExtractSliceOp>())
      slicesOf[slice.getSource()].push_back(slice);
  });
  // Registers: Q's matrices are read once, before the first key block is
  // staged, so Q's tile is staged into K's (max(block_q, block_kv) rows),
  // in its form: K through a vector view only if Q has one too. (A Q that
  // is also K or V keeps a tile of its own.)
  qInK = regs && !coop.getScalar() && kSource && slicesOf.count(kSource) &&
         !slicesOf.count(qSlice.getSource());
  const bool qVectors =
      qInK && makeVectorView(qSlice.getSource(), qWidth, brPad, {qSlice});
  for (auto &[source, slices] : slicesOf) {
    auto ty = cast<RankedTensorType>(slices.front().getResult().getType());
    const int64_t width = ty.getDimSize(1);
    const bool holdsQ = qInK && source == kSource;
    const int64_t tileRows =
        !coop ? bc : holdsQ ? std::max(bcPad, brPad) : bcPad;
    // Registers: through a vector view where the buffer allows (the
    // workgroup tile then of its vectors).
    if (regs && !coop.getScalar() && (!holdsQ || qVectors) &&
        makeVectorView(source, width, bcPad, slices)) {
      const VectorView &vv = vectorViews.find(source)->second;
      Type vty = cast<MemRefType>(vv.memref.getType()).getElementType();
      buffers.push_back(
          {source, MemRefType::get({tileRows, width / vv.per +
                                                  kCoopMatrixPad16 / vv.per},
                                   vty, MemRefLayoutAttrInterface{},
                                   workgroupSpace())});
      continue;
    }
    if (holdsQ && qVectors) {
      // (K without a view: Q staged element by element, as K is.)
      vectorViews.find(qSlice.getSource())->second.memref.getDefiningOp()
          ->erase();
      vectorViews.erase(qSlice.getSource());
    }
    // Cooperative matrices: rows padded against bank conflicts.
    int64_t pad = coop ? kCoopMatrixPad16 : 0;
    buffers.push_back(
        {source, MemRefType::get({tileRows, width + pad}, ty.getElementType(),
                                 MemRefLayoutAttrInterface{},
                                 workgroupSpace())});
  }

  // The grid: x = query blocks, y = heads (x chunks), z = batch. The
  // query blocks as ceildiv(Sq, block_q) in unsigned arithmetic (what a
  // runtime evaluates for a launch of dynamic sizes).
  auto ubs = forall.getMixedUpperBound();
  auto host = [&](OpFoldResult o) {
    return getValueOrCreateConstantIndexOp(b, loc, o);
  };
  int64_t qRowDim = 0;
  {
    llvm::SmallBitVector dropped = qSlice.getDroppedDims();
    while (dropped.test(qRowDim))
      ++qRowDim;
  }
  Value qMem = src.buffers.lookup(qSlice.getSource());
  // Packed decode (pack_heads): q, out and lse are [B, Hq, 1, ...] seen as
  // [B, Hkv, group, ...]; the forall's heads are the K/V heads, a tile's
  // rows the group's query heads.
  const bool packed = src.packedViews.contains(qSlice.getSource());
  if (packed != tiling.getPackHeads() || (packed && qRowDim != 2))
    return forall.emitOpError("convert-attn-tiles-to-simt: expected "
                              "pack_heads to read Q ([B, Hq, 1, D]) through "
                              "its [B, Hkv, group, D] view");
  Value qRows = memref::DimOp::create(b, loc, qMem, qRowDim);
  if (packed)
    qRows = arith::DivUIOp::create(
        b, loc, memref::DimOp::create(b, loc, qMem, 1), host(ubs[1]));
  Value gx = arith::CeilDivUIOp::create(b, loc, qRows, idx(br));
  Value gy = host(ubs[1]), gz = host(ubs[0]);
  if (partial)
    gy = arith::MulIOp::create(b, loc, gy, host(ubs[3]));
  Value one = idx(1);
  SmallVector<Type> attributions;
  if (!spirv)
    for (auto &[s, t] : buffers)
      attributions.push_back(t);
  auto launch = gpu::LaunchOp::create(
      b, loc, gx, gy, gz, idx(invocations), one, one,
      /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
      /*asyncDependencies=*/{}, attributions, /*privateAttributions=*/{},
      nullptr, nullptr, nullptr, module, function);
  LaunchInfo info;
  info.packed = packed;
  info.blockQ = br;
  info.blockKv = bc;
  info.splits = partial;
  info.when = launchWhen(forall);
  markLaunch(launch, info);
  OpBuilder::InsertionGuard guard(b);
  entry = &launch.getBody().front();
  b.setInsertionPointToEnd(entry);
  for (auto [i, bt] : llvm::enumerate(buffers)) {
    Value buf = spirv ? Value(memref::AllocOp::create(b, loc, bt.second))
                      : Value(launch.getWorkgroupAttributions()[i]);
    stagingBuffers[bt.first] = buf;
  }
  if (coop) {
    // Q, S, P and the accumulator's tiles.
    auto tileOf = [&](int64_t cols, Type elt) -> Value {
      return memref::AllocOp::create(
          b, loc,
          MemRefType::get({brPad, cols}, elt, MemRefLayoutAttrInterface{},
                          workgroupSpace()));
    };
    auto qTy = cast<RankedTensorType>(qTile.getType());
    int64_t dv = 0;
    forall.getBody()->walk([&](linalg::GenericOp g) {
      if (classifyTileOp(g) == TileOpKind::Contraction && !rhsTransposed(g))
        dv = cast<RankedTensorType>(g.getResult(0).getType()).getDimSize(1);
    });
    Type f32 = b.getF32Type();
    qBuf = qInK ? stagingBuffers.lookup(kSource)
                : tileOf(qTy.getDimSize(1) + kCoopMatrixPad16,
                         qTy.getElementType());
    pBuf = tileOf(bcPad + kCoopMatrixPad16, tiling.getPType());
    if (regs) {
      // The accumulator reaches workgroup memory only after the key loops,
      // into the scores' tile, block_kv columns at a time; the rows'
      // rescale factors, each row's repeated over 16 columns (a matrix of
      // them).
      sBuf = tileOf(bcPad + kCoopMatrixPadF32, f32);
      accBuf = sBuf;
      scaleBuf = tileOf(16, f32);
    } else {
      sBuf = tileOf(bcPad + kCoopMatrixPadF32, f32);
      accBuf = tileOf(dv + kCoopMatrixPadF32, f32);
    }
  }

  // The function's tensors as memrefs in the kernel; the forall's outputs
  // as their destinations (packed: through the views, in their reshape
  // form for SPIR-V's logical addressing).
  mapKernelTensors(b, loc, src, forall, qSlice.getSource(),
                   [&] { return value(ubs[1]); }, map, /*reshape=*/spirv);

  // The invocation's place: its row (thread, or subgroup: Vulkan does not
  // tie subgroups to ranges of the invocation index) and lane.
  tid = launch.getThreadIds().x;
  if (regs) {
    // Subgroup s's lanes 0 .. 16 x lanes x strips - 1: rows
    // 16 strips s + lane / lanes.
    Value sg = gpu::SubgroupIdOp::create(b, loc,
                                         b.getIndexAttr(subgroupCount()));
    Value laneId =
        gpu::LaneIdOp::create(b, loc, b.getIndexAttr(subgroupWidth()));
    strip0 = mul(sg, idx(16 * strips));
    lane = arith::RemUIOp::create(b, loc, laneId, idx(lanes));
    row = add(strip0, arith::DivUIOp::create(b, loc, laneId, idx(lanes)));
  } else if (lanes > 1) {
    lane = gpu::LaneIdOp::create(b, loc, b.getIndexAttr(lanes));
    row = gpu::SubgroupIdOp::create(b, loc,
                                    b.getIndexAttr(invocations / lanes));
  } else {
    row = tid;
  }
  auto ivs = forall.getInductionVars();
  Value h = launch.getBlockIds().y;
  if (partial) {
    Value ws = src.destinations[forall.getResult(1)];
    splits = memref::DimOp::create(b, loc, ws, 2);
    split = arith::RemUIOp::create(b, loc, h, splits);
    h = arith::DivUIOp::create(b, loc, h, splits);
    map.map(ivs[3], split);
  }
  map.map(ivs[0], launch.getBlockIds().z);
  map.map(ivs[1], h);
  map.map(ivs[2], launch.getBlockIds().x);

  // (The tile's size is an index computation of the forall's body.)
  Block &body = *forall.getBody();
  for (Operation &op : body.without_terminator())
    if (op.getNumRegions() == 0 &&
        llvm::none_of(op.getOperandTypes(), llvm::IsaPred<ShapedType>) &&
        llvm::none_of(op.getResultTypes(), llvm::IsaPred<ShapedType>))
      deferred.insert(&op);
  rowValid = ult(row, value(extentOf(qTile, 0)));

  // The tile's ops up to its last key loop; the rest (the finalize and the
  // stores) only for the rows the tile has: the lanes of a row reach the
  // finalize's subgroup reductions together, in divergent control flow.
  Operation *lastLoop = nullptr;
  for (Operation &op : body.without_terminator())
    if (isa<scf::ForOp>(op))
      lastLoop = &op;
  if (!lastLoop)
    return forall.emitOpError("convert-attn-tiles-to-simt: expected a key "
                              "loop in the tile");
  for (Operation &op : body.without_terminator()) {
    if (handled.contains(&op))
      continue;
    if (failed(emitOp(op)))
      return failure();
    if (&op == lastLoop)
      break;
  }
  // An accumulator in registers reaches workgroup memory for the finalize
  // through S's tile, as many of its columns at a time as the tile has:
  // each subgroup's matrices into its strips' rows, which the subgroup's
  // own lanes finalize and store before the next columns overwrite them.
  SmallVector<Value> frags;
  for (Value r : lastLoop->getResults()) {
    Tile &t = tiles[r];
    if (t.kind != Tile::Acc || t.frags.empty())
      continue;
    if (!frags.empty())
      return forall.emitOpError("convert-attn-tiles-to-simt: more than one "
                                "accumulator in cooperative-matrix registers");
    frags.assign(t.frags.begin(), t.frags.end());
    t.frags.clear();
  }
  // (S's tile: block_kv columns, bcPad / 16 matrices, and padding; the
  // fragments strip-major.)
  const int64_t perChunk = bcPad / 16;
  const int64_t perStrip = frags.size() / strips;
  const int64_t chunks =
      frags.empty() ? 1 : llvm::divideCeil(perStrip, perChunk);
  const int64_t ld =
      frags.empty() ? 0 : cast<MemRefType>(accBuf.getType()).getDimSize(1);
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t cols = ShapedType::kDynamic;
    if (!frags.empty()) {
      if (c > 0)
        subgroupBarrier();
      const int64_t first = c * perChunk,
                    last = std::min<int64_t>(perStrip, first + perChunk);
      for (int64_t s = 0; s < strips; ++s)
        for (int64_t j = first; j < last; ++j)
          gpu::SubgroupMmaStoreMatrixOp::create(
              b, loc, frags[s * perStrip + j], accBuf,
              ValueRange{stripRow(s), idx(16 * (j - first))},
              b.getIndexAttr(ld), UnitAttr());
      subgroupBarrier();
      cols = 16 * (last - first);
      accColumn0 = 16 * first;
    }
    LogicalResult status = success();
    SmallVector<linalg::GenericOp> pendingBefore = pending;
    when(rowValid, [&] {
      for (Operation *op = lastLoop->getNextNode();
           op != body.getTerminator(); op = op->getNextNode())
        if (!handled.contains(op) && failed(emitOp(*op))) {
          status = failure();
          return;
        }
      status = emitStores(cast<scf::InParallelOp>(body.getTerminator()),
                          /*rowVectors=*/c == 0, accColumn0, cols);
    });
    pending = pendingBefore;
    accColumn0 = 0;
    if (failed(status))
      return failure();
  }
  gpu::TerminatorOp::create(b, loc);
  return success();
}

struct ConvertAttnTilesToSIMTPass
    : mlir::attn::impl::ConvertAttnTilesToSIMTPassBase<
          ConvertAttnTilesToSIMTPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<func::FuncOp> funcs(getOperation().getOps<func::FuncOp>());
    for (func::FuncOp fn : funcs) {
      SmallVector<TiledKernelSource> sources;
      if (failed(collectTiledKernels(
              fn,
              [](TilingAttr t) {
                return isa_and_nonnull<SimtAttr, CoopMatrixAttr>(
                    t.getMapping());
              },
              sources)))
        return signalPassFailure();
      for (TiledKernelSource &src : sources)
        if (failed(convert(src)))
          return signalPassFailure();
    }
  }

  LogicalResult convert(TiledKernelSource &src) {
    if (spirv && failed(checkSPIRVBufferArguments(
                     src.func, "convert-attn-tiles-to-simt")))
      return failure();
    OpBuilder b(src.main);
    // Every kernel of a function in one gpu.module ("<fn>_kernels"), named
    // after the function, unique among the kernels already there.
    MLIRContext *ctx = &getContext();
    std::string fn = src.func.getName().str();
    auto launches = src.func->getAttrOfType<DictionaryAttr>(kLaunchesAttrName);
    std::string moduleName = fn + "_kernels";
    auto taken = [&](const std::string &name) {
      return launches && launches.get(launchKey(moduleName, name));
    };
    auto free = [&](const std::string &b) {
      return src.merge ? !taken(b + "_split_kv") && !taken(b + "_split_kv_merge")
                       : !taken(b);
    };
    std::string base = fn;
    for (int64_t i = 1; !free(base); ++i)
      base = fn + "_" + std::to_string(i);
    auto module = FlatSymbolRefAttr::get(ctx, moduleName);
    auto mainName =
        FlatSymbolRefAttr::get(ctx, src.merge ? base + "_split_kv" : base);
    auto mergeName = FlatSymbolRefAttr::get(ctx, base + "_split_kv_merge");
    SimtKernel kernel(b, src, spirv);
    if (failed(kernel.build(module, mainName)))
      return failure();
    if (src.merge) {
      b.setInsertionPoint(src.merge);
      if (failed(buildMergeKernel(
              b, src, module, mergeName, /*reshapeViews=*/spirv,
              /*chunkUnroll=*/spirv ? kSplitKVMergeUnrollSPIRV : 1)))
        return failure();
    }
    finishTiledKernels(src);
    return success();
  }
};
} // namespace
