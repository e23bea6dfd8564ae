//===- CPUVectorizeTiles.cpp - register-blocked vector code for the tiles -===//
//
// attn-cpu-vectorize-tiles (Passes.td). The tiled form's linalg ops become
// vector code for the host's vector width: the two contractions
// register-blocked micro-kernels over packed f32 panels, everything else
// vectorized whole (rows of it for a two-dimensional op), with masks where
// the tiles' extents are dynamic.
//
//===----------------------------------------------------------------------===//
#include "attn/Target/CPU/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Affine/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

#include "llvm/Support/MathExtras.h"

namespace mlir::attn {
#define GEN_PASS_DEF_CPUVECTORIZETILESPASS
#include "attn/Target/CPU/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

/// Marks a contraction's register tiles between tiling and vectorization.
constexpr llvm::StringLiteral kMicroKernel = "attn.cpu.micro_kernel";

/// The constant upper bound (inclusive) of dimension `dim` of `v`.
std::optional<int64_t> dimUpperBound(Value v, int64_t dim) {
  auto type = cast<RankedTensorType>(v.getType());
  if (!type.isDynamicDim(dim))
    return type.getDimSize(dim);
  FailureOr<int64_t> ub = ValueBoundsConstraintSet::computeConstantBound(
      presburger::BoundType::UB, ValueBoundsConstraintSet::Variable(v, dim),
      /*stopCondition=*/nullptr, /*closedUB=*/true);
  if (failed(ub))
    return std::nullopt;
  return *ub;
}

/// The constant upper bound (inclusive) of each loop of `op`, or
/// std::nullopt for one without.
SmallVector<std::optional<int64_t>> loopUpperBounds(linalg::LinalgOp op) {
  SmallVector<std::optional<int64_t>> bounds(op.getNumLoops());
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  for (auto [d, r] : llvm::enumerate(ranges))
    if (!ShapedType::isDynamic(r))
      bounds[d] = r;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand.get().getType());
    if (!type)
      continue;
    AffineMap map = op.getMatchingIndexingMap(&operand);
    for (auto [i, expr] : llvm::enumerate(map.getResults())) {
      auto dim = dyn_cast<AffineDimExpr>(expr);
      if (!dim || !type.isDynamicDim(i))
        continue;
      std::optional<int64_t> ub = dimUpperBound(operand.get(), i);
      if (!ub)
        continue;
      unsigned d = dim.getPosition();
      bounds[d] = bounds[d] ? std::min(*bounds[d], *ub) : *ub;
    }
  }
  return bounds;
}

/// The vector sizes that vectorize `op` whole (its loops' upper bounds),
/// or std::nullopt when a bound is missing or the vector too large.
std::optional<SmallVector<int64_t>> boundedSizes(linalg::LinalgOp op,
                                                 int64_t maxVector) {
  SmallVector<int64_t> sizes;
  int64_t elements = 1;
  for (std::optional<int64_t> b : loopUpperBounds(op)) {
    if (!b || *b <= 0)
      return std::nullopt;
    sizes.push_back(*b);
    elements *= *b;
    if (elements > maxVector)
      return std::nullopt;
  }
  return sizes;
}

/// Vectorizes `op` with vector `sizes` (masked where an extent is
/// dynamic); leaves it alone when the vectorizer refuses.
void vectorizeBounded(RewriterBase &rewriter, linalg::LinalgOp op,
                      ArrayRef<int64_t> sizes) {
  bool dynamic = false;
  for (int64_t r : op.getStaticLoopRanges())
    dynamic |= ShapedType::isDynamic(r);
  SmallVector<int64_t> vectorSizes;
  SmallVector<bool> scalable;
  if (dynamic) {
    vectorSizes.assign(sizes.begin(), sizes.end());
    scalable.assign(sizes.size(), false);
  }
  if (failed(linalg::vectorizeOpPrecondition(op, vectorSizes, scalable)))
    return;
  rewriter.setInsertionPoint(op);
  FailureOr<linalg::VectorizationResult> result =
      linalg::vectorize(rewriter, op, vectorSizes, scalable);
  if (failed(result))
    return;
  if (op->getNumResults() == 0)
    rewriter.eraseOp(op);
  else
    rewriter.replaceOp(op, result->replacements);
}

/// The m, n and k loops of a plain 2-D contraction (no batch), with the
/// positions of its left (m, k) and right (k, n or n, k) operands.
struct Contraction {
  unsigned m, n, k;
  unsigned lhs, rhs;
};

std::optional<Contraction> matchContraction(linalg::GenericOp op) {
  if (op.getNumLoops() != 3 || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || !op.hasPureTensorSemantics())
    return std::nullopt;
  if (!linalg::isaContractionOpInterface(op))
    return std::nullopt;
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || !dims->batch.empty() || dims->m.size() != 1 ||
      dims->n.size() != 1 || dims->k.size() != 1)
    return std::nullopt;
  Contraction c{dims->m[0], dims->n[0], dims->k[0], 0, 1};
  AffineMap out = op.getIndexingMapsArray()[2];
  if (out != AffineMap::get(3, 0,
                            {getAffineDimExpr(c.m, op.getContext()),
                             getAffineDimExpr(c.n, op.getContext())},
                            op.getContext()))
    return std::nullopt;
  AffineMap first = op.getIndexingMapsArray()[0];
  if (!first.isFunctionOfDim(c.m))
    std::swap(c.lhs, c.rhs);
  AffineMap lhs = op.getIndexingMapsArray()[c.lhs];
  AffineMap rhs = op.getIndexingMapsArray()[c.rhs];
  auto dim = [&](unsigned d) { return getAffineDimExpr(d, op.getContext()); };
  if (lhs.getNumResults() != 2 || lhs.getResult(0) != dim(c.m) ||
      lhs.getResult(1) != dim(c.k))
    return std::nullopt;
  if (rhs.getNumResults() != 2 ||
      !((rhs.getResult(0) == dim(c.k) && rhs.getResult(1) == dim(c.n)) ||
        (rhs.getResult(0) == dim(c.n) && rhs.getResult(1) == dim(c.k))))
    return std::nullopt;
  if (!cast<ShapedType>(op.getDpsInits()[0].getType()).getElementType().isF32())
    return std::nullopt;
  return c;
}

/// True when every use of block argument `arg` is an `arith.extf` to f32
/// (or `arg` is f32 already): the operand may then be given converted.
bool convertibleArg(BlockArgument arg) {
  if (arg.getType().isF32())
    return true;
  return llvm::all_of(arg.getUsers(), [](Operation *user) {
    auto ext = dyn_cast<arith::ExtFOp>(user);
    return ext && ext.getType().isF32();
  });
}

