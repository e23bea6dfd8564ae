//===- TileDistribution.cpp - what every GPU tile mapping shares ----------===//
#include "attn/Conversion/TileDistribution.h"

#include "attn/Dialect/Attn/IR/AttnAttrs.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Dialect/Attn/Transforms/Transforms.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::attn;

SmallVector<Value> mlir::attn::cloneGenericBody(
    OpBuilder &b, linalg::GenericOp op, ValueRange args, ValueRange indices,
    IRMapping &map, function_ref<Value(Value)> outer) {
  Block &body = op.getRegion().front();
  // An argument given already extended (a tile kept as f32): the body's
  // extensions of it are that value.
  DenseSet<Operation *> bypassed;
  for (auto [arg, v] : llvm::zip(body.getArguments(), args)) {
    if (!v)
      continue;
    if (v.getType() == arg.getType()) {
      map.map(arg, v);
      continue;
    }
    for (Operation *user : arg.getUsers()) {
      auto ext = dyn_cast<arith::ExtFOp>(user);
      assert(ext && ext.getType() == v.getType() &&
             "an argument given wider than the body takes it is only "
             "extended to that width there");
      map.map(ext.getResult(), v);
      bypassed.insert(ext);
    }
  }
  auto inBody = [&](Value v) {
    if (auto arg = dyn_cast<BlockArgument>(v))
      return arg.getOwner() == &body;
    return v.getDefiningOp()->getBlock() == &body;
  };
  auto resolve = [&](Value v) {
    return inBody(v) ? map.lookup(v) : outer(v);
  };
  for (Operation &o : body.without_terminator()) {
    if (bypassed.contains(&o))
      continue;
    if (auto idx = dyn_cast<linalg::IndexOp>(o)) {
      map.map(idx.getResult(), indices[idx.getDim()]);
      continue;
    }
    for (Value operand : o.getOperands())
      if (!inBody(operand))
        map.map(operand, outer(operand));
    b.clone(o, map);
  }
  SmallVector<Value> results;
  for (Value y : body.getTerminator()->getOperands())
    results.push_back(resolve(y));
  return results;
}

TileOpKind mlir::attn::classifyTileOp(linalg::GenericOp op) {
  auto iters = op.getIteratorTypesArray();
  int64_t reductions = llvm::count(iters, utils::IteratorType::reduction);
  if (op.getNumDpsInits() != 1)
    return TileOpKind::Other;
  int64_t outRank =
      op.getMatchingIndexingMap(op.getDpsInitOperand(0)).getNumResults();
  if (reductions == 0)
    return TileOpKind::Elementwise;
  if (iters.size() == 3 && reductions == 1 && op.getNumDpsInputs() == 2 &&
      outRank == 2 &&
      linalg::isaContractionOpInterface(cast<linalg::LinalgOp>(*op)))
    return TileOpKind::Contraction;
  if (iters.size() == 2 && reductions == 1 && outRank == 1)
    return TileOpKind::RowReduction;
  if (iters.size() == 1 && reductions == 1 && outRank == 0)
    return TileOpKind::AllReduction;
  return TileOpKind::Other;
}

bool mlir::attn::rhsTransposed(linalg::GenericOp op) {
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  AffineMap rhs = op.getMatchingIndexingMap(op.getDpsInputOperand(1));
  // rhs(j, k) with j the output's column dimension.
  return rhs.getResult(0) == out.getResult(1);
}

Combiner mlir::attn::combinerOf(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  Value y = body.getTerminator()->getOperand(0);
  Operation *def = y.getDefiningOp();
  if (isa_and_nonnull<arith::MaximumFOp>(def))
    return Combiner::MaxF;
  if (isa_and_nonnull<arith::AddFOp>(def))
    return Combiner::AddF;
  if (isa_and_nonnull<arith::OrIOp>(def))
    return Combiner::OrI;
  return Combiner::Other;
}

//===----------------------------------------------------------------------===//
// The kernel-source function
//===----------------------------------------------------------------------===//

namespace {
/// Whether `expanded` ([B, Hkv, group, Sq, ...]) has one query row: the
/// GPU targets' packed views (packedRowsView) put a group's heads where the
/// rows were, which only a query length of 1 allows (the cpu packs 2-16
/// rows too; such tiles are not this view and fail to map).
bool oneQueryRow(Value expanded) {
  auto type = dyn_cast<RankedTensorType>(expanded.getType());
  return type && type.getRank() >= 4 && type.getDimSize(3) == 1;
}

/// `t` through the packed decode view (expand_shape of Hq into (Hkv,
/// group), collapse_shape of (group, 1)) back to what it views, or null.
Value unpackedSource(Value t) {
  auto collapse = t.getDefiningOp<tensor::CollapseShapeOp>();
  if (!collapse)
    return {};
  auto expand = collapse.getSrc().getDefiningOp<tensor::ExpandShapeOp>();
  if (!expand || !oneQueryRow(expand.getResult()))
    return {};
  return expand.getSrc();
}

/// The forall results' users through the unpacking reshapes.
bufferization::MaterializeInDestinationOp materializeOf(Value result,
                                                        bool &packed,
                                                        SmallVector<Operation *> &through) {
  packed = false;
  Value v = result;
  if (v.hasOneUse()) {
    if (auto expand = dyn_cast<tensor::ExpandShapeOp>(*v.getUsers().begin());
        expand && expand.getResult().hasOneUse() &&
        oneQueryRow(expand.getResult())) {
      if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(
              *expand.getResult().getUsers().begin())) {
        through.push_back(collapse);
        through.push_back(expand);
        v = collapse.getResult();
        packed = true;
      }
    }
  }
  if (!v.hasOneUse())
    return {};
  auto mat =
      dyn_cast<bufferization::MaterializeInDestinationOp>(*v.getUsers().begin());
  if (!mat || !isa<MemRefType>(mat.getDest().getType()))
    return {};
  return mat;
}
} // namespace

