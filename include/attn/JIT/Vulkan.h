//===- Vulkan.h - the SPIR-V pipeline's output as the runtime's kernel --*- C++ -*-===//
#ifndef ATTN_JIT_VULKAN_H
#define ATTN_JIT_VULKAN_H

#include "attn/Target/SPIRV/SPIRVArtifact.h"
#include "attn/runtime/VulkanKernel.h"

#include <string>

namespace mlir::attn::jit {

/// The runtime's kernel description (::attn::vulkan::KernelMetadata) of a
/// module lowered by attn-to-spirv-pipeline: what the JIT creates its
/// executable from and what attn-translate --attn-to-spirv writes as the
/// .spv.json. `variant` names the kernel; the spec, block sizes, split
/// count and binary file name are the caller's to fill in.
void toVulkanKernelMetadata(const SPIRVKernelArtifact &artifact,
                            const std::string &variant,
                            ::attn::vulkan::KernelMetadata &out);

} // namespace mlir::attn::jit

#endif // ATTN_JIT_VULKAN_H
