//===- SPIRVLoopBudget.cpp - bound the loop iterations of a kernel --------===//
//
// Some Vulkan drivers end a shader's loops silently after a fixed number of
// iterations per invocation: llvmpipe (lavapipe) decrements one counter per
// iteration of any loop and breaks every loop once 65535 are used up, so a
// kernel that needs more returns wrong results without an error. This step
// of attn-to-spirv-pipeline bounds, per outlined kernel, the total number of
// scf.for iterations one invocation can run (integer range analysis of the
// bounds, nested trip counts multiplied, plus the one exiting pass per loop
// execution that llvmpipe also counts; a loop over one chunk of a range,
// [begin, min(begin + chunk, end)) as split-KV's are, counts its chunk) and
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
      for (Block &block : region)
        for (Operation &inner : block) {
          uint64_t trips = 1;
          if (auto forOp = dyn_cast<scf::ForOp>(inner)) {
            std::optional<uint64_t> t = tripBound(forOp);
            if (!t)
              return std::nullopt;
            trips = *t;
            // The driver runs one more pass that finds every invocation
            // done (a SIMD loop ends on an all-off mask), and counts it.
            total = addSat(total, addSat(trips, 1));
          } else if (isa<LoopLikeOpInterface>(inner)) {
            unbounded = &inner;
            return std::nullopt;
          }
          if (inner.getNumRegions() == 0)
            continue;
          std::optional<uint64_t> body = count(&inner);
          if (!body)
            return std::nullopt;
          total = addSat(total, mulSat(trips, *body));
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
    return lattice->getValue().getValue();
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
