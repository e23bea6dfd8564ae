//===- KernelOperands.h - memrefs behind a JIT entry's attn.sdpa -*- C++ -*-===//
//
// The GPU kernel conversions (convert-attn-to-gpu, attn-configure-nvgpu)
// take attn.sdpa in the JIT's destination-passing form: each operand is a
// bufferization.to_tensor of a memref and each result's only use is a
// bufferization.materialize_in_destination into one. These find those
// memrefs.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_KERNELOPERANDS_H
#define ATTN_CONVERSION_KERNELOPERANDS_H

#include "attn/Dialect/Attn/Transforms/Transforms.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"

namespace mlir::attn {

/// The memref an attn.sdpa operand was read from, or null.
inline Value sourceMemRef(Value tensor) {
  if (auto toTensor = tensor.getDefiningOp<bufferization::ToTensorOp>())
    return toTensor.getBuffer();
  return {};
}

/// The materialize_in_destination that writes a result into a memref (the
/// result's only use), or null.
inline bufferization::MaterializeInDestinationOp destinationOf(Value result) {
  if (!result || !result.hasOneUse())
    return {};
  auto mat = dyn_cast<bufferization::MaterializeInDestinationOp>(
      *result.getUsers().begin());
  if (!mat || mat.getSource() != result ||
      !isa<MemRefType>(mat.getDest().getType()))
    return {};
  return mat;
}

/// The index into dimension `i` of a possibly broadcast mask memref for
/// position `at`: 0 where the extent is 1 (statically, or tested at run
/// time when dynamic), else `at`.
inline Value broadcastIndex(OpBuilder &b, Location loc, Value mask, int64_t i,
                            Value at) {
  auto t = cast<MemRefType>(mask.getType());
  if (!t.isDynamicDim(i) && t.getDimSize(i) != 1)
    return at;
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  if (!t.isDynamicDim(i))
    return zero;
  Value isOne = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::eq, memref::DimOp::create(b, loc, mask, i),
      arith::ConstantIndexOp::create(b, loc, 1));
  return arith::SelectOp::create(b, loc, isOne, zero, at);
}

} // namespace mlir::attn

#endif // ATTN_CONVERSION_KERNELOPERANDS_H
