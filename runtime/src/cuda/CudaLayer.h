//===- CudaLayer.h - the attention layer (attn.mha) on cuda -----*- C++ -*-===//
//
// A layer on cuda is attn-decompose-mha's decomposition run as a launch
// sequence on one stream: the Q, K, V projections as cuBLASLt GEMMs with a
// bias epilogue, writing [B, S, H, D] rows of one device workspace (BSHD,
// read by the attention through strides: no transposing copy), the
// attention as attn's own kernel for the decomposition's attn.sdpa, and
// the output projection as one more GEMM into y. planLayer says where every
// operand lives; it is pure, so tests check it without a GPU.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_SRC_CUDA_CUDALAYER_H
#define ATTN_RUNTIME_SRC_CUDA_CUDALAYER_H

#include "CublasLt.h"
#include "CudaDriver.h"

#include "attn/runtime/Backend.h"
#include "attn/runtime/CudaKernel.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace attn {
namespace cuda {

/// The memory a layer's launch touches: the caller's tensors (attn_mha_args)
/// and the three intermediates in the launch's workspace.
enum class Operand {
  None, // no operand (a GEMM without bias)
  X, Kv, Wq, Wk, Wv, Wqkv, Wo, Bq, Bk, Bv, Bqkv, Bo, Y,
  Projected,   // q (and k, v for self-attention) rows: [B*S, width]
  ProjectedKv, // cross-attention's k, v rows: [B*Skv, width]
  Attended,    // the attention's output rows: [B*S, width]
};

/// An element offset into an operand.
struct Ref {
  Operand operand = Operand::None;
  int64_t offset = 0;
};

/// output[rows, cols] = input[rows, inner] · weight[cols, inner]ᵀ (+ bias),
/// every matrix row-major; weight rows are dense (stride inner). Accumulates
/// in f32, adds the bias in f32, rounds once to the element type.
struct Gemm {
  std::string what; // "q", "k", "v", "qkv", "kv" or "output"
  int64_t rows = 0, cols = 0, inner = 0;
  Ref input;
  int64_t inputStride = 0;
  Ref weight;
  Ref bias; // Operand::None: no bias
  Ref output;
  int64_t outputStride = 0;
};

/// A [B, H, S, D] view of an intermediate for the attention kernel.
struct View {
  Ref data;
  int64_t shape[4] = {0, 0, 0, 0};
  int64_t strides[4] = {0, 0, 0, 0};
};

struct LayerPlan {
  std::vector<Gemm> projections; // before the attention, in launch order
  Gemm output;                   // after it
  View q, k, v, out;             // the attention's operands
  /// Byte offsets of the intermediates in one workspace allocation (each
  /// 256-byte aligned; ProjectedKv's is 0 for self-attention, which has
  /// none) and the bytes they take together.
  int64_t projectedKvOffset = 0, attendedOffset = 0, bytes = 0;
};

/// Every section of an intermediate row (q, k, v, the attention's output)
/// starts 16-byte aligned and every row is a multiple of 16 bytes (the
/// tensor-core kernel's cp.async rule, which holds for its heads as their
/// D is a multiple of 16). A fused QKV
/// weight runs as one GEMM when its q and k blocks need no padding, as
/// three GEMMs (row blocks of it) otherwise. False with `error` set when a
/// size overflows. `spec` is normalized (attn_mha_compile's).
bool planLayer(const attn_mha_spec &spec, LayerPlan &plan, std::string &error);

/// The address of `ref` in a launch: a caller tensor of `args`, or an
/// intermediate at `workspace` (null for the caller's null pointers).
const void *resolve(const Ref &ref, const attn_mha_spec &spec,
                    const attn_mha_args &args, const LayerPlan &plan,
                    uint64_t workspace);

/// A layer on `driver` and `blas` (which must outlive it) around the
/// compiled `attention` (for layerAttentionSpec(spec), normalized as
/// `attentionSpec`). Checks the plan's attention views against the kernel's
/// spec first; creates the cuBLASLt handle and descriptors.
attn_status createLayerWithLibraries(const Driver &driver, const Blas &blas,
                                     const attn_mha_spec &spec,
                                     const attn_spec &attentionSpec,
                                     std::unique_ptr<Executable> attention,
                                     std::unique_ptr<LayerExecutable> &layer,
                                     std::string &error);

} // namespace cuda
} // namespace attn

#endif // ATTN_RUNTIME_SRC_CUDA_CUDALAYER_H
