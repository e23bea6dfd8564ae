//===- Dropout.cpp - Philox-4x32-10 keep decision, as the compiler builds it -===//
#include "attn/reference/Dropout.h"

#include <cmath>

namespace attn::reference {

namespace {
constexpr uint32_t kM0 = 0xD2511F53u;
constexpr uint32_t kM1 = 0xCD9E8D57u;
constexpr uint32_t kW0 = 0x9E3779B9u;
constexpr uint32_t kW1 = 0xBB67AE85u;
constexpr int kRounds = 10;
} // namespace

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> c,
                                      std::array<uint32_t, 2> key) {
  uint32_t k0 = key[0], k1 = key[1];
  for (int r = 0; r < kRounds; ++r) {
    uint64_t p0 = static_cast<uint64_t>(kM0) * c[0];
    uint64_t p1 = static_cast<uint64_t>(kM1) * c[2];
    uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c = {hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0};
    k0 += kW0;
    k1 += kW1;
  }
  return c;
}

uint64_t dropoutThreshold(double p) {
  return static_cast<uint64_t>(std::ceil(std::ldexp(p, 32)));
}

bool dropoutKeep(uint64_t seed, uint32_t b, uint32_t h, uint32_t i, uint32_t j,
                 double p) {
  auto word = philox4x32_10(
      {j, i, h, b},
      {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)})[0];
  return static_cast<uint64_t>(word) >= dropoutThreshold(p);
}

} // namespace attn::reference
