//===- DecomposeOnlineAttention.cpp - L1 online-softmax ops to linalg -----===//
//
// Rewrites attn.online_attention, attn.online_attention_finalize and
// attn.merge_partials into linalg.generic ops on tensors, step by step as
// their op descriptions state. This is the one place where the attention
// math is written: every target lowers these ops (the CPU through loops,
// the GPU targets by distributing them onto lanes, subgroups and fragments)
// and none writes a softmax step, a mask, causal, dropout or the split-KV
// merge again. No intermediate is larger than [Br, Bc].
//
//===----------------------------------------------------------------------===//
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Dialect/Attn/Transforms/Passes.h"
#include "attn/Dialect/Attn/Transforms/Transforms.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>
#include <limits>

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNDECOMPOSEONLINEATTENTIONPASS
#include "attn/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

using utils::IteratorType;
using BodyFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;

const auto kContract = arith::FastMathFlags::contract;
const auto kReduce = arith::FastMathFlags::contract | arith::FastMathFlags::reassoc;
/// The softmax's exponentials tolerate the hardware's approximate exp2 with
/// subnormals flushed (a probability or rescale factor under 2^-126 is
/// nothing next to a row sum of at least 1): targets may lower them so.
const auto kApprox = arith::FastMathFlags::afn;

/// Small helpers over linalg.generic so each math step reads as one call.
struct Gen {
  OpBuilder &rw;
  Location loc;
  Type f32;

  Value cst(OpBuilder &b, Location l, double v) {
    return arith::ConstantOp::create(b, l, f32,
                                     b.getF32FloatAttr(static_cast<float>(v)));
  }
  OpFoldResult dim(Value v, int64_t i) {
    return tensor::getMixedSize(rw, loc, v, i);
  }
  Value empty(ArrayRef<OpFoldResult> sizes, Type elt) {
    return tensor::EmptyOp::create(rw, loc, sizes, elt);
  }
  Value filled(ArrayRef<OpFoldResult> sizes, Attribute v) {
    Value c = arith::ConstantOp::create(rw, loc, cast<TypedAttr>(v));
    return linalg::FillOp::create(rw, loc, ValueRange{c},
                                  ValueRange{empty(sizes, c.getType())})
        .getResult(0);
  }
  Value filled(ArrayRef<OpFoldResult> sizes, double v) {
    return filled(sizes, rw.getF32FloatAttr(static_cast<float>(v)));
  }
  /// One linalg.generic over `numLoops` loops; maps are given as result
  /// dimension lists over those loops; `body` returns the yielded value.
  /// The indexing maps of a generic over `numLoops` loops: one per input
  /// (`inDims`), then `numOuts` for outputs over `outDims`.
  SmallVector<AffineMap> mapsOf(unsigned numLoops,
                                ArrayRef<SmallVector<unsigned>> inDims,
                                ArrayRef<unsigned> outDims,
                                unsigned numOuts = 1) {
    MLIRContext *ctx = rw.getContext();
    auto mapOf = [&](ArrayRef<unsigned> dims) {
      SmallVector<AffineExpr> exprs;
      for (unsigned d : dims)
        exprs.push_back(getAffineDimExpr(d, ctx));
      return AffineMap::get(numLoops, 0, exprs, ctx);
    };
    SmallVector<AffineMap> maps;
    for (auto &d : inDims)
      maps.push_back(mapOf(d));
    maps.append(numOuts, mapOf(outDims));
    return maps;
  }
  /// One linalg.generic over `numLoops` loops; maps are given as result
  /// dimension lists over those loops; `body` returns the yielded value.
  Value generic(unsigned numLoops, ValueRange ins, Value init,
                ArrayRef<SmallVector<unsigned>> inDims,
                SmallVector<unsigned> outDims, ArrayRef<IteratorType> iters,
                BodyFn body) {
    return linalg::GenericOp::create(
               rw, loc, init.getType(), ins, ValueRange{init},
               mapsOf(numLoops, inDims, outDims), iters,
               [&](OpBuilder &b, Location l, ValueRange args) {
                 linalg::YieldOp::create(b, l, ValueRange{body(b, l, args)});
               })
        .getResult(0);
  }

