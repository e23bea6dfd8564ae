// attn from C++: grouped-query attention (8 query heads, 2 key/value heads).
#include <attn/runtime/attn.hpp>
#include <cmath>
#include <iostream>
#include <vector>

int main() try {
  const int64_t B = 2, Hq = 8, Hkv = 2, S = 128, D = 64;
  std::vector<float> q(B * Hq * S * D, 0.5f), out(q.size());
  std::vector<float> k(B * Hkv * S * D, 0.25f), v(k.size(), 3.0f);
  attn_spec spec;
  attn_spec_init(&spec);
  spec.head_dim = D;
  attn::Context ctx;
  attn::Kernel kernel = ctx.compile(spec, ATTN_TARGET_CPU);
  attn_launch_args args{};
  args.q = attn::makeTensor(q.data(), {B, Hq, S, D});
  args.k = attn::makeTensor(k.data(), {B, Hkv, S, D});
  args.v = attn::makeTensor(v.data(), {B, Hkv, S, D});
  args.out = attn::makeTensor(out.data(), {B, Hq, S, D});
  kernel.launch(args);
  // Every value row is 3, so every output element is 3.
  std::cout << "attn " << attn_version() << ": out[0] = " << out[0] << "\n";
  return std::fabs(out[0] - 3.0f) < 1e-5f && std::fabs(out.back() - 3.0f) < 1e-5f ? 0 : 1;
} catch (const attn::Error &e) {
  std::cerr << "attn: " << e.what() << "\n";
  return 1;
}
