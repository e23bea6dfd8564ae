//===- PerfModel.cpp - a mechanistic time model of attn's kernels ---------===//
//
// Counts, for the geometry a compiler chose, the work of every workgroup
// (tiles, key blocks after causal skipping and splits, padding rows),
// turns it into FLOPs, exps and bytes per memory level, divides each by its
// device rate, and combines them by one overlap rule (docs/
// PerformanceModel.md). What the seed's model missed is here as terms of
// their own: sector-granular (coalescing) traffic, latency through Little's
// law and resident warps, L2 reuse from the working set of the workgroups in
// flight, wave quantization and the longest workgroup.
//
//===----------------------------------------------------------------------===//
#include "attn/Model/PerfModel.h"

#include "attn/runtime/KeyChunks.h"
#include "attn/runtime/PackedDecode.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attn::model {
namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

double elementBytes(DType t) { return t == DType::F32 ? 4.0 : 2.0; }

/// Bytes a row of `bytes` contiguous bytes costs in `sector`-byte
/// transactions (rows start aligned: attn_launch requires 16-byte
/// alignment and the last dimension contiguous).
double sectored(double bytes, int64_t sector) {
  if (sector <= 1)
    return bytes;
  return std::ceil(bytes / sector) * sector;
}

// -- Device tables. Each number says where it comes from; "fitted" marks
// -- the ones chosen against committed measurements (docs list which).

Device makeH100() {
  Device d;
  d.name = "h100";
  d.kind = DeviceKind::GPU;
  // NVIDIA H100 SXM5 80GB datasheet: 132 SMs, 1.98 GHz max boost,
  // 989.4 TFLOP/s dense f16/bf16 (wgmma), 67 TFLOP/s f32 (non-tensor),
  // 3.35 TB/s HBM3, 50 MB L2.
  d.units = 132;
  // mma.sync (the kernel's instruction; wgmma is what reaches the peak)
  // is taken at two thirds of 989.4: an assumption, not measured here,
  // chosen among 0.60-0.67 against the prefill cells of
  // decode-alternatives-2026-11-26 call1 (docs/PerformanceModel.md gives
  // the errors of both ends). A cuBLAS 8192^3 bf16 GEMM (wgmma) reached
  // ~798 TFLOP/s on the lent H100 (issue 21's brief).
  d.matrixFlops16 = 989.4e12 * 2 / 3;
  d.matrixFlops32 = 67e12; // the generic kernel's SIMT FMAs (datasheet)
  d.vectorFlops = 67e12;   // datasheet f32, non-tensor
  // Special-function units: 16 MUFU.EX2 per SM per clock (CUDA C
  // Programming Guide, arithmetic instruction throughput, cc 9.0) x 132 x
  // 1.83 GHz = 3.9e12/s, the figure FlashAttention-3 (Shah et al. 2024, §1)
  // quotes for the H100 SXM5.
  d.expRate = 3.9e12;
  // Measured device-to-device copy on the lent H100, 3.0 TB/s read+write
  // (ARCHITECTURE.md "Measuring"); 3.35 TB/s nominal.
  d.dramBandwidth = 3.0e12;
  // L2: ~5.5 TB/s read bandwidth (Chips and Cheese, "Nvidia's H100: Funny
  // L2, and Tons of Bandwidth", 2023, measured on an H100 PCIe; not
  // measured here). 50 MB (datasheet); the model's reuse rule counts
  // half of it, the L2 being two partitions that each hold the lines their
  // side reads (Hopper tuning guide).
  d.l2Bandwidth = 5.5e12;
  d.l2Bytes = 50e6;
  // Shared memory: 32 banks x 4 B per clock per SM (CUDA C Programming
  // Guide) x 132 x 1.98 GHz = 33.4 TB/s; 228 KB per SM, 1 KB of it reserved
  // per block (cc 9.0); 64K registers, 64 warps, 32 blocks per SM.
  d.smemBandwidth = 128.0 * 132 * 1.98e9;
  d.smemPerUnit = 228 * 1024;
  d.regsPerUnit = 65536;
  d.maxWarpsPerUnit = 64;
  d.maxBlocksPerUnit = 32;
  // Four sub-partitions, each needing one warp (x row tiles) in flight: a
  // warp's mma.sync chains over the key block's n-tiles are independent, so
  // one warp per scheduler covers the latency. An assumption, not a
  // measured number; 8 (two per sub-partition) predicted the B = 8,
  // Sq = 2-16 decode cells of decode-alternatives call2 35-43% slow.
  d.warpsToSaturate = 4;
  // A loaded HBM round trip (~0.6 us; microbenchmarks measure ~480-500
  // cycles unloaded): assumption, used only through Little's law.
  d.dramLatency = 0.6e-6;
  // Per kernel on the GPU: the boundary between the kernel and the one
  // before it (drain, launch, the first workgroups' ramp), not the host's
  // launch path, which bench/model/live_cuda.py keeps outside the timed
  // interval. Fitted on the B = 1, Skv = 4k decode cells of
  // bench/results/model-h100-live-2026-11-27 (4-6 us a kernel). Timings
  // with CUDA events around a synchronous attn_launch (attn-run --bench,
  // the committed offline data) add the host's path, 9-15 us a launch.
  d.launchOverhead = 4.5e-6;
  // mma.sync and the softmax issue from the same warps (no warp
  // specialization): half of the smaller one is assumed not to overlap.
  d.overlap = 0.5;
  d.sector = 32;
  return d;
}

