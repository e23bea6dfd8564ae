//===- AttnToNVGPU.cpp - attn.sdpa to a tensor-core (mma.sync) gpu.launch --===//
//
// The FlashAttention-2 kernel on tensor cores, first version (f16): a workgroup
// of 4 warps per 64 query rows, each warp owning 16 rows. Q.K^T and P.V are
// nvgpu.mma.sync m16n8k16 (f16/bf16 in, f32 accumulators); K and V tiles of
// 64 keys are staged in workgroup memory and read as B fragments with
// nvgpu.ldmatrix (transposed for V, from 16-byte aligned tiles); Q's A fragments are loaded once from
// global memory. The online softmax runs on the accumulator fragments: each
// thread holds two rows (g and g + 8 of its warp's 16) and reduces row
// maxima across its quad with xor shuffles; the row sums stay per-thread
// partial until the end. P is converted to the element type in registers
// and reused as the A operand of P.V (the C fragment of m16n8k16 is laid
// out as half of an A fragment). Not yet: cp.async multi-stage loads,
// swizzled shared memory, masks, dropout, split-KV (docs/NVIDIA.md).
//
// Fragment layouts (PTX ISA, mma.m16n8k16), lane = 4 g + t:
//   A (16x16): a[0] = A[g][2t..2t+1], a[1] = A[g+8][2t..], a[2] = A[g][8+2t..],
//              a[3] = A[g+8][8+2t..]
//   B (16x8):  b[0] = B[2t..2t+1][g], b[1] = B[8+2t..][g]
//   C (16x8):  c[0] = C[g][2t..2t+1], c[1] = C[g+8][2t..]
//
//===----------------------------------------------------------------------===//
#include "attn/Conversion/AttnToNVGPU/AttnToNVGPU.h"

#include "attn/Dialect/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/Pass.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;

namespace {

constexpr double kLog2e = 1.4426950408889634;
constexpr double kLn2 = 0.6931471805599453;
constexpr int64_t kWarp = 32;

Value sourceMemRef(Value tensor) {
  if (auto toTensor = tensor.getDefiningOp<bufferization::ToTensorOp>())
    return toTensor.getBuffer();
  return {};
}

bufferization::MaterializeInDestinationOp destinationOf(Value result) {
  if (!result || !result.hasOneUse())
    return {};
  auto mat = dyn_cast<bufferization::MaterializeInDestinationOp>(
      *result.getUsers().begin());
  if (!mat || mat.getSource() != result ||
      !isa<MemRefType>(mat.getDest().getType()))
    return {};
  return mat;
}

class TensorCoreKernel {
public:
  TensorCoreKernel(OpBuilder &b, Location loc, SdpaOp op, Value q, Value k,
                   Value v, Value out, Value lse)
      : b(b), loc(loc), op(op), q(q), k(k), v(v), out(out), lse(lse) {
    elt = cast<MemRefType>(q.getType()).getElementType();
    d = cast<MemRefType>(q.getType()).getDimSize(3);
    dv = cast<MemRefType>(v.getType()).getDimSize(3);
  }

  void build() {
    Value sq = dim(q, 2), hq = dim(q, 1), batch = dim(q, 0);
    Value gx = arith::DivUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, sq, idx(kNVGPUBlockQ - 1)),
        idx(kNVGPUBlockQ));
    // The K and V tiles are module-level workgroup globals aligned to 16
    // bytes, as ldmatrix needs for every row address (launch attributions
    // are only element-aligned); outlining copies them into the kernel's
    // gpu.module.
    auto wg = gpu::AddressSpaceAttr::get(b.getContext(),
                                         gpu::AddressSpace::Workgroup);
    auto kTile = MemRefType::get({kNVGPUBlockKv, d}, elt,
                                 MemRefLayoutAttrInterface{}, wg);
    auto vTile = MemRefType::get({kNVGPUBlockKv, dv}, elt,
                                 MemRefLayoutAttrInterface{}, wg);
    std::string kName = makeGlobal("k", kTile), vName = makeGlobal("v", vTile);
    Value one = idx(1);
    auto launch = gpu::LaunchOp::create(b, loc, gx, hq, batch,
                                        idx(kWarp * kNVGPUWarps), one, one);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&launch.getBody().front());
    ks = memref::GetGlobalOp::create(b, loc, kTile, kName);
    vs = memref::GetGlobalOp::create(b, loc, vTile, vName);
    body(launch.getThreadIds().x, launch.getBlockIds().x,
         launch.getBlockIds().y, launch.getBlockIds().z);
    gpu::TerminatorOp::create(b, loc);
  }

