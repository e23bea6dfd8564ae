//===- TileSdpa.cpp - attn.sdpa to FlashAttention-2 tiles (L0 -> L1) ------===//
//
// Rewrites attn.sdpa into scf.forall tiles over (B, Hq, query blocks[, KV
// chunks]) whose bodies run scf.for loops over key blocks folding each block
// into the running (acc, max, sum) state with attn.online_attention. The
// tiling decisions (#attn.tiling) come from the op or the pass options and
// are recorded on every forall. docs/FlashAttentionRewrite.md describes the
// structure and its invariants.
//
//===----------------------------------------------------------------------===//
#include "attn/Dialect/Attn/IR/AttnAttrs.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Dialect/Attn/Transforms/Passes.h"
#include "attn/Dialect/Attn/Transforms/Transforms.h"
#include "attn/runtime/KeyChunks.h"
#include "attn/runtime/PackedDecode.h"
#include "attn/runtime/LaunchCondition.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"

#include <functional>
#include <limits>
#include <thread>

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNTILESDPAPASS
#include "attn/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {
/// Index arithmetic that folds to constants when the shapes are static, so
/// static shapes keep static tile types.
struct IndexMath {
  OpBuilder &b;
  Location loc;

  OpFoldResult c(int64_t v) { return b.getIndexAttr(v); }
  Value val(OpFoldResult v) {
    return getValueOrCreateConstantIndexOp(b, loc, v);
  }
  /// Applies `fn(s0, s1, ...)` to `operands` (all bound as symbols).
  OpFoldResult apply(ArrayRef<OpFoldResult> operands,
                     function_ref<AffineExpr(ArrayRef<AffineExpr>)> fn) {
    SmallVector<AffineExpr> syms;
    for (unsigned i = 0; i < operands.size(); ++i)
      syms.push_back(getAffineSymbolExpr(i, b.getContext()));
    AffineMap map = AffineMap::get(0, operands.size(), fn(syms));
    return affine::makeComposedFoldedAffineApply(b, loc, map, operands);
  }
  /// min or max over `fn(s0, s1, ...)`'s results, one affine op (no dead
  /// intermediate applies).
  OpFoldResult minmax(ArrayRef<OpFoldResult> operands, bool isMin,
                      function_ref<SmallVector<AffineExpr>(ArrayRef<AffineExpr>)>
                          fn) {
    SmallVector<AffineExpr> syms;
    for (unsigned i = 0; i < operands.size(); ++i)
      syms.push_back(getAffineSymbolExpr(i, b.getContext()));
    AffineMap map =
        AffineMap::get(0, operands.size(), fn(syms), b.getContext());
    return isMin ? affine::makeComposedFoldedAffineMin(b, loc, map, operands)
                 : affine::makeComposedFoldedAffineMax(b, loc, map, operands);
  }
  OpFoldResult min(ArrayRef<OpFoldResult> ops) {
    return minmax(ops, true, [](ArrayRef<AffineExpr> s) {
      return SmallVector<AffineExpr>(s.begin(), s.end());
    });
  }
  OpFoldResult max(ArrayRef<OpFoldResult> ops) {
    return minmax(ops, false, [](ArrayRef<AffineExpr> s) {
      return SmallVector<AffineExpr>(s.begin(), s.end());
    });
  }
  /// clamp(sum(operands) + cst, 0, hi).
  OpFoldResult clampSum(ArrayRef<OpFoldResult> operands, int64_t cst,
                        OpFoldResult hi) {
    OpFoldResult lower = minmax(operands, false, [&](ArrayRef<AffineExpr> s) {
      AffineExpr e = getAffineConstantExpr(cst, b.getContext());
      for (AffineExpr x : s)
        e = e + x;
      return SmallVector<AffineExpr>{e, getAffineConstantExpr(0, b.getContext())};
    });
    return min({lower, hi});
  }
  OpFoldResult ceilDiv(OpFoldResult x, int64_t d) {
    return apply({x}, [&](ArrayRef<AffineExpr> s) { return s[0].ceilDiv(d); });
  }
  OpFoldResult floorDiv(OpFoldResult x, int64_t d) {
    return apply({x}, [&](ArrayRef<AffineExpr> s) { return s[0].floorDiv(d); });
  }
  OpFoldResult mul(OpFoldResult x, int64_t d) {
    return apply({x}, [&](ArrayRef<AffineExpr> s) { return s[0] * d; });
  }
  /// min(block, extent - offset): the size of the tile starting at `offset`.
  /// Static when the extent is a static multiple of the block.
  OpFoldResult tileSize(int64_t block, OpFoldResult offset,
                        OpFoldResult extent) {
    if (auto e = getConstantIntValue(extent); e && *e % block == 0)
      return c(block);
    return minmax({extent, offset}, true, [&](ArrayRef<AffineExpr> s) {
      return SmallVector<AffineExpr>{getAffineConstantExpr(block, b.getContext()),
                                     s[0] - s[1]};
    });
  }
};

int64_t staticOr(OpFoldResult v) {
  return getConstantIntValue(v).value_or(ShapedType::kDynamic);
}

/// Everything the tile bodies need from the op, computed once outside the
/// loops.
struct SdpaInfo {
  SdpaOp op;
  TilingAttr tiling;
  Value q, k, v, mask, seed;
  Type elt;
  OpFoldResult batch, hq, sq, hkv, skv;
  int64_t d, dv;
  int64_t br, bc;
  bool causal;
  bool staticTiles, packHeads;
  FloatAttr scale, dropout, rescale;
  TypeAttr pType;
  OpFoldResult diag;  // Skv - Sq
  OpFoldResult group; // Hq / Hkv (GQA), a constant when both are static
  /// Rows of the (possibly packed) query view: Sq, or Group x Sq packed.
  OpFoldResult rows;
};

