//===- SPIRVLoopBudget.cpp - bound the loop iterations of a kernel --------===//
//
// Some Vulkan drivers end a shader's loops silently after a fixed number of
// iterations per invocation: llvmpipe (lavapipe) decrements one counter per
// iteration of any loop and breaks every loop once 65535 are used up, so a
// kernel that needs more returns wrong results without an error. This step
// of attn-to-spirv-pipeline bounds, per outlined kernel, the total number of
// scf.for iterations one invocation can run (integer range analysis of the
// bounds, refined on each side of a select that compares with a constant;
// nested trip counts multiplied, plus the one exiting pass per loop
// execution that llvmpipe also counts; a loop over one chunk of a range,
// [begin, min(begin + chunk, end)) as split-KV's are, counts its chunk;
// loops over consecutive ranges count their union) and
// fails with a diagnostic when the bound is above max-iterations or cannot
// be computed. The driver may unroll some loops, so the bound is
// conservative: a kernel under it is safe.
//
//===----------------------------------------------------------------------===//
#include "attn/Target/SPIRV/Passes.h"

#include "mlir/Analysis/DataFlow/IntegerRangeAnalysis.h"
#include "mlir/Analysis/DataFlow/Utils.h"
#include "mlir/Analysis/DataFlowFramework.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Pass/Pass.h"

#include <algorithm>
#include <limits>

namespace mlir::attn {
#define GEN_PASS_DEF_SPIRVLOOPBUDGETPASS
#include "attn/Target/SPIRV/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

constexpr uint64_t kSaturated = std::numeric_limits<uint64_t>::max();

uint64_t mulSat(uint64_t a, uint64_t b) {
  if (a && b > kSaturated / a)
    return kSaturated;
  return a * b;
}
uint64_t addSat(uint64_t a, uint64_t b) {
  return a > kSaturated - b ? kSaturated : a + b;
}

class LoopCounter {
public:
  explicit LoopCounter(DataFlowSolver &solver) : solver(solver) {}

  /// Iterations of every loop nested in `op`'s regions, each loop's trip
  /// bound multiplied by those of the loops around it; nullopt (and
  /// `unbounded` set) when a trip count has no bound.
  std::optional<uint64_t> count(Operation *op) {
    uint64_t total = 0;
    for (Region &region : op->getRegions())
      for (Block &block : region) {
        // A chain of loops over consecutive ranges, [a, b) then [b, c) (the
        // unmasked and the diagonal key blocks of a causal tile), runs at
        // most c - a iterations in all, which ranges alone overestimate:
        // its bound is the smaller of the loops' sum and that.
        SmallVector<scf::ForOp> chain;
        uint64_t chainSum = 0, chainBody = 0;
        auto closeChain = [&]() {
          if (chain.size() > 1) {
            std::optional<uint64_t> span =
                spanBound(chain.front().getLowerBound(),
                          chain.back().getUpperBound(),
                          chain.front().getStep());
            if (span && llvm::all_of(chain, [&](scf::ForOp f) {
                  return f.getStep() == chain.front().getStep();
                })) {
              uint64_t joint =
                  addSat(addSat(*span, chain.size()), mulSat(*span, chainBody));
              chainSum = std::min(chainSum, joint);
            }
          }
          total = addSat(total, chainSum);
          chain.clear();
          chainSum = chainBody = 0;
        };
        for (Operation &inner : block) {
          uint64_t trips = 1;
          // (Ops between the loops of a chain, index computations, do
          // not break it.)
          auto forOp = dyn_cast<scf::ForOp>(inner);
          if (forOp && (chain.empty() ||
                        forOp.getLowerBound() != chain.back().getUpperBound()))
            closeChain();
          if (forOp) {
            std::optional<uint64_t> t = tripBound(forOp);
            if (!t)
              return std::nullopt;
            trips = *t;
          } else if (isa<LoopLikeOpInterface>(inner)) {
            unbounded = &inner;
            return std::nullopt;
          }
          uint64_t body = 0;
          if (inner.getNumRegions() != 0) {
            std::optional<uint64_t> b = count(&inner);
            if (!b)
              return std::nullopt;
            body = *b;
          }
          if (!forOp) {
            total = addSat(total, mulSat(trips, body));
            continue;
          }
          // The driver runs one more pass that finds every invocation done
          // (a SIMD loop ends on an all-off mask), and counts it.
          chain.push_back(forOp);
          chainSum = addSat(chainSum, addSat(addSat(trips, 1),
                                             mulSat(trips, body)));
          chainBody = std::max(chainBody, body);
        }
        closeChain();
      }
    return total;
  }

