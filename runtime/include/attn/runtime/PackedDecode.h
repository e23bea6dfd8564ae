//===- PackedDecode.h - which decode steps pack a GQA group's rows --------===//
//
// A decode step (a few query rows per head) with grouped-query attention
// reads each key/value head once per query head unless the rows of a
// group's query heads share a tile: attn-tile-sdpa's pack-decode-heads
// (the cpu pipeline) tiles them as one [group x Sq] block of rows per KV
// head. The rule is shared by the pass, the cpu JIT (which picks a packed
// variant per launch for dynamic shapes) and the performance model's
// mirror of the cpu geometry. Header-only, plain C++ (the model and the
// runtime link no MLIR).
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_PACKEDDECODE_H
#define ATTN_RUNTIME_PACKEDDECODE_H

#include <cstdint>

namespace attn {

/// The longest query length whose GQA group packs into a tile's rows
/// (decode and speculative-decode steps).
inline constexpr int64_t kMaxPackedSeqQ = 16;

/// Whether a step packs: `headsQ` a multiple larger than 1 of `headsKv`,
/// no mask (a mask's rows would have to be gathered per head), and a
/// static query length of 1, or of 2 to kMaxPackedSeqQ without causal (the
/// rows of a group's heads would each need their own diagonal). Dynamic
/// extents (negative) never pack.
inline bool packsDecodeHeads(int64_t headsQ, int64_t seqQ, int64_t headsKv,
                             bool masked, bool causal) {
  const bool rows =
      seqQ == 1 || (!causal && seqQ >= 2 && seqQ <= kMaxPackedSeqQ);
  return !masked && rows && headsKv > 0 && headsQ > headsKv &&
         headsQ % headsKv == 0;
}

} // namespace attn

#endif // ATTN_RUNTIME_PACKEDDECODE_H
