//===- PerfModel.h - a mechanistic time model of attn's attention kernels -===//
//
// For an attention problem, the kernel geometry a target's compiler chose
// and a device description, predicts the kernel's time and names what
// bounds it (docs/PerformanceModel.md has the equations, the device
// tables with their sources and the measured errors). Plain C++: no MLIR,
// so the runtime's tools, benchmarks and the JIT can all evaluate it.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_MODEL_PERFMODEL_H
#define ATTN_MODEL_PERFMODEL_H

#include "attn/runtime/attn.h"

#include <cstdint>
#include <string>
#include <vector>

namespace attn::model {

enum class DType { F16, BF16, F32 };
enum class Mask { None, Bool, Additive };

/// One attn.sdpa launch, every extent static (a launch's).
struct Problem {
  int64_t batch = 1, headsQ = 1, headsKv = 1, seqQ = 1, seqKv = 1;
  int64_t headDim = 64, valueDim = 0; // valueDim 0: = headDim
  DType dtype = DType::F32;
  bool causal = false;
  Mask mask = Mask::None;
  bool maskBroadcast = true; // one mask for every (b, h)
  double dropout = 0.0;
  bool lse = false;
};

/// The kernel geometry as a target's compiler chose it.
struct Geometry {
  int64_t blockQ = 64, blockKv = 64;
  int64_t warps = 1;      // gpu: warps per workgroup; cpu: 1 (a thread)
  int64_t rowTiles = 1;   // gpu: m16 row tiles per warp (ILP)
  int64_t stages = 1;     // gpu: K/V stages of the cp.async ring
  int64_t kvSplits = 1;   // key chunks (split-KV), merged by a second pass
  int64_t maxRegisters = 255; // gpu: per thread, occupancy
  int64_t sharedBytes = 0;    // gpu: per workgroup
  bool packHeads = false; // GQA: one tile holds the query rows of a group
  bool causalSkip = true; // blocks above the diagonal are never visited
  bool qFromSmem = false; // gpu: Q fragments re-read from shared memory
  // Rows the matrix code computes at once: a tile of r live rows costs
  // roundup(r, rowGranule) rows (cpu: the micro-kernel's 8-row register
  // tiles); 0: the whole block_q, live or not (gpu: every warp's m16 tiles).
  int64_t rowGranule = 0;
};

enum class DeviceKind { GPU, CPU };

/// A device table; every number is stated with its source in
/// PerfModel.cpp and docs/PerformanceModel.md.
struct Device {
  std::string name;
  DeviceKind kind = DeviceKind::GPU;
  int64_t units = 1;          // SMs or cores
  double matrixFlops16 = 0;   // FLOP/s the kernel's f16/bf16 contractions reach at best
  double matrixFlops32 = 0;   // same, f32 contractions (gpu: SIMT FMA; cpu: FMA)
  double vectorFlops = 0;     // f32 element-wise FLOP/s (FMA = 2)
  double expRate = 0;         // exp2 per second (gpu: SFU; cpu: vector poly)
  double dramBandwidth = 0;   // B/s a streaming read+write reaches
  double l2Bandwidth = 0;     // B/s
  double l2Bytes = 0;         // last-level cache before DRAM
  double smemBandwidth = 0;   // B/s over all units (gpu shared memory; cpu L1)
  int64_t smemPerUnit = 0;    // bytes a unit can give its workgroups
  int64_t regsPerUnit = 0;    // 32-bit registers per SM
  int64_t maxWarpsPerUnit = 0;
  int64_t maxBlocksPerUnit = 1;
  int64_t warpsToSaturate = 1; // resident warps (x row tiles) an SM needs for full mma issue
  double dramLatency = 0;     // s, a loaded DRAM round trip (Little's law)
  double launchOverhead = 0;  // s per kernel launch as the benchmark sees it
  double overlap = 0;         // share of min(tensor, softmax) that does not overlap
  int64_t sector = 32;        // bytes of the smallest DRAM/L2 transaction
};

/// One bounding resource and the time it alone would take.
struct Term {
  std::string name; // tensor, softmax, dram, l2, smem, occupancy, launch
  double seconds = 0;
};

struct Prediction {
  double seconds = 0;
  double tflops = 0;          // useful FLOPs (4·Σvisible·D convention) / time
  std::string bottleneck;
  std::vector<Term> terms;    // every term, the bottleneck among them
  // What the terms were computed from.
  double usefulFlops = 0, matrixFlops = 0, exps = 0, vectorOps = 0;
  double dramBytes = 0, l2Bytes = 0, smemBytes = 0;
  int64_t workgroups = 0, perUnit = 0, waves = 0;
  double utilization = 0;     // workgroups / (units * the busiest unit's count)
};

/// The prediction, or an error message (a problem or a geometry that no
/// kernel could have: sizes below 1, Hq % Hkv != 0, ...).
bool predict(const Problem &p, const Geometry &g, const Device &d,
             Prediction &out, std::string &error);

/// The device tables: "h100", "h200", "cpu" (this project's 2-core VM,
/// measured by bench/model/cpu_peaks.c). Null for an unknown name.
const Device *findDevice(const std::string &name);
std::vector<std::string> deviceNames();

/// The geometry attn's tensor-core kernel gets on sm_90 with the default
/// options: a mirror of resolveNVGPUGeometry (ConfigureNVGPU.cpp) and of
/// the runtime's split rule (cuda::chooseKvSplits) for a dynamic-shape
/// spec. `kvSplits` 0 is automatic, as in attn_spec.
Geometry cudaGeometry(const Problem &p, int64_t kvSplits, int64_t smCount);

/// Recomputes what follows from a cuda geometry's choices (Q from shared
/// memory, shared bytes) after some were overridden.
void deriveCudaGeometry(const Problem &p, Geometry &g);

/// The cpu target's geometry: 64 x 64 tiles unless given, the split rule of
/// mlir::attn::chooseKvSplits with `threads` workers.
Geometry cpuGeometry(const Problem &p, int64_t blockQ, int64_t blockKv,
                     int64_t kvSplits, int64_t threads);

/// The split count among 1, 2, 4, ... up to the key blocks (at most
/// maxSplits) with the least predicted time; at least the key-chunk floor.
int64_t chooseKvSplitsByModel(const Problem &p, const Geometry &g,
                              const Device &d, int64_t maxSplits = 64);

/// The cpu target's automatic split count (kv_splits 0) for `threads`
/// workers: chooseKvSplitsByModel over cpuGeometry's tiles, on the cpu
/// table with its per-core rates times `threads`. The cpu JIT uses it in
/// place of mlir::attn::chooseKvSplits, which splits only when the tiles
/// are fewer than the workers: with 3 or 5 tiles on 2 cores the model's
/// 2 splits measured 13-30% faster (docs/PerformanceModel.md).
int64_t cpuKvSplits(const Problem &p, int64_t blockQ, int64_t blockKv,
                    int64_t threads);

/// The model's element type and mask kind of the runtime's (attn.h).
DType modelDType(attn_dtype dtype);
Mask modelMask(attn_mask_kind mask);

/// Parses "f16"/"bf16"/"f32"; false for anything else.
bool parseDType(const std::string &s, DType &out);

} // namespace attn::model

#endif // ATTN_MODEL_PERFMODEL_H