  Operation *unbounded = nullptr;

private:
  DataFlowSolver &solver;

  std::optional<ConstantIntRanges> range(Value v) {
    auto *lattice = solver.lookupState<dataflow::IntegerValueRangeLattice>(v);
    if (!lattice || lattice->getValue().isUninitialized())
      return std::nullopt;
    ConstantIntRanges r = lattice->getValue().getValue();
    // Index values: the solver's range narrowed by the path-sensitive
    // evaluation below (64-bit signed).
    if (r.smin().getBitWidth() != 64)
      return r;
    Interval e = eval(v, DenseMap<Value, Interval>(), 0);
    int64_t lo = std::max(e.lo, r.smin().getSExtValue());
    int64_t hi = std::min(e.hi, r.smax().getSExtValue());
    if (lo > hi)
      return r;
    return ConstantIntRanges::fromSigned(APInt(64, lo, /*isSigned=*/true),
                                         APInt(64, hi, /*isSigned=*/true));
  }

  /// A signed interval of an index value.
  struct Interval {
    int64_t lo = std::numeric_limits<int64_t>::min();
    int64_t hi = std::numeric_limits<int64_t>::max();
    bool full() const {
      return lo == std::numeric_limits<int64_t>::min() &&
             hi == std::numeric_limits<int64_t>::max();
    }
  };
  static Interval clampWide(__int128 lo, __int128 hi) {
    Interval r;
    if (lo < std::numeric_limits<int64_t>::min() ||
        hi > std::numeric_limits<int64_t>::max())
      return r;
    r.lo = static_cast<int64_t>(lo);
    r.hi = static_cast<int64_t>(hi);
    return r;
  }

