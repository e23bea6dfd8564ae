//===- VulkanArtifact.cpp - a lowered SPIR-V module as the runtime's kernel -===//
#include "attn/JIT/Vulkan.h"

using namespace mlir::attn;
namespace vk = ::attn::vulkan;

void mlir::attn::jit::toVulkanKernelMetadata(const SPIRVKernelArtifact &a,
                                             const std::string &variant,
                                             vk::KernelMetadata &out) {
  out = vk::KernelMetadata();
  out.variant = variant;
  out.words = a.words;
  out.hostArgs = a.hostArgs;
  out.argTypes = a.argTypes;
  for (const SPIRVDispatch &d : a.dispatches) {
    vk::DispatchDesc dd;
    dd.entry = d.entry;
    for (int i = 0; i < 3; ++i) {
      dd.grid[i] = d.grid[i];
      dd.gridExprs[i] = d.gridExprs[i];
      dd.block[i] = d.block[i];
    }
    for (const SPIRVBufferRef &ref : d.bindings)
      dd.bindings.push_back({ref.workspace, ref.index});
    dd.workgroupBytes = d.workgroupBytes;
    out.dispatches.push_back(std::move(dd));
  }
  for (const SPIRVWorkspace &w : a.workspaces) {
    vk::WorkspaceDesc wd;
    wd.shape = w.shape;
    wd.shapeExprs = w.shapeExprs;
    wd.elementType = w.elementType;
    wd.elementBytes = w.elementBytes;
    wd.bytes = w.bytes;
    wd.hostWritten = w.hostWritten;
    wd.contents = w.contents;
    out.workspaces.push_back(std::move(wd));
  }
  for (const SPIRVExpr &e : a.exprs) {
    vk::SizeExpr x;
    x.kind = static_cast<vk::SizeExpr::Kind>(e.kind);
    x.value = e.value;
    x.a = e.a;
    x.b = e.b;
    out.exprs.push_back(x);
  }
  out.maxDynamicExtent = a.maxDynamicExtent;
  out.needsFloat16 = a.f16;
  out.needsInt16 = a.int16;
  out.needsBFloat16 = a.bf16;
  out.needsCooperativeMatrix = a.coopMat;
  out.needsSubgroupArithmetic = a.subgroupArithmetic;
  out.needsSubgroupShuffle = a.subgroupShuffle;
  out.subgroupSize = a.subgroupSize;
}