/// The running state of one query tile.
struct State {
  Value acc, max, sum;
};

class SdpaTiler {
public:
  SdpaTiler(RewriterBase &rw, SdpaInfo &info) : rw(rw), info(info) {}

  /// Builds the initial state (acc 0, max -inf, sum 0) for `rows` rows.
  State initState(Location loc, OpFoldResult rows) {
    Type f32 = rw.getF32Type();
    auto fill = [&](ArrayRef<OpFoldResult> shape, double v) -> Value {
      Value e = tensor::EmptyOp::create(rw, loc, shape, f32);
      Value cst = arith::ConstantOp::create(rw, loc, f32,
                                            rw.getF32FloatAttr(v));
      return linalg::FillOp::create(rw, loc, ValueRange{cst}, ValueRange{e})
          .getResult(0);
    };
    return {fill({rows, rw.getIndexAttr(info.dv)}, 0.0),
            fill({rows}, -std::numeric_limits<double>::infinity()),
            fill({rows}, 0.0)};
  }

  /// Index of a broadcastable mask dimension: 0 when its size is 1.
  Value maskIndex(Location loc, unsigned dim, Value idx) {
    auto mTy = cast<RankedTensorType>(info.mask.getType());
    int64_t s = mTy.getDimSize(dim);
    Value zero = arith::ConstantIndexOp::create(rw, loc, 0);
    if (s == 1)
      return zero;
    if (!ShapedType::isDynamic(s))
      return idx;
    Value size = tensor::DimOp::create(rw, loc, info.mask, dim);
    Value one = arith::ConstantIndexOp::create(rw, loc, 1);
    Value isOne = arith::CmpIOp::create(rw, loc, arith::CmpIPredicate::eq,
                                        size, one);
    return arith::SelectOp::create(rw, loc, isOne, zero, idx);
  }

  /// The [rows, cols] tile of a rank-4 tensor at (i0, i1, off, col0), padded
  /// to [padRows, padCols] when those are given (static tiles) and larger.
  /// The padding is `padValue`: zeros for Q, K and V (a padded row of V
  /// meets P = 0, and 0 x anything finite is 0), poison for the mask (the
  /// keys and rows it pads are masked or never written).
  Value tile(Location loc, Value src, ArrayRef<OpFoldResult> offsets,
             OpFoldResult rows, OpFoldResult cols, int64_t padRows,
             int64_t padCols, function_ref<Value()> padValue) {
    auto srcTy = cast<RankedTensorType>(src.getType());
    auto ty = RankedTensorType::get({staticOr(rows), staticOr(cols)},
                                    srcTy.getElementType());
    OpFoldResult one = rw.getIndexAttr(1);
    Value t = tensor::ExtractSliceOp::create(
        rw, loc, ty, src, offsets, ArrayRef<OpFoldResult>{one, one, rows, cols},
        ArrayRef<OpFoldResult>{one, one, one, one});
    if (padRows < 0 || (ty.getDimSize(0) == padRows && ty.getDimSize(1) == padCols))
      return t;
    IndexMath m{rw, loc};
    auto padTy =
        RankedTensorType::get({padRows, padCols}, srcTy.getElementType());
    OpFoldResult zero = rw.getIndexAttr(0);
    SmallVector<OpFoldResult> high{
        m.apply({rows}, [&](ArrayRef<AffineExpr> s) { return padRows - s[0]; }),
        m.apply({cols}, [&](ArrayRef<AffineExpr> s) { return padCols - s[0]; })};
    return tensor::PadOp::create(rw, loc, padTy, t,
                                 ArrayRef<OpFoldResult>{zero, zero}, high,
                                 padValue());
  }

  std::function<Value()> zeroOf(Location loc, Type elt) {
    return [this, loc, elt] {
      return arith::ConstantOp::create(rw, loc, elt, rw.getZeroAttr(elt))
          .getResult();
    };
  }

  /// How the blocks of one key loop are masked.
  enum class Edge {
    None,  // every key of every block is visible to every row of the tile
    Tail,  // static tiles: the last block may run past Skv (kv_bound)
    Causal // blocks straddling the diagonal (and, static, the tail)
  };