  /// The range of `v` where the values in `assume` are known to lie in
  /// theirs: interval arithmetic over the index math, splitting at a select
  /// whose condition compares a value with a constant. The integer range
  /// analysis joins a select's operands without the condition, so it finds
  /// no bound for lower-affine's ceildiv (x <= 0 ? -(-x / c) : (x - 1) / c
  /// + 1) even where x >= 0 (a key loop's block count).
  Interval eval(Value v, const DenseMap<Value, Interval> &assume,
                unsigned depth) {
    Interval base;
    if (auto *lattice =
            solver.lookupState<dataflow::IntegerValueRangeLattice>(v);
        lattice && !lattice->getValue().isUninitialized() &&
        lattice->getValue().getValue().smin().getBitWidth() <= 64) {
      base.lo = lattice->getValue().getValue().smin().getSExtValue();
      base.hi = lattice->getValue().getValue().smax().getSExtValue();
    }
    auto meet = [&](Interval r) {
      r.lo = std::max(r.lo, base.lo);
      r.hi = std::min(r.hi, base.hi);
      if (auto it = assume.find(v); it != assume.end()) {
        r.lo = std::max(r.lo, it->second.lo);
        r.hi = std::min(r.hi, it->second.hi);
      }
      return r;
    };
    Operation *def = v.getDefiningOp();
    if (!def || depth > 16 || !v.getType().isIndex())
      return meet(Interval());
    auto operand = [&](unsigned i) {
      return eval(def->getOperand(i), assume, depth + 1);
    };
    auto constOf = [&](unsigned i) -> std::optional<int64_t> {
      APInt c;
      if (matchPattern(def->getOperand(i), m_ConstantInt(&c)))
        return c.getSExtValue();
      return std::nullopt;
    };
    if (auto c = dyn_cast<arith::ConstantIndexOp>(def))
      return meet({c.value(), c.value()});
    if (isa<arith::AddIOp, arith::SubIOp, arith::MulIOp>(def)) {
      Interval a = operand(0), b = operand(1);
      if (a.full() || b.full())
        return meet(Interval());
      __int128 al = a.lo, ah = a.hi, bl = b.lo, bh = b.hi;
      if (isa<arith::AddIOp>(def))
        return meet(clampWide(al + bl, ah + bh));
      if (isa<arith::SubIOp>(def))
        return meet(clampWide(al - bh, ah - bl));
      __int128 p[4] = {al * bl, al * bh, ah * bl, ah * bh};
      return meet(clampWide(*std::min_element(p, p + 4),
                            *std::max_element(p, p + 4)));
    }
    if (isa<arith::DivSIOp, arith::DivUIOp, arith::CeilDivUIOp,
            arith::RemUIOp>(def)) {
      std::optional<int64_t> c = constOf(1);
      Interval a = operand(0);
      if (!c || *c <= 0 || a.full())
        return meet(Interval());
      bool unsignedOp = !isa<arith::DivSIOp>(def);
      if (unsignedOp && a.lo < 0)
        return meet(Interval());
      if (isa<arith::RemUIOp>(def))
        return meet({0, std::min<int64_t>(a.hi, *c - 1)});
      if (isa<arith::CeilDivUIOp>(def))
        return meet({(a.lo + *c - 1) / *c, (a.hi + *c - 1) / *c});
      // Truncation toward zero is monotone in the dividend.
      return meet({a.lo / *c, a.hi / *c});
    }
    if (isa<arith::MinSIOp, arith::MaxSIOp, arith::MinUIOp, arith::MaxUIOp>(
            def)) {
      Interval a = operand(0), b = operand(1);
      bool isUnsigned = isa<arith::MinUIOp, arith::MaxUIOp>(def);
      // Unsigned order is the signed one on non-negative values; with one
      // side non-negative, an unsigned min is at most that side.
      if (isUnsigned && (a.lo < 0 || b.lo < 0)) {
        if (isa<arith::MinUIOp>(def)) {
          if (a.lo >= 0 && !a.full())
            return meet({0, a.hi});
          if (b.lo >= 0 && !b.full())
            return meet({0, b.hi});
        }
        return meet(Interval());
      }
      if (isa<arith::MinSIOp, arith::MinUIOp>(def))
        return meet({std::min(a.lo, b.lo), std::min(a.hi, b.hi)});
      return meet({std::max(a.lo, b.lo), std::max(a.hi, b.hi)});
    }
    if (isa<arith::IndexCastOp, arith::IndexCastUIOp>(def))
      return meet(Interval());
    if (auto sel = dyn_cast<arith::SelectOp>(def)) {
      // Each operand where the condition holds, or fails, on the value it
      // compares with a constant.
      auto cmp = sel.getCondition().getDefiningOp<arith::CmpIOp>();
      APInt c;
      DenseMap<Value, Interval> yes(assume), no(assume);
      bool split = false;
      if (cmp && cmp.getLhs().getType().isIndex() &&
          matchPattern(cmp.getRhs(), m_ConstantInt(&c))) {
        int64_t k = c.getSExtValue();
        Value x = cmp.getLhs();
        Interval xr = eval(x, assume, depth + 1);
        auto bounded = [&](DenseMap<Value, Interval> &m, int64_t lo,
                           int64_t hi) {
          Interval r = xr;
          r.lo = std::max(r.lo, lo);
          r.hi = std::min(r.hi, hi);
          m[x] = r;
        };
        const int64_t min = std::numeric_limits<int64_t>::min(),
                      max = std::numeric_limits<int64_t>::max();
        switch (cmp.getPredicate()) {
        case arith::CmpIPredicate::sle:
          bounded(yes, min, k);
          bounded(no, k == max ? max : k + 1, max);
          split = true;
          break;
        case arith::CmpIPredicate::slt:
          bounded(yes, min, k == min ? min : k - 1);
          bounded(no, k, max);
          split = true;
          break;
        case arith::CmpIPredicate::sge:
          bounded(yes, k, max);
          bounded(no, min, k == min ? min : k - 1);
          split = true;
          break;
        case arith::CmpIPredicate::sgt:
          bounded(yes, k == max ? max : k + 1, max);
          bounded(no, min, k);
          split = true;
          break;
        default:
          break;
        }
      }
      if (!split)
        return meet(Interval());
      auto empty = [](const DenseMap<Value, Interval> &m, Value x) {
        auto it = m.find(x);
        return it != m.end() && it->second.lo > it->second.hi;
      };
      Value x = cmp.getLhs();
      bool yesPossible = !empty(yes, x), noPossible = !empty(no, x);
      if (!yesPossible && !noPossible)
        return meet(Interval());
      Interval r{std::numeric_limits<int64_t>::max(),
                 std::numeric_limits<int64_t>::min()};
      if (yesPossible) {
        Interval a = eval(sel.getTrueValue(), yes, depth + 1);
        r.lo = std::min(r.lo, a.lo);
        r.hi = std::max(r.hi, a.hi);
      }
      if (noPossible) {
        Interval b = eval(sel.getFalseValue(), no, depth + 1);
        r.lo = std::min(r.lo, b.lo);
        r.hi = std::max(r.hi, b.hi);
      }
      return meet(r);
    }
    return meet(Interval());
  }

