//===- ConfigureSIMT.cpp - the SIMT targets' tiling decisions -------------===//
//
// attn-configure-simt: for every attn.sdpa that no other mapping took, the
// #attn.tiling that attn-tile-sdpa applies and convert-attn-tiles-to-simt
// maps onto a workgroup (a thread or a subgroup per row).
//
//===----------------------------------------------------------------------===//
#include "attn/Conversion/TilesToSIMT/TilesToSIMT.h"
#include "attn/Conversion/KernelOperands.h"
#include "attn/Conversion/Passes.h"

#include "attn/Dialect/Attn/IR/AttnAttrs.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Dialect/Attn/Transforms/Transforms.h"
#include "attn/runtime/LaunchCondition.h"
#include "attn/runtime/PackedDecode.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNCONFIGURESIMTPASS
#include "attn/Conversion/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

int64_t mlir::attn::coopMatrixSharedBytes(int64_t br, int64_t bc, int64_t d,
                                          int64_t dv, bool registers) {
  const int64_t p4 = kCoopMatrixPadF32, p8 = kCoopMatrixPad16;
  if (registers)
    return br * (bc + p4) * 4 + br * 16 * 4 + br * (bc + p8) * 2 +
           std::max(br, bc) * (d + p8) * 2 + bc * (dv + p8) * 2;
  return br * (bc + p4) * 4 + br * (bc + p8) * 2 + br * (dv + p4) * 4 +
         br * (d + p8) * 2 + bc * (d + p8) * 2 + bc * (dv + p8) * 2;
}

int64_t mlir::attn::simtBlockKv(const ConfigureSIMTOptions &options,
                                int64_t headDim, int64_t valueDim,
                                int64_t elementBytes, int64_t seqQ) {
  if (options.blockKv > 0)
    return options.blockKv;
  if (options.coopMatrix > 0) {
    // (Registers: 64-key blocks measured slower than 32, and 32 slower
    // than 16 in decode: bench/results/vulkan-h200-four-strips-2026-12-02.)
    if (options.coopRegisters)
      return seqQ != 1 && coopMatrixSharedBytes(options.blockQ, 32, headDim,
                                                valueDim, true) <=
                              options.sharedMemoryBytes
                 ? 32
                 : 16;
    for (int64_t bc : {64, 32})
      if (coopMatrixSharedBytes(options.blockQ, bc, headDim, valueDim,
                                options.coopRegisters) <=
          options.sharedMemoryBytes)
        return bc;
    return 16;
  }
  for (int64_t bc : {64, 32, 16, 8})
    if (bc * (headDim + valueDim) * elementBytes <= options.sharedMemoryBytes)
      return bc;
  return 8;
}

bool mlir::attn::simtPacksDecodeHeads(int64_t headsQ, int64_t seqQ,
                                       int64_t headsKv, bool masked,
                                       bool dropout) {
  return seqQ == 1 && !dropout &&
         ::attn::packsDecodeHeads(headsQ, seqQ, headsKv, masked,
                                  /*causal=*/false);
}

