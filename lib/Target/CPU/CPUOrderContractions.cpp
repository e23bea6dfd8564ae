//===- CPUOrderContractions.cpp - function-level contractions, rows inner ---===//
//
// attn-cpu-order-contractions (Passes.td): the linalg contractions a layer
// leaves at function level (attn.mha's projections after
// attn-decompose-mha) become loops in their own loop order, and the
// decomposition puts the reduction innermost: a dot product per output
// element, an FMA chain the loop vectorizer may not reassociate. This
// step reorders each such contraction so that the output's contiguous
// dimension is the innermost loop (the reduction right outside it), and
// transposes an input read along that dimension out of contiguity (the
// weights: W [H, D, E] read along D) once, so that the innermost loop
// streams the output row and one input row with the other input's element
// broadcast: loops the vectorizer takes whole.
//
//===----------------------------------------------------------------------===//
#include "attn/Target/CPU/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::attn {
#define GEN_PASS_DEF_CPUORDERCONTRACTIONSPASS
#include "attn/Target/CPU/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

/// `map`'s results (dimension expressions) renamed by `newPos` (old loop
/// -> new loop) and reordered by `order` (result positions), over `loops`
/// loops.
AffineMap remap(AffineMap map, ArrayRef<unsigned> newPos,
                ArrayRef<unsigned> order, unsigned loops) {
  SmallVector<AffineExpr> exprs;
  for (unsigned r : order) {
    unsigned d = cast<AffineDimExpr>(map.getResult(r)).getPosition();
    exprs.push_back(getAffineDimExpr(newPos[d], map.getContext()));
  }
  return AffineMap::get(loops, 0, exprs, map.getContext());
}

/// Rows of the last outer parallel loop per parallel tile.
constexpr int64_t kRowsPerTile = 16;

/// Reorders `g` (a contraction on tensors, every map a projected
/// permutation, one output) and, with `parallel`, tiles its outer parallel
/// loops onto an scf.forall. Fails only where tiling fails.
LogicalResult reorder(IRRewriter &rw, linalg::GenericOp g, bool parallel) {
  if (g.getNumReductionLoops() == 0 || g.getNumDpsInits() != 1 ||
      g.hasIndexSemantics() || !g.hasPureTensorSemantics())
    return success();
  for (AffineMap m : g.getIndexingMapsArray())
    if (!m.isProjectedPermutation(/*allowZeroInResults=*/false))
      return success();
  const unsigned loops = g.getNumLoops();
  AffineMap outMap = g.getMatchingIndexingMap(g.getDpsInitOperand(0));
  if (outMap.getNumResults() == 0)
    return success();
  // The output's contiguous dimension, made the innermost loop.
  const unsigned inner =
      cast<AffineDimExpr>(outMap.getResults().back()).getPosition();
  if (inner == loops - 1)
    return success();
  SmallVector<unsigned> order; // new loop i = old loop order[i]
  for (unsigned d = 0; d < loops; ++d)
    if (d != inner)
      order.push_back(d);
  order.push_back(inner);
  SmallVector<unsigned> newPos(loops);
  for (auto [i, d] : llvm::enumerate(order))
    newPos[d] = i;

  Location loc = g.getLoc();
  rw.setInsertionPoint(g);
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (OpOperand *in : g.getDpsInputOperands()) {
    AffineMap m = g.getMatchingIndexingMap(in);
    SmallVector<unsigned> results(m.getNumResults());
    std::iota(results.begin(), results.end(), 0);
    Value v = in->get();
    // Read along `inner` but not contiguously there: transposed once so
    // that it is.
    std::optional<unsigned> at = m.getResultPosition(
        getAffineDimExpr(inner, g.getContext()));
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (at && *at + 1 != m.getNumResults() && type) {
      SmallVector<int64_t> perm;
      for (unsigned r = 0; r < m.getNumResults(); ++r)
        if (r != *at)
          perm.push_back(r);
      perm.push_back(*at);
      SmallVector<OpFoldResult> sizes;
      for (int64_t p : perm)
        sizes.push_back(tensor::getMixedSize(rw, loc, v, p));
      Value init =
          tensor::EmptyOp::create(rw, loc, sizes, type.getElementType());
      v = linalg::TransposeOp::create(rw, loc, v, init, perm).getResult()[0];
      results.assign(perm.begin(), perm.end());
    }
    inputs.push_back(v);
    maps.push_back(remap(m, newPos, results, loops));
  }
  SmallVector<unsigned> outResults(outMap.getNumResults());
  std::iota(outResults.begin(), outResults.end(), 0);
  maps.push_back(remap(outMap, newPos, outResults, loops));
  SmallVector<utils::IteratorType> iters;
  auto old = g.getIteratorTypesArray();
  for (unsigned d : order)
    iters.push_back(old[d]);
  auto next = linalg::GenericOp::create(rw, loc, g.getResultTypes(), inputs,
                                        g.getDpsInits(), maps, iters);
  rw.inlineRegionBefore(g.getRegion(), next.getRegion(),
                        next.getRegion().begin());
  rw.replaceOp(g, next.getResults());
  if (!parallel)
    return success();

  // The outer parallel loops (all but the innermost loop, which stays
  // whole, and the reductions) onto an scf.forall: one iteration each, the
  // last of them in blocks of rows, so that each tile streams whole rows.
  SmallVector<int64_t> ranges = next.getStaticLoopRanges();
  int64_t lastOuter = -1;
  for (unsigned i = 0; i + 1 < loops; ++i)
    if (iters[i] == utils::IteratorType::parallel)
      lastOuter = i;
  if (lastOuter < 0 || llvm::any_of(ranges, ShapedType::isDynamic))
    return success();
  SmallVector<OpFoldResult> sizes;
  for (unsigned i = 0; i < loops; ++i) {
    int64_t size = 0;
    if (i + 1 < loops && iters[i] == utils::IteratorType::parallel)
      size = int64_t(i) == lastOuter ? std::min(kRowsPerTile, ranges[i]) : 1;
    sizes.push_back(rw.getIndexAttr(size));
  }
  scf::SCFTilingOptions options;
  options.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
  options.setTileSizes(sizes);
  rw.setInsertionPoint(next);
  FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
      rw, cast<TilingInterface>(next.getOperation()), options);
  if (failed(tiled))
    return next.emitOpError("attn-cpu-order-contractions: tiling onto "
                            "scf.forall failed");
  rw.replaceOp(next, tiled->replacements);
  return success();
}

struct CPUOrderContractionsPass
    : mlir::attn::impl::CPUOrderContractionsPassBase<
          CPUOrderContractionsPass> {
  using Base::Base;
  void runOnOperation() override {
    IRRewriter rw(&getContext());
    SmallVector<linalg::GenericOp> ops;
    // Function level only: the tiles' contractions are the vectorizer's.
    for (Operation &op : getOperation().getBody().getOps())
      if (auto g = dyn_cast<linalg::GenericOp>(&op))
        ops.push_back(g);
    for (linalg::GenericOp g : ops)
      if (failed(reorder(rw, g, parallel)))
        return signalPassFailure();
  }
};

} // namespace
