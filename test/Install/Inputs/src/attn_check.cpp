// An external C++ program against an installed attn (test/Install): the
// same check as attn_check.c through the C++ wrapper, attn.hpp (RAII,
// exceptions), non-causal with the log-sum-exp output too. Exits non-zero
// on any failure or mismatch.
#include <attn/runtime/attn.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {
constexpr int64_t B = 2, H = 1, SQ = 4, SKV = 6, D = 8;

float next(uint32_t &seed) {
  seed = seed * 1664525u + 1013904223u;
  return static_cast<float>(seed >> 8) / static_cast<float>(1u << 24) * 2 - 1;
}
} // namespace

int main() {
  std::printf("attn library %s, header %s\n", attn_version(),
              ATTN_VERSION_STRING);
  if (std::strcmp(attn_version(), ATTN_VERSION_STRING) != 0) {
    std::fprintf(stderr, "FAIL: library and header versions differ\n");
    return 1;
  }
  std::vector<float> q(B * H * SQ * D), k(B * H * SKV * D), v(k.size()),
      out(q.size(), NAN), lse(B * H * SQ, NAN);
  uint32_t seed = 7;
  for (float &x : q)
    x = next(seed);
  for (size_t i = 0; i < k.size(); ++i) {
    k[i] = next(seed);
    v[i] = next(seed);
  }
  try {
    attn::Context ctx;
    std::string why;
    if (!ctx.available(ATTN_TARGET_CPU, &why)) {
      std::fprintf(stderr, "FAIL: cpu target unavailable: %s\n", why.c_str());
      return 1;
    }
    attn_spec spec;
    attn_spec_init(&spec);
    spec.dtype = ATTN_DTYPE_F32;
    spec.head_dim = D; // every other dimension dynamic: taken at launch
    spec.return_lse = 1;
    attn::Kernel kernel = ctx.compile(spec, ATTN_TARGET_CPU);
    attn_launch_args args{};
    args.q = attn::makeTensor(q.data(), {B, H, SQ, D});
    args.k = attn::makeTensor(k.data(), {B, H, SKV, D});
    args.v = attn::makeTensor(v.data(), {B, H, SKV, D});
    args.out = attn::makeTensor(out.data(), {B, H, SQ, D});
    args.lse = attn::makeTensor(lse.data(), {B, H, SQ, 1});
    kernel.launch(args);
  } catch (const attn::Error &e) {
    std::fprintf(stderr, "FAIL: %s: %s\n", attn_status_string(e.status()),
                 e.what());
    return 1;
  }

  double worst = 0;
  auto check = [&](double got, double ref, const char *what, int64_t i) {
    double err = std::fabs(got - ref);
    worst = std::max(worst, err);
    if (!(err <= 1e-5 + 1e-5 * std::fabs(ref))) {
      std::fprintf(stderr, "FAIL: %s[%lld] = %.9g, reference %.9g\n", what,
                   static_cast<long long>(i), got, ref);
      return false;
    }
    return true;
  };
  for (int64_t bh = 0; bh < B * H; ++bh)
    for (int64_t r = 0; r < SQ; ++r) {
      std::vector<double> s(SKV);
      double m = -INFINITY, sum = 0;
      for (int64_t c = 0; c < SKV; ++c) {
        double dot = 0;
        for (int64_t d = 0; d < D; ++d)
          dot += double(q[(bh * SQ + r) * D + d]) * k[(bh * SKV + c) * D + d];
        s[c] = dot / std::sqrt(double(D));
        m = std::max(m, s[c]);
      }
      for (double &x : s)
        sum += (x = std::exp(x - m));
      if (!check(lse[bh * SQ + r], m + std::log(sum), "lse", bh * SQ + r))
        return 1;
      for (int64_t d = 0; d < D; ++d) {
        double ref = 0;
        for (int64_t c = 0; c < SKV; ++c)
          ref += s[c] / sum * v[(bh * SKV + c) * D + d];
        if (!check(out[(bh * SQ + r) * D + d], ref, "out", (bh * SQ + r) * D + d))
          return 1;
      }
    }
  std::printf("C++: cpu kernel matches the float64 reference (max error %.3g)\n",
              worst);
  return 0;
}
