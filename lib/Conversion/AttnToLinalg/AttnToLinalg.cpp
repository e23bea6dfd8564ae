//===- AttnToLinalg.cpp - reference (math) lowering of attn.sdpa to linalg ===//
//
// The untiled lowering: materializes S [B, Hq, Sq, Skv] in f32 and runs the
// textbook safe softmax on it, its two sums over keys (l and O) in f64 so
// that no key length stalls or drifts them. It is the correctness reference
// for every other path, so it follows the op documentation step by step
// rather than being clever; docs/Semantics.md states the math.
//
//===----------------------------------------------------------------------===//
#include "attn/Conversion/AttnToLinalg/AttnToLinalg.h"
#include "attn/Conversion/Passes.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Dialect/Attn/Transforms/Transforms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

#include <limits>
#include <optional>

namespace mlir::attn {
#define GEN_PASS_DEF_CONVERTATTNTOLINALGPASS
#include "attn/Conversion/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {
using utils::IteratorType;

/// Builds the linalg form of one attn.sdpa. Loop dimensions are named as in
/// the op documentation: b, h (query head), i (query row), j (key), d (head
/// dim of q/k), e (head dim of v).
class SdpaLowering {
public:
  SdpaLowering(RewriterBase &rewriter, SdpaOp op)
      : rw(rewriter), op(op), loc(op.getLoc()), ctx(op.getContext()),
        f32(rewriter.getF32Type()) {}

  LogicalResult run();

private:
  /// A dimension static in any of `sources` is static; otherwise it is read
  /// with tensor.dim from the first source that is an operand.
  OpFoldResult size(ArrayRef<std::pair<Type, int64_t>> typed,
                    std::pair<Value, int64_t> fromOperand);
  Value index(OpFoldResult ofr) {
    return getValueOrCreateConstantIndexOp(rw, loc, ofr);
  }
  Value f32Const(double v) {
    return arith::ConstantOp::create(rw, loc, f32, rw.getF32FloatAttr(v));
  }
  /// l == 0 for an f64 row sum l: the row saw no key.
  static Value isEmptyRow(OpBuilder &b, Location loc, Value l) {
    return arith::CmpFOp::create(
        b, loc, arith::CmpFPredicate::OEQ, l,
        arith::ConstantOp::create(b, loc, b.getF64Type(),
                                  b.getF64FloatAttr(0)));
  }
  /// Extends a float to f64 (the sums' type).
  static Value toF64(OpBuilder &b, Location loc, Value v) {
    Type f64 = b.getF64Type();
    return v.getType() == f64 ? v : arith::ExtFOp::create(b, loc, f64, v);
  }
  /// Extends (or truncates, for an f64 additive mask) a float to f32.
  static Value toF32(OpBuilder &b, Location loc, Value v) {
    auto ft = cast<FloatType>(v.getType());
    if (ft.isF32())
      return v;
    if (ft.getWidth() > 32)
      return arith::TruncFOp::create(b, loc, b.getF32Type(), v);
    return arith::ExtFOp::create(b, loc, b.getF32Type(), v);
  }
  Value emptyF32(ArrayRef<OpFoldResult> sizes) {
    return tensor::EmptyOp::create(rw, loc, sizes, f32);
  }
  Value filled(ArrayRef<OpFoldResult> sizes, double v) {
    return linalg::FillOp::create(rw, loc, ValueRange{f32Const(v)},
                                  ValueRange{emptyF32(sizes)})
        .getResult(0);
  }
  /// Zeros in f64: the two sums over keys (l and O) accumulate in f64, so
  /// that no key length the API accepts (up to 2^31 - 1) stalls or drifts
  /// them (an f32 sum stops growing near 2^24 terms).
  Value zerosF64(ArrayRef<OpFoldResult> sizes) {
    Type f64 = rw.getF64Type();
    Value zero = arith::ConstantOp::create(rw, loc, f64, rw.getF64FloatAttr(0));
    return linalg::FillOp::create(
               rw, loc, ValueRange{zero},
               ValueRange{tensor::EmptyOp::create(rw, loc, sizes, f64)})
        .getResult(0);
  }
  AffineMap map(unsigned nDims, ArrayRef<AffineExpr> exprs) {
    return AffineMap::get(nDims, 0, exprs, ctx);
  }
  /// The kv head read by query head `h`, when it is expressible in an
  /// indexing map (static group, or a single kv head).
  std::optional<AffineExpr> kvHeadExpr(AffineExpr h) {
    if (group)
      return *group == 1 ? h : h.floorDiv(*group);
    if (singleKvHead)
      return getAffineConstantExpr(0, ctx);
    return std::nullopt;
  }

