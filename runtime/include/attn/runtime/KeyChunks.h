//===- KeyChunks.h - the longest key run one f32 running state sums -------===//
//
// The FlashAttention state (running max, sum, accumulator) is f32
// (docs/Semantics.md). Past some 10^5 keys its sums drift beyond the f32
// tolerance, and at 2^24 terms of similar size they stop growing: a long
// key sequence is therefore always cut into split-KV chunks of at most
// kMaxChunkKeys keys, merged with compensated sums (attn.merge_partials).
// The floor below is the one rule every compiler pass (attn-tile-sdpa) and
// every runtime that picks a split count per launch applies. Header-only,
// plain C++: the runtime library links no MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_KEYCHUNKS_H
#define ATTN_RUNTIME_KEYCHUNKS_H

#include <algorithm>
#include <cstdint>

namespace attn {

/// The most keys one chunk sums into its running state: 2^16 keep a
/// chunk's rounding at the level of an unsplit 64k-key row on every
/// target (docs/Semantics.md, "Long key sequences").
inline constexpr int64_t kMaxChunkKeys = int64_t(1) << 16;

/// The fewest chunks of splitKeyBlocks' chunking (contiguous runs of
/// ceil(blocks / N) key blocks) that keep every chunk within
/// kMaxChunkKeys keys, or within one block where blockKv is larger:
/// ceil(blocks / max(1, kMaxChunkKeys / blockKv)), blocks = ceil(seqKv /
/// blockKv). 1 for sizes below 1.
inline int64_t minKvSplits(int64_t seqKv, int64_t blockKv) {
  if (seqKv <= 0 || blockKv <= 0)
    return 1;
  int64_t blocks = (seqKv - 1) / blockKv + 1;
  int64_t perChunk = std::max<int64_t>(1, kMaxChunkKeys / blockKv);
  return (blocks - 1) / perChunk + 1;
}

} // namespace attn

#endif // ATTN_RUNTIME_KEYCHUNKS_H
