//===- PerfModelTest.cpp - the performance model's arithmetic and invariants -===//
#include "attn/Model/PerfModel.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace attn::model;

namespace {

Problem prefill(int64_t s, int64_t d, bool causal, DType t = DType::F16) {
  Problem p;
  p.batch = 1;
  p.headsQ = p.headsKv = 16384 / s > 0 ? std::max<int64_t>(1, 16 * 1024 / s) : 1;
  p.seqQ = p.seqKv = s;
  p.headDim = d;
  p.dtype = t;
  p.causal = causal;
  return p;
}

/// B x Hq query heads over Hkv K/V heads, Sq query rows against Skv keys,
/// D = 128: the shapes of the decode and split tests.
Problem heads(int64_t b, int64_t hq, int64_t hkv, int64_t sq, int64_t skv,
              DType t = DType::BF16) {
  Problem p;
  p.batch = b;
  p.headsQ = hq;
  p.headsKv = hkv;
  p.seqQ = sq;
  p.seqKv = skv;
  p.headDim = 128;
  p.dtype = t;
  return p;
}

Prediction run(const Problem &p, const Geometry &g, const Device &d) {
  Prediction pr;
  std::string err;
  EXPECT_TRUE(predict(p, g, d, pr, err)) << err;
  return pr;
}

double term(const Prediction &p, const std::string &name) {
  for (const Term &t : p.terms)
    if (t.name == name)
      return t.seconds;
  ADD_FAILURE() << "no term " << name;
  return -1;
}

const Device &h100() { return *findDevice("h100"); }
const Device &cpu() { return *findDevice("cpu"); }

} // namespace

// Hand-computed: B = H = 1, Sq = Skv = 128, D = 64, 64 x 64 tiles, no
// causal: 2 query tiles x 2 key blocks x 64 x 64 = 16384 scores.
TEST(PerfModel, CountsOfASmallProblem) {
  Problem p;
  p.seqQ = p.seqKv = 128;
  p.headDim = 64;
  p.dtype = DType::F32;
  Geometry g; // 64 x 64, one split
  Prediction pr = run(p, g, cpu());
  EXPECT_DOUBLE_EQ(pr.usefulFlops, 4.0 * 128 * 128 * 64);
  EXPECT_DOUBLE_EQ(pr.matrixFlops, 4.0 * 128 * 128 * 64);
  // one exp per score plus a rescale per row and block: 16384 + 4 x 64
  EXPECT_DOUBLE_EQ(pr.exps, 16384 + 4 * 64);
  EXPECT_EQ(pr.workgroups, 2);
  EXPECT_EQ(pr.waves, 1);
  // DRAM: Q + O (128 rows x 256 B each) + K/V once (128 x 512 B) on a GPU;
  // on the cpu they fit the warm L3 (CpuWarmRunsStreamFromTheLastLevelCache)
  // and come from there.
  const double compulsory = 2 * 128 * 256.0 + 128 * 512.0;
  EXPECT_DOUBLE_EQ(run(p, g, h100()).dramBytes, compulsory);
  EXPECT_DOUBLE_EQ(pr.dramBytes, 0);
  EXPECT_GE(pr.l2Bytes, compulsory);
}

// Padding: Sq = 65 computes two full 64-row tiles; the useful count does
// not include the padding.
TEST(PerfModel, PaddedTilesComputeWholeBlocks) {
  Problem p;
  p.seqQ = 65;
  p.seqKv = 64;
  p.headDim = 64;
  Geometry g;
  Prediction pr = run(p, g, cpu());
  EXPECT_DOUBLE_EQ(pr.usefulFlops, 4.0 * 65 * 64 * 64);
  EXPECT_DOUBLE_EQ(pr.matrixFlops, 4.0 * 128 * 64 * 64);
}

// Causal, Sq = Skv = 256, 64 x 64 tiles: tile t visits t + 1 blocks (10 of
// 16), and the visible pairs are 256 x 257 / 2.
TEST(PerfModel, CausalSkipsBlocksAboveTheDiagonal) {
  Problem p;
  p.seqQ = p.seqKv = 256;
  p.headDim = 64;
  p.causal = true;
  Geometry g;
  Prediction pr = run(p, g, cpu());
  EXPECT_DOUBLE_EQ(pr.usefulFlops, 4.0 * 64 * (256.0 * 257 / 2));
  EXPECT_DOUBLE_EQ(pr.matrixFlops, 4.0 * 64 * 10 * 64 * 64);
  g.causalSkip = false;
  Prediction all = run(p, g, cpu());
  EXPECT_DOUBLE_EQ(all.matrixFlops, 4.0 * 64 * 16 * 64 * 64);
  EXPECT_GT(all.seconds, pr.seconds);
}

