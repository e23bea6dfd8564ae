//===- AttnOps.cpp - attn op verifiers and helpers ------------------------===//
#include "attn/Dialect/Attn/IR/AttnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;

namespace {
bool compatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

std::string dimStr(int64_t d) {
  return ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d);
}

/// The element count of a shape whose dims are all static, saturated at
/// kMaxElements + 1 (no overflow whatever the dims); nullopt if any dim is
/// dynamic. A zero dim gives 0.
std::optional<int64_t> staticElements(ShapedType ty) {
  int64_t n = 1;
  bool over = false;
  for (int64_t d : ty.getShape()) {
    if (ShapedType::isDynamic(d))
      return std::nullopt;
    if (d == 0)
      return 0;
    if (d < 0 || over || n > kMaxElements / d)
      over = true;
    else
      n *= d;
  }
  return over ? kMaxElements + 1 : n;
}

bool isSupportedElementType(Type t) { return t.isF16() || t.isBF16() || t.isF32(); }

/// Checks `ty` has `rank` and, where given, each dim is compatible with
/// `expected[i]` (kDynamic in `expected` means "anything").
LogicalResult checkShape(Operation *op, StringRef name, ShapedType ty,
                         ArrayRef<int64_t> expected, StringRef layout) {
  if (ty.getRank() != static_cast<int64_t>(expected.size()))
    return op->emitOpError() << name << " must be rank " << expected.size()
                             << " " << layout << ", got rank " << ty.getRank();
  for (auto [i, e] : llvm::enumerate(expected))
    if (!compatible(ty.getDimSize(i), e))
      return op->emitOpError()
             << name << " dimension " << i << " must be " << dimStr(e) << " "
             << layout << ", got " << dimStr(ty.getDimSize(i));
  return success();
}

LogicalResult checkF32(Operation *op, StringRef name, ShapedType ty) {
  if (!ty.getElementType().isF32())
    return op->emitOpError() << name << " must have f32 elements, got "
                             << ty.getElementType();
  return success();
}

LogicalResult checkDropout(Operation *op, std::optional<double> p,
                           bool hasSeed) {
  if (p) {
    if (!(*p >= 0.0 && *p < 1.0))
      return op->emitOpError()
             << "dropout probability must be in [0, 1), got " << *p;
    if (!hasSeed)
      return op->emitOpError() << "dropout requires a seed operand";
  } else if (hasSeed) {
    return op->emitOpError() << "seed given without a dropout probability";
  }
  return success();
}
} // namespace

//===----------------------------------------------------------------------===//
// SdpaOp
//===----------------------------------------------------------------------===//

double SdpaOp::getEffectiveScale() {
  if (auto s = getScale())
    return s->convertToDouble();
  return 1.0 / std::sqrt(static_cast<double>(getQueryType().getDimSize(3)));
}

double SdpaOp::getEffectiveDropout() {
  if (auto p = getDropoutP())
    return p->convertToDouble();
  return 0.0;
}

