//===- TilesToNVGPU.h - the tensor-core (mma.sync) target ------*- C++ -*-===//
//
// The NVIDIA tensor-core target in two passes: attn-configure-nvgpu picks,
// per attn.sdpa, the tiling and the mapping of tiles onto a workgroup
// (#attn.tiling with an #attn.mma_sync mapping: the measured geometry
// table below), and convert-attn-tiles-to-nvgpu maps the tiled form that
// attn-tile-sdpa and attn-decompose-online-attention produce onto mma.sync
// fragments, cp.async staging and a grid. docs/NVIDIA.md describes both.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_TILESTONVGPU_TILESTONVGPU_H
#define ATTN_CONVERSION_TILESTONVGPU_TILESTONVGPU_H

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace mlir::attn {

class SdpaOp;
class TilingAttr;

/// Keys per K/V tile (one stage of the shared-memory ring) unless the
/// geometry picks another (NVGPUGeometry::blockKv).
constexpr int64_t kNVGPUBlockKv = 64;

/// A spec with a dynamic query length gets, besides the Sq = 1 alternative,
/// one for 2 <= Sq <= this (speculative decoding's few query positions)
/// with the geometry of a static Sq of this length (attn-configure-nvgpu).
constexpr int64_t kDecodeAlternativeMaxSq = 16;

/// What attn-configure-nvgpu may be told; 0 leaves a choice to the table.
struct ConfigureNVGPUOptions {
  /// Warps per workgroup, 16 query rows per row tile each: 1, 2, 4 or 8.
  int64_t warps = 0;
  /// K/V tiles in flight in the cp.async ring (2 to 4).
  int64_t stages = 0;
  /// 1: one kernel. N > 1: split-KV (partial and merge kernels) whose
  /// chunk count a runtime chooses per launch (N: the host default).
  int64_t kvSplits = 1;
  /// m16 tiles of query rows per warp: 1 or 2.
  int64_t rowTiles = 0;
  /// Keys per K/V tile: 16, 32 or 64.
  int64_t blockKv = 0;
  /// The target (sm_80, sm_90, sm_90a, ...): some geometries depend on it.
  std::string chip = "sm_90a";
  /// Read Q's fragments from shared memory per key block even where the
  /// table would hold them in registers.
  bool qFromSmem = false;
};

/// The tensor-core kernel's geometry for one op.
struct NVGPUGeometry {
  int64_t warps;       // 16 rowTiles query rows each
  int64_t rowTiles;    // m16 row tiles per warp
  int64_t blockQ;      // 16 * rowTiles * warps
  int64_t stages;      // K/V ring depth
  int64_t blockKv;     // keys per K/V tile (one ring stage)
  /// Q's fragments are read from shared memory per key block instead of
  /// held in registers (two row tiles, or D > 128).
  bool qFromSmem = false;
  int64_t sharedBytes; // dynamic shared memory: the ring (+ Q unless it
                       // aliases the last stage)
  /// Decode (a static query length of 1, no mask): a tile's rows are the
  /// query heads of one GQA group, so K and V are read once per group.
  bool packHeads = false;
  /// Registers per thread asked of ptxas (0: what one workgroup can have).
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

/// The geometry attn-configure-nvgpu uses for `options` and an op's head
/// dimensions, element size, causal, query and key lengths (-1 dynamic),
/// mask, dropout and lse. The measured table, with its reasons, is at the
/// definition (ConfigureNVGPU.cpp) and in docs/NVIDIA.md.
NVGPUGeometry resolveNVGPUGeometry(const ConfigureNVGPUOptions &options,
                                   int64_t headDim, int64_t valueDim,
                                   int64_t elementBytes, bool causal,
                                   int64_t seqQ = -1, bool masked = false,
                                   bool dropout = false, int64_t seqKv = -1,
                                   bool lse = false);

/// Whether the tensor-core kernel handles an op: f16 or bf16, D and Dv
/// multiples of 16 up to 256.
bool tensorCoreSupports(Type elementType, int64_t headDim, int64_t valueDim);

/// The #attn.tiling attn-configure-nvgpu sets for `geometry` (static
/// tiles, the lazy rescale, P in the element type, the heaviest-first
/// order for causal grids, the #attn.mma_sync mapping).
TilingAttr nvgpuTiling(MLIRContext *ctx, const NVGPUGeometry &geometry,
                       Type elementType, bool causal, int64_t kvSplits);

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

/// How far (log2 units) a row's running max may lag before the
/// tensor-core kernel rescales (the tiling's rescale_threshold): P stays
/// below 2^8, which f16 and bf16 hold with their full precision.
constexpr int64_t kNVGPURescaleThreshold = 8;

} // namespace mlir::attn

#endif
