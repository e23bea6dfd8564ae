//===- Passes.h - attn passes of the SPIR-V target --------------*- C++ -*-===//
#ifndef ATTN_TARGET_SPIRV_PASSES_H
#define ATTN_TARGET_SPIRV_PASSES_H

#include "mlir/Pass/Pass.h"

#include <cstdint>
#include <memory>

namespace mlir::attn {

/// The bufferization step of attn-to-spirv-pipeline (attn-spirv-bufferize).
std::unique_ptr<Pass> createSPIRVBufferizePass();
void registerSPIRVBufferizePass();
/// Its step that sets each kernel's spirv.entry_point_abi
/// (attn-spirv-entry-point-abi).
std::unique_ptr<Pass> createSPIRVEntryPointABIPass();
void registerSPIRVEntryPointABIPass();

/// Every bf16 memref becomes an i16 memref with the same bits; loads and
/// stores of them bitcast (SPIRVBf16Storage.cpp). For SPIR-V targets
/// without a bf16 type; runs before outlining.
std::unique_ptr<Pass> createSPIRVBf16StoragePass();
void registerSPIRVBf16StoragePass();

/// The module attribute by which attn-spirv-coopmat-kernel marks a bf16
/// kernel written in f16, for attn-spirv-coopmat-bf16.
constexpr const char kCoopMatBf16Attr[] = "attn.coopmat_bf16";
/// After convert-gpu-to-spirv (variant=coopmat): a marked module's
/// spirv.modules retyped f16 -> bf16 (SPIRVCoopMatBf16.cpp).
std::unique_ptr<Pass> createSPIRVCoopMatBf16Pass();
void registerSPIRVCoopMatBf16Pass();
/// After outlining: kernels with dynamically sized memref arguments take
/// them as 1-D buffers indexed linearly, plus a memref<Nxi32> of their
/// dynamic sizes that each launch fills (attn-spirv-dynamic-shapes);
/// maxExtent > 0 clamps the sizes kernels read to it (for the loop budget).
std::unique_ptr<Pass> createSPIRVDynamicShapesPass(int64_t maxExtent);
void registerSPIRVDynamicShapesPass();
/// Its check that no invocation runs more loop iterations than the device
/// allows (attn-spirv-loop-budget; 0 = no limit).
std::unique_ptr<Pass> createSPIRVLoopBudgetPass(uint64_t maxIterations);
void registerSPIRVLoopBudgetPass();
/// The module attribute (i32) by which attn-spirv-subgroup-size records
/// the subgroup size the kernels need, for extractSPIRVKernel.
constexpr const char kSPIRVSubgroupSizeAttr[] = "attn.spirv_subgroup_size";
/// After spirv-attach-target: the SPIR-V targets' subgroup size set to
/// `size` (gpu.shuffle lowers only at that width) and the module marked
/// with kSPIRVSubgroupSizeAttr (attn-spirv-subgroup-size).
std::unique_ptr<Pass> createSPIRVSubgroupSizePass(int64_t size);
void registerSPIRVSubgroupSizePass();
/// Its last step for variant=coopmat: the Vulkan memory model on modules
/// with cooperative matrices (attn-spirv-vulkan-memory-model).
std::unique_ptr<Pass> createSPIRVVulkanMemoryModelPass();
void registerSPIRVVulkanMemoryModelPass();

/// The module attribute (i64) by which attn-spirv-dynamic-shapes records its
/// max-extent, for extractSPIRVKernel.
constexpr const char kSPIRVMaxDynamicExtentAttr[] =
    "attn.spirv_max_dynamic_extent";

} // namespace mlir::attn

#endif
