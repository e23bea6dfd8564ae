//===- CudaLayer.cpp - the attention layer (attn.mha) on cuda -------------===//
#include "CudaLayer.h"
#include "WorkspacePool.h"

#include "../Internal.h"
#include "attn/runtime/Checked.h"

#include <algorithm>
#include <map>
#include <mutex>

using namespace attn;
using namespace attn::cuda;

namespace {

/// Intermediates start at multiples of this many bytes (cuBLASLt's and
/// the tensor-core kernel's best alignment).
constexpr int64_t kWorkspaceAlign = 256;
/// What cuBLASLt may use as scratch per GEMM (NVIDIA's advice for Hopper).
constexpr uint64_t kBlasWorkspaceBytes = uint64_t(32) << 20;

int64_t roundUp(int64_t n, int64_t to) { return ceilDiv(n, to) * to; }

/// The largest power of two dividing `address` up to 256 (256 for null).
uint32_t alignmentOf(uint64_t address) {
  uint32_t a = 256;
  while (a > 1 && address % a)
    a /= 2;
  return a;
}

int blasType(attn_dtype dtype) {
  switch (dtype) {
  case ATTN_DTYPE_F16:
    return CUDA_R_16F;
  case ATTN_DTYPE_BF16:
    return CUDA_R_16BF;
  default:
    return CUDA_R_32F;
  }
}

std::string shapeOf(const Gemm &g) {
  return std::to_string(g.rows) + "x" + std::to_string(g.cols) + "x" +
         std::to_string(g.inner);
}

/// One GEMM's cuBLASLt descriptors. Row-major out[M, N] = in[M, K] · W[N,
/// K]ᵀ is, column-major, outᵀ[N, M] = op(W')·in' with W' = Wᵀ stored [K,
/// N] (ld K) transposed, in' = inᵀ stored [K, M] (ld inputStride), outᵀ
/// [N, M] (ld outputStride); the bias epilogue adds bias[n] to row n of
/// outᵀ, one value per output feature.
struct GemmDescriptors {
  const Gemm *gemm = nullptr; // in the layer's plan
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t w = nullptr, in = nullptr, out = nullptr;
  /// Algorithms by the launch pointers' alignment (heuristics depend on it).
  struct Algo {
    cublasLtMatmulAlgo_t algo;
    size_t workspace;
  };
  std::map<uint32_t, Algo> algos;
};

class CudaLayer final : public LayerExecutable {
public:
  CudaLayer(const Driver &d, const Blas &b, CUdevice device, CUcontext context,
            attn_mha_spec spec, attn_spec attentionSpec, LayerPlan plan,
            std::unique_ptr<Executable> attention)
      : d(d), b(b), device(device), context(context), spec(spec),
        attentionSpec(attentionSpec), plan(std::move(plan)),
        attention(std::move(attention)),
        pool(d, device, "layer workspace",
             "attention layers on cuda need them for their intermediates") {}

  ~CudaLayer() override {
    {
      // cuBLASLt's objects and the pool are released with the context
      // current where it can be made so (they do not need it otherwise).
      ScopedContext scope(d, context);
      for (GemmDescriptors &g : gemms) {
        if (g.desc)
          b.cublasLtMatmulDescDestroy(g.desc);
        for (cublasLtMatrixLayout_t l : {g.w, g.in, g.out})
          if (l)
            b.cublasLtMatrixLayoutDestroy(l);
      }
      if (handle)
        b.cublasLtDestroy(handle);
      attention.reset();
      pool.destroy();
    }
    d.cuDevicePrimaryCtxRelease(device);
  }