  /// sum over the reduction loops of term(ins...), compensated
  /// (Neumaier): one linalg.generic with two f32 results, the running sum
  /// s and its compensation c, updated per term x as
  ///   t = s + x;  c += |s| >= |x| ? (s - t) + x : (x - t) + s;  s = t
  /// (finish with addCompensation). The error stays near one rounding of
  /// the total whatever the number of terms, where a plain f32 sum of n
  /// terms drifts by up to n roundings. `outDims` are the result's loops
  /// over `sizes`. No fast-math flags: nothing may reassociate c away.
  linalg::GenericOp compensatedSum(unsigned numLoops, ValueRange ins,
                                   ArrayRef<OpFoldResult> sizes,
                                   ArrayRef<SmallVector<unsigned>> inDims,
                                   ArrayRef<unsigned> outDims,
                                   ArrayRef<IteratorType> iters, BodyFn term) {
    // Two zero tensors (one value for both inits would be one buffer).
    Value s0 = filled(sizes, 0.0), c0 = filled(sizes, 0.0);
    return linalg::GenericOp::create(
        rw, loc, TypeRange{s0.getType(), c0.getType()}, ins,
        ValueRange{s0, c0}, mapsOf(numLoops, inDims, outDims, 2), iters,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value x = term(b, l, args.drop_back(2));
          Value s = args[args.size() - 2], c = args.back();
          Value t = arith::AddFOp::create(b, l, s, x);
          Value sBig = arith::CmpFOp::create(
              b, l, arith::CmpFPredicate::OGE, math::AbsFOp::create(b, l, s),
              math::AbsFOp::create(b, l, x));
          Value lostS = arith::AddFOp::create(
              b, l, arith::SubFOp::create(b, l, s, t), x);
          Value lostX = arith::AddFOp::create(
              b, l, arith::SubFOp::create(b, l, x, t), s);
          Value lost = arith::SelectOp::create(b, l, sBig, lostS, lostX);
          linalg::YieldOp::create(
              b, l, ValueRange{t, arith::AddFOp::create(b, l, c, lost)});
        });
  }

  /// s + c of a compensatedSum over `sizes` (kept apart so that the sums
  /// over the same chunks stay adjacent: a target may walk the chunks once
  /// for all).
  Value addCompensation(linalg::GenericOp sums, ArrayRef<OpFoldResult> sizes) {
    SmallVector<unsigned> dims;
    for (unsigned d = 0; d < sizes.size(); ++d)
      dims.push_back(d);
    return generic(sizes.size(), sums.getResults(), empty(sizes, f32),
                   {dims, dims}, dims,
                   SmallVector<IteratorType>(sizes.size(),
                                             IteratorType::parallel),
                   [](OpBuilder &b, Location l, ValueRange a) -> Value {
                     return arith::AddFOp::create(b, l, a[0], a[1]);
                   });
  }
};

Value toF32(OpBuilder &b, Location loc, Value v) {
  Type f32 = b.getF32Type();
  unsigned w = v.getType().getIntOrFloatBitWidth();
  if (w < 32)
    return arith::ExtFOp::create(b, loc, f32, v);
  if (w > 32)
    return arith::TruncFOp::create(b, loc, f32, v);
  return v;
}

Value negInf(OpBuilder &b, Location loc) {
  return arith::ConstantOp::create(
      b, loc, b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
}

/// m == -inf ? 0 : m: the shift used for exp2, so that a row that saw no key
/// computes exp2(-inf - 0) = 0 instead of exp2(-inf - -inf) = NaN.
Value safeMax(OpBuilder &b, Location loc, Value m) {
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.f));
  Value isNinf = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, m,
                                       negInf(b, loc));
  return arith::SelectOp::create(b, loc, isNinf, zero, m);
}

/// The row's log-sum-exp from its max m (natural units) and sum (of
/// exp(s - m_safe)): -inf where sum == 0 (the row saw no key), else m_safe +
/// log2(sum) ln 2. Never m_safe * log2 e: that overflows for |m| above
/// FLT_MAX / log2 e, a finite max.
Value lseOf(OpBuilder &b, Location loc, Value m, Value sum) {
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.f));
  Value empty =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, sum, zero);
  // log2 of 1 for an empty row, not of 0: SPIR-V leaves log2(0)
  // undefined, and a driver may then assume sum > 0 and drop the select.
  Value one = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.f));
  Value log2Sum = math::Log2Op::create(
      b, loc, arith::SelectOp::create(b, loc, empty, one, sum));
  Value x = arith::AddFOp::create(
      b, loc, safeMax(b, loc, m),
      arith::MulFOp::create(
          b, loc, log2Sum,
          arith::ConstantOp::create(b, loc, b.getF32FloatAttr(kLn2))));
  return arith::SelectOp::create(b, loc, empty, negInf(b, loc), x);
}

