//===- DecomposeMha.cpp - attn.mha into projections around attn.sdpa -----===//
//
// The layer's only lowering: the Q, K and V projections write the [B, H, S,
// D] tensors attn.sdpa reads directly (the head split is an expand_shape of
// the weight, not a transpose of the activations), attn.sdpa does the
// attention, and the output projection contracts its [B, Hq, S, Dv] result
// over (h, d). The attention math itself stays attn.sdpa's.
//
//===----------------------------------------------------------------------===//
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Dialect/Attn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNDECOMPOSEMHAPASS
#include "attn/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

using utils::IteratorType;

AffineMap mapOf(MLIRContext *ctx, unsigned numLoops,
                ArrayRef<unsigned> dims) {
  SmallVector<AffineExpr> exprs;
  for (unsigned d : dims)
    exprs.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(numLoops, 0, exprs, ctx);
}

struct Builder {
  PatternRewriter &rw;
  Location loc;

  /// `w` [rows, cols] viewed as [heads, rows / heads, cols] (free: a
  /// reassociation of a contiguous dimension).
  Value splitRows(Value w, int64_t heads) {
    auto ty = cast<RankedTensorType>(w.getType());
    int64_t rows = ty.getDimSize(0), cols = ty.getDimSize(1);
    auto to = RankedTensorType::get({heads, rows / heads, cols},
                                    ty.getElementType());
    return tensor::ExpandShapeOp::create(
        rw, loc, to, w, SmallVector<ReassociationIndices>{{0, 1}, {2}});
  }
  /// `w` [rows, cols] viewed as [rows, heads, cols / heads].
  Value splitCols(Value w, int64_t heads) {
    auto ty = cast<RankedTensorType>(w.getType());
    int64_t rows = ty.getDimSize(0), cols = ty.getDimSize(1);
    auto to = RankedTensorType::get({rows, heads, cols / heads},
                                    ty.getElementType());
    return tensor::ExpandShapeOp::create(
        rw, loc, to, w, SmallVector<ReassociationIndices>{{0}, {1, 2}});
  }
  /// `b` [n] viewed as [heads, n / heads].
  Value splitBias(Value b, int64_t heads) {
    auto ty = cast<RankedTensorType>(b.getType());
    auto to = RankedTensorType::get({heads, ty.getDimSize(0) / heads},
                                    ty.getElementType());
    return tensor::ExpandShapeOp::create(
        rw, loc, to, b, SmallVector<ReassociationIndices>{{0, 1}});
  }
  /// Rows [offset, offset + n) of a static 2-D weight, or elements of a
  /// 1-D bias.
  Value rows(Value w, int64_t offset, int64_t n) {
    auto ty = cast<RankedTensorType>(w.getType());
    SmallVector<OpFoldResult> offs(ty.getRank(), rw.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes, strides(ty.getRank(), rw.getIndexAttr(1));
    offs[0] = rw.getIndexAttr(offset);
    sizes.push_back(rw.getIndexAttr(n));
    for (int64_t i = 1; i < ty.getRank(); ++i)
      sizes.push_back(rw.getIndexAttr(ty.getDimSize(i)));
    return tensor::ExtractSliceOp::create(rw, loc, w, offs, sizes, strides);
  }

  Value zeros(ArrayRef<OpFoldResult> sizes) {
    Value z = arith::ConstantOp::create(rw, loc, rw.getF32FloatAttr(0.0f));
    Value e = tensor::EmptyOp::create(rw, loc, sizes, rw.getF32Type());
    return linalg::FillOp::create(rw, loc, ValueRange{z}, ValueRange{e})
        .getResult(0);
  }

  /// acc[outDims] += elt(a[aDims]) * elt(b[bDims]) in f32, over `numLoops`
  /// loops of which `reductions` are reduction loops.
  Value contract(unsigned numLoops, ArrayRef<unsigned> reductions, Value a,
                 ArrayRef<unsigned> aDims, Value b, ArrayRef<unsigned> bDims,
                 Value acc, ArrayRef<unsigned> outDims) {
    MLIRContext *ctx = rw.getContext();
    SmallVector<AffineMap> maps = {mapOf(ctx, numLoops, aDims),
                                   mapOf(ctx, numLoops, bDims),
                                   mapOf(ctx, numLoops, outDims)};
    SmallVector<IteratorType> iters(numLoops, IteratorType::parallel);
    for (unsigned r : reductions)
      iters[r] = IteratorType::reduction;
    auto fm = arith::FastMathFlagsAttr::get(ctx, arith::FastMathFlags::contract);
    return linalg::GenericOp::create(
               rw, loc, acc.getType(), ValueRange{a, b}, ValueRange{acc}, maps,
               iters,
               [&](OpBuilder &bb, Location l, ValueRange args) {
                 Type f32 = bb.getF32Type();
                 auto widen = [&](Value v) -> Value {
                   return v.getType() == f32
                              ? v
                              : arith::ExtFOp::create(bb, l, f32, v);
                 };
                 Value m = arith::MulFOp::create(bb, l, widen(args[0]),
                                                 widen(args[1]), fm);
                 Value s = arith::AddFOp::create(bb, l, args[2], m, fm);
                 linalg::YieldOp::create(bb, l, s);
               })
        .getResult(0);
  }

  /// out = elt(acc + bias[biasDims]) elementwise over acc's rank; bias
  /// may be null (then acc itself where elt is f32).
  Value finish(Value acc, Value bias, ArrayRef<unsigned> biasDims, Type elt) {
    MLIRContext *ctx = rw.getContext();
    auto accTy = cast<RankedTensorType>(acc.getType());
    if (!bias && accTy.getElementType() == elt)
      return acc; // f32 without a bias: nothing to add or round
    unsigned rank = accTy.getRank();
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rw, loc, acc);
    Value init = tensor::EmptyOp::create(rw, loc, sizes, elt);
    SmallVector<Value> ins = {acc};
    SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, ctx)};
    if (bias) {
      ins.push_back(bias);
      maps.push_back(mapOf(ctx, rank, biasDims));
    }
    maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));
    SmallVector<IteratorType> iters(rank, IteratorType::parallel);
    return linalg::GenericOp::create(
               rw, loc, init.getType(), ins, ValueRange{init}, maps, iters,
               [&](OpBuilder &bb, Location l, ValueRange args) {
                 Value v = args[0];
                 if (bias) {
                   Value bv = args[1];
                   if (bv.getType() != bb.getF32Type())
                     bv = arith::ExtFOp::create(bb, l, bb.getF32Type(), bv);
                   v = arith::AddFOp::create(bb, l, v, bv);
                 }
                 if (elt != v.getType())
                   v = arith::TruncFOp::create(bb, l, elt, v);
                 linalg::YieldOp::create(bb, l, v);
               })
        .getResult(0);
  }

  /// [B, H, S', Dh] = src [B, S', Ein] projected by w [H * Dh, Ein] (+ b).
  Value project(Value src, Value w, Value bias, int64_t heads, Type elt) {
    Value w3 = splitRows(w, heads);
    int64_t dh = cast<ShapedType>(w3.getType()).getDimSize(1);
    SmallVector<OpFoldResult> sizes = {tensor::getMixedSize(rw, loc, src, 0),
                                       rw.getIndexAttr(heads),
                                       tensor::getMixedSize(rw, loc, src, 1),
                                       rw.getIndexAttr(dh)};
    // Loops (b, h, s, d, e): x[b,s,e] * W[h,d,e] -> acc[b,h,s,d].
    Value acc = contract(5, {4}, src, {0, 2, 4}, w3, {1, 3, 4}, zeros(sizes),
                         {0, 1, 2, 3});
    Value b2 = bias ? splitBias(bias, heads) : Value();
    return finish(acc, b2, {1, 3}, elt);
  }
};