/// The block of a `bounds` source that packF32 reads per step.
SmallVector<int64_t> packBlock(ArrayRef<int64_t> bounds, bool transpose,
                               int64_t lanes) {
  if (!transpose)
    return {1, bounds[1]};
  if (bounds[0] % lanes == 0 && bounds[1] % lanes == 0)
    return {lanes, lanes};
  return SmallVector<int64_t>(bounds);
}

/// Whether packF32 handles `bounds` with vectors of at most `maxVector`
/// elements.
bool packable(ArrayRef<int64_t> bounds, bool transpose, int64_t lanes,
              int64_t maxVector) {
  SmallVector<int64_t> block = packBlock(bounds, transpose, lanes);
  return block[0] <= maxVector && block[1] <= maxVector / block[0];
}

/// `src` (2-D, extents bounded by `bounds`) as an f32 tensor, transposed
/// when `transpose`, written into a static panel of which the live part is
/// returned. The panel is filled a block at a time (a loop nest, so the
/// code stays small): `lanes x lanes` blocks transposed in registers when
/// both bounds are multiples of `lanes`, else the whole panel at once; a
/// row at a time without a transpose. Every read is one row (1-D), so no
/// n-D transfer is left to unroll under conditions.
Value packF32(RewriterBase &rewriter, Location loc, Value src,
              ArrayRef<int64_t> bounds, bool transpose, int64_t lanes) {
  auto type = cast<RankedTensorType>(src.getType());
  Type element = type.getElementType();
  Type f32 = rewriter.getF32Type();
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rewriter, loc, src);
  SmallVector<int64_t> panel(bounds);
  if (transpose) {
    std::swap(sizes[0], sizes[1]);
    std::swap(panel[0], panel[1]);
  }
  SmallVector<int64_t> block = packBlock(bounds, transpose, lanes);
  Value pad = arith::ConstantOp::create(rewriter, loc,
                                        rewriter.getZeroAttr(element));
  auto index = [&](OpBuilder &b, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  // Every row is a 1-D read. Its columns past the source's extent read as
  // zero (a masked load); its row index is clamped to the last row, so a
  // row past the extent repeats that row into the panel's dead part (a
  // tile has at least one row).
  bool rowsInBounds =
      !type.isDynamicDim(0) && type.getDimSize(0) == bounds[0];
  bool colsInBounds =
      !type.isDynamicDim(1) && type.getDimSize(1) == bounds[1];
  Value lastRow;
  if (!rowsInBounds) {
    Value rows = tensor::DimOp::create(rewriter, loc, src, 0);
    lastRow = arith::MaxSIOp::create(
        rewriter, loc,
        arith::SubIOp::create(rewriter, loc, rows, index(rewriter, 1)),
        index(rewriter, 0));
  }
  AffineMap minor =
      AffineMap::get(2, 0, rewriter.getAffineDimExpr(1), rewriter.getContext());
  auto rowType = VectorType::get({block[1]}, element);
  // f16 -> f32 by extf; bf16 -> f32 as a 16-bit shift of its bits (exact),
  // with integer ops: LLVM's x86 backend does not legalize every bf16
  // vector operation.
  auto toF32 = [&](OpBuilder &b, Value v) -> Value {
    auto vt = cast<VectorType>(v.getType());
    if (element.isBF16()) {
      auto i32 = vt.clone(b.getI32Type());
      Value sixteen = arith::ConstantOp::create(
          b, loc, DenseElementsAttr::get(i32, b.getI32IntegerAttr(16)));
      v = arith::BitcastOp::create(b, loc, vt.clone(b.getI16Type()), v);
      v = arith::ExtUIOp::create(b, loc, i32, v);
      v = arith::ShLIOp::create(b, loc, v, sixteen);
      return arith::BitcastOp::create(b, loc, vt.clone(f32), v);
    }
    if (!element.isF32())
      return arith::ExtFOp::create(b, loc, vt.clone(f32), v);
    return v;
  };
  auto readRow = [&](OpBuilder &b, Value row, Value col) -> Value {
    if (lastRow)
      row = arith::MinSIOp::create(b, loc, row, lastRow);
    Value v = vector::TransferReadOp::create(
        b, loc, rowType, src, ValueRange{row, col}, AffineMapAttr::get(minor),
        pad, /*mask=*/Value(), b.getBoolArrayAttr({colsInBounds}));
    return toF32(b, v);
  };
  // A block whose rows are all inside the source, read at once,
  // transposed in registers and written at the transposed position.
  auto transposeBlock = [&](OpBuilder &b, Value row, Value col,
                            Value dest) -> Value {
    Value v = vector::TransferReadOp::create(
        b, loc, VectorType::get(block, element), src, ValueRange{row, col},
        pad, ArrayRef<bool>{true, colsInBounds});
    v = vector::TransposeOp::create(b, loc, toF32(b, v),
                                    ArrayRef<int64_t>{1, 0});
    return vector::TransferWriteOp::create(b, loc, v, dest,
                                           ValueRange{col, row},
                                           ArrayRef<bool>{true, true})
        .getResult();
  };
  auto step = [&](OpBuilder &b, Value i, Value j, Value dest) -> Value {
    if (!transpose) {
      Value v = readRow(b, i, j);
      return vector::TransferWriteOp::create(
                 b, loc, v, dest, ValueRange{i, j}, AffineMapAttr::get(minor),
                 /*mask=*/Value(), b.getBoolArrayAttr({true}))
          .getResult();
    }
    if (!lastRow)
      return transposeBlock(b, i, j, dest);
    // The block's rows may pass the source's extent. With at least a
    // block of rows, the block moves up to end at the last row (rereading
    // rows the previous block wrote, with the same values); a source of
    // fewer rows is read a row at a time (row indices clamped, the rows
    // past it landing in the panel's dead part).
    Value rows = arith::AddIOp::create(b, loc, lastRow, index(b, 1));
    Value fits = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge,
                                       rows, index(b, block[0]));
    auto branch = scf::IfOp::create(
        b, loc, fits,
        [&](OpBuilder &t, Location) {
          Value start = arith::MinSIOp::create(
              t, loc, i,
              arith::SubIOp::create(t, loc, rows, index(t, block[0])));
          scf::YieldOp::create(t, loc, transposeBlock(t, start, j, dest));
        },
        [&](OpBuilder &e, Location) {
          auto blockType = VectorType::get(block, f32);
          Value v =
              arith::ConstantOp::create(e, loc, e.getZeroAttr(blockType));
          for (int64_t r = 0; r < block[0]; ++r) {
            Value row = arith::AddIOp::create(e, loc, i, index(e, r));
            v = vector::InsertOp::create(e, loc, readRow(e, row, j), v,
                                         ArrayRef<int64_t>{r});
          }
          v = vector::TransposeOp::create(e, loc, v, ArrayRef<int64_t>{1, 0});
          scf::YieldOp::create(
              e, loc,
              vector::TransferWriteOp::create(e, loc, v, dest,
                                              ValueRange{j, i},
                                              ArrayRef<bool>{true, true})
                  .getResult());
        });
    return branch.getResult(0);
  };
  Value dest = tensor::EmptyOp::create(rewriter, loc, panel, f32);
  int64_t rowsSteps = bounds[0] / block[0], colsSteps = bounds[1] / block[1];
  Value full;
  if (rowsSteps == 1 && colsSteps == 1) {
    Value zero = index(rewriter, 0);
    full = step(rewriter, zero, zero, dest);
  } else {
    auto outer = scf::ForOp::create(
        rewriter, loc, index(rewriter, 0), index(rewriter, bounds[0]),
        index(rewriter, block[0]), ValueRange{dest},
        [&](OpBuilder &b, Location, Value i, ValueRange outerArgs) {
          auto inner = scf::ForOp::create(
              b, loc, index(b, 0), index(b, bounds[1]), index(b, block[1]),
              outerArgs,
              [&](OpBuilder &b2, Location, Value j, ValueRange innerArgs) {
                scf::YieldOp::create(b2, loc,
                                     step(b2, i, j, innerArgs.front()));
              });
          scf::YieldOp::create(b, loc, inner.getResults());
        });
    full = outer.getResult(0);
  }
  SmallVector<OpFoldResult> offsets(2, rewriter.getIndexAttr(0));
  SmallVector<OpFoldResult> strides(2, rewriter.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(rewriter, loc, full, offsets, sizes,
                                        strides);
}