  /// Creates the handle and every GEMM's descriptors (with the context
  /// current).
  attn_status init(std::string &error) {
    if (cublasStatus_t s = b.cublasLtCreate(&handle)) {
      handle = nullptr;
      error = "cuda: " + describe(b, "cublasLtCreate", s);
      return ATTN_ERROR_BACKEND;
    }
    for (const Gemm &g : plan.projections)
      gemms.emplace_back().gemm = &g;
    gemms.emplace_back().gemm = &plan.output;
    const int type = blasType(spec.dtype);
    for (GemmDescriptors &gd : gemms) {
      const Gemm &g = *gd.gemm;
      auto fail = [&](const char *call, cublasStatus_t s) {
        error = "cuda: " + describe(b, call, s) + " for the '" + g.what +
                "' GEMM (" + shapeOf(g) + ")";
        return ATTN_ERROR_BACKEND;
      };
      if (cublasStatus_t s = b.cublasLtMatmulDescCreate(
              &gd.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F))
        return fail("cublasLtMatmulDescCreate", s);
      const int32_t transW = CUBLAS_OP_T, transIn = CUBLAS_OP_N;
      const uint32_t epilogue = g.bias.operand == Operand::None
                                    ? CUBLASLT_EPILOGUE_DEFAULT
                                    : CUBLASLT_EPILOGUE_BIAS;
      if (cublasStatus_t s = b.cublasLtMatmulDescSetAttribute(
              gd.desc, CUBLASLT_MATMUL_DESC_TRANSA, &transW, sizeof(transW)))
        return fail("cublasLtMatmulDescSetAttribute(TRANSA)", s);
      if (cublasStatus_t s = b.cublasLtMatmulDescSetAttribute(
              gd.desc, CUBLASLT_MATMUL_DESC_TRANSB, &transIn, sizeof(transIn)))
        return fail("cublasLtMatmulDescSetAttribute(TRANSB)", s);
      if (cublasStatus_t s = b.cublasLtMatmulDescSetAttribute(
              gd.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
              sizeof(epilogue)))
        return fail("cublasLtMatmulDescSetAttribute(EPILOGUE)", s);
      if (cublasStatus_t s = b.cublasLtMatrixLayoutCreate(
              &gd.w, type, uint64_t(g.inner), uint64_t(g.cols), g.inner))
        return fail("cublasLtMatrixLayoutCreate", s);
      if (cublasStatus_t s = b.cublasLtMatrixLayoutCreate(
              &gd.in, type, uint64_t(g.inner), uint64_t(g.rows), g.inputStride))
        return fail("cublasLtMatrixLayoutCreate", s);
      if (cublasStatus_t s = b.cublasLtMatrixLayoutCreate(
              &gd.out, type, uint64_t(g.cols), uint64_t(g.rows),
              g.outputStride))
        return fail("cublasLtMatrixLayoutCreate", s);
    }
    return ATTN_OK;
  }