// Bottom-right alignment with Sq < Skv: row i sees Skv - Sq + 1 + i keys.
TEST(PerfModel, CausalBottomRightVisiblePairs) {
  Problem p;
  p.seqQ = 4;
  p.seqKv = 100;
  p.headDim = 64;
  p.causal = true;
  Geometry g;
  Prediction pr = run(p, g, cpu());
  EXPECT_DOUBLE_EQ(pr.usefulFlops, 4.0 * 64 * (97 + 98 + 99 + 100));
  // Sq > Skv: the first Sq - Skv rows see nothing.
  p.seqQ = 10;
  p.seqKv = 4;
  pr = run(p, g, cpu());
  EXPECT_DOUBLE_EQ(pr.usefulFlops, 4.0 * 64 * (1 + 2 + 3 + 4));
}

// Causal costs about half of non-causal at long sequences, when there are
// enough query tiles to fill the device several times over. (With fewer
// tiles than workgroup slots, every workgroup runs at once and the time is
// the heaviest one's: a causal diagonal tile's, or its split's, is as long
// as a non-causal tile's.)
TEST(PerfModel, CausalIsAboutHalf) {
  for (const Device *d : {&h100(), &cpu()})
    for (int64_t s : {4096, 16384}) {
      Problem p = prefill(s, 128, false);
      Problem c = prefill(s, 128, true);
      p.batch = c.batch = 8;
      Geometry gp = d->kind == DeviceKind::GPU ? cudaGeometry(p, 0, 132)
                                                : cpuGeometry(p, 0, 0, 0, 2);
      Geometry gc = d->kind == DeviceKind::GPU ? cudaGeometry(c, 0, 132)
                                                : cpuGeometry(c, 0, 0, 0, 2);
      double r = run(c, gc, *d).seconds / run(p, gp, *d).seconds;
      EXPECT_GT(r, 0.4) << d->name << " S=" << s;
      EXPECT_LT(r, 0.65) << d->name << " S=" << s;
    }
}

// Monotone: more keys, more queries, more heads, larger D never predict
// less time.
TEST(PerfModel, MonotoneInSizes) {
  for (const Device *d : {&h100(), &cpu()}) {
    auto time = [&](Problem p) {
      Geometry g = d->kind == DeviceKind::GPU ? cudaGeometry(p, 1, 132)
                                              : cpuGeometry(p, 0, 0, 1, 2);
      return run(p, g, *d).seconds;
    };
    Problem base = prefill(2048, 64, false);
    double t0 = time(base);
    for (int what = 0; what < 4; ++what) {
      Problem q = base;
      if (what == 0) q.seqKv *= 2;
      if (what == 1) q.seqQ *= 2;
      if (what == 2) q.headsQ = q.headsKv = base.headsQ * 2;
      if (what == 3) q.headDim = 128;
      EXPECT_GE(time(q), t0) << d->name << " case " << what;
    }
  }
}

// As Sq shrinks, the bottleneck moves from compute to memory: prefill is
// bound by the tensor units (or softmax), decode by DRAM.
TEST(PerfModel, BottleneckMovesFromComputeToMemory) {
  Problem p = heads(4, 32, 8, 8192, 32768);
  Prediction pre = run(p, cudaGeometry(p, 0, 132), h100());
  EXPECT_TRUE(pre.bottleneck == "tensor" || pre.bottleneck == "softmax" ||
              pre.bottleneck == "smem")
      << pre.bottleneck;
  p.seqQ = 1;
  Prediction dec = run(p, cudaGeometry(p, 0, 132), h100());
  EXPECT_EQ(dec.bottleneck, "dram");
  // Arithmetic intensity falls by orders of magnitude.
  EXPECT_GT(pre.usefulFlops / pre.dramBytes, 100 * dec.usefulFlops / dec.dramBytes);
}

// Decode at Skv = 128k on the H100 without splits: 32 packed workgroups
// leave most SMs idle; the automatic split count fills them, and the model
// says so.
TEST(PerfModel, SplitsFillTheDeviceForDecode) {
  Problem p = heads(1, 32, 8, 1, 131072, DType::F16);
  Geometry one = cudaGeometry(p, 1, 132);
  Geometry autoG = cudaGeometry(p, 0, 132);
  EXPECT_GT(autoG.kvSplits, 1);
  EXPECT_EQ(one.kvSplits, 2); // the key-chunk floor: 2^17 keys, chunks of 2^16
  Prediction a = run(p, autoG, h100()), b = run(p, one, h100());
  EXPECT_LT(a.seconds, b.seconds / 2);
  int64_t pick = chooseKvSplitsByModel(p, autoG, h100());
  EXPECT_GE(pick, 8);
}