  /// Emits `scf.for %jb = lo to hi` over key blocks, folding each into the
  /// state.
  State keyLoop(Location loc, Value b, Value h, Value hkv, Value qTile,
                OpFoldResult i0, OpFoldResult rows, OpFoldResult lo,
                OpFoldResult hi, Edge edge, State init) {
    IndexMath m{rw, loc};
    Value lb = m.val(lo), ub = m.val(hi);
    Value step = arith::ConstantIndexOp::create(rw, loc, 1);
    auto loop = scf::ForOp::create(rw, loc, lb, ub, step,
                                   ValueRange{init.acc, init.max, init.sum});
    // The body is built after the loop exists: folding index math needs the
    // induction variable to have a parent op.
    OpBuilder::InsertionGuard g(rw);
    rw.setInsertionPointToStart(loop.getBody());
    Value jb = loop.getInductionVar();
    ValueRange iter = loop.getRegionIterArgs();
    IndexMath mm{rw, loc};
    OpFoldResult j0 = mm.mul(jb, info.bc);
    // Static tiles: blocks of the unmasked loop are whole by construction;
    // others are [min(Bc, Skv - j0)] keys padded to Bc.
    OpFoldResult cols = info.staticTiles && edge == Edge::None
                            ? rw.getIndexAttr(info.bc)
                            : mm.tileSize(info.bc, j0, info.skv);
    OpFoldResult zero = rw.getIndexAttr(0);
    int64_t padKv = info.staticTiles ? info.bc : -1;
    Value kTile = tile(loc, info.k, {b, hkv, j0, zero}, cols,
                       rw.getIndexAttr(info.d), padKv, info.d,
                       zeroOf(loc, info.elt));
    Value vTile = tile(loc, info.v, {b, hkv, j0, zero}, cols,
                       rw.getIndexAttr(info.dv), padKv, info.dv,
                       zeroOf(loc, info.elt));
    Value maskTile;
    if (info.mask) {
      Value mb = maskIndex(loc, 0, b), mh = maskIndex(loc, 1, h);
      Type mElt = cast<RankedTensorType>(info.mask.getType()).getElementType();
      maskTile = tile(loc, info.mask, {mb, mh, i0, j0}, rows, cols,
                      info.staticTiles ? info.br : -1, info.bc, [&] {
                        return ub::PoisonOp::create(rw, loc, mElt).getResult();
                      });
    }
    Value bound = info.staticTiles && edge != Edge::None ? mm.val(info.skv)
                                                         : Value();
    Value diag = edge == Edge::Causal ? mm.val(info.diag) : Value();
    Value packed = info.packHeads ? mm.val(info.sq) : Value();
    auto stepOp = OnlineAttentionOp::create(
        rw, loc, iter[0].getType(), iter[1].getType(), iter[2].getType(),
        qTile, kTile, vTile, maskTile, iter[0], iter[1], iter[2], b, h,
        mm.val(i0), mm.val(j0), bound, diag, packed,
        info.dropout ? info.seed : Value(), info.scale, info.rescale,
        info.pType, info.dropout);
    if (loop.getBody()->mightHaveTerminator())
      rw.eraseOp(loop.getBody()->getTerminator());
    rw.setInsertionPointToEnd(loop.getBody());
    scf::YieldOp::create(rw, loc, stepOp.getResults());
    return {loop.getResult(0), loop.getResult(1), loop.getResult(2)};
  }

  /// The key blocks query tile `i0` (of `rows` rows) visits: all of them,
  /// or with causal those up to its last row's diagonal.
  OpFoldResult visitedBlocks(Location loc, OpFoldResult i0, OpFoldResult rows) {
    IndexMath m{rw, loc};
    if (!info.causal)
      return m.ceilDiv(info.skv, info.bc);
    // Last key any row of the tile sees is i0 + rows - 1 + diag.
    OpFoldResult visitEnd = m.clampSum({i0, rows, info.diag}, 0, info.skv);
    return m.ceilDiv(visitEnd, info.bc);
  }

  /// The state of query tile (b, h, i0) over key blocks [lo, hi) (within
  /// the blocks it visits), split into the blocks every row of the tile
  /// sees whole (no mask but an explicit one) and the rest (the diagonal,
  /// and with static tiles the tail past Skv).
  State tileState(Location loc, Value b, Value h, Value hkv, Value qTile,
                  OpFoldResult i0, OpFoldResult rows, OpFoldResult lo,
                  OpFoldResult hi, bool wholeRange) {
    IndexMath m{rw, loc};
    State st = initState(loc, info.staticTiles ? rw.getIndexAttr(info.br)
                                               : rows);
    auto skvC = getConstantIntValue(info.skv);
    bool dividesSkv = skvC && *skvC % info.bc == 0;
    if (!info.causal && (!info.staticTiles || dividesSkv))
      return keyLoop(loc, b, h, hkv, qTile, i0, rows, lo, hi, Edge::None, st);

    // The keys every row of the tile sees: [0, limit), limit = Skv, or with
    // causal min(Skv, i0 + diag + 1) (the first row's diagonal).
    OpFoldResult limit =
        info.causal ? m.clampSum({i0, info.diag}, 1, info.skv) : info.skv;
    OpFoldResult nWhole = m.floorDiv(limit, info.bc);
    if (!info.staticTiles && !dividesSkv) {
      // A partial last block of dynamic size is whole once every key is
      // visible.
      Value isAll = arith::CmpIOp::create(rw, loc, arith::CmpIPredicate::eq,
                                          m.val(limit), m.val(info.skv));
      nWhole = arith::SelectOp::create(
                   rw, loc, isAll, m.val(m.ceilDiv(info.skv, info.bc)),
                   m.val(nWhole))
                   .getResult();
    }
    // (Over the whole visited range, nWhole <= hi already: the first row
    // sees no more keys than the last.)
    OpFoldResult mid = wholeRange ? nWhole : m.max({lo, m.min({nWhole, hi})});
    st = keyLoop(loc, b, h, hkv, qTile, i0, rows, lo, mid, Edge::None, st);
    return keyLoop(loc, b, h, hkv, qTile, i0, rows, mid, hi,
                   info.causal ? Edge::Causal : Edge::Tail, st);
  }

private:
  RewriterBase &rw;
  SdpaInfo &info;
};

int64_t autoKvSplits(const SdpaInfo &info, int64_t parallelism) {
  // Packed heads: the tiles run over (B, Hkv, the group's rows).
  auto b = getConstantIntValue(info.batch),
       hq = getConstantIntValue(info.packHeads ? info.hkv : info.hq),
       sq = getConstantIntValue(info.rows), skv = getConstantIntValue(info.skv);
  if (!b || !hq || !sq || !skv)
    return 1;
  return chooseKvSplits(*b, *hq, *sq, *skv, info.br, info.bc, parallelism);
}