  attn_status run(const attn_mha_args &args, std::string &error) override {
    ScopedContext scope(d, context);
    if (!scope.ok()) {
      error = "cuda: cannot make the layer's context current";
      return ATTN_ERROR_BACKEND;
    }
    CUstream stream = static_cast<CUstream>(args.stream);
    // Descriptors carry the bias pointer and the algorithm cache: one launch
    // at a time sets them up and enqueues.
    std::lock_guard<std::mutex> lock(mutex);

    // Everything that can reject the launch happens before anything is
    // allocated or enqueued. Workspace addresses are 256-byte aligned
    // wherever the allocation lands, so alignments and the attention's
    // views are known before it exists.
    std::vector<const GemmDescriptors::Algo *> algos(gemms.size());
    size_t blasBytes = 0;
    for (size_t i = 0; i < gemms.size(); ++i) {
      if (attn_status s = algorithm(gemms[i], args, algos[i], error))
        return s;
      blasBytes = std::max(blasBytes, algos[i]->workspace);
    }
    KernelArgs attentionArgs;
    if (!attentionLaunch(args, uint64_t(kWorkspaceAlign), stream,
                         attentionArgs, error))
      return ATTN_ERROR_INVALID_ARGUMENT;
    int64_t blasOffset = roundUp(plan.bytes, kWorkspaceAlign);
    uint64_t total = uint64_t(blasOffset) + blasBytes;

    if (!d.hasMemoryPools()) {
      error = "cuda: an attention layer needs " + std::to_string(total) +
              " bytes of device workspace for its intermediates, but the "
              "CUDA driver lacks " +
              pool.missingEntryPoints() +
              " (stream-ordered memory pools, CUDA 11.2+); update the driver";
      return ATTN_ERROR_UNSUPPORTED;
    }
    CUmemoryPool p = nullptr;
    if (attn_status s = pool.get(p, error))
      return s;
    CUdeviceptr base = 0;
    if (CUresult r = d.cuMemAllocFromPoolAsync(&base, total, p, stream)) {
      error = "cuda: " + describe(d, "cuMemAllocFromPoolAsync", r) +
              " allocating " + std::to_string(total) +
              " bytes of layer workspace";
      return r == CUDA_ERROR_NOT_SUPPORTED ? ATTN_ERROR_UNSUPPORTED
                                           : ATTN_ERROR_BACKEND;
    }
    void *blasWorkspace =
        blasBytes ? reinterpret_cast<void *>(base + blasOffset) : nullptr;

    attn_status status = ATTN_OK;
    for (size_t i = 0; i + 1 < gemms.size() && status == ATTN_OK; ++i)
      status = enqueue(gemms[i], *algos[i], args, base, blasWorkspace,
                       blasBytes, stream, error);
    if (status == ATTN_OK) {
      bool ok = attentionLaunch(args, base, stream, attentionArgs, error);
      if (!ok)
        status = ATTN_ERROR_INVALID_ARGUMENT; // checked above: not reached
      else if ((status = attention->run(attentionArgs, error)) != ATTN_OK)
        error = "the attention kernel: " + error;
    }
    if (status == ATTN_OK)
      status = enqueue(gemms.back(), *algos.back(), args, base, blasWorkspace,
                       blasBytes, stream, error);
    // Freed on the stream after everything above (also after a failure);
    // the first error is the one reported.
    if (CUresult r = d.cuMemFreeAsync(base, stream); r && status == ATTN_OK) {
      error = "cuda: " + describe(d, "cuMemFreeAsync", r) +
              " freeing the layer workspace";
      status = ATTN_ERROR_BACKEND;
    }
    return status;
  }

