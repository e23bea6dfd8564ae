//===- Dropout.h - the Philox-4x32-10 dropout decision in C++ ----*- C++ -*-===//
//
// Bit-identical to mlir::attn::buildDropoutKeep
// (lib/Dialect/Attn/Transforms/Dropout.cpp): every compiled kernel must drop
// exactly the elements this drops.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_REFERENCE_DROPOUT_H
#define ATTN_REFERENCE_DROPOUT_H

#include <array>
#include <cstdint>

namespace attn::reference {

/// Philox-4x32 with 10 rounds on `counter` under `key`.
std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> counter,
                                      std::array<uint32_t, 2> key);

/// ceil(p * 2^32): a word >= this keeps its element.
uint64_t dropoutThreshold(double p);

/// Whether element (b, h, i, j) of the probabilities survives dropout with
/// probability p under `seed`: key = (seed lo, seed hi), counter =
/// (j, i, h, b), keep iff the first output word >= ceil(p * 2^32).
bool dropoutKeep(uint64_t seed, uint32_t b, uint32_t h, uint32_t i,
                 uint32_t j, double p);

} // namespace attn::reference

#endif // ATTN_REFERENCE_DROPOUT_H
