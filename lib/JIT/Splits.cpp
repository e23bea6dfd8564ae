//===- Splits.cpp - split-KV counts from sizes, overflow-safe --------------===//
//
// The JIT's compile- and launch-time callers of the split-KV rule go
// through these, so that no size a caller passes (a launch's shapes, a
// spec's block sizes) can overflow the rule's products or size a split
// workspace beyond the keys' blocks.
//
//===----------------------------------------------------------------------===//
#include "attn/Dialect/Attn/Transforms/Transforms.h"
#include "attn/JIT/JIT.h"
#include "attn/runtime/Checked.h"

#include <algorithm>

int64_t mlir::attn::jit::guardedAutoKvSplits(int64_t batch, int64_t headsQ,
                                             int64_t seqQ, int64_t seqKv,
                                             int64_t blockQ, int64_t blockKv,
                                             int64_t parallelism) {
  if (batch < 1 || headsQ < 1 || seqQ < 1 || seqKv < 1 || blockQ < 1 ||
      blockKv < 1 || parallelism < 1)
    return 1;
  // The rule splits only into chunks of at least 4 key blocks: fewer than
  // 8 blocks never split, and below that bound 4 * blockKv <= seqKv fits.
  if (seqKv / 8 < blockKv)
    return 1;
  int64_t tiles;
  if (!::attn::checkedProduct(
          {batch, headsQ, ::attn::ceilDiv(seqQ, blockQ)}, tiles) ||
      tiles >= parallelism)
    return 1;
  int64_t n = chooseKvSplits(batch, headsQ, seqQ, seqKv, blockQ, blockKv,
                             parallelism);
  return std::clamp<int64_t>(n, 1, ::attn::ceilDiv(seqKv, blockKv));
}

int64_t mlir::attn::jit::clampKvSplits(int64_t requested, int64_t seqKv,
                                       int64_t blockKv, bool powerOfTwo) {
  if (requested <= 1 || seqKv < 1 || blockKv < 1)
    return std::max<int64_t>(requested, 1);
  int64_t blocks = ::attn::ceilDiv(seqKv, blockKv);
  if (requested <= blocks)
    return requested;
  if (!powerOfTwo)
    return blocks;
  int64_t p = 1;
  while (p <= blocks / 2)
    p *= 2;
  return p;
}
