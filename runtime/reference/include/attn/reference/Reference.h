//===- Reference.h - the float64 reference of attn.sdpa ----------*- C++ -*-===//
//
// An independent, deliberately naive implementation of the semantics in
// AttnOps.td (attn.sdpa): every input read exactly at its stored precision,
// all arithmetic in double, no tiling, no online softmax.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_REFERENCE_REFERENCE_H
#define ATTN_REFERENCE_REFERENCE_H

#include "attn/runtime/attn.h"

#include <string>
#include <vector>

namespace attn::reference {

/// The reference result, dense: out is [B, Hq, Sq, Dv], lse is [B, Hq, Sq].
struct Result {
  int64_t batch = 0, headsQ = 0, seqQ = 0, valueDim = 0;
  std::vector<double> out;
  /// sum_j w_ij |v_jd| for every element of out (w the normalized, dropped
  /// out weights): the sum of the magnitudes of out's terms, which bounds
  /// the rounding error of any summation order. |out| <= magnitude; where
  /// they differ by a lot the terms cancel and out is ill-conditioned.
  std::vector<double> magnitude;
  std::vector<double> lse;
};

/// Computes out and lse for `spec` (dtype, causal, mask kind and dtype,
/// scale, dropout_p) on the host tensors of `args` (q, k, v, mask; shapes
/// and element strides as in the C API, a mask dimension of 1 broadcasts).
/// Returns false and sets `error` when the shapes are inconsistent.
bool computeReference(const attn_spec &spec, const attn_launch_args &args,
                      Result &result, std::string &error);

/// Extents of dense [B, H, S, D] problems.
struct DenseShape {
  int64_t batch, headsQ, headsKv, seqQ, seqKv, headDim, valueDim;
};

/// computeReference's attention on dense float64 q [B, Hq, Sq, D], k [B,
/// Hkv, Skv, D] and v [B, Hkv, Skv, Dv], taken as they are (no rounding
/// to spec.dtype): for callers whose q, k, v are themselves float64
/// results (the layer's reference). `args` supplies the mask and seed
/// only. The one place the reference attention is written.
bool computeReferenceF64(const attn_spec &spec, const DenseShape &shape,
                         const std::vector<double> &q,
                         const std::vector<double> &k,
                         const std::vector<double> &v,
                         const attn_launch_args &args, Result &result,
                         std::string &error);

/// The layer attn.mha (attn_mha_spec, normalized as attn_mha_compile
/// does) in float64 on the dense host tensors of `args`: projections in
/// double from the stored inputs, computeReferenceF64 for the attention,
/// the output projection in double. The result is y as [B, 1, S, E]
/// (headsQ = 1, valueDim = E), magnitude the sum of |terms| of the output
/// projection, no lse.
bool computeMhaReference(const attn_mha_spec &spec, const attn_mha_args &args,
                         Result &result, std::string &error);

} // namespace attn::reference

#endif // ATTN_REFERENCE_REFERENCE_H
