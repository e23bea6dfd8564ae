//===- KernelOperands.h - memrefs behind a JIT entry's attn.sdpa -*- C++ -*-===//
//
// The GPU targets' configuration passes (attn-configure-nvgpu,
// attn-configure-simt) take attn.sdpa in the
// JIT's destination-passing form: each operand is a bufferization.to_tensor
// of a memref and each result's only use is a
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

} // namespace mlir::attn

#endif // ATTN_CONVERSION_KERNELOPERANDS_H
