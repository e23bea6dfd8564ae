//===- ConfigureNVGPU.cpp - the tensor-core target's tiling decisions -----===//
//
// attn-configure-nvgpu: for every attn.sdpa the tensor-core kernel handles,
// the #attn.tiling that attn-tile-sdpa applies and
// convert-attn-tiles-to-nvgpu maps onto a workgroup. The geometry is one
// table of measured choices (resolveNVGPUGeometry), each naming the folder
// of bench/results it was measured in; the numbers: HISTORY-nvidia.md there.
//
//===----------------------------------------------------------------------===//
#include "attn/Conversion/TilesToNVGPU/TilesToNVGPU.h"
#include "attn/Conversion/KernelOperands.h"
#include "attn/Conversion/Passes.h"

#include "attn/Dialect/Attn/IR/AttnAttrs.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Dialect/Attn/Transforms/Transforms.h"
#include "attn/runtime/LaunchCondition.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"

#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>
#include <cstdlib>

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNCONFIGURENVGPUPASS
#include "attn/Conversion/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

NVGPUGeometry mlir::attn::resolveNVGPUGeometry(
    const ConfigureNVGPUOptions &options, int64_t headDim, int64_t valueDim,
    int64_t elementBytes, bool causal, int64_t seqQ, bool masked, bool dropout,
    int64_t seqKv, bool lse) {
  NVGPUGeometry g;
  const bool small = std::max(headDim, valueDim) <= 64;
  // D or Dv in (128, 256]: one row tile of 4 warps, Q read from shared
  // memory per block, 32-key blocks for the split-KV kernels without
  // causal, a mask or dropout, else 16: the accumulators alone take Dv / 2
  // registers and larger blocks spilled (cuda-h100-2026-11-22k).
  const bool huge = std::max(headDim, valueDim) > 128;
  // A mask's loads and dropout's Philox decision need registers that the
  // two-tile and 168-register geometries do not leave.
  const bool heavy = masked || dropout;
  // A static query length of at most 32 rows (decode), warps not given.
  const bool decode = !options.warps && !ShapedType::isDynamic(seqQ) &&
                      seqQ > 0 && seqQ <= 32;
  // Two m16 row tiles per warp at D or Dv in (64, 128] without a mask or
  // dropout, on sm_90 (cuda-h100-2026-11-22l). Each exclusion is a
  // configuration where ptxas spilled at 255 registers: sm_80, causal with
  // a static key length, causal as a single kernel with lse; the lit
  // tests assemble the ones that remain.
  const bool hopper = options.chip.size() > 3 &&
                      std::atoi(options.chip.c_str() + 3) >= 90;
  const bool wideTwoTiles =
      hopper && !small && !huge && !heavy && !decode && !options.warps &&
      !options.rowTiles && !options.blockKv &&
      (!causal || (seqKv <= 0 && !(lse && options.kvSplits == 1)));
  // 4 warps for causal kernels and for D <= 64, 8 for larger non-causal
  // heads with one row tile (cuda-h100-2026-11-21b).
  g.warps = options.warps ? options.warps
                          : (causal || small || huge || wideTwoTiles ? 4 : 8);
  // Decode needs no more than 2 warps (the others would only compute
  // padding rows); 1 warp for at most 16 rows at D, Dv <= 64 (at D = 128 a
  // one-warp kernel spills; cuda-h100-2026-11-22).
  if (decode)
    g.warps = seqQ <= 16 && small ? 1 : 2;
  // Two row tiles for the 4-warp kernels at D, Dv <= 64 without a mask or
  // dropout (cuda-h100-2026-11-22d) and wideTwoTiles; decode keeps one.
  if (decode)
    g.rowTiles = 1;
  else if (options.rowTiles)
    g.rowTiles = options.rowTiles;
  else
    g.rowTiles = (g.warps == 4 && small && !heavy) || wideTwoTiles ? 2 : 1;
  g.blockQ = 16 * g.rowTiles * g.warps;
  // Dropout's counter needs the real (head, row) of each row, which packed
  // rows have too, but the kernel at the register limit does not fit it.
  g.packHeads = seqQ == 1 && !masked && !dropout;
  // Three 4-warp workgroups per SM at D, Dv <= 64 with one row tile
  // (cuda-h100-2026-11-22b); a mask or dropout would spill at 168.
  if (g.warps == 4 && g.rowTiles == 1 && small && !heavy)
    g.maxRegisters = 168;
  // A third K/V stage for the non-causal two-tile kernels at D, Dv in
  // (64, 128] (cuda-h100-2026-11-22l); causal spilled with 3.
  g.stages = options.stages ? options.stages : wideTwoTiles && !causal ? 3 : 2;
  g.blockKv =
      options.blockKv ? options.blockKv
      : huge ? (causal || heavy || decode || options.kvSplits < 2 ? 16 : 32)
      : g.rowTiles > 1 && !small ? 32
                                 : kNVGPUBlockKv;
  int64_t stage = g.blockKv * (headDim + valueDim) * elementBytes;
  int64_t qBytes = g.blockQ * headDim * elementBytes;
  // Q aliases the last stage when it fits there and its fragments are
  // held in registers (the prologue does not fill that stage). Dropout at
  // D, Dv > 64 reads them from shared memory per key block: held, they
  // spill (causal under ptxas, non-causal under the H100 driver's PTX
  // compiler, where it was slower than from shared memory:
  // tiled-form-2026-11-24).
  g.qFromSmem =
      options.qFromSmem || g.rowTiles > 1 || huge || (dropout && !small);
  g.sharedBytes =
      g.stages * stage + (qBytes <= stage && !g.qFromSmem ? 0 : qBytes);
  // Causal workgroup order: K and V of the heads of one group within 16
  // MiB, a third of the H100's L2 (cuda-h100-2026-11-22m).
  g.causalGroupBytes = int64_t(16) << 20;
  return g;
}