  /// The attention's launch on the workspace at `base`, checked as
  /// attn_launch checks it.
  bool attentionLaunch(const attn_mha_args &args, uint64_t base,
                       CUstream stream, KernelArgs &out, std::string &error) {
    attn_launch_args la{};
    auto view = [&](const View &v, attn_tensor &t) {
      t.data = const_cast<void *>(resolve(v.data, spec, args, plan, base));
      for (int i = 0; i < 4; ++i) {
        t.shape[i] = v.shape[i];
        t.strides[i] = v.strides[i];
      }
    };
    view(plan.q, la.q);
    view(plan.k, la.k);
    view(plan.v, la.v);
    view(plan.out, la.out);
    la.stream = stream;
    if (!detail::validateLaunch(attentionSpec, ATTN_TARGET_CUDA, la, out,
                                error)) {
      error = "cuda: the layer's attention views: " + error;
      return false;
    }
    return true;
  }

private:
  /// The algorithm for a GEMM at this launch's pointer alignment, from
  /// cuBLASLt's heuristics on first use. Sets the descriptor's bias pointer
  /// for this launch (the heuristics read its alignment; enqueue uses it).
  attn_status algorithm(GemmDescriptors &gd, const attn_mha_args &args,
                        const GemmDescriptors::Algo *&out, std::string &error) {
    const Gemm &g = *gd.gemm;
    const uint64_t aligned = uint64_t(kWorkspaceAlign);
    auto at = [&](const Ref &r) {
      return reinterpret_cast<uint64_t>(resolve(r, spec, args, plan, aligned));
    };
    uint32_t align = std::min({alignmentOf(at(g.input)),
                               alignmentOf(at(g.weight)),
                               alignmentOf(at(g.output))});
    const void *bias = resolve(g.bias, spec, args, plan, aligned);
    if (bias)
      align = std::min(align, alignmentOf(reinterpret_cast<uint64_t>(bias)));
    // The heuristics read the bias pointer's alignment from the descriptor;
    // biases are caller tensors, so it is also the launch's pointer.
    if (g.bias.operand != Operand::None)
      if (cublasStatus_t s = b.cublasLtMatmulDescSetAttribute(
              gd.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias))) {
        error = "cuda: " +
                describe(b, "cublasLtMatmulDescSetAttribute(BIAS_POINTER)", s) +
                " for the '" + g.what + "' GEMM";
        return ATTN_ERROR_BACKEND;
      }
    auto found = gd.algos.find(align);
    if (found != gd.algos.end()) {
      out = &found->second;
      return ATTN_OK;
    }
    cublasLtMatmulPreference_t pref = nullptr;
    if (cublasStatus_t s = b.cublasLtMatmulPreferenceCreate(&pref)) {
      error = "cuda: " + describe(b, "cublasLtMatmulPreferenceCreate", s);
      return ATTN_ERROR_BACKEND;
    }
    struct Destroy {
      const Blas &b;
      cublasLtMatmulPreference_t p;
      ~Destroy() { b.cublasLtMatmulPreferenceDestroy(p); }
    } destroy{b, pref};
    cublasStatus_t s = b.cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &kBlasWorkspaceBytes,
        sizeof(kBlasWorkspaceBytes));
    // Split-K partial sums reduced in f32: every output rounded once.
    const uint32_t reduction = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    if (s == CUBLAS_STATUS_SUCCESS)
      s = b.cublasLtMatmulPreferenceSetAttribute(
          pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &reduction,
          sizeof(reduction));
    for (int attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                     CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                     CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                     CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
      if (s == CUBLAS_STATUS_SUCCESS)
        s = b.cublasLtMatmulPreferenceSetAttribute(pref, attr, &align,
                                                   sizeof(align));
    if (s) {
      error = "cuda: " + describe(b, "cublasLtMatmulPreferenceSetAttribute", s);
      return ATTN_ERROR_BACKEND;
    }
    cublasLtMatmulHeuristicResult_t result{};
    int count = 0;
    s = b.cublasLtMatmulAlgoGetHeuristic(handle, gd.desc, gd.w, gd.in, gd.out,
                                         gd.out, pref, 1, &result, &count);
    if (s == CUBLAS_STATUS_NOT_SUPPORTED || (s == CUBLAS_STATUS_SUCCESS &&
                                             count < 1)) {
      error = "cuda: cuBLASLt has no algorithm for the '" + g.what +
              "' GEMM (" + shapeOf(g) + ", " + attn_dtype_name(spec.dtype) +
              ", pointers aligned to " + std::to_string(align) + " bytes)";
      return ATTN_ERROR_UNSUPPORTED;
    }
    if (s) {
      error = "cuda: " + describe(b, "cublasLtMatmulAlgoGetHeuristic", s) +
              " for the '" + g.what + "' GEMM (" + shapeOf(g) + ")";
      return ATTN_ERROR_BACKEND;
    }
    out = &(gd.algos[align] = {result.algo, result.workspaceSize});
    return ATTN_OK;
  }

  /// Enqueues a GEMM whose descriptor algorithm() prepared for this launch
  /// (its bias pointer is a caller tensor's, set there).
  attn_status enqueue(GemmDescriptors &gd, const GemmDescriptors::Algo &a,
                      const attn_mha_args &args, uint64_t base,
                      void *blasWorkspace, size_t blasBytes, CUstream stream,
                      std::string &error) {
    const Gemm &g = *gd.gemm;
    const float one = 1.0f, zero = 0.0f;
    void *out = const_cast<void *>(resolve(g.output, spec, args, plan, base));
    if (cublasStatus_t s = b.cublasLtMatmul(
            handle, gd.desc, &one, resolve(g.weight, spec, args, plan, base),
            gd.w, resolve(g.input, spec, args, plan, base), gd.in, &zero, out,
            gd.out, out, gd.out, &a.algo, blasWorkspace, blasBytes, stream)) {
      error = "cuda: " + describe(b, "cublasLtMatmul", s) + " for the '" +
              g.what + "' GEMM (" + shapeOf(g) + ")";
      return ATTN_ERROR_BACKEND;
    }
    return ATTN_OK;
  }

