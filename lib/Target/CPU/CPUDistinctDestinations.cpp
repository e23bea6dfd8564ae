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
#include "mlir/Dialect/SCF/IR/SCF.h"
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
      // Writers beside the definition get clones; the original stays with
      // the writers nested in a region below (a guard's branch updating the
      // state in place while the other branch yields the original, which
      // must share its buffer) and with reads of the value (which must see
      // it unwritten).
      SmallVector<OpOperand *> beside;
      bool nested = false;
      for (OpOperand *w : writers(v)) {
        Operation *owner = w->getOwner();
        if (owner->getBlock() == def->getBlock()) {
          beside.push_back(w);
          continue;
        }
        // A branch of an scf.if beside the definition (the rescale guard).
        auto guard = dyn_cast<scf::IfOp>(owner->getParentOp());
        if (guard && guard->getBlock() == def->getBlock())
          nested = true;
      }
      // Only where a guard's branch updates the value in place: elsewhere
      // bufferization's copies (if any) stay at the definition's level, and
      // the IR is left as it is (the looped kernels' state is carried by
      // the loop, not written in place from a branch).
      if (!nested || beside.empty())
        continue;
      b.setInsertionPoint(def);
      for (OpOperand *w : beside) {
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