Value exp2(OpBuilder &b, Location loc, Value x) {
  return math::Exp2Op::create(b, loc, x, kApprox);
}

/// exp(x - m_safe) for x <= m in natural units, as exp2((x - m_safe) log2 e):
/// the difference first, so that it stays finite (or -inf, whose exp2 is
/// the right 0) for every finite x and m; x log2 e alone overflows above
/// FLT_MAX / log2 e.
Value expBelow(OpBuilder &b, Location loc, Value x, Value mSafe) {
  Value d = arith::SubFOp::create(b, loc, x, mSafe);
  Value log2e =
      arith::ConstantOp::create(b, loc, b.getF32FloatAttr(float(kLog2e)));
  return exp2(b, loc, arith::MulFOp::create(b, loc, d, log2e));
}

/// out + a * b with f32 products of the (extended) operands: the body of
/// both contractions.
Value multiplyAdd(OpBuilder &b, Location l, ValueRange a) {
  Value x = toF32(b, l, a[0]);
  Value y = toF32(b, l, a[1]);
  Value p = arith::MulFOp::create(b, l, x, y, kContract);
  return arith::AddFOp::create(b, l, a[2], p, kReduce);
}

struct DecomposeOnlineAttention : OpRewritePattern<OnlineAttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(OnlineAttentionOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    Type f32 = rw.getF32Type();
    Gen g{rw, loc, f32};
    const IteratorType par = IteratorType::parallel,
                       red = IteratorType::reduction;
    Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
    OpFoldResult rows = g.dim(q, 0), cols = g.dim(k, 0);
    const double scale = op.getScale().convertToDouble();
    const double scaleLog2e = scale * kLog2e;
    Value mask = op.getMask();
    const bool additive =
        mask && isa<FloatType>(cast<ShapedType>(mask.getType()).getElementType());
    // The state's max is in natural units (scores times scale, plus the
    // mask), so that every finite score has a finite max. Without an
    // additive mask and with 0 < scale log2 e < 1, the scores stay raw
    // until the exponential: rowmax(S scale) = scale rowmax(S) for scale
    // > 0 (also after rounding, which is monotone), -inf stays -inf, and
    // P = exp2(fma(S, scale log2 e, -m_safe log2 e)) is one fused
    // multiply-add per element; m_safe log2 e stays finite because |m| <=
    // FLT_MAX scale. Otherwise x = S scale + mask and P = exp2((x - m_safe)
    // log2 e), whose difference cannot overflow where x log2 e would.
    const bool raw = !additive && scale > 0.0 && scaleLog2e < 0.999;

    // S = Q . K^T (f32 accumulation)
    Value s = g.generic(3, {q, k}, g.filled({rows, cols}, 0.0),
                        {{0, 2}, {1, 2}}, {0, 1}, {par, par, red},
                        multiplyAdd);

    // Score modifications, each a select or an add on one element, at row
    // `row` (packed: the position in its head) and key `key`:
    //   x = raw ? S : S * scale
    //   x = mask ? x : -inf   |   x + mask
    //   x = -inf where key >= kv_bound, or causal and key > row + diag
    Value qOff = op.getQOffset(), kvOff = op.getKvOffset(),
          bound = op.getKvBound(), diag = op.getCausalDiag(),
          packed = op.getPackedSeq();
    if (!raw || mask || bound || diag) {
      SmallVector<Value> ins{s};
      SmallVector<SmallVector<unsigned>> inDims{{0, 1}};
      if (mask) {
        ins.push_back(mask);
        inDims.push_back({0, 1});
      }
      s = g.generic(
          2, ins, g.empty({rows, cols}, f32), inDims, {0, 1}, {par, par},
          [&](OpBuilder &b, Location l, ValueRange a) {
            Value x = a[0];
            if (!raw && scale != 1.0)
              x = arith::MulFOp::create(b, l, x, g.cst(b, l, scale),
                                        kContract);
            Value ninf = negInf(b, l);
            if (mask && !additive)
              x = arith::SelectOp::create(b, l, buildKeepBit(b, l, a[1]), x,
                                          ninf);
            if (additive)
              x = arith::AddFOp::create(b, l, x, toF32(b, l, a[1]),
                                        kContract);
            if (!bound && !diag)
              return x;
            Value key = arith::AddIOp::create(
                b, l, kvOff, linalg::IndexOp::create(b, l, 1));
            Value hidden;
            if (bound)
              hidden = arith::CmpIOp::create(b, l, arith::CmpIPredicate::uge,
                                             key, bound);
            if (diag) {
              Value row = arith::AddIOp::create(
                  b, l, qOff, linalg::IndexOp::create(b, l, 0));
              Value above = arith::CmpIOp::create(
                  b, l, arith::CmpIPredicate::sgt, key,
                  arith::AddIOp::create(b, l, row, diag));
              hidden = hidden ? arith::OrIOp::create(b, l, hidden, above)
                              : above;
            }
            if (hidden)
              x = arith::SelectOp::create(b, l, hidden, ninf, x);
            return x;
          });
    }

    // mb = rowmax(x)  (raw: rowmax(S) times scale)
    Value mb = g.generic(2, {s}, g.filled({rows}, -INFINITY), {{0, 1}}, {0},
                         {par, red}, [&](OpBuilder &b, Location l, ValueRange a) {
                           return arith::MaximumFOp::create(b, l, a[1], a[0]);
                         });
    if (raw)
      mb = g.generic(1, {mb}, g.empty({rows}, f32), {{0}}, {0}, {par},
                     [&](OpBuilder &b, Location l, ValueRange a) {
                       return arith::MulFOp::create(b, l, a[0],
                                                    g.cst(b, l, scale));
                     });

    // grow = mb > m + T. The rescale runs only if some row grows (the
    // guard; with T = 0 that is whenever a row's max moves). Rows that do
    // not grow keep their max, so alpha = exp2(m - m) = 1 for them (or
    // their acc and sum are still 0 where m = -inf): the guarded region is
    // the identity on those rows, and a target may evaluate the guard over
    // any set of rows that contains the rows it owns (a warp's, say).
    Value mOld = op.getMax(), acc = op.getAcc(), sum = op.getSum();
    // T is stated in log2 units (P may reach 2^T); the max is natural.
    double threshold = 0.0;
    if (auto t = op.getRescaleThreshold())
      threshold = t->convertToDouble() * kLn2;
    // The grow predicate, in both bodies that test it (no i1 tile: some
    // targets have no boolean storage).
    auto grows = [&](OpBuilder &b, Location l, Value mBlock, Value mRow) {
      Value limit = mRow;
      if (threshold > 0.0)
        limit = arith::AddFOp::create(b, l, mRow, g.cst(b, l, threshold));
      return arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT, mBlock,
                                   limit);
    };
    // any = OR over rows of grow, as an i32 (0 or 1: not every target can
    // store booleans).
    Type i32 = rw.getI32Type();
    Value anyInit = g.filled({}, rw.getI32IntegerAttr(0));
    Value any = g.generic(1, {mb, mOld}, anyInit, {{0}, {0}}, {}, {red},
                          [&](OpBuilder &b, Location l, ValueRange a) {
                            Value grow = arith::ExtUIOp::create(
                                b, l, i32, grows(b, l, a[0], a[1]));
                            return arith::OrIOp::create(b, l, a[2], grow);
                          });
    any.getDefiningOp()->setAttr(kRowLocalGuardAttrName, rw.getUnitAttr());
    Value anyScalar = arith::CmpIOp::create(
        rw, loc, arith::CmpIPredicate::ne,
        tensor::ExtractOp::create(rw, loc, any, ValueRange{}),
        arith::ConstantIntOp::create(rw, loc, i32, 0));
    auto rescale = scf::IfOp::create(
        rw, loc, TypeRange{mOld.getType(), acc.getType(), sum.getType()},
        anyScalar, /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(rw);
      rw.setInsertionPointToStart(&rescale.getThenRegion().front());
      // m' = grow ? mb : m, alpha = exp(m - m'_safe)
      auto newMax = [&](OpBuilder &b, Location l, Value mBlock, Value mRow) {
        return arith::SelectOp::create(b, l, grows(b, l, mBlock, mRow), mBlock,
                                       mRow);
      };
      Value alpha = g.generic(
          1, {mb, mOld}, g.empty({rows}, f32), {{0}, {0}}, {0}, {par},
          [&](OpBuilder &b, Location l, ValueRange a) {
            Value mNew = newMax(b, l, a[0], a[1]);
            return expBelow(b, l, a[1], safeMax(b, l, mNew));
          });
      // m' over m, acc' = alpha acc, sum' = alpha sum: in place (the old
      // ones are dead), so that both branches yield the same buffers
      Value mNew = g.generic(1, {mb}, mOld, {{0}}, {0}, {par},
                             [&](OpBuilder &b, Location l, ValueRange a) {
                               return newMax(b, l, a[0], a[1]);
                             });
      Value accScaled = g.generic(
          2, {alpha}, acc, {{0}}, {0, 1}, {par, par},
          [&](OpBuilder &b, Location l, ValueRange a) {
            return arith::MulFOp::create(b, l, a[1], a[0]);
          });
      Value sumScaled = g.generic(
          1, {alpha}, sum, {{0}}, {0}, {par},
          [&](OpBuilder &b, Location l, ValueRange a) {
            return arith::MulFOp::create(b, l, a[1], a[0]);
          });
      scf::YieldOp::create(rw, loc, ValueRange{mNew, accScaled, sumScaled});
      rw.setInsertionPointToStart(&rescale.getElseRegion().front());
      scf::YieldOp::create(rw, loc, ValueRange{mOld, acc, sum});
    }
    Value mNew = rescale.getResult(0);
    acc = rescale.getResult(1);
    sum = rescale.getResult(2);

    // P = exp(x - m'_safe): raw as exp2(fma(S, scale log2 e, -m'_safe
    // log2 e)), else as exp2((x - m'_safe) log2 e)
    Value mShift = g.generic(
        1, {mNew}, g.empty({rows}, f32), {{0}}, {0}, {par},
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value m = safeMax(b, l, a[0]);
          if (!raw)
            return m;
          return arith::NegFOp::create(
              b, l, arith::MulFOp::create(b, l, m, g.cst(b, l, kLog2e)));
        });
    Value p = g.generic(
        2, {s, mShift}, g.empty({rows, cols}, f32), {{0, 1}, {0}}, {0, 1},
        {par, par}, [&](OpBuilder &b, Location l, ValueRange a) {
          if (!raw)
            return expBelow(b, l, a[0], a[1]);
          return exp2(b, l,
                      math::FmaOp::create(b, l, a[0], g.cst(b, l, scaleLog2e),
                                          a[1]));
        });

    // sum'' = sum' + rowsum(P)   (P before dropout: lse ignores dropout)
    Value sumNew = g.generic(2, {p}, sum, {{0, 1}}, {0}, {par, red},
                             [&](OpBuilder &b, Location l, ValueRange a) {
                               return arith::AddFOp::create(b, l, a[1], a[0],
                                                            kReduce);
                             });

    // dropout(P) = keep(seed, b, h, row, key) ? P / (1 - p) : 0
    Value pv = p;
    if (auto dp = op.getDropoutP()) {
      double prob = dp->convertToDouble();
      Value seed = op.getSeed(), batch = op.getBatch(), head = op.getHead();
      pv = g.generic(
          2, {p}, g.empty({rows, cols}, f32), {{0, 1}}, {0, 1}, {par, par},
          [&](OpBuilder &b, Location l, ValueRange a) {
            Value row = arith::AddIOp::create(
                b, l, qOff, linalg::IndexOp::create(b, l, 0));
            Value h = head;
            if (packed) {
              // Packed rows: position (q_offset + r) mod sq of head
              // head + (q_offset + r) floordiv sq.
              h = arith::AddIOp::create(
                  b, l, head, arith::DivUIOp::create(b, l, row, packed));
              row = arith::RemUIOp::create(b, l, row, packed);
            }
            Value key = arith::AddIOp::create(
                b, l, kvOff, linalg::IndexOp::create(b, l, 1));
            Value keep = buildDropoutKeep(b, l, seed, batch, h, row, key, prob);
            Value scaled = arith::MulFOp::create(
                b, l, a[0], g.cst(b, l, 1.0 / (1.0 - prob)));
            return arith::SelectOp::create(b, l, keep, scaled,
                                           g.cst(b, l, 0.0));
          });
    }
    // P rounded to p_type for the product (what 16-bit matrix units take)
    if (auto pt = op.getPType(); pt && !pt->isF32()) {
      Type pType = *pt;
      pv = g.generic(2, {pv}, g.empty({rows, cols}, pType), {{0, 1}}, {0, 1},
                     {par, par}, [&](OpBuilder &b, Location l, ValueRange a) {
                       return arith::TruncFOp::create(b, l, pType, a[0]);
                     });
    }

    // acc'' = acc' + P . V   (loops (r, c, d): the reduction over keys in
    // the middle, so the innermost loop walks a row of V and of acc)
    Value accNew = g.generic(3, {pv, v}, acc, {{0, 1}, {1, 2}}, {0, 2},
                             {par, red, par}, multiplyAdd);

    rw.replaceOp(op, {accNew, mNew, sumNew});
    return success();
  }
};

