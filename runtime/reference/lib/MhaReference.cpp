//===- MhaReference.cpp - attn.mha in float64: projections around the ----===//
//===- reference attention ------------------------------------------------===//
//
// The layer's definition (AttnOps.td, attn.mha) written out naively: every
// input read at its stored precision, every projection in double, nothing
// rounded in between; the attention is computeReferenceF64's.
//
//===----------------------------------------------------------------------===//
#include "attn/reference/Float.h"
#include "attn/reference/Reference.h"

#include <cmath>

namespace attn::reference {

namespace {

std::vector<double> load(attn_dtype dtype, const void *p, size_t n) {
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i)
    out[i] = loadElement(dtype, p, static_cast<int64_t>(i));
  return out;
}

/// src [B, S, Ein] projected by rows [row0, row0 + H*Dh) of w [*, Ein]
/// (+ bias from element row0) into dense [B, H, S, Dh].
std::vector<double> project(const std::vector<double> &src, int64_t B,
                            int64_t S, int64_t Ein,
                            const std::vector<double> &w,
                            const std::vector<double> *bias, int64_t row0,
                            int64_t H, int64_t Dh) {
  std::vector<double> out(static_cast<size_t>(B * H * S * Dh));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t s = 0; s < S; ++s)
        for (int64_t d = 0; d < Dh; ++d) {
          const int64_t row = row0 + h * Dh + d;
          double acc = bias ? (*bias)[static_cast<size_t>(row)] : 0.0;
          const double *x = src.data() + (b * S + s) * Ein;
          const double *wr = w.data() + row * Ein;
          for (int64_t e = 0; e < Ein; ++e)
            acc += x[e] * wr[e];
          out[static_cast<size_t>(((b * H + h) * S + s) * Dh + d)] = acc;
        }
  return out;
}

} // namespace

bool computeMhaReference(const attn_mha_spec &spec, const attn_mha_args &args,
                         Result &result, std::string &error) {
  const attn_dtype dt = spec.dtype;
  const int64_t B = spec.batch, S = spec.seq, E = spec.embed,
                Hq = spec.heads_q, Hkv = spec.heads_kv, D = spec.head_dim,
                Dv = spec.value_dim;
  const int64_t Skv = spec.cross ? spec.seq_kv : S;
  const int64_t Ekv = spec.cross ? spec.kv_embed : E;
  if (B <= 0 || S <= 0 || E <= 0 || Hq <= 0 || Hkv <= 0 || D <= 0 ||
      Dv <= 0 || Skv <= 0 || Ekv <= 0 || Hq % Hkv != 0) {
    error = "the layer spec is not normalized (attn_mha_compile's form)";
    return false;
  }
  const int64_t qw = Hq * D, kw = Hkv * D, vw = Hkv * Dv;
  auto n = [](std::initializer_list<int64_t> dims) {
    size_t c = 1;
    for (int64_t d : dims)
      c *= static_cast<size_t>(d);
    return c;
  };
  std::vector<double> x = load(dt, args.x, n({B, S, E}));
  std::vector<double> c = spec.cross ? load(dt, args.kv, n({B, Skv, Ekv})) : x;
  // One weight matrix per projection, addressed by its first row: the
  // fused one holds the three stacked (rows 0, qw, qw + kw).
  std::vector<double> wq, wk, wv, bq, bk, bv;
  int64_t rq = 0, rk = 0, rv = 0;
  if (spec.fused_qkv) {
    wq = load(dt, args.w_qkv, n({qw + kw + vw, E}));
    if (spec.bias)
      bq = load(dt, args.b_qkv, n({qw + kw + vw}));
    rk = qw;
    rv = qw + kw;
  } else {
    wq = load(dt, args.w_q, n({qw, E}));
    wk = load(dt, args.w_k, n({kw, Ekv}));
    wv = load(dt, args.w_v, n({vw, Ekv}));
    if (spec.bias) {
      bq = load(dt, args.b_q, n({qw}));
      bk = load(dt, args.b_k, n({kw}));
      bv = load(dt, args.b_v, n({vw}));
    }
  }
  const bool fused = spec.fused_qkv != 0, bias = spec.bias != 0;
  const std::vector<double> &Wk = fused ? wq : wk, &Wv = fused ? wq : wv;
  const std::vector<double> *Bq = bias ? &bq : nullptr,
                            *Bk = bias ? (fused ? &bq : &bk) : nullptr,
                            *Bv = bias ? (fused ? &bq : &bv) : nullptr;
  std::vector<double> q = project(x, B, S, E, wq, Bq, rq, Hq, D);
  std::vector<double> k = project(c, B, Skv, Ekv, Wk, Bk, rk, Hkv, D);
  std::vector<double> v = project(c, B, Skv, Ekv, Wv, Bv, rv, Hkv, Dv);

  attn_spec sdpa{}; // no mask, no dropout
  sdpa.dtype = dt;
  sdpa.causal = spec.causal;
  sdpa.scale = spec.scale;
  attn_launch_args none{};
  Result o;
  if (!computeReferenceF64(sdpa, {B, Hq, Hkv, S, Skv, D, Dv}, q, k, v, none,
                           o, error))
    return false;

  // y[b,s,e] = sum_{h,d} o[b,h,s,d] Wo[e, h*Dv + d] + bo[e].
  const int64_t ow = Hq * Dv;
  std::vector<double> wo = load(dt, args.w_o, n({E, ow}));
  std::vector<double> bo = bias ? load(dt, args.b_o, n({E})) : std::vector<double>();
  result.batch = B;
  result.headsQ = 1;
  result.seqQ = S;
  result.valueDim = E;
  result.out.assign(n({B, S, E}), 0.0);
  result.magnitude.assign(n({B, S, E}), 0.0);
  result.lse.clear();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t e = 0; e < E; ++e) {
        double acc = bias ? bo[static_cast<size_t>(e)] : 0.0;
        double mag = std::fabs(acc);
        for (int64_t h = 0; h < Hq; ++h)
          for (int64_t d = 0; d < Dv; ++d) {
            double t = o.out[static_cast<size_t>(((b * Hq + h) * S + s) * Dv + d)] *
                       wo[static_cast<size_t>(e * ow + h * Dv + d)];
            acc += t;
            mag += std::fabs(t);
          }
        result.out[static_cast<size_t>((b * S + s) * E + e)] = acc;
        result.magnitude[static_cast<size_t>((b * S + s) * E + e)] = mag;
      }
  return true;
}

} // namespace attn::reference