Device makeH200() {
  Device d = makeH100();
  d.name = "h200";
  // NVIDIA H200 SXM datasheet: the H100's SMs and clocks, 141 GB HBM3e at
  // 4.8 TB/s nominal. No copy was measured here: 4.8 x the H100's
  // measured/nominal ratio (3.0 / 3.35) = 4.3 TB/s, an estimate.
  d.dramBandwidth = 4.8e12 * (3.0 / 3.35);
  return d;
}

Device makeCpu() {
  Device d;
  d.name = "cpu";
  d.kind = DeviceKind::CPU;
  // This project's VM: 2 cores of an AMD EPYC (family 26: Zen 5) with
  // AVX-512 and AVX512-BF16 (/proc/cpuinfo). Measured with
  // bench/model/cpu_peaks.c (best of 5 repetitions, 2 threads, the machine
  // shared with other engineers' builds, so these are lower bounds of what
  // an idle VM gives; bench/results/model-cpu-2026-11-27/cpu_peaks.json):
  d.units = 2;
  // OpenBLAS SGEMM 2048^3 through NumPy in the same run as attn's cpu
  // kernels (bench/results/cpu-vectorize-tiles-2026-11-27): the best an
  // f32 contraction reaches here. f16/bf16 inputs are widened to f32 in
  // registers, so both dtypes use it.
  d.matrixFlops16 = 196e9;
  d.matrixFlops32 = 196e9;
  // cpu_peaks: 12 independent AVX-512 FMA chains per thread, 192.7-199.5
  // GFLOP/s on 2 threads (170 on one).
  d.vectorFlops = 195e9;
  // cpu_peaks: a degree-6 polynomial exp2 with vscalefps, 8 chains per
  // thread: 8.85e9 exp/s on 2 threads.
  d.expRate = 8.85e9;
  // Copy bandwidth measured by bench/cpu_vs_blas.py in the run above
  // (29.5 GB/s; cpu_peaks' copy gave 11-20 GB/s under the shared load).
  d.dramBandwidth = 29.5e9;
  // The "l2" level of the cpu table is the last-level cache (the Zen 5
  // CCD's L3, 32 MB, AMD's specification; the VM shares it): its bandwidth
  // is an assumption (~4x the DRAM copy), used when K/V of a head misses
  // the 1 MB per-core L2 but fits the L3.
  d.l2Bandwidth = 120e9;
  d.l2Bytes = 32e6;
  d.smemBandwidth = 0; // the per-core L2 is not a separate term
  d.smemPerUnit = 1 << 20; // per-core L2 (Zen 5: 1 MB)
  d.maxBlocksPerUnit = 1;  // one tile per thread at a time
  d.warpsToSaturate = 1;
  // One streaming core's copy (cpu_peaks, 1 thread: 12.7 GB/s) bounds
  // what few busy threads can pull: expressed as latency x bytes in
  // flight per core (64 lines of 64 B / 12.7 GB/s).
  d.dramLatency = 64.0 * 64 / 12.7e9;
  // attn_launch of a tiny kernel (B = H = 1, S = 16, f32) under attn-run
  // --bench: fitted in bench/results/model-cpu-2026-11-27.
  d.launchOverhead = 12e-6;
  // One core issues the contractions, the exps and the row statistics
  // from the same vector ports: nothing overlaps.
  d.overlap = 1.0;
  d.sector = 64; // cache lines
  return d;
}

/// Work of one query tile: its key blocks (after causal skipping) and its
/// visible (query, key) pairs.
struct TileWork {
  int64_t rows = 0, blocks = 0;
  double visible = 0;
};