LogicalResult SdpaOp::verify() {
  Operation *op = getOperation();
  auto qTy = getQueryType(), kTy = getKeyType(), vTy = getValueType();
  const int64_t dyn = ShapedType::kDynamic;
  if (failed(checkShape(op, "query", qTy, {dyn, dyn, dyn, dyn}, "[B, Hq, Sq, D]")) ||
      failed(checkShape(op, "key", kTy, {dyn, dyn, dyn, dyn}, "[B, Hkv, Skv, D]")) ||
      failed(checkShape(op, "value", vTy, {dyn, dyn, dyn, dyn}, "[B, Hkv, Skv, Dv]")))
    return failure();

  Type elt = qTy.getElementType();
  if (!isSupportedElementType(elt))
    return emitOpError() << "query element type must be f16, bf16 or f32, got "
                         << elt;
  if (kTy.getElementType() != elt)
    return emitOpError() << "key element type " << kTy.getElementType()
                         << " must match query element type " << elt;
  if (vTy.getElementType() != elt)
    return emitOpError() << "value element type " << vTy.getElementType()
                         << " must match query element type " << elt;

  int64_t b = qTy.getDimSize(0), hq = qTy.getDimSize(1), sq = qTy.getDimSize(2),
          d = qTy.getDimSize(3);
  int64_t hkv = kTy.getDimSize(1), skv = kTy.getDimSize(2),
          dv = vTy.getDimSize(3);
  if (ShapedType::isDynamic(d) || ShapedType::isDynamic(kTy.getDimSize(3)) ||
      ShapedType::isDynamic(dv))
    return emitOpError() << "head dimensions D and Dv must be static";
  if (d <= 0 || dv <= 0)
    return emitOpError() << "head dimensions must be positive, got D = " << d
                         << ", Dv = " << dv;
  if (d > kMaxTileExtent || dv > kMaxTileExtent)
    return emitOpError() << "head dimensions must be at most "
                         << kMaxTileExtent << ", got D = " << d
                         << ", Dv = " << dv;
  if (failed(checkShape(op, "key", kTy, {b, dyn, dyn, d}, "[B, Hkv, Skv, D]")) ||
      failed(checkShape(op, "value", vTy, {b, hkv, skv, dyn}, "[B, Hkv, Skv, Dv]")))
    return failure();
  if (!ShapedType::isDynamic(hkv) && hkv <= 0)
    return emitOpError() << "key/value head count must be positive";
  // Zero-size problems are refused here and by the runtime at launch (the
  // API takes extents > 0), so no lowering has to define them.
  for (auto [name, v] : {std::pair<const char *, int64_t>{"B", b},
                         {"Hq", hq}, {"Sq", sq}, {"Skv", skv}})
    if (!ShapedType::isDynamic(v) && v <= 0)
      return emitOpError() << "static extent " << name
                           << " must be positive, got " << v;
  // Every static extent, and every static tensor, within kMaxElements, so
  // that no size product the lowerings form can overflow (a single huge
  // extent beside dynamic ones included).
  for (ShapedType ty : {qTy, kTy, vTy})
    for (int64_t e : ty.getShape())
      if (!ShapedType::isDynamic(e) && e > kMaxElements)
        return emitOpError() << "static extent " << e << " is more than "
                             << kMaxElements;
  for (auto [name, ty] :
       {std::pair<const char *, ShapedType>{"query", qTy}, {"key", kTy},
        {"value", vTy}}) {
    if (auto n = staticElements(ty); n && *n > kMaxElements)
      return emitOpError() << name << " has more than " << kMaxElements
                           << " elements";
  }
  if (!ShapedType::isDynamic(hq) && !ShapedType::isDynamic(hkv) &&
      hq % hkv != 0)
    return emitOpError() << "query heads (" << hq
                         << ") must be a multiple of key/value heads (" << hkv
                         << ")";

  auto outTy = cast<ShapedType>(getOut().getType());
  if (failed(checkShape(op, "out", outTy, {b, hq, sq, dv}, "[B, Hq, Sq, Dv]")))
    return failure();
  if (auto n = staticElements(outTy); n && *n > kMaxElements)
    return emitOpError() << "out has more than " << kMaxElements
                         << " elements";
  if (outTy.getElementType() != elt)
    return emitOpError() << "out element type " << outTy.getElementType()
                         << " must match query element type " << elt;
  if (Value lse = getLse()) {
    auto lseTy = cast<ShapedType>(lse.getType());
    if (failed(checkShape(op, "lse", lseTy, {b, hq, sq}, "[B, Hq, Sq]")) ||
        failed(checkF32(op, "lse", lseTy)))
      return failure();
  }

  if (Value mask = getMask()) {
    auto mTy = cast<ShapedType>(mask.getType());
    if (failed(checkShape(op, "mask", mTy, {dyn, dyn, sq, skv},
                          "[1|B, 1|Hq, Sq, Skv]")))
      return failure();
    int64_t mb = mTy.getDimSize(0), mh = mTy.getDimSize(1);
    if (!ShapedType::isDynamic(mb) && mb != 1 && !compatible(mb, b))
      return emitOpError() << "mask dimension 0 must be 1 or B (" << dimStr(b)
                           << "), got " << mb;
    if (!ShapedType::isDynamic(mh) && mh != 1 && !compatible(mh, hq))
      return emitOpError() << "mask dimension 1 must be 1 or Hq ("
                           << dimStr(hq) << "), got " << mh;
    if (auto n = staticElements(mTy); n && *n > kMaxElements)
      return emitOpError() << "mask has more than " << kMaxElements
                           << " elements";
    Type mElt = mTy.getElementType();
    if (!isKeepMaskType(mElt) && !isAdditiveMaskType(mElt))
      return emitOpError()
             << "mask element type must be i1 or i8 (keep-mask) or f16, "
                "bf16, f32 or f64 (additive), got "
             << mElt;
  }

  if (auto s = getScale()) {
    double v = s->convertToDouble();
    if (!std::isfinite(v))
      return emitOpError() << "scale must be finite, got " << v;
  }
  std::optional<double> p;
  if (auto a = getDropoutP())
    p = a->convertToDouble();
  return checkDropout(op, p, static_cast<bool>(getSeed()));
}

