//===- SplitKV.cpp - split-KV workspaces and the merge kernel -------------===//
#include "attn/Conversion/SplitKV.h"
#include "attn/Conversion/KernelOperands.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;

namespace {
Value cidx(OpBuilder &b, Location loc, int64_t x) {
  return arith::ConstantIndexOp::create(b, loc, x);
}
Value cf32(OpBuilder &b, Location loc, double x) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(x));
}
Value dimOf(OpBuilder &b, Location loc, Value m, int64_t i) {
  auto t = cast<MemRefType>(m.getType());
  if (!t.isDynamicDim(i))
    return cidx(b, loc, t.getDimSize(i));
  return memref::DimOp::create(b, loc, m, i);
}
} // namespace

SplitKVWorkspace mlir::attn::allocateSplitKVWorkspace(OpBuilder &b,
                                                      Location loc, Value q,
                                                      int64_t dv,
                                                      int64_t splits,
                                                      bool staticSplits) {
  auto qt = cast<MemRefType>(q.getType());
  SmallVector<int64_t> lseShape{qt.getDimSize(0), qt.getDimSize(1),
                                staticSplits ? splits : ShapedType::kDynamic,
                                qt.getDimSize(2)};
  SmallVector<Value> dyn;
  for (int64_t i : {0, 1})
    if (qt.isDynamicDim(i))
      dyn.push_back(memref::DimOp::create(b, loc, q, i));
  if (!staticSplits)
    dyn.push_back(cidx(b, loc, splits));
  if (qt.isDynamicDim(2))
    dyn.push_back(memref::DimOp::create(b, loc, q, 2));
  SmallVector<int64_t> outShape(lseShape);
  outShape.push_back(dv);
  Type f32 = b.getF32Type();
  SplitKVWorkspace ws;
  ws.partialOut =
      memref::AllocOp::create(b, loc, MemRefType::get(outShape, f32), dyn);
  ws.partialLse =
      memref::AllocOp::create(b, loc, MemRefType::get(lseShape, f32), dyn);
  return ws;
}

void mlir::attn::deallocSplitKVWorkspace(OpBuilder &b, Location loc,
                                         const SplitKVWorkspace &ws) {
  memref::DeallocOp::create(b, loc, ws.partialOut);
  memref::DeallocOp::create(b, loc, ws.partialLse);
}

Value mlir::attn::splitCountOf(OpBuilder &b, Location loc,
                               const SplitKVWorkspace &ws) {
  return dimOf(b, loc, ws.partialLse, 2);
}