/// Σ_{r=r0}^{r1-1} clamp(r + 1 + off, 0, skv): the keys rows r0..r1-1 see
/// under bottom-right causal alignment (off = Skv - Sq).
double causalVisible(int64_t r0, int64_t r1, int64_t off, int64_t skv) {
  double sum = 0;
  // Rows with 0 < r + 1 + off < skv form an arithmetic series; the rest
  // see none or all keys.
  int64_t lo = std::max(r0, -off);          // first row seeing >= 1 key
  int64_t hi = std::min(r1, skv - off - 1); // rows below this see < skv keys
  if (hi > lo) {
    double a = double(lo + 1 + off), b = double(hi + off);
    sum += (a + b) * double(hi - lo) / 2.0;
  }
  int64_t full = std::max<int64_t>(0, r1 - std::max(r0, std::max(hi, lo)));
  if (skv - off - 1 < r1)
    sum += double(std::min(full, r1 - std::max(r0, skv - off - 1))) * skv;
  return sum;
}

} // namespace

DType modelDType(attn_dtype dtype) {
  return dtype == ATTN_DTYPE_F16    ? DType::F16
         : dtype == ATTN_DTYPE_BF16 ? DType::BF16
                                    : DType::F32;
}

Mask modelMask(attn_mask_kind mask) {
  return mask == ATTN_MASK_BOOL       ? Mask::Bool
         : mask == ATTN_MASK_ADDITIVE ? Mask::Additive
                                      : Mask::None;
}

bool parseDType(const std::string &s, DType &out) {
  if (s == "f16")
    out = DType::F16;
  else if (s == "bf16")
    out = DType::BF16;
  else if (s == "f32")
    out = DType::F32;
  else
    return false;
  return true;
}

const Device *findDevice(const std::string &name) {
  static const Device h100 = makeH100(), h200 = makeH200(), cpu = makeCpu();
  if (name == "h100")
    return &h100;
  if (name == "h200")
    return &h200;
  if (name == "cpu")
    return &cpu;
  return nullptr;
}

std::vector<std::string> deviceNames() { return {"h100", "h200", "cpu"}; }

