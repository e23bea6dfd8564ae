//===- CudaLayerTest.cpp - the cuda attention layer without a GPU ---------===//
//
// The layer's launch sequence (runtime/src/cuda/CudaLayer.h) runs here on
// host memory: a driver table whose pool hands out host allocations, a
// cuBLASLt table that evaluates cublasLtMatmul's column-major contract
// (transposes, leading dimensions, bias epilogue, f32 accumulation, one
// rounding) on the host, and an attention executable that writes the
// float64 reference attention of the views it gets. y must then match the
// float64 layer reference (computeMhaReference) under the layer's
// tolerance: every offset, stride, padding and GEMM of the plan is used.
//
//===----------------------------------------------------------------------===//
#ifdef ATTN_CHECK_CUBLASLT_H
#include <cublasLt.h> // first: attn::cuda's declarations mirror its names
#endif

#include "../Internal.h"
#include "CudaLayer.h"

#include "attn/reference/Check.h"
#include "attn/reference/Float.h"
#include "attn/reference/Reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <set>

// Inside attn::cuda, its names hide cublasLt.h's global ones.
namespace attn {
namespace cuda {
namespace {

//===----------------------------------------------------------------------===//
// A host "driver": one device, pools of host memory.
//===----------------------------------------------------------------------===//

struct HostState {
  std::set<void *> live;   // allocations not yet freed
  int pools = 0, poolsDestroyed = 0, depth = 0, retained = 0;
  std::vector<CUstream> allocStreams, freeStreams;
  bool poolsSupported = true;
};
HostState &host() {
  static HostState s;
  return s;
}
const auto kContext = reinterpret_cast<CUcontext>(0xc0);
const auto kPoolHandle = reinterpret_cast<CUmemoryPool>(0x9001);

Driver hostDriver() {
  Driver d{};
  d.cuCtxGetCurrent = [](CUcontext *c) {
    *c = nullptr;
    return CUDA_SUCCESS;
  };
  d.cuCtxGetDevice = [](CUdevice *dev) {
    *dev = 0;
    return CUDA_SUCCESS;
  };
  d.cuDeviceGet = [](CUdevice *dev, int) {
    *dev = 0;
    return CUDA_SUCCESS;
  };
  d.cuDevicePrimaryCtxRetain = [](CUcontext *c, CUdevice) {
    *c = kContext;
    ++host().retained;
    return CUDA_SUCCESS;
  };
  d.cuDevicePrimaryCtxRelease = [](CUdevice) {
    --host().retained;
    return CUDA_SUCCESS;
  };
  d.cuCtxPushCurrent = [](CUcontext) {
    ++host().depth;
    return CUDA_SUCCESS;
  };
  d.cuCtxPopCurrent = [](CUcontext *) {
    --host().depth;
    return CUDA_SUCCESS;
  };
  d.cuDeviceGetAttribute = [](int *v, int attr, CUdevice) {
    *v = attr == CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED
             ? int(host().poolsSupported)
             : 0;
    return CUDA_SUCCESS;
  };
  d.cuGetErrorName = [](CUresult, const char **s) {
    *s = "CUDA_ERROR_FAKE";
    return CUDA_SUCCESS;
  };
  d.cuGetErrorString = [](CUresult, const char **s) {
    *s = "fake";
    return CUDA_SUCCESS;
  };
  d.cuMemPoolCreate = [](CUmemoryPool *p, const CUmemPoolProps *) {
    *p = kPoolHandle;
    ++host().pools;
    return CUDA_SUCCESS;
  };
  d.cuMemPoolDestroy = [](CUmemoryPool) {
    ++host().poolsDestroyed;
    return CUDA_SUCCESS;
  };
  d.cuMemPoolSetAttribute = [](CUmemoryPool, int, void *) {
    return CUDA_SUCCESS;
  };
  d.cuMemAllocFromPoolAsync = [](CUdeviceptr *p, size_t bytes, CUmemoryPool,
                                 CUstream s) {
    void *m = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
    host().live.insert(m);
    host().allocStreams.push_back(s);
    *p = reinterpret_cast<CUdeviceptr>(m);
    return CUDA_SUCCESS;
  };
  d.cuMemFreeAsync = [](CUdeviceptr p, CUstream s) {
    void *m = reinterpret_cast<void *>(p);
    host().live.erase(m);
    host().freeStreams.push_back(s);
    std::free(m);
    return CUDA_SUCCESS;
  };
  return d;
}

//===----------------------------------------------------------------------===//
// A host cuBLASLt: cublasLtMatmul's contract evaluated in double.
//===----------------------------------------------------------------------===//

struct HostDesc {
  int compute = -1, scale = -1;
  int32_t transA = CUBLAS_OP_N, transB = CUBLAS_OP_N;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void *bias = nullptr;
};
struct HostLayout {
  int type;
  uint64_t rows, cols;
  int64_t ld;
};
struct BlasState {
  std::vector<std::unique_ptr<HostDesc>> descs;
  std::vector<std::unique_ptr<HostLayout>> layouts;
  int handles = 0, destroyedDescs = 0, destroyedLayouts = 0, heuristics = 0;
  std::vector<uint32_t> alignments; // MIN_ALIGNMENT_A of each heuristic
  std::vector<uint32_t> reductions; // REDUCTION_SCHEME_MASK of each
  std::vector<CUstream> streams;    // of each matmul
  size_t workspaceSize = 4096;      // what the heuristic asks for
  std::vector<std::pair<void *, size_t>> workspaces; // of each matmul
};
BlasState &blasState() {
  static BlasState s;
  return s;
}

attn_dtype dtypeOfType(int type) {
  return type == CUDA_R_16F    ? ATTN_DTYPE_F16
         : type == CUDA_R_16BF ? ATTN_DTYPE_BF16
                               : ATTN_DTYPE_F32;
}

Blas hostBlas() {
  Blas b{};
  b.cublasLtCreate = [](cublasLtHandle_t *h) {
    *h = reinterpret_cast<cublasLtHandle_t>(0x1);
    ++blasState().handles;
    return CUBLAS_STATUS_SUCCESS;
  };
  b.cublasLtDestroy = [](cublasLtHandle_t) {
    --blasState().handles;
    return CUBLAS_STATUS_SUCCESS;
  };
  b.cublasLtGetVersion = []() -> size_t { return 130000; };
  b.cublasLtGetStatusString = [](cublasStatus_t) {
    return "CUBLAS_STATUS_FAKE";
  };
  b.cublasLtMatmulDescCreate = [](cublasLtMatmulDesc_t *d, int compute,
                                  int scale) {
    auto desc = std::make_unique<HostDesc>();
    desc->compute = compute;
    desc->scale = scale;
    *d = reinterpret_cast<cublasLtMatmulDesc_t>(desc.get());
    blasState().descs.push_back(std::move(desc));
    return CUBLAS_STATUS_SUCCESS;
  };
  b.cublasLtMatmulDescDestroy = [](cublasLtMatmulDesc_t) {
    ++blasState().destroyedDescs;
    return CUBLAS_STATUS_SUCCESS;
  };
  b.cublasLtMatmulDescSetAttribute = [](cublasLtMatmulDesc_t d, int attr,
                                        const void *buf, size_t size) {
    auto *desc = reinterpret_cast<HostDesc *>(d);
    switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA:
      EXPECT_EQ(size, sizeof(int32_t));
      std::memcpy(&desc->transA, buf, size);
      break;
    case CUBLASLT_MATMUL_DESC_TRANSB:
      EXPECT_EQ(size, sizeof(int32_t));
      std::memcpy(&desc->transB, buf, size);
      break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
      EXPECT_EQ(size, sizeof(uint32_t));
      std::memcpy(&desc->epilogue, buf, size);
      break;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
      EXPECT_EQ(size, sizeof(void *));
      std::memcpy(&desc->bias, buf, size);
      break;
    default:
      ADD_FAILURE() << "unexpected matmul attribute " << attr;
      return 7; // CUBLAS_STATUS_INVALID_VALUE
    }
    return CUBLAS_STATUS_SUCCESS;
  };
  b.cublasLtMatrixLayoutCreate = [](cublasLtMatrixLayout_t *l, int type,
                                    uint64_t rows, uint64_t cols, int64_t ld) {
    auto layout = std::make_unique<HostLayout>(HostLayout{type, rows, cols, ld});
    // Column-major: the leading dimension spans a column.
    EXPECT_GE(uint64_t(ld), rows);
    *l = reinterpret_cast<cublasLtMatrixLayout_t>(layout.get());
    blasState().layouts.push_back(std::move(layout));
    return CUBLAS_STATUS_SUCCESS;
  };
  b.cublasLtMatrixLayoutDestroy = [](cublasLtMatrixLayout_t) {
    ++blasState().destroyedLayouts;
    return CUBLAS_STATUS_SUCCESS;
  };
  b.cublasLtMatmulPreferenceCreate = [](cublasLtMatmulPreference_t *p) {
    *p = reinterpret_cast<cublasLtMatmulPreference_t>(0x2);
    return CUBLAS_STATUS_SUCCESS;
  };
  b.cublasLtMatmulPreferenceDestroy = [](cublasLtMatmulPreference_t) {
    return CUBLAS_STATUS_SUCCESS;
  };
  b.cublasLtMatmulPreferenceSetAttribute = [](cublasLtMatmulPreference_t,
                                              int attr, const void *buf,
                                              size_t size) {
    if (attr == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES ||
        attr == CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK) {
      uint32_t a;
      EXPECT_EQ(size, sizeof(a));
      std::memcpy(&a, buf, sizeof(a));
      (attr == CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK
           ? blasState().reductions
           : blasState().alignments)
          .push_back(a);
    }
    return CUBLAS_STATUS_SUCCESS;
  };
  b.cublasLtMatmulAlgoGetHeuristic =
      [](cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
         cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
         cublasLtMatmulPreference_t, int requested,
         cublasLtMatmulHeuristicResult_t *results, int *count) {
        EXPECT_GE(requested, 1);
        ++blasState().heuristics;
        results[0] = {};
        results[0].algo.data[0] = 42;
        results[0].workspaceSize = blasState().workspaceSize;
        *count = 1;
        return CUBLAS_STATUS_SUCCESS;
      };
  b.cublasLtMatmul = [](cublasLtHandle_t, cublasLtMatmulDesc_t dd,
                        const void *alpha, const void *A,
                        cublasLtMatrixLayout_t al, const void *B,
                        cublasLtMatrixLayout_t bl, const void *beta,
                        const void *C, cublasLtMatrixLayout_t cl, void *D,
                        cublasLtMatrixLayout_t dl,
                        const cublasLtMatmulAlgo_t *algo, void *workspace,
                        size_t workspaceBytes, CUstream stream) {
    const HostDesc &desc = *reinterpret_cast<HostDesc *>(dd);
    const HostLayout &a = *reinterpret_cast<HostLayout *>(al),
                     &b = *reinterpret_cast<HostLayout *>(bl),
                     &c = *reinterpret_cast<HostLayout *>(cl),
                     &d = *reinterpret_cast<HostLayout *>(dl);
    EXPECT_EQ(desc.compute, CUBLAS_COMPUTE_32F);
    EXPECT_EQ(desc.scale, CUDA_R_32F);
    EXPECT_EQ(algo->data[0], 42u);
    EXPECT_EQ(C, D);
    EXPECT_EQ(cl, dl);
    EXPECT_EQ(*static_cast<const float *>(beta), 0.0f);
    blasState().streams.push_back(stream);
    blasState().workspaces.push_back({workspace, workspaceBytes});
    // D[m, n] = alpha op(A)[m, k] op(B)[k, n] + bias[m], column-major.
    const uint64_t m = d.rows, n = d.cols;
    const uint64_t k = desc.transA == CUBLAS_OP_T ? a.rows : a.cols;
    EXPECT_EQ(desc.transA == CUBLAS_OP_T ? a.cols : a.rows, m);
    EXPECT_EQ(desc.transB == CUBLAS_OP_T ? b.cols : b.rows, k);
    EXPECT_EQ(desc.transB == CUBLAS_OP_T ? b.rows : b.cols, n);
    EXPECT_EQ(c.rows, m);
    const attn_dtype ta = dtypeOfType(a.type), tb = dtypeOfType(b.type),
                     td = dtypeOfType(d.type);
    const float al1 = *static_cast<const float *>(alpha);
    for (uint64_t j = 0; j < n; ++j)
      for (uint64_t i = 0; i < m; ++i) {
        float acc = 0; // f32 accumulation, as CUBLAS_COMPUTE_32F
        for (uint64_t p = 0; p < k; ++p) {
          int64_t ai = desc.transA == CUBLAS_OP_T ? int64_t(p + i * a.ld)
                                                  : int64_t(i + p * a.ld);
          int64_t bi = desc.transB == CUBLAS_OP_T ? int64_t(j + p * b.ld)
                                                  : int64_t(p + j * b.ld);
          acc += float(reference::loadElement(ta, A, ai)) *
                 float(reference::loadElement(tb, B, bi));
        }
        acc *= al1;
        if (desc.epilogue == CUBLASLT_EPILOGUE_BIAS)
          acc += float(reference::loadElement(td, desc.bias, int64_t(i)));
        reference::storeElement(td, D, int64_t(i + j * d.ld), acc);
      }
    return CUBLAS_STATUS_SUCCESS;
  };
  return b;
}

//===----------------------------------------------------------------------===//
// An attention "kernel": the float64 reference of the views it gets.
//===----------------------------------------------------------------------===//

struct Seen {
  std::vector<KernelArgs> launches;
};

class ReferenceAttention final : public Executable {
public:
  ReferenceAttention(attn_spec spec, Seen &seen, bool fail = false)
      : spec(spec), seen(seen), fail(fail) {}
  attn_status run(const KernelArgs &a, std::string &error) override {
    seen.launches.push_back(a);
    if (fail) {
      error = "cuLaunchKernel failed: CUDA_ERROR_FAKE";
      return ATTN_ERROR_BACKEND;
    }
    attn_launch_args la{};
    auto tensor = [](const TensorView &v, attn_tensor &t) {
      t.data = v.data;
      for (int i = 0; i < 4; ++i) {
        t.shape[i] = v.shape[i];
        t.strides[i] = v.strides[i];
      }
    };
    tensor(a.q, la.q);
    tensor(a.k, la.k);
    tensor(a.v, la.v);
    reference::Result r;
    if (!reference::computeReference(spec, la, r, error))
      return ATTN_ERROR_BACKEND;
    const TensorView &o = a.out;
    for (int64_t b = 0; b < o.shape[0]; ++b)
      for (int64_t h = 0; h < o.shape[1]; ++h)
        for (int64_t s = 0; s < o.shape[2]; ++s)
          for (int64_t d = 0; d < o.shape[3]; ++d)
            reference::storeElement(
                spec.dtype, o.data,
                b * o.strides[0] + h * o.strides[1] + s * o.strides[2] + d,
                r.out[((b * o.shape[1] + h) * o.shape[2] + s) * o.shape[3] +
                      d]);
    return ATTN_OK;
  }

private:
  attn_spec spec;
  Seen &seen;
  bool fail;
};

/// The normalized layer spec attn_mha_compile would pass.
attn_mha_spec normalized(attn_mha_spec s) {
  attn_mha_spec n;
  std::string error;
  EXPECT_TRUE(detail::validateMhaSpec(s, ATTN_TARGET_CUDA, n, error)) << error;
  return n;
}

attn_mha_spec layer(attn_dtype dtype, int64_t B, int64_t S, int64_t E,
                    int64_t Hq) {
  attn_mha_spec s;
  attn_mha_spec_init(&s);
  s.dtype = dtype;
  s.batch = B;
  s.seq = S;
  s.embed = E;
  s.heads_q = Hq;
  return s;
}

/// Random host tensors for every operand `spec` uses, y poisoned.
struct HostLayer {
  std::vector<std::vector<unsigned char>> buffers;
  attn_mha_args args{};
  std::vector<unsigned char> y;