/// t ([B, Hq, S, ...]) seen as [B, Hkv, Group x S, ...] (expand Hq into
/// (Hkv, Group), collapse (Group, S)), and back.
Value packRows(OpBuilder &b, Location loc, Value t, const SdpaInfo &info) {
  auto ty = cast<RankedTensorType>(t.getType());
  int64_t rank = ty.getRank();
  auto g = getConstantIntValue(info.group);
  auto hkv = getConstantIntValue(info.hkv);
  SmallVector<int64_t> expShape{ty.getDimSize(0), hkv.value_or(ShapedType::kDynamic),
                                g.value_or(ShapedType::kDynamic)};
  SmallVector<OpFoldResult> expSizes{tensor::getMixedSize(b, loc, t, 0),
                                     info.hkv, info.group};
  SmallVector<ReassociationIndices> expMap{{0}, {1, 2}};
  for (int64_t i = 2; i < rank; ++i) {
    expShape.push_back(ty.getDimSize(i));
    expSizes.push_back(tensor::getMixedSize(b, loc, t, i));
    expMap.push_back({i + 1});
  }
  auto expTy = RankedTensorType::get(expShape, ty.getElementType());
  Value e = tensor::ExpandShapeOp::create(b, loc, expTy, t, expMap, expSizes);
  SmallVector<ReassociationIndices> colMap{{0}, {1}, {2, 3}};
  for (int64_t i = 4; i < rank + 1; ++i)
    colMap.push_back({i});
  return tensor::CollapseShapeOp::create(b, loc, e, colMap);
}

Value unpackRows(OpBuilder &b, Location loc, Value t, RankedTensorType to,
                 const SdpaInfo &info) {
  auto ty = cast<RankedTensorType>(t.getType());
  int64_t rank = ty.getRank();
  auto g = getConstantIntValue(info.group);
  SmallVector<int64_t> expShape{ty.getDimSize(0), ty.getDimSize(1),
                                g.value_or(ShapedType::kDynamic),
                                to.getDimSize(2)};
  // Sizes from the sdpa, not from `t`: a tensor.dim of the tiled result
  // would be a second use of it (targets find the result's destination
  // through its single use).
  SmallVector<OpFoldResult> expSizes{info.batch, info.hkv, info.group,
                                     info.sq};
  SmallVector<ReassociationIndices> expMap{{0}, {1}, {2, 3}};
  for (int64_t i = 3; i < rank; ++i) {
    expShape.push_back(ty.getDimSize(i));
    expSizes.push_back(tensor::getMixedSize(b, loc, t, i));
    expMap.push_back({i + 1});
  }
  auto expTy = RankedTensorType::get(expShape, ty.getElementType());
  // A size known statically (from q, k) where the result's type has a
  // dynamic extent (a result typed more loosely than its operands) goes in
  // as a value: expand_shape takes a static size only for a static dim.
  // (And the other way: a static extent of the type is given as such.)
  for (auto [i, size] : llvm::enumerate(expSizes)) {
    if (!expTy.isDynamicDim(i))
      size = b.getIndexAttr(expTy.getDimSize(i));
    else if (std::optional<int64_t> c = getConstantIntValue(size))
      size = arith::ConstantIndexOp::create(b, loc, *c).getResult();
  }
  Value e = tensor::ExpandShapeOp::create(b, loc, expTy, t, expMap, expSizes);
  SmallVector<ReassociationIndices> colMap{{0}, {1, 2}};
  for (int64_t i = 3; i < rank + 1; ++i)
    colMap.push_back({i});
  return tensor::CollapseShapeOp::create(b, loc, to, e, colMap);
}
} // namespace

int64_t mlir::attn::chooseKvSplits(int64_t batch, int64_t headsQ,
                                   int64_t seqQ, int64_t seqKv, int64_t blockQ,
                                   int64_t blockKv, int64_t parallelism) {
  if (parallelism <= 0)
    parallelism = std::max<int64_t>(1, std::thread::hardware_concurrency());
  // Any extent the caller passes (a launch's, unchecked): no split for an
  // empty or invalid problem, and the tile count saturated instead of
  // overflowing (enough tiles means no split either).
  if (batch <= 0 || headsQ <= 0 || seqQ <= 0 || seqKv <= 0 || blockQ <= 0 ||
      blockKv <= 0)
    return 1;
  // Long key sequences split for accuracy whatever the parallelism.
  const int64_t floor = ::attn::minKvSplits(seqKv, blockKv);
  int64_t tiles = 0;
  if (__builtin_mul_overflow(batch, headsQ, &tiles) ||
      __builtin_mul_overflow(tiles, llvm::divideCeilSigned(seqQ, blockQ),
                             &tiles))
    return floor;
  int64_t maxByWork = seqKv / 4 / blockKv;
  if (tiles >= parallelism || maxByWork < 2)
    return floor;
  int64_t n = std::min(llvm::divideCeilSigned(parallelism, tiles), maxByWork);
  return std::max<int64_t>(n, floor);
}


std::pair<Value, Value> mlir::attn::splitKeyBlocks(OpBuilder &b, Location loc,
                                                   Value blocks, Value split,
                                                   Value splits) {
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value chunk = arith::DivUIOp::create(
      b, loc,
      arith::AddIOp::create(b, loc, blocks,
                            arith::SubIOp::create(b, loc, splits, one)),
      splits);
  Value begin = arith::MinUIOp::create(
      b, loc, arith::MulIOp::create(b, loc, split, chunk), blocks);
  Value end = arith::MinUIOp::create(
      b, loc, arith::AddIOp::create(b, loc, begin, chunk), blocks);
  return {begin, end};
}

TilingAttr mlir::attn::resolveTiling(SdpaOp op,
                                     const SdpaTilingOptions &options) {
  if (auto t = op.getTilingAttr())
    return t;
  RankedTensorType q = op.getQueryType(), k = op.getKeyType();
  if (options.packDecodeHeads &&
      // (A dynamic extent, ShapedType::kDynamic, is negative: no packing.)
      ::attn::packsDecodeHeads(q.getDimSize(1), q.getDimSize(2),
                               k.getDimSize(1), static_cast<bool>(op.getMask()),
                               op.getCausal()))
    return TilingAttr::get(op.getContext(), options.blockQ, options.blockKv,
                             options.kvSplits, /*launchSplits=*/false,
                             /*staticTiles=*/false, /*packHeads=*/true,
                             /*rescaleThreshold=*/0, Type(),
                             /*heaviestFirst=*/0, Attribute());
  return TilingAttr::get(op.getContext(), options.blockQ, options.blockKv,
                         options.kvSplits);
}

