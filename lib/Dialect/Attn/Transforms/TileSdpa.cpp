//===- TileSdpa.cpp - attn.sdpa to FlashAttention-2 tiles (L0 -> L1) ------===//
//
// Rewrites attn.sdpa into scf.forall tiles over (B, Hq, query blocks[, KV
// chunks]) whose bodies run an scf.for over key blocks folding each block
// into the running (acc, max, sum) state with attn.online_attention.
// docs/FlashAttentionRewrite.md describes the structure and its invariants.
//
//===----------------------------------------------------------------------===//
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Dialect/Attn/Transforms/Passes.h"
#include "attn/Dialect/Attn/Transforms/Transforms.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"

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
  Value q, k, v, mask, seed;
  Type elt;
  OpFoldResult batch, hq, sq, hkv, skv;
  int64_t d, dv;
  int64_t br, bc;
  bool causal;
  FloatAttr scale, dropout;
  OpFoldResult diag; // Skv - Sq
  OpFoldResult group; // Hq / Hkv (GQA), a constant when both are static
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

  /// [1, 1, rows, cols] slice of a rank-4 tensor as a rank-2 tile.
  Value slice2d(Location loc, Value src, OpFoldResult i0, OpFoldResult i1,
                OpFoldResult off, OpFoldResult rows, OpFoldResult cols) {
    auto srcTy = cast<RankedTensorType>(src.getType());
    auto ty = RankedTensorType::get({staticOr(rows), staticOr(cols)},
                                    srcTy.getElementType());
    OpFoldResult zero = rw.getIndexAttr(0), one = rw.getIndexAttr(1);
    // The mask slice also starts at a column offset; q/k/v start at 0.
    return tensor::ExtractSliceOp::create(
        rw, loc, ty, src, ArrayRef<OpFoldResult>{i0, i1, off, zero},
        ArrayRef<OpFoldResult>{one, one, rows, cols},
        ArrayRef<OpFoldResult>{one, one, one, one});
  }

  /// Emits `scf.for %jb = lo to hi` over key blocks, folding each into the
  /// state; `causal` attaches the causal mask (only diagonal blocks need it).
  State keyLoop(Location loc, Value b, Value h, Value hkv, Value qTile,
                OpFoldResult i0, OpFoldResult rows, OpFoldResult lo,
                OpFoldResult hi, bool causal, State init) {
    IndexMath m{rw, loc};
    Value lb = m.val(lo), ub = m.val(hi);
    Value step = arith::ConstantIndexOp::create(rw, loc, 1);
    auto loop = scf::ForOp::create(rw, loc, lb, ub, step,
                                   ValueRange{init.acc, init.max, init.sum});
    // The body is built after the loop exists: folding index math needs the
    // induction variable to have a parent op.
    {
          OpBuilder::InsertionGuard g(rw);
          rw.setInsertionPointToStart(loop.getBody());
          Location l = loc;
          Value jb = loop.getInductionVar();
          ValueRange iter = loop.getRegionIterArgs();
          IndexMath mm{rw, l};
          OpFoldResult j0 = mm.mul(jb, info.bc);
          OpFoldResult cols = mm.tileSize(info.bc, j0, info.skv);
          OpFoldResult zero = rw.getIndexAttr(0);
          OpFoldResult dAttr = rw.getIndexAttr(info.d),
                       dvAttr = rw.getIndexAttr(info.dv);
          auto kvSlice = [&](Value src, OpFoldResult width) -> Value {
            auto srcTy = cast<RankedTensorType>(src.getType());
            auto ty = RankedTensorType::get({staticOr(cols), staticOr(width)},
                                            srcTy.getElementType());
            OpFoldResult one = rw.getIndexAttr(1);
            return tensor::ExtractSliceOp::create(
                rw, l, ty, src, ArrayRef<OpFoldResult>{b, hkv, j0, zero},
                ArrayRef<OpFoldResult>{one, one, cols, width},
                ArrayRef<OpFoldResult>{one, one, one, one});
          };
          Value kTile = kvSlice(info.k, dAttr);
          Value vTile = kvSlice(info.v, dvAttr);
          Value maskTile;
          if (info.mask) {
            Value mb = maskIndex(l, 0, b), mh = maskIndex(l, 1, h);
            auto mTy = cast<RankedTensorType>(info.mask.getType());
            auto ty = RankedTensorType::get({staticOr(rows), staticOr(cols)},
                                            mTy.getElementType());
            OpFoldResult one = rw.getIndexAttr(1);
            maskTile = tensor::ExtractSliceOp::create(
                rw, l, ty, info.mask,
                ArrayRef<OpFoldResult>{mb, mh, i0, j0},
                ArrayRef<OpFoldResult>{one, one, rows, cols},
                ArrayRef<OpFoldResult>{one, one, one, one});
          }
          Value diag = causal ? mm.val(info.diag) : Value();
          auto stepOp = OnlineAttentionOp::create(
              rw, l, iter[0].getType(), iter[1].getType(), iter[2].getType(),
              qTile, kTile, vTile, maskTile, iter[0], iter[1], iter[2], b, h,
              mm.val(i0), mm.val(j0), diag, info.dropout ? info.seed : Value(),
              info.scale, info.dropout);
          if (loop.getBody()->mightHaveTerminator())
            rw.eraseOp(loop.getBody()->getTerminator());
          rw.setInsertionPointToEnd(loop.getBody());
          scf::YieldOp::create(rw, l, stepOp.getResults());
    }
    return {loop.getResult(0), loop.getResult(1), loop.getResult(2)};
  }

  /// The state of query tile (b, h, i0) over key blocks [lo, hi); with
  /// causal, restricted to the blocks the tile can see and split into the
  /// fully visible prefix (no mask) and the diagonal blocks (masked).
  State tileState(Location loc, Value b, Value h, OpFoldResult i0,
                  OpFoldResult rows, OpFoldResult lo, OpFoldResult hi,
                  bool wholeRange) {
    IndexMath m{rw, loc};
    Value hkv;
    if (auto g = getConstantIntValue(info.group)) {
      hkv = m.val(m.apply({h}, [&](ArrayRef<AffineExpr> s) {
        return s[0].floorDiv(*g);
      }));
    } else {
      hkv = arith::DivUIOp::create(rw, loc, h, m.val(info.group));
    }
    Value qTile = slice2d(loc, info.q, b, h, i0, rows, rw.getIndexAttr(info.d));
    State st = initState(loc, rows);
    if (!info.causal)
      return keyLoop(loc, b, h, hkv, qTile, i0, rows, lo, hi, false, st);

    OpFoldResult nTotal = m.ceilDiv(info.skv, info.bc);
    // Last key any row of the tile sees is i0 + rows - 1 + diag.
    OpFoldResult visitEnd = m.clampSum({i0, rows, info.diag}, 0, info.skv);
    OpFoldResult nVisit = m.ceilDiv(visitEnd, info.bc);
    // Keys every row of the tile sees: [0, i0 + diag + 1).
    OpFoldResult fullEnd = m.clampSum({i0, info.diag}, 1, info.skv);
    OpFoldResult nFull =
        m.apply({fullEnd}, [&](ArrayRef<AffineExpr> s) {
          return s[0].floorDiv(info.bc);
        });
    // A partial last block is fully visible once every key is.
    auto skvC = getConstantIntValue(info.skv);
    if (!(skvC && *skvC % info.bc == 0)) {
      Value isAll = arith::CmpIOp::create(rw, loc, arith::CmpIPredicate::eq,
                                          m.val(fullEnd), m.val(info.skv));
      nFull = arith::SelectOp::create(rw, loc, isAll, m.val(nTotal),
                                      m.val(nFull))
                  .getResult();
    }
    OpFoldResult fullLo = lo, fullHi, diagHi;
    if (wholeRange) {
      fullHi = nFull;
      diagHi = nVisit;
    } else {
      fullHi = m.max({lo, m.min({nFull, hi})});
      diagHi = m.max({fullHi, m.min({hi, nVisit})});
    }
    st = keyLoop(loc, b, h, hkv, qTile, i0, rows, fullLo, fullHi, false, st);
    return keyLoop(loc, b, h, hkv, qTile, i0, rows, fullHi, diagHi, true, st);
  }