struct DecomposeFinalize : OpRewritePattern<OnlineAttentionFinalizeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(OnlineAttentionFinalizeOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    Type f32 = rw.getF32Type();
    Gen g{rw, loc, f32};
    const IteratorType par = IteratorType::parallel;
    Value acc = op.getAcc(), max = op.getMax(), sum = op.getSum();
    OpFoldResult rows = g.dim(acc, 0), dv = g.dim(acc, 1);
    Type outElt = op.getOut().getType().getElementType();

    // inv = sum == 0 ? 0 : 1 / sum  (a row that saw no key has acc = 0)
    Value inv = g.generic(1, {sum}, g.empty({rows}, f32), {{0}}, {0}, {par},
                          [&](OpBuilder &b, Location l, ValueRange a) {
                            Value zero = g.cst(b, l, 0.0);
                            Value empty = arith::CmpFOp::create(
                                b, l, arith::CmpFPredicate::OEQ, a[0], zero);
                            Value r = arith::DivFOp::create(
                                b, l, g.cst(b, l, 1.0), a[0]);
                            return arith::SelectOp::create(b, l, empty, zero, r);
                          });
    // out = acc * inv  (converted to the element type unless partial)
    Value out = g.generic(2, {acc, inv}, g.empty({rows, dv}, outElt),
                          {{0, 1}, {0}}, {0, 1}, {par, par},
                          [&](OpBuilder &b, Location l, ValueRange a) {
                            Value r = arith::MulFOp::create(b, l, a[0], a[1]);
                            if (!outElt.isF32())
                              r = arith::TruncFOp::create(b, l, outElt, r);
                            return r;
                          });
    SmallVector<Value> results{out};
    if (op.getLse()) {
      // lse = sum == 0 ? -inf : max_safe + log2(sum) ln(2)
      results.push_back(g.generic(
          1, {max, sum}, g.empty({rows}, f32), {{0}, {0}}, {0}, {par},
          [&](OpBuilder &b, Location l, ValueRange a) {
            return lseOf(b, l, a[0], a[1]);
          }));
    }
    rw.replaceOp(op, results);
    return success();
  }
};