bool mlir::attn::tensorCoreSupports(Type elt, int64_t d, int64_t dv) {
  return (elt.isF16() || elt.isBF16()) && d % 16 == 0 && dv % 16 == 0 &&
         d <= 256 && dv <= 256;
}

TilingAttr mlir::attn::nvgpuTiling(MLIRContext *ctx, const NVGPUGeometry &g,
                                   Type elt, bool causal, int64_t kvSplits) {
  auto mapping =
      MmaSyncAttr::get(ctx, g.warps, g.rowTiles, g.stages, g.qFromSmem,
                       g.sharedBytes, g.maxRegisters);
  // One packed query row sees every key: the causal order is moot.
  bool heaviest = causal && !g.packHeads;
  return TilingAttr::get(ctx, g.blockQ, g.blockKv, std::max<int64_t>(kvSplits, 1),
                         /*launchSplits=*/kvSplits > 1, /*staticTiles=*/true,
                         g.packHeads, kNVGPURescaleThreshold, elt,
                         heaviest ? g.causalGroupBytes : 0, mapping);
}

namespace {
struct AttnConfigureNVGPUPass
    : mlir::attn::impl::AttnConfigureNVGPUPassBase<AttnConfigureNVGPUPass> {
  using Base::Base;
  void runOnOperation() override {
    if ((warps != 0 && warps != 1 && warps != 2 && warps != 4 && warps != 8) ||
        (stages != 0 && (stages < 2 || stages > 4)) || kvSplits < 1 ||
        rowTiles < 0 || rowTiles > 2 ||
        (blockKv != 0 && blockKv != 16 && blockKv != 32 && blockKv != 64)) {
      emitError(getOperation()->getLoc(),
                "attn-configure-nvgpu: warps must be 0, 1, 2, 4 or 8, stages 0 "
                "or in [2, 4], kv-splits >= 1, row-tiles 0, 1 or 2 and "
                "block-kv 0, 16, 32 or 64");
      return signalPassFailure();
    }
    // mma.sync m16n8k16, cp.async and ldmatrix: sm_80 or later.
    StringRef arch(chip);
    unsigned sm = 0;
    if (!arch.consume_front("sm_") ||
        arch.take_while(llvm::isDigit).getAsInteger(10, sm) || sm < 80) {
      emitError(getOperation()->getLoc(),
                "attn-configure-nvgpu: chip must be sm_80 or later (sm_<N> "
                "or sm_<N>a), got '")
          << chip << "'";
      return signalPassFailure();
    }
    ConfigureNVGPUOptions o;
    o.warps = warps;
    o.stages = stages;
    o.kvSplits = kvSplits;
    o.rowTiles = rowTiles;
    o.blockKv = blockKv;
    o.chip = chip;
    // (Collected first: configuring inserts the alternatives' clones.)
    SmallVector<SdpaOp> ops;
    getOperation()->walk([&](SdpaOp op) { ops.push_back(op); });
    for (SdpaOp op : ops)
      configure(op, o);
  }

  /// Sets the tiling of an op the tensor-core kernel handles; leaves the
  /// others (and ops that already carry one) alone.
  void configure(SdpaOp op, const ConfigureNVGPUOptions &o) {
    if (op.getTilingAttr())
      return;
    Type elt = op.getQueryType().getElementType();
    int64_t d = op.getQueryType().getDimSize(3);
    int64_t dv = op.getValueType().getDimSize(3);
    if (!tensorCoreSupports(elt, d, dv))
      return;
    // The kernel's operands are memrefs with unit-stride rows (cp.async
    // copies 16 bytes of a row): the JIT's destination-passing form.
    Value q = sourceMemRef(op.getQuery()), k = sourceMemRef(op.getKey()),
          v = sourceMemRef(op.getValue());
    if (!q || !k || !v || (op.getMask() && !sourceMemRef(op.getMask())) ||
        !destinationOf(op.getOut()) ||
        (op.getLse() && !destinationOf(op.getLse())))
      return;
    for (Value m : {q, k, v}) {
      int64_t offset;
      SmallVector<int64_t> strides;
      if (failed(cast<MemRefType>(m.getType()).getStridesAndOffset(strides,
                                                                   offset)) ||
          strides.back() != 1)
        return;
    }
    bool causal = op.getCausal();
    auto geometry = [&](int64_t seqQ) {
      return resolveNVGPUGeometry(
          o, d, dv, elt.getIntOrFloatBitWidth() / 8, causal, seqQ,
          op.getMask() != nullptr, op.getEffectiveDropout() > 0.0,
          op.getKeyType().getDimSize(2), op.getLse() != nullptr);
    };
    int64_t seqQ = op.getQueryType().getDimSize(2);
    NVGPUGeometry g = geometry(seqQ);
    // A mask or dropout keeps one geometry for every Sq: the decode
    // geometries' registers were measured without them (ptxas spilled with
    // a mask at D = 64 in one warp, sm_90a; decode-alternatives-2026-11-26).
    bool heavy = op.getMask() || op.getEffectiveDropout() > 0.0;
    if (!ShapedType::isDynamic(seqQ) || !decodeAlternatives || heavy) {
      configureAlternative(op, g, ::attn::LaunchCondition(), o);
      return;
    }
    // A dynamic query length: the geometry follows the launch. Sq = 1 gets
    // the op over views whose Sq is a static 1, configured as the static
    // decode kernel is (packed GQA heads); 2 <= Sq <= 16 the geometry of a
    // static Sq of 16 (decode: one or two warps of one row tile) where that
    // differs from the default; the rest the default. The runtime runs the
    // one whose Sq range holds the launch's.
    using C = ::attn::LaunchCondition;
    SdpaOp one = cloneWithUnitSq(op);
    configureAlternative(one, geometry(1), C().sq(1, 1), o);
    // Causal at D or Dv > 64, Q's fragments held in registers made ptxas
    // spill in the unsplit kernel (sm_90a); they are read from shared
    // memory per key block instead, slower than the static causal kernels
    // that hold them: the price of no spill
    // (decode-alternatives-2026-11-26).
    ConfigureNVGPUOptions so = o;
    so.qFromSmem = causal && std::max(d, dv) > 64;
    NVGPUGeometry small = resolveNVGPUGeometry(
        so, d, dv, elt.getIntOrFloatBitWidth() / 8, causal,
        kDecodeAlternativeMaxSq, /*masked=*/false, /*dropout=*/false,
        op.getKeyType().getDimSize(2), op.getLse() != nullptr);
    MLIRContext *ctx = op.getContext();
    if (nvgpuTiling(ctx, small, elt, causal, 1) !=
        nvgpuTiling(ctx, g, elt, causal, 1)) {
      configureAlternative(cloneOp(op), small,
                           C().sq(2, kDecodeAlternativeMaxSq), o);
      configureAlternative(op, g, C().sq(kDecodeAlternativeMaxSq + 1), o);
    } else {
      configureAlternative(op, g, C().sq(2), o);
    }
  }

  /// Sets `op`'s tiling for geometry `g` and, with a split count chosen per
  /// launch, clones it into the unsplit and split alternatives; every
  /// alternative's attn.launch_when is `sq` restricted to its split counts
  /// (nothing when that is "always").
  void configureAlternative(SdpaOp op, const NVGPUGeometry &g,
                            ::attn::LaunchCondition sq,
                            const ConfigureNVGPUOptions &o) {
    MLIRContext *ctx = op.getContext();
    Type elt = op.getQueryType().getElementType();
    OpBuilder b(op);
    auto setWhen = [&](SdpaOp target, ::attn::LaunchCondition c) {
      if (c != ::attn::LaunchCondition())
        target->setAttr(kLaunchWhenAttrName, b.getStringAttr(c.str()));
    };
    if (o.kvSplits <= 1) {
      op.setTilingAttr(nvgpuTiling(ctx, g, elt, op.getCausal(), 1));
      setWhen(op, sq);
      return;
    }
    // Split-KV with a count chosen per launch: two alternatives of the
    // op, each launched when the count says (a count of 1 runs the
    // unsplit kernel, which writes the output itself; more run the
    // partial and merge kernels). Both write the same destinations.
    SdpaOp unsplit = cloneOp(op);
    unsplit.setTilingAttr(nvgpuTiling(ctx, g, elt, op.getCausal(), 1));
    auto cond = sq;
    cond.splits = ::attn::LaunchCondition::Splits::Unsplit;
    setWhen(unsplit, cond);
    op.setTilingAttr(nvgpuTiling(ctx, g, elt, op.getCausal(), o.kvSplits));
    cond.splits = ::attn::LaunchCondition::Splits::Split;
    setWhen(op, cond);
  }

  /// A copy of `op` before it, with copies of its materializations after
  /// it: another alternative writing the same destinations.
  SdpaOp cloneOp(SdpaOp op) {
    OpBuilder b(op);
    auto copy = cast<SdpaOp>(b.clone(*op));
    b.setInsertionPointAfter(op);
    for (auto [from, to] : llvm::zip(op->getResults(), copy->getResults())) {
      Operation *mat = b.clone(*destinationOf(from));
      mat->setOperand(0, to);
    }
    return copy;
  }

  /// A copy of `op` (dynamic Sq) over `memref.cast` views of q, out, lse
  /// and a mask whose Sq is a static 1: the alternative for launches at Sq
  /// = 1, which the geometry table configures as a static decode. The
  /// casts hold at exactly those launches (the runtime runs no other).
  SdpaOp cloneWithUnitSq(SdpaOp op) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    auto unitSq = [](ShapedType t) {
      SmallVector<int64_t> shape(t.getShape());
      shape[2] = 1;
      return shape;
    };
    auto castMemRef = [&](Value m) -> Value {
      auto t = cast<MemRefType>(m.getType());
      if (t.getDimSize(2) == 1)
        return m;
      auto to = MemRefType::get(unitSq(t), t.getElementType(), t.getLayout(),
                                t.getMemorySpace());
      return memref::CastOp::create(b, loc, to, m);
    };
    IRMapping map;
    auto viewOperand = [&](Value tensor) {
      auto toTensor = tensor.getDefiningOp<bufferization::ToTensorOp>();
      auto t = cast<RankedTensorType>(tensor.getType());
      if (t.getDimSize(2) == 1)
        return;
      Value m = castMemRef(toTensor.getBuffer());
      Operation *view = b.clone(*toTensor);
      view->setOperand(0, m);
      view->getResult(0).setType(
          RankedTensorType::get(unitSq(t), t.getElementType()));
      map.map(tensor, view->getResult(0));
    };
    viewOperand(op.getQuery());
    if (Value mask = op.getMask())
      viewOperand(mask);
    // The destinations' views before the op too: the kernels, which take
    // the place of the op, write through them.
    SmallVector<Value> dests;
    for (Value r : op->getResults())
      dests.push_back(castMemRef(destinationOf(r).getDest()));
    auto one = cast<SdpaOp>(b.clone(*op, map));
    for (Value r : one->getResults()) {
      auto t = cast<RankedTensorType>(r.getType());
      r.setType(RankedTensorType::get(unitSq(t), t.getElementType()));
    }
    b.setInsertionPointAfter(op);
    for (auto [from, to, dest] :
         llvm::zip(op->getResults(), one->getResults(), dests)) {
      Operation *copy = b.clone(*destinationOf(from));
      copy->setOperand(0, to);
      copy->setOperand(1, dest);
    }
    return one;
  }
};
} // namespace
