//===- SPIRVMapLinalg.cpp - function-level linalg on buffers as kernels ---===//
//
// attn-spirv-map-linalg: the linalg ops a layer leaves at function level
// once its tensors are buffers (attn-spirv-layer-buffers) become
// gpu.launch ops. A contraction of two buffers (the layer's projections)
// is tiled: 64 x 64 (or 16 x 16) outputs per workgroup of 256 invocations,
// its reduction in steps of 16 over slices of both inputs staged in
// workgroup memory. Anything else gets an invocation per point of its
// parallel iteration space (the innermost parallel dimension fastest
// across neighbouring invocations, 128 a workgroup) and a sequential loop
// nest over its reductions. Both evaluate the op's own scalar body. Two
// producer-consumer pairs the layer's decomposition always forms are
// folded first, so that no kernel writes what the next one only reads:
//   - a linalg.fill of a buffer that a contraction then accumulates into
//     becomes the contraction's starting value;
//   - an elementwise op that only reads the contraction's result (the
//     projection's bias and rounding) becomes the contraction's epilogue,
//     and the f32 buffer between them goes away.
//
//===----------------------------------------------------------------------===//
#include "attn/Conversion/TileDistribution.h"
#include "attn/Target/SPIRV/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVAttributes.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::attn {
#define GEN_PASS_DEF_SPIRVMAPLINALGPASS
#include "attn/Target/SPIRV/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

constexpr int64_t kInvocations = 128;
constexpr int64_t kMaxGroups = 65535; // Vulkan's guaranteed minimum per axis

/// The buffer a view chain starts from (a function argument or an
/// allocation), through the views the layer makes of buffers.
Value rootOf(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto e = dyn_cast<memref::ExpandShapeOp>(def))
      v = e.getSrc();
    else if (auto c = dyn_cast<memref::CollapseShapeOp>(def))
      v = c.getSrc();
    else if (auto s = dyn_cast<memref::SubViewOp>(def))
      v = s.getSource();
    else if (auto c = dyn_cast<memref::CastOp>(def))
      v = c.getSource();
    else
      break;
  }
  return v;
}

/// `v` inside a launch body: its view chain (and the constants the views
/// use) cloned there, so that the kernel takes the root buffer itself.
Value viewInside(OpBuilder &b, Value v, IRMapping &map) {
  if (Value m = map.lookupOrNull(v))
    return m;
  Operation *def = v.getDefiningOp();
  if (!def || rootOf(v) == v)
    return v;
  for (Value operand : def->getOperands()) {
    if (isa<BaseMemRefType>(operand.getType())) {
      map.map(operand, viewInside(b, operand, map));
    } else if (Operation *c = operand.getDefiningOp();
               c && c->hasTrait<OpTrait::ConstantLike>()) {
      if (!map.contains(operand))
        map.map(operand, b.clone(*c)->getResult(0));
    }
  }
  return b.clone(*def, map)->getResult(0);
}

/// The indices `map` selects from the loop indices `ivs`.
SmallVector<Value> apply(OpBuilder &b, Location loc, AffineMap map,
                         ArrayRef<Value> ivs) {
  SmallVector<Value> out;
  for (AffineExpr e : map.getResults()) {
    if (auto d = dyn_cast<AffineDimExpr>(e)) {
      out.push_back(ivs[d.getPosition()]);
      continue;
    }
    if (auto c = dyn_cast<AffineConstantExpr>(e)) {
      out.push_back(arith::ConstantIndexOp::create(b, loc, c.getValue()));
      continue;
    }
    out.push_back(affine::AffineApplyOp::create(
        b, loc, AffineMap::get(map.getNumDims(), 0, e), ivs));
  }
  return out;
}

/// Whether only views, allocations and constants lie between two ops (so
/// the second's kernel may do the first's work where the second was).
bool onlyViewsBetween(Operation *from, Operation *to) {
  for (Operation *op = from->getNextNode(); op && op != to;
       op = op->getNextNode())
    if (!isa<arith::ConstantOp, memref::ExpandShapeOp, memref::CollapseShapeOp,
             memref::SubViewOp, memref::CastOp, memref::AllocOp>(op))
      return false;
  return true;
}