  const Driver &d;
  const Blas &b;
  CUdevice device;
  CUcontext context;
  attn_mha_spec spec;
  attn_spec attentionSpec;
  LayerPlan plan;
  std::unique_ptr<Executable> attention;
  WorkspacePool pool;
  cublasLtHandle_t handle = nullptr;
  std::vector<GemmDescriptors> gemms; // plan.projections, then plan.output
  std::mutex mutex;
};

} // namespace

attn_spec cuda::layerAttentionSpec(const attn_mha_spec &l) {
  return ::attn::layerAttentionSpec(l);
}

bool cuda::planLayer(const attn_mha_spec &s, LayerPlan &p, std::string &error) {
  p = LayerPlan{};
  const int64_t elem = dtypeBytes(s.dtype), align = 16 / elem;
  const int64_t B = s.batch, S = s.seq, E = s.embed, Hq = s.heads_q,
                Hkv = s.heads_kv, D = s.head_dim, Dv = s.value_dim;
  const int64_t Skv = s.cross ? s.seq_kv : S, Ekv = s.cross ? s.kv_embed : E;
  int64_t qw, kw, vw, ow;
  if (!checkedMul(Hq, D, qw) || !checkedMul(Hkv, D, kw) ||
      !checkedMul(Hkv, Dv, vw) || !checkedMul(Hq, Dv, ow)) {
    error = "the layer's projected widths overflow";
    return false;
  }
  // Each section of a row starts 16-byte aligned.
  const int64_t qs = roundUp(qw, align), ks = roundUp(kw, align),
                vs = roundUp(vw, align), os = roundUp(ow, align);
  // Self-attention: q | k | v in one row of Projected. Cross: q alone
  // there, k | v in ProjectedKv.
  const int64_t pw = s.cross ? qs : qs + ks + vs, kvw = s.cross ? ks + vs : pw;
  const Operand kvBuf = s.cross ? Operand::ProjectedKv : Operand::Projected;
  const int64_t kOff = s.cross ? 0 : qs, vOff = kOff + ks;
  const Operand src = s.cross ? Operand::Kv : Operand::X;
  const bool bias = s.bias != 0;
  auto gemm = [&](std::string what, int64_t rows, int64_t cols, int64_t inner,
                  Ref in, Ref w, Ref bi, Ref out, int64_t outStride) {
    Gemm g;
    g.what = std::move(what);
    g.rows = rows;
    g.cols = cols;
    g.inner = inner;
    g.input = in;
    g.inputStride = inner;
    g.weight = w;
    g.bias = bias ? bi : Ref{};
    g.output = out;
    g.outputStride = outStride;
    return g;
  };
  int64_t rowsQ, rowsKv;
  if (!checkedMul(B, S, rowsQ) || !checkedMul(B, Skv, rowsKv)) {
    error = "the layer's row counts overflow";
    return false;
  }
  if (s.fused_qkv) {
    // Row blocks of one weight: q rows [0, qw), k [qw, qw + kw), v after.
    if (qs == qw && ks == kw) {
      p.projections.push_back(gemm("qkv", rowsQ, qw + kw + vw, E,
                                   {Operand::X, 0}, {Operand::Wqkv, 0},
                                   {Operand::Bqkv, 0}, {Operand::Projected, 0},
                                   pw));
    } else {
      p.projections.push_back(gemm("q", rowsQ, qw, E, {Operand::X, 0},
                                   {Operand::Wqkv, 0}, {Operand::Bqkv, 0},
                                   {Operand::Projected, 0}, pw));
      p.projections.push_back(gemm("k", rowsQ, kw, E, {Operand::X, 0},
                                   {Operand::Wqkv, qw * E},
                                   {Operand::Bqkv, qw},
                                   {Operand::Projected, kOff}, pw));
      p.projections.push_back(gemm("v", rowsQ, vw, E, {Operand::X, 0},
                                   {Operand::Wqkv, (qw + kw) * E},
                                   {Operand::Bqkv, qw + kw},
                                   {Operand::Projected, vOff}, pw));
    }
  } else {
    p.projections.push_back(gemm("q", rowsQ, qw, E, {Operand::X, 0},
                                 {Operand::Wq, 0}, {Operand::Bq, 0},
                                 {Operand::Projected, 0}, pw));
    p.projections.push_back(gemm("k", rowsKv, kw, Ekv, {src, 0},
                                 {Operand::Wk, 0}, {Operand::Bk, 0},
                                 {kvBuf, kOff}, kvw));
    p.projections.push_back(gemm("v", rowsKv, vw, Ekv, {src, 0},
                                 {Operand::Wv, 0}, {Operand::Bv, 0},
                                 {kvBuf, vOff}, kvw));
  }
  p.output = gemm("output", rowsQ, E, ow, {Operand::Attended, 0},
                  {Operand::Wo, 0}, {Operand::Bo, 0}, {Operand::Y, 0}, E);
  p.output.inputStride = os;

  auto view = [](Ref data, int64_t b, int64_t h, int64_t seq, int64_t d,
                 int64_t width) {
    View v;
    v.data = data;
    const int64_t shape[4] = {b, h, seq, d},
                  strides[4] = {seq * width, d, width, 1};
    for (int i = 0; i < 4; ++i) {
      v.shape[i] = shape[i];
      v.strides[i] = strides[i];
    }
    return v;
  };
  // The byte sizes bound the views' batch strides (S * width) too.
  int64_t projectedBytes, kvBytes, attendedBytes;
  if (!checkedProduct({rowsQ, pw, elem}, projectedBytes) ||
      !checkedProduct({rowsKv, kvw, elem}, kvBytes) ||
      !checkedProduct({rowsQ, os, elem}, attendedBytes)) {
    error = "the layer's intermediates overflow";
    return false;
  }
  p.q = view({Operand::Projected, 0}, B, Hq, S, D, pw);
  p.k = view({kvBuf, kOff}, B, Hkv, Skv, D, kvw);
  p.v = view({kvBuf, vOff}, B, Hkv, Skv, Dv, kvw);
  p.out = view({Operand::Attended, 0}, B, Hq, S, Dv, os);
  int64_t offset = roundUp(projectedBytes, kWorkspaceAlign);
  if (s.cross) {
    p.projectedKvOffset = offset;
    if (!checkedAdd(offset, roundUp(kvBytes, kWorkspaceAlign), offset)) {
      error = "the layer's intermediates overflow";
      return false;
    }
  }
  p.attendedOffset = offset;
  if (!checkedAdd(offset, attendedBytes, p.bytes) ||
      p.bytes > (int64_t(1) << 62)) {
    error = "the layer's intermediates take more than 2^62 bytes";
    return false;
  }
  return true;
}