//===----------------------------------------------------------------------===//
// MhaOp
//===----------------------------------------------------------------------===//

LogicalResult MhaOp::verify() {
  Operation *op = getOperation();
  const int64_t dyn = ShapedType::kDynamic;
  auto xTy = getInputType();
  if (failed(checkShape(op, "input", xTy, {dyn, dyn, dyn}, "[B, S, E]")))
    return failure();
  Type elt = xTy.getElementType();
  if (!isSupportedElementType(elt))
    return emitOpError() << "input element type must be f16, bf16 or f32, got "
                         << elt;
  int64_t b = xTy.getDimSize(0), s = xTy.getDimSize(1), e = xTy.getDimSize(2);
  if (ShapedType::isDynamic(e))
    return emitOpError() << "embedding dimension E must be static";

  // Every static extent positive and every tensor within kMaxElements (as
  // attn.sdpa), so no product the decomposition forms overflows.
  auto checkSizes = [&](StringRef name, ShapedType ty) -> LogicalResult {
    for (int64_t d : ty.getShape())
      if (!ShapedType::isDynamic(d) && (d <= 0 || d > kMaxElements))
        return emitOpError() << name << " has extent " << d
                             << "; static extents must be in [1, "
                             << kMaxElements << "]";
    if (auto n = staticElements(ty); n && *n > kMaxElements)
      return emitOpError() << name << " has more than " << kMaxElements
                           << " elements";
    return success();
  };
  auto sameElt = [&](StringRef name, ShapedType ty) -> LogicalResult {
    if (ty.getElementType() != elt)
      return emitOpError() << name << " element type " << ty.getElementType()
                           << " must match input element type " << elt;
    return success();
  };
  if (failed(checkSizes("input", xTy)))
    return failure();

  int64_t skv = s, ekv = e;
  if (Value kv = getKvInput()) {
    auto kvTy = cast<ShapedType>(kv.getType());
    if (failed(checkShape(op, "kv", kvTy, {b, dyn, dyn}, "[B, Skv, Ekv]")) ||
        failed(sameElt("kv", kvTy)) || failed(checkSizes("kv", kvTy)))
      return failure();
    skv = kvTy.getDimSize(1);
    ekv = kvTy.getDimSize(2);
    if (ShapedType::isDynamic(ekv))
      return emitOpError() << "key/value embedding dimension Ekv must be "
                              "static";
  }

  int64_t hq = getNumHeads(), hkv = getNumKvHeads(), d = getHeadDim(),
          dv = getEffectiveValueDim();
  if (hq <= 0 || hkv <= 0)
    return emitOpError() << "head counts must be positive, got heads(" << hq
                         << ", " << hkv << ")";
  if (hq % hkv != 0)
    return emitOpError() << "query heads (" << hq
                         << ") must be a multiple of key/value heads (" << hkv
                         << ")";
  if (d <= 0 || dv <= 0 || d > kMaxTileExtent || dv > kMaxTileExtent)
    return emitOpError() << "head dimensions must be in [1, "
                         << kMaxTileExtent << "], got D = " << d
                         << ", Dv = " << dv;
  // Projected widths; heads beyond kMaxElements make them overflow-free
  // to form (each factor <= 2^40 would not be: check the products).
  auto width = [&](int64_t heads, int64_t dim, int64_t &out) {
    if (heads > kMaxElements / dim)
      return false;
    out = heads * dim;
    return true;
  };
  int64_t qw, kw, vw, ow;
  if (!width(hq, d, qw) || !width(hkv, d, kw) || !width(hkv, dv, vw) ||
      !width(hq, dv, ow) || qw + kw > kMaxElements - vw)
    return emitOpError() << "projected widths (heads x head dims) exceed "
                         << kMaxElements;

  auto checkWeight = [&](StringRef name, Value w, int64_t rows,
                         int64_t cols) -> LogicalResult {
    auto ty = cast<ShapedType>(w.getType());
    std::string layout = "[" + std::to_string(rows) + ", " +
                         std::to_string(cols) + "] ([out, in])";
    if (failed(checkShape(op, name, ty, {rows, cols}, layout)) ||
        failed(sameElt(name, ty)) || failed(checkSizes(name, ty)))
      return failure();
    if (!ty.hasStaticShape())
      return emitOpError() << name << " must have a static shape";
    return success();
  };
  auto checkBias = [&](StringRef name, Value bias, StringRef weight,
                       bool hasWeight, int64_t n) -> LogicalResult {
    if (!bias)
      return success();
    if (!hasWeight)
      return emitOpError() << name << " given without " << weight;
    auto ty = cast<ShapedType>(bias.getType());
    if (failed(checkShape(op, name, ty, {n},
                          "[" + std::to_string(n) + "]")) ||
        failed(sameElt(name, ty)))
      return failure();
    if (!ty.hasStaticShape())
      return emitOpError() << name << " must have a static shape";
    return success();
  };

  bool separate = getWQ() || getWK() || getWV();
  if (getWQkv()) {
    if (separate)
      return emitOpError() << "takes either wqkv or wq, wk and wv, not both";
    if (getKvInput())
      return emitOpError() << "a fused wqkv needs self-attention (no kv "
                              "input: its K and V project the input)";
    if (failed(checkWeight("wqkv", getWQkv(), qw + kw + vw, e)))
      return failure();
  } else {
    if (!getWQ() || !getWK() || !getWV())
      return emitOpError() << "needs wq, wk and wv (or one fused wqkv)";
    if (failed(checkWeight("wq", getWQ(), qw, e)) ||
        failed(checkWeight("wk", getWK(), kw, ekv)) ||
        failed(checkWeight("wv", getWV(), vw, ekv)))
      return failure();
  }
  if (failed(checkWeight("wo", getWO(), e, ow)))
    return failure();
  if (failed(checkBias("bq", getBQ(), "wq", static_cast<bool>(getWQ()), qw)) ||
      failed(checkBias("bk", getBK(), "wk", static_cast<bool>(getWK()), kw)) ||
      failed(checkBias("bv", getBV(), "wv", static_cast<bool>(getWV()), vw)) ||
      failed(checkBias("bqkv", getBQkv(), "wqkv",
                       static_cast<bool>(getWQkv()), qw + kw + vw)) ||
      failed(checkBias("bo", getBO(), "wo", true, e)))
    return failure();

  auto outTy = cast<ShapedType>(getOut().getType());
  if (failed(checkShape(op, "out", outTy, {b, s, e}, "[B, S, E]")) ||
      failed(sameElt("out", outTy)))
    return failure();

  if (Value mask = getMask()) {
    auto mTy = cast<ShapedType>(mask.getType());
    if (failed(checkShape(op, "mask", mTy, {dyn, dyn, s, skv},
                          "[1|B, 1|Hq, S, Skv]")) ||
        failed(checkSizes("mask", mTy)))
      return failure();
    int64_t mb = mTy.getDimSize(0), mh = mTy.getDimSize(1);
    if (!ShapedType::isDynamic(mb) && mb != 1 && !compatible(mb, b))
      return emitOpError() << "mask dimension 0 must be 1 or B (" << dimStr(b)
                           << "), got " << mb;
    if (!ShapedType::isDynamic(mh) && mh != 1 && mh != hq)
      return emitOpError() << "mask dimension 1 must be 1 or Hq (" << hq
                           << "), got " << mh;
    Type mElt = mTy.getElementType();
    if (!isKeepMaskType(mElt) && !isAdditiveMaskType(mElt))
      return emitOpError()
             << "mask element type must be i1 or i8 (keep-mask) or f16, "
                "bf16, f32 or f64 (additive), got "
             << mElt;
  }
  if (auto sc = getScale()) {
    double v = sc->convertToDouble();
    if (!std::isfinite(v))
      return emitOpError() << "scale must be finite, got " << v;
  }
  std::optional<double> p;
  if (auto a = getDropoutP())
    p = a->convertToDouble();
  return checkDropout(op, p, static_cast<bool>(getSeed()));
}