bool predict(const Problem &p, const Geometry &g, const Device &d,
             Prediction &out, std::string &error) {
  out = Prediction();
  const int64_t dv = p.valueDim > 0 ? p.valueDim : p.headDim;
  if (p.batch < 1 || p.headsQ < 1 || p.headsKv < 1 || p.seqQ < 1 ||
      p.seqKv < 1 || p.headDim < 1) {
    error = "model: every extent must be at least 1";
    return false;
  }
  if (p.headsQ % p.headsKv) {
    error = "model: heads_q (" + std::to_string(p.headsQ) +
            ") is not a multiple of heads_kv (" + std::to_string(p.headsKv) +
            ")";
    return false;
  }
  if (g.blockQ < 1 || g.blockKv < 1 || g.kvSplits < 1 || g.warps < 1 ||
      g.rowTiles < 1 || g.stages < 1) {
    error = "model: block sizes, warps, row tiles, stages and kv_splits must "
            "be at least 1";
    return false;
  }
  if (p.dropout < 0 || p.dropout >= 1) {
    error = "model: dropout must be in [0, 1)";
    return false;
  }
  if (d.units < 1 || d.matrixFlops16 <= 0 || d.matrixFlops32 <= 0 ||
      d.vectorFlops <= 0 || d.expRate <= 0 || d.dramBandwidth <= 0) {
    error = "model: device '" + d.name + "' lacks a rate";
    return false;
  }
  const bool gpu = d.kind == DeviceKind::GPU;
  const double e = elementBytes(p.dtype);
  const int64_t group = p.headsQ / p.headsKv;
  const int64_t D = p.headDim;
  // Packed GQA decode: one tile holds the rows of a group's heads (only
  // meaningful without causal offsets per head: Sq = 1 is what the cuda
  // compiler packs).
  const bool packed = g.packHeads && group > 1;
  const int64_t rowsPerUnit = packed ? group * p.seqQ : p.seqQ;
  const int64_t units = packed ? p.batch * p.headsKv : p.batch * p.headsQ;
  const int64_t tilesPerUnit = ceilDiv(rowsPerUnit, g.blockQ);
  const int64_t keyBlocks = ceilDiv(p.seqKv, g.blockKv);

  // Per query tile: key blocks visited and visible pairs.
  double computedElems = 0, visible = 0, blockVisits = 0, computedRows = 0;
  int64_t longestBlocks = 0, workgroups = 0;
  for (int64_t t = 0; t < tilesPerUnit; ++t) {
    int64_t r0 = t * g.blockQ, r1 = std::min(rowsPerUnit, r0 + g.blockQ);
    int64_t blocks = keyBlocks;
    double vis;
    if (p.causal && !packed) {
      const int64_t off = p.seqKv - p.seqQ;
      int64_t lastKeys = std::clamp<int64_t>(r1 + off, 0, p.seqKv);
      if (g.causalSkip)
        blocks = ceilDiv(lastKeys, g.blockKv);
      vis = causalVisible(r0, r1, off, p.seqKv);
    } else {
      vis = double(r1 - r0) * p.seqKv;
    }
    int64_t chunk = g.kvSplits > 1 ? ceilDiv(std::max<int64_t>(blocks, 1),
                                             g.kvSplits)
                                   : blocks;
    int64_t wgs = g.kvSplits > 1 ? (gpu ? g.kvSplits
                                        : std::max<int64_t>(1, ceilDiv(blocks, std::max<int64_t>(chunk, 1))))
                                 : 1;
    workgroups += wgs;
    longestBlocks = std::max(longestBlocks, std::min(chunk, blocks));
    const int64_t rowsComputed =
        g.rowGranule > 0 ? ceilDiv(r1 - r0, g.rowGranule) * g.rowGranule
                         : g.blockQ;
    computedElems += double(rowsComputed) * blocks * g.blockKv;
    computedRows += double(rowsComputed) * blocks;
    blockVisits += blocks;
    visible += vis;
  }
  computedElems *= units;
  computedRows *= units;
  blockVisits *= units;
  visible *= units;
  workgroups *= units;

  // FLOPs. The useful count is the project's convention (2·(D + Dv) per
  // visible pair, = 4·D at Dv = D); the matrix units compute every padded
  // row and every masked key of the blocks they visit.
  out.usefulFlops = 2.0 * double(D + dv) * visible;
  out.matrixFlops = 2.0 * double(D + dv) * computedElems;
  // One exp per computed score, plus the rescale factor per row and block.
  out.exps = computedElems + computedRows;
  // Element-wise f32 work per score: scale-and-subtract (an FMA, 2), row
  // max (1), row sum (1), conversion/packing (1); masks add a load and an
  // add or select (2), causal and tail edges a select on the diagonal
  // blocks (counted on all: 1), dropout a whole Philox-4x32-10 per score
  // (Dropout.cpp keys it by (b, h, i, j) and keeps one word): 10 rounds of
  // two 32x32->64 multiplies (4 IMADs), 2 three-input xors and 2 key adds,
  // 80 integer ops at half the f32 rate (64 INT32 lanes per SM and clock
  // against 128 FP32, CUDA C Programming Guide, cc 9.0): 160, plus the
  // compare and select (2). The
  // accumulator's rescale: Dv FMAs per row per block.
  double perScore = 5 + 1;
  if (p.mask != Mask::None)
    perScore += 2;
  if (p.dropout > 0)
    perScore += 2 * 80 + 2;
  out.vectorOps = perScore * computedElems + 2.0 * dv * computedRows;
  if (!gpu && p.dtype != DType::F32)
    // The cpu widens K and V to f32 for each tile that reads them.
    out.vectorOps += blockVisits * g.blockKv * double(D + dv);

  // Bytes. Rows are fetched in sectors (coalescing): a row of D elements
  // costs sectored(D·e) bytes.
  const double rowQ = sectored(D * e, d.sector), rowV = sectored(dv * e, d.sector);
  const double qBytes = double(p.batch) * p.headsQ * p.seqQ * rowQ;
  const double oBytes = double(p.batch) * p.headsQ * p.seqQ *
                        (rowV + (p.lse ? 4.0 : 0.0));
  const double kvRow = rowQ + rowV; // K row + V row
  const double kvPerGroup = double(p.seqKv) * kvRow;
  const double kvUnique = double(p.batch) * p.headsKv * kvPerGroup;
  // Every visited block is read by its workgroup (through L2 on the gpu).
  const double kvStreamed = blockVisits * g.blockKv * kvRow;
  double maskBytes = 0, maskUnique = 0;
  if (p.mask != Mask::None) {
    double mb = p.mask == Mask::Bool ? 1.0 : e;
    maskBytes = computedElems * mb;
    maskUnique = double(p.seqQ) * p.seqKv * mb *
                 (p.maskBroadcast ? 1.0 : double(p.batch) * p.headsQ);
  }
  // Split-KV partials: acc (Dv f32) + max + sum per row and split, written
  // by the split kernel and read back by the merge.
  double partials = 0;
  if (g.kvSplits > 1)
    partials = 2.0 * double(units) * tilesPerUnit * g.kvSplits * g.blockQ *
               (dv * 4.0 + 8.0);

  // Occupancy: workgroups resident per unit.
  int64_t perUnit = 1;
  if (gpu) {
    perUnit = d.maxBlocksPerUnit;
    if (g.sharedBytes > 0)
      perUnit = std::min<int64_t>(perUnit, d.smemPerUnit / (g.sharedBytes + 1024));
    perUnit = std::min<int64_t>(perUnit, d.regsPerUnit /
                                             (g.warps * 32 * g.maxRegisters));
    perUnit = std::min<int64_t>(perUnit, d.maxWarpsPerUnit / g.warps);
    if (perUnit < 1) {
      error = "model: the workgroup does not fit an SM (" +
              std::to_string(g.sharedBytes) + " B shared, " +
              std::to_string(g.warps) + " warps)";
      return false;
    }
  }
  const int64_t slots = d.units * perUnit;
  const int64_t inFlight = std::min(workgroups, slots);

  // L2 (or the cpu's last-level cache) reuse. The workgroups that read the
  // same K/V (a group's heads and query tiles, `readers` of each byte) are
  // adjacent in the launch order: those in flight together walk it in
  // step and share each fetch. When they span several rounds of the
  // in-flight window, a later round finds the K/V still cached only while
  // the K/V the window touches fits half the cache (the rest of it holds
  // Q, O and the other side's lines: the H100's L2 is two partitions);
  // the share that does not fit is fetched again each round.
  const double readers = double(packed ? tilesPerUnit : group * tilesPerUnit);
  const double kvGroups = double(p.batch) * p.headsKv;
  const double wgsPerGroup = double(workgroups) / kvGroups;
  const double rounds = std::max(1.0, wgsPerGroup / double(inFlight));
  const double groupsInFlight =
      std::clamp(double(inFlight) / wgsPerGroup, 1.0, kvGroups);
  const double workingSet = groupsInFlight * kvPerGroup;
  const double reuseCapacity = d.l2Bytes / 2;
  const double missShare =
      workingSet > reuseCapacity ? 1.0 - reuseCapacity / workingSet : 0.0;
  double kvDram = kvUnique * (1.0 + (std::min(rounds, readers) - 1.0) * missShare);
  kvDram = std::min(kvDram, std::max(kvUnique, kvStreamed));
  out.dramBytes = qBytes + oBytes + kvDram + maskUnique + partials;
  out.l2Bytes = qBytes + oBytes + kvStreamed + maskBytes + partials;
  if (gpu) {
    // Shared memory: cp.async writes each K/V block once; every warp reads
    // all of it (ldmatrix) for its rows; Q per block when re-read from
    // shared memory.
    double perBlock = g.blockKv * kvRow * (1.0 + g.warps);
    if (g.qFromSmem)
      perBlock += double(g.blockQ) * rowQ;
    out.smemBytes = blockVisits * perBlock;
  }

  // -- Times.
  std::vector<Term> terms;
  const bool matrix16 = p.dtype != DType::F32;
  const double mrate = matrix16 ? d.matrixFlops16 : d.matrixFlops32;
  // Latency hiding of the matrix units: the warps (x row tiles, their
  // independent mma chains) of the k workgroups an SM holds at once.
  const int64_t coResident =
      std::min<int64_t>(perUnit, std::max<int64_t>(1, ceilDiv(workgroups, d.units)));
  double issue = 1.0;
  if (gpu)
    issue = std::min(1.0, double(coResident * g.warps * g.rowTiles) /
                              d.warpsToSaturate);
  double cpuEff = 1.0;
  if (!gpu) {
    // Register-blocked micro-kernels lose to packing and edges as the
    // reduction dimension shrinks: k / (k + 16) for QK^T (k = D) and P·V
    // (k = block_kv), weighted by their FLOPs.
    double eq = double(D) / (D + 16.0), ev = double(g.blockKv) / (g.blockKv + 16.0);
    cpuEff = 1.0 / ((double(D) / (D + dv)) / eq + (double(dv) / (D + dv)) / ev);
  }
  const double tTensor = out.matrixFlops / (mrate * issue * cpuEff);
  double tSoft = out.exps / d.expRate + out.vectorOps / d.vectorFlops;
  // The overlap rule inside a unit: mma.sync, the softmax's SFU and ALU
  // work and the ldmatrix reads of shared memory issue from the same
  // warps, so the largest of them bounds the unit and a share `overlap` of
  // the others adds to it (1 on the cpu: one core's vector ports do all).
  const double tSmemUnit =
      gpu && d.smemBandwidth > 0 ? out.smemBytes / d.smemBandwidth : 0;
  const double unitMax = std::max({tTensor, tSoft, tSmemUnit});
  const double tIdeal =
      unitMax + d.overlap * (tTensor + tSoft + tSmemUnit - unitMax);
  // Wave quantization and the longest workgroup: the units finish when
  // their last workgroup does. A wave is what the units hold at once,
  // coResident workgroups each: `issue` already slows a unit that holds
  // fewer than perUnit (fewer warps to hide the matrix latency), so a
  // single partial wave is not idle slots on top of that, only the units
  // left with fewer than coResident (256 workgroups on 132 units: 2 each
  // but 8 with 1, utilization 0.97, not 256 / (132 x perUnit)).
  out.workgroups = workgroups;
  out.perUnit = perUnit;
  out.waves = ceilDiv(workgroups, slots);
  // The busiest unit runs ceil(workgroups / units) of them; once its
  // co-resident workgroups saturate the issue rate (issue = 1), more of
  // them resident do not make it faster, so the tail is that count, not
  // whole waves of perUnit slots (512 workgroups of 2 warps on 132 units,
  // 3 resident each: 4 per unit, not 2 waves of 396).
  const int64_t perUnitCount = ceilDiv(workgroups, d.units);
  out.utilization = double(workgroups) / (double(d.units) * perUnitCount);
  // The longest workgroup (a split chunk, causal's last tile) shares its
  // unit with coResident - 1 others: it alone needs its share of the
  // device's work times units x coResident.
  double perWgShare =
      computedElems > 0
          ? double(longestBlocks) * g.blockKv *
                std::min<double>(g.blockQ, computedRows / std::max(1.0, blockVisits)) /
                computedElems
          : 0;
  double tLongest = perWgShare * tIdeal * d.units * coResident;
  // ... and it is a chain: each of its key blocks waits for its K/V,
  // fetched stages - 1 blocks ahead, so a DRAM round trip per stages - 1
  // blocks adds to its compute, less what the unit's other resident
  // workgroups compute meanwhile (what bounds a decode split into few long
  // chunks, one per unit: B 1, Skv 128k, 8 splits of 256 blocks measured
  // 1.35 us per block on the H100, 0.66 of it compute).
  if (gpu)
    tLongest += double(longestBlocks) * d.dramLatency /
                double(std::max<int64_t>(1, g.stages - 1) * coResident);
  double tCompute = std::max(tIdeal / out.utilization, tLongest);
  // DRAM: the device's streaming bandwidth, or what the workgroups in
  // flight keep outstanding (Little's law: bytes in flight / latency).
  double inFlightBytes = gpu ? std::max<int64_t>(1, g.stages - 1) * g.blockKv * kvRow
                             : 64.0 * 64;
  double mlp = double(inFlight) * inFlightBytes / d.dramLatency;
  double dramRate = std::min(d.dramBandwidth, mlp);
  double tDram = out.dramBytes / dramRate;
  double tL2 = 0;
  if (gpu)
    tL2 = out.l2Bytes / d.l2Bandwidth;
  else if (kvPerGroup > double(d.smemPerUnit))
    // K/V of a head misses the core's L2: each tile streams it from the
    // L3 (or DRAM beyond the L3, counted in dramBytes).
    tL2 = kvStreamed * (1.0 - missShare) / d.l2Bandwidth;
  // Warm runs on the cpu: the timed runs repeat one launch on the same
  // tensors, so where everything the launch touches fits half the
  // last-level cache (the rest holds other lines; the VM shares the L3),
  // the next run finds it cached and nothing comes from DRAM: the stream
  // moves at the cache's bandwidth, still adding to the compute. Beyond
  // that, an LRU cache streamed through keeps nothing from one run to the
  // next (GQA decode Sq 1, Skv 4k, f32: 8 MB, 0.25 ms measured against
  // 0.56 predicted from DRAM; Skv 16k, 32 MB: as predicted from DRAM).
  double tWarm = 0;
  if (!gpu && qBytes + oBytes + kvUnique + maskUnique + partials <=
                  reuseCapacity) {
    tWarm = out.dramBytes / d.l2Bandwidth;
    out.l2Bytes += out.dramBytes;
    out.dramBytes = 0;
    tDram = 0;
  }
  const double tSmem = tSmemUnit;
  // Each workgroup's prologue (Q, then the first K/V stages) and epilogue
  // (O, lse) are DRAM round trips its unit hides only behind other
  // workgroups: one per wave is exposed (latency).
  // The prologue of a wave is also a burst: every slot fetches its Q tile
  // and the first stages - 1 K/V blocks before its first product, and the
  // epilogue writes its O tile, all at once, at the DRAM's bandwidth.
  double burst = 0;
  if (gpu) {
    const double perSlot = double(g.blockQ) * (rowQ + rowV) +
                           double(std::max<int64_t>(1, g.stages - 1)) * g.blockKv * kvRow;
    burst = double(std::min(workgroups, slots)) * perSlot / d.dramBandwidth;
  }
  const double tFill =
      gpu ? double(out.waves) * ((g.stages + 1) * d.dramLatency + burst) : 0;
  const int64_t kernels = g.kvSplits > 1 && gpu ? 2 : 1;
  double tLaunch = d.launchOverhead * kernels;

  terms.push_back({"tensor", tTensor});
  terms.push_back({"softmax", tSoft});
  terms.push_back({"occupancy", tCompute - tIdeal});
  terms.push_back({"latency", tFill});
  terms.push_back({"dram", tDram});
  terms.push_back({"l2", tL2 + tWarm});
  if (gpu)
    terms.push_back({"smem", tSmem});
  terms.push_back({"launch", tLaunch});

  tCompute += tFill;
  // A GPU overlaps its fetches with compute (cp.async stages, other
  // workgroups); a cpu core does not: each tile packs its K/V block
  // (loads that stall on the stream) before computing on it, so on the
  // cpu the DRAM stream adds to the compute (GQA decode Sq 16, Skv 32k,
  // 8 tiles streaming 32 MB each: 13.7 ms compute, ~9 ms of stream,
  // 26-30 ms measured).
  double body = gpu ? std::max({tCompute, tDram, tL2})
                    : std::max(tCompute + tDram + tWarm, tL2);
  out.seconds = tLaunch + body;
  // The bottleneck: the largest of the body's bounds, the compute one
  // named by its part; occupancy when quantization or a lone workgroup
  // more than doubles the compute; launch when it exceeds the body.
  // (On the cpu, where compute and stream add, the larger of the two.)
  if (tLaunch >= body)
    out.bottleneck = "launch";
  else if (tL2 >= body || tWarm > tCompute)
    out.bottleneck = "l2";
  else if (tCompute >= tDram)
    out.bottleneck = tCompute > 2 * tIdeal              ? "occupancy"
                     : unitMax == tTensor               ? "tensor"
                     : unitMax == tSoft                 ? "softmax"
                                                        : "smem";
  else
    out.bottleneck = "dram";
  out.terms = std::move(terms);
  out.tflops = out.seconds > 0 ? out.usefulFlops / out.seconds / 1e12 : 0;
  return true;
}