  Value scores();
  Value applyMasks(Value raw);
  Value rowReduce(Value s, double init, bool isMax);
  Value exponentials(Value s, Value m);
  Value normalize(Value p, Value l);
  Value attend(Value pn);
  Value logSumExp(Value m, Value l);
  static Value safeMax(OpBuilder &b, Location loc, Value m);

  RewriterBase &rw;
  SdpaOp op;
  Location loc;
  MLIRContext *ctx;
  Type f32;

  OpFoldResult B, Hq, Sq, Skv, Dv;
  std::optional<int64_t> group;
  bool singleKvHead = false;
  /// Hq / Hkv as an index value when it is not static.
  Value dynGroup;
};

OpFoldResult SdpaLowering::size(ArrayRef<std::pair<Type, int64_t>> typed,
                                std::pair<Value, int64_t> fromOperand) {
  for (auto [ty, d] : typed) {
    if (!ty)
      continue;
    int64_t s = cast<ShapedType>(ty).getDimSize(d);
    if (!ShapedType::isDynamic(s))
      return rw.getIndexAttr(s);
  }
  return tensor::getMixedSize(rw, loc, fromOperand.first, fromOperand.second);
}

// S_raw[b,h,i,j] = sum_d f32(q[b,h,i,d]) * f32(k[b,h/g,j,d])
Value SdpaLowering::scores() {
  Value init = filled({B, Hq, Sq, Skv}, 0.0);
  AffineExpr b, h, i, j, d;
  bindDims(ctx, b, h, i, j, d);
  SmallVector<IteratorType> iters(4, IteratorType::parallel);
  iters.push_back(IteratorType::reduction);
  auto contract =
      arith::FastMathFlagsAttr::get(ctx, arith::FastMathFlags::contract);
  auto accumulate = arith::FastMathFlagsAttr::get(
      ctx, arith::FastMathFlags::contract | arith::FastMathFlags::reassoc);
  Value key = op.getKey();

  if (std::optional<AffineExpr> kvh = kvHeadExpr(h)) {
    SmallVector<AffineMap> maps = {
        map(5, {b, h, i, d}), map(5, {b, *kvh, j, d}), map(5, {b, h, i, j})};
    return linalg::GenericOp::create(
               rw, loc, init.getType(), ValueRange{op.getQuery(), key},
               ValueRange{init}, maps, iters,
               [&](OpBuilder &nb, Location nl, ValueRange args) {
                 Value qv = toF32(nb, nl, args[0]);
                 Value kv = toF32(nb, nl, args[1]);
                 Value prod = arith::MulFOp::create(nb, nl, qv, kv, contract);
                 Value sum =
                     arith::AddFOp::create(nb, nl, args[2], prod, accumulate);
                 linalg::YieldOp::create(nb, nl, sum);
               })
        .getResult(0);
  }

  // Dynamic group: the kv head h / g is not an affine function of the loop
  // indices with constant coefficients, so read K directly instead of
  // materializing a repeated copy of it.
  Value g = dynGroup;
  SmallVector<AffineMap> maps = {map(5, {b, h, i, d}), map(5, {b, h, i, j})};
  return linalg::GenericOp::create(
             rw, loc, init.getType(), ValueRange{op.getQuery()},
             ValueRange{init}, maps, iters,
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               Value ib = linalg::IndexOp::create(nb, nl, 0);
               Value ih = linalg::IndexOp::create(nb, nl, 1);
               Value ij = linalg::IndexOp::create(nb, nl, 3);
               Value id = linalg::IndexOp::create(nb, nl, 4);
               Value kvh = arith::DivUIOp::create(nb, nl, ih, g);
               Value kv = tensor::ExtractOp::create(
                   nb, nl, key, ValueRange{ib, kvh, ij, id});
               Value prod = arith::MulFOp::create(
                   nb, nl, toF32(nb, nl, args[0]), toF32(nb, nl, kv), contract);
               Value sum =
                   arith::AddFOp::create(nb, nl, args[1], prod, accumulate);
               linalg::YieldOp::create(nb, nl, sum);
             })
      .getResult(0);
}