const void *cuda::resolve(const Ref &r, const attn_mha_spec &spec,
                          const attn_mha_args &a, const LayerPlan &plan,
                          uint64_t workspace) {
  const int64_t elem = dtypeBytes(spec.dtype);
  const void *base = nullptr;
  switch (r.operand) {
  case Operand::None: return nullptr;
  case Operand::X: base = a.x; break;
  case Operand::Kv: base = a.kv; break;
  case Operand::Wq: base = a.w_q; break;
  case Operand::Wk: base = a.w_k; break;
  case Operand::Wv: base = a.w_v; break;
  case Operand::Wqkv: base = a.w_qkv; break;
  case Operand::Wo: base = a.w_o; break;
  case Operand::Bq: base = a.b_q; break;
  case Operand::Bk: base = a.b_k; break;
  case Operand::Bv: base = a.b_v; break;
  case Operand::Bqkv: base = a.b_qkv; break;
  case Operand::Bo: base = a.b_o; break;
  case Operand::Y: base = a.y; break;
  case Operand::Projected:
    base = reinterpret_cast<const void *>(workspace);
    break;
  case Operand::ProjectedKv:
    base = reinterpret_cast<const void *>(workspace + plan.projectedKvOffset);
    break;
  case Operand::Attended:
    base = reinterpret_cast<const void *>(workspace + plan.attendedOffset);
    break;
  }
  if (!base)
    return nullptr;
  return static_cast<const char *>(base) + r.offset * elem;
}