Geometry cudaGeometry(const Problem &p, int64_t kvSplits, int64_t smCount) {
  // Mirrors resolveNVGPUGeometry (ConfigureNVGPU.cpp) for sm_90a with the
  // default options, a dynamic-shape spec (seqKv dynamic), and the
  // dynamic-Sq alternatives (Sq = 1 packed decode, 2-16 the decode
  // geometry, else prefill); keep the two in step.
  Geometry g;
  const int64_t dv = p.valueDim > 0 ? p.valueDim : p.headDim;
  const bool small = std::max(p.headDim, dv) <= 64;
  const bool huge = std::max(p.headDim, dv) > 128;
  const bool heavy = p.mask != Mask::None || p.dropout > 0;
  const bool decode = p.seqQ <= 16;
  // The JIT (CUDACompiler.cpp) compiles a dynamic key length with split
  // support whatever kv_splits says: the options' count is max(2, kv_splits),
  // and the unsplit and split alternatives share that geometry.
  const int64_t optionSplits = std::max<int64_t>(2, kvSplits);
  const bool wide = !small && !huge && !heavy && !decode &&
                    !(p.causal && p.lse && optionSplits == 1);
  g.warps = p.causal || small || huge || wide ? 4 : 8;
  if (decode)
    g.warps = p.seqQ <= 16 && small ? 1 : 2;
  g.rowTiles = decode ? 1 : (g.warps == 4 && small && !heavy) || wide ? 2 : 1;
  g.blockQ = 16 * g.rowTiles * g.warps;
  g.packHeads = p.seqQ == 1 && !heavy;
  g.maxRegisters = g.warps == 4 && g.rowTiles == 1 && small && !heavy ? 168 : 255;
  g.stages = wide && !p.causal ? 3 : 2;
  g.blockKv = huge ? (p.causal || heavy || decode || optionSplits < 2 ? 16 : 32)
              : g.rowTiles > 1 && !small ? 32
                                         : 64;
  // The 2 <= Sq <= 16 alternative reads Q from shared memory under causal
  // at D or Dv > 64 (ConfigureNVGPU.cpp: held, ptxas spilled).
  g.qFromSmem = decode && p.seqQ > 1 && p.causal && std::max(p.headDim, dv) > 64;
  deriveCudaGeometry(p, g);
  // The runtime's split rule (cuda::chooseKvSplits, KernelMetadata.cpp):
  // as many splits as keep one wave of two workgroups per SM (floor of
  // 2 x SMs / tiles), each split at least 4 key blocks, at most
  // kMaxAutoSplits (64), never fewer than the key-chunk floor.
  const int64_t blocks = ceilDiv(p.seqKv, g.blockKv);
  const int64_t floor = ::attn::minKvSplits(p.seqKv, g.blockKv);
  int64_t n = 1;
  if (kvSplits >= 1) {
    n = kvSplits;
  } else {
    const int64_t group = p.headsQ / std::max<int64_t>(1, p.headsKv);
    int64_t tiles = g.packHeads && group > 1
                        ? p.batch * p.headsKv * ceilDiv(group, g.blockQ)
                        : p.batch * p.headsQ * ceilDiv(p.seqQ, g.blockQ);
    if (tiles < smCount)
      n = std::min<int64_t>({2 * smCount / tiles,
                             std::max<int64_t>(1, blocks / 4), 64});
  }
  g.kvSplits = blocks <= 1 ? 1 : std::max<int64_t>(1, std::min({std::max(n, floor), blocks}));
  return g;
}

