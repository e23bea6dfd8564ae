//===- SPIRVArtifact.h - SPIR-V words + launch metadata ---------*- C++ -*-===//
#ifndef ATTN_TARGET_SPIRV_SPIRVARTIFACT_H
#define ATTN_TARGET_SPIRV_SPIRVARTIFACT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::attn {

/// What feeds one storage-buffer binding of a dispatch: a host function
/// argument (a tensor of the entry function) or a workspace the host
/// function allocates (split-KV's partial outputs and lse).
struct SPIRVBufferRef {
  bool workspace = false;
  unsigned index = 0; // host argument number, or index into workspaces
};

/// A size the host function computes from its arguments' sizes (dynamic
/// shapes): a node of SPIRVKernelArtifact::exprs. Dim reads size `b` of
/// host argument `a`; binary kinds combine expressions `a` and `b`
/// (unsigned, as the host's arith ops do).
struct SPIRVExpr {
  enum Kind { Const, Dim, Add, Sub, Mul, DivU, CeilDivU, RemU, MinU, MaxU };
  Kind kind = Const;
  int64_t value = 0; // Const
  unsigned a = 0, b = 0;
};

/// A buffer the host function allocates for its kernels (memref.alloc),
/// never read by the host itself: a workspace (split-KV's partials), or,
/// with `hostWritten`, a buffer of i32 sizes the host fills before the
/// launches (attn-spirv-dynamic-shapes): element i is `contents[i]`.
struct SPIRVWorkspace {
  std::vector<int64_t> shape; // -1 where dynamic (see shapeExprs)
  std::string elementType;    // "f32", ...
  unsigned elementBytes = 0;
  uint64_t bytes = 0;         // 0 where the shape is dynamic
  /// With a dynamic shape: an expression per dimension (-1 where the
  /// dimension is static).
  std::vector<int> shapeExprs;
  bool hostWritten = false;
  std::vector<int> contents; // expression ids, with hostWritten
};

/// One gpu.launch_func of the host function, in program order.
struct SPIRVDispatch {
  std::string entry; // OpEntryPoint name in the one spirv.module
  uint32_t grid[3] = {1, 1, 1};
  /// Where a workgroup count depends on sizes: its expression (else -1).
  int gridExprs[3] = {-1, -1, -1};
  uint32_t block[3] = {1, 1, 1};
  /// Storage-buffer binding i (set 0) of this entry point: bindings[i].
  std::vector<SPIRVBufferRef> bindings;
  /// The workgroup memory its entry point declares: the bytes of the
  /// Workgroup-class variables its function uses (0: none).
  uint64_t workgroupBytes = 0;
};

/// A kernel lowered by attn-to-spirv-pipeline, ready for a Vulkan runtime.
struct SPIRVKernelArtifact {
  std::vector<uint32_t> words; // the serialized spirv.module
  /// The single-dispatch form (one kernel, no workspace): its entry, grid,
  /// workgroup size and host argument per binding. Empty (entry "") when
  /// the host function runs several dispatches; `dispatches` always holds
  /// every dispatch.
  std::string entry;           // its OpEntryPoint name
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  unsigned hostArgs = 0;
  /// The element type of each host argument's buffer as the kernel reads
  /// it ("f32", "f16", "bf16", "i16", "i8", ...; "bf16" where a coopmat
  /// kernel's bf16 was retyped as f16, `bf16`; a scalar argument's type),
  /// so that a spec that names another type can be refused.
  std::vector<std::string> argTypes;
  /// Storage-buffer binding i (set 0) is host function argument
  /// bindingArgs[i].
  std::vector<unsigned> bindingArgs;
  bool f16 = false;   // needs Float16 (and 16-bit storage)
  bool int16 = false; // needs Int16 (and 16-bit storage): bf16 as i16
  bool bf16 = false;  // needs BFloat16TypeKHR (SPV_KHR_bfloat16)
  bool coopMat = false; // needs CooperativeMatrixKHR (+ Vulkan memory model)
  /// The subgroup size the kernels were written for (0: any); the runtime
  /// must create the pipelines with it (subgroup size control, full
  /// subgroups) or refuse.
  uint32_t subgroupSize = 0;
  /// Uses GroupNonUniformArithmetic / GroupNonUniformShuffle.
  bool subgroupArithmetic = false;
  bool subgroupShuffle = false;
  /// Every dispatch in order (split-KV: the partial kernel, then the
  /// merge); each must see the previous one's writes (a barrier).
  std::vector<SPIRVDispatch> dispatches;
  /// The host function's allocations, bound by SPIRVBufferRef::workspace.
  std::vector<SPIRVWorkspace> workspaces;
  /// Dynamic shapes: the expressions grids, workspace shapes and size
  /// buffers refer to; empty when every shape is static.
  std::vector<SPIRVExpr> exprs;
  /// The kernels clamp sizes to this (attn-spirv-dynamic-shapes'
  /// max-extent): a launch with a larger dynamic size must be refused
  /// (0: no clamp).
  int64_t maxDynamicExtent = 0;
  bool dynamic() const { return !exprs.empty(); }
};

/// Reads the artifact off a module after attn-to-spirv-pipeline; fails with
/// `error` set when the module is not of that form.
LogicalResult extractSPIRVKernel(ModuleOp module, SPIRVKernelArtifact &out,
                                 std::string &error);

// The launch metadata (attn-translate's .spv.json) and its evaluation at
// launch are the runtime's: attn/runtime/VulkanKernel.h, filled from this
// by mlir::attn::jit::toVulkanKernelMetadata (attn/JIT/Vulkan.h).

} // namespace mlir::attn

#endif
