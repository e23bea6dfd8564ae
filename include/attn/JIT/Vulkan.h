//===- Vulkan.h - the SPIR-V pipeline's output as the runtime's kernel --*- C++ -*-===//
#ifndef ATTN_JIT_VULKAN_H
#define ATTN_JIT_VULKAN_H

#include "attn/Target/SPIRV/SPIRVArtifact.h"
#include "attn/runtime/VulkanKernel.h"

#include "attn/runtime/Backend.h"
#include "attn/runtime/Vulkan.h"

#include <string>

namespace mlir::attn::jit {

/// The kernel the JIT builds for `spec` on a device of `info`: the variant
/// (`variant`, else ATTN_VULKAN_VARIANT, else chosen by the device's
/// features and the spec), its geometry, split count (kv_splits 0: sized
/// to info.computeUnits) and packing as docs/Vulkan.md ("How a variant is
/// chosen") states, attn-to-spirv-pipeline run, and the module read off as
/// `metadata` (without spec, block sizes or binary name: the caller's),
/// with the choices in `chosen` and the kernel's IR, its choices in its
/// first lines, in `source`. With `layerSource`, that layer's source (whose
/// attention `spec` is) is lowered instead. The JIT calls it with the
/// process's device; attn-translate --attn-to-spirv --vulkan-device=FILE
/// with a described one. ATTN_ERROR_UNSUPPORTED (with why) where the device
/// or the variant cannot take the spec.
attn_status lowerVulkanKernel(const attn_spec &spec,
                              const std::string *layerSource,
                              const ::attn::vulkan::DeviceInfo &info,
                              const std::string &variant,
                              ::attn::vulkan::KernelMetadata &metadata,
                              ::attn::KernelInfo &chosen, std::string &source,
                              std::string &error);

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
