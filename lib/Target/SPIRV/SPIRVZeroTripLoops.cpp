//===- SPIRVZeroTripLoops.cpp - loops with results that may not run -------===//
//
// attn-spirv-zero-trip-loops: MLIR 22's convert-scf-to-spirv returns an
// scf.for's results through variables that only its body writes, so a loop
// that runs no iteration yields undefined values instead of its initial
// ones. Every scf.for with results whose trip count may be zero is wrapped
// in scf.if (lb < ub) { loop } else { initial values }.
//
//===----------------------------------------------------------------------===//
#include "attn/Target/SPIRV/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"

namespace mlir::attn {
#define GEN_PASS_DEF_SPIRVZEROTRIPLOOPSPASS
#include "attn/Target/SPIRV/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {
struct SPIRVZeroTripLoopsPass
    : mlir::attn::impl::SPIRVZeroTripLoopsPassBase<SPIRVZeroTripLoopsPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<scf::ForOp> loops;
    getOperation().walk([&](scf::ForOp f) {
      if (f.getNumResults() == 0)
        return;
      std::optional<int64_t> lb = getConstantIntValue(f.getLowerBound()),
                             ub = getConstantIntValue(f.getUpperBound());
      if (lb && ub && *lb < *ub)
        return;
      loops.push_back(f);
    });
    for (scf::ForOp f : loops) {
      OpBuilder b(f);
      Location loc = f.getLoc();
      Value runs = arith::CmpIOp::create(
          b, loc,
          f.getUnsignedCmp() ? arith::CmpIPredicate::ult
                             : arith::CmpIPredicate::slt,
          f.getLowerBound(), f.getUpperBound());
      auto ifOp = scf::IfOp::create(b, loc, f.getResultTypes(), runs,
                                    /*withElseRegion=*/true);
      f->replaceAllUsesWith(ifOp.getResults());
      // The loop into the then branch, its initial values out of the else.
      Block &thenBlock = ifOp.getThenRegion().front();
      b.setInsertionPointToEnd(&thenBlock);
      auto yieldThen = scf::YieldOp::create(b, loc, f.getResults());
      f->moveBefore(yieldThen);
      b.setInsertionPointToEnd(&ifOp.getElseRegion().front());
      scf::YieldOp::create(b, loc, f.getInitArgs());
    }
  }
};
} // namespace