// S = scale * S_raw (+ f32(mask) | -inf where !mask) ; -inf where causal and
// j > i + (Skv - Sq)
Value SdpaLowering::applyMasks(Value raw) {
  Value init = emptyF32({B, Hq, Sq, Skv});
  AffineExpr b, h, i, j;
  bindDims(ctx, b, h, i, j);
  AffineMap id4 = map(4, {b, h, i, j});
  SmallVector<Value> inputs = {raw};
  SmallVector<AffineMap> maps = {id4};

  Value mask = op.getMask();
  auto maskTy = mask ? cast<RankedTensorType>(mask.getType()) : nullptr;
  bool boolMask = maskTy && isKeepMaskType(maskTy.getElementType());
  // Mask dims 0 and 1 broadcast when they are 1. A static size is resolved
  // in the indexing map; a dynamic one is only known at run time, so the
  // body picks the index with a select and reads the mask with
  // tensor.extract.
  bool maskInMap = maskTy && !maskTy.isDynamicDim(0) && !maskTy.isDynamicDim(1);
  Value maskBIsOne, maskHIsOne;
  if (maskInMap) {
    AffineExpr zero = getAffineConstantExpr(0, ctx);
    inputs.push_back(mask);
    maps.push_back(map(4, {maskTy.getDimSize(0) == 1 ? zero : b,
                           maskTy.getDimSize(1) == 1 ? zero : h, i, j}));
  } else if (maskTy) {
    Value one = arith::ConstantIndexOp::create(rw, loc, 1);
    auto isOne = [&](int64_t d) -> Value {
      if (!maskTy.isDynamicDim(d))
        return arith::ConstantIntOp::create(rw, loc, maskTy.getDimSize(d) == 1,
                                            1);
      Value dim = tensor::DimOp::create(rw, loc, mask, d);
      return arith::CmpIOp::create(rw, loc, arith::CmpIPredicate::eq, dim, one);
    };
    maskBIsOne = isOne(0);
    maskHIsOne = isOne(1);
  }
  maps.push_back(id4);

  Value diag;
  if (op.getCausal()) {
    std::optional<int64_t> skvC = getConstantIntValue(Skv),
                           sqC = getConstantIntValue(Sq);
    diag =
        skvC && sqC
            ? arith::ConstantIndexOp::create(rw, loc, *skvC - *sqC).getResult()
            : arith::SubIOp::create(rw, loc, index(Skv), index(Sq)).getResult();
  }
  Value scale = f32Const(op.getEffectiveScale());
  Value negInf = boolMask || diag
                     ? f32Const(-std::numeric_limits<double>::infinity())
                     : Value();

  SmallVector<IteratorType> iters(4, IteratorType::parallel);
  return linalg::GenericOp::create(
             rw, loc, init.getType(), inputs, ValueRange{init}, maps, iters,
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               Value s = arith::MulFOp::create(nb, nl, args[0], scale);
               Value m;
               if (maskInMap) {
                 m = args[1];
               } else if (maskTy) {
                 Value zero = arith::ConstantIndexOp::create(nb, nl, 0);
                 Value mb = arith::SelectOp::create(
                     nb, nl, maskBIsOne, zero,
                     linalg::IndexOp::create(nb, nl, 0));
                 Value mh = arith::SelectOp::create(
                     nb, nl, maskHIsOne, zero,
                     linalg::IndexOp::create(nb, nl, 1));
                 m = tensor::ExtractOp::create(
                     nb, nl, mask,
                     ValueRange{mb, mh, linalg::IndexOp::create(nb, nl, 2),
                                linalg::IndexOp::create(nb, nl, 3)});
               }
               if (m && boolMask)
                 s = arith::SelectOp::create(nb, nl, buildKeepBit(nb, nl, m),
                                             s, negInf);
               else if (m)
                 s = arith::AddFOp::create(nb, nl, s, toF32(nb, nl, m));
               if (diag) {
                 Value ii = linalg::IndexOp::create(nb, nl, 2);
                 Value jj = linalg::IndexOp::create(nb, nl, 3);
                 Value last = arith::AddIOp::create(nb, nl, ii, diag);
                 Value hidden = arith::CmpIOp::create(
                     nb, nl, arith::CmpIPredicate::sgt, jj, last);
                 s = arith::SelectOp::create(nb, nl, hidden, negInf, s);
               }
               linalg::YieldOp::create(nb, nl, s);
             })
      .getResult(0);
}