/// Rewrites contraction `op` to read f32 operands, its right one as a
/// `k x n` panel; returns the new op.
linalg::GenericOp packOperands(RewriterBase &rewriter, linalg::GenericOp op,
                               const Contraction &c, int64_t lanes,
                               int64_t maxVector) {
  Block *body = op.getBody();
  if (!convertibleArg(body->getArgument(c.lhs)) ||
      !convertibleArg(body->getArgument(c.rhs)))
    return op;
  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  AffineMap rhsMap = op.getIndexingMapsArray()[c.rhs];
  bool transpose = rhsMap.getResult(0) == getAffineDimExpr(c.n, ctx);
  Value lhs = op.getDpsInputs()[c.lhs];
  Value rhs = op.getDpsInputs()[c.rhs];
  auto bounds = [](Value v) -> std::optional<SmallVector<int64_t>> {
    std::optional<int64_t> b0 = dimUpperBound(v, 0), b1 = dimUpperBound(v, 1);
    if (!b0 || !b1 || *b0 < 1 || *b1 < 1)
      return std::nullopt;
    return SmallVector<int64_t>{*b0, *b1};
  };
  std::optional<SmallVector<int64_t>> lhsBounds = bounds(lhs),
                                      rhsBounds = bounds(rhs);
  if (!lhsBounds || !rhsBounds)
    return op;
  bool lhsF32 = cast<ShapedType>(lhs.getType()).getElementType().isF32();
  bool rhsF32 = cast<ShapedType>(rhs.getType()).getElementType().isF32();
  if (!packable(*lhsBounds, false, lanes, maxVector) ||
      ((transpose || !rhsF32) &&
       !packable(*rhsBounds, transpose, lanes, maxVector)))
    return op;
  // The left operand is packed when it needs converting, and when it is
  // invariant in the enclosing loop (Q in the key loop: packed once, its
  // rows then a static stride apart, which the micro-kernel's broadcasts
  // address with immediates).
  auto loop = op->getParentOfType<scf::ForOp>();
  bool invariant = loop && !loop->isAncestor(lhs.getParentRegion()->getParentOp());
  if (!lhsF32 || invariant)
    lhs = packF32(rewriter, loc, lhs, *lhsBounds, /*transpose=*/false,
                  lanes);
  if (transpose || !cast<ShapedType>(rhs.getType()).getElementType().isF32())
    rhs = packF32(rewriter, loc, rhs, *rhsBounds, transpose, lanes);
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  maps[c.rhs] = AffineMap::get(
      3, 0, {getAffineDimExpr(c.k, ctx), getAffineDimExpr(c.n, ctx)}, ctx);
  SmallVector<Value> inputs(2);
  inputs[c.lhs] = lhs;
  inputs[c.rhs] = rhs;
  auto packed = linalg::GenericOp::create(
      rewriter, loc, op.getResultTypes(), inputs, op.getDpsInits(), maps,
      op.getIteratorTypesArray(),
      [&](OpBuilder &b, Location l, ValueRange args) {
        IRMapping mapping;
        for (auto [i, old] : llvm::enumerate(body->getArguments())) {
          if (old.getType() == args[i].getType()) {
            mapping.map(old, args[i]);
            continue;
          }
          for (Operation *user : old.getUsers())
            mapping.map(user->getResult(0), args[i]);
        }
        for (Operation &inner : body->getOperations()) {
          if (inner.getNumResults() == 1 &&
              mapping.contains(inner.getResult(0)))
            continue;
          b.clone(inner, mapping);
        }
      });
  packed->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  rewriter.replaceOp(op, packed->getResults());
  return packed;
}

/// Whether `v` is a `linalg.fill` of +0.0.
bool zeroFilled(Value v) {
  auto fill = v.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return false;
  auto cst = fill.getInputs()[0].getDefiningOp<arith::ConstantOp>();
  auto f = cst ? dyn_cast<FloatAttr>(cst.getValue()) : FloatAttr();
  return f && f.getValue().isPosZero();
}