void mlir::attn::buildSplitKVMerge(OpBuilder &b, Location loc,
                                   const SplitKVWorkspace &ws, Value out,
                                   Value lse, FlatSymbolRefAttr module,
                                   FlatSymbolRefAttr function) {
  auto outTy = cast<MemRefType>(out.getType());
  int64_t dv = outTy.getDimSize(3);
  Type elt = outTy.getElementType();
  // Rows per workgroup: as many whole rows as the threads cover (at least
  // one); the threads stride over the workgroup's rows x Dv elements.
  int64_t rows = std::max<int64_t>(1, kSplitKVMergeThreads / dv);
  Value gx = arith::DivUIOp::create(
      b, loc,
      arith::AddIOp::create(b, loc, dimOf(b, loc, out, 2),
                            cidx(b, loc, rows - 1)),
      cidx(b, loc, rows));
  Value one = cidx(b, loc, 1);
  auto launch = gpu::LaunchOp::create(
      b, loc, gx, dimOf(b, loc, out, 1), dimOf(b, loc, out, 0),
      cidx(b, loc, kSplitKVMergeThreads), one, one,
      /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
      /*asyncDependencies=*/{}, /*workgroupAttributions=*/{},
      /*privateAttributions=*/{}, nullptr, nullptr, nullptr, module, function);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&launch.getBody().front());
  Value tid = launch.getThreadIds().x, h = launch.getBlockIds().y,
        bi = launch.getBlockIds().z;
  Value row0 = arith::MulIOp::create(b, loc, launch.getBlockIds().x,
                                     cidx(b, loc, rows));
  // Extents read inside the kernel: only memrefs become its parameters.
  Value sq = dimOf(b, loc, out, 2);
  Value splits = splitCountOf(b, loc, ws);
  Value negInf = cf32(b, loc, -INFINITY), zero = cf32(b, loc, 0.0);
  auto forOp = scf::ForOp::create(b, loc, tid, cidx(b, loc, rows * dv),
                                  cidx(b, loc, kSplitKVMergeThreads));
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(forOp.getBody());
    Value e = forOp.getInductionVar();
    Value row = arith::AddIOp::create(
        b, loc, row0, arith::DivUIOp::create(b, loc, e, cidx(b, loc, dv)));
    Value col = arith::RemUIOp::create(b, loc, e, cidx(b, loc, dv));
    auto inside = scf::IfOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row, sq),
        /*withElseRegion=*/false);
    b.setInsertionPointToStart(&inside.getThenRegion().front());
    Value c0 = cidx(b, loc, 0), c1 = cidx(b, loc, 1);
    // M = max_s lse_s; shifting by 0 when M = -inf makes every weight 0.
    auto maxLoop = scf::ForOp::create(b, loc, c0, splits, c1, ValueRange{negInf});
    {
      OpBuilder::InsertionGuard g2(b);
      b.setInsertionPointToStart(maxLoop.getBody());
      Value x = memref::LoadOp::create(
          b, loc, ws.partialLse,
          ValueRange{bi, h, maxLoop.getInductionVar(), row});
      scf::YieldOp::create(
          b, loc,
          ValueRange{arith::MaximumFOp::create(
              b, loc, maxLoop.getRegionIterArgs()[0], x)});
    }
    Value m = maxLoop.getResult(0);
    Value mIsInf =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, m, negInf);
    Value mSafe = arith::SelectOp::create(b, loc, mIsInf, zero, m);
    // sum_s w_s and sum_s w_s O_s.
    auto sumLoop =
        scf::ForOp::create(b, loc, c0, splits, c1, ValueRange{zero, zero});
    {
      OpBuilder::InsertionGuard g2(b);
      b.setInsertionPointToStart(sumLoop.getBody());
      Value s = sumLoop.getInductionVar();
      Value x = memref::LoadOp::create(b, loc, ws.partialLse,
                                       ValueRange{bi, h, s, row});
      Value w = math::Exp2Op::create(b, loc,
                                     arith::SubFOp::create(b, loc, x, mSafe));
      Value o = memref::LoadOp::create(b, loc, ws.partialOut,
                                       ValueRange{bi, h, s, row, col});
      ValueRange acc = sumLoop.getRegionIterArgs();
      scf::YieldOp::create(
          b, loc,
          ValueRange{arith::AddFOp::create(b, loc, acc[0], w),
                     arith::AddFOp::create(
                         b, loc, acc[1], arith::MulFOp::create(b, loc, w, o))});
    }
    Value total = sumLoop.getResult(0), weighted = sumLoop.getResult(1);
    Value empty =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, total, zero);
    Value o = arith::SelectOp::create(
        b, loc, empty, zero, arith::DivFOp::create(b, loc, weighted, total));
    if (!elt.isF32())
      o = arith::TruncFOp::create(b, loc, elt, o);
    memref::StoreOp::create(b, loc, o, out, ValueRange{bi, h, row, col});
    if (lse) {
      auto first = scf::IfOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, col, c0),
          /*withElseRegion=*/false);
      OpBuilder::InsertionGuard g2(b);
      b.setInsertionPointToStart(&first.getThenRegion().front());
      Value x = arith::MulFOp::create(
          b, loc,
          arith::AddFOp::create(
              b, loc, mSafe,
              // log2 of 1, not of an empty row's 0 (undefined in SPIR-V).
              math::Log2Op::create(
                  b, loc,
                  arith::SelectOp::create(b, loc, empty, cf32(b, loc, 1.0),
                                          total))),
          cf32(b, loc, kLn2));
      x = arith::SelectOp::create(b, loc, empty, negInf, x);
      memref::StoreOp::create(b, loc, x, lse, ValueRange{bi, h, row});
    }
  }
  gpu::TerminatorOp::create(b, loc);
}

SplitKVKernelNames mlir::attn::splitKVKernelNames(Operation *op) {
  Operation *table = SymbolTable::getNearestSymbolTable(op->getParentOp());
  std::string base = "attn_split_kv";
  if (auto fn = op->getParentOfType<FunctionOpInterface>())
    base = (fn.getName() + "_split_kv").str();
  // Unique among the symbols of the enclosing table (and among earlier
  // conversions in this module, which already created gpu.launch names
  // that outlining has not turned into symbols yet).
  std::string name = base;
  for (int i = 0;; ++i) {
    name = i ? base + "_" + std::to_string(i) : base;
    bool taken = table && SymbolTable::lookupSymbolIn(table, name);
    if (!taken && table)
      table->walk([&](gpu::LaunchOp l) {
        if (auto m = l.getModuleAttr())
          taken |= m.getValue() == name;
      });
    if (!taken)
      break;
  }
  MLIRContext *ctx = op->getContext();
  return {FlatSymbolRefAttr::get(ctx, name), FlatSymbolRefAttr::get(ctx, name),
          FlatSymbolRefAttr::get(ctx, name + "_merge")};
}

void mlir::attn::emitWithSplitKV(
    OpBuilder &b, Location loc, Operation *op, Value q, int64_t dv, Value out,
    Value lse, int64_t splits, bool staticSplits,
    function_ref<void(std::optional<SplitKVWorkspace>, SplitKVKernelNames)>
        emitKernel) {
  if (splits <= 1) {
    emitKernel(std::nullopt, {});
    return;
  }
  SplitKVKernelNames names = splitKVKernelNames(op);
  SplitKVWorkspace ws =
      allocateSplitKVWorkspace(b, loc, q, dv, splits, staticSplits);
  emitKernel(ws, names);
  buildSplitKVMerge(b, loc, ws, out, lse, names.module, names.merge);
  deallocSplitKVWorkspace(b, loc, ws);
}
