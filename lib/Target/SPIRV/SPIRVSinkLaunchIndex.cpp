//===- SPIRVSinkLaunchIndex.cpp - sizes recomputed inside the launch ------===//
//
// attn-spirv-sink-launch-index: a SPIR-V kernel takes buffers only (the
// artifact passes sizes through a size buffer the host fills, never as
// scalar arguments), so every index value a gpu.launch body reads from
// outside must be recomputed inside it. Upstream's
// gpu-launch-sink-index-computations sinks constants, memref.dim,
// arith.select and arith.cmpi; a size derived from the launch's dynamic
// sizes with integer arithmetic (the split-KV chunk count that grows with
// the key length, max(N, ceildiv(Skv, 2^16))) stayed outside and became a
// scalar kernel argument. This pass sinks those too.
//
//===----------------------------------------------------------------------===//
#include "attn/Conversion/TileDistribution.h"
#include "attn/Target/SPIRV/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Utils/GPUUtils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::attn {
#define GEN_PASS_DEF_SPIRVSINKLAUNCHINDEXPASS
#include "attn/Target/SPIRV/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {
/// Side-effect-free ops whose results are integers or indices, built from
/// other such values: recomputing them inside costs a few instructions and
/// keeps the kernel's arguments buffers only.
bool isSinkable(Operation *op) {
  if (isa<arith::ConstantOp, memref::DimOp>(op))
    return true;
  if (!isa<arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::DivUIOp,
           arith::CeilDivUIOp, arith::RemUIOp, arith::MinUIOp, arith::MaxUIOp,
           arith::DivSIOp, arith::CeilDivSIOp, arith::FloorDivSIOp,
           arith::RemSIOp, arith::MinSIOp, arith::MaxSIOp, arith::SelectOp,
           arith::CmpIOp, arith::IndexCastOp, arith::IndexCastUIOp>(op))
    return false;
  return llvm::all_of(op->getResultTypes(), [](Type t) {
    return t.isIntOrIndex();
  });
}

/// Whether `v` can be recomputed inside a launch: a memref or block
/// argument (which the kernel then takes as a buffer or already has), or
/// the result of a sinkable op over such values.
bool recomputable(Value v, DenseMap<Value, bool> &memo) {
  if (isa<BaseMemRefType>(v.getType()) || isa<BlockArgument>(v))
    return true;
  if (auto it = memo.find(v); it != memo.end())
    return it->second;
  Operation *def = v.getDefiningOp();
  bool ok = def && isSinkable(def) && def->getNumRegions() == 0 &&
            llvm::all_of(def->getOperands(),
                         [&](Value o) { return recomputable(o, memo); });
  memo[v] = ok;
  return ok;
}

struct SPIRVSinkLaunchIndexPass
    : mlir::attn::impl::SPIRVSinkLaunchIndexPassBase<SPIRVSinkLaunchIndexPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<gpu::LaunchOp> launches;
    getOperation()->walk([&](gpu::LaunchOp l) { launches.push_back(l); });
    DenseMap<Value, bool> memo;
    for (gpu::LaunchOp l : launches) {
      // Upstream's walk first (it keeps a value outside when one of its
      // leaves is a memref the body does not use yet).
      if (failed(sinkOperationsIntoLaunchOp(l, isSinkable)))
        return signalPassFailure();
      // Then whatever integer value is left outside, with the memrefs it
      // reads becoming kernel operands.
      SetVector<Value> above;
      getUsedValuesDefinedAbove(l.getBody(), above);
      OpBuilder b(l.getBody());
      b.setInsertionPointToStart(&l.getBody().front());
      IRMapping map;
      for (Value v : above) {
        if (isa<BaseMemRefType>(v.getType()) || isa<BlockArgument>(v) ||
            !recomputable(v, memo))
          continue;
        // (TileDistribution's recursive clone, which keeps memrefs and
        // block arguments as they are.)
        Value inside = mlir::attn::sinkIndexValue(b, v, map);
        v.replaceUsesWithIf(inside, [&](OpOperand &use) {
          return l.getBody().isAncestor(use.getOwner()->getParentRegion());
        });
      }
    }
  }
};
} // namespace