  explicit HostLayer(const attn_mha_spec &n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    const int64_t elem = dtypeBytes(n.dtype);
    const int64_t qw = n.heads_q * n.head_dim, kw = n.heads_kv * n.head_dim,
                  vw = n.heads_kv * n.value_dim, ow = n.heads_q * n.value_dim;
    buffers.reserve(16);
    auto input = [&](const void *&slot, int64_t count, double scale) {
      buffers.emplace_back(size_t(count * elem));
      reference::fillRandom(rng, n.dtype, buffers.back().data(),
                            size_t(count), scale);
      slot = buffers.back().data();
    };
    input(args.x, n.batch * n.seq * n.embed, 1.0);
    if (n.cross)
      input(args.kv, n.batch * n.seq_kv * n.kv_embed, 1.0);
    const double in = 1 / std::sqrt(double(n.embed)),
                 kv = 1 / std::sqrt(double(n.kv_embed)),
                 out = 1 / std::sqrt(double(ow));
    if (n.fused_qkv) {
      input(args.w_qkv, (qw + kw + vw) * n.embed, in);
    } else {
      input(args.w_q, qw * n.embed, in);
      input(args.w_k, kw * n.kv_embed, kv);
      input(args.w_v, vw * n.kv_embed, kv);
    }
    input(args.w_o, n.embed * ow, out);
    if (n.bias) {
      if (n.fused_qkv) {
        input(args.b_qkv, qw + kw + vw, in);
      } else {
        input(args.b_q, qw, in);
        input(args.b_k, kw, kv);
        input(args.b_v, vw, kv);
      }
      input(args.b_o, n.embed, out);
    }
    y.resize(size_t(n.batch * n.seq * n.embed * elem));
    reference::poison(n.dtype, y.data(), size_t(n.batch * n.seq * n.embed));
    args.y = y.data();
  }
};

/// A layer of `n` on `d` and `b` around the reference attention (one that
/// fails every launch with `failAttention`).
std::unique_ptr<LayerExecutable> makeLayer(const Driver &d, const Blas &b,
                                           const attn_mha_spec &n, Seen &seen,
                                           std::string &error,
                                           bool failAttention = false) {
  attn_spec attention;
  EXPECT_TRUE(detail::validateSpec(layerAttentionSpec(n), ATTN_TARGET_CUDA,
                                   attention, error))
      << error;
  std::unique_ptr<LayerExecutable> exe;
  EXPECT_EQ(createLayerWithLibraries(d, b, n, attention,
                                     std::make_unique<ReferenceAttention>(
                                         attention, seen, failAttention),
                                     exe, error),
            ATTN_OK)
      << error;
  return exe;
}

/// Runs the layer on random inputs and compares y with the float64 layer
/// reference.
void checkLayer(const attn_mha_spec &spec, uint64_t seed) {
  const attn_mha_spec n = normalized(spec);
  const Driver d = hostDriver();
  const Blas b = hostBlas();
  Seen seen;
  std::string error;
  std::unique_ptr<LayerExecutable> exe = makeLayer(d, b, n, seen, error);
  ASSERT_TRUE(exe);
  HostLayer h(n, seed);
  const auto stream = reinterpret_cast<CUstream>(0x5eed);
  h.args.stream = stream;
  size_t matmuls = blasState().streams.size();
  ASSERT_EQ(exe->run(h.args, error), ATTN_OK) << error;
  EXPECT_TRUE(host().live.empty()) << "the workspace was not freed";
  ASSERT_EQ(seen.launches.size(), 1u);
  EXPECT_EQ(seen.launches[0].stream, stream);
  for (size_t i = matmuls; i < blasState().streams.size(); ++i)
    EXPECT_EQ(blasState().streams[i], stream);

  reference::Result ref;
  ASSERT_TRUE(reference::computeMhaReference(n, h.args, ref, error)) << error;
  attn_tensor yView{};
  yView.data = h.y.data();
  const int64_t shape[4] = {n.batch, 1, n.seq, n.embed},
                strides[4] = {n.seq * n.embed, n.seq * n.embed, n.embed, 1};
  for (int i = 0; i < 4; ++i) {
    yView.shape[i] = shape[i];
    yView.strides[i] = strides[i];
  }
  reference::Comparison c = reference::compare(
      ref, n.dtype, yView, nullptr, reference::mhaToleranceFor(n.dtype));
  EXPECT_TRUE(c.ok) << c.message << " (rel l2 " << c.relL2Err << ", tol "
                    << c.relL2Tol << ")";
  exe.reset();
  EXPECT_EQ(host().depth, 0) << "context pushes and pops unbalanced";
  EXPECT_EQ(host().retained, 0) << "the primary context was not released";
  EXPECT_EQ(blasState().handles, 0) << "the cuBLASLt handle was not destroyed";
}

//===----------------------------------------------------------------------===//
// The plan.
//===----------------------------------------------------------------------===//

TEST(CudaLayer, AttentionSpecIsTheDecomposition) {
  attn_mha_spec s = layer(ATTN_DTYPE_BF16, 2, 128, 512, 8);
  s.cross = 1;
  s.seq_kv = 96;
  s.kv_embed = 384;
  s.heads_kv = 2;
  s.value_dim = 32;
  s.causal = 1;
  s.scale = 0.25;
  attn_spec a = layerAttentionSpec(normalized(s));
  EXPECT_EQ(a.dtype, ATTN_DTYPE_BF16);
  EXPECT_EQ(a.batch, 2);
  EXPECT_EQ(a.heads_q, 8);
  EXPECT_EQ(a.heads_kv, 2);
  EXPECT_EQ(a.seq_q, 128);
  EXPECT_EQ(a.seq_kv, 96);
  EXPECT_EQ(a.head_dim, 64);
  EXPECT_EQ(a.value_dim, 32);
  EXPECT_EQ(a.causal, 1);
  EXPECT_EQ(a.scale, 0.25);
  EXPECT_EQ(a.mask, ATTN_MASK_NONE);
  EXPECT_EQ(a.dropout_p, 0.0);
  EXPECT_EQ(a.return_lse, 0);
}

TEST(CudaLayer, FusedAlignedWeightIsOneGemm) {
  // torch's in_proj_weight: Q, K, V rows of one [3E, E] weight, one GEMM
  // writing [B*S, 3E] rows; the attention reads q, k, v as BSHD views.
  attn_mha_spec s = layer(ATTN_DTYPE_F16, 2, 256, 1024, 16);
  s.fused_qkv = 1;
  s.bias = 1;
  LayerPlan p;
  std::string error;
  ASSERT_TRUE(planLayer(normalized(s), p, error)) << error;
  ASSERT_EQ(p.projections.size(), 1u);
  const Gemm &g = p.projections[0];
  EXPECT_EQ(g.what, "qkv");
  EXPECT_EQ(g.rows, 512);
  EXPECT_EQ(g.cols, 3072);
  EXPECT_EQ(g.inner, 1024);
  EXPECT_EQ(g.inputStride, 1024);
  EXPECT_EQ(g.outputStride, 3072);
  EXPECT_EQ(g.bias.operand, Operand::Bqkv);
  const int64_t q[4] = {256 * 3072, 64, 3072, 1};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(p.q.strides[i], q[i]);
    EXPECT_EQ(p.k.strides[i], q[i]);
    EXPECT_EQ(p.v.strides[i], q[i]);
  }
  EXPECT_EQ(p.q.data.offset, 0);
  EXPECT_EQ(p.k.data.offset, 1024);
  EXPECT_EQ(p.v.data.offset, 2048);
  EXPECT_EQ(p.output.inputStride, 1024);
  EXPECT_EQ(p.output.outputStride, 1024);
  EXPECT_EQ(p.attendedOffset, 512 * 3072 * 2);
  EXPECT_EQ(p.bytes, 512 * 3072 * 2 + 512 * 1024 * 2);
}

TEST(CudaLayer, UnalignedSectionsArePadded) {
  // f16 D = 6, Hq = 3: q's 18 features pad to 24 so k's rows start 16-byte
  // aligned; the fused weight runs as three row blocks.
  attn_mha_spec s = layer(ATTN_DTYPE_F16, 1, 16, 18, 3);
  s.fused_qkv = 1;
  s.bias = 1;
  LayerPlan p;
  std::string error;
  ASSERT_TRUE(planLayer(normalized(s), p, error)) << error;
  ASSERT_EQ(p.projections.size(), 3u);
  EXPECT_EQ(p.projections[1].weight.offset, 18 * 18);
  EXPECT_EQ(p.projections[1].bias.offset, 18);
  EXPECT_EQ(p.projections[2].weight.offset, 36 * 18);
  EXPECT_EQ(p.k.data.offset, 24);
  EXPECT_EQ(p.v.data.offset, 48);
  EXPECT_EQ(p.q.strides[2], 72);
  EXPECT_EQ(p.out.strides[2], 24);
  EXPECT_EQ(p.output.inputStride, 24);
}

//===----------------------------------------------------------------------===//
// The launch sequence, end to end on the host.
//===----------------------------------------------------------------------===//

TEST(CudaLayer, SelfAttentionSeparateWeights) {
  attn_mha_spec s = layer(ATTN_DTYPE_F32, 2, 24, 32, 4);
  s.bias = 1;
  checkLayer(s, 1);
}

TEST(CudaLayer, FusedWeightCausalNoBias) {
  attn_mha_spec s = layer(ATTN_DTYPE_F32, 2, 20, 32, 2);
  s.fused_qkv = 1;
  s.causal = 1;
  checkLayer(s, 2);
}

TEST(CudaLayer, FusedWeightPaddedRows) {
  attn_mha_spec s = layer(ATTN_DTYPE_F16, 2, 12, 18, 3);
  s.fused_qkv = 1;
  s.bias = 1;
  checkLayer(s, 3);
}

TEST(CudaLayer, CrossAttentionGqaValueDim) {
  attn_mha_spec s = layer(ATTN_DTYPE_BF16, 2, 10, 24, 4);
  s.cross = 1;
  s.seq_kv = 14;
  s.kv_embed = 20;
  s.heads_kv = 2;
  s.head_dim = 8;
  s.value_dim = 5;
  s.bias = 1;
  s.scale = 0.3;
  checkLayer(s, 4);
}

TEST(CudaLayer, AlgorithmsAreCachedPerAlignment) {
  const attn_mha_spec n = normalized(layer(ATTN_DTYPE_F32, 1, 8, 16, 2));
  const Driver d = hostDriver();
  const Blas b = hostBlas();
  Seen seen;
  std::string error;
  auto exe = makeLayer(d, b, n, seen, error);
  ASSERT_TRUE(exe);
  HostLayer h(n, 5);
  int before = blasState().heuristics;
  ASSERT_EQ(exe->run(h.args, error), ATTN_OK) << error;
  EXPECT_EQ(blasState().heuristics - before, 4); // q, k, v, output
  ASSERT_EQ(exe->run(h.args, error), ATTN_OK) << error;
  EXPECT_EQ(blasState().heuristics - before, 4) << "not cached";
  // x moved to a 4-byte aligned address: the q, k, v GEMMs ask again.
  std::vector<float> shifted(size_t(8 * 16 + 1));
  std::memcpy(shifted.data() + 1, h.args.x, 8 * 16 * sizeof(float));
  h.args.x = shifted.data() + 1;
  ASSERT_EQ(exe->run(h.args, error), ATTN_OK) << error;
  EXPECT_EQ(blasState().heuristics - before, 7);
  EXPECT_EQ(blasState().alignments.back(), 4u);
  // Split-K partial sums only ever reduced in f32 (one rounding).
  ASSERT_EQ(blasState().reductions.size(), blasState().alignments.size());
  for (uint32_t r : blasState().reductions)
    EXPECT_EQ(r, CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE);
  // Each GEMM got the workspace cuBLASLt asked for, inside the allocation.
  ASSERT_FALSE(blasState().workspaces.empty());
  EXPECT_EQ(blasState().workspaces.back().second, blasState().workspaceSize);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(blasState().workspaces.back().first) %
                256,
            0u);
}

