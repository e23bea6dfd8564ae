//===- AttnToGPU.cpp - attn.sdpa to a SIMT gpu.launch, a thread per row ---===//
//
// The generic NVIDIA kernel (no tensor cores): a workgroup per (query block,
// head, batch), one thread per query row. Each key block of K and V is
// loaded cooperatively into workgroup memory; each thread then folds it into
// its row's FlashAttention state (max and sum in registers, the output
// accumulator and the block's scores in private arrays), in log2 units as
// in docs/FlashAttentionRewrite.md, and finally writes out (and lse).
// With dropout, each probability is kept or zeroed by the Philox decision
// every path shares (buildDropoutKeep). The same kernel is the Vulkan
// portable variant (option spirv: Function
// storage for the private arrays, head-dimension loops unrolled).
// With subgroup-size N (SPIR-V only), the portable variant's subgroup
// kernel: a subgroup of N lanes per row instead of a thread, lanes
// splitting the keys of a block (scores, P) and the output columns (P . V),
// the row max and sum by subgroup reductions, P broadcast by shuffles.
// With split-KV (SplitKV.h), grid y is Hq x splits: each workgroup walks
// one chunk of its key blocks and writes the chunk's partial output and lse
// for the merge kernel (out and lse directly when the count is 1).
//
//===----------------------------------------------------------------------===//
#include "attn/Conversion/AttnToGPU/AttnToGPU.h"
#include "attn/Conversion/KernelOperands.h"
#include "attn/Conversion/SplitKV.h"

#include "attn/Dialect/Attn/IR/AttnAttrs.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Dialect/Attn/Transforms/Transforms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVAttributes.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <algorithm>
#include <cmath>
#include <tuple>

using namespace mlir;
using namespace mlir::attn;

namespace {


/// Emits the kernel for one attn.sdpa; all sizes in index arithmetic so
/// dynamic B, H and S work.
class KernelBuilder {
public:
  KernelBuilder(OpBuilder &b, Location loc, SdpaOp op, Value q, Value k,
                Value v, Value mask, Value out, Value lse, int64_t br,
                int64_t bc, bool spirv, int64_t sg,
                std::optional<SplitKVWorkspace> ws = std::nullopt,
                SplitKVKernelNames names = {})
      : b(b), loc(loc), op(op), q(q), k(k), v(v), mask(mask), out(out),
        lse(lse), br(br), bc(bc), sg(sg), spirv(spirv), ws(ws), names(names) {
    elt = cast<MemRefType>(q.getType()).getElementType();
    d = cast<MemRefType>(q.getType()).getDimSize(3);
    dv = cast<MemRefType>(v.getType()).getDimSize(3);
  }

  void build() {
    Value sq = dim(q, 2), hq = dim(q, 1), batch = dim(q, 0);
    Value gx = ceilDiv(sq, br);
    Value one = idx(1);
    // Workgroup memory: attributions of the launch, or for SPIR-V (whose
    // storage-class mapping has no gpu address spaces) allocations in the
    // Workgroup storage class at the top of its body.
    Attribute wg = gpu::AddressSpaceAttr::get(b.getContext(),
                                              gpu::AddressSpace::Workgroup);
    if (spirv)
      wg = spirv::StorageClassAttr::get(b.getContext(),
                                        spirv::StorageClass::Workgroup);
    auto kTile =
        MemRefType::get({bc, d}, elt, MemRefLayoutAttrInterface{}, wg);
    auto vTile =
        MemRefType::get({bc, dv}, elt, MemRefLayoutAttrInterface{}, wg);
    SmallVector<Type> attributions;
    if (!spirv)
      attributions = {kTile, vTile};
    // Split-KV: grid y enumerates (head, chunk) pairs.
    Value gy = ws ? arith::MulIOp::create(b, loc, hq, splitCountOf(b, loc, *ws))
                  : hq;
    // A thread per row, or (subgroup kernel) a subgroup of sg lanes per row.
    auto launch = gpu::LaunchOp::create(
        b, loc, gx, gy, batch, idx(threads()), one, one,
        /*dynamicSharedMemorySize=*/
        nullptr, /*asyncTokenType=*/nullptr, /*asyncDependencies=*/{},
        attributions, /*privateAttributions=*/{}, nullptr, nullptr, nullptr,
        names.module, names.partial);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&launch.getBody().front());
    if (spirv) {
      ks = memref::AllocOp::create(b, loc, kTile);
      vs = memref::AllocOp::create(b, loc, vTile);
    } else {
      ks = launch.getWorkgroupAttributions()[0];
      vs = launch.getWorkgroupAttributions()[1];
    }
    Value h = launch.getBlockIds().y;
    if (ws) {
      splits = splitCountOf(b, loc, *ws);
      split = arith::RemUIOp::create(b, loc, h, splits);
      h = arith::DivUIOp::create(b, loc, h, splits);
    }
    body(launch.getThreadIds().x, launch.getBlockIds().x, h,
         launch.getBlockIds().z);
    gpu::TerminatorOp::create(b, loc);
  }

private:
  OpBuilder &b;
  Location loc;
  SdpaOp op;
  Value q, k, v, mask, out, lse, ks, vs;
  int64_t br, bc, sg, d = 0, dv = 0;
  bool spirv;
  std::optional<SplitKVWorkspace> ws;
  SplitKVKernelNames names;
  Value splits, split; // split-KV: the launch's chunk count, this chunk
  Type elt;

