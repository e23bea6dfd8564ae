//===- CPUDistinctDestinations.cpp - one fresh destination per writer -----===//
//
// attn-cpu-distinct-destinations (Passes.td): undoes CSE's merging of fresh
// destinations (tensor.empty, linalg.fill of one) before one-shot
// bufferization, so each temporary of a tile is allocated on its own
// instead of copied where the merged destinations' lifetimes overlap.
//
//===----------------------------------------------------------------------===//
#include "attn/Target/CPU/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"

namespace mlir::attn {
#define GEN_PASS_DEF_CPUDISTINCTDESTINATIONSPASS
#include "attn/Target/CPU/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {
/// Whether `v` is a fresh destination: a tensor.empty, or a fill of one.
bool isFresh(Value v) {
  Operation *def = v.getDefiningOp();
  if (isa_and_nonnull<tensor::EmptyOp>(def))
    return true;
  auto fill = dyn_cast_or_null<linalg::FillOp>(def);
  return fill && fill.getOutputs().size() == 1 &&
         fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>();
}

/// The operands that write into `v`: DPS inits of destination-style ops.
SmallVector<OpOperand *> writers(Value v) {
  SmallVector<OpOperand *> out;
  for (OpOperand &use : v.getUses()) {
    auto dps = dyn_cast<DestinationStyleOpInterface>(use.getOwner());
    if (dps && dps.isDpsInit(&use))
      out.push_back(&use);
  }
  return out;
}

struct CPUDistinctDestinationsPass
    : mlir::attn::impl::CPUDistinctDestinationsPassBase<
          CPUDistinctDestinationsPass> {
  void runOnOperation() override {
    SmallVector<Value> shared;
    getOperation().walk([&](Operation *op) {
      if (op->getNumResults() == 1 && isFresh(op->getResult(0)) &&
          writers(op->getResult(0)).size() > 0 &&
          !op->getResult(0).hasOneUse())
        shared.push_back(op->getResult(0));
    });
    OpBuilder b(&getContext());
    for (Value v : shared) {
      Operation *def = v.getDefiningOp();
      // Writers beside the definition get clones. The original stays with
      // the other uses, when there are any: a writer nested in a region
      // below (a guard's branch updating the state in place while the
      // other branch yields the original, which must share its buffer) and
      // reads of the value, which must see it unwritten. Without such uses
      // the first writer (in program order) keeps it.
      SmallVector<OpOperand *> beside;
      for (OpOperand *w : writers(v))
        if (w->getOwner()->getBlock() == def->getBlock())
          beside.push_back(w);
      llvm::sort(beside, [](OpOperand *a, OpOperand *b) {
        return a->getOwner()->isBeforeInBlock(b->getOwner());
      });
      const bool othersKeep =
          !llvm::hasSingleElement(v.getUses()) &&
          size_t(std::distance(v.use_begin(), v.use_end())) > beside.size();
      b.setInsertionPoint(def);
      for (OpOperand *w : othersKeep ? ArrayRef<OpOperand *>(beside)
                                     : ArrayRef<OpOperand *>(beside).drop_front()) {
        if (auto fill = dyn_cast<linalg::FillOp>(def)) {
          Operation *empty = b.clone(*fill.getOutputs()[0].getDefiningOp());
          IRMapping map;
          map.map(fill.getOutputs()[0], empty->getResult(0));
          w->set(b.clone(*fill, map)->getResult(0));
        } else {
          w->set(b.clone(*def)->getResult(0));
        }
      }
    }
  }
};
} // namespace