// The runtime's automatic split count (cuda::chooseKvSplits), mirrored:
// one wave of two workgroups per SM, floor(264 / tiles) on the H100, at
// the two shapes where ceil measured slower
// (bench/results/model-h100-rank-2026-11-27).
TEST(PerfModel, CudaSplitRuleMirror) {
  Problem p = heads(1, 8, 8, 256, 32768);
  Geometry g = cudaGeometry(p, 0, 132);
  ASSERT_EQ(g.blockQ, 128);
  EXPECT_EQ(g.kvSplits, 16); // 16 tiles: 264 / 16 = 16.5 -> 16 (ceil: 17)
  EXPECT_LE(g.kvSplits * 16, 264);
  p.batch = 4;
  p.headsQ = 32;
  p.seqQ = 1;
  p.seqKv = 16384;
  g = cudaGeometry(p, 0, 132);
  EXPECT_TRUE(g.packHeads);
  EXPECT_EQ(g.kvSplits, 8); // 32 packed tiles: 8.25 -> 8 (ceil: 9)
  p.batch = 1;
  p.seqKv = 131072;
  EXPECT_EQ(cudaGeometry(p, 0, 132).kvSplits, 33); // 8 tiles: exactly 33
}

// A decode split into few long chunks is bound by each workgroup's chain
// of key blocks (a DRAM round trip per block it did not prefetch), not by
// the bandwidth: B 1, Skv 128k, GQA 32:8 on the H100 measured 0.678 /
// 0.346 / 0.194 ms at 4 / 8 / 33 splits
// (bench/results/model-h100-rank-2026-11-27).
TEST(PerfModel, LongChunksAreLatencyChains) {
  Problem p = heads(1, 32, 8, 1, 131072);
  auto ms = [&](int64_t splits) {
    return run(p, cudaGeometry(p, splits, 132), h100()).seconds * 1e3;
  };
  EXPECT_NEAR(ms(4), 0.678, 0.678 * 0.15);
  EXPECT_NEAR(ms(8), 0.346, 0.346 * 0.15);
  EXPECT_NEAR(ms(33), 0.194, 0.194 * 0.15);
  // Without the chain the 4-split launch would be bandwidth-bound, as fast
  // as 33 splits.
  EXPECT_GT(ms(4), 3 * ms(33));
}

// A single partial wave is not charged twice: 256 workgroups of 2 warps on
// 132 SMs hold 2 each (8 hold 1) and saturate the issue rate, so the
// utilization is near 1 although each SM has room for more (the earlier
// rule, 256 / (132 x 3 slots), predicted 2.0 ms on the H200; B 8, Sq 4,
// Skv 32k decode measured 0.714 ms on the H100).
TEST(PerfModel, PartialWaveChargedOnce) {
  Problem p = heads(8, 32, 8, 4, 32768);
  Geometry g = cudaGeometry(p, 1, 132);
  Prediction pr = run(p, g, h100());
  EXPECT_EQ(pr.workgroups, 256);
  EXPECT_GT(pr.perUnit, 2);
  EXPECT_GT(pr.utilization, 0.95);
  EXPECT_NEAR(pr.seconds * 1e3, 0.714, 0.714 * 0.15);
}

// Short prefill workgroups pay their wave's prologue and epilogue bytes:
// 2048 workgroups of 4 key blocks (S 512, 16k tokens) on the H100
// measured 0.291 ms (bench/results/model-h100-live-2026-11-27); the
// latency term carries the bursts, several times the round trips alone.
TEST(PerfModel, ShortPrefillPaysTheWaveBursts) {
  Problem p = prefill(512, 128, false);
  p.batch = 32;
  p.headsQ = p.headsKv = 16;
  Geometry g = cudaGeometry(p, 0, 132);
  Prediction pr = run(p, g, h100());
  const double roundTrips = pr.waves * (g.stages + 1) * h100().dramLatency;
  EXPECT_GT(term(pr, "latency"), 3 * roundTrips);
  EXPECT_NEAR(pr.seconds * 1e3, 0.291, 0.291 * 0.15);
}