attn_status cuda::createLayerWithLibraries(
    const Driver &d, const Blas &b, const attn_mha_spec &spec,
    const attn_spec &attentionSpec, std::unique_ptr<Executable> attention,
    std::unique_ptr<LayerExecutable> &layer, std::string &error) {
  LayerPlan plan;
  if (!planLayer(spec, plan, error)) {
    error = "cuda: " + error;
    return ATTN_ERROR_INVALID_ARGUMENT;
  }
  CUdevice device = 0;
  CUcontext current = nullptr;
  auto fail = [&](const char *call, CUresult r) {
    error = "cuda: " + describe(d, call, r);
    return ATTN_ERROR_BACKEND;
  };
  if (CUresult r = d.cuCtxGetCurrent(&current))
    return fail("cuCtxGetCurrent", r);
  if (current) {
    if (CUresult r = d.cuCtxGetDevice(&device))
      return fail("cuCtxGetDevice", r);
  } else if (CUresult r = d.cuDeviceGet(&device, 0)) {
    return fail("cuDeviceGet", r);
  }
  CUcontext context = nullptr;
  if (CUresult r = d.cuDevicePrimaryCtxRetain(&context, device))
    return fail("cuDevicePrimaryCtxRetain", r);
  // From here the layer owns the retained context (its destructor
  // releases it).
  auto made = std::make_unique<CudaLayer>(d, b, device, context, spec,
                                          attentionSpec, std::move(plan),
                                          std::move(attention));
  {
    ScopedContext scope(d, context);
    if (!scope.ok()) {
      error = "cuda: cannot make the primary context current";
      return ATTN_ERROR_BACKEND;
    }
    // The attention's views hold on any 256-byte aligned workspace: a view
    // the kernel's spec refuses is a compile error, not a launch one.
    attn_mha_args none{};
    KernelArgs unused;
    if (!made->attentionLaunch(none, uint64_t(kWorkspaceAlign), nullptr,
                               unused, error))
      return ATTN_ERROR_INVALID_ARGUMENT;
    if (attn_status s = made->init(error))
      return s;
  }
  layer = std::move(made);
  return ATTN_OK;
}

attn_status cuda::compileLayer(const attn_mha_spec &spec,
                               Compiler &attentionCompiler,
                               LayerCompileResult &result, std::string &error) {
  std::string why;
  const Driver *d = getDriver(why);
  if (!d) {
    error = "cuda: " + why;
    return ATTN_ERROR_UNAVAILABLE;
  }
  const Blas *b = getBlas(why);
  if (!b) {
    error = "cuda: " + why;
    return ATTN_ERROR_UNAVAILABLE;
  }
  attn_spec attentionSpec;
  if (!detail::validateSpec(layerAttentionSpec(spec), ATTN_TARGET_CUDA,
                            attentionSpec, error)) {
    error = "cuda: the layer's attention: " + error;
    return ATTN_ERROR_INVALID_ARGUMENT;
  }
  CompileResult attention;
  if (attn_status s = attentionCompiler.compile(attentionSpec, attention, error))
    return s;
  if (attn_status s = createLayerWithLibraries(
          *d, *b, spec, attentionSpec, std::move(attention.executable),
          result.executable, error))
    return s;
  LayerPlan plan;
  planLayer(spec, plan, error); // succeeded in createLayerWithLibraries
  std::string gemms;
  for (const Gemm &g : plan.projections)
    gemms += "//   " + g.what + ": " + shapeOf(g) + " (rows x cols x inner)\n";
  gemms += "//   output: " + shapeOf(plan.output) + "\n";
  result.source =
      "// attn.mha on cuda: the projections and the output projection are "
      "cuBLASLt GEMMs (f32 accumulation, bias epilogue) writing BSHD rows "
      "the attention kernel below reads by strides:\n" +
      gemms + "// the attention kernel (attn-decompose-mha's attn.sdpa):\n" +
      (attention.source.empty() ? "// (loaded ahead of time: no source)\n"
                                : attention.source);
  return ATTN_OK;
}
