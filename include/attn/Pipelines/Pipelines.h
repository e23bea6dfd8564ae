//===- Pipelines.h - attn pass pipelines ----------------------*- C++ -*-===//
#ifndef ATTN_PIPELINES_PIPELINES_H
#define ATTN_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <string>

namespace mlir::attn {

/// Options of attn-to-cpu-pipeline.
struct AttnToCPUPipelineOptions
    : public PassPipelineOptions<AttnToCPUPipelineOptions> {
  Option<bool> math{*this, "math",
                    llvm::cl::desc("Use the untiled reference lowering "
                                   "(convert-attn-to-linalg) instead of the "
                                   "FlashAttention rewrite"),
                    llvm::cl::init(false)};
  Option<int64_t> blockQ{*this, "block-q", llvm::cl::desc("Query tile rows"),
                         llvm::cl::init(64)};
  Option<int64_t> blockKv{*this, "block-kv", llvm::cl::desc("Key block size"),
                          llvm::cl::init(64)};
  Option<int64_t> kvSplits{*this, "kv-splits",
                           llvm::cl::desc("Split-KV chunks (1 off, 0 auto)"),
                           llvm::cl::init(0)};
  Option<int64_t> parallelism{
      *this, "parallelism",
      llvm::cl::desc("Worker threads assumed by split-KV (0 = host cores)"),
      llvm::cl::init(0)};
  Option<bool> parallel{*this, "parallel",
                        llvm::cl::desc("Run the parallel tiles on all cores "
                                       "through OpenMP"),
                        llvm::cl::init(true)};
};

/// attn.sdpa on tensors -> LLVM dialect, runnable by the ExecutionEngine.
void buildAttnToCPUPipeline(OpPassManager &pm,
                            const AttnToCPUPipelineOptions &options);

/// Options of attn-to-nvvm-pipeline.
struct AttnToNVVMPipelineOptions
    : public PassPipelineOptions<AttnToNVVMPipelineOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("Target GPU (sm_80, sm_90, sm_90a)"),
                           llvm::cl::init("sm_90a")};
  Option<std::string> features{*this, "features",
                               llvm::cl::desc("PTX features (PTX version)"),
                               llvm::cl::init("+ptx80")};
  Option<std::string> format{
      *this, "format",
      llvm::cl::desc("gpu-module-to-binary format: isa (PTX), bin (cubin, "
                     "needs ptxas), fatbin"),
      llvm::cl::init("isa")};
  Option<int64_t> blockQ{*this, "block-q",
                         llvm::cl::desc("Query rows (threads) per workgroup"),
                         llvm::cl::init(64)};
  Option<int64_t> blockKv{
      *this, "block-kv",
      llvm::cl::desc("Keys per shared-memory tile (0 = fit 48 KB)"),
      llvm::cl::init(0)};
  Option<bool> tensorCores{
      *this, "tensor-cores",
      llvm::cl::desc("Experimental: use the mma.sync kernel "
                     "(convert-attn-to-nvgpu) where it applies"),
      llvm::cl::init(false)};
};

/// attn.sdpa in destination-passing form -> gpu.binary with PTX (NVVM).
void buildAttnToNVVMPipeline(OpPassManager &pm,
                             const AttnToNVVMPipelineOptions &options);

/// The CUDA toolkit folder ($CUDA_HOME, $CUDA_PATH, /usr/local/cuda) when it
/// holds libdevice, else "".
std::string findCudaToolkit();

/// Registers attn-to-nvvm-pipeline and convert-attn-to-gpu.
void registerAttnToNVVMPipeline();

/// Registers every attn pipeline with the global pass registry.
void registerAttnPipelines();

} // namespace mlir::attn

#endif
