//===- AttnToNVGPU.h - attn.sdpa to a tensor-core gpu.launch ---*- C++ -*-===//
#ifndef ATTN_CONVERSION_ATTNTONVGPU_ATTNTONVGPU_H
#define ATTN_CONVERSION_ATTNTONVGPU_ATTNTONVGPU_H

#include "mlir/Pass/Pass.h"

#include <memory>

namespace mlir::attn {

/// The tensor-core kernel's fixed geometry: 4 warps of 16 query rows each,
/// key blocks of 64.
constexpr int64_t kNVGPUWarps = 4;
constexpr int64_t kNVGPUBlockQ = 16 * kNVGPUWarps;
constexpr int64_t kNVGPUBlockKv = 64;

/// convert-attn-to-nvgpu: rewrites each attn.sdpa in destination-passing
/// form that the tensor-core kernel supports (f16, D and Dv multiples
/// of 16 up to 128, no mask, no dropout) into a gpu.launch using
/// nvgpu.ldmatrix and nvgpu.mma.sync; other ops are left for
/// convert-attn-to-gpu.
std::unique_ptr<Pass> createConvertAttnToNVGPUPass();

void registerConvertAttnToNVGPUPass();

} // namespace mlir::attn

#endif