  /// Invocations per workgroup.
  int64_t threads() const { return sg > 0 ? br * sg : br; }

  /// A private array of n f32 (the Function storage class for SPIR-V).
  Value privateArray(int64_t n) {
    Attribute space;
    if (spirv)
      space = spirv::StorageClassAttr::get(b.getContext(),
                                           spirv::StorageClass::Function);
    return memref::AllocaOp::create(
        b, loc, MemRefType::get({n}, b.getF32Type(), MemRefLayoutAttrInterface{},
                                space));
  }

  /// for (x = 0; x < n; ++x) over a head dimension, with an optional
  /// loop-carried value: an scf.for, or for SPIR-V the n bodies one after
  /// another with constant indices.
  Value overDim(int64_t n, Value init, function_ref<Value(Value, Value)> fn) {
    if (spirv) {
      Value carried = init;
      for (int64_t x = 0; x < n; ++x)
        carried = fn(idx(x), carried);
      return carried;
    }
    SmallVector<Value> inits;
    if (init)
      inits.push_back(init);
    ValueRange results =
        loop(idx(0), idx(n), idx(1), inits, [&](Value x, ValueRange s) {
          Value next = fn(x, init ? s[0] : Value());
          return init ? SmallVector<Value>{next} : SmallVector<Value>{};
        });
    return init ? results[0] : Value();
  }

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
  Value ceilDiv(Value x, int64_t by) {
    Value sum = arith::AddIOp::create(b, loc, x, idx(by - 1));
    return arith::DivUIOp::create(b, loc, sum, idx(by));
  }
  Value toF32(Value x) {
    if (x.getType().isF32())
      return x;
    return arith::ExtFOp::create(b, loc, b.getF32Type(), x);
  }
  Value negInf() { return f32(-INFINITY); }