namespace {
/// `v`'s value where it is known: a constant, or memref.dim of a static
/// extent.
std::optional<int64_t> knownIndex(Value v) {
  if (std::optional<int64_t> c = getConstantIntValue(v))
    return c;
  if (auto dim = v.getDefiningOp<memref::DimOp>())
    if (std::optional<int64_t> i = dim.getConstantIndex()) {
      auto ty = cast<MemRefType>(dim.getSource().getType());
      if (*i >= 0 && *i < ty.getRank() && !ty.isDynamicDim(*i))
        return ty.getDimSize(*i);
    }
  return std::nullopt;
}

/// packedRowsView's reshape form: [B, Hq, 1, ...] -> [B, Hkv, group, 1,
/// ...] -> [B, Hkv, group, ...].
Value packedRowsReshape(OpBuilder &b, Location loc, Value m, Value hkv,
                        Value group) {
  auto type = cast<MemRefType>(m.getType());
  int64_t rank = type.getRank();
  std::optional<int64_t> hkvC = knownIndex(hkv), groupC = knownIndex(group);
  // A static Hq makes both static (expand_shape's rule); one from the other.
  if (!type.isDynamicDim(1)) {
    if (hkvC && !groupC && *hkvC > 0)
      groupC = type.getDimSize(1) / *hkvC;
    if (groupC && !hkvC && *groupC > 0)
      hkvC = type.getDimSize(1) / *groupC;
  }
  SmallVector<int64_t> shape{type.getDimSize(0),
                             hkvC.value_or(ShapedType::kDynamic),
                             groupC.value_or(ShapedType::kDynamic)};
  SmallVector<OpFoldResult> sizes{memref::getMixedSize(b, loc, m, 0),
                                  hkvC ? OpFoldResult(b.getIndexAttr(*hkvC))
                                       : OpFoldResult(hkv),
                                  groupC ? OpFoldResult(b.getIndexAttr(*groupC))
                                         : OpFoldResult(group)};
  SmallVector<ReassociationIndices> expand{{0}, {1, 2}};
  SmallVector<ReassociationIndices> collapse{{0}, {1}, {2, 3}};
  for (int64_t i = 2; i < rank; ++i) {
    shape.push_back(type.getDimSize(i));
    sizes.push_back(memref::getMixedSize(b, loc, m, i));
    expand.push_back({i + 1});
    if (i > 2)
      collapse.push_back({i + 1});
  }
  auto expTy = MemRefType::get(shape, type.getElementType(),
                               MemRefLayoutAttrInterface{},
                               type.getMemorySpace());
  Value e = memref::ExpandShapeOp::create(b, loc, expTy, m, expand, sizes);
  return memref::CollapseShapeOp::create(b, loc, e, collapse);
}
} // namespace

Value mlir::attn::packedRowsView(OpBuilder &b, Location loc, Value m,
                                 int64_t rowDim, Value hkv, Value group,
                                 bool reshape) {
  auto type = cast<MemRefType>(m.getType());
  if (reshape) {
    assert(rowDim == 2 && type.getLayout().isIdentity() &&
           "the reshape form views [B, Hq, 1, ...] of the identity layout");
    return packedRowsReshape(b, loc, m, hkv, group);
  }
  auto [srcStrides, srcOffset] = type.getStridesAndOffset();
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, m);
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> sizes, strides;
  SmallVector<int64_t> shape, staticStrides;
  for (int64_t i = 0; i < rank; ++i) {
    bool moved = i == 1 || i == rowDim;
    // Sizes: Hkv and the group where heads and rows were, the rest as they
    // are (a static size stays static: D, Dv).
    if (i == 1)
      sizes.push_back(hkv);
    else if (i == rowDim)
      sizes.push_back(group);
    else if (!type.isDynamicDim(i))
      sizes.push_back(b.getIndexAttr(type.getDimSize(i)));
    else
      sizes.push_back(meta.getSizes()[i]);
    shape.push_back(moved ? ShapedType::kDynamic : type.getDimSize(i));
    // Strides: sH * group for heads, sH for rows, the rest as they are (a
    // static one stays static: cp.async needs the unit stride of D).
    if (i == 1)
      strides.push_back(
          arith::MulIOp::create(b, loc, meta.getStrides()[1], group)
              .getResult());
    else if (i == rowDim)
      strides.push_back(meta.getStrides()[1]);
    else if (!ShapedType::isDynamic(srcStrides[i]))
      strides.push_back(b.getIndexAttr(srcStrides[i]));
    else
      strides.push_back(meta.getStrides()[i]);
    staticStrides.push_back(moved ? ShapedType::kDynamic : srcStrides[i]);
  }
  auto viewType = MemRefType::get(
      shape, type.getElementType(),
      StridedLayoutAttr::get(b.getContext(), srcOffset, staticStrides),
      type.getMemorySpace());
  OpFoldResult offset = ShapedType::isDynamic(srcOffset)
                            ? OpFoldResult(meta.getOffset())
                            : OpFoldResult(b.getIndexAttr(srcOffset));
  return memref::ReinterpretCastOp::create(b, loc, viewType, m, offset, sizes,
                                           strides);
}