// isMax: m[b,h,i] = max_j S[b,h,i,j] (init -inf)
// else:  l[b,h,i] = sum_j P[b,h,i,j] (init 0), in f64
Value SdpaLowering::rowReduce(Value s, double init, bool isMax) {
  Value out = isMax ? filled({B, Hq, Sq}, init) : zerosF64({B, Hq, Sq});
  AffineExpr b, h, i, j;
  bindDims(ctx, b, h, i, j);
  SmallVector<AffineMap> maps = {map(4, {b, h, i, j}), map(4, {b, h, i})};
  SmallVector<IteratorType> iters(3, IteratorType::parallel);
  iters.push_back(IteratorType::reduction);
  auto reassoc =
      arith::FastMathFlagsAttr::get(ctx, arith::FastMathFlags::reassoc);
  return linalg::GenericOp::create(
             rw, loc, out.getType(), ValueRange{s}, ValueRange{out}, maps,
             iters,
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               Value r =
                   isMax ? arith::MaximumFOp::create(nb, nl, args[1], args[0])
                               .getResult()
                         : arith::AddFOp::create(nb, nl, args[1],
                                                 toF64(nb, nl, args[0]),
                                                 reassoc)
                               .getResult();
               linalg::YieldOp::create(nb, nl, r);
             })
      .getResult(0);
}

// m_safe = m == -inf ? 0 : m, so that a row with no visible key computes
// exp(-inf - 0) = 0 instead of exp(-inf - -inf) = NaN.
Value SdpaLowering::safeMax(OpBuilder &b, Location loc, Value m) {
  Value negInf = arith::ConstantOp::create(
      b, loc, b.getF32Type(),
      b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
  Value zero = arith::ConstantOp::create(b, loc, b.getF32Type(),
                                         b.getF32FloatAttr(0.0f));
  Value isNegInf =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, m, negInf);
  return arith::SelectOp::create(b, loc, isNegInf, zero, m);
}

// P[b,h,i,j] = exp(S[b,h,i,j] - m_safe[b,h,i])
Value SdpaLowering::exponentials(Value s, Value m) {
  Value init = emptyF32({B, Hq, Sq, Skv});
  AffineExpr b, h, i, j;
  bindDims(ctx, b, h, i, j);
  SmallVector<AffineMap> maps = {map(4, {b, h, i, j}), map(4, {b, h, i}),
                                 map(4, {b, h, i, j})};
  SmallVector<IteratorType> iters(4, IteratorType::parallel);
  return linalg::GenericOp::create(
             rw, loc, init.getType(), ValueRange{s, m}, ValueRange{init}, maps,
             iters,
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               Value x = arith::SubFOp::create(nb, nl, args[0],
                                               safeMax(nb, nl, args[1]));
               linalg::YieldOp::create(
                   nb, nl, math::ExpOp::create(nb, nl, x).getResult());
             })
      .getResult(0);
}

// Pn = l == 0 ? 0 : P / l (l in f64, Pn rounded to f32); with dropout:
// Pn = keep(seed,b,h,i,j) ? Pn/(1-p) : 0
Value SdpaLowering::normalize(Value p, Value l) {
  Value init = emptyF32({B, Hq, Sq, Skv});
  AffineExpr b, h, i, j;
  bindDims(ctx, b, h, i, j);
  SmallVector<AffineMap> maps = {map(4, {b, h, i, j}), map(4, {b, h, i}),
                                 map(4, {b, h, i, j})};
  SmallVector<IteratorType> iters(4, IteratorType::parallel);
  double dropP = op.getEffectiveDropout();
  Value seed = op.getSeed();
  Value zero = f32Const(0.0);
  Value keepScale = dropP > 0.0 ? f32Const(1.0 / (1.0 - dropP)) : Value();
  return linalg::GenericOp::create(
             rw, loc, init.getType(), ValueRange{p, l}, ValueRange{init}, maps,
             iters,
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               Value empty = isEmptyRow(nb, nl, args[1]);
               Value q = arith::TruncFOp::create(
                   nb, nl, nb.getF32Type(),
                   arith::DivFOp::create(nb, nl, toF64(nb, nl, args[0]),
                                         args[1]));
               Value pn = arith::SelectOp::create(nb, nl, empty, zero, q);
               if (keepScale) {
                 Value ib = linalg::IndexOp::create(nb, nl, 0);
                 Value ih = linalg::IndexOp::create(nb, nl, 1);
                 Value ii = linalg::IndexOp::create(nb, nl, 2);
                 Value ij = linalg::IndexOp::create(nb, nl, 3);
                 Value keep =
                     buildDropoutKeep(nb, nl, seed, ib, ih, ii, ij, dropP);
                 Value kept = arith::MulFOp::create(nb, nl, pn, keepScale);
                 pn = arith::SelectOp::create(nb, nl, keep, kept, zero);
               }
               linalg::YieldOp::create(nb, nl, pn);
             })
      .getResult(0);
}

