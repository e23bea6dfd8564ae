//===- CPUHoistTileBuffers.cpp - per-thread slabs for tile temporaries ----===//
//
// attn-cpu-hoist-tile-buffers (Passes.td). The cpu kernel's tiles run on an
// OpenMP team; the temporaries bufferization gives each tile (score block,
// running max and sum, accumulator copies) were heap allocations inside the
// team, where a failed malloc has no way back to the launch, and a
// malloc/free pair per key block. They become views of one slab per
// parallel loop and temporary, allocated before the loop (where the checked
// allocator of the JIT can fail the launch cleanly) and indexed by the
// thread number.
//
//===----------------------------------------------------------------------===//
#include "attn/Target/CPU/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Affine/Transforms/Transforms.h"
#include "mlir/Dialect/Affine/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include "llvm/Support/MathExtras.h"

#include <limits>

namespace mlir::attn {
#define GEN_PASS_DEF_CPUHOISTTILEBUFFERSPASS
#include "attn/Target/CPU/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

constexpr int64_t kThreadStride = 128;
constexpr int64_t kMaxBytes = std::numeric_limits<int64_t>::max();

/// Why `alloc` cannot become a view of the slab, or "" when it can; `dealloc`
/// is its one dealloc then.
std::string checkMovable(memref::AllocOp alloc, memref::DeallocOp &dealloc) {
  MemRefType type = alloc.getType();
  if (!type.getLayout().isIdentity())
    return "its type has a layout";
  if (type.getMemorySpace())
    return "its type has a memory space";
  for (Operation *user : alloc->getUsers()) {
    auto d = dyn_cast<memref::DeallocOp>(user);
    if (!d)
      continue;
    if (dealloc)
      return "it is deallocated twice";
    dealloc = d;
  }
  if (!dealloc || dealloc->getBlock() != alloc->getBlock())
    return "it is not deallocated in the block that allocates it";
  // Its lifetime must end with that dealloc: nothing may carry it (or a
  // view of it) out of the block, into a callee or into bufferization.
  SmallVector<Value> worklist{alloc.getResult()};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (user == dealloc.getOperation())
        continue;
      // An op with regions (a loop's iter_args) may carry it out under
      // another name: not followed, so not moved.
      if (user->hasTrait<OpTrait::IsTerminator>() ||
          user->getNumRegions() != 0 ||
          isa<CallOpInterface, memref::DeallocOp>(user) ||
          isa<bufferization::BufferizationDialect>(user->getDialect()))
        return "it (or a view of it) reaches '" +
               user->getName().getStringRef().str() + "'";
      if (auto view = dyn_cast<ViewLikeOpInterface>(user))
        if (view.getViewSource() == v)
          llvm::append_range(worklist, user->getResults());
    }
  }
  return "";
}

/// Declares (or finds) `name: () -> i32` in `module`.
FailureOr<func::FuncOp> declareI32Fn(ModuleOp module, StringRef name) {
  auto i32 = IntegerType::get(module.getContext(), 32);
  auto type = FunctionType::get(module.getContext(), {}, {i32});
  if (auto fn = module.lookupSymbol<func::FuncOp>(name)) {
    if (fn.getFunctionType() != type)
      return fn.emitError("attn-cpu-hoist-tile-buffers: '")
             << name << "' is declared with type " << fn.getFunctionType()
             << ", not " << type;
    return fn;
  }
  if (module.lookupSymbol(name))
    return module.emitError("attn-cpu-hoist-tile-buffers: the symbol '")
           << name << "' is not a function";
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto fn = func::FuncOp::create(b, module.getLoc(), name, type);
  fn.setPrivate();
  return fn;
}

/// Index arithmetic on non-negative values that records whether any result
/// left [0, 2^63 - 1] instead of wrapping.
struct CheckedIndex {
  OpBuilder &b;
  Location loc;
  Value overflow; // i1

