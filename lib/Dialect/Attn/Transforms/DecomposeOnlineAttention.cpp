//===- DecomposeOnlineAttention.cpp - L1 online-softmax ops to linalg -----===//
//
// Rewrites attn.online_attention, attn.online_attention_finalize and
// attn.merge_partials into linalg.generic ops on tensors, step by step as
// their op descriptions state. No intermediate is larger than [Br, Bc].
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
constexpr double kLog2e = 1.4426950408889634;
constexpr double kLn2 = 0.6931471805599453;

using utils::IteratorType;
using BodyFn = function_ref<void(OpBuilder &, Location, ValueRange)>;

/// Small helpers over linalg.generic so each math step reads as one call.
struct Gen {
  PatternRewriter &rw;
  Location loc;
  Type f32;

  Value cst(double v) {
    return arith::ConstantOp::create(rw, loc, f32,
                                     rw.getF32FloatAttr(static_cast<float>(v)));
  }
  Value cstIn(OpBuilder &b, Location l, double v) {
    return arith::ConstantOp::create(b, l, f32,
                                     b.getF32FloatAttr(static_cast<float>(v)));
  }
  /// Sizes of `v` as OpFoldResults.
  OpFoldResult dim(Value v, int64_t i) {
    return tensor::getMixedSize(rw, loc, v, i);
  }
  Value empty(ArrayRef<OpFoldResult> sizes, Type elt) {
    return tensor::EmptyOp::create(rw, loc, sizes, elt);
  }
  Value filled(ArrayRef<OpFoldResult> sizes, double v) {
    return linalg::FillOp::create(rw, loc, ValueRange{cst(v)},
                                  ValueRange{empty(sizes, f32)})
        .getResult(0);
  }
  /// One linalg.generic over `numLoops` loops; maps are given as result
  /// dimension lists over those loops.
  Value generic(unsigned numLoops, ValueRange ins, Value init,
                ArrayRef<SmallVector<unsigned>> inDims,
                SmallVector<unsigned> outDims,
                ArrayRef<IteratorType> iters, BodyFn body) {
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
    maps.push_back(mapOf(outDims));
    return linalg::GenericOp::create(rw, loc, init.getType(), ins,
                                     ValueRange{init}, maps, iters, body)
        .getResult(0);
  }
};

void yield(OpBuilder &b, Location loc, Value v) {
  linalg::YieldOp::create(b, loc, ValueRange{v});
}

Value toF32(OpBuilder &b, Location loc, Value v) {
  Type f32 = b.getF32Type();
  unsigned w = v.getType().getIntOrFloatBitWidth();
  if (w < 32)
    return arith::ExtFOp::create(b, loc, f32, v);
  if (w > 32)
    return arith::TruncFOp::create(b, loc, f32, v);
  return v;
}

/// m == -inf ? 0 : m: the shift used for exp2, so that a row that saw no key
/// computes exp2(-inf - 0) = 0 instead of exp2(-inf - -inf) = NaN.
Value safeMax(OpBuilder &b, Location loc, Value m) {
  Type f32 = b.getF32Type();
  Value ninf = arith::ConstantOp::create(
      b, loc, f32, b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
  Value zero = arith::ConstantOp::create(b, loc, f32, b.getF32FloatAttr(0.f));
  Value isNinf =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, m, ninf);
  return arith::SelectOp::create(b, loc, isNinf, zero, m);
}