TEST(CudaLayer, AFailedAttentionLeavesYUnwritten) {
  // The projections are enqueued, the attention kernel fails: the output
  // GEMM does not run, y keeps its poison, the workspace is still freed on
  // the stream, and the error names the attention.
  const attn_mha_spec n = normalized(layer(ATTN_DTYPE_F32, 1, 8, 16, 2));
  const Driver d = hostDriver();
  const Blas b = hostBlas();
  Seen seen;
  std::string error;
  auto exe = makeLayer(d, b, n, seen, error, /*failAttention=*/true);
  ASSERT_TRUE(exe);
  HostLayer h(n, 7);
  const auto stream = reinterpret_cast<CUstream>(0x5eed);
  h.args.stream = stream;
  size_t matmuls = blasState().streams.size(),
         frees = host().freeStreams.size();
  EXPECT_EQ(exe->run(h.args, error), ATTN_ERROR_BACKEND);
  EXPECT_NE(error.find("the attention kernel"), std::string::npos) << error;
  EXPECT_EQ(blasState().streams.size() - matmuls, 3u) << "q, k, v only";
  EXPECT_EQ(seen.launches.size(), 1u);
  EXPECT_TRUE(host().live.empty()) << "the workspace was not freed";
  ASSERT_EQ(host().freeStreams.size() - frees, 1u);
  EXPECT_EQ(host().freeStreams.back(), stream);
  const float *y = reinterpret_cast<const float *>(h.y.data());
  for (int64_t i = 0; i < n.batch * n.seq * n.embed; ++i)
    ASSERT_TRUE(std::isnan(y[i])) << "y[" << i << "] was written";
}