  Value i64(Value index) {
    return arith::IndexCastOp::create(b, loc, b.getI64Type(), index);
  }
  Value constant(int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  }
  void flag(Value cond) {
    overflow = overflow ? arith::OrIOp::create(b, loc, overflow, cond)
                        : cond;
  }
  Value mul(Value x, Value y) {
    auto wide = arith::MulUIExtendedOp::create(b, loc, i64(x), i64(y));
    Value zero = arith::ConstantIntOp::create(b, loc, b.getI64Type(), 0);
    flag(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                               wide.getHigh(), zero));
    flag(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                               wide.getLow(), zero));
    return arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                      wide.getLow());
  }
  Value add(Value x, Value y) {
    Value sum = arith::AddIOp::create(b, loc, i64(x), i64(y));
    Value zero = arith::ConstantIntOp::create(b, loc, b.getI64Type(), 0);
    flag(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, sum, zero));
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), sum);
  }
  /// x rounded up to a multiple of `align` (a power of two).
  Value alignUp(Value x, int64_t align) {
    Value up = add(x, constant(align - 1));
    return arith::AndIOp::create(b, loc, up, constant(-align));
  }
};

struct Slot {
  memref::AllocOp alloc;
  memref::DeallocOp dealloc;
  Value perThread; // bytes of one thread's part, defined before the loop
};

/// lb <= iv < ub for the induction variables of scf.parallel (steps are
/// positive), which MLIR's SCF value-bounds models give scf.for and
/// scf.forall but not scf.parallel; without it no tile size that depends
/// on the tile index has a bound in the loop's operands.
struct ParallelOpValueBounds
    : public ValueBoundsOpInterface::ExternalModel<ParallelOpValueBounds,
                                                   scf::ParallelOp> {
  void populateBoundsForIndexValue(Operation *op, Value value,
                                   ValueBoundsConstraintSet &cstr) const {
    auto par = cast<scf::ParallelOp>(op);
    for (auto [iv, lb, ub] : llvm::zip(par.getInductionVars(),
                                       par.getLowerBound(),
                                       par.getUpperBound())) {
      if (iv != value)
        continue;
      cstr.bound(value) >= lb;
      cstr.bound(value) < ub;
    }
  }
};