/// A fill: no reduction, one scalar input (a map of no results) yielded
/// as it is into one output.
bool isFill(linalg::GenericOp g) {
  if (g.getNumReductionLoops() != 0 || g.getNumDpsInputs() != 1 ||
      g.getNumDpsInits() != 1 ||
      g.getMatchingIndexingMap(g.getDpsInputOperand(0)).getNumResults() != 0)
    return false;
  Block &body = g.getRegion().front();
  return cast<linalg::YieldOp>(body.getTerminator()).getOperand(0) ==
         body.getArgument(0);
}

/// A kernel for one linalg.generic on buffers.
struct Kernel {
  linalg::GenericOp op;
  /// The fill folded into it: the constant its outputs start from.
  Value start;
  /// The elementwise op folded into it as epilogue: its body runs on the
  /// reduced values (input `epilogueInput` of it) and it stores instead.
  linalg::GenericOp epilogue;
  unsigned epilogueInput = 0;
  /// Its position among the function's kernels (its entry point's name).
  unsigned index = 0;
};

/// Whether `g` reduces into each output element exactly once over its
/// parallel dimensions: outputs indexed by parallel dimensions only, each
/// once (a projected permutation).
bool outputsCoverParallel(linalg::GenericOp g) {
  unsigned parallel = g.getNumParallelLoops();
  for (OpOperand &init : g.getDpsInitsMutable()) {
    AffineMap m = g.getMatchingIndexingMap(&init);
    if (!m.isProjectedPermutation() || m.getNumResults() != parallel)
      return false;
    for (AffineExpr e : m.getResults())
      if (g.getIteratorTypesArray()[cast<AffineDimExpr>(e).getPosition()] !=
          utils::IteratorType::parallel)
        return false;
  }
  return true;
}

/// How a contraction maps onto 16 x 16 output tiles: its loop dimensions
/// by role. M: parallel, read by input 0 only; N: parallel, read by input
/// 1 only; K: reduction, read by both; batch: parallel, read by both or
/// neither. Each group is flattened in loop order, its last dimension
/// fastest.
struct Tiling {
  SmallVector<unsigned> m, n, k, batch;
  int64_t mSize = 1, nSize = 1, kSize = 1, batchSize = 1;
  /// Outputs per invocation along M and along N (the tile is 16 rows x
  /// 16 columns of invocations, each with rows x rows outputs).
  int64_t rows = 1;
};

constexpr int64_t kTile = 16;

/// The tiling of `op` when it is a contraction of two buffers through
/// projected permutations with M and N dimensions of at least one tile
/// between them and a grid within Vulkan's limits; else nothing (the
/// invocation-per-output mapping).
std::optional<Tiling> tilingOf(linalg::GenericOp op,
                               ArrayRef<int64_t> ranges) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() == 0 || !outputsCoverParallel(op))
    return std::nullopt;
  SmallVector<llvm::SmallBitVector, 2> reads;
  for (OpOperand *in : op.getDpsInputOperands()) {
    if (!isa<MemRefType>(in->get().getType()))
      return std::nullopt;
    AffineMap map = op.getMatchingIndexingMap(in);
    if (!map.isProjectedPermutation(/*allowZeroInResults=*/false))
      return std::nullopt;
    llvm::SmallBitVector used(ranges.size());
    for (AffineExpr e : map.getResults())
      used.set(cast<AffineDimExpr>(e).getPosition());
    reads.push_back(used);
  }
  Tiling t;
  auto iters = op.getIteratorTypesArray();
  for (unsigned d = 0; d < ranges.size(); ++d) {
    const bool a = reads[0].test(d), bIn = reads[1].test(d);
    if (iters[d] == utils::IteratorType::reduction) {
      if (!a || !bIn)
        return std::nullopt;
      t.k.push_back(d);
      t.kSize *= ranges[d];
    } else if (a && !bIn) {
      t.m.push_back(d);
      t.mSize *= ranges[d];
    } else if (bIn && !a) {
      t.n.push_back(d);
      t.nSize *= ranges[d];
    } else {
      t.batch.push_back(d);
      t.batchSize *= ranges[d];
    }
  }
  // 4 x 4 outputs per invocation (64 x 64 per workgroup) where the
  // body reads no loop index and M and N fill such tiles; else one.
  t.rows = !op.hasIndexSemantics() && t.mSize >= 4 * kTile &&
                   t.nSize >= 4 * kTile
               ? 4
               : 1;
  const int64_t tile = kTile * t.rows;
  if (t.m.empty() || t.n.empty() || t.mSize * t.nSize < kTile * kTile ||
      (t.mSize + tile - 1) / tile > kMaxGroups ||
      (t.nSize + tile - 1) / tile > kMaxGroups || t.batchSize > kMaxGroups)
    return std::nullopt;
  return t;
}

