//===- TilesToSIMT.h - the SIMT targets (a thread or subgroup per row) -*- C++ -*-===//
//
// The NVIDIA generic kernel and the Vulkan portable kernels in two passes:
// attn-configure-simt picks, per attn.sdpa, the tiling and the mapping of a
// tile onto a workgroup (#attn.tiling with an #attn.simt mapping), and
// convert-attn-tiles-to-simt maps the tiled form that attn-tile-sdpa and
// attn-decompose-online-attention produce onto invocations: a row of each
// tile per thread, or per subgroup of `lanes` invocations.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_TILESTOSIMT_TILESTOSIMT_H
#define ATTN_CONVERSION_TILESTOSIMT_TILESTOSIMT_H

#include <cstdint>

namespace mlir::attn {

/// What attn-configure-simt may be told.
struct ConfigureSIMTOptions {
  /// Query rows per workgroup (one thread, or one subgroup, each).
  int64_t blockQ = 64;
  /// Keys per K/V tile in workgroup memory; 0 = simtBlockKv's choice.
  int64_t blockKv = 0;
  /// Workgroup memory the K and V tiles may use (bytes).
  int64_t sharedMemoryBytes = 48 * 1024;
  /// Invocations per row: 1, or a power of two up to 128 (a subgroup of
  /// exactly that many invocations per row).
  int64_t lanes = 1;
  /// Loops over the head dimensions unrolled (see #attn.simt).
  bool unroll = false;
  /// 1: one kernel. N > 1: split-KV with N chunks.
  int64_t kvSplits = 1;
  /// With kvSplits > 1: a runtime chooses the chunk count per launch (the
  /// op is cloned into an unsplit and a split alternative); otherwise N is
  /// baked into the kernels.
  bool launchSplits = false;
  /// N > 0: the cooperative-matrix mapping (#attn.coop_matrix), a
  /// workgroup of one subgroup of N invocations; block_q, block_kv, D and
  /// Dv multiples of 16, block_q at most N. 0: the SIMT mapping.
  int64_t coopMatrix = 0;
  /// With coopMatrix: the products as scalar loops over the same tiles.
  bool scalarProducts = false;
  /// With coopMatrix: Q and the accumulator in cooperative-matrix
  /// registers, a 16-row strip per subgroup (#attn.coop_matrix registers);
  /// block_q x lanes = coopMatrix.
  bool coopRegisters = false;
  /// With coopRegisters: 16-row strips per subgroup (1, 2 or 4; a
  /// subgroup of 16 x lanes x coopStrips invocations).
  int64_t coopStrips = 1;
  /// A GQA decode step of static shapes tiled with pack_heads
  /// (simtPacksDecodeHeads).
  bool packDecodeHeads = false;
};

/// Whether attn-configure-simt{pack-decode-heads} packs a step: one query
/// row (Sq = 1) of Hq > Hkv heads, Hkv dividing Hq, without a mask or
/// dropout (dropout's counter needs each row's own head and position); a
/// dynamic extent (negative) never packs. The JIT sizes its grid with it.
bool simtPacksDecodeHeads(int64_t headsQ, int64_t seqQ, int64_t headsKv,
                          bool masked, bool dropout);

/// Workgroup memory of the cooperative-matrix mapping for tiles of `br`
/// rows and `bc` keys, head dims `d` and `dv`, 16-bit elements: S (f32), P
/// (16-bit), the accumulator (f32), the Q, K and V tiles (16-bit), each row
/// padded (S and the accumulator by 4 elements, the others by 8) so that
/// the rows of a matrix load do not fall into the same banks. With
/// `registers` (the accumulator in cooperative-matrix registers, Q's
/// matrices too): no accumulator tile (the accumulator reaches S's tile
/// after the key loops, bc columns at a time), no Q tile (Q is staged
/// once into K's tile, which has max(br, bc) rows for it), and a [br, 16]
/// f32 tile of the rows' rescale factors.
int64_t coopMatrixSharedBytes(int64_t br, int64_t bc, int64_t d, int64_t dv,
                              bool registers = false);
/// The padded row length (elements) of each of those tiles.
constexpr int64_t kCoopMatrixPadF32 = 4, kCoopMatrixPad16 = 8;

/// The key block for `options` when blockKv is 0: the largest of 64, 32,
/// 16 and 8 whose K and V tiles (head dims D and Dv) fit the workgroup
/// memory budget (8 when none does; the pass then reports the overflow);
/// with coopMatrix, the largest of 64, 32 and 16 whose tiles
/// (coopMatrixSharedBytes, with coopRegisters) fit it (16 when none does);
/// with coopRegisters, 32 where it fits, and 16 for one query row
/// (`seqQ` 1: decode), as measured fastest on the H200's Vulkan driver
/// (bench/results/vulkan-h200-four-strips-2026-12-02).
int64_t simtBlockKv(const ConfigureSIMTOptions &options, int64_t headDim,
                    int64_t valueDim, int64_t elementBytes,
                    int64_t seqQ = -1);

} // namespace mlir::attn

#endif