/// Contraction `op` = `A · Bᵀ` of bf16 operands (A [m, k], B [n, k], k
/// static and a multiple of 2 * lanes, an f32 result accumulated from
/// zero) as AVX512-BF16 dot products (`x86vector.avx512.dot`: per lane
/// acc += a0 b0 + a1 b1 over a pair of k). B is packed once per tile into
/// a `k/2 x n` panel of 32-bit pairs (its lanes x lanes blocks transposed
/// as i32 in registers), A into `m x k/2` pairs; the register tiles are
/// `r x vectors*lanes` over the bounds of m and n (rows past an extent
/// repeat the last row into the tile's dead part) and the live part of the
/// result is sliced out. Returns failure (op untouched) where the shape
/// does not fit.
LogicalResult bf16DotContraction(RewriterBase &rewriter, linalg::GenericOp op,
                                 const Contraction &c, int64_t lanes,
                                 int64_t rows, int64_t vectors) {
  MLIRContext *ctx = op.getContext();
  AffineMap rhsMap = op.getIndexingMapsArray()[c.rhs];
  if (rhsMap.getResult(0) != getAffineDimExpr(c.n, ctx))
    return failure(); // B given as [k, n]: P·V, whose P is f32
  Value lhs = op.getDpsInputs()[c.lhs], rhs = op.getDpsInputs()[c.rhs];
  Value init = op.getDpsInits()[0];
  auto lhsType = cast<RankedTensorType>(lhs.getType());
  auto rhsType = cast<RankedTensorType>(rhs.getType());
  if (!lhsType.getElementType().isBF16() ||
      !rhsType.getElementType().isBF16() || !zeroFilled(init))
    return failure();
  Block *body = op.getBody();
  if (!convertibleArg(body->getArgument(c.lhs)) ||
      !convertibleArg(body->getArgument(c.rhs)))
    return failure();
  if (lhsType.isDynamicDim(1) || rhsType.isDynamicDim(1) ||
      lhsType.getDimSize(1) != rhsType.getDimSize(1))
    return failure();
  const int64_t k = lhsType.getDimSize(1), words = k / 2;
  std::optional<int64_t> mBound = dimUpperBound(lhs, 0),
                         nBound = dimUpperBound(rhs, 0);
  if (k % (2 * lanes) != 0 || !mBound || !nBound || *mBound < 1 ||
      *nBound < 1 || *mBound > 4096 || *nBound > 4096)
    return failure();
  const int64_t m = *mBound, n = llvm::alignTo(*nBound, lanes);
  int64_t r = std::min(rows, m);
  while (m % r != 0)
    --r;
  int64_t v = std::min(vectors, n / lanes);
  while ((n / lanes) % v != 0)
    --v;

  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  Type i32 = rewriter.getI32Type(), f32 = rewriter.getF32Type(),
       bf16 = rewriter.getBF16Type();
  auto index = [&](OpBuilder &b, int64_t x) -> Value {
    return arith::ConstantIndexOp::create(b, loc, x);
  };
  auto lastRow = [&](Value t) -> Value {
    Value extent = tensor::DimOp::create(rewriter, loc, t, 0);
    return arith::MaxSIOp::create(
        rewriter, loc, arith::SubIOp::create(rewriter, loc, extent, index(rewriter, 1)),
        index(rewriter, 0));
  };
  Value zeroBf16 = arith::ConstantOp::create(rewriter, loc,
                                             rewriter.getZeroAttr(bf16));
  Value zeroI32 = arith::ConstantOp::create(rewriter, loc,
                                            rewriter.getZeroAttr(i32));
  auto minor = AffineMapAttr::get(
      AffineMap::get(2, 0, rewriter.getAffineDimExpr(1), ctx));
  // Row `row` (clamped to `last`) of a bf16 [*, k] tensor from column
  // `col`: `width` bf16 read, as width / 2 pairs.
  auto readPairs = [&](OpBuilder &b, Value src, Value last, Value row,
                       Value col, int64_t width) -> Value {
    row = arith::MinSIOp::create(b, loc, row, last);
    Value x = vector::TransferReadOp::create(
        b, loc, VectorType::get({width}, bf16), src, ValueRange{row, col},
        minor, zeroBf16, /*mask=*/Value(), b.getBoolArrayAttr({true}));
    return vector::BitCastOp::create(b, loc,
                                     VectorType::get({width / 2}, i32), x);
  };
  auto forLoop = [&](OpBuilder &b, int64_t ub, int64_t step, Value init,
                     function_ref<Value(OpBuilder &, Value, Value)> fn) {
    return scf::ForOp::create(
               b, loc, index(b, 0), index(b, ub), index(b, step),
               ValueRange{init},
               [&](OpBuilder &bb, Location, Value iv, ValueRange args) {
                 scf::YieldOp::create(bb, loc, fn(bb, iv, args.front()));
               })
        .getResult(0);
  };

  // B: panel[w, j] = the pair (B[j, 2w], B[j, 2w + 1]), a lanes x lanes
  // block of pairs at a time: read whole (rows past B's extent, in its
  // last block only, read as zero), transposed as i32.
  const bool rowsInBounds =
      !rhsType.isDynamicDim(0) && rhsType.getDimSize(0) == n;
  Value rowsB = tensor::DimOp::create(rewriter, loc, rhs, 0);
  auto bf16Block = VectorType::get({lanes, 2 * lanes}, bf16);
  Value panel = tensor::EmptyOp::create(rewriter, loc,
                                        ArrayRef<int64_t>{words, n}, i32);
  panel = forLoop(rewriter, n, lanes, panel, [&](OpBuilder &b, Value j0,
                                                 Value acc) {
    return forLoop(b, words, lanes, acc, [&](OpBuilder &b2, Value w0,
                                             Value acc2) -> Value {
      Value col = arith::MulIOp::create(b2, loc, w0, index(b2, 2));
      auto read = [&](OpBuilder &rb, bool inBounds) -> Value {
        return vector::TransferReadOp::create(
            rb, loc, bf16Block, rhs, ValueRange{j0, col}, zeroBf16,
            ArrayRef<bool>{inBounds, true});
      };
      Value block;
      if (rowsInBounds) {
        block = read(b2, true);
      } else {
        Value full = arith::CmpIOp::create(
            b2, loc, arith::CmpIPredicate::sle,
            arith::AddIOp::create(b2, loc, j0, index(b2, lanes)), rowsB);
        block = scf::IfOp::create(
                    b2, loc, full,
                    [&](OpBuilder &t, Location) {
                      scf::YieldOp::create(t, loc, read(t, true));
                    },
                    [&](OpBuilder &e, Location) {
                      scf::YieldOp::create(e, loc, read(e, false));
                    })
                    .getResult(0);
      }
      block = vector::BitCastOp::create(
          b2, loc, VectorType::get({lanes, lanes}, i32), block);
      block = vector::TransposeOp::create(b2, loc, block,
                                          ArrayRef<int64_t>{1, 0});
      return vector::TransferWriteOp::create(b2, loc, block, acc2,
                                             ValueRange{w0, j0},
                                             ArrayRef<bool>{true, true})
          .getResult();
    });
  });
  // A: pairs[i, w], rows past the extent repeating the last.
  Value lastA = lastRow(lhs);
  Value pairs = tensor::EmptyOp::create(rewriter, loc,
                                        ArrayRef<int64_t>{m, words}, i32);
  pairs = forLoop(rewriter, m, 1, pairs, [&](OpBuilder &b, Value i,
                                             Value acc) -> Value {
    Value row = readPairs(b, lhs, lastA, i, index(b, 0), k);
    return vector::TransferWriteOp::create(b, loc, row, acc,
                                           ValueRange{i, index(b, 0)},
                                           minor, /*mask=*/Value(),
                                           b.getBoolArrayAttr({true}))
        .getResult();
  });

  // The register tiles: r x v accumulators over the pairs of k.
  auto accType = VectorType::get({lanes}, f32);
  auto wordsType = VectorType::get({lanes}, i32);
  auto pairType = VectorType::get({2 * lanes}, bf16);
  auto splat = AffineMapAttr::get(
      AffineMap::get(2, 0, getAffineConstantExpr(0, ctx), ctx));
  Value zeroAcc = arith::ConstantOp::create(rewriter, loc,
                                            rewriter.getZeroAttr(accType));
  Value result = tensor::EmptyOp::create(rewriter, loc,
                                         ArrayRef<int64_t>{m, n}, f32);
  result = forLoop(rewriter, m, r, result, [&](OpBuilder &b, Value i0,
                                               Value out) {
    return forLoop(b, n, v * lanes, out, [&](OpBuilder &b2, Value j0,
                                             Value out2) -> Value {
      SmallVector<Value> zeros(r * v, zeroAcc);
      auto kLoop = scf::ForOp::create(
          b2, loc, index(b2, 0), index(b2, words), index(b2, 1), zeros,
          [&](OpBuilder &bk, Location, Value w, ValueRange accs) {
            SmallVector<Value> bs, next;
            for (int64_t x = 0; x < v; ++x) {
              Value j = arith::AddIOp::create(bk, loc, j0,
                                              index(bk, x * lanes));
              Value bw = vector::TransferReadOp::create(
                  bk, loc, wordsType, panel, ValueRange{w, j}, minor,
                  zeroI32, /*mask=*/Value(), bk.getBoolArrayAttr({true}));
              bs.push_back(
                  vector::BitCastOp::create(bk, loc, pairType, bw));
            }
            for (int64_t y = 0; y < r; ++y) {
              Value i = arith::AddIOp::create(bk, loc, i0, index(bk, y));
              Value aw = vector::TransferReadOp::create(
                  bk, loc, wordsType, pairs, ValueRange{i, w}, splat,
                  zeroI32, /*mask=*/Value(), bk.getBoolArrayAttr({true}));
              Value a = vector::BitCastOp::create(bk, loc, pairType, aw);
              for (int64_t x = 0; x < v; ++x)
                next.push_back(x86vector::DotBF16Op::create(
                    bk, loc, accs[y * v + x], a, bs[x]));
            }
            scf::YieldOp::create(bk, loc, next);
          });
      Value tile = out2;
      for (int64_t y = 0; y < r; ++y)
        for (int64_t x = 0; x < v; ++x) {
          Value i = arith::AddIOp::create(b2, loc, i0, index(b2, y));
          Value j = arith::AddIOp::create(b2, loc, j0, index(b2, x * lanes));
          tile = vector::TransferWriteOp::create(
                     b2, loc, kLoop.getResult(y * v + x), tile,
                     ValueRange{i, j}, minor, /*mask=*/Value(),
                     b2.getBoolArrayAttr({true}))
                     .getResult();
        }
      return tile;
    });
  });
  SmallVector<OpFoldResult> offsets(2, rewriter.getIndexAttr(0));
  SmallVector<OpFoldResult> strides(2, rewriter.getIndexAttr(1));
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rewriter, loc, init);
  rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
      op, cast<RankedTensorType>(op.getResultTypes()[0]), result, offsets,
      sizes, strides);
  return success();
}

