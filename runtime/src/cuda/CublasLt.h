//===- CublasLt.h - cuBLASLt's matmul API, resolved at run time -*- C++ -*-===//
//
// The attention layer (attn.mha) runs its projections as library GEMMs on
// cuda, as XLA and PyTorch do: cuBLASLt's cublasLtMatmul with a bias
// epilogue. As with the driver (CudaDriver.h), the runtime has no link-time
// dependency: the few entry points are declared here (types and values as
// in cublasLt.h, which the cuda-runtime tests check against the real header
// when the toolkit is installed) and looked up with dlopen/dlsym the first
// time a layer is compiled for cuda.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_SRC_CUDA_CUBLASLT_H
#define ATTN_RUNTIME_SRC_CUDA_CUBLASLT_H

#include "CudaDriver.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace attn {
namespace cuda {

using cublasStatus_t = int;
using cublasLtHandle_t = struct cublasLtContext *;
using cublasLtMatmulDesc_t = struct cublasLtMatmulDescOpaque *;
using cublasLtMatrixLayout_t = struct cublasLtMatrixLayoutOpaque *;
using cublasLtMatmulPreference_t = struct cublasLtMatmulPreferenceOpaque *;

constexpr cublasStatus_t CUBLAS_STATUS_SUCCESS = 0;
constexpr cublasStatus_t CUBLAS_STATUS_NOT_SUPPORTED = 15;
// cudaDataType values.
constexpr int CUDA_R_32F = 0;
constexpr int CUDA_R_16F = 2;
constexpr int CUDA_R_16BF = 14;
// cublasComputeType_t: f32 arithmetic (not TF32), for every dtype.
constexpr int CUBLAS_COMPUTE_32F = 68;
// cublasOperation_t.
constexpr int32_t CUBLAS_OP_N = 0;
constexpr int32_t CUBLAS_OP_T = 1;
// cublasLtMatmulDescAttributes_t.
constexpr int CUBLASLT_MATMUL_DESC_TRANSA = 3;
constexpr int CUBLASLT_MATMUL_DESC_TRANSB = 4;
constexpr int CUBLASLT_MATMUL_DESC_EPILOGUE = 7;
constexpr int CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8;
// cublasLtEpilogue_t.
constexpr uint32_t CUBLASLT_EPILOGUE_DEFAULT = 1;
constexpr uint32_t CUBLASLT_EPILOGUE_BIAS = 4;
// cublasLtMatmulPreferenceAttributes_t.
constexpr int CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1;
constexpr int CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK = 3;
constexpr int CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5;
constexpr int CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6;
constexpr int CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7;
constexpr int CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8;

// cublasLtReductionScheme_t: split-K partial sums reduced in the compute
// type (f32), never in the output type.
constexpr uint32_t CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE = 2;

/// cublasLtMatmulAlgo_t (semi-opaque, 64 bytes).
struct cublasLtMatmulAlgo_t {
  uint64_t data[8];
};

/// cublasLtMatmulHeuristicResult_t.
struct cublasLtMatmulHeuristicResult_t {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
};
static_assert(sizeof(cublasLtMatmulHeuristicResult_t) == 96,
              "cublasLtMatmulHeuristicResult_t is 96 bytes");

/// The cuBLASLt entry points attn uses, all required.
struct Blas {
  cublasStatus_t (*cublasLtCreate)(cublasLtHandle_t *);
  cublasStatus_t (*cublasLtDestroy)(cublasLtHandle_t);
  size_t (*cublasLtGetVersion)();
  const char *(*cublasLtGetStatusString)(cublasStatus_t);
  cublasStatus_t (*cublasLtMatmulDescCreate)(cublasLtMatmulDesc_t *, int, int);
  cublasStatus_t (*cublasLtMatmulDescDestroy)(cublasLtMatmulDesc_t);
  cublasStatus_t (*cublasLtMatmulDescSetAttribute)(cublasLtMatmulDesc_t, int,
                                                   const void *, size_t);
  cublasStatus_t (*cublasLtMatrixLayoutCreate)(cublasLtMatrixLayout_t *, int,
                                               uint64_t, uint64_t, int64_t);
  cublasStatus_t (*cublasLtMatrixLayoutDestroy)(cublasLtMatrixLayout_t);
  cublasStatus_t (*cublasLtMatmulPreferenceCreate)(cublasLtMatmulPreference_t *);
  cublasStatus_t (*cublasLtMatmulPreferenceDestroy)(cublasLtMatmulPreference_t);
  cublasStatus_t (*cublasLtMatmulPreferenceSetAttribute)(
      cublasLtMatmulPreference_t, int, const void *, size_t);
  cublasStatus_t (*cublasLtMatmulAlgoGetHeuristic)(
      cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
      cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
      cublasLtMatmulPreference_t, int, cublasLtMatmulHeuristicResult_t *,
      int *);
  cublasStatus_t (*cublasLtMatmul)(
      cublasLtHandle_t, cublasLtMatmulDesc_t, const void *, const void *,
      cublasLtMatrixLayout_t, const void *, cublasLtMatrixLayout_t,
      const void *, const void *, cublasLtMatrixLayout_t, void *,
      cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t *, void *, size_t,
      CUstream);
};

/// Opens `library` and resolves the entry points above without calling
/// any. False with `error` set when it cannot be opened or lacks one. With
/// `loadedOnly`, only a copy the process already has (RTLD_NOLOAD).
bool loadBlasLibrary(const char *library, Blas &blas, std::string &error,
                     bool loadedOnly = false);

/// cuBLASLt, loaded on first use and kept for the process; null with
/// `error` set when it cannot be. `ATTN_CUBLASLT` in the environment names
/// the library (a path or a soname); otherwise a libcublasLt.so.13 or .12
/// the process already loaded (PyTorch's, say: one copy, matching its CUDA),
/// then libcublasLt.so.13, then libcublasLt.so.12.
const Blas *getBlas(std::string &error);

/// "cublasLtFoo failed: CUBLAS_STATUS_X (n)" for a failed call.
std::string describe(const Blas &blas, const char *call, cublasStatus_t status);

} // namespace cuda
} // namespace attn

#endif // ATTN_RUNTIME_SRC_CUDA_CUBLASLT_H