void deriveCudaGeometry(const Problem &p, Geometry &g) {
  const int64_t dv = p.valueDim > 0 ? p.valueDim : p.headDim;
  const int64_t e = p.dtype == DType::F32 ? 4 : 2;
  const bool small = std::max(p.headDim, dv) <= 64;
  const bool huge = std::max(p.headDim, dv) > 128;
  const int64_t stage = g.blockKv * (p.headDim + dv) * e;
  const int64_t qBytes = g.blockQ * p.headDim * e;
  g.qFromSmem = g.qFromSmem || g.rowTiles > 1 || huge || (p.dropout > 0 && !small);
  g.sharedBytes =
      g.stages * stage + (qBytes <= stage && !g.qFromSmem ? 0 : qBytes);
}

Geometry cpuGeometry(const Problem &p, int64_t blockQ, int64_t blockKv,
                     int64_t kvSplits, int64_t threads) {
  // The cpu target's defaults (CPUCompiler.cpp: 64 on a host whose L2
  // holds a 64-block key step; callers pass the block a kernel used) and
  // mlir::attn::chooseKvSplits (TileSdpa.cpp) with `threads` workers.
  Geometry g;
  // attn-tile-sdpa's pack-decode-heads (::attn::packsDecodeHeads, attn/runtime/PackedDecode.h): a
  // GQA decode step's tile holds the query rows of a group's heads.
  g.packHeads = ::attn::packsDecodeHeads(
      p.headsQ, p.seqQ, p.headsKv, p.mask != Mask::None, p.causal);
  // 8-row register tiles of attn-cpu-vectorize-tiles
  // (bench/results/cpu-vectorize-tiles-2026-11-27: "the micro-kernel's
  // 8-row tiles").
  g.rowGranule = 8;
  g.blockQ = blockQ > 0 ? blockQ : 64;
  g.blockKv = blockKv > 0 ? blockKv : 64;
  const int64_t floor = ::attn::minKvSplits(p.seqKv, g.blockKv);
  if (kvSplits >= 1) {
    g.kvSplits = std::max(kvSplits, floor);
  } else {
    int64_t tiles =
        g.packHeads ? p.batch * p.headsKv *
                          ceilDiv(p.headsQ / p.headsKv, g.blockQ)
                    : p.batch * p.headsQ * ceilDiv(p.seqQ, g.blockQ);
    int64_t maxByWork = p.seqKv / 4 / g.blockKv;
    int64_t n = floor;
    if (tiles < threads && maxByWork >= 2)
      n = std::max(std::min(ceilDiv(threads, tiles), maxByWork), floor);
    g.kvSplits = n;
  }
  return g;
}