  /// for (iv = lb; iv < ub; iv += step) with iter_args; returns the results.
  ValueRange loop(Value lb, Value ub, Value step, ValueRange init,
                  function_ref<SmallVector<Value>(Value, ValueRange)> fn) {
    auto forOp = scf::ForOp::create(
        b, loc, lb, ub, step, init,
        [&](OpBuilder &nb, Location, Value iv, ValueRange args) {
          OpBuilder::InsertionGuard g(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          SmallVector<Value> next = fn(iv, args);
          scf::YieldOp::create(b, loc, next);
        });
    return forOp.getResults();
  }
  void when(Value cond, function_ref<void()> fn) {
    auto ifOp = scf::IfOp::create(b, loc, cond, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    fn();
  }

  /// Index of a possibly broadcast mask dimension (KernelOperands.h).
  Value maskIndex(int64_t i, Value at) {
    return broadcastIndex(b, loc, mask, i, at);
  }

  /// One thread per row (sg == 0): thread r of the workgroup computes
  /// query row row0 + r and holds its whole state.
  ///
  /// The subgroup kernel (sg > 0): subgroup r of the workgroup computes
  /// query row row0 + r, its sg lanes splitting the work: lane t owns keys
  /// t, t + sg, ... of each key block (their scores, probabilities and
  /// dropout decisions) and output columns t, t + sg, ... (its part of the
  /// accumulator). The block's row max is a subgroup max; each lane keeps
  /// the sum of its own probabilities (rescaled like the accumulator: m is
  /// the same on every lane), summed over the subgroup once at the end; in
  /// P . V each probability reaches every lane by a shuffle from its owner.
  /// Every subgroup operation is reached by the whole subgroup (row
  /// validity is per subgroup; per-key conditions are inside the lanes'
  /// own work), which these operations require.
  void body(Value tid, Value qb, Value h, Value bi) {
    Value c0 = idx(0), c1 = idx(1);
    Value sq = dim(q, 2), skv = dim(k, 2);
    Value group = arith::DivUIOp::create(b, loc, dim(q, 1), dim(k, 1));
    Value hk = arith::DivUIOp::create(b, loc, h, group);
    // The subgroup kernel uses the subgroup's own ids, not a function of
    // the invocation's: Vulkan does not tie subgroups to ranges of
    // LocalInvocationIndex.
    Value lane, r = tid;
    if (sg) {
      lane = gpu::LaneIdOp::create(b, loc, b.getIndexAttr(sg));
      r = gpu::SubgroupIdOp::create(b, loc, b.getIndexAttr(br));
    }
    Value row0 = arith::MulIOp::create(b, loc, qb, idx(br));
    Value i = arith::AddIOp::create(b, loc, row0, r);
    Value rowValid =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, i, sq);
    Value diag = arith::SubIOp::create(b, loc, skv, sq);

    // Private state: the scaled query row (whole in the subgroup kernel
    // too: a lane computes whole dot products), the output accumulator (a
    // lane's columns in the subgroup kernel) and the current block's scores
    // / probabilities (a lane's keys). For SPIR-V one element more than
    // used: Mesa's NIR fully unrolls a loop whose trip count equals the
    // length of a private array it indexes (to keep the array in
    // registers), and a single key block of exactly bc keys folds the
    // per-key loops to constant trip count bc; at D = 128 the three
    // unrolled loops took lavapipe minutes to compile.
    const int64_t accLen = sg ? lanesColumns() : dv;
    const int64_t slots = sg ? (bc + sg - 1) / sg : bc;
    Value qrow = privateArray(d);
    Value acc = privateArray(accLen);
    Value sRow = privateArray(spirv ? slots + 1 : slots);

    // scale * log2(e) is folded into q once, so every exponential is exp2.
    Value qScale = f32(op.getEffectiveScale() * kLog2e);
    when(rowValid, [&] {
      overDim(d, {}, [&](Value dd, Value) {
        Value x = memref::LoadOp::create(b, loc, q, ValueRange{bi, h, i, dd});
        Value y = arith::MulFOp::create(b, loc, toF32(x), qScale);
        memref::StoreOp::create(b, loc, y, qrow, dd);
        return Value();
      });
    });
    Value zero = f32(0.0);
    overDim(accLen, {}, [&](Value x, Value) {
      memref::StoreOp::create(b, loc, zero, acc, x);
      return Value();
    });

    // Causal: key blocks past the block's last visible key are skipped.
    Value kvEnd = skv;
    if (op.getCausal()) {
      Value rowsEnd = arith::MinUIOp::create(
          b, loc, arith::AddIOp::create(b, loc, row0, idx(br)), sq);
      Value last = arith::AddIOp::create(b, loc, rowsEnd, diag);
      kvEnd = arith::MinSIOp::create(
          b, loc, arith::MaxSIOp::create(b, loc, last, c0), skv);
    }
    Value nBlocks = ceilDiv(kvEnd, bc);
    // Split-KV: this workgroup's chunk of those blocks.
    Value jBegin = c0, jEnd = nBlocks;
    if (ws)
      std::tie(jBegin, jEnd) = splitKeyBlocks(b, loc, nBlocks, split, splits);

    ValueRange state = loop(
        jBegin, jEnd, c1, {negInf(), zero}, [&](Value jb, ValueRange st) {
          Value m = st[0], l = st[1];
          Value j0 = arith::MulIOp::create(b, loc, jb, idx(bc));
          Value cols = arith::MinUIOp::create(
              b, loc, idx(bc), arith::SubIOp::create(b, loc, skv, j0));
          // Every thread is done with the previous tiles before they are
          // overwritten, and the new ones are complete before use.
          gpu::BarrierOp::create(b, loc);
          loadTile(k, ks, d, bi, hk, j0, cols, tid);
          loadTile(v, vs, dv, bi, hk, j0, cols, tid);
          gpu::BarrierOp::create(b, loc);

          auto ifOp = scf::IfOp::create(
              b, loc, rowValid,
              [&](OpBuilder &nb, Location) {
                OpBuilder::InsertionGuard g(b);
                b.setInsertionPoint(nb.getInsertionBlock(),
                                    nb.getInsertionPoint());
                SmallVector<Value> next =
                    sg ? foldBlockSubgroup(m, l, qrow, acc, sRow, i, j0, cols,
                                           diag, bi, h, lane)
                       : foldBlock(m, l, qrow, acc, sRow, i, j0, cols, diag,
                                   bi, h);
                scf::YieldOp::create(b, loc, next);
              },
              [&](OpBuilder &nb, Location) {
                scf::YieldOp::create(nb, loc, ValueRange{m, l});
              });
          return SmallVector<Value>(ifOp.getResults());
        });
    Value m = state[0];

    // out and lse; for a split-KV chunk (unless the launch has one chunk)
    // the partials for the merge kernel instead. The subgroup kernel's l is
    // each lane's share until summed here.
    when(rowValid, [&] {
      Value l = state[1];
      if (sg)
        l = gpu::SubgroupReduceOp::create(
            b, loc, l, gpu::AllReduceOperation::ADD, /*uniform=*/false);
      if (!ws) {
        writeResult(m, l, acc, bi, h, i, /*partial=*/false, lane);
        return;
      }
      Value single = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                           splits, c1);
      auto ifOp = scf::IfOp::create(b, loc, single, /*withElseRegion=*/true);
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      writeResult(m, l, acc, bi, h, i, /*partial=*/false, lane);
      b.setInsertionPointToStart(&ifOp.getElseRegion().front());
      writeResult(m, l, acc, bi, h, i, /*partial=*/true, lane);
    });
  }