private:
  RewriterBase &rw;
  SdpaInfo &info;
};

int64_t autoKvSplits(const SdpaInfo &info, int64_t parallelism) {
  auto b = getConstantIntValue(info.batch), hq = getConstantIntValue(info.hq),
       sq = getConstantIntValue(info.sq), skv = getConstantIntValue(info.skv);
  if (!b || !hq || !sq || !skv)
    return 1;
  return chooseKvSplits(*b, *hq, *sq, *skv, info.br, info.bc, parallelism);
}
} // namespace

int64_t mlir::attn::chooseKvSplits(int64_t batch, int64_t headsQ,
                                   int64_t seqQ, int64_t seqKv, int64_t blockQ,
                                   int64_t blockKv, int64_t parallelism) {
  if (parallelism <= 0)
    parallelism = std::max<int64_t>(1, std::thread::hardware_concurrency());
  int64_t tiles = batch * headsQ * llvm::divideCeilSigned(seqQ, blockQ);
  int64_t maxByWork = seqKv / (4 * blockKv);
  if (tiles >= parallelism || maxByWork < 2)
    return 1;
  int64_t n = std::min(llvm::divideCeilSigned(parallelism, tiles), maxByWork);
  return std::max<int64_t>(n, 1);
}

LogicalResult mlir::attn::tileSdpa(RewriterBase &rewriter, SdpaOp op,
                                   const SdpaTilingOptions &options) {
  int64_t br = options.blockQ, bc = options.blockKv, splits = options.kvSplits;
  if (auto t = op.getTilingAttr()) {
    br = t.getBlockQ();
    bc = t.getBlockKv();
    splits = t.getKvSplits();
  }
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
  // A tile larger than a static extent only makes the types dynamic.
  if (auto s = getConstantIntValue(info.sq); s && *s > 0)
    br = std::min(br, *s);
  if (auto s = getConstantIntValue(info.skv); s && *s > 0)
    bc = std::min(bc, *s);
  info.br = br;
  info.bc = bc;
  info.causal = op.getCausal();
  info.scale = rewriter.getF64FloatAttr(op.getEffectiveScale());
  info.dropout = op.getDropoutPAttr();
  if (info.dropout && info.dropout.getValueAsDouble() == 0.0)
    info.dropout = nullptr;
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

  if (splits == 0)
    splits = autoKvSplits(info, options.parallelism);
  OpFoldResult nTotal = m.ceilDiv(info.skv, bc);
  if (auto n = getConstantIntValue(nTotal))
    splits = std::max<int64_t>(1, std::min(splits, *n)); // no empty chunks
  OpFoldResult nQBlocks = m.ceilDiv(info.sq, br);

  auto outTy = cast<RankedTensorType>(op.getOut().getType());
  auto lseTy = op.getLse() ? cast<RankedTensorType>(op.getLse().getType())
                           : RankedTensorType();
  auto emptyLike = [&](RankedTensorType ty,
                       ArrayRef<OpFoldResult> sizes) -> Value {
    SmallVector<Value> dyn;
    for (auto [i, s] : llvm::enumerate(ty.getShape()))
      if (ShapedType::isDynamic(s))
        dyn.push_back(m.val(sizes[i]));
    return tensor::EmptyOp::create(rewriter, loc, ty, dyn);
  };
  OpFoldResult dvAttr = rewriter.getIndexAttr(info.dv);
  SmallVector<Value> finalOuts{
      emptyLike(outTy, {info.batch, info.hq, info.sq, dvAttr})};
  if (lseTy)
    finalOuts.push_back(emptyLike(lseTy, {info.batch, info.hq, info.sq}));

  SdpaTiler tiler(rewriter, info);
  OpFoldResult zero = rewriter.getIndexAttr(0), one = rewriter.getIndexAttr(1);

  // Normalizes a tile's state and writes out[b, h, i0:i0+rows] (and lse).
  auto finalizeAndInsert = [&](scf::ForallOp forall, Location l, Value b,
                               Value h, OpFoldResult i0, OpFoldResult rows,
                               State st) {
    auto tileOutTy = RankedTensorType::get({staticOr(rows), info.dv}, info.elt);
    Type tileLseTy =
        lseTy ? RankedTensorType::get({staticOr(rows)}, rewriter.getF32Type())
              : Type();
    auto fin = OnlineAttentionFinalizeOp::create(rewriter, l, tileOutTy,
                                                 tileLseTy, st.acc, st.max,
                                                 st.sum);
    OpBuilder::InsertionGuard g(rewriter);
    rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
    auto outArgs = forall.getRegionIterArgs();
    tensor::ParallelInsertSliceOp::create(
        rewriter, l, fin.getOut(), outArgs[0],
        ArrayRef<OpFoldResult>{b, h, i0, zero},
        ArrayRef<OpFoldResult>{one, one, rows, dvAttr},
        ArrayRef<OpFoldResult>{one, one, one, one});
    if (lseTy)
      tensor::ParallelInsertSliceOp::create(
          rewriter, l, fin.getLse(), outArgs[1],
          ArrayRef<OpFoldResult>{b, h, i0}, ArrayRef<OpFoldResult>{one, one, rows},
          ArrayRef<OpFoldResult>{one, one, one});
  };

  if (splits == 1) {
    auto forall = scf::ForallOp::create(
        rewriter, loc, ArrayRef<OpFoldResult>{info.batch, info.hq, nQBlocks},
        finalOuts, std::nullopt);
    rewriter.setInsertionPointToStart(forall.getBody());
    Location l = loc;
    IndexMath mm{rewriter, l};
    auto ivs = forall.getInductionVars();
    OpFoldResult i0 = mm.mul(ivs[2], br);
    OpFoldResult rows = mm.tileSize(br, i0, info.sq);
    State st = tiler.tileState(l, ivs[0], ivs[1], i0, rows, zero, nTotal,
                               /*wholeRange=*/true);
    finalizeAndInsert(forall, l, ivs[0], ivs[1], i0, rows, st);
    rewriter.replaceOp(op, forall.getResults());
    return success();
  }

  // Split-KV: phase 1 computes partial states of N key chunks in parallel.
  Type f32 = rewriter.getF32Type();
  OpFoldResult nAttr = rewriter.getIndexAttr(splits);
  auto partTy = [&](bool withDv) {
    SmallVector<int64_t> shape{staticOr(info.batch), staticOr(info.hq), splits,
                               staticOr(info.sq)};
    if (withDv)
      shape.push_back(info.dv);
    return RankedTensorType::get(shape, f32);
  };
  SmallVector<OpFoldResult> partSizes{info.batch, info.hq, nAttr, info.sq, dvAttr};
  SmallVector<Value> partOuts{
      emptyLike(partTy(true), partSizes),
      emptyLike(partTy(false), ArrayRef(partSizes).drop_back()),
      emptyLike(partTy(false), ArrayRef(partSizes).drop_back())};
  OpFoldResult perChunk = m.apply({nTotal}, [&](ArrayRef<AffineExpr> s) {
    return s[0].ceilDiv(splits);
  });
  auto partial = scf::ForallOp::create(
      rewriter, loc,
      ArrayRef<OpFoldResult>{info.batch, info.hq, nQBlocks, nAttr}, partOuts,
      std::nullopt);
  {
    OpBuilder::InsertionGuard g(rewriter);
    rewriter.setInsertionPointToStart(partial.getBody());
    IndexMath mm{rewriter, loc};
    auto ivs = partial.getInductionVars();
    OpFoldResult i0 = mm.mul(ivs[2], br);
    OpFoldResult rows = mm.tileSize(br, i0, info.sq);
    OpFoldResult lo = mm.apply({ivs[3], perChunk}, [](ArrayRef<AffineExpr> s) {
      return s[0] * s[1];
    });
    OpFoldResult hi = mm.minmax(
        {ivs[3], perChunk, nTotal}, /*isMin=*/true,
        [](ArrayRef<AffineExpr> s) {
          return SmallVector<AffineExpr>{s[0] * s[1] + s[1], s[2]};
        });
    State st = tiler.tileState(loc, ivs[0], ivs[1], i0, rows, lo, hi,
                               /*wholeRange=*/false);
    rewriter.setInsertionPointToStart(partial.getTerminator().getBody());
    auto outArgs = partial.getRegionIterArgs();
    SmallVector<OpFoldResult> offs{ivs[0], ivs[1], ivs[3], i0, zero};
    SmallVector<OpFoldResult> sizes{one, one, one, rows, dvAttr};
    SmallVector<OpFoldResult> strides(5, one);
    tensor::ParallelInsertSliceOp::create(rewriter, loc, st.acc, outArgs[0],
                                          offs, sizes, strides);
    SmallVector<Value> stats{st.max, st.sum};
    for (auto [i, v] : llvm::enumerate(stats))
      tensor::ParallelInsertSliceOp::create(
          rewriter, loc, v, outArgs[i + 1], ArrayRef(offs).drop_back(),
          ArrayRef(sizes).drop_back(), ArrayRef(strides).drop_back());
  }

  // Phase 2 merges the N partial states of each query tile.
  auto merge = scf::ForallOp::create(
      rewriter, loc, ArrayRef<OpFoldResult>{info.batch, info.hq, nQBlocks},
      finalOuts, std::nullopt);
  rewriter.setInsertionPointToStart(merge.getBody());
  IndexMath mm{rewriter, loc};
  auto ivs = merge.getInductionVars();
  OpFoldResult i0 = mm.mul(ivs[2], br);
  OpFoldResult rows = mm.tileSize(br, i0, info.sq);
  int64_t rowsS = staticOr(rows);
  auto accTy = RankedTensorType::get({splits, rowsS, info.dv}, f32);
  auto vecTy = RankedTensorType::get({splits, rowsS}, f32);
  Value pAcc = tensor::ExtractSliceOp::create(
      rewriter, loc, accTy, partial.getResult(0),
      ArrayRef<OpFoldResult>{ivs[0], ivs[1], zero, i0, zero},
      ArrayRef<OpFoldResult>{one, one, nAttr, rows, dvAttr},
      SmallVector<OpFoldResult>(5, one));
  SmallVector<Value> pVec;
  for (int i = 1; i < 3; ++i)
    pVec.push_back(tensor::ExtractSliceOp::create(
        rewriter, loc, vecTy, partial.getResult(i),
        ArrayRef<OpFoldResult>{ivs[0], ivs[1], zero, i0},
        ArrayRef<OpFoldResult>{one, one, nAttr, rows},
        SmallVector<OpFoldResult>(4, one)));
  auto stAccTy = RankedTensorType::get({rowsS, info.dv}, f32);
  auto stVecTy = RankedTensorType::get({rowsS}, f32);
  auto merged = MergePartialsOp::create(rewriter, loc, stAccTy, stVecTy,
                                        stVecTy, pAcc, pVec[0], pVec[1]);
  finalizeAndInsert(merge, loc, ivs[0], ivs[1], i0, rows,
                    {merged.getNewAcc(), merged.getNewMax(),
                     merged.getNewSum()});
  rewriter.replaceOp(op, merge.getResults());
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
    SmallVector<SdpaOp> ops;
    getOperation()->walk([&](SdpaOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (SdpaOp op : ops)
      if (failed(tileSdpa(rewriter, op, options)))
        return signalPassFailure();
  }
};
} // namespace