void mlir::attn::mapKernelTensors(OpBuilder &b, Location loc,
                                  TiledKernelSource &src, scf::ForallOp forall,
                                  Value qTensor, function_ref<Value()> hkv,
                                  IRMapping &map, bool reshape) {
  for (auto &[t, mem] : src.buffers)
    map.map(t, mem);
  // Packed q: [B, Hq, 1, D] as [B, Hkv, group, D], the group = Hq / Hkv.
  Value hkvPack, groupPack;
  if (src.packedViews.contains(qTensor)) {
    Value q = src.buffers.lookup(qTensor);
    hkvPack = hkv();
    groupPack = b.createOrFold<arith::DivUIOp>(
        loc, b.createOrFold<memref::DimOp>(loc, q, 1), hkvPack);
    map.map(qTensor, packedRowsView(b, loc, q, 2, hkvPack, groupPack, reshape));
  }
  for (auto [i, r] : llvm::enumerate(forall.getResults())) {
    Value dest = src.destinations[r];
    if (src.packedViews.contains(r))
      dest = packedRowsView(b, loc, dest, 2, hkvPack, groupPack, reshape);
    map.map(forall.getRegionIterArgs()[i], dest);
  }
}

LogicalResult mlir::attn::collectTiledKernels(
    func::FuncOp func, function_ref<bool(TilingAttr)> accept,
    SmallVectorImpl<TiledKernelSource> &out) {
  SmallVector<scf::ForallOp> foralls;
  func.walk([&](scf::ForallOp f) {
    if (auto t = f->getAttrOfType<TilingAttr>(kTilingAttrName); t && accept(t))
      foralls.push_back(f);
  });
  if (foralls.empty())
    return success();
  // A forall whose results another reads is a split's partial forall.
  DenseMap<Operation *, scf::ForallOp> mergeOf;
  for (scf::ForallOp f : foralls)
    for (Value r : f.getResults())
      for (Operation *user : r.getUsers())
        if (auto g = user->getParentOfType<scf::ForallOp>();
            g && llvm::is_contained(foralls, g))
          mergeOf[f] = g;
  DenseSet<Operation *> merges;
  for (auto &[f, g] : mergeOf)
    merges.insert(g);

  OpBuilder b(func.getContext());
  for (scf::ForallOp f : foralls) {
    if (merges.contains(f))
      continue;
    TiledKernelSource src;
    src.func = func;
    src.main = f;
    src.merge = mergeOf.lookup(f);
    src.tiling = f->getAttrOfType<TilingAttr>(kTilingAttrName);
    out.push_back(std::move(src));
  }

  // Function-level tensors: to_tensor of the arguments, and the packed
  // decode views of them.
  DenseMap<Value, Value> buffers;
  DenseSet<Value> packedViews;
  SmallVector<Operation *> erase;
  func.walk([&](bufferization::ToTensorOp t) {
    buffers[t.getResult()] = t.getBuffer();
    erase.push_back(t);
  });
  func.walk([&](tensor::CollapseShapeOp c) {
    if (c->getParentOfType<scf::ForallOp>())
      return;
    if (Value src = unpackedSource(c.getResult()); src && buffers.count(src)) {
      buffers[c.getResult()] = buffers[src];
      packedViews.insert(c.getResult());
      erase.push_back(c);
      erase.push_back(c.getSrc().getDefiningOp());
    }
  });

  // Host-side sizes read from tensors read them from the memrefs.
  SmallVector<tensor::DimOp> dims;
  func.walk([&](tensor::DimOp d) {
    if (!d->getParentOfType<scf::ForallOp>() && buffers.count(d.getSource()))
      dims.push_back(d);
  });
  for (tensor::DimOp d : dims) {
    b.setInsertionPoint(d);
    Value m = memref::DimOp::create(b, d.getLoc(), buffers[d.getSource()],
                                    d.getIndex());
    d.replaceAllUsesWith(m);
    d.erase();
  }
  // The split count a host that does not choose uses; kernels read it from
  // the workspaces.
  SmallVector<KvSplitCountOp> counts;
  func.walk([&](KvSplitCountOp c) { counts.push_back(c); });
  for (KvSplitCountOp c : counts) {
    b.setInsertionPoint(c);
    c.replaceAllUsesWith(
        arith::ConstantIndexOp::create(b, c.getLoc(), c.getDefaultCount())
            .getResult());
    c.erase();
  }

  for (TiledKernelSource &src : out) {
    src.buffers = buffers;
    src.packedViews = packedViews;
    // The function-level tensors go with the last attention converted.
    if (&src == &out.back())
      src.sharedTensors = erase;
    // Results: into materialize destinations (through the unpacking
    // reshapes when packed), or (a split's partials) host allocations.
    scf::ForallOp last = src.merge ? src.merge : src.main;
    for (auto [i, r] : llvm::enumerate(last.getResults())) {
      bool packed = false;
      SmallVector<Operation *> through;
      auto mat = materializeOf(r, packed, through);
      if (!mat)
        return last.emitOpError(
            "expected each result of a tiled attention to be materialized "
            "into a memref (the JIT's destination-passing form; with "
            "pack_heads, through the packed view of a single query row)");
      src.destinations[r] = mat.getDest();
      if (packed)
        src.packedViews.insert(r);
      src.toErase.push_back(mat);
      src.toErase.append(through.begin(), through.end());
    }
    if (src.merge) {
      b.setInsertionPoint(src.main);
      if (src.main.getNumResults() != std::size(kSplitWorkspaceNames))
        return src.main.emitOpError("expected the split-KV partial results "
                                    "partial_out, partial_stats");
      for (auto [r, init, role] :
           llvm::zip(src.main.getResults(), src.main.getOutputs(),
                     kSplitWorkspaceNames)) {
        auto empty = init.getDefiningOp<tensor::EmptyOp>();
        if (!empty)
          return src.main.emitOpError("expected split-KV partial results to "
                                      "start from tensor.empty");
        // Constant sizes (the split count a host does not choose) made
        // static here, with a cast back, so that no canonicalization
        // recreates the allocation and drops its role.
        auto t = cast<RankedTensorType>(r.getType());
        SmallVector<OpFoldResult> mixed = getMixedValues(
            t.getShape(), SmallVector<Value>(empty.getDynamicSizes()), b);
        for (OpFoldResult &size : mixed)
          if (auto v = dyn_cast<Value>(size))
            size = getAsOpFoldResult(v);
        SmallVector<int64_t> shape;
        SmallVector<Value> dynamic;
        dispatchIndexOpFoldResults(mixed, dynamic, shape);
        auto alloc = memref::AllocOp::create(
            b, src.main.getLoc(), MemRefType::get(shape, t.getElementType()),
            dynamic);
        alloc->setAttr(kWorkspaceAttrName, b.getStringAttr(role));
        auto type = MemRefType::get(t.getShape(), t.getElementType());
        src.destinations[r] =
            alloc.getType() == type
                ? alloc.getResult()
                : memref::CastOp::create(b, src.main.getLoc(), type, alloc)
                      .getResult();
      }
    }
  }
  return success();
}