LogicalResult emit(Kernel &k, bool tile) {
  linalg::GenericOp op = k.op;
  Location loc = op.getLoc();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return op.emitOpError("attn-spirv-map-linalg: a function-level linalg op "
                          "of dynamic extent (a layer's shapes are static)");
  auto iters = op.getIteratorTypesArray();
  SmallVector<unsigned> par, red;
  for (auto [i, it] : llvm::enumerate(iters))
    (it == utils::IteratorType::parallel ? par : red).push_back(i);
  int64_t total = 1;
  for (unsigned p : par) {
    if (ranges[p] > 0 && total > (int64_t(1) << 40) / ranges[p])
      return op.emitOpError("attn-spirv-map-linalg: the iteration space is "
                            "too large for one launch");
    total *= ranges[p];
  }
  // With an epilogue, where the epilogue was (its outputs may be
  // allocated between the two; only views and allocations are).
  OpBuilder b(k.epilogue ? k.epilogue.getOperation() : op.getOperation());
  if (total == 0) {
    if (k.epilogue)
      k.epilogue->erase();
    op->erase();
    return success();
  }
  std::optional<Tiling> tiling =
      tile ? tilingOf(op, ranges) : std::optional<Tiling>();
  int64_t grid[3] = {1, 1, 1};
  const int64_t block = tiling ? kTile * kTile : kInvocations;
  if (tiling) {
    const int64_t tile = kTile * tiling->rows;
    grid[0] = (tiling->nSize + tile - 1) / tile;
    grid[1] = (tiling->mSize + tile - 1) / tile;
    grid[2] = tiling->batchSize;
  } else {
    const int64_t groups = (total + block - 1) / block;
    grid[0] = std::min(groups, kMaxGroups);
    grid[1] = (groups + grid[0] - 1) / grid[0];
    if (grid[1] > kMaxGroups)
      return op.emitOpError("attn-spirv-map-linalg: ")
             << total << " invocations exceed a grid of " << kMaxGroups
             << " x " << kMaxGroups << " workgroups of " << block;
  }

  auto idx = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value one = idx(1);
  // In the attention kernels' gpu.module (one spirv.module for the
  // artifact), named by position. The workgroup is one-dimensional (a
  // multiple of any subgroup size the attention kernel may require).
  auto fn = op->getParentOfType<func::FuncOp>();
  auto launch = gpu::LaunchOp::create(
      b, loc, idx(grid[0]), idx(grid[1]), idx(grid[2]), idx(block), one, one,
      /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
      /*asyncDependencies=*/{}, /*workgroupAttributions=*/{},
      /*privateAttributions=*/{}, /*clusterSizeX=*/nullptr,
      /*clusterSizeY=*/nullptr, /*clusterSizeZ=*/nullptr,
      FlatSymbolRefAttr::get(b.getContext(),
                             (fn.getName() + "_kernels").str()),
      FlatSymbolRefAttr::get(b.getContext(),
                             (fn.getName() + "_linalg" + Twine(k.index)).str()));
  Block &body = launch.getBody().front();
  b.setInsertionPointToEnd(&body);
  gpu::TerminatorOp::create(b, loc);
  b.setInsertionPointToStart(&body);

  IRMapping views;
  auto buffer = [&](Value v) { return viewInside(b, v, views); };
  // Scalars and constants the body uses from above: constants are cloned
  // in, anything else stays a value of the launch's region (outlining
  // refuses non-buffers, which the artifact would not take).
  IRMapping outerMap;
  auto outer = [&](Value v) -> Value {
    if (Value m = outerMap.lookupOrNull(v))
      return m;
    if (Operation *c = v.getDefiningOp();
        c && c->hasTrait<OpTrait::ConstantLike>()) {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(&body);
      Value cloned = b.clone(*c)->getResult(0);
      outerMap.map(v, cloned);
      return cloned;
    }
    return v;
  };
  // `lin` spread over `dims` (the last fastest) into `ivs`.
  auto delinearize = [&](Value lin, ArrayRef<unsigned> dims,
                         SmallVectorImpl<Value> &ivs) {
    for (unsigned d : llvm::reverse(dims)) {
      ivs[d] = arith::RemUIOp::create(b, loc, lin, idx(ranges[d]));
      lin = arith::DivUIOp::create(b, loc, lin, idx(ranges[d]));
    }
  };
  auto lessThan = [&](Value a, int64_t n) -> Value {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, a,
                                 idx(n));
  };

  SmallVector<Value> inputs, outputs;
  for (Value in : op.getDpsInputs())
    inputs.push_back(isa<MemRefType>(in.getType()) ? buffer(in) : in);
  for (Value out : op.getDpsInits())
    outputs.push_back(buffer(out));
  // The output elements' starting values at `ivs`: the folded fill's
  // constant, else the outputs.
  auto startValues = [&](ArrayRef<Value> ivs) {
    SmallVector<Value> acc;
    for (auto [i, out] : llvm::enumerate(outputs)) {
      if (k.start) {
        acc.push_back(outer(k.start));
        continue;
      }
      AffineMap m = op.getMatchingIndexingMap(op.getDpsInitOperand(i));
      acc.push_back(
          memref::LoadOp::create(b, loc, out, apply(b, loc, m, ivs)));
    }
    return acc;
  };

  // The kernel's end for one output element at `ivs` with reduced values
  // `results`: the epilogue's body and store, or the stores.
  auto finishAt = [&](ArrayRef<Value> ivs, ArrayRef<Value> results) {
    if (k.epilogue) {
      // The epilogue's iteration space is the contraction's parallel one, in
      // the order of the contraction's output map.
      AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
      SmallVector<Value> eIvs;
      for (AffineExpr e : outMap.getResults())
        eIvs.push_back(ivs[cast<AffineDimExpr>(e).getPosition()]);
      linalg::GenericOp ep = k.epilogue;
      SmallVector<Value> args;
      for (auto [i, in] : llvm::enumerate(ep.getDpsInputs())) {
        if (i == k.epilogueInput) {
          args.push_back(results[0]);
          continue;
        }
        if (!isa<MemRefType>(in.getType())) {
          args.push_back(outer(in));
          continue;
        }
        AffineMap m = ep.getMatchingIndexingMap(ep.getDpsInputOperand(i));
        args.push_back(
            memref::LoadOp::create(b, loc, buffer(in), apply(b, loc, m, eIvs)));
      }
      SmallVector<Value> epOuts;
      for (auto [i, out] : llvm::enumerate(ep.getDpsInits())) {
        Value buf = buffer(out);
        epOuts.push_back(buf);
        if (ep.payloadUsesValueFromOperand(ep.getDpsInitOperand(i))) {
          AffineMap m = ep.getMatchingIndexingMap(ep.getDpsInitOperand(i));
          args.push_back(
              memref::LoadOp::create(b, loc, buf, apply(b, loc, m, eIvs)));
        } else {
          args.push_back(Value());
        }
      }
      IRMapping epMap;
      SmallVector<Value> stored =
          mlir::attn::cloneGenericBody(b, ep, args, eIvs, epMap, outer);
      for (auto [i, v] : llvm::enumerate(stored)) {
        AffineMap m = ep.getMatchingIndexingMap(ep.getDpsInitOperand(i));
        memref::StoreOp::create(b, loc, v, epOuts[i], apply(b, loc, m, eIvs));
      }
    } else {
      for (auto [i, v] : llvm::enumerate(results)) {
        AffineMap m = op.getMatchingIndexingMap(op.getDpsInitOperand(i));
        memref::StoreOp::create(b, loc, v, outputs[i], apply(b, loc, m, ivs));
      }
    }
  };

  SmallVector<Value> ivs(ranges.size());
  SmallVector<Value> results;
  if (tiling) {
    // A tile of T x T outputs per workgroup of 16 x 16 invocations
    // (T = 16 r): invocation (ty, tx) owns the r x r outputs at rows
    // m0 + ty + 16 i (M) and columns n0 + tx + 16 j (N), so that
    // neighbouring invocations store neighbouring columns. The reduction
    // walks K in steps of 16, staging T x 16 of input 0 and 16 x T of
    // input 1 in workgroup memory: invocations neighbouring in tx read
    // neighbouring k (both inputs are K-contiguous in a layer's
    // contractions), rows padded by one element against bank conflicts.
    // Indices past M, N or K are clamped for the loads, their values
    // unused.
    const Tiling &t = *tiling;
    const int64_t r = t.rows, tileSize = kTile * r;
    Value tid = launch.getThreadIds().x;
    Value tx = arith::RemUIOp::create(b, loc, tid, idx(kTile));
    Value ty = arith::DivUIOp::create(b, loc, tid, idx(kTile));
    Value zero = idx(0);
    auto offset = [&](Value base, Value within, int64_t i) -> Value {
      return arith::AddIOp::create(
          b, loc, base,
          arith::AddIOp::create(b, loc, within, idx(kTile * i)));
    };
    Value m0 = arith::MulIOp::create(b, loc, launch.getBlockIds().y,
                                     idx(tileSize));
    Value n0 = arith::MulIOp::create(b, loc, launch.getBlockIds().x,
                                     idx(tileSize));
    auto clamp = [&](Value v, int64_t size) -> Value {
      return arith::SelectOp::create(b, loc, lessThan(v, size), v, zero);
    };
    Attribute wg = spirv::StorageClassAttr::get(b.getContext(),
                                                spirv::StorageClass::Workgroup);
    auto eltOf = [&](unsigned i) {
      return cast<MemRefType>(inputs[i].getType()).getElementType();
    };
    Value aTile = memref::AllocOp::create(
        b, loc,
        MemRefType::get({tileSize, kTile + 1}, eltOf(0),
                        MemRefLayoutAttrInterface{}, wg));
    Value bTile = memref::AllocOp::create(
        b, loc,
        MemRefType::get({kTile, tileSize + 1}, eltOf(1),
                        MemRefLayoutAttrInterface{}, wg));
    // Batch indices from grid z.
    delinearize(launch.getBlockIds().z, t.batch, ivs);
    // Loop indices by group, each delinearized once: `base` has the batch
    // indices and 0 elsewhere (an operand's map reads only its own
    // dimensions); row i's M indices and column j's N indices (clamped),
    // and whether that row and column exist.
    SmallVector<Value> base(ivs);
    for (Value &v : base)
      if (!v)
        v = zero;
    auto indices = [&](Value lin, ArrayRef<unsigned> dims) {
      SmallVector<Value> v(ranges.size());
      delinearize(lin, dims, v);
      return v;
    };
    // `to` with the dimensions `dims` taken from `from`.
    auto with = [](SmallVector<Value> to, ArrayRef<unsigned> dims,
                   ArrayRef<Value> from) {
      for (unsigned d : dims)
        to[d] = from[d];
      return to;
    };
    SmallVector<SmallVector<Value>> rowIvs, colIvs;
    SmallVector<Value> rowOk, colOk, tileRows;
    for (int64_t i = 0; i < r; ++i) {
      Value mi = offset(m0, ty, i), nj = offset(n0, tx, i);
      rowOk.push_back(lessThan(mi, t.mSize));
      colOk.push_back(lessThan(nj, t.nSize));
      rowIvs.push_back(indices(clamp(mi, t.mSize), t.m));
      colIvs.push_back(indices(clamp(nj, t.nSize), t.n));
      // Invocation (ty, tx)'s row i of the staged slices.
      tileRows.push_back(offset(ty, zero, i));
    }
    // Output (i, j)'s loop indices.
    SmallVector<SmallVector<Value>> outIvs;
    SmallVector<Value> acc;
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < r; ++j) {
        outIvs.push_back(with(with(base, t.m, rowIvs[i]), t.n, colIvs[j]));
        acc.push_back(startValues(outIvs.back()).front());
      }

    const int64_t steps = (t.kSize + kTile - 1) / kTile;
    auto outerLoop = scf::ForOp::create(b, loc, zero, idx(steps), one, acc);
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(outerLoop.getBody());
      Value k0 = arith::MulIOp::create(b, loc, outerLoop.getInductionVar(),
                                       idx(kTile));
      SmallVector<Value> kIvs =
          indices(clamp(arith::AddIOp::create(b, loc, k0, tx), t.kSize), t.k);
      AffineMap aMap = op.getMatchingIndexingMap(op.getDpsInputOperand(0));
      AffineMap bMap = op.getMatchingIndexingMap(op.getDpsInputOperand(1));
      for (int64_t i = 0; i < r; ++i) {
        // Input 0's row ty + 16 i (this invocation's output row i) at
        // k = k0 + tx; input 1's k = k0 + tx at column ty + 16 i, stored
        // transposed ([k][n]).
        Value rowLoad = tileRows[i];
        SmallVector<Value> aIvs = with(with(base, t.m, rowIvs[i]), t.k, kIvs);
        SmallVector<Value> bIvs =
            with(with(base, t.n,
                      indices(clamp(offset(n0, ty, i), t.nSize), t.n)),
                 t.k, kIvs);
        Value av = memref::LoadOp::create(b, loc, inputs[0],
                                          apply(b, loc, aMap, aIvs));
        Value bv = memref::LoadOp::create(b, loc, inputs[1],
                                          apply(b, loc, bMap, bIvs));
        memref::StoreOp::create(b, loc, av, aTile, ValueRange{rowLoad, tx});
        memref::StoreOp::create(b, loc, bv, bTile, ValueRange{tx, rowLoad});
      }
      gpu::BarrierOp::create(b, loc);
      // This step's keys: 16, or what is left of K.
      Value count = arith::MinUIOp::create(
          b, loc, idx(kTile),
          arith::SubIOp::create(b, loc, idx(t.kSize), k0));
      auto inner = scf::ForOp::create(b, loc, zero, count, one,
                                      outerLoop.getRegionIterArgs());
      {
        OpBuilder::InsertionGuard g2(b);
        b.setInsertionPointToStart(inner.getBody());
        Value kk = inner.getInductionVar();
        SmallVector<Value> as, bs;
        for (int64_t i = 0; i < r; ++i) {
          as.push_back(memref::LoadOp::create(b, loc, aTile,
                                              ValueRange{tileRows[i], kk}));
          bs.push_back(memref::LoadOp::create(
              b, loc, bTile, ValueRange{kk, offset(tx, zero, i)}));
        }
        SmallVector<Value> next;
        for (int64_t i = 0; i < r; ++i)
          for (int64_t j = 0; j < r; ++j) {
            // Loop indices for the body's linalg.index ops (a body with
            // them gets r = 1): this output's, the reduction's at k0 + kk.
            SmallVector<Value> bodyIvs(outIvs[i * r + j]);
            if (op.hasIndexSemantics())
              delinearize(arith::AddIOp::create(b, loc, k0, kk), t.k,
                          bodyIvs);
            SmallVector<Value> args = {as[i], bs[j],
                                       inner.getRegionIterArgs()[i * r + j]};
            IRMapping bodyMap;
            next.push_back(mlir::attn::cloneGenericBody(
                b, op, args, bodyIvs, bodyMap, outer)[0]);
          }
        scf::YieldOp::create(b, loc, next);
      }
      // Every invocation is done with the slices before they are
      // overwritten.
      gpu::BarrierOp::create(b, loc);
      scf::YieldOp::create(b, loc, inner.getResults());
    }
    // The epilogue's buffers viewed once, before the guarded stores that
    // share them.
    if (k.epilogue)
      for (Value v : k.epilogue->getOperands())
        if (isa<MemRefType>(v.getType()))
          buffer(v);
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < r; ++j) {
        OpBuilder::InsertionGuard g(b);
        Value ok = arith::AndIOp::create(b, loc, rowOk[i], colOk[j]);
        auto guard = scf::IfOp::create(b, loc, ok, /*withElse=*/false);
        b.setInsertionPointToStart(&guard.getThenRegion().front());
        finishAt(outIvs[i * r + j], {outerLoop.getResult(i * r + j)});
      }
  } else {
    // The linear invocation, the guard, the parallel indices.
    Value lin = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(
            b, loc,
            arith::AddIOp::create(
                b, loc,
                arith::MulIOp::create(b, loc, launch.getBlockIds().y,
                                      idx(grid[0])),
                launch.getBlockIds().x),
            idx(block)),
        launch.getThreadIds().x);
    auto guard =
        scf::IfOp::create(b, loc, lessThan(lin, total), /*withElse=*/false);
    b.setInsertionPointToStart(&guard.getThenRegion().front());
    delinearize(lin, par, ivs);
    SmallVector<Value> acc = startValues(ivs);

    // The reductions, innermost last.
    IRMapping bodyMap;
    std::function<SmallVector<Value>(unsigned, ValueRange)> reduce =
        [&](unsigned level, ValueRange carried) -> SmallVector<Value> {
      if (level == red.size()) {
        SmallVector<Value> args;
        for (auto [i, in] : llvm::enumerate(inputs)) {
          // A scalar operand (a fill's value) is itself.
          if (!isa<MemRefType>(in.getType())) {
            args.push_back(outer(in));
            continue;
          }
          AffineMap m = op.getMatchingIndexingMap(op.getDpsInputOperand(i));
          args.push_back(
              memref::LoadOp::create(b, loc, in, apply(b, loc, m, ivs)));
        }
        args.append(carried.begin(), carried.end());
        return mlir::attn::cloneGenericBody(b, op, args, ivs, bodyMap, outer);
      }
      unsigned d = red[level];
      auto loop =
          scf::ForOp::create(b, loc, idx(0), idx(ranges[d]), one, carried);
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(loop.getBody());
      ivs[d] = loop.getInductionVar();
      SmallVector<Value> next = reduce(level + 1, loop.getRegionIterArgs());
      scf::YieldOp::create(b, loc, next);
      return SmallVector<Value>(loop.getResults());
    };
    results = reduce(0, acc);
  }

  if (!tiling)
    finishAt(ivs, results);
  if (k.epilogue)
    k.epilogue->erase();
  op->erase();
  return success();
}