// The geometry mirror of resolveNVGPUGeometry at the documented cases.
TEST(PerfModel, CudaGeometryMirror) {
  Geometry g = cudaGeometry(prefill(4096, 128, false), 0, 132);
  EXPECT_EQ(g.warps, 4); // two m16 row tiles per warp at D = 128
  EXPECT_EQ(g.rowTiles, 2);
  EXPECT_EQ(g.blockQ, 128);
  EXPECT_EQ(g.blockKv, 32);
  EXPECT_EQ(g.stages, 3);
  g = cudaGeometry(prefill(4096, 64, true), 0, 132);
  EXPECT_EQ(g.blockQ, 128);
  EXPECT_EQ(g.blockKv, 64);
  // D = 256: one row tile of 4 warps; 32-key blocks for the split-capable
  // kernels the JIT compiles for a dynamic key length, 16 under causal.
  g = cudaGeometry(prefill(4096, 256, false), 0, 132);
  EXPECT_EQ(g.warps, 4);
  EXPECT_EQ(g.blockQ, 64);
  EXPECT_EQ(g.blockKv, 32);
  EXPECT_TRUE(g.qFromSmem);
  g = cudaGeometry(prefill(4096, 256, true), 0, 132);
  EXPECT_EQ(g.blockKv, 16);
  // Decode: Sq = 1 packs the GQA group's rows, 2 warps at D = 128.
  Problem dec = prefill(4096, 128, false);
  dec.seqQ = 1;
  dec.headsQ = 32;
  dec.headsKv = 8;
  g = cudaGeometry(dec, 0, 132);
  EXPECT_TRUE(g.packHeads);
  EXPECT_EQ(g.warps, 2);
  EXPECT_EQ(g.blockQ, 32);
}

// Coalescing: a head dim whose rows are not whole sectors costs whole
// sectors.
TEST(PerfModel, RowsCostWholeSectors) {
  Problem p;
  p.seqQ = 1;
  p.seqKv = 4096;
  p.headDim = 8; // 16 B rows in f16: half a 32-byte sector
  p.dtype = DType::F16;
  Geometry g;
  Prediction pr = run(p, g, h100());
  EXPECT_DOUBLE_EQ(pr.dramBytes, 2 * 32.0 + 4096 * 64.0);
}

// L2 locality: when the K/V of the heads in flight no longer fits half of
// the L2, DRAM traffic grows toward one read per query tile.
TEST(PerfModel, L2ReuseEndsWhenTheWorkingSetOutgrowsIt) {
  Problem small = prefill(4096, 128, false);
  small.headsQ = small.headsKv = 1;
  Geometry g = cudaGeometry(small, 1, 132);
  Prediction a = run(small, g, h100());
  double kvOnce = 4096.0 * 2 * 128 * 2;
  EXPECT_NEAR(a.dramBytes, kvOnce + 2 * 4096.0 * 256, 1);
  Problem big = small;
  big.seqQ = big.seqKv = 1 << 20; // 512 MiB of K/V per head
  Prediction b = run(big, cudaGeometry(big, 1, 132), h100());
  EXPECT_GT(b.dramBytes, 10 * (double(1 << 20) * 512 + 2.0 * (1 << 20) * 256));
}

// Wave quantization: 133 equal workgroups on 132 single-slot units take two
// rounds.
TEST(PerfModel, WaveQuantization) {
  Device d = h100();
  d.maxBlocksPerUnit = 1;
  Problem p;
  p.seqQ = 64;
  p.seqKv = 8192;
  p.headDim = 64;
  p.dtype = DType::F16;
  Geometry g;
  g.warps = 8; // saturating issue
  g.blockQ = 64;
  p.headsQ = p.headsKv = 132;
  Prediction a = run(p, g, d);
  p.headsQ = p.headsKv = 133;
  Prediction b = run(p, g, d);
  EXPECT_EQ(a.waves, 1);
  EXPECT_EQ(b.waves, 2);
  EXPECT_GT(term(b, "occupancy"), 0.5 * (term(b, "tensor")));
}

TEST(PerfModel, RejectsBadInput) {
  Problem p;
  p.headsQ = 3;
  p.headsKv = 2;
  Prediction pr;
  std::string err;
  EXPECT_FALSE(predict(p, Geometry(), cpu(), pr, err));
  EXPECT_NE(err.find("not a multiple"), std::string::npos);
  p.headsQ = 2;
  Geometry g;
  g.blockKv = 0;
  EXPECT_FALSE(predict(p, g, cpu(), pr, err));
  EXPECT_EQ(findDevice("a100"), nullptr);
  DType t;
  EXPECT_FALSE(parseDType("f64", t));
}