// O[b,h,i,e] = sum_j Pn[b,h,i,j] * v[b,h/g,j,e], in f64
Value SdpaLowering::attend(Value pn) {
  Value init = zerosF64({B, Hq, Sq, Dv});
  // Loops (b, h, i, j, e): the key reduction sits outside the value
  // dimension so the innermost loop walks rows of V and O contiguously.
  AffineExpr b, h, i, j, e;
  bindDims(ctx, b, h, i, j, e);
  SmallVector<IteratorType> iters = {
      IteratorType::parallel, IteratorType::parallel, IteratorType::parallel,
      IteratorType::reduction, IteratorType::parallel};
  auto contract =
      arith::FastMathFlagsAttr::get(ctx, arith::FastMathFlags::contract);
  auto accumulate = arith::FastMathFlagsAttr::get(
      ctx, arith::FastMathFlags::contract | arith::FastMathFlags::reassoc);
  Value value = op.getValue();

  if (std::optional<AffineExpr> kvh = kvHeadExpr(h)) {
    SmallVector<AffineMap> maps = {
        map(5, {b, h, i, j}), map(5, {b, *kvh, j, e}), map(5, {b, h, i, e})};
    return linalg::GenericOp::create(
               rw, loc, init.getType(), ValueRange{pn, value}, ValueRange{init},
               maps, iters,
               [&](OpBuilder &nb, Location nl, ValueRange args) {
                 Value prod = arith::MulFOp::create(
                     nb, nl, toF64(nb, nl, args[0]), toF64(nb, nl, args[1]),
                     contract);
                 Value sum =
                     arith::AddFOp::create(nb, nl, args[2], prod, accumulate);
                 linalg::YieldOp::create(nb, nl, sum);
               })
        .getResult(0);
  }

  Value g = dynGroup;
  SmallVector<AffineMap> maps = {map(5, {b, h, i, j}), map(5, {b, h, i, e})};
  return linalg::GenericOp::create(
             rw, loc, init.getType(), ValueRange{pn}, ValueRange{init}, maps,
             iters,
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               Value ib = linalg::IndexOp::create(nb, nl, 0);
               Value ih = linalg::IndexOp::create(nb, nl, 1);
               Value ij = linalg::IndexOp::create(nb, nl, 3);
               Value ie = linalg::IndexOp::create(nb, nl, 4);
               Value kvh = arith::DivUIOp::create(nb, nl, ih, g);
               Value vv = tensor::ExtractOp::create(
                   nb, nl, value, ValueRange{ib, kvh, ij, ie});
               Value prod =
                   arith::MulFOp::create(nb, nl, toF64(nb, nl, args[0]),
                                         toF64(nb, nl, vv), contract);
               Value sum =
                   arith::AddFOp::create(nb, nl, args[1], prod, accumulate);
               linalg::YieldOp::create(nb, nl, sum);
             })
      .getResult(0);
}

// lse[b,h,i] = l == 0 ? -inf : m_safe + log(l) (in f64, rounded to f32)
Value SdpaLowering::logSumExp(Value m, Value l) {
  Value init = emptyF32({B, Hq, Sq});
  AffineExpr b, h, i;
  bindDims(ctx, b, h, i);
  AffineMap id3 = map(3, {b, h, i});
  SmallVector<IteratorType> iters(3, IteratorType::parallel);
  Value negInf = f32Const(-std::numeric_limits<double>::infinity());
  return linalg::GenericOp::create(
             rw, loc, init.getType(), ValueRange{m, l}, ValueRange{init},
             SmallVector<AffineMap>{id3, id3, id3}, iters,
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               Value empty = isEmptyRow(nb, nl, args[1]);
               Value lse = arith::TruncFOp::create(
                   nb, nl, nb.getF32Type(),
                   arith::AddFOp::create(
                       nb, nl, toF64(nb, nl, safeMax(nb, nl, args[0])),
                       math::LogOp::create(nb, nl, args[1])));
               linalg::YieldOp::create(
                   nb, nl,
                   arith::SelectOp::create(nb, nl, empty, negInf, lse)
                       .getResult());
             })
      .getResult(0);
}

