//===- SPIRVLayerBuffers.cpp - a layer's tensors in device buffers --------===//
//
// attn-spirv-layer-buffers: a Vulkan kernel source is a host function that
// only launches kernels. A layer (attn.mha after attn-decompose-mha) has
// function-level tensor work around its attn.sdpa: the projections (linalg
// contractions and elementwise epilogues) and the views of the weights.
// This pass bufferizes all of it except the attention ops: every
// intermediate tensor becomes a device buffer the host function allocates
// (a workspace of the artifact), the weights' head splits become views of
// the argument buffers, and each attn.sdpa is left in the runtime's
// destination-passing form (its operands bufferization.to_tensor of
// buffers, its results materialized into buffers) that the attention's
// GPU mapping takes. attn-spirv-map-linalg then turns the linalg ops on
// buffers into kernels.
//
//===----------------------------------------------------------------------===//
#include "attn/Dialect/Attn/IR/AttnDialect.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Target/SPIRV/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/Transforms.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::attn {
#define GEN_PASS_DEF_SPIRVLAYERBUFFERSPASS
#include "attn/Target/SPIRV/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

bool isAttnOp(Operation *op) {
  return op->getDialect() &&
         op->getDialect()->getNamespace() ==
             mlir::attn::AttnDialect::getDialectNamespace();
}

/// Whether `fn` has tensor work besides its attention ops and the
/// to_tensor / materialize_in_destination around them (the plain kernel
/// source, which this pass leaves as it is).
bool hasLayerWork(func::FuncOp fn) {
  WalkResult r = fn.walk([](Operation *op) {
    if (isAttnOp(op) ||
        isa<bufferization::ToTensorOp,
            bufferization::MaterializeInDestinationOp>(op))
      return WalkResult::advance();
    auto isTensor = [](Type t) { return isa<TensorType>(t); };
    if (llvm::any_of(op->getOperandTypes(), isTensor) ||
        llvm::any_of(op->getResultTypes(), isTensor))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return r.wasInterrupted();
}

LogicalResult bufferizeLayer(func::FuncOp fn) {
  IRRewriter rw(fn.getContext());
  // Intermediate tensors that end in a destination are built there (the
  // output projection's epilogue writes the result argument directly).
  if (failed(bufferization::eliminateEmptyTensors(rw, fn)))
    return fn.emitError("attn-spirv-layer-buffers: empty-tensor elimination "
                        "failed");

  bufferization::OneShotBufferizationOptions options;
  // The attention ops stay on tensors: their mapping reads the
  // destination-passing form this pass leaves around them.
  options.opFilter.denyOperation(isAttnOp);
  options.allowUnknownOps = true;
  options.bufferizeFunctionBoundaries = false;
  options.setFunctionBoundaryTypeConversion(
      bufferization::LayoutMapOption::IdentityLayoutMap);
  options.unknownTypeConverterFn =
      [](TensorType type, Attribute space,
         const bufferization::BufferizationOptions &) -> BaseMemRefType {
    return bufferization::getMemRefTypeWithStaticIdentityLayout(type, space);
  };
  options.memCpyFn = [](OpBuilder &b, Location loc, Value from,
                        Value to) -> LogicalResult {
    linalg::CopyOp::create(b, loc, from, to);
    return success();
  };
  bufferization::BufferizationState state;
  if (failed(bufferization::runOneShotBufferize(fn, options, state)))
    return fn.emitError("attn-spirv-layer-buffers: One-Shot Bufferize failed "
                        "on the layer");

  // An attention result a buffer op reads: materialized into a buffer of
  // its own (the attention kernel's destination), read from there.
  SmallVector<bufferization::ToBufferOp> toBuffers;
  fn.walk([&](bufferization::ToBufferOp op) { toBuffers.push_back(op); });
  for (bufferization::ToBufferOp op : toBuffers) {
    Value t = op.getTensor();
    Operation *def = t.getDefiningOp();
    if (!def || !isAttnOp(def))
      return op.emitError("attn-spirv-layer-buffers: a tensor the layer "
                          "reads as a buffer is not an attention result");
    auto tensorTy = cast<RankedTensorType>(t.getType());
    if (!tensorTy.hasStaticShape())
      return op.emitError("attn-spirv-layer-buffers: an attention result of "
                          "dynamic shape in a layer");
    // Allocated before the attention (whose kernel takes it), written
    // after it.
    rw.setInsertionPoint(def);
    auto bufTy =
        MemRefType::get(tensorTy.getShape(), tensorTy.getElementType());
    Value buf = memref::AllocOp::create(rw, op.getLoc(), bufTy);
    rw.setInsertionPointAfter(def);
    auto mat = bufferization::MaterializeInDestinationOp::create(
        rw, op.getLoc(), t, buf);
    mat.setRestrict(true);
    mat.setWritable(true);
    rw.setInsertionPoint(op);
    Value replacement = buf;
    if (bufTy != op.getType())
      replacement = memref::CastOp::create(rw, op.getLoc(), op.getType(), buf);
    rw.replaceOp(op, replacement);
  }
  // Copies of a buffer onto itself (the result written where it already
  // is) are no-ops.
  fn.walk([&](Operation *op) {
    if (auto c = dyn_cast<memref::CopyOp>(op);
        c && c.getSource() == c.getTarget())
      op->erase();
    else if (auto c = dyn_cast<linalg::CopyOp>(op);
             c && c.hasPureBufferSemantics() &&
             c.getDpsInputs()[0] == c.getDpsInits()[0])
      op->erase();
  });

  // What is left on tensors is the attention ops' form only.
  WalkResult left = fn.walk([&](Operation *op) {
    if (isAttnOp(op))
      return WalkResult::skip();
    if (isa<bufferization::ToTensorOp,
            bufferization::MaterializeInDestinationOp>(op))
      return WalkResult::advance();
    if (llvm::any_of(op->getResultTypes(),
                     [](Type t) { return isa<TensorType>(t); })) {
      op->emitError("attn-spirv-layer-buffers: this tensor op of the layer "
                    "was not bufferized");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(left.wasInterrupted());
}

struct SPIRVLayerBuffersPass
    : mlir::attn::impl::SPIRVLayerBuffersPassBase<SPIRVLayerBuffersPass> {
  using Base::Base;
  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      if (fn.isExternal())
        continue;
      // An attention layer not decomposed: nothing below would lower it.
      WalkResult mha = fn.walk([](Operation *op) {
        if (isAttnOp(op) && !isa<mlir::attn::SdpaOp>(op)) {
          op->emitOpError("attn-spirv-layer-buffers: decompose it first "
                          "(attn-decompose-mha; attn-to-spirv-pipeline "
                          "does)");
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      });
      if (mha.wasInterrupted())
        return signalPassFailure();
      if (!hasLayerWork(fn))
        continue;
      if (refuse) {
        fn.emitError("attn-to-spirv-pipeline{variant=tiled} compiles "
                     "attention kernels only; a layer (attn.mha) needs "
                     "variant=portable, coopmat or coopmat-scalar");
        return signalPassFailure();
      }
      if (failed(bufferizeLayer(fn)))
        return signalPassFailure();
    }
  }
};

} // namespace
