//===- AttnToNVGPU.h - attn.sdpa to a tensor-core gpu.launch ---*- C++ -*-===//
#ifndef ATTN_CONVERSION_ATTNTONVGPU_ATTNTONVGPU_H
#define ATTN_CONVERSION_ATTNTONVGPU_ATTNTONVGPU_H

#include "mlir/Pass/Pass.h"

#include <cstdint>
#include <memory>
#include <string>

namespace mlir::attn {

/// Keys per K/V tile (one stage of the shared-memory ring) unless the
/// geometry picks another (NVGPUGeometry::blockKv).
constexpr int64_t kNVGPUBlockKv = 64;

struct ConvertAttnToNVGPUOptions {
  /// Warps per workgroup, 16 query rows each: 1, 2, 4 or 8; 0 = see
  /// resolveNVGPUGeometry.
  int64_t warps = 0;
  /// K/V tiles in flight in the cp.async ring (2 to 4); 0 = see
  /// resolveNVGPUGeometry (3 for the non-causal two-tile kernels at D, Dv
  /// in (64, 128], else 2).
  int64_t stages = 0;
  /// 1: one kernel. N > 1: the split-KV pair of SplitKV.h (partial kernel
  /// over Hq x chunks, merge kernel), launched by the host code with N
  /// chunks; the kernels take any count from the workspace's extent.
  int64_t kvSplits = 1;
  /// m16 tiles of query rows per warp: 1 or 2 (32 rows: each K and V
  /// fragment a warp loads feeds twice the MMAs); 0 = 1.
  int64_t rowTiles = 0;
  /// Keys per K/V tile: 16, 32 or 64; 0 = see resolveNVGPUGeometry.
  int64_t blockKv = 0;
  /// The target (sm_80, sm_90, sm_90a, ...): some default geometries
  /// depend on it.
  std::string chip = "sm_90a";
};

/// The tensor-core kernel's geometry for one op.
struct NVGPUGeometry {
  int64_t warps;       // 16 rowTiles query rows each
  int64_t rowTiles;    // m16 row tiles per warp
  int64_t blockQ;      // 16 * rowTiles * warps
  int64_t stages;      // K/V ring depth
  int64_t blockKv;     // keys per K/V tile (one ring stage)
  /// Q stays in shared memory (its own space after the ring) and its
  /// fragments are read per key block instead of held in registers: with
  /// two row tiles, 32 registers per thread fewer across the key loop.
  bool qFromSmem = false;
  int64_t sharedBytes; // dynamic shared memory: the ring (+ Q unless it
                       // aliases the last stage)
  /// Decode (a static query length of 1, no mask): a workgroup takes the
  /// Hq / Hkv query heads of one KV head as its rows, so K and V are read
  /// once per GQA group instead of once per query head. Grid
  /// (ceildiv(Hq / Hkv, blockQ), Hkv, B); causal is the same as not then
  /// (the one query row sees every key).
  bool packHeads = false;
  /// Registers per thread the kernel asks ptxas for (0: the default of
  /// attn-nvvm-max-registers, what one workgroup can have). Recorded as
  /// kNVVMMaxRegistersAttr in the kernel body.
  int64_t maxRegisters = 0;
  /// Causal: the bytes of K and V (all heads of a group of workgroups that
  /// start together, heaviest query blocks first) meant to stay in L2.
  int64_t causalGroupBytes = 0;
};

/// Attribute on an op of a tensor-core kernel's body (the dynamic
/// shared-memory get_global, which outlining keeps) that tells
/// attn-nvvm-max-registers the kernel's register budget: gpu.launch's own
/// attributes do not survive gpu-kernel-outlining.
constexpr llvm::StringLiteral kNVVMMaxRegistersAttr = "attn.nvvm_max_registers";

/// The geometry convert-attn-to-nvgpu uses for `options` and this op (head
/// dimensions, element size, causal, query and key lengths, mask, dropout,
/// lse). Default: 4 warps of two m16 row tiles (128 query rows, Q read
/// from shared memory per key block) for D, Dv <= 128 without a mask or
/// dropout, over 64-key blocks at D, Dv <= 64 and 32-key blocks above
/// (causal at D > 64 only with a dynamic key length); one row tile
/// otherwise: 4 warps for causal and for D, Dv <= 64 (asking for 168
/// registers, so that three workgroups fit an SM), 8 for the rest, and 4
/// warps over 16- or 32-key blocks for D or Dv in (128, 256]. A static
/// query length `seqQ` of at most 32 takes 2 warps, of at most 16 with D,
/// Dv <= 64 1 warp: decode would otherwise run 48 or more masked rows per
/// workgroup. Decode (seqQ == 1) packs a GQA group's query heads into the
/// rows unless there is a mask or dropout (whose counter needs each row's
/// real head). The reasons and measurements are at the definition and in
/// docs/NVIDIA.md.
NVGPUGeometry resolveNVGPUGeometry(const ConvertAttnToNVGPUOptions &options,
                                   int64_t headDim, int64_t valueDim,
                                   int64_t elementBytes, bool causal,
                                   int64_t seqQ = -1, bool masked = false,
                                   bool dropout = false, int64_t seqKv = -1,
                                   bool lse = false);

/// The tensor-core kernel's key block for a requested `blockKv` (a
/// pipeline's or spec's block_kv, which the generic kernel takes as it
/// is): 16, 32 and 64 stand, anything else (0 included) leaves the choice
/// to resolveNVGPUGeometry.
inline int64_t tensorCoreBlockKv(int64_t blockKv) {
  return blockKv == 16 || blockKv == 32 || blockKv == 64 ? blockKv : 0;
}

/// Global-memory alignment (bytes) the tensor-core kernel needs for the
/// rows of q, k and v: its cp.async copies move 16-byte chunks.
constexpr int64_t kNVGPUGlobalAlignment = 16;

/// convert-attn-to-nvgpu: rewrites each attn.sdpa in destination-passing
/// form that the tensor-core kernel supports (f16 or bf16, D and Dv
/// multiples of 16 up to 256, an optional mask, optional dropout) into a
/// gpu.launch using nvgpu.device_async_copy, nvgpu.ldmatrix and mma.sync;
/// other ops are left for convert-attn-to-gpu.
std::unique_ptr<Pass>
createConvertAttnToNVGPUPass(const ConvertAttnToNVGPUOptions &options = {});

void registerConvertAttnToNVGPUPass();

} // namespace mlir::attn

#endif
