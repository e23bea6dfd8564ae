//===- CUDA.h - compiling attn kernels for NVIDIA GPUs ---------*- C++ -*-===//
#ifndef ATTN_JIT_CUDA_H
#define ATTN_JIT_CUDA_H

#include "attn/runtime/CudaKernel.h"
#include "attn/runtime/attn.h"

#include <cstdint>
#include <string>

namespace mlir::attn::jit {

struct CudaCompileOptions {
  std::string chip = "sm_90a";
  int64_t blockQ = 64; // query rows (threads) per workgroup
  int64_t blockKv = 0; // 0 = the largest tile that fits 48 KB
  /// The mma.sync kernel for the specs it supports (tensorCoreEligible);
  /// others use the generic kernel. The runtime's JIT turns it on (checked
  /// on an H200, bench/results/cuda-h200-2026-11-21); tools default off.
  bool tensorCores = false;
  int64_t warps = 0;  // tensor cores: 4 or 8 (0 = 4 if causal or D, Dv <= 64, else 8)
  int64_t stages = 0; // tensor cores: depth of the cp.async K/V ring
                      // (2-4; 0: the geometry's default)
  int64_t rowTiles = 0; // tensor cores: m16 row tiles per warp (0 = 1)
};

/// Whether the tensor-core kernel (attn-configure-nvgpu) handles `spec`: f16 or bf16, D and Dv
/// multiples of 16 up to 256, any mask, any dropout, the default variant.
bool tensorCoreEligible(const attn_spec &spec);

/// The PTX version a chip needs (+ptx80 covers sm_80 through sm_90a).
std::string ptxFeaturesFor(const std::string &chip);

/// Compiles `spec` (validated) with attn-to-nvvm-pipeline: `ptx` gets the
/// module, `metadata` everything but binaryFile (entry, grid, block,
/// parameters, spec), `source` the kernel source IR. Returns
/// ATTN_ERROR_UNSUPPORTED for what the generic kernel cannot do yet
/// (dropout, the math variant), ATTN_ERROR_COMPILE on a pipeline failure.
attn_status compileCudaKernel(const attn_spec &spec,
                              const CudaCompileOptions &options,
                              std::string &ptx,
                              ::attn::cuda::KernelMetadata &metadata,
                              std::string &source, std::string &error);

/// Assembles PTX into a cubin with ptxas (from $PATH, else the CUDA
/// toolkit). `log` receives ptxas -v's report.
bool assembleCubin(const std::string &ptx, const std::string &chip,
                   std::string &cubin, std::string &log, std::string &error);

} // namespace mlir::attn::jit

#endif
