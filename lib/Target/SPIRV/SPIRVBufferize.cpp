//===- SPIRVBufferize.cpp - bufferization for kernels without a heap -----===//
//
// GPU kernels for Vulkan have no heap: every temporary of a tile must be a
// fixed-size private (Function storage class) variable, and a loop must not
// yield a fresh buffer per iteration (the variable behind it would be one
// and the same each time). This step of attn-to-spirv-pipeline therefore
//   1. makes every tensor an scf.for carries end the iteration in the
//      buffer it started in (a linalg.copy into the iter_arg before the
//      yield; bufferization drops it where the update was in place),
//   2. runs One-Shot Bufferize with new buffers in the SPIR-V Function storage
//      class (function arguments keep the default space: storage buffers),
//   3. hoists those private buffers out of the sequential loops inside a
//      parallel tile, so each is allocated once per tile (their uses are
//      confined to one iteration, so sharing across iterations is safe),
//   4. wraps a function whose only tile was folded away (one tile in all:
//      the canonicalizer inlines a single-iteration scf.forall) into a
//      one-iteration scf.parallel, so it still becomes a kernel. Nothing
//      may canonicalize between this step and the GPU mapping.
//
//===----------------------------------------------------------------------===//
#include "attn/Conversion/SPIRVBufferLimits.h"
#include "attn/Target/SPIRV/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotModuleBufferize.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::attn {
#define GEN_PASS_DEF_SPIRVBUFFERIZEPASS
#include "attn/Target/SPIRV/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

LogicalResult mlir::attn::bufferizeForSPIRV(ModuleOp module) {
  MLIRContext *ctx = module.getContext();

  // 1. Loop-carried tensors end where they began.
  module.walk([&](scf::ForOp loop) {
    auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
    OpBuilder b(yield);
    for (auto [i, operand] : llvm::enumerate(yield.getOperands())) {
      Value iterArg = loop.getRegionIterArgs()[i];
      if (!isa<RankedTensorType>(operand.getType()) || operand == iterArg)
        continue;
      Value copied = linalg::CopyOp::create(b, yield.getLoc(), operand, iterArg)
                         .getResult(0);
      yield->setOperand(i, copied);
    }
  });

  // 2. Bufferize; temporaries private, arguments in the default space.
  bufferization::OneShotBufferizationOptions options;
  options.bufferizeFunctionBoundaries = true;
  options.allowReturnAllocsFromLoops = false;
  options.setFunctionBoundaryTypeConversion(
      bufferization::LayoutMapOption::IdentityLayoutMap);
  options.functionArgTypeConverterFn =
      [](bufferization::TensorLikeType type, Attribute, func::FuncOp,
         const bufferization::BufferizationOptions &)
      -> bufferization::BufferLikeType {
    return cast<bufferization::BufferLikeType>(
        bufferization::getMemRefTypeWithStaticIdentityLayout(
            cast<TensorType>(type), Attribute()));
  };
  // Function storage class directly: the Vulkan storage-class mapping
  // has no Function equivalent for #gpu.address_space<private>.
  Attribute privateSpace =
      spirv::StorageClassAttr::get(ctx, spirv::StorageClass::Function);
  options.defaultMemorySpaceFn =
      [privateSpace](TensorType) -> std::optional<Attribute> {
    return privateSpace;
  };
  options.memCpyFn = [](OpBuilder &b, Location loc, Value from,
                        Value to) -> LogicalResult {
    linalg::CopyOp::create(b, loc, from, to);
    return success();
  };
  bufferization::BufferizationState state;
  if (failed(bufferization::runOneShotModuleBufferize(module, options, state)))
    return failure();

  // Copies of a buffer onto itself (an iteration that updated in place,
  // the output written where it already is) are no-ops; erased here
  // since no canonicalization follows before the GPU mapping.
  module.walk([&](linalg::CopyOp copy) {
    if (copy.hasPureBufferSemantics() &&
        copy.getDpsInputs()[0] == copy.getDpsInits()[0])
      copy.erase();
  });

  // 3. Private buffers leave the sequential loops of a tile.
  bool refused = false;
  module.walk([&](memref::AllocOp alloc) {
    auto type = alloc.getType();
    if (type.getMemorySpace() != privateSpace) {
      // Bufferization gives a copy the source's memory space; a kernel
      // cannot allocate storage buffers.
      alloc.emitError("attn-to-spirv-pipeline: a copy of an argument "
                      "buffer would be allocated in device memory, which "
                      "a kernel cannot do");
      refused = true;
      return;
    }
    if (!type.hasStaticShape()) {
      alloc.emitError("attn-to-spirv-pipeline: a temporary has a dynamic "
                      "shape; SPIR-V kernels need static tile shapes");
      refused = true;
      return;
    }
    Operation *outermost = nullptr;
    for (Operation *p = alloc->getParentOp(); p; p = p->getParentOp()) {
      if (isa<scf::ForallOp, scf::ParallelOp, func::FuncOp>(p))
        break;
      if (isa<scf::ForOp>(p))
        outermost = p;
    }
    if (outermost)
      alloc->moveBefore(outermost);
  });

  // 4. A single tile still needs a kernel.
  module.walk([&](func::FuncOp fn) {
    if (fn.isExternal())
      return;
    bool parallel = false;
    fn.walk([&](Operation *op) {
      if (isa<scf::ForallOp, scf::ParallelOp>(op))
        parallel = true;
    });
    if (parallel || !llvm::hasSingleElement(fn.getBody()))
      return;
    Block &body = fn.getBody().front();
    OpBuilder b(ctx);
    b.setInsertionPointToStart(&body);
    Location loc = fn.getLoc();
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    auto loop = scf::ParallelOp::create(b, loc, ValueRange{zero},
                                        ValueRange{one}, ValueRange{one});
    Block *loopBody = loop.getBody();
    // Everything after the loop but the return moves into it.
    for (Operation &op : llvm::make_early_inc_range(
             llvm::make_range(std::next(loop->getIterator()),
                              body.getTerminator()->getIterator())))
      op.moveBefore(loopBody->getTerminator());
  });
  return failure(refused);
}

namespace {
struct SPIRVBufferizePass
    : mlir::attn::impl::SPIRVBufferizePassBase<SPIRVBufferizePass> {
  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (failed(mlir::attn::checkSPIRVBufferArguments(
              fn, "attn-spirv-bufferize")))
        return signalPassFailure();
    if (failed(mlir::attn::bufferizeForSPIRV(getOperation())))
      signalPassFailure();
  }
};
} // namespace