struct CPUHoistTileBuffers
    : mlir::attn::impl::CPUHoistTileBuffersPassBase<CPUHoistTileBuffers> {
  using Base::Base;

  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    // The bounds of scf.for, arith and affine values (MLIR's models; a
    // repeated registration is ignored), and of scf.parallel (ours).
    scf::registerValueBoundsOpInterfaceExternalModels(registry);
    arith::registerValueBoundsOpInterfaceExternalModels(registry);
    affine::registerValueBoundsOpInterfaceExternalModels(registry);
    registry.addExtension(+[](MLIRContext *ctx, scf::SCFDialect *) {
      std::optional<RegisteredOperationName> name =
          RegisteredOperationName::lookup(scf::ParallelOp::getOperationName(),
                                          ctx);
      if (name && !name->hasInterface<ValueBoundsOpInterface>())
        scf::ParallelOp::attachInterface<ParallelOpValueBounds>(*ctx);
    });
  }

  /// An upper bound of the index `size` (an alloc's dynamic size inside
  /// `par`), as a value defined before `par`; built at `b`'s point. The
  /// tightest of: what the value bounds analysis reifies in values defined
  /// before the loop (for an `affine.min`, for each of its expressions:
  /// the partial block `min(64, Skv - 64 j)` is bounded by both 64 and
  /// Skv), and a constant bound.
  FailureOr<Value> boundBefore(OpBuilder &b, scf::ParallelOp par,
                               Value size) {
    auto loop = cast<LoopLikeOpInterface>(par.getOperation());
    if (loop.isDefinedOutsideOfLoop(size))
      return size;
    Location loc = par.getLoc();
    auto outside = [&](Value v, std::optional<int64_t>,
                       ValueBoundsConstraintSet &) {
      return loop.isDefinedOutsideOfLoop(v);
    };
    SmallVector<ValueBoundsConstraintSet::Variable> vars;
    if (auto min = size.getDefiningOp<affine::AffineMinOp>()) {
      AffineMap map = min.getAffineMap();
      for (unsigned i = 0; i < map.getNumResults(); ++i)
        vars.emplace_back(map.getSubMap({i}), min.getOperands());
    } else {
      vars.emplace_back(size);
    }
    SmallVector<OpFoldResult> bounds;
    for (const ValueBoundsConstraintSet::Variable &var : vars) {
      FailureOr<OpFoldResult> reified = affine::reifyValueBound(
          b, loc, presburger::BoundType::UB, var, outside, /*closedUB=*/true);
      if (succeeded(reified))
        bounds.push_back(*reified);
    }
    // A size that also sizes a view of a buffer from above the loop is at
    // most that buffer's extent (a view is in bounds): the key block that
    // slices K is at most Skv even where the key range's start has no
    // bound the analysis can express (an arith.minui of a split's start).
    for (Operation *user : size.getUsers()) {
      auto view = dyn_cast<memref::SubViewOp>(user);
      if (!view || !loop.isDefinedOutsideOfLoop(view.getSource()))
        continue;
      for (auto [dim, operand] : llvm::enumerate(view.getMixedSizes())) {
        if (operand != OpFoldResult(size))
          continue;
        bounds.push_back(
            memref::getMixedSize(b, loc, view.getSource(), int64_t(dim)));
      }
    }
    FailureOr<int64_t> constant = ValueBoundsConstraintSet::computeConstantBound(
        presburger::BoundType::UB, ValueBoundsConstraintSet::Variable(size),
        /*stopCondition=*/nullptr, /*closedUB=*/true);
    if (succeeded(constant))
      bounds.push_back(b.getIndexAttr(std::max<int64_t>(*constant, 0)));
    if (bounds.empty())
      return failure();
    Value tightest;
    for (OpFoldResult bound : bounds) {
      Value v = getValueOrCreateConstantIndexOp(b, loc, bound);
      tightest = tightest ? arith::MinSIOp::create(b, loc, tightest, v) : v;
    }
    // A size is never negative; neither is the slab's share of it.
    return Value(arith::MaxSIOp::create(
        b, loc, tightest, arith::ConstantIndexOp::create(b, loc, 0)));
  }

  LogicalResult hoist(scf::ParallelOp par) {
    SmallVector<memref::AllocOp> allocs;
    par.getBody()->walk([&](memref::AllocOp alloc) {
      if (alloc->getParentOfType<scf::ParallelOp>() == par)
        allocs.push_back(alloc);
    });
    if (allocs.empty())
      return success();

    Location loc = par.getLoc();
    OpBuilder b(par);
    CheckedIndex checked{b, loc, Value()};
    DataLayout layout = DataLayout::closest(par);
    SmallVector<Slot> slots;
    for (memref::AllocOp alloc : allocs) {
      memref::DeallocOp dealloc;
      std::string why = checkMovable(alloc, dealloc);
      SmallVector<Value> bounds;
      if (why.empty()) {
        for (Value size : alloc.getDynamicSizes()) {
          FailureOr<Value> bound = boundBefore(b, par, size);
          if (failed(bound)) {
            why = "a dynamic size has no upper bound";
            break;
          }
          bounds.push_back(*bound);
        }
      }
      if (!why.empty()) {
        if (strict)
          return alloc.emitError("attn-cpu-hoist-tile-buffers: this "
                                 "allocation inside a parallel loop cannot "
                                 "be moved before it: ")
                 << why;
        continue;
      }
      MemRefType type = alloc.getType();
      uint64_t elementBytes =
          layout.getTypeSize(type.getElementType()).getFixedValue();
      int64_t staticBytes = static_cast<int64_t>(elementBytes);
      bool staticOverflow = elementBytes > uint64_t(kMaxBytes);
      for (int64_t dim : type.getShape())
        if (!ShapedType::isDynamic(dim))
          staticOverflow |= llvm::MulOverflow(staticBytes, dim, staticBytes);
      Value bytes = checked.constant(staticOverflow ? kMaxBytes : staticBytes);
      if (staticOverflow)
        checked.flag(arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
      for (Value bound : bounds)
        bytes = checked.mul(bytes, bound);
      // Each part starts at a multiple of kThreadStride in a slab aligned
      // to it.
      int64_t align = int64_t(alloc.getAlignment().value_or(1));
      if (!llvm::isPowerOf2_64(uint64_t(align)) || align > kThreadStride) {
        if (strict)
          return alloc.emitError("attn-cpu-hoist-tile-buffers: alignment ")
                 << align << " is not a power of two up to " << kThreadStride;
        continue;
      }
      slots.push_back({alloc, dealloc, checked.alignUp(bytes, kThreadStride)});
    }
    if (slots.empty())
      return success();
    // The OpenMP queries (declared once per module: declareI32Fn finds an
    // existing declaration).
    func::FuncOp maxThreads, threadNum;
    if (openmp) {
      auto module = par->getParentOfType<ModuleOp>();
      FailureOr<func::FuncOp> m = declareI32Fn(module, "omp_get_max_threads");
      FailureOr<func::FuncOp> t = declareI32Fn(module, "omp_get_thread_num");
      if (failed(m) || failed(t))
        return failure();
      maxThreads = *m;
      threadNum = *t;
    }

    // A slab per temporary, so that distinct temporaries stay distinct
    // allocations (LLVM keeps knowing they do not alias): threads x
    // per_thread bytes, or 2^63 - 1 when a size overflowed, which no
    // allocator gives.
    Value threads = checked.constant(1);
    if (openmp) {
      Value n = func::CallOp::create(b, loc, maxThreads).getResult(0);
      threads = arith::MaxSIOp::create(
          b, loc,
          arith::IndexCastOp::create(b, loc, b.getIndexType(), n),
          threads);
    }
    SmallVector<Value> totals;
    for (Slot &slot : slots)
      totals.push_back(checked.mul(threads, slot.perThread));
    auto slabType = MemRefType::get({ShapedType::kDynamic}, b.getI8Type());
    SmallVector<Value> slabs;
    for (Value total : totals) {
      if (checked.overflow)
        total = arith::SelectOp::create(b, loc, checked.overflow,
                                        checked.constant(kMaxBytes), total);
      slabs.push_back(memref::AllocOp::create(
          b, loc, slabType, ValueRange{total},
          b.getI64IntegerAttr(kThreadStride)));
    }
    b.setInsertionPointAfter(par);
    for (Value slab : slabs)
      memref::DeallocOp::create(b, loc, slab);

    // A tile's part of each slab.
    b.setInsertionPointToStart(par.getBody());
    Value tid = checked.constant(0);
    if (openmp)
      tid = arith::IndexCastOp::create(
          b, loc, b.getIndexType(),
          func::CallOp::create(b, loc, threadNum).getResult(0));
    for (auto [slot, slab] : llvm::zip(slots, slabs)) {
      b.setInsertionPoint(slot.alloc);
      Location at = slot.alloc.getLoc();
      Value shift = arith::MulIOp::create(b, at, tid, slot.perThread);
      Value view = memref::ViewOp::create(b, at, slot.alloc.getType(), slab,
                                          shift, slot.alloc.getDynamicSizes());
      slot.alloc.replaceAllUsesWith(view);
      slot.dealloc.erase();
      slot.alloc.erase();
    }
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<scf::ParallelOp> loops;
    module.walk([&](scf::ParallelOp par) {
      if (!par->getParentOfType<scf::ParallelOp>())
        loops.push_back(par);
    });
    if (strict) {
      // Allocations inside nested parallel loops are not moved.
      WalkResult nested = module.walk([&](memref::AllocOp alloc) {
        auto inner = alloc->getParentOfType<scf::ParallelOp>();
        if (inner && inner->getParentOfType<scf::ParallelOp>()) {
          alloc.emitError("attn-cpu-hoist-tile-buffers: this allocation "
                          "inside a nested parallel loop cannot be moved");
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      });
      if (nested.wasInterrupted())
        return signalPassFailure();
    }
    for (scf::ParallelOp par : loops)
      if (failed(hoist(par)))
        return signalPassFailure();
  }
};

} // namespace
