//===- SPIRVDynamicShapes.cpp - runtime sizes for outlined SPIR-V kernels -===//
//
// A Vulkan storage buffer has no sizes, and convert-gpu-to-spirv linearizes
// a memref index only with static strides: a kernel argument such as
// memref<2x8x?x64xf16> (a dynamic sequence length) does not lower. This
// step of attn-to-spirv-pipeline, after outlining, rewrites every kernel
// with dynamically sized memref arguments (dense, identity layout) so that
// one SPIR-V module serves every size:
//
//  - each such argument becomes a 1-D memref<?xT> (a runtime array) and its
//    loads and stores index it linearly, row-major over its sizes;
//  - the dynamic sizes come from one memref<Nxi32> appended to the kernel's
//    arguments, slot i holding the i-th dynamic size of its arguments in
//    argument order; memref.dim of an argument reads its slot (static sizes
//    fold to constants);
//  - every launch of the kernel in the host function collapses those
//    operands (memref.collapse_shape) and fills a fresh size buffer
//    (memref.alloc, memref.store of memref.dim, memref.dealloc after the
//    launch): the host writes what the kernel reads, which the launch
//    metadata records (extractSPIRVKernel) for the runtime to fill.
//
// With max-extent = N > 0 every size a kernel reads is clamped to N
// (arith.minui): the loop budget (attn-spirv-loop-budget) can then bound
// loops over sizes, and the runtime must refuse a launch with a dynamic
// size above N (extractSPIRVKernel records N). Kernels with static shapes
// are left as they are.
//
//===----------------------------------------------------------------------===//
#include "attn/Target/SPIRV/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include "llvm/ADT/DenseMap.h"

namespace mlir::attn {
#define GEN_PASS_DEF_SPIRVDYNAMICSHAPESPASS
#include "attn/Target/SPIRV/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

/// The dynamic sizes of one kernel: slot i is size `dim` of argument `arg`.
struct Slot {
  unsigned arg;
  unsigned dim;
};

bool needsRewrite(BlockArgument a) {
  auto t = dyn_cast<MemRefType>(a.getType());
  return t && !t.hasStaticShape();
}

/// Rewrites one kernel; returns its slots (empty: nothing to do).
FailureOr<SmallVector<Slot>> rewriteKernel(gpu::GPUFuncOp fn,
                                           int64_t maxExtent) {
  SmallVector<Slot> slots;
  SmallVector<unsigned> flat;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    BlockArgument a = fn.getArgument(i);
    if (!needsRewrite(a))
      continue;
    auto t = cast<MemRefType>(a.getType());
    if (!t.getLayout().isIdentity()) {
      fn.emitError("attn-spirv-dynamic-shapes: argument ")
          << i << " (" << t
          << ") has dynamic sizes and a non-identity layout; only dense "
             "row-major buffers can be indexed from their sizes";
      return failure();
    }
    flat.push_back(i);
    for (unsigned d = 0; d < t.getRank(); ++d)
      if (t.isDynamicDim(d))
        slots.push_back({i, d});
  }
  if (slots.empty())
    return slots;

  MLIRContext *ctx = fn.getContext();
  Location loc = fn.getLoc();
  auto sizesType =
      MemRefType::get({int64_t(slots.size())}, IntegerType::get(ctx, 32));
  unsigned sizesArg = fn.getNumArguments();
  if (failed(fn.insertArgument(sizesArg, sizesType, {}, loc)))
    return failure();

  // The sizes, read once at the kernel's entry.
  Block &entry = fn.getBody().front();
  OpBuilder b = OpBuilder::atBlockBegin(&entry);
  Value sizesBuf = fn.getArgument(sizesArg);
  SmallVector<Value> slotValue;
  Value bound =
      maxExtent > 0
          ? arith::ConstantIndexOp::create(b, loc, maxExtent).getResult()
          : Value();
  for (unsigned s = 0; s < slots.size(); ++s) {
    Value idx = arith::ConstantIndexOp::create(b, loc, s);
    Value v = memref::LoadOp::create(b, loc, sizesBuf, ValueRange{idx});
    Value x = arith::IndexCastUIOp::create(b, loc, b.getIndexType(), v);
    if (bound)
      x = arith::MinUIOp::create(b, loc, x, bound);
    slotValue.push_back(x);
  }