const auto kContract = arith::FastMathFlags::contract;
const auto kReduce = arith::FastMathFlags::contract | arith::FastMathFlags::reassoc;

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
    double scaleLog2e = op.getScale().convertToDouble() * kLog2e;
    float ninf = -std::numeric_limits<float>::infinity();

    // Kt = f32(K)^T [D, Bc]: one pass over the key block, so that the
    // product below runs (r, d, c) with the key index innermost: a
    // contiguous multiply-add into a row of S instead of a reduction per
    // element, which the CPU vectorizer handles far better.
    OpFoldResult d = g.dim(q, 1);
    Value kt = g.generic(2, {k}, g.empty({d, cols}, f32), {{1, 0}}, {0, 1},
                         {par, par}, [&](OpBuilder &b, Location l, ValueRange a) {
                           yield(b, l, toF32(b, l, a[0]));
                         });
    // S = Q . Kt  (f32 accumulation; contract lets LLVM form FMAs)
    Value s = g.generic(
        3, {q, kt}, g.filled({rows, cols}, 0.0), {{0, 1}, {1, 2}}, {0, 2},
        {par, red, par}, [&](OpBuilder &b, Location l, ValueRange a) {
          Value p = arith::MulFOp::create(b, l, toF32(b, l, a[0]), a[1],
                                          kContract);
          Value r = arith::AddFOp::create(b, l, a[2], p, kReduce);
          yield(b, l, r);
        });

    // S = S * scale * log2(e) [+ mask * log2(e) | -inf where !mask],
    //     -inf where causal and kv_offset + c > q_offset + r + diag
    SmallVector<Value> ins{s};
    SmallVector<SmallVector<unsigned>> inDims{{0, 1}};
    Value mask = op.getMask();
    if (mask) {
      ins.push_back(mask);
      inDims.push_back({0, 1});
    }
    Value qOff = op.getQOffset(), kvOff = op.getKvOffset(),
          diag = op.getCausalDiag();
    s = g.generic(
        2, ins, g.empty({rows, cols}, f32), inDims, {0, 1}, {par, par},
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value x = arith::MulFOp::create(b, l, a[0],
                                          g.cstIn(b, l, scaleLog2e));
          Value negInf = g.cstIn(b, l, ninf);
          if (mask) {
            if (a[1].getType().isInteger(1)) {
              x = arith::SelectOp::create(b, l, a[1], x, negInf);
            } else {
              Value mv = arith::MulFOp::create(b, l, toF32(b, l, a[1]),
                                               g.cstIn(b, l, kLog2e));
              x = arith::AddFOp::create(b, l, x, mv);
            }
          }
          if (diag) {
            Value r = linalg::IndexOp::create(b, l, 0);
            Value c = linalg::IndexOp::create(b, l, 1);
            Value key = arith::AddIOp::create(b, l, kvOff, c);
            Value lim = arith::AddIOp::create(
                b, l, arith::AddIOp::create(b, l, qOff, r), diag);
            Value hidden = arith::CmpIOp::create(
                b, l, arith::CmpIPredicate::sgt, key, lim);
            x = arith::SelectOp::create(b, l, hidden, negInf, x);
          }
          yield(b, l, x);
        });

    // m_new = max(m_old, rowmax(S))
    Value mOld = op.getMax();
    Value mNew = g.generic(2, {s}, mOld, {{0, 1}}, {0}, {par, red},
                           [&](OpBuilder &b, Location l, ValueRange a) {
                             yield(
                                 b, l, arith::MaximumFOp::create(b, l, a[1], a[0]));
                           });

    // P = exp2(S - m_safe),  m_safe = m_new == -inf ? 0 : m_new
    Value p = g.generic(2, {s, mNew}, g.empty({rows, cols}, f32),
                        {{0, 1}, {0}}, {0, 1}, {par, par},
                        [&](OpBuilder &b, Location l, ValueRange a) {
                          Value d = arith::SubFOp::create(
                              b, l, a[0], safeMax(b, l, a[1]));
                          yield(b, l,
                                                  math::Exp2Op::create(b, l, d));
                        });

    // alpha = exp2(m_old - m_safe)
    Value alpha = g.generic(1, {mOld, mNew}, g.empty({rows}, f32), {{0}, {0}},
                            {0}, {par},
                            [&](OpBuilder &b, Location l, ValueRange a) {
                              Value d = arith::SubFOp::create(
                                  b, l, a[0], safeMax(b, l, a[1]));
                              yield(
                                  b, l, math::Exp2Op::create(b, l, d));
                            });

    // sum' = alpha * sum + rowsum(P)   (undropped P: lse ignores dropout)
    // (rescaled in place: the old sum is dead afterwards, so bufferization
    // reuses the loop-carried buffer)
    Value sumScaled = g.generic(
        1, {alpha}, op.getSum(), {{0}}, {0}, {par},
        [&](OpBuilder &b, Location l, ValueRange a) {
          yield(b, l, arith::MulFOp::create(b, l, a[0], a[1]));
        });
    Value sumNew = g.generic(
        2, {p}, sumScaled, {{0, 1}}, {0}, {par, red},
        [&](OpBuilder &b, Location l, ValueRange a) {
          yield(b, l,
                                  arith::AddFOp::create(b, l, a[1], a[0], kReduce));
        });

    // dropout(P) = keep(seed, b, h, q_offset + r, kv_offset + c) ? P / (1 - p) : 0
    Value pv = p;
    if (auto dp = op.getDropoutP()) {
      double prob = dp->convertToDouble();
      Value seed = op.getSeed(), batch = op.getBatch(), head = op.getHead();
      pv = g.generic(
          2, {p}, g.empty({rows, cols}, f32), {{0, 1}}, {0, 1}, {par, par},
          [&](OpBuilder &b, Location l, ValueRange a) {
            Value r = linalg::IndexOp::create(b, l, 0);
            Value c = linalg::IndexOp::create(b, l, 1);
            Value row = arith::AddIOp::create(b, l, qOff, r);
            Value col = arith::AddIOp::create(b, l, kvOff, c);
            Value keep =
                buildDropoutKeep(b, l, seed, batch, head, row, col, prob);
            Value scaled = arith::MulFOp::create(
                b, l, a[0], g.cstIn(b, l, 1.0 / (1.0 - prob)));
            yield(
                b, l,
                arith::SelectOp::create(b, l, keep, scaled, g.cstIn(b, l, 0.0)));
          });
    }

    // acc' = alpha * acc + dropout(P) . V
    Value acc = op.getAcc();
    Value accScaled = g.generic(
        2, {alpha}, acc, {{0}}, {0, 1},
        {par, par}, [&](OpBuilder &b, Location l, ValueRange a) {
          yield(b, l, arith::MulFOp::create(b, l, a[0], a[1]));
        });
    // Loops (r, c, d) with the reduction over keys in the middle: the
    // innermost loop then walks a row of V and of acc contiguously, which
    // is what the CPU's vectorizer (and any later tiling) wants.
    Value accNew = g.generic(
        3, {pv, v}, accScaled, {{0, 1}, {1, 2}}, {0, 2}, {par, red, par},
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value m = arith::MulFOp::create(b, l, a[0], toF32(b, l, a[1]),
                                          kContract);
          yield(b, l,
                                  arith::AddFOp::create(b, l, a[2], m, kReduce));
        });

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
    Value acc = op.getAcc();
    OpFoldResult rows = g.dim(acc, 0), dv = g.dim(acc, 1);
    Type outElt = op.getOut().getType().getElementType();

    // out = sum == 0 ? 0 : acc / sum
    Value out = g.generic(
        2, {acc, op.getSum()}, g.empty({rows, dv}, outElt), {{0, 1}, {0}},
        {0, 1}, {par, par}, [&](OpBuilder &b, Location l, ValueRange a) {
          Value zero = g.cstIn(b, l, 0.0);
          Value isZero = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ,
                                               a[1], zero);
          Value q = arith::DivFOp::create(b, l, a[0], a[1]);
          Value r = arith::SelectOp::create(b, l, isZero, zero, q);
          if (!outElt.isF32())
            r = arith::TruncFOp::create(b, l, outElt, r);
          yield(b, l, r);
        });
    SmallVector<Value> results{out};
    if (op.getLse()) {
      // lse = sum == 0 ? -inf : max * ln(2) + ln(sum)
      results.push_back(g.generic(
          1, {op.getMax(), op.getSum()}, g.empty({rows}, f32), {{0}, {0}}, {0},
          {par}, [&](OpBuilder &b, Location l, ValueRange a) {
            Value isZero = arith::CmpFOp::create(
                b, l, arith::CmpFPredicate::OEQ, a[1], g.cstIn(b, l, 0.0));
            Value m = arith::MulFOp::create(b, l, a[0], g.cstIn(b, l, kLn2));
            Value r = arith::AddFOp::create(b, l, m,
                                            math::LogOp::create(b, l, a[1]));
            Value ninf =
                g.cstIn(b, l, -std::numeric_limits<double>::infinity());
            yield(
                b, l, arith::SelectOp::create(b, l, isZero, ninf, r));
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
    Value acc = op.getAcc(), max = op.getMax(), sum = op.getSum();
    OpFoldResult n = g.dim(acc, 0), rows = g.dim(acc, 1), dv = g.dim(acc, 2);

    // m = max_n max[n]     (loops: r, n)
    Value m = g.generic(
        2, {max}, g.filled({rows}, -std::numeric_limits<double>::infinity()),
        {{1, 0}}, {0}, {par, red}, [&](OpBuilder &b, Location l, ValueRange a) {
          yield(b, l,
                                  arith::MaximumFOp::create(b, l, a[1], a[0]));
        });
    // w_n = exp2(max[n] - (m == -inf ? 0 : m))
    Value w = g.generic(
        2, {max, m}, g.empty({n, rows}, f32), {{0, 1}, {1}}, {0, 1}, {par, par},
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value d = arith::SubFOp::create(b, l, a[0], safeMax(b, l, a[1]));
          yield(b, l, math::Exp2Op::create(b, l, d));
        });
    // sum = sum_n w_n * sum[n]     (loops: r, n)
    Value s = g.generic(
        2, {w, sum}, g.filled({rows}, 0.0), {{1, 0}, {1, 0}}, {0}, {par, red},
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value x = arith::MulFOp::create(b, l, a[0], a[1], kContract);
          yield(b, l,
                                  arith::AddFOp::create(b, l, a[2], x, kReduce));
        });
    // acc = sum_n w_n * acc[n]     (loops: r, d, n)
    Value a2 = g.generic(
        3, {w, acc}, g.filled({rows, dv}, 0.0), {{2, 0}, {2, 0, 1}}, {0, 1},
        {par, par, red}, [&](OpBuilder &b, Location l, ValueRange a) {
          Value x = arith::MulFOp::create(b, l, a[0], a[1], kContract);
          yield(b, l,
                                  arith::AddFOp::create(b, l, a[2], x, kReduce));
        });
    rw.replaceOp(op, {a2, m, s});
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