private:
  OpBuilder &b;
  Location loc;
  SdpaOp op;
  Value q, k, v, out, lse, ks, vs;
  int64_t d = 0, dv = 0;
  Type elt;

  Value idx(int64_t x) { return arith::ConstantIndexOp::create(b, loc, x); }
  Value f32(double x) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(x));
  }
  Value dim(Value m, int64_t i) {
    auto t = cast<MemRefType>(m.getType());
    if (!t.isDynamicDim(i))
      return idx(t.getDimSize(i));
    return memref::DimOp::create(b, loc, m, i);
  }
  /// An uninitialized, 16-byte aligned workgroup global with a fresh name.
  std::string makeGlobal(StringRef what, MemRefType type) {
    auto module = op->getParentOfType<ModuleOp>();
    SymbolTable symbols(module);
    std::string name;
    for (int i = 0;; ++i) {
      name = ("__attn_tc_" + what + "_tile_" + Twine(i)).str();
      if (!symbols.lookup(name))
        break;
    }
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(module.getBody());
    memref::GlobalOp::create(b, loc, name, b.getStringAttr("private"), type,
                             b.getUnitAttr(), /*constant=*/false,
                             b.getI64IntegerAttr(16));
    return name;
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value addf(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value mulf(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value subf(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value maxf(Value x, Value y) {
    return arith::MaximumFOp::create(b, loc, x, y);
  }
  Value ult(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x, y);
  }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  Value extract(Value vec, int64_t i, int64_t j) {
    return vector::ExtractOp::create(b, loc, vec, ArrayRef<int64_t>{i, j});
  }
  /// A quad-uniform value: combine over the 4 threads of a quad.
  Value quadReduce(Value x, bool isMax) {
    for (int32_t offset : {1, 2}) {
      Value other = gpu::ShuffleOp::create(b, loc, x, offset, kWarp,
                                           gpu::ShuffleMode::XOR)
                        .getShuffleResult();
      x = isMax ? maxf(x, other) : addf(x, other);
    }
    return x;
  }

  /// Element of src at [bi, h, row, col], 0 when row >= rows (the load is
  /// clamped to a valid row).
  Value loadOrZero(Value src, Value bi, Value h, Value row, Value rows,
                   Value col) {
    Value valid = ult(row, rows);
    Value last = arith::SubIOp::create(b, loc, rows, idx(1));
    Value safeRow = arith::MinUIOp::create(b, loc, row, last);
    Value x = memref::LoadOp::create(b, loc, src,
                                     ValueRange{bi, h, safeRow, col});
    Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(elt, 0.0));
    return select(valid, x, zero);
  }

  /// tile[r, c] = src[bi, hk, j0 + r, c], zero for keys past Skv (so P.V
  /// never multiplies stale data, which could be NaN, by a zero P).
  void loadTile(Value src, Value tile, int64_t width, Value bi, Value hk,
                Value j0, Value skv, Value tid) {
    int64_t threads = kWarp * kNVGPUWarps;
    auto loop = scf::ForOp::create(b, loc, tid, idx(kNVGPUBlockKv * width),
                                   idx(threads));
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    Value e = loop.getInductionVar();
    Value r = arith::DivUIOp::create(b, loc, e, idx(width));
    Value c = arith::RemUIOp::create(b, loc, e, idx(width));
    Value x = loadOrZero(src, bi, hk, add(j0, r), skv, c);
    memref::StoreOp::create(b, loc, x, tile, ValueRange{r, c});
  }

  void body(Value tid, Value qb, Value h, Value bi) {
    Value sq = dim(q, 2), skv = dim(k, 2);
    Value hk = arith::DivUIOp::create(
        b, loc, h, arith::DivUIOp::create(b, loc, dim(q, 1), dim(k, 1)));
    Value warp = arith::DivUIOp::create(b, loc, tid, idx(kWarp));
    Value lane = arith::RemUIOp::create(b, loc, tid, idx(kWarp));
    Value g = arith::DivUIOp::create(b, loc, lane, idx(4));
    Value t = arith::RemUIOp::create(b, loc, lane, idx(4));
    Value t2 = mul(t, idx(2));
    Value row0 = mul(qb, idx(kNVGPUBlockQ));
    Value r0 = add(add(row0, mul(warp, idx(16))), g); // rows r0 and r0 + 8
    Value r1 = add(r0, idx(8));
    Value diag = arith::SubIOp::create(b, loc, skv, sq);

    // Q's A fragments, one per 16 columns of D (rows past Sq read as 0).
    auto fragA = VectorType::get({4, 2}, elt);
    SmallVector<Value> qFrag;
    for (int64_t kc = 0; kc < d; kc += 16) {
      SmallVector<Value> e;
      for (auto [row, cOff] : {std::pair{r0, 0}, std::pair{r1, 0},
                              std::pair{r0, 8}, std::pair{r1, 8}})
        for (int64_t j = 0; j < 2; ++j)
          e.push_back(loadOrZero(q, bi, h, row, sq,
                                 add(t2, idx(kc + cOff + j))));
      qFrag.push_back(vector::FromElementsOp::create(b, loc, fragA, e));
    }

    // Causal: stop after the workgroup's last visible key.
    Value kvEnd = skv;
    if (op.getCausal()) {
      Value rowsEnd =
          arith::MinUIOp::create(b, loc, add(row0, idx(kNVGPUBlockQ)), sq);
      kvEnd = arith::MinSIOp::create(
          b, loc, arith::MaxSIOp::create(b, loc, add(rowsEnd, diag), idx(0)),
          skv);
    }
    Value nBlocks = arith::DivUIOp::create(
        b, loc, add(kvEnd, idx(kNVGPUBlockKv - 1)), idx(kNVGPUBlockKv));

    auto fragC = VectorType::get({2, 2}, b.getF32Type());
    Value zeroC = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(fragC, b.getF32FloatAttr(0.0)));
    int64_t nOut = dv / 8;
    SmallVector<Value> init(nOut, zeroC);
    Value negInf = f32(-INFINITY), zero = f32(0.0);
    init.append({negInf, negInf, zero, zero}); // m0, m1, l0, l1 (partial)

    auto loop = scf::ForOp::create(b, loc, idx(0), nBlocks, idx(1), init);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      ValueRange st = loop.getRegionIterArgs();
      SmallVector<Value> next =
          foldBlock(st, loop.getInductionVar(), qFrag, bi, hk, tid, lane, r0,
                    r1, t2, skv, diag, nOut);
      scf::YieldOp::create(b, loc, next);
    }
    ValueRange res = loop.getResults();
    Value m[2] = {res[nOut], res[nOut + 1]};
    Value l[2] = {quadReduce(res[nOut + 2], false),
                  quadReduce(res[nOut + 3], false)};

    // out = l == 0 ? 0 : acc / l; lse = l == 0 ? -inf : (m + log2 l) ln 2.
    Value rows[2] = {r0, r1};
    for (int64_t half = 0; half < 2; ++half) {
      Value empty = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                          l[half], zero);
      Value inv = arith::DivFOp::create(b, loc, f32(1.0), l[half]);
      auto ifOp = scf::IfOp::create(b, loc, ult(rows[half], sq), false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      for (int64_t n = 0; n < nOut; ++n)
        for (int64_t j = 0; j < 2; ++j) {
          Value o = mulf(extract(res[n], half, j), inv);
          o = select(empty, zero, o);
          if (!elt.isF32())
            o = arith::TruncFOp::create(b, loc, elt, o);
          memref::StoreOp::create(
              b, loc, o, out,
              ValueRange{bi, h, rows[half], add(t2, idx(n * 8 + j))});
        }
      if (lse) {
        // One thread of the quad writes the row's lse.
        Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                            t2, idx(0));
        auto w = scf::IfOp::create(b, loc, first, false);
        OpBuilder::InsertionGuard g2(b);
        b.setInsertionPointToStart(&w.getThenRegion().front());
        Value x = mulf(addf(m[half], math::Log2Op::create(b, loc, l[half])),
                       f32(kLn2));
        x = select(empty, negInf, x);
        memref::StoreOp::create(b, loc, x, lse,
                                ValueRange{bi, h, rows[half]});
      }
    }
  }

  SmallVector<Value> foldBlock(ValueRange st, Value jb,
                               ArrayRef<Value> qFrag, Value bi, Value hk,
                               Value tid, Value lane, Value r0, Value r1,
                               Value t2, Value skv, Value diag, int64_t nOut) {
    Value j0 = mul(jb, idx(kNVGPUBlockKv));
    gpu::BarrierOp::create(b, loc);
    loadTile(k, ks, d, bi, hk, j0, skv, tid);
    loadTile(v, vs, dv, bi, hk, j0, skv, tid);
    gpu::BarrierOp::create(b, loc);

    // S = Q . K^T: 8 n-tiles of 8 keys, each a sum over D / 16 mma.sync.
    auto fragB = VectorType::get({2, 2}, elt);
    Value l8 = arith::RemUIOp::create(b, loc, lane, idx(8));
    Value l16 = arith::RemUIOp::create(b, loc, lane, idx(16));
    Value kHalf = mul(arith::DivUIOp::create(b, loc, l16, idx(8)), idx(8));
    auto fragC = VectorType::get({2, 2}, b.getF32Type());
    Value zeroC = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(fragC, b.getF32FloatAttr(0.0)));
    int64_t nTiles = kNVGPUBlockKv / 8;
    Value scale = f32(op.getEffectiveScale() * kLog2e);
    Value negInf = f32(-INFINITY);
    // s[tile][half][j]: rows r0 (half 0) / r1, keys j0 + 8 tile + 2t + j.
    SmallVector<std::array<std::array<Value, 2>, 2>> s(nTiles);
    Value rowMax[2] = {negInf, negInf};
    Value rows[2] = {r0, r1};
    for (int64_t n = 0; n < nTiles; ++n) {
      Value acc = zeroC;
      for (int64_t kc = 0; kc < d / 16; ++kc) {
        // Lanes 0-7 address keys n*8 + l at column kc*16, lanes 8-15 the
        // same keys at kc*16 + 8 (lanes 16-31 repeat, their addresses unused).
        Value bFrag = nvgpu::LdMatrixOp::create(
            b, loc, fragB, ks,
            ValueRange{add(idx(n * 8), l8), add(idx(kc * 16), kHalf)},
            /*transpose=*/false, /*numTiles=*/2);
        acc = nvgpu::MmaSyncOp::create(b, loc, qFrag[kc], bFrag, acc,
                                       ArrayRef<int64_t>{16, 8, 16});
      }
      for (int64_t half = 0; half < 2; ++half)
        for (int64_t j = 0; j < 2; ++j) {
          Value x = mulf(extract(acc, half, j), scale);
          Value key = add(j0, add(t2, idx(n * 8 + j)));
          Value hidden = arith::CmpIOp::create(
              b, loc, arith::CmpIPredicate::uge, key, skv);
          if (op.getCausal()) {
            Value above = arith::CmpIOp::create(
                b, loc, arith::CmpIPredicate::sgt, key, add(rows[half], diag));
            hidden = arith::OrIOp::create(b, loc, hidden, above);
          }
          x = select(hidden, negInf, x);
          s[n][half][j] = x;
          rowMax[half] = maxf(rowMax[half], x);
        }
    }

    // Per row: m' = max(m, quad max), m_safe = m' == -inf ? 0 : m',
    // alpha = exp2(m - m_safe), P = exp2(S - m_safe), partial l.
    Value mNew[2], alpha[2], lNew[2];
    for (int64_t half = 0; half < 2; ++half) {
      Value m = st[nOut + half];
      mNew[half] = maxf(m, quadReduce(rowMax[half], true));
      Value isInf = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                          mNew[half], negInf);
      Value mSafe = select(isInf, f32(0.0), mNew[half]);
      alpha[half] = math::Exp2Op::create(b, loc, subf(m, mSafe));
      Value sum = f32(0.0);
      for (int64_t n = 0; n < nTiles; ++n)
        for (int64_t j = 0; j < 2; ++j) {
          Value p = math::Exp2Op::create(b, loc, subf(s[n][half][j], mSafe));
          s[n][half][j] = p;
          sum = addf(sum, p);
        }
      lNew[half] = addf(mulf(alpha[half], st[nOut + 2 + half]), sum);
    }

    // P as A fragments (16 keys each) in the element type, straight from
    // the score fragments: tiles 2kk and 2kk + 1.
    auto fragA = VectorType::get({4, 2}, elt);
    SmallVector<Value> pFrag;
    for (int64_t kk = 0; kk < nTiles / 2; ++kk) {
      SmallVector<Value> e;
      for (auto [tile, half] : {std::pair{2 * kk, 0}, std::pair{2 * kk, 1},
                                std::pair{2 * kk + 1, 0},
                                std::pair{2 * kk + 1, 1}})
        for (int64_t j = 0; j < 2; ++j)
          e.push_back(arith::TruncFOp::create(b, loc, elt, s[tile][half][j]));
      pFrag.push_back(vector::FromElementsOp::create(b, loc, fragA, e));
    }

    // acc' = alpha acc + P . V: V's B fragments by transposed ldmatrix
    // (lanes 0-15 address keys kk*16 + l at column n*8).
    SmallVector<Value> next;
    for (int64_t n = 0; n < nOut; ++n) {
      Value acc = st[n];
      SmallVector<Value> scaled;
      for (int64_t half = 0; half < 2; ++half)
        for (int64_t j = 0; j < 2; ++j)
          scaled.push_back(mulf(extract(acc, half, j), alpha[half]));
      acc = vector::FromElementsOp::create(b, loc, fragC, scaled);
      for (int64_t kk = 0; kk < nTiles / 2; ++kk) {
        Value bFrag = nvgpu::LdMatrixOp::create(
            b, loc, fragB, vs, ValueRange{add(idx(kk * 16), l16), idx(n * 8)},
            /*transpose=*/true, /*numTiles=*/2);
        acc = nvgpu::MmaSyncOp::create(b, loc, pFrag[kk], bFrag, acc,
                                       ArrayRef<int64_t>{16, 8, 16});
      }
      next.push_back(acc);
    }
    next.append({mNew[0], mNew[1], lNew[0], lNew[1]});
    return next;
  }
};