struct DecomposeMergePartials : OpRewritePattern<MergePartialsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MergePartialsOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    Type f32 = rw.getF32Type();
    Gen g{rw, loc, f32};
    const IteratorType par = IteratorType::parallel,
                       red = IteratorType::reduction;
    Value pOut = op.getPartialOut(), pMax = op.getPartialMax(),
          pSum = op.getPartialSum();
    OpFoldResult n = g.dim(pOut, 0), rows = g.dim(pOut, 1), dv = g.dim(pOut, 2);
    Type outElt = op.getOut().getType().getElementType();

    // M = max_n max[n]     (loops: r, n)
    Value m = g.generic(2, {pMax}, g.filled({rows}, -INFINITY), {{1, 0}}, {0},
                        {par, red}, [&](OpBuilder &b, Location l, ValueRange a) {
                          return arith::MaximumFOp::create(b, l, a[1], a[0]);
                        });
    // w_n = sum[n] exp(max[n] - M_safe), M_safe = M == -inf ? 0 : M (an
    // empty chunk: 0 * exp(-inf) = 0)
    Value w = g.generic(
        2, {pMax, pSum, m}, g.empty({n, rows}, f32), {{0, 1}, {0, 1}, {1}},
        {0, 1}, {par, par}, [&](OpBuilder &b, Location l, ValueRange a) {
          return arith::MulFOp::create(
              b, l, a[1], expBelow(b, l, a[0], safeMax(b, l, a[2])));
        });
    // W = sum_n w_n and O = sum_n w_n out[n], each a compensated
    // (Neumaier) sum over the chunks: long key sequences are split into
    // up to 2^15 chunks (minKvSplits), and a plain f32 sum of that many
    // terms would lose what the chunking kept. The sum and its
    // compensation are the generic's two results; no fast-math flags, so
    // nothing may reassociate the compensation away.
    linalg::GenericOp wSums = g.compensatedSum(
        2, {w}, {rows}, {{1, 0}}, {0}, {par, red},
        [](OpBuilder &, Location, ValueRange a) { return a[0]; });
    // (loops: r, d, n)
    linalg::GenericOp oSums = g.compensatedSum(
        3, {w, pOut}, {rows, dv}, {{2, 0}, {2, 0, 1}}, {0, 1},
        {par, par, red}, [](OpBuilder &b, Location l, ValueRange a) -> Value {
          return arith::MulFOp::create(b, l, a[0], a[1]);
        });
    Value wSum = g.addCompensation(wSums, {rows});
    Value o = g.addCompensation(oSums, {rows, dv});
    // out = W == 0 ? 0 : O / W
    Value out = g.generic(
        2, {o, wSum}, g.empty({rows, dv}, outElt), {{0, 1}, {0}}, {0, 1},
        {par, par}, [&](OpBuilder &b, Location l, ValueRange a) {
          Value zero = g.cst(b, l, 0.0);
          Value empty = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ,
                                              a[1], zero);
          Value r = arith::SelectOp::create(
              b, l, empty, zero, arith::DivFOp::create(b, l, a[0], a[1]));
          if (!outElt.isF32())
            r = arith::TruncFOp::create(b, l, outElt, r);
          return r;
        });
    SmallVector<Value> results{out};
    if (op.getLse()) {
      // lse = W == 0 ? -inf : M_safe + log2(W) ln(2)
      results.push_back(g.generic(
          1, {m, wSum}, g.empty({rows}, f32), {{0}, {0}}, {0}, {par},
          [&](OpBuilder &b, Location l, ValueRange a) {
            return lseOf(b, l, a[0], a[1]);
          }));
    }
    rw.replaceOp(op, results);
    return success();
  }
};