void mlir::attn::finishTiledKernels(TiledKernelSource &src) {
  OpBuilder b(src.func.getContext());
  if (src.merge) {
    // The workspaces die after the merge kernel.
    for (Value r : src.main.getResults()) {
      Value alloc = src.destinations[r];
      b.setInsertionPoint(src.func.getBody().front().getTerminator());
      memref::DeallocOp::create(b, src.main.getLoc(), alloc);
    }
  }
  SmallVector<Operation *> erase = src.toErase;
  if (src.merge)
    erase.push_back(src.merge);
  erase.push_back(src.main);
  // Erase users first: walk to a fixpoint over what is still in use.
  DenseSet<Operation *> done;
  bool progress = true;
  while (progress) {
    progress = false;
    for (Operation *op : erase) {
      if (done.contains(op))
        continue;
      op->dropAllUses();
      // Inputs that become dead (tensor.empty, fills) go with it.
      SmallVector<Operation *> defs;
      for (Value v : op->getOperands())
        if (Operation *d = v.getDefiningOp())
          defs.push_back(d);
      op->erase();
      done.insert(op);
      progress = true;
      for (Operation *d : defs)
        if (d->use_empty() &&
            isa<tensor::EmptyOp, linalg::FillOp, arith::ConstantOp,
                tensor::ExpandShapeOp, tensor::CollapseShapeOp>(d) &&
            !llvm::is_contained(erase, d) &&
            !llvm::is_contained(src.sharedTensors, d))
          d->erase();
    }
  }
  // The function's tensors, once no attention of another mapping reads
  // them (users first: the packed views read the to_tensor ops).
  progress = true;
  DenseSet<Operation *> gone;
  while (progress) {
    progress = false;
    for (Operation *op : src.sharedTensors)
      if (!gone.contains(op) && op->use_empty()) {
        op->erase();
        gone.insert(op);
        progress = true;
      }
  }
}

