//===- Dropout.cpp - the Philox-4x32-10 keep decision, shared by lowerings -===//
//
// Every path (reference lowering, tiled rewrite, GPU targets) builds the
// dropout decision through this one function, and the float64 reference in
// runtime/reference implements the same bits in C++, so all of them keep
// exactly the same elements. docs/Semantics.md states the algorithm.
//
//===----------------------------------------------------------------------===//
#include "attn/Dialect/Attn/Transforms/Transforms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include <cmath>

using namespace mlir;

namespace {
constexpr uint32_t kPhiloxM0 = 0xD2511F53u;
constexpr uint32_t kPhiloxM1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9u;
constexpr uint32_t kPhiloxW1 = 0xBB67AE85u;
constexpr int kPhiloxRounds = 10;
} // namespace

Value mlir::attn::buildDropoutKeep(OpBuilder &b, Location loc, Value seed,
                                   Value batch, Value head, Value row,
                                   Value col, double p) {
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  auto c32 = [&](uint32_t v) -> Value {
    return arith::ConstantOp::create(b, loc, i32,
                                     b.getI32IntegerAttr(static_cast<int32_t>(v)));
  };
  auto toWord = [&](Value idx) -> Value {
    return arith::IndexCastUIOp::create(b, loc, i32, idx);
  };
  Value k0 = arith::TruncIOp::create(b, loc, i32, seed);
  Value shift = arith::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(32));
  Value k1 = arith::TruncIOp::create(
      b, loc, i32, arith::ShRUIOp::create(b, loc, seed, shift));
  Value c0 = toWord(col), c1 = toWord(row), c2 = toWord(head),
        c3 = toWord(batch);
  Value m0 = c32(kPhiloxM0), m1 = c32(kPhiloxM1), w0 = c32(kPhiloxW0),
        w1 = c32(kPhiloxW1);
  for (int r = 0; r < kPhiloxRounds; ++r) {
    auto p0 = arith::MulUIExtendedOp::create(b, loc, m0, c0);
    auto p1 = arith::MulUIExtendedOp::create(b, loc, m1, c2);
    Value n0 = arith::XOrIOp::create(
        b, loc, arith::XOrIOp::create(b, loc, p1.getHigh(), c1), k0);
    Value n2 = arith::XOrIOp::create(
        b, loc, arith::XOrIOp::create(b, loc, p0.getHigh(), c3), k1);
    c0 = n0;
    c1 = p1.getLow();
    c2 = n2;
    c3 = p0.getLow();
    k0 = arith::AddIOp::create(b, loc, k0, w0);
    k1 = arith::AddIOp::create(b, loc, k1, w1);
  }
  // keep iff word * 2^-32 >= p, i.e. word >= ceil(p * 2^32), in integers so
  // that no target's float rounding can change the decision.
  auto threshold = static_cast<int64_t>(std::ceil(std::ldexp(p, 32)));
  Value word = arith::ExtUIOp::create(b, loc, i64, c0);
  Value t = arith::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(threshold));
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, word, t);
}