LogicalResult mapFunction(func::FuncOp fn, bool tile) {
  IRRewriter rw(fn.getContext());
  // Named ops (fill, copy) as generics first.
  SmallVector<linalg::LinalgOp> named;
  for (Operation &op : fn.getBody().getOps())
    if (auto l = dyn_cast<linalg::LinalgOp>(&op);
        l && !isa<linalg::GenericOp>(&op))
      named.push_back(l);
  for (linalg::LinalgOp l : named) {
    if (!l.hasPureBufferSemantics())
      return l->emitOpError("attn-spirv-map-linalg: expected a linalg op on "
                            "buffers (run attn-spirv-layer-buffers first)");
    rw.setInsertionPoint(l);
    if (failed(linalg::generalizeNamedOp(rw, l)))
      return l->emitOpError("attn-spirv-map-linalg: cannot generalize");
  }

  SmallVector<linalg::GenericOp> ops;
  for (Operation &op : fn.getBody().getOps())
    if (auto g = dyn_cast<linalg::GenericOp>(&op))
      ops.push_back(g);
  // Ops folded into another's kernel: fills (erased before the kernels
  // are emitted) and epilogues (erased by their contraction's).
  DenseSet<Operation *> folded;
  SmallVector<Operation *> fills;
  SmallVector<Kernel> kernels;
  for (auto [i, g] : llvm::enumerate(ops)) {
    if (folded.contains(g))
      continue;
    if (!g.hasPureBufferSemantics())
      return g->emitOpError("attn-spirv-map-linalg: expected a linalg op on "
                            "buffers (run attn-spirv-layer-buffers first)");
    Kernel k{g, Value(), linalg::GenericOp(), 0};
    const bool contraction = g.getNumReductionLoops() > 0 &&
                             g.getNumDpsInits() == 1 && outputsCoverParallel(g);
    // A fill this contraction starts from: the op before it (nothing
    // between touching the buffer) filling the buffer it accumulates
    // into, which it then overwrites whole. The fill's kernel goes.
    if (contraction && !kernels.empty() && kernels.back().op == ops[i - 1] &&
        !kernels.back().start && !kernels.back().epilogue) {
      linalg::GenericOp prev = ops[i - 1];
      Value out = g.getDpsInits()[0];
      if (isFill(prev) && prev.getDpsInits()[0] == out &&
          onlyViewsBetween(prev, g) &&
          prev.getDpsInputs()[0].getType() ==
              cast<MemRefType>(out.getType()).getElementType()) {
        k.start = prev.getDpsInputs()[0];
        folded.insert(prev);
        fills.push_back(prev);
        kernels.pop_back();
      }
    }
    // An elementwise op after it that reads its output, the only reader:
    // the epilogue.
    if (contraction && i + 1 < ops.size()) {
      linalg::GenericOp next = ops[i + 1];
      Value out = g.getDpsInits()[0];
      auto alloc = out.getDefiningOp<memref::AllocOp>();
      AffineMap outMap = g.getMatchingIndexingMap(g.getDpsInitOperand(0));
      unsigned users = 0, input = 0;
      bool identity = false;
      if (alloc) {
        for (Operation *u : alloc->getUsers())
          if (u != g && u != next && !folded.contains(u))
            ++users;
        for (auto [j, in] : llvm::enumerate(next.getDpsInputs()))
          if (in == out) {
            input = j;
            identity = next.getMatchingIndexingMap(
                               next.getDpsInputOperand(j))
                           .isIdentity();
          }
      }
      bool distinctOut = llvm::none_of(next.getDpsInits(), [&](Value o) {
        return rootOf(o) == rootOf(out);
      });
      if (alloc && users == 0 && identity && distinctOut &&
          next.getNumReductionLoops() == 0 &&
          next.getNumLoops() == outMap.getNumResults() &&
          llvm::count(next.getDpsInputs(), out) == 1 &&
          onlyViewsBetween(g, next)) {
        k.epilogue = next;
        k.epilogueInput = input;
        folded.insert(next);
      }
    }
    kernels.push_back(k);
  }
  for (Operation *fill : fills)
    fill->erase();
  for (auto [i, k] : llvm::enumerate(kernels)) {
    k.index = i;
    Value out = k.epilogue ? k.op.getDpsInits()[0] : Value();
    if (failed(emit(k, tile)))
      return failure();
    // The contraction's f32 buffer no kernel uses any more.
    if (out)
      if (auto alloc = out.getDefiningOp<memref::AllocOp>()) {
        SmallVector<Operation *> users(alloc->getUsers().begin(),
                                       alloc->getUsers().end());
        if (llvm::all_of(users, [](Operation *u) {
              return isa<memref::DeallocOp>(u);
            })) {
          for (Operation *u : users)
            u->erase();
          alloc->erase();
        }
      }
  }
  return success();
}

struct SPIRVMapLinalgPass
    : mlir::attn::impl::SPIRVMapLinalgPassBase<SPIRVMapLinalgPass> {
  using Base::Base;
  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (!fn.isExternal() && failed(mapFunction(fn, tile)))
        return signalPassFailure();
  }
};

} // namespace