Value mlir::attn::sinkIndexValue(OpBuilder &b, Value v, IRMapping &map) {
  if (Value m = map.lookupOrNull(v))
    return m;
  // A function argument (the seed, memrefs) or any memref (a view of one,
  // as the Sq = 1 alternative's memref.cast, or a workspace): a parameter,
  // never recomputed inside.
  if (isa<BlockArgument>(v) || isa<BaseMemRefType>(v.getType()))
    return v;
  Operation *def = v.getDefiningOp();
  for (Value operand : def->getOperands())
    sinkIndexValue(b, operand, map);
  Operation *clone = b.clone(*def, map);
  for (auto [o, n] : llvm::zip(def->getResults(), clone->getResults()))
    map.map(o, n);
  return map.lookup(v);
}

//===----------------------------------------------------------------------===//
// The split-KV merge kernel
//===----------------------------------------------------------------------===//

namespace {
/// One thread's evaluation of the merge forall's body at its (row, col):
/// values without the chunk dimension are scalars of this thread, values
/// with it are evaluated where a reduction over chunks needs them.
class MergeEvaluator {
public:
  MergeEvaluator(OpBuilder &b, Location loc, IRMapping &map)
      : b(b), loc(loc), map(map) {}

  /// Tensors read from the partial results: memref, offsets.
  struct View {
    Value memref;
    SmallVector<Value> offsets;
    /// The view's dims as dims of the memref (rank-reducing slices drop
    /// the unit ones), and their sizes.
    SmallVector<int64_t> dims;
    SmallVector<OpFoldResult> sizes;
  };
  DenseMap<Value, View> views;
  /// The thread's scalar of a value without the chunk dimension.
  DenseMap<Value, Value> scalars;
  /// Values of the chunk dimension, evaluated when needed.
  DenseSet<Value> lazy;
  /// The generic computing each lazy value.
  Value row, col;

  /// `v` at tensor coordinates `coords` (one per dimension).
  Value evalAt(Value v, ArrayRef<Value> coords) {
    if (auto it = scalars.find(v); it != scalars.end())
      return it->second;
    if (auto it = views.find(v); it != views.end()) {
      const View &view = it->second;
      SmallVector<Value> idx(view.offsets);
      for (auto [d, c] : llvm::zip(view.dims, coords))
        idx[d] = arith::AddIOp::create(b, loc, idx[d], c);
      return memref::LoadOp::create(b, loc, view.memref, idx);
    }
    if (auto fill = v.getDefiningOp<linalg::FillOp>())
      return map.lookupOrDefault(fill.getInputs()[0]);
    auto g = v.getDefiningOp<linalg::GenericOp>();
    assert(g && lazy.contains(v) && "a lazy elementwise value");
    // Elementwise: loop dims are the output's coordinates.
    AffineMap outMap = g.getMatchingIndexingMap(g.getDpsInitOperand(0));
    SmallVector<Value> loops(g.getNumLoops());
    for (auto [i, e] : llvm::enumerate(outMap.getResults()))
      loops[cast<AffineDimExpr>(e).getPosition()] = coords[i];
    return evalBody(g, loops)[0];
  }

  /// The generic's body at loop indices `loops`.
  SmallVector<Value> evalBody(linalg::GenericOp g, ArrayRef<Value> loops) {
    SmallVector<Value> args;
    for (OpOperand &operand : g->getOpOperands()) {
      AffineMap m = g.getMatchingIndexingMap(&operand);
      bool isInit = g.isDpsInit(&operand);
      Block &body = g.getRegion().front();
      if (isInit && body.getArgument(operand.getOperandNumber()).use_empty()) {
        args.push_back(Value());
        continue;
      }
      SmallVector<Value> c;
      for (AffineExpr e : m.getResults())
        c.push_back(loops[cast<AffineDimExpr>(e).getPosition()]);
      args.push_back(evalAt(operand.get(), c));
    }
    return cloneGenericBody(b, g, args, loops, map,
                            [&](Value v) { return sinkIndexValue(b, v, map); });
  }

private:
  OpBuilder &b;
  Location loc;
  IRMapping &map;
};
} // namespace

