//===- SPIRVBf16Storage.cpp - bf16 buffers as 16-bit integers for SPIR-V --===//
//
// Vulkan 1.1 has no bf16 type (VK_KHR_shader_bfloat16 is recent and rare),
// and MLIR 22's SPIR-V type conversion of bf16 memrefs is wrong (it declares
// the buffer as 32-bit words but indexes it per 16-bit element). This step
// of attn-to-spirv-pipeline, run on the host function while its kernels are
// still gpu.launch regions, keeps every bf16 buffer's bits and changes only
// the type it is seen through:
//
//   - every memref of bf16 (function arguments, allocations, views of them,
//     values inside launch regions) becomes the same memref of i16;
//   - memref.load of such a buffer loads an i16 and arith.bitcast makes it
//     bf16 again; memref.store bitcasts a bf16 value to i16 first.
//
// The bf16 values left are only converted to or from f32 (the kernels
// compute in f32); arith-expand{include-bf16} later turns those extf and
// truncf into integer shifts and round-to-nearest-even, and the bitcast
// pairs fold away, so the SPIR-V conversion sees 16-bit integers in memory
// and 32-bit arithmetic. The buffers keep their size and bytes, so the host
// stages bf16 tensors unchanged. An op that reads or writes bf16 buffer
// elements other than memref.load/store (a vector load, say) is an error
// naming it, not a silent reinterpretation.
//
//===----------------------------------------------------------------------===//
#include "attn/Target/SPIRV/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::attn {
#define GEN_PASS_DEF_SPIRVBF16STORAGEPASS
#include "attn/Target/SPIRV/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

/// The i16 memref that holds the bits of a bf16 memref, or null.
MemRefType asI16(Type t) {
  auto mt = dyn_cast<MemRefType>(t);
  if (!mt || !mt.getElementType().isBF16())
    return {};
  return MemRefType::get(mt.getShape(), IntegerType::get(t.getContext(), 16),
                         mt.getLayout(), mt.getMemorySpace());
}

/// Ops that use a buffer without interpreting its elements.
bool elementAgnostic(Operation *op) {
  return isa<memref::SubViewOp, memref::CastOp, memref::ReinterpretCastOp,
             memref::ExpandShapeOp, memref::CollapseShapeOp,
             memref::DeallocOp, memref::AllocOp, memref::AllocaOp,
             memref::DimOp, memref::ExtractStridedMetadataOp,
             memref::ExtractAlignedPointerAsIndexOp, gpu::LaunchFuncOp,
             func::ReturnOp, func::CallOp>(op);
}
} // namespace

LogicalResult mlir::attn::storeBf16AsI16(ModuleOp module) {
  MLIRContext *ctx = module.getContext();
  // Refuse first, change nothing on failure.
  bool failed = false;
  module.walk([&](Operation *op) {
    if (isa<memref::LoadOp, memref::StoreOp>(op) || elementAgnostic(op))
      return;
    for (Value v : op->getOperands())
      if (asI16(v.getType())) {
        op->emitError("attn-spirv-bf16-storage: '")
            << op->getName()
            << "' uses a bf16 buffer's elements; only memref.load and "
               "memref.store can be rewritten to 16-bit integers";
        failed = true;
        return;
      }
  });
  if (failed)
    return failure();

  auto retype = [](Value v) {
    if (MemRefType t = asI16(v.getType()))
      v.setType(t);
  };
  // Signatures first, then every value (block arguments of nested
  // regions included), then the element accesses.
  for (auto fn : module.getOps<func::FuncOp>()) {
    FunctionType ft = fn.getFunctionType();
    SmallVector<Type> ins, outs;
    for (Type t : ft.getInputs())
      ins.push_back(asI16(t) ? Type(asI16(t)) : t);
    for (Type t : ft.getResults())
      outs.push_back(asI16(t) ? Type(asI16(t)) : t);
    fn.setFunctionType(FunctionType::get(ctx, ins, outs));
  }
  SmallVector<memref::LoadOp> loads;
  SmallVector<memref::StoreOp> stores;
  module.walk([&](Operation *op) {
    for (Region &r : op->getRegions())
      for (Block &b : r)
        for (BlockArgument a : b.getArguments())
          retype(a);
    for (Value res : op->getResults())
      retype(res);
    if (auto l = dyn_cast<memref::LoadOp>(op))
      loads.push_back(l);
    if (auto s = dyn_cast<memref::StoreOp>(op))
      stores.push_back(s);
  });
  Type i16 = IntegerType::get(ctx, 16);
  for (memref::LoadOp l : loads) {
    if (!l.getType().isBF16())
      continue;
    OpBuilder b(l);
    b.setInsertionPointAfter(l);
    l.getResult().setType(i16);
    auto cast = arith::BitcastOp::create(b, l.getLoc(), BFloat16Type::get(ctx),
                                         l.getResult());
    l.getResult().replaceAllUsesExcept(cast.getResult(), cast);
  }
  for (memref::StoreOp s : stores) {
    if (!s.getValueToStore().getType().isBF16())
      continue;
    OpBuilder b(s);
    Value bits =
        arith::BitcastOp::create(b, s.getLoc(), i16, s.getValueToStore());
    s.getValueMutable().assign(bits);
  }
  return success();
}

namespace {
struct SPIRVBf16StoragePass
    : mlir::attn::impl::SPIRVBf16StoragePassBase<SPIRVBf16StoragePass> {
  void runOnOperation() override {
    if (failed(mlir::attn::storeBf16AsI16(getOperation())))
      signalPassFailure();
  }
};
} // namespace