int64_t chooseKvSplitsByModel(const Problem &p, const Geometry &g,
                              const Device &d, int64_t maxSplits) {
  const int64_t blocks = ceilDiv(p.seqKv, g.blockKv);
  const int64_t floor = ::attn::minKvSplits(p.seqKv, g.blockKv);
  int64_t best = std::max<int64_t>(1, floor);
  double bestTime = std::numeric_limits<double>::infinity();
  for (int64_t n = 1; n <= std::min(maxSplits, blocks); n *= 2) {
    int64_t s = std::max(n, floor);
    Geometry c = g;
    c.kvSplits = s;
    Prediction pr;
    std::string err;
    // Prefer fewer splits unless more are at least 2% faster (the merge
    // and partials cost what the model cannot see exactly).
    if (predict(p, c, d, pr, err) && pr.seconds < bestTime * 0.98) {
      best = s;
      bestTime = pr.seconds;
    }
  }
  return best;
}

int64_t cpuKvSplits(const Problem &p, int64_t blockQ, int64_t blockKv,
                    int64_t threads) {
  const Device *table = findDevice("cpu");
  if (!table || threads < 1)
    return 1;
  Device d = *table;
  const double scale = double(threads) / double(d.units);
  d.units = threads;
  d.matrixFlops16 *= scale;
  d.matrixFlops32 *= scale;
  d.vectorFlops *= scale;
  d.expRate *= scale;
  Geometry g = cpuGeometry(p, blockQ, blockKv, /*kvSplits=*/0, threads);
  return chooseKvSplitsByModel(p, g, d);
}

} // namespace attn::model