LogicalResult mlir::attn::buildMergeKernel(OpBuilder &b,
                                           TiledKernelSource &src,
                                           FlatSymbolRefAttr module,
                                           FlatSymbolRefAttr function,
                                           bool reshapeViews,
                                           int64_t chunkUnroll) {
  scf::ForallOp merge = src.merge;
  Location loc = merge.getLoc();
  TilingAttr tiling = src.tiling;
  int64_t br = tiling.getBlockQ();
  // The merged out's memref: its shape gives the rows and value columns.
  Value out = src.destinations[merge.getResult(0)];
  Value lse =
      merge.getNumResults() > 1 ? src.destinations[merge.getResult(1)] : Value();
  bool packed = src.packedViews.contains(merge.getResult(0));
  auto outTy = cast<MemRefType>(out.getType());
  int64_t dv = outTy.getDimSize(3);
  // Rows per workgroup: as many whole rows as the threads cover (at least
  // one); the threads stride over the workgroup's rows x Dv elements.
  int64_t rowsPerGroup = std::max<int64_t>(1, kSplitKVMergeThreads / dv);
  auto cidx = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  // The forall's extents: (B, heads, query blocks); the rows are the
  // partials' (query length, or packed the group), which the kernel tiles
  // by its own rows per workgroup.
  auto ubs = merge.getMixedUpperBound();
  Value batch = getValueOrCreateConstantIndexOp(b, loc, ubs[0]);
  Value heads = getValueOrCreateConstantIndexOp(b, loc, ubs[1]);
  Value partialOut = src.destinations[src.main.getResult(0)];
  Value rowsTotal = memref::DimOp::create(b, loc, partialOut, 3);
  Value gx = arith::DivUIOp::create(
      b, loc, arith::AddIOp::create(b, loc, rowsTotal, cidx(rowsPerGroup - 1)),
      cidx(rowsPerGroup));
  Value one = cidx(1);
  auto launch = gpu::LaunchOp::create(
      b, loc, gx, heads, batch, cidx(kSplitKVMergeThreads), one, one,
      /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
      /*asyncDependencies=*/{}, /*workgroupAttributions=*/{},
      /*privateAttributions=*/{}, nullptr, nullptr, nullptr, module,
      function);
  LaunchInfo info;
  info.kind = "merge";
  info.packed = packed;
  info.blockQ = rowsPerGroup;
  info.when = launchWhen(merge);
  markLaunch(launch, info);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(&launch.getBody().front());
  IRMapping map;
  // Function-level values used inside: index computations sunk in; the
  // partial results and the destinations as memrefs (packed views inside).
  if (packed) {
    // Hkv and the group from the partials' own shape ([B, Hkv, N, group,
    // Dv]).
    Value ws = src.destinations[src.main.getResult(0)];
    Value hkv = memref::DimOp::create(b, loc, ws, 1);
    Value group = memref::DimOp::create(b, loc, ws, 3);
    out = packedRowsView(b, loc, out, 2, hkv, group, reshapeViews);
    if (lse)
      lse = packedRowsView(b, loc, lse, 2, hkv, group, reshapeViews);
  }
  for (Value r : src.main.getResults())
    map.map(r, src.destinations[r]);

  Value tid = launch.getThreadIds().x;
  Value bi = launch.getBlockIds().z, h = launch.getBlockIds().y;
  Value row0 = arith::MulIOp::create(b, loc, launch.getBlockIds().x,
                                     cidx(rowsPerGroup));
  Block &body = *merge.getBody();
  auto ivs = merge.getInductionVars();
  Value rowsExtent = memref::DimOp::create(b, loc, out, 2);
  auto forOp = scf::ForOp::create(b, loc, tid, cidx(rowsPerGroup * dv),
                                  cidx(kSplitKVMergeThreads));
  b.setInsertionPointToStart(forOp.getBody());
  Value e = forOp.getInductionVar();
  Value rowG = arith::AddIOp::create(
      b, loc, row0, arith::DivUIOp::create(b, loc, e, cidx(dv)));
  Value col = arith::RemUIOp::create(b, loc, e, cidx(dv));
  auto inside = scf::IfOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, rowG,
                            rowsExtent),
      /*withElseRegion=*/false);
  b.setInsertionPointToStart(&inside.getThenRegion().front());
  // The forall tile holding this row, and the row within it.
  map.map(ivs[0], bi);
  map.map(ivs[1], h);
  map.map(ivs[2], arith::DivUIOp::create(b, loc, rowG, cidx(br)));
  Value row = arith::RemUIOp::create(b, loc, rowG, cidx(br));

  MergeEvaluator ev(b, loc, map);
  ev.row = row;
  ev.col = col;
  Value nChunks;
  // Values over (chunk, row) stay lazy: they are evaluated inside the
  // reductions over chunks that read them. The chunk dimension is the
  // partials' third (after B and heads).
  auto chunked = [&](Value v) {
    if (ev.lazy.contains(v))
      return true;
    auto it = ev.views.find(v);
    return it != ev.views.end() && it->second.dims.front() == 2;
  };
  auto isLazyElementwise = [&](Operation *op) {
    auto g = dyn_cast<linalg::GenericOp>(op);
    return g && classifyTileOp(g) == TileOpKind::Elementwise &&
           llvm::any_of(g.getDpsInputs(), chunked);
  };
  auto isReduction = [](Operation *op) {
    auto g = dyn_cast<linalg::GenericOp>(op);
    return g && classifyTileOp(g) != TileOpKind::Elementwise;
  };
  // Ops already emitted as part of an earlier reduction's loop.
  DenseSet<Operation *> emitted;
  for (Operation &op : body.without_terminator()) {
    if (emitted.contains(&op))
      continue;
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
      Value srcMem = map.lookupOrNull(slice.getSource());
      if (!srcMem)
        return slice.emitOpError("merge kernel: unexpected slice source");
      MergeEvaluator::View view;
      view.memref = srcMem;
      for (OpFoldResult o : slice.getMixedOffsets())
        view.offsets.push_back(getValueOrCreateConstantIndexOp(
            b, loc,
            isa<Value>(o) ? OpFoldResult(sinkIndexValue(b, cast<Value>(o), map))
                          : o));
      llvm::SmallBitVector dropped = slice.getDroppedDims();
      for (int64_t d = 0; d < (int64_t)view.offsets.size(); ++d)
        if (!dropped.test(d)) {
          view.dims.push_back(d);
          view.sizes.push_back(slice.getMixedSizes()[d]);
        }
      ev.views[slice.getResult()] = view;
      continue;
    }
    if (auto g = dyn_cast<linalg::GenericOp>(op)) {
      if (isLazyElementwise(g)) {
        ev.lazy.insert(g.getResult(0));
        continue;
      }
      // The loop indices of `r`'s parallel dims: the thread's row (and
      // column for [rows, Dv]).
      auto parallelLoops = [&](linalg::GenericOp r) {
        SmallVector<Value> loops(r.getNumLoops());
        AffineMap outMap = r.getMatchingIndexingMap(r.getDpsInitOperand(0));
        Value coordOf[2] = {row, col};
        for (auto [i, e] : llvm::enumerate(outMap.getResults()))
          loops[cast<AffineDimExpr>(e).getPosition()] = coordOf[i];
        return loops;
      };
      if (!isReduction(g)) {
        ev.scalars[g.getResult(0)] = ev.evalBody(g, parallelLoops(g))[0];
        continue;
      }
      // Reductions over chunks: one loop, its body each generic's at chunk
      // n. The reductions that follow this one with only lazy values
      // between, and that read none of their results, share its loop (the
      // softmax weights' sum and the weighted sum of the partial outputs:
      // one pass over the partials, each weight computed once).
      SmallVector<linalg::GenericOp> group{g};
      DenseSet<Value> fromGroup(g->result_begin(), g->result_end());
      for (Operation *next = g->getNextNode();
           next && next != body.getTerminator(); next = next->getNextNode()) {
        bool reads = llvm::any_of(next->getOperands(), [&](Value v) {
          return fromGroup.contains(v);
        });
        if (isa<tensor::EmptyOp, linalg::FillOp>(next) && !reads)
          continue;
        if (next->hasTrait<OpTrait::ConstantLike>()) {
          b.clone(*next, map);
          emitted.insert(next);
          continue;
        }
        if (isLazyElementwise(next)) {
          if (reads)
            fromGroup.insert(next->getResult(0));
          else
            ev.lazy.insert(next->getResult(0));
          emitted.insert(next);
          continue;
        }
        if (!isReduction(next) || reads)
          break;
        group.push_back(cast<linalg::GenericOp>(next));
        fromGroup.insert(next->result_begin(), next->result_end());
        emitted.insert(next);
      }
      // A lazy value reading the group's results is evaluated after it.
      for (Value v : fromGroup)
        if (v.getDefiningOp() && isLazyElementwise(v.getDefiningOp()))
          ev.lazy.insert(v);
      if (!nChunks) {
        Value partial = src.destinations[src.main.getResult(1)];
        nChunks = memref::DimOp::create(b, loc, partial, 2);
      }
      // Every result of each reduction is carried (a compensated sum has
      // two: the sum and its compensation).
      SmallVector<Value> inits;
      for (linalg::GenericOp r : group)
        for (Value init : r.getDpsInits())
          inits.push_back(ev.evalAt(init, {}));
      auto loop =
          scf::ForOp::create(b, loc, cidx(0), nChunks, cidx(1), inits);
      {
        OpBuilder::InsertionGuard g2(b);
        b.setInsertionPointToStart(loop.getBody());
        SmallVector<Value> nexts;
        auto accs = loop.getRegionIterArgs();
        for (linalg::GenericOp r : group) {
          SmallVector<Value> loops = parallelLoops(r);
          for (auto [i, it] : llvm::enumerate(r.getIteratorTypesArray()))
            if (it == utils::IteratorType::reduction)
              loops[i] = loop.getInductionVar();
          // The accumulators are the body's output arguments.
          unsigned k = nexts.size();
          for (auto [j, init] : llvm::enumerate(r.getDpsInits()))
            ev.scalars[init] = accs[k + j];
          llvm::append_range(nexts, ev.evalBody(r, loops));
          for (Value init : r.getDpsInits())
            ev.scalars.erase(init);
        }
        scf::YieldOp::create(b, loc, nexts);
      }
      // Each chunk's loads depend on no earlier chunk's: unrolled, a
      // thread has chunkUnroll chunks' loads in flight at once instead of
      // one round trip to memory per chunk (the order of the sums, and so
      // their rounding, is unchanged). The results are the last loop's:
      // the epilogue's where the unrolling made one.
      scf::ForOp last = loop;
      if (chunkUnroll > 1) {
        FailureOr<UnrolledLoopInfo> unrolled =
            loopUnrollByFactor(loop, chunkUnroll);
        if (failed(unrolled))
          return merge.emitOpError(
              "merge kernel: cannot unroll the loop over chunks");
        if (unrolled->epilogueLoopOp)
          last = *unrolled->epilogueLoopOp;
        else if (unrolled->mainLoopOp)
          last = *unrolled->mainLoopOp;
      }
      unsigned k = 0;
      for (linalg::GenericOp r : group)
        for (Value result : r.getResults())
          ev.scalars[result] = last.getResult(k++);
      continue;
    }
    if (isa<tensor::EmptyOp, linalg::FillOp>(op))
      continue;
    // Index computations of the tile (i0, rows, the chunk count).
    if (llvm::all_of(op.getResultTypes(),
                     [](Type t) { return t.isIntOrIndexOrFloat(); })) {
      if (auto dim = dyn_cast<tensor::DimOp>(op)) {
        // The extent of a slice of the partials: its size.
        if (auto it = ev.views.find(dim.getSource()); it != ev.views.end()) {
          std::optional<int64_t> d = getConstantIntValue(dim.getIndex());
          if (!d)
            return dim.emitOpError("merge kernel: a dynamic dimension index");
          OpFoldResult size = it->second.sizes[*d];
          map.map(dim.getResult(),
                  isa<Value>(size)
                      ? sinkIndexValue(b, cast<Value>(size), map)
                      : getValueOrCreateConstantIndexOp(b, loc, size));
          continue;
        }
        Value m = map.lookupOrNull(dim.getSource());
        if (!m)
          return dim.emitOpError("merge kernel: unexpected tensor.dim");
        map.map(dim.getResult(),
                memref::DimOp::create(b, loc, m,
                                      sinkIndexValue(b, dim.getIndex(), map)));
        continue;
      }
      for (Value operand : op.getOperands())
        sinkIndexValue(b, operand, map);
      b.clone(op, map);
      continue;
    }
    return op.emitOpError("merge kernel: unexpected op in the merge tile");
  }
  // The stores: each insert of a [rows(, Dv)] tile at this thread's
  // element (the lse by the thread of column 0).
  auto inParallel = merge.getTerminator();
  for (Operation &op : inParallel.getYieldingOps()) {
    auto insert = cast<tensor::ParallelInsertSliceOp>(op);
    auto arg = cast<BlockArgument>(insert.getDest());
    unsigned resultNo = arg.getArgNumber() - merge.getRank();
    Value dest = resultNo == 0 ? out : lse;
    Value v = ev.scalars.lookup(insert.getSource());
    if (!v)
      return insert.emitOpError("merge kernel: unexpected inserted value");
    SmallVector<Value> idx;
    for (OpFoldResult o : insert.getMixedOffsets())
      idx.push_back(getValueOrCreateConstantIndexOp(
          b, loc,
          isa<Value>(o) ? OpFoldResult(sinkIndexValue(b, cast<Value>(o), map))
                        : o));
    idx[2] = arith::AddIOp::create(b, loc, idx[2], row);
    if (cast<RankedTensorType>(insert.getSource().getType()).getRank() == 2) {
      idx[3] = arith::AddIOp::create(b, loc, idx[3], col);
      memref::StoreOp::create(b, loc, v, dest, idx);
      continue;
    }
    auto first = scf::IfOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, col, cidx(0)),
        /*withElseRegion=*/false);
    OpBuilder::InsertionGuard g3(b);
    b.setInsertionPointToStart(&first.getThenRegion().front());
    memref::StoreOp::create(b, loc, v, dest, idx);
  }
  b.setInsertionPointToEnd(&launch.getBody().front());
  gpu::TerminatorOp::create(b, loc);
  return success();
}