LogicalResult SdpaLowering::run() {
  auto qTy = op.getQueryType(), kTy = op.getKeyType(), vTy = op.getValueType();
  Type outTy = op.getOut().getType();
  Type lseTy = op.getLse() ? op.getLse().getType() : Type();
  Type maskTy = op.getMask() ? op.getMask().getType() : Type();
  Type elt = qTy.getElementType();
  if (!elt.isF16() && !elt.isBF16() && !elt.isF32())
    return op.emitOpError()
           << "convert-attn-to-linalg: unsupported element type " << elt;
  if (op.getEffectiveDropout() > 0.0 && !op.getSeed())
    return op.emitOpError() << "convert-attn-to-linalg: dropout needs a seed";

  B = size({{qTy, 0}, {kTy, 0}, {vTy, 0}, {outTy, 0}, {lseTy, 0}},
           {op.getQuery(), 0});
  Hq = size({{qTy, 1}, {outTy, 1}, {lseTy, 1}}, {op.getQuery(), 1});
  Sq =
      size({{qTy, 2}, {outTy, 2}, {lseTy, 2}, {maskTy, 2}}, {op.getQuery(), 2});
  Skv = size({{kTy, 2}, {vTy, 2}, {maskTy, 3}}, {op.getKey(), 2});
  Dv = size({{vTy, 3}, {outTy, 3}}, {op.getValue(), 3});
  OpFoldResult hkv = size({{kTy, 1}, {vTy, 1}}, {op.getKey(), 1});

  std::optional<int64_t> hqC = getConstantIntValue(Hq),
                         hkvC = getConstantIntValue(hkv);
  if (hqC && hkvC) {
    if (*hkvC <= 0 || *hqC % *hkvC != 0)
      return op.emitOpError()
             << "convert-attn-to-linalg: query heads (" << *hqC
             << ") must be a positive multiple of key/value heads (" << *hkvC
             << ")";
    group = *hqC / *hkvC;
  } else if (hkvC && *hkvC == 1) {
    singleKvHead = true;
  } else {
    dynGroup = arith::DivUIOp::create(rw, loc, index(Hq), index(hkv));
  }

  Value s = applyMasks(scores());
  Value m = rowReduce(s, -std::numeric_limits<double>::infinity(),
                      /*isMax=*/true);
  Value p = exponentials(s, m);
  Value l = rowReduce(p, 0.0, /*isMax=*/false);
  Value o = attend(normalize(p, l));

  {
    // out = truncf(O): the only rounding to the element type, at the end.
    Value init = tensor::EmptyOp::create(rw, loc, {B, Hq, Sq, Dv}, elt);
    AffineMap id4 = rw.getMultiDimIdentityMap(4);
    o = linalg::GenericOp::create(
            rw, loc, init.getType(), ValueRange{o}, ValueRange{init},
            SmallVector<AffineMap>{id4, id4},
            SmallVector<IteratorType>(4, IteratorType::parallel),
            [&](OpBuilder &nb, Location nl, ValueRange args) {
              linalg::YieldOp::create(
                  nb, nl,
                  arith::TruncFOp::create(nb, nl, elt, args[0]).getResult());
            })
            .getResult(0);
  }
  SmallVector<Value> results;
  auto castTo = [&](Value v, Type ty) -> Value {
    return v.getType() == ty ? v : tensor::CastOp::create(rw, loc, ty, v);
  };
  results.push_back(castTo(o, outTy));
  if (lseTy)
    results.push_back(castTo(logSumExp(m, l), lseTy));
  rw.replaceOp(op, results);
  return success();
}

struct SdpaToLinalgPattern : OpRewritePattern<SdpaOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SdpaOp op,
                                PatternRewriter &rewriter) const override {
    // run() reports its own diagnostic on the op; the pass turns a leftover
    // attn.sdpa into a pass failure.
    return SdpaLowering(rewriter, op).run();
  }
};

struct ConvertAttnToLinalgPass
    : mlir::attn::impl::ConvertAttnToLinalgPassBase<ConvertAttnToLinalgPass> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateAttnToLinalgPatterns(patterns);
    // One walk, each op visited once: a failing op reports exactly one error.
    walkAndApplyPatterns(getOperation(), std::move(patterns));
    WalkResult left =
        getOperation()->walk([](SdpaOp) { return WalkResult::interrupt(); });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace

void mlir::attn::populateAttnToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<SdpaToLinalgPattern>(patterns.getContext());
}