/// Tiles contraction `op` into `rows x cols x 1` register tiles with the k
/// loop innermost and peels the m and n loops, so the full tiles are
/// static; marks every tile for vectorization.
LogicalResult tileContraction(RewriterBase &rewriter, linalg::GenericOp op,
                              const Contraction &c, int64_t rows,
                              int64_t cols) {
  SmallVector<OpFoldResult> sizes(3);
  sizes[c.m] = rewriter.getIndexAttr(rows);
  sizes[c.n] = rewriter.getIndexAttr(cols);
  sizes[c.k] = rewriter.getIndexAttr(1);
  scf::SCFTilingOptions options;
  options.setTileSizes(sizes);
  options.setInterchange({static_cast<int64_t>(c.m),
                          static_cast<int64_t>(c.n),
                          static_cast<int64_t>(c.k)});
  op->setAttr(kMicroKernel, rewriter.getUnitAttr());
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
      rewriter, cast<TilingInterface>(op.getOperation()), options);
  if (failed(tiled))
    return failure();
  rewriter.replaceOp(op, tiled->replacements);
  if (tiled->loops.size() != 3)
    return success();
  // Peel n (inner) first, then m: the full-full tiles have static sizes.
  for (int i : {1, 0}) {
    auto loop = dyn_cast<scf::ForOp>(tiled->loops[i].getOperation());
    scf::ForOp partial;
    if (loop)
      (void)scf::peelForLoopAndSimplifyBounds(rewriter, loop, partial);
  }
  return success();
}

/// Tiles a 2-D op whose first loop is parallel to rows (tile 1 x all).
linalg::LinalgOp tileRows(RewriterBase &rewriter, linalg::LinalgOp op) {
  if (op.getNumLoops() != 2 ||
      op.getIteratorTypesArray()[0] != utils::IteratorType::parallel)
    return op;
  auto tileable = dyn_cast<TilingInterface>(op.getOperation());
  if (!tileable)
    return op;
  scf::SCFTilingOptions options;
  options.setTileSizes({rewriter.getIndexAttr(1), rewriter.getIndexAttr(0)});
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> tiled =
      scf::tileUsingSCF(rewriter, tileable, options);
  if (failed(tiled) || tiled->tiledOps.size() != 1)
    return op;
  rewriter.replaceOp(op, tiled->replacements);
  return cast<linalg::LinalgOp>(tiled->tiledOps.front());
}