DictionaryAttr mlir::attn::launchInfoAttr(MLIRContext *ctx,
                                          const LaunchInfo &info) {
  Builder b(ctx);
  SmallVector<NamedAttribute> attrs{
      b.getNamedAttr("kind", b.getStringAttr(info.kind)),
      b.getNamedAttr("rows", b.getStringAttr(info.packed ? "Group" : "Sq")),
      b.getNamedAttr("block_q", b.getI64IntegerAttr(info.blockQ)),
      b.getNamedAttr("heads", b.getStringAttr(info.packed ? "Hkv" : "Hq")),
      b.getNamedAttr("when", b.getStringAttr(info.when))};
  if (info.blockKv)
    attrs.push_back(b.getNamedAttr("block_kv", b.getI64IntegerAttr(info.blockKv)));
  if (info.splits)
    attrs.push_back(b.getNamedAttr("splits", b.getUnitAttr()));
  return b.getDictionaryAttr(attrs);
}

std::string mlir::attn::launchKey(StringRef module, StringRef function) {
  return (module + "::" + function).str();
}

void mlir::attn::markLaunch(gpu::LaunchOp launch, const LaunchInfo &info) {
  Operation *fn = launch->getParentOfType<FunctionOpInterface>();
  assert(fn && launch.getModule() && launch.getFunction() &&
         "a named gpu.launch inside a function");
  MLIRContext *ctx = launch.getContext();
  NamedAttrList entries;
  if (auto existing = fn->getAttrOfType<DictionaryAttr>(kLaunchesAttrName))
    entries.append(existing.getValue());
  entries.set(StringAttr::get(ctx, launchKey(*launch.getModule(),
                                             *launch.getFunction())),
              launchInfoAttr(ctx, info));
  fn->setAttr(kLaunchesAttrName, entries.getDictionary(ctx));
}

std::string mlir::attn::launchWhen(Operation *forall) {
  if (auto when = forall->getAttrOfType<StringAttr>(kLaunchWhenAttrName))
    return when.str();
  return "always";
}