  /// out = l == 0 ? 0 : acc / l and lse = l == 0 ? -inf : (m + log2 l) ln 2
  /// for row i; for a split-KV chunk (`partial`), the f32 acc / l and
  /// m + log2 l (log2 units) into the workspace at this chunk. With `lane`
  /// (subgroup kernel), acc holds this lane's columns lane, lane + sg, ...
  /// and lane 0 writes the lse.
  void writeResult(Value m, Value l, Value acc, Value bi, Value h, Value i,
                   bool partial, Value lane = {}) {
    Value zero = f32(0.0);
    Value empty =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, l, zero);
    Value inv = arith::DivFOp::create(b, loc, f32(1.0), l);
    // Column dd of the row from accumulator element `slot`.
    auto storeColumn = [&](Value slot, Value dd) {
      Value a = memref::LoadOp::create(b, loc, acc, slot);
      Value o = arith::MulFOp::create(b, loc, a, inv);
      o = arith::SelectOp::create(b, loc, empty, zero, o);
      if (partial) {
        memref::StoreOp::create(b, loc, o, ws->partialOut,
                                ValueRange{bi, h, split, i, dd});
        return;
      }
      if (!elt.isF32())
        o = arith::TruncFOp::create(b, loc, elt, o);
      memref::StoreOp::create(b, loc, o, out, ValueRange{bi, h, i, dd});
    };
    if (!lane) {
      overDim(dv, {}, [&](Value dd, Value) {
        storeColumn(dd, dd);
        return Value();
      });
    } else {
      for (int64_t x = 0; x < lanesColumns(); ++x) {
        Value col = laneColumn(x, lane);
        if ((x + 1) * sg <= dv) {
          storeColumn(idx(x), col);
          continue;
        }
        // The last group of columns when sg does not divide Dv.
        Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                             col, idx(dv));
        when(inside, [&] { storeColumn(idx(x), col); });
      }
    }
    if (!lse && !partial)
      return;
    auto writeLse = [&] {
      // ln l = log2(l) ln 2, so lse = (m + log2 l) ln 2. The logarithm
      // of an empty row's l = 0 is taken of 1 instead: SPIR-V's Log2
      // leaves log2(0) undefined, and the select below discards it.
      Value x = arith::AddFOp::create(
          b, loc, m,
          math::Log2Op::create(
              b, loc, arith::SelectOp::create(b, loc, empty, f32(1.0), l)));
      if (partial) {
        x = arith::SelectOp::create(b, loc, empty, negInf(), x);
        memref::StoreOp::create(b, loc, x, ws->partialLse,
                                ValueRange{bi, h, split, i});
        return;
      }
      x = arith::MulFOp::create(b, loc, x, f32(kLn2));
      x = arith::SelectOp::create(b, loc, empty, negInf(), x);
      memref::StoreOp::create(b, loc, x, lse, ValueRange{bi, h, i});
    };
    if (!lane) {
      writeLse();
      return;
    }
    Value first =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, idx(0));
    when(first, writeLse);
  }

  /// Subgroup kernel: the accumulator elements of a lane, ceil(Dv / sg).
  int64_t lanesColumns() const { return (dv + sg - 1) / sg; }
  /// Subgroup kernel: the output column of accumulator element x of `lane`.
  Value laneColumn(int64_t x, Value lane) {
    return arith::AddIOp::create(b, loc, idx(x * sg), lane);
  }

  /// The running max after a block whose row max is `mBlk`: m' = max(m,
  /// mBlk), m_safe = m' == -inf ? 0 : m' (every exponential stays exp2(-inf)
  /// = 0 instead of NaN) and alpha = exp2(m - m_safe).
  std::tuple<Value, Value, Value> newMax(Value m, Value mBlk) {
    Value mNew = arith::MaximumFOp::create(b, loc, m, mBlk);
    Value isNegInf = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                           mNew, negInf());
    Value mSafe = arith::SelectOp::create(b, loc, isNegInf, f32(0.0), mNew);
    Value alpha = math::Exp2Op::create(
        b, loc, arith::SubFOp::create(b, loc, m, mSafe));
    return {mNew, mSafe, alpha};
  }

  /// P = exp2(S - m_safe) for score `x` of row i, and what P . V uses:
  /// with dropout keep(seed, b, h, i, j) ? P / (1 - p) : 0 (the shared
  /// Philox decision, docs/Semantics.md; `key` gives j), else P itself.
  std::pair<Value, Value> probability(Value x, Value mSafe, Value bi, Value h,
                                      Value i, function_ref<Value()> key) {
    Value p = math::Exp2Op::create(b, loc,
                                   arith::SubFOp::create(b, loc, x, mSafe));
    double dropP = op.getEffectiveDropout();
    if (dropP <= 0.0)
      return {p, p};
    Value keep = buildDropoutKeep(b, loc, op.getSeed(), bi, h, i, key(), dropP);
    return {p, arith::SelectOp::create(
                   b, loc, keep,
                   arith::MulFOp::create(b, loc, p, f32(1.0 / (1.0 - dropP))),
                   f32(0.0))};
  }

  /// The score of key j0 + c for row i (q already scaled by scale log2 e),
  /// masked (bool: -inf; additive: + mask log2 e), -inf above the causal
  /// diagonal.
  Value score(Value qrow, Value i, Value j0, Value c, Value diag, Value bi,
              Value h) {
    Value s = overDim(d, f32(0.0), [&](Value dd, Value acc) -> Value {
      Value x = memref::LoadOp::create(b, loc, qrow, dd);
      Value y = toF32(memref::LoadOp::create(b, loc, ks, ValueRange{c, dd}));
      Value p = arith::MulFOp::create(b, loc, x, y);
      return arith::AddFOp::create(b, loc, acc, p);
    });
    Value j = arith::AddIOp::create(b, loc, j0, c);
    if (mask) {
      Value mv = memref::LoadOp::create(
          b, loc, mask, ValueRange{maskIndex(0, bi), maskIndex(1, h), i, j});
      if (mv.getType().isInteger(1))
        s = arith::SelectOp::create(b, loc, mv, s, negInf());
      else
        s = arith::AddFOp::create(
            b, loc, s, arith::MulFOp::create(b, loc, toF32(mv), f32(kLog2e)));
    }
    if (op.getCausal()) {
      Value visibleTo = arith::AddIOp::create(b, loc, i, diag);
      Value hidden = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, j,
                                           visibleTo);
      s = arith::SelectOp::create(b, loc, hidden, negInf(), s);
    }
    return s;
  }

  /// One key block folded into a row's state by its subgroup; returns
  /// (m', this lane's share of l').
  SmallVector<Value> foldBlockSubgroup(Value m, Value lLane, Value qrow,
                                       Value acc, Value sRow, Value i,
                                       Value j0, Value cols, Value diag,
                                       Value bi, Value h, Value lane) {
    Value c0 = idx(0), c1 = idx(1);
    // Slots (keys of this lane: slot s is key s sg + lane) the block fills.
    Value nSlots = ceilDiv(cols, sg);
    auto keyOf = [&](Value slot, Value owner) {
      return arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, slot, idx(sg)), owner);
    };
    // S for this lane's keys (-inf past the block), the lane's max, then
    // the row's.
    Value mLane =
        loop(c0, nSlots, c1, {negInf()}, [&](Value slot, ValueRange mx) {
          Value c = keyOf(slot, lane);
          Value inside =
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, c, cols);
          auto ifOp = scf::IfOp::create(
              b, loc, inside,
              [&](OpBuilder &nb, Location) {
                OpBuilder::InsertionGuard g(b);
                b.setInsertionPoint(nb.getInsertionBlock(),
                                    nb.getInsertionPoint());
                scf::YieldOp::create(
                    b, loc, score(qrow, i, j0, c, diag, bi, h));
              },
              [&](OpBuilder &nb, Location) {
                OpBuilder::InsertionGuard g(b);
                b.setInsertionPoint(nb.getInsertionBlock(),
                                    nb.getInsertionPoint());
                scf::YieldOp::create(b, loc, negInf());
              });
          Value s = ifOp.getResult(0);
          memref::StoreOp::create(b, loc, s, sRow, slot);
          return SmallVector<Value>{arith::MaximumFOp::create(b, loc, mx[0], s)};
        })[0];
    Value mBlk = gpu::SubgroupReduceOp::create(
        b, loc, mLane, gpu::AllReduceOperation::MAXIMUMF, /*uniform=*/false);

    auto [mNew, mSafe, alpha] = newMax(m, mBlk);
    // P = exp2(S - m_safe) in place of S (dropout applied as in foldBlock);
    // the lane's l' = alpha l + its sum of P before dropout.
    Value rowSum =
        loop(c0, nSlots, c1, {f32(0.0)}, [&](Value slot, ValueRange s) {
          Value x = memref::LoadOp::create(b, loc, sRow, slot);
          auto [p, used] = probability(x, mSafe, bi, h, i, [&] {
            return arith::AddIOp::create(b, loc, j0, keyOf(slot, lane));
          });
          memref::StoreOp::create(b, loc, used, sRow, slot);
          return SmallVector<Value>{arith::AddFOp::create(b, loc, s[0], p)};
        })[0];
    Value lNew = arith::AddFOp::create(
        b, loc, arith::MulFOp::create(b, loc, alpha, lLane), rowSum);

    // acc' = alpha acc + P . V: for each key of the block, its probability
    // from the lane that owns it, times this lane's columns of V's row.
    for (int64_t x = 0; x < lanesColumns(); ++x) {
      Value a = arith::MulFOp::create(
          b, loc, memref::LoadOp::create(b, loc, acc, idx(x)), alpha);
      memref::StoreOp::create(b, loc, a, acc, idx(x));
    }
    // A lane past Dv (sg does not divide it) reads V's last column and
    // never writes what it accumulates.
    SmallVector<Value> vCols;
    for (int64_t x = 0; x < lanesColumns(); ++x) {
      Value col = laneColumn(x, lane);
      if ((x + 1) * sg > dv)
        col = arith::MinUIOp::create(b, loc, col, idx(dv - 1));
      vCols.push_back(col);
    }
    // Keys past the block (the last slot of the last block) have P = 0
    // (their score is -inf), so instead of a branch per key their V row is
    // the block's last one: 0 x a key's own value, which the per-row kernel
    // multiplies too for masked keys.
    Value lastKey = arith::SubIOp::create(b, loc, cols, c1);
    loop(c0, nSlots, c1, {}, [&](Value slot, ValueRange) {
      Value mine = memref::LoadOp::create(b, loc, sRow, slot);
      for (int64_t owner = 0; owner < sg; ++owner) {
        // Every lane takes part in the shuffle.
        Value p = gpu::ShuffleOp::create(b, loc, mine, owner, sg,
                                         gpu::ShuffleMode::IDX)
                      .getShuffleResult();
        Value c = arith::MinUIOp::create(b, loc, keyOf(slot, idx(owner)),
                                         lastKey);
        for (int64_t x = 0; x < lanesColumns(); ++x) {
          Value y = toF32(
              memref::LoadOp::create(b, loc, vs, ValueRange{c, vCols[x]}));
          Value a = arith::AddFOp::create(
              b, loc, memref::LoadOp::create(b, loc, acc, idx(x)),
              arith::MulFOp::create(b, loc, p, y));
          memref::StoreOp::create(b, loc, a, acc, idx(x));
        }
      }
      return SmallVector<Value>{};
    });
    return {mNew, lNew};
  }

  /// tile[r, c] = src[bi, hk, j0 + r, c] for r < cols, the threads striding
  /// over the flattened tile so consecutive threads read consecutive
  /// elements of a row. For SPIR-V every invocation runs the same number of
  /// iterations, the tile's end tested inside: lavapipe stored garbage into
  /// workgroup memory when invocations left this loop at different
  /// iterations and the stores were emulated sub-word atomics (bf16 in
  /// 32-bit words, workgroup sizes that do not divide the tile).
  void loadTile(Value src, Value tile, int64_t width, Value bi, Value hk,
                Value j0, Value cols, Value tid) {
    auto copy = [&](Value e) {
      Value r = arith::DivUIOp::create(b, loc, e, idx(width));
      Value c = arith::RemUIOp::create(b, loc, e, idx(width));
      Value inside =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, r, cols);
      when(inside, [&] {
        Value j = arith::AddIOp::create(b, loc, j0, r);
        Value x = memref::LoadOp::create(b, loc, src, ValueRange{bi, hk, j, c});
        memref::StoreOp::create(b, loc, x, tile, ValueRange{r, c});
      });
    };
    const int64_t total = bc * width, n = threads();
    if (!spirv || total % n == 0) {
      loop(tid, idx(total), idx(n), {}, [&](Value e, ValueRange) {
        copy(e);
        return SmallVector<Value>{};
      });
      return;
    }
    loop(idx(0), idx((total + n - 1) / n), idx(1), {}, [&](Value it, ValueRange) {
      Value e = arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, it, idx(n)), tid);
      Value inTile =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, e, idx(total));
      when(inTile, [&] { copy(e); });
      return SmallVector<Value>{};
    });
  }

  /// One key block folded into a row's state; returns (m', l').
  SmallVector<Value> foldBlock(Value m, Value l, Value qrow, Value acc,
                               Value sRow, Value i, Value j0, Value cols,
                               Value diag, Value bi, Value h) {
    Value c0 = idx(0), c1 = idx(1);
    // S = q . K^T (q already scaled by scale log2 e), masked; rowmax.
    Value mBlk = loop(c0, cols, c1, {negInf()}, [&](Value c, ValueRange mx) {
      Value s = score(qrow, i, j0, c, diag, bi, h);
      memref::StoreOp::create(b, loc, s, sRow, c);
      return SmallVector<Value>{arith::MaximumFOp::create(b, loc, mx[0], s)};
    })[0];

    auto [mNew, mSafe, alpha] = newMax(m, mBlk);
    // P = exp2(S - m_safe), kept in place of S; l' = alpha l + rowsum(P).
    // With dropout, l sums P before dropout while P . V uses
    // keep(seed, b, h, i, j) ? P / (1 - p) : 0 (the shared Philox decision,
    // docs/Semantics.md), so the output is dropout(softmax) . V.
    Value rowSum = loop(c0, cols, c1, {f32(0.0)}, [&](Value c, ValueRange s) {
      Value x = memref::LoadOp::create(b, loc, sRow, c);
      auto [p, used] = probability(x, mSafe, bi, h, i, [&] {
        return arith::AddIOp::create(b, loc, j0, c);
      });
      memref::StoreOp::create(b, loc, used, sRow, c);
      return SmallVector<Value>{arith::AddFOp::create(b, loc, s[0], p)};
    })[0];
    Value lNew = arith::AddFOp::create(
        b, loc, arith::MulFOp::create(b, loc, alpha, l), rowSum);
    // acc' = alpha acc + P . V
    if (spirv) {
      // Key by key, the Dv bodies unrolled: acc stays constant-indexed.
      overDim(dv, {}, [&](Value dd, Value) {
        Value a = arith::MulFOp::create(
            b, loc, memref::LoadOp::create(b, loc, acc, dd), alpha);
        memref::StoreOp::create(b, loc, a, acc, dd);
        return Value();
      });
      loop(c0, cols, c1, {}, [&](Value c, ValueRange) {
        Value p = memref::LoadOp::create(b, loc, sRow, c);
        overDim(dv, {}, [&](Value dd, Value) {
          Value y =
              toF32(memref::LoadOp::create(b, loc, vs, ValueRange{c, dd}));
          Value a = arith::AddFOp::create(
              b, loc, memref::LoadOp::create(b, loc, acc, dd),
              arith::MulFOp::create(b, loc, p, y));
          memref::StoreOp::create(b, loc, a, acc, dd);
          return Value();
        });
        return SmallVector<Value>{};
      });
      return {mNew, lNew};
    }
    loop(c0, idx(dv), c1, {}, [&](Value dd, ValueRange) {
      Value a0 = arith::MulFOp::create(
          b, loc, memref::LoadOp::create(b, loc, acc, dd), alpha);
      Value a = loop(c0, cols, c1, {a0}, [&](Value c, ValueRange s) {
        Value p = memref::LoadOp::create(b, loc, sRow, c);
        Value y = toF32(memref::LoadOp::create(b, loc, vs, ValueRange{c, dd}));
        return SmallVector<Value>{arith::AddFOp::create(
            b, loc, s[0], arith::MulFOp::create(b, loc, p, y))};
      })[0];
      memref::StoreOp::create(b, loc, a, acc, dd);
      return SmallVector<Value>{};
    });
    return {mNew, lNew};
  }
};