LogicalResult mlir::attn::tileSdpa(RewriterBase &rewriter, SdpaOp op,
                                   const SdpaTilingOptions &options) {
  TilingAttr tiling = resolveTiling(op, options);
  int64_t br = tiling.getBlockQ(), bc = tiling.getBlockKv(),
          splits = tiling.getKvSplits();
  if (br < 1 || bc < 1)
    return op.emitOpError() << "tile sizes must be positive, got block_q = "
                            << br << ", block_kv = " << bc;
  if (splits < 0)
    return op.emitOpError() << "kv_splits must be >= 0, got " << splits;

  Location loc = op.getLoc();
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  IndexMath m{rewriter, loc};

  SdpaInfo info;
  info.op = op;
  info.q = op.getQuery();
  info.k = op.getKey();
  info.v = op.getValue();
  info.mask = op.getMask();
  info.seed = op.getSeed();
  info.elt = op.getQueryType().getElementType();
  info.batch = tensor::getMixedSize(rewriter, loc, info.q, 0);
  info.hq = tensor::getMixedSize(rewriter, loc, info.q, 1);
  info.sq = tensor::getMixedSize(rewriter, loc, info.q, 2);
  info.hkv = tensor::getMixedSize(rewriter, loc, info.k, 1);
  info.skv = tensor::getMixedSize(rewriter, loc, info.k, 2);
  info.d = op.getQueryType().getDimSize(3);
  info.dv = op.getValueType().getDimSize(3);
  info.staticTiles = tiling.getStaticTiles();
  info.packHeads = tiling.getPackHeads();
  if (info.packHeads && info.mask)
    return op.emitOpError() << "pack_heads tiles rows over the heads of a GQA "
                               "group, which a mask would have to gather; "
                               "tile this op without it";
  std::optional<int64_t> packedSq = getConstantIntValue(info.sq);
  if (info.packHeads && (!packedSq || *packedSq < 1))
    return op.emitOpError() << "pack_heads needs a static query length "
                               "(decode steps)";
  if (info.packHeads && op.getCausal() && *packedSq != 1)
    return op.emitOpError()
           << "pack_heads with causal needs a query length of 1: the rows of "
              "a group's heads would each need their own diagonal";
  // One packed query row sees every key: causal changes nothing.
  info.causal = op.getCausal() && !info.packHeads;
  info.scale = rewriter.getF64FloatAttr(op.getEffectiveScale());
  info.dropout = op.getDropoutPAttr();
  if (info.dropout && info.dropout.getValueAsDouble() == 0.0)
    info.dropout = nullptr;
  if (tiling.getRescaleThreshold())
    info.rescale = rewriter.getF64FloatAttr(tiling.getRescaleThreshold());
  if (Type p = tiling.getPType(); p && !p.isF32())
    info.pType = TypeAttr::get(p);
  if (info.causal)
    info.diag = m.apply({info.skv, info.sq},
                        [](ArrayRef<AffineExpr> s) { return s[0] - s[1]; });
  auto hqC = getConstantIntValue(info.hq), hkvC = getConstantIntValue(info.hkv);
  if (hqC && hkvC) {
    if (*hkvC <= 0 || *hqC % *hkvC != 0)
      return op.emitOpError() << "query heads must be a multiple of key/value heads";
    info.group = rewriter.getIndexAttr(*hqC / *hkvC);
  } else {
    info.group = arith::DivUIOp::create(rewriter, loc, m.val(info.hq),
                                        m.val(info.hkv))
                     .getResult();
  }
  info.rows = info.packHeads
                  ? m.apply({info.group, info.sq},
                            [](ArrayRef<AffineExpr> s) { return s[0] * s[1]; })
                  : info.sq;
  // A tile larger than a static extent (the query rows, packed or not;
  // the keys) only makes the types dynamic (static tiles keep their
  // shape: the target maps it onto hardware).
  if (!info.staticTiles) {
    if (auto s = getConstantIntValue(info.rows); s && *s > 0)
      br = std::min(br, *s);
    if (auto s = getConstantIntValue(info.skv); s && *s > 0)
      bc = std::min(bc, *s);
  }
  info.br = br;
  info.bc = bc;

  if (splits == 0)
    splits = autoKvSplits(info, options.parallelism);
  OpFoldResult nTotal = m.ceilDiv(info.skv, bc);
  auto skvC = getConstantIntValue(info.skv);
  // Chunks of at most kMaxChunkKeys keys: the floor of every count. Not
  // for the unsplit alternative of a launch-time count, which a runtime
  // runs only where its count (floored alike) is 1. A dynamic key length
  // the target bounds (max-dynamic-kv) gets the floor of that bound, a
  // static count.
  bool unsplitAlternative = false;
  if (auto when = op->getAttrOfType<StringAttr>(kLaunchWhenAttrName)) {
    ::attn::LaunchCondition c;
    std::string why;
    unsplitAlternative =
        ::attn::LaunchCondition::parse(when.str(), c, why) &&
        c.splits == ::attn::LaunchCondition::Splits::Unsplit;
  }
  const bool boundedSkv = !skvC && options.maxDynamicKv > 0;
  std::optional<int64_t> longest =
      skvC ? skvC : boundedSkv ? std::optional<int64_t>(options.maxDynamicKv)
                               : std::nullopt;
  if (unsplitAlternative) {
    // (no floor)
  } else if (longest) {
    int64_t floor = ::attn::minKvSplits(*longest, bc);
    if (floor > 1 && !options.accuracySplits)
      return op.emitOpError()
             << "has " << (skvC ? "" : "up to ") << *longest
             << " keys; more than " << ::attn::kMaxChunkKeys
             << " need split-KV chunks for f32-accurate sums, which this "
                "pipeline does not build";
    splits = std::max(splits, floor);
  } else if (!options.accuracySplits) {
    return op.emitOpError()
           << "has a dynamic key length, which may need split-KV chunks of "
           << ::attn::kMaxChunkKeys
           << " keys for f32-accurate sums; this pipeline does not build them";
  }
  if (auto n = getConstantIntValue(nTotal))
    splits = std::max<int64_t>(1, std::min(splits, *n)); // no empty chunks
  // A runtime that chooses the count per launch also applies the floor
  // (a dynamic key length may need chunks even where 1 was asked for).
  // An unbounded dynamic key length, which the count must follow.
  const bool growsWithSkv = !skvC && !unsplitAlternative && !boundedSkv;
  const bool launchSplits =
      tiling.getLaunchSplits() && (splits > 1 || growsWithSkv);
  // Without a launch-time count, the count grows with the length:
  // max(splits, minKvSplits(Skv, Bc)) as index arithmetic.
  const bool keyLengthSplits = growsWithSkv && !launchSplits;
  // The decision actually taken, recorded on the foralls.
  TilingAttr taken = TilingAttr::get(
      op.getContext(), br, bc, splits, launchSplits, info.staticTiles,
      info.packHeads, tiling.getRescaleThreshold(), tiling.getPType(),
      tiling.getHeaviestFirst(), tiling.getMapping());

  // The tiled tensors: q, out and lse with rows over the heads of a group
  // when packed ([B, Hkv, Group x Sq, ...]), else as they are.
  Value qRows = info.packHeads ? packRows(rewriter, loc, info.q, info) : info.q;
  OpFoldResult heads = info.packHeads ? info.hkv : info.hq;
  OpFoldResult nQBlocks = m.ceilDiv(info.rows, br);

  auto outTy = cast<RankedTensorType>(op.getOut().getType());
  auto lseTy = op.getLse() ? cast<RankedTensorType>(op.getLse().getType())
                           : RankedTensorType();
  auto emptyOf = [&](RankedTensorType ty, ArrayRef<OpFoldResult> sizes) -> Value {
    SmallVector<Value> dyn;
    for (auto [i, s] : llvm::enumerate(ty.getShape()))
      if (ShapedType::isDynamic(s))
        dyn.push_back(m.val(sizes[i]));
    return tensor::EmptyOp::create(rewriter, loc, ty, dyn);
  };
  OpFoldResult dvAttr = rewriter.getIndexAttr(info.dv);
  SmallVector<Value> finalOuts{
      emptyOf(outTy, {info.batch, info.hq, info.sq, dvAttr})};
  if (lseTy)
    finalOuts.push_back(emptyOf(lseTy, {info.batch, info.hq, info.sq}));
  if (info.packHeads)
    for (Value &t : finalOuts)
      t = packRows(rewriter, loc, t, info);

  SdpaTiler tiler(rewriter, info);
  OpFoldResult zero = rewriter.getIndexAttr(0), one = rewriter.getIndexAttr(1);
  Type f32 = rewriter.getF32Type();

  // A forall over (B, heads, query blocks[, chunks]) with the tile's
  // coordinates: b, h (query head, or KV head when packed), its KV head,
  // i0 and rows.
  struct Tile {
    Value b, h, hkv, qTile;
    OpFoldResult i0, rows;
  };
  auto tileAt = [&](ValueRange ivs) {
    IndexMath mm{rewriter, loc};
    Tile t;
    t.b = ivs[0];
    t.h = ivs[1];
    if (info.packHeads) {
      t.hkv = ivs[1];
      // The packed rows' heads start at the group's first query head.
      t.h = mm.val(mm.apply({ivs[1], info.group}, [](ArrayRef<AffineExpr> s) {
        return s[0] * s[1];
      }));
    } else if (auto g = getConstantIntValue(info.group)) {
      t.hkv = mm.val(mm.apply(
          {ivs[1]}, [&](ArrayRef<AffineExpr> s) { return s[0].floorDiv(*g); }));
    } else {
      t.hkv = arith::DivUIOp::create(rewriter, loc, ivs[1], mm.val(info.group));
    }
    t.i0 = mm.mul(ivs[2], br);
    t.rows = mm.tileSize(br, t.i0, info.rows);
    t.qTile = tiler.tile(loc, qRows, {t.b, ivs[1], t.i0, zero}, t.rows,
                         rewriter.getIndexAttr(info.d),
                         info.staticTiles ? br : -1, info.d,
                         tiler.zeroOf(loc, info.elt));
    return t;
  };
  // Rows [0, rows) of a static tile (the padding is not written).
  auto validRows = [&](Value t, OpFoldResult rows) -> Value {
    auto ty = cast<RankedTensorType>(t.getType());
    if (ty.getDimSize(0) == staticOr(rows))
      return t;
    SmallVector<OpFoldResult> offs(ty.getRank(), zero), sizes, strides(ty.getRank(), one);
    sizes.push_back(rows);
    for (int64_t i = 1; i < ty.getRank(); ++i)
      sizes.push_back(rewriter.getIndexAttr(ty.getDimSize(i)));
    return tensor::ExtractSliceOp::create(rewriter, loc, t, offs, sizes,
                                          strides);
  };
  auto replaceWith = [&](scf::ForallOp forall) {
    SmallVector<Value> results(forall.getResults());
    if (info.packHeads) {
      results[0] = unpackRows(rewriter, loc, results[0], outTy, info);
      if (lseTy)
        results[1] = unpackRows(rewriter, loc, results[1], lseTy, info);
    }
    rewriter.replaceOp(op, results);
  };

  if (splits == 1 && !keyLengthSplits) {
    auto forall = scf::ForallOp::create(
        rewriter, loc, ArrayRef<OpFoldResult>{info.batch, heads, nQBlocks},
        finalOuts, std::nullopt);
    forall->setAttr(kTilingAttrName, taken);
    if (auto when = op->getAttr(kLaunchWhenAttrName))
      forall->setAttr(kLaunchWhenAttrName, when);
    rewriter.setInsertionPointToStart(forall.getBody());
    Tile t = tileAt(forall.getInductionVars());
    OpFoldResult nVisit = tiler.visitedBlocks(loc, t.i0, t.rows);
    State st = tiler.tileState(loc, t.b, t.h, t.hkv, t.qTile, t.i0, t.rows,
                               zero, nVisit, /*wholeRange=*/true);
    auto tileOutTy = RankedTensorType::get(
        {cast<RankedTensorType>(st.acc.getType()).getDimSize(0), info.dv},
        info.elt);
    Type tileLseTy = lseTy ? st.max.getType() : Type();
    auto fin = OnlineAttentionFinalizeOp::create(
        rewriter, loc, tileOutTy, tileLseTy, st.acc, st.max, st.sum,
        /*partial=*/false);
    Value outTile = validRows(fin.getOut(), t.rows);
    Value lseTile = lseTy ? validRows(fin.getLse(), t.rows) : Value();
    rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
    auto outArgs = forall.getRegionIterArgs();
    Value hIv = forall.getInductionVars()[1];
    tensor::ParallelInsertSliceOp::create(
        rewriter, loc, outTile, outArgs[0],
        ArrayRef<OpFoldResult>{t.b, hIv, t.i0, zero},
        ArrayRef<OpFoldResult>{one, one, t.rows, dvAttr},
        ArrayRef<OpFoldResult>{one, one, one, one});
    if (lseTy)
      tensor::ParallelInsertSliceOp::create(
          rewriter, loc, lseTile, outArgs[1],
          ArrayRef<OpFoldResult>{t.b, hIv, t.i0},
          ArrayRef<OpFoldResult>{one, one, t.rows},
          ArrayRef<OpFoldResult>{one, one, one});
    rewriter.setInsertionPointAfter(forall);
    replaceWith(forall);
    return success();
  }

  // Split-KV, phase 1: the partial results of N chunks of each tile's
  // visited key blocks, in parallel: O = acc / sum in f32 [B, heads, N,
  // rows, Dv], and the chunk's max and sum, by which the merge weighs it,
  // as one [B, heads, N, 2, rows] tensor (index 0 the max, 1 the sum: one
  // workspace, one kernel parameter, for both).
  // The count is a constant, or read from attn.kv_split_count where a
  // runtime chooses it per launch.
  // With a dynamic key length, the count that keeps chunks within
  // kMaxChunkKeys keys.
  Value nValue;
  if (launchSplits) {
    nValue = KvSplitCountOp::create(rewriter, loc, rewriter.getIndexType(),
                                    splits)
                 .getResult();
  } else if (keyLengthSplits) {
    // max(splits, ceil(Skv / (Bc * perChunk))) in unsigned arith, which
    // every host (the Vulkan launch's size expressions among them)
    // evaluates; equal to ceil(ceil(Skv / Bc) / perChunk).
    int64_t perChunk = std::max<int64_t>(1, ::attn::kMaxChunkKeys / bc);
    Value keys = arith::ConstantIndexOp::create(rewriter, loc, bc * perChunk);
    Value floor = arith::CeilDivUIOp::create(rewriter, loc, m.val(info.skv),
                                             keys);
    nValue = arith::MaxUIOp::create(
        rewriter, loc, floor,
        arith::ConstantIndexOp::create(rewriter, loc, splits));
  }
  // Read in the bodies from the partials' extent where it is not a
  // constant (launch-time or key-length counts).
  const bool dynamicN = static_cast<bool>(nValue);
  OpFoldResult nFold =
      dynamicN ? OpFoldResult(nValue) : rewriter.getIndexAttr(splits);
  const int64_t nStatic = dynamicN ? ShapedType::kDynamic : splits;
  auto partOutTy = RankedTensorType::get({staticOr(info.batch), staticOr(heads),
                                      nStatic, staticOr(info.rows), info.dv},
                                     f32);
  auto statsTy = RankedTensorType::get({staticOr(info.batch), staticOr(heads),
                                        nStatic, 2, staticOr(info.rows)},
                                       f32);
  OpFoldResult two = rewriter.getIndexAttr(2);
  SmallVector<Value> partOuts{
      emptyOf(partOutTy, {info.batch, heads, nFold, info.rows, dvAttr}),
      emptyOf(statsTy, {info.batch, heads, nFold, two, info.rows})};
  auto partial = scf::ForallOp::create(
      rewriter, loc,
      ArrayRef<OpFoldResult>{info.batch, heads, nQBlocks, nFold}, partOuts,
      std::nullopt);
  partial->setAttr(kTilingAttrName, taken);
  if (auto when = op->getAttr(kLaunchWhenAttrName))
    partial->setAttr(kLaunchWhenAttrName, when);
  {
    OpBuilder::InsertionGuard g(rewriter);
    rewriter.setInsertionPointToStart(partial.getBody());
    auto ivs = partial.getInductionVars();
    Tile t = tileAt(ivs);
    IndexMath mm{rewriter, loc};
    // Chunk s of N takes blocks [s * per, (s + 1) * per) of the tile's
    // visited blocks, per = ceil(visited / N): chunks of equal work
    // (causal tiles visit fewer blocks), the last ones possibly empty.
    // Read in the body from the partial results' extent, so that the count
    // is whatever they were sized with.
    Value n = dynamicN ? tensor::DimOp::create(rewriter, loc,
                                                   partial.getRegionIterArgs()[1], 2)
                                 .getResult()
                           : mm.val(nFold);
    Value nVisit = mm.val(tiler.visitedBlocks(loc, t.i0, t.rows));
    auto [lo, hi] = splitKeyBlocks(rewriter, loc, nVisit, ivs[3], n);
    State st = tiler.tileState(loc, t.b, t.h, t.hkv, t.qTile, t.i0, t.rows, lo,
                               hi, /*wholeRange=*/false);
    auto fin = OnlineAttentionFinalizeOp::create(
        rewriter, loc, st.acc.getType(), Type(), st.acc, st.max, st.sum,
        /*partial=*/true);
    Value oTile = validRows(fin.getOut(), t.rows);
    Value mTile = validRows(st.max, t.rows);
    Value sTile = validRows(st.sum, t.rows);
    rewriter.setInsertionPointToStart(partial.getTerminator().getBody());
    auto outArgs = partial.getRegionIterArgs();
    SmallVector<OpFoldResult> offs{t.b, ivs[1], ivs[3], t.i0, zero};
    SmallVector<OpFoldResult> sizes{one, one, one, t.rows, dvAttr};
    SmallVector<OpFoldResult> strides(5, one);
    tensor::ParallelInsertSliceOp::create(rewriter, loc, oTile, outArgs[0],
                                          offs, sizes, strides);
    for (auto [tile, index] : {std::make_pair(mTile, 0), std::make_pair(sTile, 1)})
      tensor::ParallelInsertSliceOp::create(
          rewriter, loc, tile, outArgs[1],
          ArrayRef<OpFoldResult>{t.b, ivs[1], ivs[3],
                                 rewriter.getIndexAttr(index), t.i0},
          ArrayRef<OpFoldResult>{one, one, one, one, t.rows}, strides);
  }

  // Phase 2 merges the N partial results of each query tile.
  auto merge = scf::ForallOp::create(
      rewriter, loc, ArrayRef<OpFoldResult>{info.batch, heads, nQBlocks},
      finalOuts, std::nullopt);
  merge->setAttr(kTilingAttrName, taken);
  if (auto when = op->getAttr(kLaunchWhenAttrName))
    merge->setAttr(kLaunchWhenAttrName, when);
  rewriter.setInsertionPointToStart(merge.getBody());
  IndexMath mm{rewriter, loc};
  auto ivs = merge.getInductionVars();
  OpFoldResult i0 = mm.mul(ivs[2], br);
  OpFoldResult rows = mm.tileSize(br, i0, info.rows);
  int64_t rowsS = staticOr(rows);
  int64_t nS = dynamicN ? ShapedType::kDynamic : splits;
  OpFoldResult nIn =
      dynamicN ? OpFoldResult(tensor::DimOp::create(
                                      rewriter, loc, partial.getResult(1), 2)
                                      .getResult())
                   : nFold;
  auto accTy = RankedTensorType::get({nS, rowsS, info.dv}, f32);
  auto vecTy = RankedTensorType::get({nS, rowsS}, f32);
  Value pOut = tensor::ExtractSliceOp::create(
      rewriter, loc, accTy, partial.getResult(0),
      ArrayRef<OpFoldResult>{ivs[0], ivs[1], zero, i0, zero},
      ArrayRef<OpFoldResult>{one, one, nIn, rows, dvAttr},
      SmallVector<OpFoldResult>(5, one));
  auto statOf = [&](int64_t index) -> Value {
    return tensor::ExtractSliceOp::create(
        rewriter, loc, vecTy, partial.getResult(1),
        ArrayRef<OpFoldResult>{ivs[0], ivs[1], zero,
                               rewriter.getIndexAttr(index), i0},
        ArrayRef<OpFoldResult>{one, one, nIn, one, rows},
        SmallVector<OpFoldResult>(5, one));
  };
  Value pMax = statOf(0), pSum = statOf(1);
  auto mergedOutTy = RankedTensorType::get({rowsS, info.dv}, info.elt);
  Type mergedLseTy = lseTy ? RankedTensorType::get({rowsS}, f32) : Type();
  auto merged = MergePartialsOp::create(rewriter, loc, mergedOutTy,
                                        mergedLseTy, pOut, pMax, pSum);
  rewriter.setInsertionPointToStart(merge.getTerminator().getBody());
  auto outArgs = merge.getRegionIterArgs();
  tensor::ParallelInsertSliceOp::create(
      rewriter, loc, merged.getOut(), outArgs[0],
      ArrayRef<OpFoldResult>{ivs[0], ivs[1], i0, zero},
      ArrayRef<OpFoldResult>{one, one, rows, dvAttr},
      ArrayRef<OpFoldResult>{one, one, one, one});
  if (lseTy)
    tensor::ParallelInsertSliceOp::create(
        rewriter, loc, merged.getLse(), outArgs[1],
        ArrayRef<OpFoldResult>{ivs[0], ivs[1], i0},
        ArrayRef<OpFoldResult>{one, one, rows},
        ArrayRef<OpFoldResult>{one, one, one});
  rewriter.setInsertionPointAfter(merge);
  replaceWith(merge);
  return success();
}

namespace {
struct AttnTileSdpaPass
    : mlir::attn::impl::AttnTileSdpaPassBase<AttnTileSdpaPass> {
  using Base::Base;
  void runOnOperation() override {
    SdpaTilingOptions options;
    options.blockQ = blockQ;
    options.blockKv = blockKv;
    options.kvSplits = kvSplits;
    options.parallelism = parallelism;
    options.accuracySplits = accuracySplits;
    options.maxDynamicKv = maxDynamicKv;
    options.packDecodeHeads = packDecodeHeads;
    SmallVector<SdpaOp> ops;
    getOperation()->walk([&](SdpaOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (SdpaOp op : ops)
      if (failed(tileSdpa(rewriter, op, options)))
        return signalPassFailure();
  }
};
} // namespace