/// Gives every `tensor.empty` whose dynamic sizes have constant upper
/// bounds, of at most `maxElements` elements, a static shape (the bounds)
/// and slices its live part: the tiles' temporaries then have static
/// strides (their rows a constant apart, addressed with immediates). A
/// larger one keeps its dynamic sizes, so its buffer is sized by what the
/// launch needs, not by the bound.
void staticEmpties(RewriterBase &rewriter, func::FuncOp func,
                   int64_t maxElements) {
  SmallVector<tensor::EmptyOp> empties;
  func.walk([&](tensor::EmptyOp op) {
    if (!op.getType().hasStaticShape())
      empties.push_back(op);
  });
  for (tensor::EmptyOp op : empties) {
    RankedTensorType type = op.getType();
    SmallVector<int64_t> shape(type.getShape());
    bool bounded = true;
    for (int64_t d = 0; d < type.getRank() && bounded; ++d) {
      if (!type.isDynamicDim(d))
        continue;
      FailureOr<int64_t> ub = ValueBoundsConstraintSet::computeConstantBound(
          presburger::BoundType::UB,
          ValueBoundsConstraintSet::Variable(op.getDynamicSize(d)),
          /*stopCondition=*/nullptr, /*closedUB=*/true);
      bounded = succeeded(ub) && *ub >= 1 && *ub <= (int64_t{1} << 20);
      if (bounded)
        shape[d] = *ub;
    }
    int64_t elements = 1;
    for (int64_t d : shape)
      if (bounded)
        bounded = !llvm::MulOverflow(elements, d, elements) &&
                  elements <= maxElements;
    if (!bounded)
      continue;
    rewriter.setInsertionPoint(op);
    Value full = tensor::EmptyOp::create(rewriter, op.getLoc(), shape,
                                         type.getElementType());
    SmallVector<OpFoldResult> sizes = op.getMixedSizes();
    SmallVector<OpFoldResult> offsets(type.getRank(),
                                      rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> strides(type.getRank(),
                                      rewriter.getIndexAttr(1));
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(op, type, full,
                                                        offsets, sizes,
                                                        strides);
  }
}

/// Whether every use of `from` inside `body`, transitively up to `to`, is
/// a lane-wise op (elementwise, `vector.fma`, `arith.select`) whose result
/// has `from`'s vector type, and `to` is reached that way.
bool lanewiseChain(Value from, Value to, Block *body) {
  auto type = from.getType();
  SmallVector<Value> work{from};
  llvm::SmallPtrSet<Operation *, 16> seen;
  bool reached = from == to;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (Operation *user : v.getUsers()) {
      if (user->getBlock() != body)
        return false;
      if (isa<vector::TransferWriteOp>(user) && v == to)
        continue;
      if (isa<scf::YieldOp>(user))
        return false;
      bool lanewise = user->hasTrait<OpTrait::Elementwise>() ||
                      isa<vector::FMAOp, arith::SelectOp>(user);
      if (!lanewise || user->getNumResults() != 1 ||
          user->getResult(0).getType() != type)
        return false;
      if (!seen.insert(user).second)
        continue;
      Value r = user->getResult(0);
      reached |= r == to;
      work.push_back(r);
    }
  }
  return reached;
}

/// Moves a masked read and write of a loop-carried tile out of `loop`: an
/// edge register tile's accumulator (fewer live rows or columns than the
/// tile's) is read and written under a mask each k step, and
/// hoistLoopInvariantSubsets takes only unmasked pairs, so the edge tiles
/// kept their accumulators in memory (a decode step's 1-7 query rows ran
/// 2.5-3x slower than 8). The pair qualifies when the iter_arg's only uses
/// are the read and the write into it, the write's result is what the loop
/// yields, and both have the same loop-invariant indices, mask, map and
/// vector type. The vector then travels as an iter_arg (its masked-off
/// lanes hold the read's padding and whatever the k steps make of it; the
/// write after the loop stores only the live ones). Returns the new loop.
scf::ForOp hoistMaskedAccumulator(RewriterBase &rewriter, scf::ForOp loop) {
  for (unsigned i = 0; i < loop.getNumRegionIterArgs(); ++i) {
    BlockArgument arg = loop.getRegionIterArgs()[i];
    vector::TransferReadOp read;
    vector::TransferWriteOp write;
    bool other = false;
    for (OpOperand &use : arg.getUses()) {
      if (auto r = dyn_cast<vector::TransferReadOp>(use.getOwner());
          r && r.getBase() == arg && !read)
        read = r;
      else if (auto w = dyn_cast<vector::TransferWriteOp>(use.getOwner());
               w && w.getBase() == arg && !write)
        write = w;
      else
        other = true;
    }
    if (other || !read || !write || !read.getMask() || !write.getMask() ||
        read.getMask() != write.getMask() ||
        read.getIndices() != write.getIndices() ||
        read.getPermutationMap() != write.getPermutationMap() ||
        read.getVectorType() != write.getVectorType() ||
        read->getBlock() != loop.getBody() ||
        write->getBlock() != loop.getBody() ||
        !read->isBeforeInBlock(write) || !write.getResult().hasOneUse() ||
        loop.getBody()->getTerminator()->getOperand(i) != write.getResult())
      continue;
    auto invariant = [&](Value v) { return loop.isDefinedOutsideOfLoop(v); };
    if (!invariant(read.getMask()) || !invariant(read.getPadding()) ||
        !llvm::all_of(read.getIndices(), invariant))
      continue;
    // Each k step read the masked-off lanes as the padding; carried, they
    // hold what the step before computed there. Only lane-wise work keeps
    // the live lanes independent of them, so every op between the read and
    // the write must be elementwise on vectors of the tile's shape.
    if (!lanewiseChain(read.getResult(), write.getVector(), loop.getBody()))
      continue;
    // The read before the loop, of the tile the loop starts from.
    rewriter.setInsertionPoint(loop);
    IRMapping before;
    before.map(arg, loop.getInitArgs()[i]);
    Value initial = rewriter.clone(*read.getOperation(), before)->getResult(0);
    Value stored = write.getVector();
    FailureOr<LoopLikeOpInterface> replaced = loop.replaceWithAdditionalYields(
        rewriter, initial, /*replaceInitOperandUsesInLoop=*/false,
        [&](OpBuilder &, Location, ArrayRef<BlockArgument>) {
          return SmallVector<Value>{stored};
        });
    if (failed(replaced))
      return loop;
    auto grown = cast<scf::ForOp>(replaced->getOperation());
    BlockArgument carried = grown.getRegionIterArgs().back();
    rewriter.replaceAllUsesWith(read.getResult(), carried);
    rewriter.eraseOp(read);
    // The tile itself passes through unchanged; the write moves after.
    rewriter.replaceAllUsesWith(write.getResult(), grown.getRegionIterArgs()[i]);
    rewriter.setInsertionPointAfter(grown);
    IRMapping after;
    after.map(write.getBase(), grown.getResult(i));
    after.map(write.getVector(), grown.getResults().back());
    Operation *moved = rewriter.clone(*write.getOperation(), after);
    rewriter.replaceAllUsesExcept(grown.getResult(i), moved->getResult(0),
                                  moved);
    rewriter.eraseOp(write);
    return hoistMaskedAccumulator(rewriter, grown);
  }
  return loop;
}