//===----------------------------------------------------------------------===//
// OnlineAttentionOp
//===----------------------------------------------------------------------===//

LogicalResult OnlineAttentionOp::verify() {
  Operation *op = getOperation();
  const int64_t dyn = ShapedType::kDynamic;
  auto qTy = cast<ShapedType>(getQuery().getType());
  auto kTy = cast<ShapedType>(getKey().getType());
  auto vTy = cast<ShapedType>(getValue().getType());
  if (failed(checkShape(op, "query", qTy, {dyn, dyn}, "[Br, D]")) ||
      failed(checkShape(op, "key", kTy, {dyn, qTy.getDimSize(1)}, "[Bc, D]")) ||
      failed(checkShape(op, "value", vTy, {kTy.getDimSize(0), dyn}, "[Bc, Dv]")))
    return failure();
  Type elt = qTy.getElementType();
  if (!isSupportedElementType(elt) || kTy.getElementType() != elt ||
      vTy.getElementType() != elt)
    return emitOpError() << "query, key and value must share one element type "
                            "of f16, bf16, f32";
  int64_t br = qTy.getDimSize(0), dv = vTy.getDimSize(1);
  auto accTy = cast<ShapedType>(getAcc().getType());
  auto maxTy = cast<ShapedType>(getMax().getType());
  auto sumTy = cast<ShapedType>(getSum().getType());
  if (failed(checkShape(op, "acc", accTy, {br, dv}, "[Br, Dv]")) ||
      failed(checkF32(op, "acc", accTy)) ||
      failed(checkShape(op, "max", maxTy, {br}, "[Br]")) ||
      failed(checkF32(op, "max", maxTy)) ||
      failed(checkShape(op, "sum", sumTy, {br}, "[Br]")) ||
      failed(checkF32(op, "sum", sumTy)))
    return failure();
  if (getNewAcc().getType() != accTy || getNewMax().getType() != maxTy ||
      getNewSum().getType() != sumTy)
    return emitOpError() << "result types must equal the state types";
  if (Value mask = getMask()) {
    auto mTy = cast<ShapedType>(mask.getType());
    if (failed(checkShape(op, "mask", mTy, {br, kTy.getDimSize(0)}, "[Br, Bc]")))
      return failure();
    if (!isKeepMaskType(mTy.getElementType()) &&
        !isAdditiveMaskType(mTy.getElementType()))
      return emitOpError()
             << "mask element type must be i1, i8, f16, bf16, f32 or f64";
    if (getPackedSeq())
      return emitOpError() << "a packed step (rows over heads) takes no mask";
  }
  if (!std::isfinite(getScale().convertToDouble()))
    return emitOpError() << "scale must be finite";
  if (auto t = getRescaleThreshold()) {
    double v = t->convertToDouble();
    if (!(v >= 0.0 && v <= 64.0))
      return emitOpError() << "rescale threshold must be in [0, 64] (log2 "
                              "units), got "
                           << v;
  }
  if (auto t = getPType()) {
    Type p = *t;
    if (!p.isF16() && !p.isBF16() && !p.isF32())
      return emitOpError() << "p_type must be f16, bf16 or f32, got " << p;
  }
  std::optional<double> p;
  if (auto a = getDropoutP())
    p = a->convertToDouble();
  return checkDropout(op, p, static_cast<bool>(getSeed()));
}