struct ConvertAttnToNVGPUPass
    : public PassWrapper<ConvertAttnToNVGPUPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ConvertAttnToNVGPUPass)

  StringRef getArgument() const final { return "convert-attn-to-nvgpu"; }
  StringRef getDescription() const final {
    return "Lower the attn.sdpa ops the tensor-core kernel supports (f16, "
           "D and Dv multiples of 16 up to 128, no mask or dropout; "
           "destination-passing form) to a gpu.launch of nvgpu.mma.sync and "
           "nvgpu.ldmatrix; others are left for convert-attn-to-gpu";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, gpu::GPUDialect, math::MathDialect,
                    memref::MemRefDialect, nvgpu::NVGPUDialect,
                    scf::SCFDialect, vector::VectorDialect>();
  }

  void runOnOperation() override {
    SmallVector<SdpaOp> ops;
    getOperation().walk([&](SdpaOp op) { ops.push_back(op); });
    for (SdpaOp op : ops)
      convert(op);
  }

  void convert(SdpaOp op) {
    Type elt = op.getQueryType().getElementType();
    int64_t d = op.getQueryType().getDimSize(3);
    int64_t dv = op.getValueType().getDimSize(3);
    // f16 only: MLIR 22's nvgpu.mma.sync cannot lower bf16 operands.
    if (!elt.isF16() || d % 16 || dv % 16 || d > 128 ||
        dv > 128 || op.getMask() || op.getEffectiveDropout() > 0.0)
      return;
    Value q = sourceMemRef(op.getQuery()), k = sourceMemRef(op.getKey()),
          v = sourceMemRef(op.getValue());
    auto outMat = destinationOf(op.getOut());
    auto lseMat = op.getLse() ? destinationOf(op.getLse())
                              : bufferization::MaterializeInDestinationOp();
    if (!q || !k || !v || !outMat || (op.getLse() && !lseMat))
      return; // convert-attn-to-gpu reports the form
    OpBuilder b(op);
    TensorCoreKernel(b, op.getLoc(), op, q, k, v, outMat.getDest(),
                     lseMat ? lseMat.getDest() : Value())
        .build();
    outMat.erase();
    if (lseMat)
      lseMat.erase();
    SmallVector<Operation *> inputs;
    for (Value t : op->getOperands())
      if (Operation *def = t.getDefiningOp())
        inputs.push_back(def);
    op.erase();
    for (Operation *def : inputs)
      if (def->use_empty() && isa<bufferization::ToTensorOp>(def))
        def->erase();
  }
};
} // namespace

std::unique_ptr<Pass> mlir::attn::createConvertAttnToNVGPUPass() {
  return std::make_unique<ConvertAttnToNVGPUPass>();
}

void mlir::attn::registerConvertAttnToNVGPUPass() {
  PassRegistration<ConvertAttnToNVGPUPass>();
}
