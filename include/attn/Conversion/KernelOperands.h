//===- KernelOperands.h - memrefs behind a JIT entry's attn.sdpa -*- C++ -*-===//
//
// The GPU kernel conversions (convert-attn-to-gpu, convert-attn-to-nvgpu)
// take attn.sdpa in the JIT's destination-passing form: each operand is a
// bufferization.to_tensor of a memref and each result's only use is a
// bufferization.materialize_in_destination into one. These find those
// memrefs.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_KERNELOPERANDS_H
#define ATTN_CONVERSION_KERNELOPERANDS_H

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/IR/Value.h"

namespace mlir::attn {

/// log2(e) and ln(2): exp(x) = exp2(x log2 e), log(x) = log2(x) ln 2.
constexpr double kLog2e = 1.4426950408889634;
constexpr double kLn2 = 0.6931471805599453;

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

} // namespace mlir::attn

#endif // ATTN_CONVERSION_KERNELOPERANDS_H