struct ConvertAttnToGPUPass
    : public PassWrapper<ConvertAttnToGPUPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ConvertAttnToGPUPass)

  ConvertAttnToGPUPass() = default;
  ConvertAttnToGPUPass(const ConvertAttnToGPUPass &other)
      : PassWrapper(other) {}
  explicit ConvertAttnToGPUPass(const ConvertAttnToGPUOptions &o) {
    blockQ = o.blockQ;
    blockKv = o.blockKv;
    sharedMemoryBytes = o.sharedMemoryBytes;
    spirv = o.spirv;
    kvSplits = o.kvSplits;
    subgroupSize = o.subgroupSize;
  }

  StringRef getArgument() const final { return "convert-attn-to-gpu"; }
  StringRef getDescription() const final {
    return "Lower attn.sdpa in destination-passing form (memrefs in and "
           "out) to a gpu.launch: a workgroup per query block, a thread per "
           "row (or, subgroup-size=N with spirv, a subgroup of N lanes per "
           "row: subgroup max/add reductions and index shuffles), K/V tiles "
           "in workgroup memory; with kv-splits > 1, a split-KV pair "
           "(partial kernel over head x chunk, merge kernel) over "
           "host-allocated workspaces";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, gpu::GPUDialect, math::MathDialect,
                    memref::MemRefDialect, scf::SCFDialect,
                    spirv::SPIRVDialect>();
  }

  Option<int64_t> blockQ{*this, "block-q",
                         llvm::cl::desc("Query rows (threads) per workgroup"),
                         llvm::cl::init(64)};
  Option<int64_t> blockKv{
      *this, "block-kv",
      llvm::cl::desc("Keys per shared-memory tile (0 = the largest of 64, 32, "
                     "16, 8 that fits shared-memory-bytes)"),
      llvm::cl::init(0)};
  Option<int64_t> sharedMemoryBytes{
      *this, "shared-memory-bytes",
      llvm::cl::desc("Shared memory the K and V tiles may use"),
      llvm::cl::init(48 * 1024)};
  Option<bool> spirv{
      *this, "spirv",
      llvm::cl::desc("Emit for SPIR-V: private arrays in the Function "
                     "storage class, loops over D and Dv unrolled (see "
                     "ConvertAttnToGPUOptions::spirv)"),
      llvm::cl::init(false)};
  Option<int64_t> kvSplits{
      *this, "kv-splits",
      llvm::cl::desc("1: one kernel; N > 1: split-KV kernels (partials + "
                     "merge, SplitKV.h) launched here with N key chunks"),
      llvm::cl::init(1)};
  Option<int64_t> subgroupSize{
      *this, "subgroup-size",
      llvm::cl::desc("0: an invocation per query row; N > 0 (spirv only, a "
                     "power of two up to 128): a subgroup of N lanes per "
                     "row, block-q x N invocations per workgroup, using "
                     "subgroup reductions and shuffles; the kernel is "
                     "correct only where the device's subgroups have "
                     "exactly N invocations"),
      llvm::cl::init(0)};

  void runOnOperation() override {
    SmallVector<SdpaOp> ops;
    // Ops a target configured for its own tile mapping (a tiling with a
    // mapping) go through the tiled form instead.
    getOperation().walk([&](SdpaOp op) {
      if (!op.getTilingAttr() || !op.getTilingAttr().getMapping())
        ops.push_back(op);
    });
    for (SdpaOp op : ops)
      if (failed(convert(op)))
        return signalPassFailure();
  }

  LogicalResult convert(SdpaOp op) {
    if (blockQ < 1 || blockQ > 1024)
      return op.emitOpError("convert-attn-to-gpu: block-q is ")
             << blockQ << "; it must be in [1, 1024] (one thread per row)";
    if (blockKv < 0)
      return op.emitOpError("convert-attn-to-gpu: block-kv must be >= 0");
    if (kvSplits < 1)
      return op.emitOpError("convert-attn-to-gpu: kv-splits is ")
             << kvSplits << "; it must be >= 1";
    const int64_t sg = subgroupSize;
    if (sg < 0 || sg > 128 || (sg & (sg - 1)))
      return op.emitOpError("convert-attn-to-gpu: subgroup-size is ")
             << sg
             << "; it must be 0 (a thread per row) or a power of two up to "
                "128";
    if (sg > 0 && !spirv)
      return op.emitOpError("convert-attn-to-gpu: subgroup-size=")
             << sg
             << " needs spirv=true (the subgroup kernel is the Vulkan "
                "portable variant's; the cuda generic path uses a thread per "
                "row)";
    if (blockQ * std::max<int64_t>(sg, 1) > 1024)
      return op.emitOpError("convert-attn-to-gpu: block-q ")
             << int64_t(blockQ) << " x subgroup-size " << sg
             << " is more than 1024 invocations per workgroup";
    Value q = sourceMemRef(op.getQuery()), k = sourceMemRef(op.getKey()),
          v = sourceMemRef(op.getValue());
    Value mask = op.getMask() ? sourceMemRef(op.getMask()) : Value();
    auto outMat = destinationOf(op.getOut());
    auto lseMat =
        op.getLse() ? destinationOf(op.getLse()) : bufferization::MaterializeInDestinationOp();
    if (!q || !k || !v || (op.getMask() && !mask) || !outMat ||
        (op.getLse() && !lseMat))
      return op.emitOpError(
          "convert-attn-to-gpu expects destination-passing form: every "
          "operand a bufferization.to_tensor of a memref, every result "
          "written by one bufferization.materialize_in_destination into a "
          "memref (the form the JIT generates)");

    ConvertAttnToGPUOptions o;
    o.blockQ = blockQ;
    o.blockKv = blockKv;
    o.sharedMemoryBytes = sharedMemoryBytes;
    o.spirv = spirv;
    auto qt = cast<MemRefType>(q.getType());
    int64_t eltBytes = qt.getElementType().getIntOrFloatBitWidth() / 8;
    int64_t d = qt.getDimSize(3),
            dv = cast<MemRefType>(v.getType()).getDimSize(3);
    int64_t bc = resolveBlockKv(o, d, dv, eltBytes);
    if (bc * (d + dv) * eltBytes > sharedMemoryBytes)
      return op.emitOpError("convert-attn-to-gpu: K and V tiles of ")
             << bc << " keys (D = " << d << ", Dv = " << dv << ") need "
             << bc * (d + dv) * eltBytes << " bytes of shared memory, more "
             << "than " << static_cast<int64_t>(sharedMemoryBytes)
             << "; use a smaller block-kv";

    OpBuilder b(op);
    Location loc = op.getLoc();
    Value out = outMat.getDest(), lse = lseMat ? lseMat.getDest() : Value();
    emitWithSplitKV(b, loc, op, q, dv, out, lse, kvSplits,
                    /*staticSplits=*/spirv, [&](auto ws, auto names) {
                      KernelBuilder(b, loc, op, q, k, v, mask, out, lse,
                                    blockQ, bc, spirv, sg, ws,
                                    names)
                          .build();
                    });
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
    return success();
  }
};
} // namespace

int64_t mlir::attn::resolveBlockKv(const ConvertAttnToGPUOptions &options,
                                   int64_t headDim, int64_t valueDim,
                                   int64_t elementBytes) {
  if (options.blockKv > 0)
    return options.blockKv;
  for (int64_t bc : {64, 32, 16, 8})
    if (bc * (headDim + valueDim) * elementBytes <= options.sharedMemoryBytes)
      return bc;
  return 8;
}

std::unique_ptr<Pass>
mlir::attn::createConvertAttnToGPUPass(const ConvertAttnToGPUOptions &options) {
  return std::make_unique<ConvertAttnToGPUPass>(options);
}

void mlir::attn::registerConvertAttnToGPUPass() {
  PassRegistration<ConvertAttnToGPUPass>();
}