  /// ceil((hi - lo) / step) for a range [lo, hi) of non-negative indices,
  /// nullopt when unknown.
  std::optional<uint64_t> spanBound(Value lo, Value hi, Value step) {
    auto st = range(step);
    std::optional<uint64_t> n = relativeSpan(hi, lo, 0);
    std::optional<uint64_t> hiMax = nonNegativeMax(hi);
    auto loR = range(lo);
    if (hiMax && loR && !loR->smin().isNegative()) {
      uint64_t loMin = loR->smin().getZExtValue();
      uint64_t byRange = *hiMax > loMin ? *hiMax - loMin : 0;
      n = n ? std::min(*n, byRange) : byRange;
    }
    if (!n || !st || st->smin().isNonPositive() ||
        st->smin().getActiveBits() > 32)
      return std::nullopt;
    uint64_t s = st->smin().getZExtValue();
    return (*n + s - 1) / s;
  }

  std::optional<uint64_t> tripBound(scf::ForOp forOp) {
    auto lb = range(forOp.getLowerBound()), ub = range(forOp.getUpperBound()),
         step = range(forOp.getStep());
    bool isSigned = !forOp.getUnsignedCmp();
    if (!lb || !ub || !step) {
      unbounded = forOp;
      return std::nullopt;
    }
    APInt lo = isSigned ? lb->smin() : lb->umin();
    APInt hi = isSigned ? ub->smax() : ub->umax();
    APInt st = isSigned ? step->smin() : step->umin();
    if (st.isNonPositive() || (isSigned && lo.isMinSignedValue()) ||
        (!isSigned && hi.isMaxValue())) {
      unbounded = forOp;
      return std::nullopt;
    }
    if (isSigned ? hi.sle(lo) : hi.ule(lo))
      return 0;
    // ceil((hi - lo) / st); a span past 32 bits (SPIR-V's index width)
    // means the range analysis knows nothing about a bound.
    APInt span = hi - lo;
    std::optional<uint64_t> rel =
        relativeSpan(forOp.getUpperBound(), forOp.getLowerBound(), 0);
    if (span.getActiveBits() > 32 && !rel) {
      unbounded = forOp;
      return std::nullopt;
    }
    uint64_t n = span.getActiveBits() > 32 ? *rel : span.getZExtValue();
    if (rel)
      n = std::min(n, *rel);
    uint64_t s = st.getZExtValue();
    return (n + s - 1) / s;
  }

