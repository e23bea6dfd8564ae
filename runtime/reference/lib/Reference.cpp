//===- Reference.cpp - attn.sdpa in float64, straight from its definition -===//
#include "attn/reference/Reference.h"

#include "attn/reference/Dropout.h"
#include "attn/reference/Float.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <thread>

namespace attn::reference {

static int64_t offsetOf(const attn_tensor &t, int64_t a, int64_t b, int64_t c,
                        int64_t d) {
  return a * t.strides[0] + b * t.strides[1] + c * t.strides[2] +
         d * t.strides[3];
}

static std::string shapeString(const attn_tensor &t) {
  return "[" + std::to_string(t.shape[0]) + ", " + std::to_string(t.shape[1]) +
         ", " + std::to_string(t.shape[2]) + ", " + std::to_string(t.shape[3]) +
         "]";
}

// Copies a strided [B, H, S, D] tensor into a dense array of doubles so the
// inner loops neither switch on the dtype nor chase strides.
static std::vector<double> toDense(const attn_tensor &t, attn_dtype dtype) {
  std::vector<double> dense;
  dense.reserve(static_cast<size_t>(t.shape[0] * t.shape[1] * t.shape[2] *
                                    t.shape[3]));
  for (int64_t a = 0; a < t.shape[0]; ++a)
    for (int64_t b = 0; b < t.shape[1]; ++b)
      for (int64_t c = 0; c < t.shape[2]; ++c)
        for (int64_t d = 0; d < t.shape[3]; ++d)
          dense.push_back(loadElement(dtype, t.data, offsetOf(t, a, b, c, d)));
  return dense;
}

bool computeReference(const attn_spec &spec, const attn_launch_args &args,
                      Result &result, std::string &error) {
  const attn_tensor &q = args.q, &k = args.k, &v = args.v, &m = args.mask;
  const int64_t B = q.shape[0], Hq = q.shape[1], Sq = q.shape[2],
                D = q.shape[3];
  const int64_t Hkv = k.shape[1], Skv = k.shape[2], Dv = v.shape[3];
  for (const attn_tensor *t : {&q, &k, &v})
    for (int d = 0; d < 4; ++d)
      if (t->shape[d] < 0) {
        error = "negative dimension in " + shapeString(*t);
        return false;
      }
  if (k.shape[0] != B || k.shape[3] != D || v.shape[0] != B ||
      v.shape[1] != Hkv || v.shape[2] != Skv) {
    error = "inconsistent shapes: q " + shapeString(q) + ", k " +
            shapeString(k) + ", v " + shapeString(v);
    return false;
  }
  if (Hkv == 0 ? Hq != 0 : Hq % Hkv != 0) {
    error = "query heads " + std::to_string(Hq) +
            " not a multiple of kv heads " + std::to_string(Hkv);
    return false;
  }
  const bool hasMask = spec.mask != ATTN_MASK_NONE;
  if (hasMask && ((m.shape[0] != 1 && m.shape[0] != B) ||
                  (m.shape[1] != 1 && m.shape[1] != Hq) || m.shape[2] != Sq ||
                  m.shape[3] != Skv)) {
    error = "mask shape " + shapeString(m) + " does not broadcast to [" +
            std::to_string(B) + ", " + std::to_string(Hq) + ", " +
            std::to_string(Sq) + ", " + std::to_string(Skv) + "]";
    return false;
  }
  return computeReferenceF64(spec, {B, Hq, Hkv, Sq, Skv, D, Dv},
                             toDense(q, spec.dtype), toDense(k, spec.dtype),
                             toDense(v, spec.dtype), args, result, error);
}

bool computeReferenceF64(const attn_spec &spec, const DenseShape &shape,
                         const std::vector<double> &qd,
                         const std::vector<double> &kd,
                         const std::vector<double> &vd,
                         const attn_launch_args &args, Result &result,
                         std::string &error) {
  const attn_tensor &m = args.mask;
  const int64_t B = shape.batch, Hq = shape.headsQ, Hkv = shape.headsKv,
                Sq = shape.seqQ, Skv = shape.seqKv, D = shape.headDim,
                Dv = shape.valueDim;
  const auto count = [](std::initializer_list<int64_t> dims) {
    size_t n = 1;
    for (int64_t d : dims)
      n *= static_cast<size_t>(d);
    return n;
  };
  if (qd.size() != count({B, Hq, Sq, D}) ||
      kd.size() != count({B, Hkv, Skv, D}) ||
      vd.size() != count({B, Hkv, Skv, Dv}) ||
      (Hkv == 0 ? Hq != 0 : Hq % Hkv != 0)) {
    error = "dense q, k, v do not match the shape";
    return false;
  }
  const bool hasMask = spec.mask != ATTN_MASK_NONE;
  const attn_dtype maskType =
      spec.mask == ATTN_MASK_BOOL ? ATTN_DTYPE_BOOL : spec.mask_dtype;
  const double scale = spec.scale == 0.0 ? 1.0 / std::sqrt(double(D)) : spec.scale;
  const double p = spec.dropout_p;
  const double inf = std::numeric_limits<double>::infinity();

  result.batch = B;
  result.headsQ = Hq;
  result.seqQ = Sq;
  result.valueDim = Dv;
  result.out.assign(static_cast<size_t>(B * Hq * Sq * Dv), 0.0);
  result.magnitude.assign(static_cast<size_t>(B * Hq * Sq * Dv), 0.0);
  result.lse.assign(static_cast<size_t>(B * Hq * Sq), -inf);

  const int64_t group = Hkv == 0 ? 1 : Hq / Hkv;
  // One (b, h) slice: its rows of out and lse are written by no one else.
  auto slice = [&](int64_t b, int64_t h) {
    std::vector<double> qrow(static_cast<size_t>(D)),
        s(static_cast<size_t>(Skv));
    const int64_t hk = h / group;
    const double *kbase = kd.data() + (b * Hkv + hk) * Skv * D;
    const double *vbase = vd.data() + (b * Hkv + hk) * Skv * Dv;
    for (int64_t i = 0; i < Sq; ++i) {
      for (int64_t d = 0; d < D; ++d)
        qrow[d] = qd[static_cast<size_t>(((b * Hq + h) * Sq + i) * D + d)];
      double rowMax = -inf;
      for (int64_t j = 0; j < Skv; ++j) {
        double score;
        if (spec.causal && j > i + (Skv - Sq)) {
          score = -inf;
        } else {
          double dot = 0.0;
          for (int64_t d = 0; d < D; ++d)
            dot += qrow[d] * kbase[j * D + d];
          score = scale * dot;
          if (hasMask) {
            double mv = loadElement(
                maskType, m.data,
                offsetOf(m, m.shape[0] == 1 ? 0 : b, m.shape[1] == 1 ? 0 : h,
                         i, j));
            if (spec.mask == ATTN_MASK_BOOL)
              score = mv != 0.0 ? score : -inf;
            else
              score += mv;
          }
        }
        s[j] = score;
        rowMax = std::max(rowMax, score);
      }
      // A row that sees no key: out stays 0, lse stays -inf.
      if (rowMax == -inf)
        continue;
      double sum = 0.0;
      for (int64_t j = 0; j < Skv; ++j) {
        s[j] = std::exp(s[j] - rowMax);
        sum += s[j];
      }
      result.lse[(b * Hq + h) * Sq + i] = rowMax + std::log(sum);
      double *orow = result.out.data() + ((b * Hq + h) * Sq + i) * Dv;
      double *mrow = result.magnitude.data() + ((b * Hq + h) * Sq + i) * Dv;
      for (int64_t j = 0; j < Skv; ++j) {
        double w = s[j] / sum;
        if (p > 0.0)
          w = dropoutKeep(args.seed, static_cast<uint32_t>(b),
                          static_cast<uint32_t>(h), static_cast<uint32_t>(i),
                          static_cast<uint32_t>(j), p)
                  ? w / (1.0 - p)
                  : 0.0;
        if (w == 0.0)
          continue;
        for (int64_t d = 0; d < Dv; ++d) {
          orow[d] += w * vbase[j * Dv + d];
          mrow[d] += w * std::fabs(vbase[j * Dv + d]);
        }
      }
    }
  };
  // Large --check runs would otherwise spend minutes here: spread the
  // independent slices over the cores (small problems stay on one thread).
  const int64_t slices = B * Hq;
  const double work = double(slices) * double(Sq) * double(Skv) * double(D + Dv);
  unsigned threads = work < 1e7 ? 1u : std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<int64_t>(threads, slices));
  std::atomic<int64_t> next{0};
  auto worker = [&] {
    for (int64_t n; (n = next.fetch_add(1)) < slices;)
      slice(n / Hq, n % Hq);
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t)
    pool.emplace_back(worker);
  worker();
  for (std::thread &t : pool)
    t.join();
  return true;
}

} // namespace attn::reference