/// `acc + a * b` on vectors, where the product allows contraction (the
/// micro-kernels' multiply-accumulate: the vectorizer keeps the multiply's
/// `contract` flag, not the add's), as one `vector.fma`.
struct FuseContractingMulAdd : public OpRewritePattern<arith::AddFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::AddFOp add,
                                PatternRewriter &rewriter) const override {
    auto type = dyn_cast<VectorType>(add.getType());
    if (!type)
      return failure();
    for (unsigned i = 0; i < 2; ++i) {
      Value product = add->getOperand(i);
      Value acc = add->getOperand(1 - i);
      auto cast = product.getDefiningOp<vector::ShapeCastOp>();
      if (cast) {
        if (!cast->hasOneUse())
          continue;
        product = cast.getSource();
      }
      auto mul = product.getDefiningOp<arith::MulFOp>();
      if (!mul || !mul->hasOneUse() ||
          !arith::bitEnumContainsAll(mul.getFastmath(),
                                     arith::FastMathFlags::contract))
        continue;
      Value a = mul.getLhs(), b = mul.getRhs();
      if (cast) {
        a = vector::ShapeCastOp::create(rewriter, add.getLoc(), type, a);
        b = vector::ShapeCastOp::create(rewriter, add.getLoc(), type, b);
      }
      rewriter.replaceOpWithNewOp<vector::FMAOp>(add, a, b, acc);
      return success();
    }
    return failure();
  }
};

/// A masked floating-point reduction as an unmasked one over the vector
/// with its masked-off lanes set to the kind's identity (-inf for max, +inf
/// for min, -0 for add), which the cpu pipeline's convert-vector-to-llvm
/// lowers to llvm.vector.reduce.* with reassociation (a tree). Its
/// lowering of a masked one (MLIR 22) goes wrong both ways:
/// - min/max: llvm.vp.reduce.fmax fills the masked-off lanes with the
///   smallest denormal of the opposite sign (-1.4e-45 for max), which wins
///   over a row whose scores are all negative: a tail tile's row max would
///   read ~0 and every exp2(s - max) of a row near -FLT_MAX underflow to 0;
/// - add: llvm.vp.reduce.fadd drops the reassociation, so the sum is
///   ordered: a dynamic-length row's running sum l took its block's keys
///   one at a time, and 2^16 nearly equal weights (a query near 0) drifted
///   by 4.5e-4 where a tree over each block keeps 1e-6 (and an ordered sum
///   is a serial chain of adds).
struct MaskedFloatReductionToSelect : public OpRewritePattern<vector::MaskOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(vector::MaskOp mask,
                                PatternRewriter &rewriter) const override {
    auto reduction =
        dyn_cast_or_null<vector::ReductionOp>(mask.getMaskableOp());
    if (!reduction || mask.hasPassthru())
      return failure();
    auto type = cast<VectorType>(reduction.getVector().getType());
    auto element = dyn_cast<FloatType>(type.getElementType());
    if (!element)
      return failure();
    const llvm::fltSemantics &sem = element.getFloatSemantics();
    APFloat identity(0.0);
    switch (reduction.getKind()) {
    case vector::CombiningKind::MAXIMUMF:
    case vector::CombiningKind::MAXNUMF:
      identity = APFloat::getInf(sem, /*Negative=*/true);
      break;
    case vector::CombiningKind::MINIMUMF:
    case vector::CombiningKind::MINNUMF:
      identity = APFloat::getInf(sem, /*Negative=*/false);
      break;
    case vector::CombiningKind::ADD:
      identity = APFloat::getZero(sem, /*Negative=*/true);
      break;
    default:
      return failure();
    }
    Location loc = reduction.getLoc();
    Value fill = arith::ConstantOp::create(
        rewriter, loc,
        DenseElementsAttr::get(type, rewriter.getFloatAttr(element, identity)));
    Value lanes = arith::SelectOp::create(rewriter, loc, mask.getMask(),
                                          reduction.getVector(), fill);
    Value result = vector::ReductionOp::create(
        rewriter, loc, reduction.getKind(), lanes, reduction.getAcc(),
        reduction.getFastmath());
    rewriter.replaceOp(mask, result);
    return success();
  }
};