namespace {
struct AttnConfigureSIMTPass
    : mlir::attn::impl::AttnConfigureSIMTPassBase<AttnConfigureSIMTPass> {
  using Base::Base;
  void runOnOperation() override {
    // (block-q compared by division: block-q x lanes could overflow.)
    if (lanes < 1 || lanes > 128 || (lanes & (lanes - 1)) || blockQ < 1 ||
        blockQ > 1024 / lanes || blockKv < 0 ||
        blockKv > mlir::attn::kMaxTileExtent || kvSplits < 1 ||
        kvSplits > mlir::attn::kMaxTileExtent ||
        sharedMemoryBytes < 1 || coopMatrix < 0 ||
        (coopMatrix > 0 && (coopMatrix < 16 || coopMatrix > 1024 ||
                            coopMatrix % lanes))) {
      emitError(getOperation()->getLoc(),
                "attn-configure-simt: lanes must be a power of two up to "
                "128, block-q >= 1 with block-q x lanes <= 1024 "
                "invocations, block-kv in [0, 2^20], kv-splits in [1, 2^20], "
                "shared-memory-bytes >= 1, and coop-matrix 0 or a workgroup "
                "of 16 to 1024 invocations that lanes divides");
      return signalPassFailure();
    }
    ConfigureSIMTOptions o;
    o.blockQ = blockQ;
    o.blockKv = blockKv;
    o.sharedMemoryBytes = sharedMemoryBytes;
    o.lanes = lanes;
    o.unroll = unroll;
    o.kvSplits = kvSplits;
    o.launchSplits = launchSplits;
    o.coopMatrix = coopMatrix;
    o.scalarProducts = scalarProducts;
    o.coopRegisters = coopRegisters;
    o.coopStrips = coopStrips;
    o.packDecodeHeads = packDecodeHeads;
    if (coopRegisters && (coopMatrix == 0 || scalarProducts || lanes > 8)) {
      emitError(getOperation()->getLoc(),
                "attn-configure-simt: coop-registers needs coop-matrix > 0, "
                "cooperative-matrix products (not scalar-products) and "
                "lanes up to 8 (a subgroup of 16 x lanes per 16-row strip)");
      return signalPassFailure();
    }
    if (coopStrips != 1 && (!coopRegisters || (coopStrips != 2 &&
                                               coopStrips != 4) ||
                            lanes * coopStrips > 8 ||
                            coopMatrix % (16 * lanes * coopStrips))) {
      emitError(getOperation()->getLoc(),
                "attn-configure-simt: coop-strips 2 or 4 needs "
                "coop-registers and a workgroup of whole subgroups of 16 x "
                "lanes x coop-strips invocations (at most 128)");
      return signalPassFailure();
    }
    SmallVector<SdpaOp> ops;
    getOperation()->walk([&](SdpaOp op) { ops.push_back(op); });
    for (SdpaOp op : ops)
      if (failed(configure(op, o)))
        return signalPassFailure();
  }

  LogicalResult configure(SdpaOp op, const ConfigureSIMTOptions &o) {
    TilingAttr given = op.getTilingAttr();
    if (given && given.getMapping())
      return success();
    // The kernel's operands are the memrefs of the JIT's
    // destination-passing form.
    if (!sourceMemRef(op.getQuery()) || !sourceMemRef(op.getKey()) ||
        !sourceMemRef(op.getValue()) ||
        (op.getMask() && !sourceMemRef(op.getMask())) ||
        !destinationOf(op.getOut()) ||
        (op.getLse() && !destinationOf(op.getLse())))
      return op.emitOpError(
          "attn-configure-simt: a GPU kernel is built from attn.sdpa in the "
          "runtime's destination-passing form (operands from "
          "bufferization.to_tensor of the kernel's memref arguments, results "
          "materialized into them); for a function on tensors, attn-translate "
          "--attn-to-ptx / --attn-to-spirv builds the kernel for its spec, "
          "and attn-run --input=FILE --target=T --dump-ir prints that "
          "kernel's source");
    Type elt = op.getQueryType().getElementType();
    int64_t d = op.getQueryType().getDimSize(3);
    int64_t dv = op.getValueType().getDimSize(3);
    int64_t eltBytes = elt.getIntOrFloatBitWidth() / 8;
    int64_t br = given ? given.getBlockQ() : o.blockQ;
    int64_t bc = given ? given.getBlockKv()
                     : simtBlockKv(o, d, dv, eltBytes,
                                   op.getQueryType().getDimSize(2));
    int64_t splits = given ? given.getKvSplits() : o.kvSplits;
    MLIRContext *ctx = op.getContext();
    Attribute mapping;
    Type pType;
    if (o.coopMatrix > 0) {
      // 16x16x16 matrices of 16-bit elements; P rounded to them for P.V.
      if (!elt.isF16() && !elt.isBF16())
        return op.emitOpError("attn-configure-simt: the cooperative-matrix "
                              "mapping takes f16 or bf16, got ")
               << elt;
      if (d % 16 || dv % 16 || br % 16 || bc % 16)
        return op.emitOpError("attn-configure-simt: the cooperative-matrix "
                              "mapping needs D, Dv, block-q and block-kv "
                              "multiples of 16, got D = ")
               << d << ", Dv = " << dv << ", block-q = " << br
               << ", block-kv = " << bc;
      if (o.lanes > 1 && (d % o.lanes || dv % o.lanes || bc % o.lanes))
        return op.emitOpError("attn-configure-simt: the cooperative-matrix "
                              "mapping with a row per ")
               << o.lanes << " lanes needs D, Dv and block-kv multiples of "
               << "them, got D = " << d << ", Dv = " << dv
               << ", block-kv = " << bc;
      if (br * o.lanes > o.coopMatrix)
        return op.emitOpError("attn-configure-simt: block-q ")
               << br << " rows of " << o.lanes << " invocations are more "
               << "than the workgroup's " << o.coopMatrix;
      if (o.coopRegisters && br * o.lanes != o.coopMatrix)
        return op.emitOpError("attn-configure-simt: coop-registers needs a "
                              "16-row strip per subgroup, block-q x lanes = "
                              "the workgroup's ")
               << o.coopMatrix << " invocations, got block-q " << br
               << " and lanes " << o.lanes;
      int64_t bytes = coopMatrixSharedBytes(br, bc, d, dv, o.coopRegisters);
      if (bytes > o.sharedMemoryBytes)
        return op.emitOpError("attn-configure-simt: the cooperative-matrix "
                              "tiles (block-q ")
               << br << ", block-kv " << bc << ", D = " << d << ", Dv = "
               << dv << ") need " << bytes
               << " bytes of shared memory, more than "
               << o.sharedMemoryBytes;
      mapping = CoopMatrixAttr::get(ctx, o.coopMatrix, o.lanes,
                                    o.scalarProducts, o.coopRegisters,
                                    o.coopRegisters ? o.coopStrips : 1);
      pType = elt;
    } else {
      if (br * o.lanes > 1024)
        return op.emitOpError("attn-configure-simt: ")
               << br << " rows of " << o.lanes
               << " invocations are more than 1024 per workgroup";
      if (bc * (d + dv) * eltBytes > o.sharedMemoryBytes)
        return op.emitOpError("attn-configure-simt: K and V tiles of ")
               << bc << " keys (D = " << d << ", Dv = " << dv << ") need "
               << bc * (d + dv) * eltBytes << " bytes of shared memory, more "
               << "than " << o.sharedMemoryBytes << "; use a smaller block-kv";
      mapping = SimtAttr::get(ctx, br, o.lanes, o.unroll);
    }
    // Packed decode: the tiled form's query view is a reshape of q, so
    // every extent of q is static (the SPIR-V kernels' buffers are
    // reshaped, not cast).
    RankedTensorType qTy = op.getQueryType();
    const bool pack =
        o.packDecodeHeads && qTy.hasStaticShape() &&
        simtPacksDecodeHeads(qTy.getDimSize(1), qTy.getDimSize(2),
                             op.getKeyType().getDimSize(1),
                             op.getMask() != nullptr,
                             op.getEffectiveDropout() > 0.0);
    auto tiling = [&](int64_t n, bool perLaunch) {
      return TilingAttr::get(ctx, br, bc, n, perLaunch,
                             /*staticTiles=*/false, /*packHeads=*/pack,
                             /*rescaleThreshold=*/0, pType,
                             /*heaviestFirst=*/0, mapping);
    };
    if (splits == 1 || !o.launchSplits) {
      op.setTilingAttr(tiling(splits, false));
      return success();
    }
    // A chunk count chosen per launch: an unsplit and a split alternative
    // of the op writing the same destinations (as attn-configure-nvgpu).
    OpBuilder b(op);
    auto unsplit = cast<SdpaOp>(b.clone(*op));
    b.setInsertionPointAfter(op);
    for (auto [from, to] : llvm::zip(op->getResults(), unsplit->getResults())) {
      Operation *mat = b.clone(*destinationOf(from));
      mat->setOperand(0, to);
    }
    unsplit.setTilingAttr(tiling(1, false));
    unsplit->setAttr(kLaunchWhenAttrName,
                     b.getStringAttr(::attn::LaunchCondition::unsplit().str()));
    op.setTilingAttr(tiling(splits, true));
    op->setAttr(kLaunchWhenAttrName,
                b.getStringAttr(::attn::LaunchCondition::split().str()));
    return success();
  }
};
} // namespace
