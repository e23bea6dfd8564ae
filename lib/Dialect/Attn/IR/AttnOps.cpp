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