//===----------------------------------------------------------------------===//
// KvSplitCountOp
//===----------------------------------------------------------------------===//

LogicalResult KvSplitCountOp::verify() {
  if (getDefaultCount() < 1)
    return emitOpError() << "default count must be >= 1, got "
                         << getDefaultCount();
  return success();
}

//===----------------------------------------------------------------------===//
// OnlineAttentionFinalizeOp
//===----------------------------------------------------------------------===//

LogicalResult OnlineAttentionFinalizeOp::verify() {
  Operation *op = getOperation();
  const int64_t dyn = ShapedType::kDynamic;
  auto accTy = cast<ShapedType>(getAcc().getType());
  if (failed(checkShape(op, "acc", accTy, {dyn, dyn}, "[Br, Dv]")) ||
      failed(checkF32(op, "acc", accTy)))
    return failure();
  int64_t br = accTy.getDimSize(0);
  for (auto [name, v] : {std::make_pair("max", getMax()),
                         std::make_pair("sum", getSum())}) {
    auto ty = cast<ShapedType>(v.getType());
    if (failed(checkShape(op, name, ty, {br}, "[Br]")) ||
        failed(checkF32(op, name, ty)))
      return failure();
  }
  auto outTy = cast<ShapedType>(getOut().getType());
  if (failed(checkShape(op, "out", outTy, {br, accTy.getDimSize(1)}, "[Br, Dv]")))
    return failure();
  if (getPartial()) {
    if (failed(checkF32(op, "partial out", outTy)))
      return failure();
    if (getLse())
      return emitOpError() << "a partial finalize returns no lse (the "
                              "merge weighs chunks by their max and sum)";
  } else if (!isSupportedElementType(outTy.getElementType())) {
    return emitOpError() << "out element type must be f16, bf16 or f32";
  }
  if (Value lse = getLse()) {
    auto lseTy = cast<ShapedType>(lse.getType());
    if (failed(checkShape(op, "lse", lseTy, {br}, "[Br]")) ||
        failed(checkF32(op, "lse", lseTy)))
      return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// MergePartialsOp
//===----------------------------------------------------------------------===//

LogicalResult MergePartialsOp::verify() {
  Operation *op = getOperation();
  const int64_t dyn = ShapedType::kDynamic;
  auto poTy = cast<ShapedType>(getPartialOut().getType());
  if (failed(checkShape(op, "partial out", poTy, {dyn, dyn, dyn},
                        "[N, Br, Dv]")) ||
      failed(checkF32(op, "partial out", poTy)))
    return failure();
  int64_t n = poTy.getDimSize(0), br = poTy.getDimSize(1),
          dv = poTy.getDimSize(2);
  for (auto [name, v] : {std::make_pair("partial max", getPartialMax()),
                         std::make_pair("partial sum", getPartialSum())}) {
    auto ty = cast<ShapedType>(v.getType());
    if (failed(checkShape(op, name, ty, {n, br}, "[N, Br]")) ||
        failed(checkF32(op, name, ty)))
      return failure();
  }
  auto outTy = cast<ShapedType>(getOut().getType());
  if (failed(checkShape(op, "out", outTy, {br, dv}, "[Br, Dv]")))
    return failure();
  if (!isSupportedElementType(outTy.getElementType()))
    return emitOpError() << "out element type must be f16, bf16 or f32";
  if (Value lse = getLse()) {
    auto lseTy = cast<ShapedType>(lse.getType());
    if (failed(checkShape(op, "lse", lseTy, {br}, "[Br]")) ||
        failed(checkF32(op, "lse", lseTy)))
      return failure();
  }
  return success();
}

#define GET_OP_CLASSES
#include "attn/Dialect/Attn/IR/AttnOps.cpp.inc"

Value mlir::attn::buildKeepBit(OpBuilder &b, Location loc, Value m) {
  if (m.getType().isInteger(1))
    return m;
  return arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ne, m,
      arith::ConstantOp::create(b, loc, b.getIntegerAttr(m.getType(), 0)));
}