TEST(CudaLayer, DeviceWithoutPoolsIsRefused) {
  const attn_mha_spec n = normalized(layer(ATTN_DTYPE_F32, 1, 8, 16, 2));
  const Driver d = hostDriver();
  const Blas b = hostBlas();
  Seen seen;
  std::string error;
  auto exe = makeLayer(d, b, n, seen, error);
  ASSERT_TRUE(exe);
  HostLayer h(n, 6);
  host().poolsSupported = false;
  size_t matmuls = blasState().streams.size();
  EXPECT_EQ(exe->run(h.args, error), ATTN_ERROR_UNSUPPORTED);
  host().poolsSupported = true;
  EXPECT_NE(error.find("does not support stream-ordered memory pools"),
            std::string::npos)
      << error;
  EXPECT_EQ(blasState().streams.size(), matmuls) << "a GEMM ran";
  EXPECT_TRUE(seen.launches.empty());
}

TEST(CudaLayer, AttentionViewsTheKernelRefusesFailTheCompile) {
  // The attention compiled for other extents than the layer's: its views
  // do not match, which creation reports before any launch.
  const attn_mha_spec n = normalized(layer(ATTN_DTYPE_F32, 1, 8, 16, 2));
  attn_spec other = layerAttentionSpec(n);
  other.seq_q = 9;
  attn_spec attention;
  std::string error;
  ASSERT_TRUE(detail::validateSpec(other, ATTN_TARGET_CUDA, attention, error));
  const Driver d = hostDriver();
  const Blas b = hostBlas();
  Seen seen;
  std::unique_ptr<LayerExecutable> exe;
  EXPECT_EQ(createLayerWithLibraries(
                d, b, n, attention,
                std::make_unique<ReferenceAttention>(attention, seen), exe,
                error),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_FALSE(exe);
  EXPECT_NE(error.find("the layer's attention views"), std::string::npos)
      << error;
  EXPECT_EQ(host().retained, 0);
  EXPECT_EQ(host().depth, 0);
}

#ifdef ATTN_CHECK_CUBLASLT_H
TEST(CudaLayer, ConstantsMatchCublasLtH) {
  static_assert(attn::cuda::CUBLAS_STATUS_NOT_SUPPORTED ==
                ::CUBLAS_STATUS_NOT_SUPPORTED);
  static_assert(attn::cuda::CUDA_R_32F == ::CUDA_R_32F);
  static_assert(attn::cuda::CUDA_R_16F == ::CUDA_R_16F);
  static_assert(attn::cuda::CUDA_R_16BF == ::CUDA_R_16BF);
  static_assert(attn::cuda::CUBLAS_COMPUTE_32F == ::CUBLAS_COMPUTE_32F);
  static_assert(attn::cuda::CUBLAS_OP_N == ::CUBLAS_OP_N);
  static_assert(attn::cuda::CUBLAS_OP_T == ::CUBLAS_OP_T);
  static_assert(attn::cuda::CUBLASLT_MATMUL_DESC_TRANSA ==
                ::CUBLASLT_MATMUL_DESC_TRANSA);
  static_assert(attn::cuda::CUBLASLT_MATMUL_DESC_TRANSB ==
                ::CUBLASLT_MATMUL_DESC_TRANSB);
  static_assert(attn::cuda::CUBLASLT_MATMUL_DESC_EPILOGUE ==
                ::CUBLASLT_MATMUL_DESC_EPILOGUE);
  static_assert(attn::cuda::CUBLASLT_MATMUL_DESC_BIAS_POINTER ==
                ::CUBLASLT_MATMUL_DESC_BIAS_POINTER);
  static_assert(attn::cuda::CUBLASLT_EPILOGUE_DEFAULT ==
                ::CUBLASLT_EPILOGUE_DEFAULT);
  static_assert(attn::cuda::CUBLASLT_EPILOGUE_BIAS == ::CUBLASLT_EPILOGUE_BIAS);
  static_assert(attn::cuda::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES ==
                ::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES);
  static_assert(attn::cuda::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES ==
                ::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES);
  static_assert(attn::cuda::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES ==
                ::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES);
  static_assert(attn::cuda::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES ==
                ::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES);
  static_assert(attn::cuda::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES ==
                ::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES);
  static_assert(attn::cuda::CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK ==
                ::CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK);
  static_assert(attn::cuda::CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE ==
                ::CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE);
  static_assert(attn::cuda::CUBLAS_STATUS_SUCCESS == ::CUBLAS_STATUS_SUCCESS);
  static_assert(offsetof(attn::cuda::cublasLtMatmulHeuristicResult_t,
                         workspaceSize) ==
                offsetof(::cublasLtMatmulHeuristicResult_t, workspaceSize));
  static_assert(offsetof(attn::cuda::cublasLtMatmulHeuristicResult_t, state) ==
                offsetof(::cublasLtMatmulHeuristicResult_t, state));
  static_assert(offsetof(attn::cuda::cublasLtMatmulHeuristicResult_t,
                         wavesCount) ==
                offsetof(::cublasLtMatmulHeuristicResult_t, wavesCount));
  static_assert(sizeof(attn::cuda::cublasLtMatmulHeuristicResult_t) ==
                sizeof(::cublasLtMatmulHeuristicResult_t));
  static_assert(sizeof(attn::cuda::cublasLtMatmulAlgo_t) ==
                sizeof(::cublasLtMatmulAlgo_t));
}
#endif

TEST(CudaLayer, MissingLibraryIsReportedCleanly) {
  Blas b;
  std::string error;
  EXPECT_FALSE(loadBlasLibrary("/nonexistent/libcublasLt.so.13", b, error));
  EXPECT_NE(error.find("cannot load cuBLASLt"), std::string::npos) << error;
}

} // namespace
} // namespace cuda
} // namespace attn
