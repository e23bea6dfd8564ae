//===- Transforms.h - the SPIR-V target's rewrites --------------*- C++ -*-===//
//
// The rewrites behind the SPIR-V target's passes (Passes.td states what each
// requires and guarantees), and the module attributes by which they hand
// facts to later steps and to extractSPIRVKernel. Each function reports
// what it cannot do as an error on the IR and returns failure.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TARGET_SPIRV_TRANSFORMS_H
#define ATTN_TARGET_SPIRV_TRANSFORMS_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>

namespace mlir::attn {

/// The module attribute by which attn-spirv-bf16-as-f16 marks a bf16
/// kernel written in f16, for attn-spirv-coopmat-bf16.
constexpr const char kCoopMatBf16Attr[] = "attn.coopmat_bf16";
/// The module attribute (i32) by which attn-spirv-subgroup-size records
/// the subgroup size the kernels need, for extractSPIRVKernel.
constexpr const char kSPIRVSubgroupSizeAttr[] = "attn.spirv_subgroup_size";
/// The module attribute (i64) by which attn-spirv-dynamic-shapes records its
/// max-extent, for extractSPIRVKernel.
constexpr const char kSPIRVMaxDynamicExtentAttr[] =
    "attn.spirv_max_dynamic_extent";

/// attn-spirv-bufferize: loop-carried tensors in place, One-Shot Bufferize
/// with temporaries in the Function storage class, hoisted out of the
/// sequential loops of a tile; a lone tile wrapped in a parallel loop.
LogicalResult bufferizeForSPIRV(ModuleOp module);

/// attn-spirv-bf16-storage: every bf16 memref as an i16 memref with the
/// same bits; loads and stores of them bitcast. Changes nothing when it
/// fails.
LogicalResult storeBf16AsI16(ModuleOp module);

/// attn-spirv-entry-point-abi: spirv.entry_point_abi on every kernel from
/// its known_block_size.
LogicalResult setSPIRVEntryPointABI(ModuleOp module);

/// attn-spirv-dynamic-shapes: kernels with dynamically sized memref
/// arguments take them as 1-D buffers plus a memref<Nxi32> of their sizes
/// that every launch fills; `maxExtent` > 0 clamps the sizes kernels read.
LogicalResult linearizeDynamicShapes(ModuleOp module, int64_t maxExtent);

/// attn-spirv-loop-budget: fails when one invocation of a kernel can run
/// more than `maxIterations` loop iterations (0: no limit), or when that
/// cannot be bounded. Never changes the IR.
LogicalResult checkSPIRVLoopBudget(ModuleOp module, uint64_t maxIterations);

/// attn-spirv-subgroup-size: `size` as the subgroup size of every
/// gpu.module's #spirv.target_env and in kSPIRVSubgroupSizeAttr.
LogicalResult setSPIRVSubgroupSize(ModuleOp module, int64_t size);

/// attn-spirv-16bit-storage: no 16-bit storage capabilities in the
/// #spirv.target_env of a gpu.module whose one kind of 16-bit buffer (f16
/// or i16) the target cannot compute on (no Float16, no Int16), so that
/// the conversion emulates those buffers with 32-bit words. Never fails.
LogicalResult emulateUncomputable16BitStorage(ModuleOp module);

/// attn-spirv-coopmat-bf16: in a module marked kCoopMatBf16Attr, every f16
/// of its spirv.modules as bf16, and the mark removed.
LogicalResult retypeCoopMatBf16(ModuleOp module);

/// attn-spirv-vulkan-memory-model: the Vulkan memory model on every
/// spirv.module that uses cooperative matrices.
LogicalResult applyVulkanMemoryModel(ModuleOp module);

} // namespace mlir::attn

#endif