// The cpu micro-kernel computes 8-row register tiles: one live query row
// costs 8 rows of the contractions, not the whole 64-row block.
TEST(PerfModel, CpuRowsComputeInEightRowTiles) {
  Problem p;
  p.seqQ = 1;
  p.seqKv = 4096;
  p.headDim = 128;
  Geometry g = cpuGeometry(p, 0, 0, 1, 2);
  EXPECT_EQ(g.rowGranule, 8);
  Prediction pr = run(p, g, cpu());
  EXPECT_DOUBLE_EQ(pr.matrixFlops, 2.0 * 256 * 8 * 4096);
  EXPECT_DOUBLE_EQ(pr.usefulFlops, 2.0 * 256 * 1 * 4096);
}

// Warm runs on the cpu: a launch whose tensors fit half the last-level
// cache (32 MB) finds them cached at the next timed run, so its stream
// comes at the cache's bandwidth and nothing from DRAM (GQA decode, f32:
// Skv 4k is 8 MB of K/V, 0.25 ms measured); at Skv 16k (32 MB) the stream
// is DRAM's again.
TEST(PerfModel, CpuWarmRunsStreamFromTheLastLevelCache) {
  Problem p = heads(1, 8, 2, 1, 4096, DType::F32);
  Geometry g = cpuGeometry(p, 0, 0, 0, 2);
  Prediction warm = run(p, g, cpu());
  EXPECT_EQ(warm.dramBytes, 0);
  EXPECT_EQ(term(warm, "dram"), 0);
  const double kv = 2.0 * 2 * 4096 * 128 * 4;
  EXPECT_GE(warm.l2Bytes, kv);
  EXPECT_GE(term(warm, "l2"), kv / cpu().l2Bandwidth);
  // Still below what the same bytes from DRAM would cost.
  EXPECT_LT(warm.seconds, kv / cpu().dramBandwidth + term(warm, "tensor"));

  p.seqKv = 16384;
  g = cpuGeometry(p, 0, 0, 0, 2);
  Prediction cold = run(p, g, cpu());
  EXPECT_GE(cold.dramBytes, 4 * kv);
  EXPECT_GE(term(cold, "dram"), 4 * kv / cpu().dramBandwidth);
  EXPECT_EQ(cold.bottleneck, "dram");
}

// The model's cpu split count (cpuKvSplits, what the cpu JIT uses for
// kv_splits 0): where the fixed rule splits (one tile, two cores) the
// model does too; three or five tiles on two cores leave a core idle in
// the last round of whole tiles, so the model splits them in two, which
// measured 30% and 13% faster (bench/results/model-cpu-rank-2026-11-27);
// four tiles balance and are not split.
TEST(PerfModel, ChoosesTheCpuSplitCount) {
  Problem p;
  p.seqQ = 1;
  p.seqKv = 65536;
  p.headDim = 128;
  Geometry g = cpuGeometry(p, 0, 0, 0, 2);
  EXPECT_EQ(g.kvSplits, 2);
  EXPECT_EQ(chooseKvSplitsByModel(p, g, cpu()), 2);
  EXPECT_EQ(cpuKvSplits(p, 64, 64, 2), 2);
  p.seqQ = 64;
  p.seqKv = 8192;
  for (int64_t heads : {3, 5}) {
    p.headsQ = p.headsKv = heads;
    g = cpuGeometry(p, 0, 0, 0, 2);
    EXPECT_EQ(g.kvSplits, 1) << "the fixed rule, " << heads << " tiles";
    EXPECT_EQ(cpuKvSplits(p, 64, 64, 2), 2) << heads << " tiles";
    Geometry two = g;
    two.kvSplits = 2;
    EXPECT_LT(run(p, two, cpu()).seconds, run(p, g, cpu()).seconds);
  }
  p.headsQ = p.headsKv = 4;
  EXPECT_EQ(cpuKvSplits(p, 64, 64, 2), 1);
  // Many tiles: no split whatever the remainder.
  p.headsQ = p.headsKv = 33;
  p.seqQ = 2048;
  EXPECT_EQ(cpuKvSplits(p, 64, 64, 2), 1);
  // A GQA decode step packs a group into one tile: 8 tiles, no split.
  p = Problem();
  p.headsQ = 32;
  p.headsKv = 8;
  p.seqQ = 1;
  p.seqKv = 32768;
  p.headDim = 128;
  g = cpuGeometry(p, 0, 0, 0, 2);
  EXPECT_TRUE(g.packHeads);
  EXPECT_EQ(cpuKvSplits(p, 64, 64, 2), 1);
}