  /// The largest value of a non-negative index `v` (nullopt when its range
  /// is unknown, may be negative or is past 32 bits).
  std::optional<uint64_t> nonNegativeMax(Value v) {
    auto r = range(v);
    if (!r || r->smin().isNegative() || r->smax().getActiveBits() > 32)
      return std::nullopt;
    return r->smax().getZExtValue();
  }

  /// A bound on ub - lb from how `ub` is computed from `lb`, which ranges
  /// alone cannot see: a loop over one chunk, [begin, min(begin + chunk,
  /// end)) (split-KV's share of the key blocks), runs at most max(chunk)
  /// times whatever begin is. Recognized: ub == lb, ub = x + c with a bound
  /// on x - lb, ub = min(x, y) with a bound on either. Only for
  /// non-negative values (indices), where signed and unsigned orders agree.
  std::optional<uint64_t> relativeSpan(Value ub, Value lb, unsigned depth) {
    if (depth > 8 || !nonNegativeMax(ub) || !nonNegativeMax(lb))
      return std::nullopt;
    if (ub == lb)
      return 0;
    Operation *def = ub.getDefiningOp();
    if (!def)
      return std::nullopt;
    if (auto add = dyn_cast<arith::AddIOp>(def)) {
      std::optional<uint64_t> best;
      for (auto [x, c] : {std::pair(add.getLhs(), add.getRhs()),
                          std::pair(add.getRhs(), add.getLhs())}) {
        std::optional<uint64_t> cMax = nonNegativeMax(c);
        std::optional<uint64_t> xSpan = relativeSpan(x, lb, depth + 1);
        if (cMax && xSpan && (!best || *cMax + *xSpan < *best))
          best = *cMax + *xSpan;
      }
      return best;
    }
    if (isa<arith::MinUIOp, arith::MinSIOp>(def)) {
      std::optional<uint64_t> a =
          relativeSpan(def->getOperand(0), lb, depth + 1);
      std::optional<uint64_t> b =
          relativeSpan(def->getOperand(1), lb, depth + 1);
      if (a && b)
        return std::min(*a, *b);
      return a ? a : b;
    }
    return std::nullopt;
  }
};
} // namespace

LogicalResult mlir::attn::checkSPIRVLoopBudget(ModuleOp module,
                                               uint64_t maxIterations) {
  if (maxIterations == 0)
    return success();
  DataFlowSolver solver;
  dataflow::loadBaselineAnalyses(solver);
  solver.load<dataflow::IntegerRangeAnalysis>();
  if (failed(solver.initializeAndRun(module)))
    return failure();
  bool overBudget = false;
  module.walk([&](gpu::GPUFuncOp fn) {
    if (!fn.isKernel())
      return;
    LoopCounter counter(solver);
    std::optional<uint64_t> n = counter.count(fn);
    if (!n) {
      InFlightDiagnostic diag =
          fn.emitError("attn-spirv-loop-budget: cannot bound the loop "
                       "iterations of one invocation of this kernel; the "
                       "target allows at most ")
          << maxIterations;
      if (counter.unbounded)
        diag.attachNote(counter.unbounded->getLoc())
            << "this loop's trip count has no bound";
      overBudget = true;
      return;
    }
    if (*n > maxIterations) {
      fn.emitError("attn-spirv-loop-budget: one invocation of this kernel "
                   "can run up to ")
          << *n << " loop iterations; the target ends loops after "
          << maxIterations
          << " (lavapipe: LP_MAX_TGSI_LOOP_ITERATIONS), which would give "
             "wrong results";
      overBudget = true;
    }
  });
  return failure(overBudget);
}

namespace {
struct SPIRVLoopBudgetPass
    : mlir::attn::impl::SPIRVLoopBudgetPassBase<SPIRVLoopBudgetPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(mlir::attn::checkSPIRVLoopBudget(getOperation(), maxIterations)))
      signalPassFailure();
  }
};
} // namespace