struct CPUVectorizeTilesPass
    : public mlir::attn::impl::CPUVectorizeTilesPassBase<
          CPUVectorizeTilesPass> {
  using Base::Base;

  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    affine::registerValueBoundsOpInterfaceExternalModels(registry);
    arith::registerValueBoundsOpInterfaceExternalModels(registry);
    scf::registerValueBoundsOpInterfaceExternalModels(registry);
    tensor::registerValueBoundsOpInterfaceExternalModels(registry);
  }

  /// The canonicalization patterns, collected once per pass instance.
  FrozenRewritePatternSet canonicalization;

  LogicalResult initialize(MLIRContext *context) override {
    RewritePatternSet patterns(context);
    for (Dialect *d : context->getLoadedDialects())
      d->getCanonicalizationPatterns(patterns);
    for (RegisteredOperationName op : context->getRegisteredOperations())
      op.getCanonicalizationPatterns(patterns, context);
    canonicalization = FrozenRewritePatternSet(std::move(patterns));
    return success();
  }

  LogicalResult simplify(func::FuncOp func) {
    return applyPatternsGreedily(func, canonicalization);
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (lanes < 1 || rows < 1 || vectors < 1 || maxVector < 1) {
      func.emitError("attn-cpu-vectorize-tiles: lanes, rows, vectors and "
                     "max-vector must be positive");
      return signalPassFailure();
    }
    IRRewriter rewriter(func.getContext());

    // Tile temporaries up to 16 vectors' worth (64 x 128 f32 per tile at
    // the default max-vector).
    staticEmpties(rewriter, func, 16 * maxVector);

    // 1. Contractions: packed operands, register tiles, peeled edges.
    SmallVector<linalg::GenericOp> contractions;
    func.walk([&](linalg::GenericOp op) {
      if (matchContraction(op))
        contractions.push_back(op);
    });
    for (linalg::GenericOp op : contractions) {
      Contraction c = *matchContraction(op);
      if (bf16Dot && lanes == 16 &&
          succeeded(bf16DotContraction(rewriter, op, c, lanes, rows, vectors)))
        continue;
      linalg::GenericOp packed = packOperands(rewriter, op, c, lanes, maxVector);
      if (failed(tileContraction(rewriter, packed, c, rows, vectors * lanes)))
        return signalPassFailure();
    }
    (void)simplify(func);

    // 2. The register tiles: static ones plainly, edge ones with masks.
    SmallVector<linalg::LinalgOp> tiles, others;
    func.walk([&](linalg::LinalgOp op) {
      if (!op.hasPureTensorSemantics())
        return;
      if (op->hasAttr(kMicroKernel))
        tiles.push_back(op);
      else
        others.push_back(op);
    });
    // Bounds first: a vectorized producer no longer tells its extents.
    SmallVector<std::pair<linalg::LinalgOp, SmallVector<int64_t>>> work;
    for (linalg::LinalgOp op : tiles) {
      op->removeAttr(kMicroKernel);
      std::optional<SmallVector<int64_t>> sizes = boundedSizes(op, maxVector);
      if (!sizes)
        continue;
      // An edge tile (a peeled remainder: fewer rows or columns than the
      // register tile) takes the full tile's vector shape under its mask,
      // not its bound (7 rows, 31 columns): odd-sized vectors split into
      // pieces LLVM handles badly once the accumulator lives in registers.
      if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation()))
        if (std::optional<Contraction> c = matchContraction(generic)) {
          if ((*sizes)[c->m] < rows)
            (*sizes)[c->m] = rows;
          if ((*sizes)[c->n] < vectors * lanes)
            (*sizes)[c->n] = vectors * lanes;
        }
      work.push_back({op, *sizes});
    }
    // 3. Everything else, a row at a time where it is 2-D.
    for (linalg::LinalgOp op : others) {
      std::optional<SmallVector<int64_t>> sizes = boundedSizes(op, maxVector);
      if (!sizes)
        continue;
      linalg::LinalgOp tiled = tileRows(rewriter, op);
      if (tiled != op) {
        // A row: its unit dimension dropped, so the vectors are 1-D.
        sizes->erase(sizes->begin());
        auto generic = dyn_cast<linalg::GenericOp>(tiled.getOperation());
        if (!generic) {
          sizes->insert(sizes->begin(), 1);
        } else {
          linalg::ControlDropUnitDims control;
          control.rankReductionStrategy = linalg::ControlDropUnitDims::
              RankReductionStrategy::ExtractInsertSlice;
          control.controlFn = [](Operation *) {
            return SmallVector<unsigned>{0};
          };
          rewriter.setInsertionPoint(generic);
          FailureOr<linalg::DropUnitDimsResult> dropped =
              linalg::dropUnitDims(rewriter, generic, control);
          if (failed(dropped)) {
            sizes->insert(sizes->begin(), 1);
          } else {
            rewriter.replaceOp(generic, dropped->replacements);
            tiled = cast<linalg::LinalgOp>(dropped->resultOp.getOperation());
          }
        }
      }
      work.push_back({tiled, *sizes});
    }
    for (auto &[op, sizes] : work)
      vectorizeBounded(rewriter, op, sizes);
    (void)simplify(func);

    RewritePatternSet fma(func.getContext());
    fma.add<FuseContractingMulAdd>(func.getContext());
    (void)applyPatternsGreedily(func, std::move(fma));

    // 4. Accumulators in registers across the k loops: the read and write
    // of a loop-carried tile move out of the loop.
    func.walk([&](scf::ForOp loop) {
      moveLoopInvariantCode(cast<LoopLikeOpInterface>(loop.getOperation()));
    });
    func.walk([&](scf::ForOp loop) {
      (void)hoistLoopInvariantSubsets(
          rewriter, cast<LoopLikeOpInterface>(loop.getOperation()));
    });

    // 5. Exponentials as polynomials: exp2(x) = exp(x ln 2), and exp as
    // MLIR's approximation (on vectors; the few scalar ones left agree).
    // The approximation clamps its input, so exp2(-inf) would be about
    // 1e-38, not the 0 that masked scores rely on: -inf is selected out.
    SmallVector<math::Exp2Op> exps;
    func.walk([&](math::Exp2Op op) { exps.push_back(op); });
    for (math::Exp2Op op : exps) {
      rewriter.setInsertionPointAfter(op);
      Location loc = op.getLoc();
      Type type = op.getType();
      auto element = cast<FloatType>(getElementTypeOrSelf(type));
      auto splat = [&](APFloat value) -> Value {
        TypedAttr attr = rewriter.getFloatAttr(element, value);
        if (auto vec = dyn_cast<VectorType>(type))
          attr = DenseElementsAttr::get(vec, attr);
        return arith::ConstantOp::create(rewriter, loc, attr);
      };
      Value negInf = splat(APFloat::getInf(element.getFloatSemantics(),
                                           /*Negative=*/true));
      Value zero = splat(APFloat::getZero(element.getFloatSemantics()));
      Value isNegInf = arith::CmpFOp::create(
          rewriter, loc, arith::CmpFPredicate::OEQ, op.getOperand(), negInf);
      auto select =
          arith::SelectOp::create(rewriter, loc, isNegInf, zero, op);
      rewriter.replaceAllUsesExcept(op, select.getResult(), select);
    }
    RewritePatternSet math(func.getContext());
    math::populateExpansionPatterns(math, {"exp2"});
    populateMathPolynomialApproximationPatterns(
        math, [](StringRef name) { return name == "exp" || name == "math.exp"; });
    (void)applyPatternsGreedily(func, std::move(math));

    // 6. Masked transfers carry their masks themselves (a vector.mask
    // region on tensors must bufferize in place, which a write into a
    // loop-carried tile need not).
    RewritePatternSet masks(func.getContext());
    vector::populateVectorMaskLoweringPatternsForSideEffectingOps(masks);
    // Row ops as 1-D vectors, reductions as vector.reduction (masked ones
    // included, which convert-vector-to-llvm takes).
    vector::populateCastAwayVectorLeadingOneDimPatterns(masks);
    vector::populateVectorMultiReductionLoweringPatterns(
        masks, vector::VectorMultiReductionLowering::InnerReduction);
    (void)applyPatternsGreedily(func, std::move(masks));
    RewritePatternSet reductions(func.getContext());
    reductions.add<MaskedFloatReductionToSelect>(func.getContext());
    (void)applyPatternsGreedily(func, std::move(reductions));
    (void)simplify(func);

    // 7. The edge register tiles' accumulators in registers too, now that
    // their masks sit on the transfers (step 4 took the unmasked ones).
    SmallVector<scf::ForOp> loops;
    func.walk([&](scf::ForOp loop) { loops.push_back(loop); });
    for (scf::ForOp loop : loops)
      (void)hoistMaskedAccumulator(rewriter, loop);
    (void)simplify(func);
  }
};

} // namespace
