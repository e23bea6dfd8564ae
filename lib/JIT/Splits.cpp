//===- Splits.cpp - split-KV counts clamped to the keys' blocks ------------===//
//
// A spec's kv_splits clamped to what a key length can use, so that no
// split workspace is sized beyond the keys' blocks. (The automatic rule,
// chooseKvSplits, guards its own inputs.)
//
//===----------------------------------------------------------------------===//
#include "attn/JIT/JIT.h"
#include "attn/runtime/Checked.h"

#include <algorithm>

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