struct DecomposeMha : OpRewritePattern<MhaOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MhaOp op,
                                PatternRewriter &rw) const override {
    Builder b{rw, op.getLoc()};
    Type elt = op.getInputType().getElementType();
    const int64_t hq = op.getNumHeads(), hkv = op.getNumKvHeads(),
                  d = op.getHeadDim(), dv = op.getEffectiveValueDim();

    Value wq = op.getWQ(), wk = op.getWK(), wv = op.getWV();
    Value bq = op.getBQ(), bk = op.getBK(), bv = op.getBV();
    if (Value w = op.getWQkv()) {
      // Rows of the fused weight: [Wq; Wk; Wv] (torch's in_proj_weight).
      wq = b.rows(w, 0, hq * d);
      wk = b.rows(w, hq * d, hkv * d);
      wv = b.rows(w, hq * d + hkv * d, hkv * dv);
      if (Value bias = op.getBQkv()) {
        bq = b.rows(bias, 0, hq * d);
        bk = b.rows(bias, hq * d, hkv * d);
        bv = b.rows(bias, hq * d + hkv * d, hkv * dv);
      }
    }
    Value x = op.getInput(), c = op.getKvSource();
    Value q = b.project(x, wq, bq, hq, elt);
    Value k = b.project(c, wk, bk, hkv, elt);
    Value v = b.project(c, wv, bv, hkv, elt);

    // The attention: attn.sdpa, with the layer's options as they are.
    auto qTy = cast<RankedTensorType>(q.getType());
    auto oTy = RankedTensorType::get({qTy.getDimSize(0), hq,
                                      qTy.getDimSize(2), dv},
                                     elt);
    auto sdpa = SdpaOp::create(rw, op.getLoc(), TypeRange{oTy}, q, k, v,
                               op.getMask(), op.getSeed(), op.getCausalAttr(),
                               op.getScaleAttr(), op.getDropoutPAttr(),
                               /*tiling=*/nullptr);
    Value o = sdpa.getOut();

    // Output projection: loops (b, s, e, h, d): o[b,h,s,d] * Wo[e,h,d].
    Value wo3 = b.splitCols(op.getWO(), hq);
    int64_t e = op.getInputType().getDimSize(2);
    SmallVector<OpFoldResult> sizes = {tensor::getMixedSize(rw, b.loc, x, 0),
                                       tensor::getMixedSize(rw, b.loc, x, 1),
                                       rw.getIndexAttr(e)};
    Value acc = b.contract(5, {3, 4}, o, {0, 3, 1, 4}, wo3, {2, 3, 4},
                           b.zeros(sizes), {0, 1, 2});
    Value y = b.finish(acc, op.getBO(), {2}, elt);
    rw.replaceOp(op, y);
    return success();
  }
};

struct AttnDecomposeMhaPass
    : mlir::attn::impl::AttnDecomposeMhaPassBase<AttnDecomposeMhaPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateDecomposeMhaPatterns(patterns);
    // Only the layer's own ops are rewritten (no folding of the rest).
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingOps);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     config)))
      return signalPassFailure();
    WalkResult left = getOperation()->walk([](MhaOp op) {
      op.emitOpError("was not decomposed");
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace

void mlir::attn::populateDecomposeMhaPatterns(RewritePatternSet &patterns) {
  patterns.add<DecomposeMha>(patterns.getContext());
}