  for (unsigned i : flat) {
    BlockArgument a = fn.getArgument(i);
    auto t = cast<MemRefType>(a.getType());
    // This argument's sizes as values at the entry.
    SmallVector<Value> sizes;
    for (unsigned d = 0; d < t.getRank(); ++d) {
      if (!t.isDynamicDim(d)) {
        sizes.push_back(
            arith::ConstantIndexOp::create(b, loc, t.getDimSize(d)));
        continue;
      }
      for (unsigned s = 0; s < slots.size(); ++s)
        if (slots[s].arg == i && slots[s].dim == d)
          sizes.push_back(slotValue[s]);
    }
    // Users first, then the type: the users' indices need the sizes.
    SmallVector<Operation *> users(a.getUsers().begin(), a.getUsers().end());
    for (Operation *user : users) {
      OpBuilder ub(user);
      auto linear = [&](ValueRange indices) {
        Value lin = indices.empty()
                        ? arith::ConstantIndexOp::create(ub, loc, 0).getResult()
                        : indices[0];
        for (unsigned d = 1; d < indices.size(); ++d) {
          lin = arith::MulIOp::create(ub, user->getLoc(), lin, sizes[d]);
          lin = arith::AddIOp::create(ub, user->getLoc(), lin, indices[d]);
        }
        return lin;
      };
      if (auto load = dyn_cast<memref::LoadOp>(user)) {
        if (load.getMemRef() != a)
          continue;
        Value lin = linear(load.getIndices());
        load.getIndicesMutable().assign(lin);
      } else if (auto store = dyn_cast<memref::StoreOp>(user)) {
        if (store.getMemRef() != a) {
          store.emitError("attn-spirv-dynamic-shapes: a buffer argument is "
                          "stored as a value");
          return failure();
        }
        Value lin = linear(store.getIndices());
        store.getIndicesMutable().assign(lin);
      } else if (auto dim = dyn_cast<memref::DimOp>(user)) {
        std::optional<int64_t> d = dim.getConstantIndex();
        if (!d || *d < 0 || *d >= t.getRank()) {
          dim.emitError("attn-spirv-dynamic-shapes: memref.dim of a "
                        "dynamically sized argument needs a constant, "
                        "in-range dimension");
          return failure();
        }
        dim.replaceAllUsesWith(sizes[*d]);
        dim.erase();
      } else {
        user->emitError("attn-spirv-dynamic-shapes: a dynamically sized "
                        "argument is used by '")
            << user->getName()
            << "'; only memref.load, memref.store and memref.dim can be "
               "rewritten to a linear buffer";
        return failure();
      }
    }
    a.setType(MemRefType::get({ShapedType::kDynamic}, t.getElementType(),
                              MemRefLayoutAttrInterface(), t.getMemorySpace()));
  }
  SmallVector<Type> inputs;
  for (BlockArgument a : fn.getArguments())
    inputs.push_back(a.getType());
  fn.setFunctionTypeAttr(TypeAttr::get(FunctionType::get(ctx, inputs, {})));
  return slots;
}
} // namespace

LogicalResult mlir::attn::linearizeDynamicShapes(ModuleOp module,
                                                 int64_t maxExtent) {
  // Kernel (module, function) -> its slots.
  llvm::DenseMap<Operation *, SmallVector<Slot>> rewritten;
  WalkResult walk = module.walk([&](gpu::GPUFuncOp fn) {
    if (!fn.isKernel())
      return WalkResult::advance();
    FailureOr<SmallVector<Slot>> slots = rewriteKernel(fn, maxExtent);
    if (failed(slots))
      return WalkResult::interrupt();
    if (!slots->empty())
      rewritten[fn] = std::move(*slots);
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  if (rewritten.empty())
    return success();
  if (maxExtent > 0)
    module->setAttr(
        kSPIRVMaxDynamicExtentAttr,
        IntegerAttr::get(IntegerType::get(module.getContext(), 64), maxExtent));

  SmallVector<gpu::LaunchFuncOp> launches;
  module.walk([&](gpu::LaunchFuncOp l) { launches.push_back(l); });
  for (gpu::LaunchFuncOp launch : launches) {
    auto fn = SymbolTable::lookupNearestSymbolFrom<gpu::GPUFuncOp>(
        launch, launch.getKernelAttr());
    auto it = fn ? rewritten.find(fn) : rewritten.end();
    if (it == rewritten.end())
      continue;
    const SmallVector<Slot> &slots = it->second;
    Location loc = launch.getLoc();
    OpBuilder b(launch);
    auto sizesType = MemRefType::get({int64_t(slots.size())}, b.getI32Type());
    Value sizes = memref::AllocOp::create(b, loc, sizesType);
    for (unsigned s = 0; s < slots.size(); ++s) {
      Value operand = launch.getKernelOperands()[slots[s].arg];
      Value d = memref::DimOp::create(b, loc, operand, slots[s].dim);
      Value v = arith::IndexCastUIOp::create(b, loc, b.getI32Type(), d);
      Value idx = arith::ConstantIndexOp::create(b, loc, s);
      memref::StoreOp::create(b, loc, v, sizes, ValueRange{idx});
    }
    SmallVector<Value> operands(launch.getKernelOperands());
    for (unsigned i = 0; i < operands.size(); ++i) {
      auto t = dyn_cast<MemRefType>(operands[i].getType());
      if (!t || t.hasStaticShape() || t.getRank() == 1)
        continue;
      SmallVector<ReassociationIndices> all(1);
      for (unsigned d = 0; d < t.getRank(); ++d)
        all[0].push_back(d);
      operands[i] = memref::CollapseShapeOp::create(b, loc, operands[i], all);
    }
    operands.push_back(sizes);
    launch.getKernelOperandsMutable().assign(operands);
    b.setInsertionPointAfter(launch);
    memref::DeallocOp::create(b, loc, sizes);
  }
  return success();
}

namespace {
struct SPIRVDynamicShapesPass
    : mlir::attn::impl::SPIRVDynamicShapesPassBase<SPIRVDynamicShapesPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(mlir::attn::linearizeDynamicShapes(getOperation(), maxExtent)))
      signalPassFailure();
  }
};
} // namespace