/// attn.kv_split_count where no runtime chooses the count: its default.
struct LowerKvSplitCount : OpRewritePattern<KvSplitCountOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(KvSplitCountOp op,
                                PatternRewriter &rw) const override {
    rw.replaceOpWithNewOp<arith::ConstantIndexOp>(op, op.getDefaultCount());
    return success();
  }
};

struct AttnDecomposeOnlineAttentionPass
    : mlir::attn::impl::AttnDecomposeOnlineAttentionPassBase<
          AttnDecomposeOnlineAttentionPass> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateDecomposeOnlineAttentionPatterns(patterns);
    // A plain walk-and-rewrite: the patterns never create new L1 ops, so
    // no fixpoint iteration (and no folding of unrelated IR) is needed.
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingOps);
    SmallVector<Operation *> ops;
    getOperation()->walk([&](Operation *op) {
      if (isa<OnlineAttentionOp, OnlineAttentionFinalizeOp, MergePartialsOp>(op))
        ops.push_back(op);
    });
    bool changed = false;
    if (failed(applyOpPatternsGreedily(ops, std::move(patterns), config,
                                       &changed)))
      return signalPassFailure();
    WalkResult left = getOperation()->walk([&](Operation *op) {
      if (isa<OnlineAttentionOp, OnlineAttentionFinalizeOp, MergePartialsOp>(op)) {
        op->emitOpError() << "could not be decomposed";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace

void mlir::attn::populateDecomposeOnlineAttentionPatterns(
    RewritePatternSet &patterns) {
  patterns.add<DecomposeOnlineAttention, DecomposeFinalize,
               DecomposeMergePartials>(patterns.getContext());
}

void mlir::attn::populateLowerKvSplitCountPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerKvSplitCount>(patterns.getContext());
}
