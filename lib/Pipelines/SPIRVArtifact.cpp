//===- SPIRVArtifact.cpp - SPIR-V words + launch metadata from lowered IR -===//
//
// After attn-to-spirv-pipeline a module holds one host function and one
// spirv.module. The host function launches one kernel, or (split-KV) two
// kernels of that module around two workspace allocations. What a Vulkan
// runtime needs to run it is read off that IR: the serialized spirv.module,
// the dispatches in order (entry point, workgroup grid, constants since
// shapes are static, and which host argument or workspace feeds which
// storage-buffer binding: outlining orders kernel operands by first use, not
// by argument position) and each workspace's shape and byte size.
//
//===----------------------------------------------------------------------===//
#include "attn/Pipelines/Pipelines.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Target/SPIRV/Serialization.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

#include <sstream>

using namespace mlir;

namespace {
LogicalResult fail(std::string &error, const std::string &message) {
  error = "spirv artifact: " + message;
  return failure();
}

std::optional<uint32_t> constantCount(Value v) {
  APInt value;
  if (auto c = v.getDefiningOp<arith::ConstantIndexOp>())
    return static_cast<uint32_t>(c.value());
  return std::nullopt;
}
} // namespace

LogicalResult mlir::attn::extractSPIRVKernel(ModuleOp module,
                                             SPIRVKernelArtifact &out,
                                             std::string &error) {
  SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
  SmallVector<spirv::ModuleOp> spvs(module.getOps<spirv::ModuleOp>());
  if (funcs.size() != 1 || spvs.size() != 1)
    return fail(error, "expected one host function and one spirv.module, "
                       "found " + std::to_string(funcs.size()) + " and " +
                       std::to_string(spvs.size()) +
                       " (run attn-to-spirv-pipeline first)");
  func::FuncOp host = funcs.front();
  SmallVector<gpu::LaunchFuncOp> launches;
  SmallVector<memref::AllocOp> allocs;
  bool other = false;
  host.walk([&](Operation *op) {
    if (auto l = dyn_cast<gpu::LaunchFuncOp>(op))
      launches.push_back(l);
    else if (auto a = dyn_cast<memref::AllocOp>(op))
      allocs.push_back(a);
    else if (!isa<func::FuncOp, func::ReturnOp, arith::ConstantOp,
                  memref::DeallocOp>(op))
      other = true;
  });
  if (launches.empty() || other)
    return fail(error, "the host function must be gpu.launch_func ops (plus "
                       "constants and workspace allocations); anything else "
                       "would have to run on the host");

  // Workspaces: static allocations that only kernels use (and free).
  out.workspaces.clear();
  llvm::DenseMap<Value, unsigned> workspaceOf;
  for (memref::AllocOp alloc : allocs) {
    MemRefType t = alloc.getType();
    if (!t.hasStaticShape() || !t.getLayout().isIdentity() ||
        !alloc.getDynamicSizes().empty() || !alloc.getSymbolOperands().empty())
      return fail(error, "a host allocation does not have a static, dense "
                         "shape (workspaces are sized at compile time)");
    Type elt = t.getElementType();
    if (!elt.isIntOrFloat() || elt.getIntOrFloatBitWidth() % 8)
      return fail(error, "a host allocation's element type has no byte size");
    for (Operation *user : alloc->getUsers())
      if (!isa<gpu::LaunchFuncOp, memref::DeallocOp>(user))
        return fail(error, "a host allocation is used by something other "
                           "than a kernel launch (the host never touches a "
                           "workspace)");
    SPIRVWorkspace ws;
    ws.shape.assign(t.getShape().begin(), t.getShape().end());
    std::string name;
    llvm::raw_string_ostream os(name);
    elt.print(os);
    ws.elementType = name;
    ws.bytes = static_cast<uint64_t>(t.getNumElements()) *
               (elt.getIntOrFloatBitWidth() / 8);
    workspaceOf[alloc.getResult()] = out.workspaces.size();
    out.workspaces.push_back(std::move(ws));
  }

  out.dispatches.clear();
  for (gpu::LaunchFuncOp launch : launches) {
    SPIRVDispatch dispatch;
    gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
    gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
    Value gridV[3] = {grid.x, grid.y, grid.z};
    Value blockV[3] = {block.x, block.y, block.z};
    for (int i = 0; i < 3; ++i) {
      std::optional<uint32_t> g = constantCount(gridV[i]);
      std::optional<uint32_t> b = constantCount(blockV[i]);
      if (!g || !b)
        return fail(error, "the launch's grid and block sizes must be "
                           "constants (static shapes)");
      dispatch.grid[i] = *g;
      dispatch.block[i] = *b;
    }
    if (launch.getAsyncToken() || !launch.getAsyncDependencies().empty())
      return fail(error, "asynchronous launches are not supported (the "
                         "dispatches run in program order)");
    for (Value operand : launch.getKernelOperands()) {
      SPIRVBufferRef ref;
      if (auto it = workspaceOf.find(operand); it != workspaceOf.end()) {
        ref.workspace = true;
        ref.index = it->second;
      } else {
        auto arg = dyn_cast<BlockArgument>(operand);
        if (!arg || arg.getOwner()->getParentOp() != host)
          return fail(error, "a kernel operand is not a host function "
                             "argument or workspace (scalars must be sunk "
                             "into the kernel)");
        ref.index = arg.getArgNumber();
      }
      dispatch.bindings.push_back(ref);
    }
    dispatch.entry = launch.getKernelName().str();
    out.dispatches.push_back(std::move(dispatch));
  }
  out.hostArgs = host.getNumArguments();

  // The single-dispatch form, as before split-KV.
  out.entry.clear();
  out.bindingArgs.clear();
  for (int i = 0; i < 3; ++i)
    out.grid[i] = out.block[i] = 1;
  if (out.dispatches.size() == 1 && out.workspaces.empty()) {
    const SPIRVDispatch &d = out.dispatches.front();
    out.entry = d.entry;
    for (int i = 0; i < 3; ++i) {
      out.grid[i] = d.grid[i];
      out.block[i] = d.block[i];
    }
    for (const SPIRVBufferRef &ref : d.bindings)
      out.bindingArgs.push_back(ref.index);
  }

  // Every entry point the dispatches name must be in the module.
  for (const SPIRVDispatch &d : out.dispatches) {
    bool found = false;
    for (auto ep : spvs.front().getOps<spirv::EntryPointOp>())
      found |= ep.getFn() == d.entry;
    if (!found)
      return fail(error,
                  "the spirv.module has no entry point '" + d.entry + "'");
  }

  spirv::ModuleOp spv = spvs.front();
  out.f16 = false;
  out.int16 = false;
  out.bf16 = false;
  out.coopMat = false;
  out.subgroupSize = 0;
  out.subgroupArithmetic = false;
  out.subgroupShuffle = false;
  if (auto n = module->getAttrOfType<IntegerAttr>(kSPIRVSubgroupSizeAttr))
    out.subgroupSize = static_cast<uint32_t>(n.getInt());
  if (auto vce = spv.getVceTriple())
    for (spirv::Capability c : vce->getCapabilities()) {
      if (c == spirv::Capability::Float16)
        out.f16 = true;
      if (c == spirv::Capability::Int16)
        out.int16 = true;
      if (c == spirv::Capability::BFloat16TypeKHR)
        out.bf16 = true;
      if (c == spirv::Capability::CooperativeMatrixKHR)
        out.coopMat = true;
      if (c == spirv::Capability::GroupNonUniformArithmetic)
        out.subgroupArithmetic = true;
      if (c == spirv::Capability::GroupNonUniformShuffle)
        out.subgroupShuffle = true;
    }
  SmallVector<uint32_t> words;
  spirv::SerializationOptions options;
  if (failed(spirv::serialize(spv, words, options)))
    return fail(error, "serializing the spirv.module failed");
  out.words.assign(words.begin(), words.end());
  return success();
}

std::string mlir::attn::spirvKernelMetadataJSON(const SPIRVKernelArtifact &a,
                                                const std::string &variant) {
  std::ostringstream os;
  auto dim3 = [&](const uint32_t *v) {
    os << "[" << v[0] << ", " << v[1] << ", " << v[2] << "]";
  };
  auto bindings = [&](const std::vector<SPIRVBufferRef> &refs) {
    os << "[";
    for (size_t i = 0; i < refs.size(); ++i)
      os << (i ? ", " : "") << "{\"set\": 0, \"binding\": " << i << ", "
         << (refs[i].workspace ? "\"workspace\": " : "\"arg\": ")
         << refs[i].index << "}";
    os << "]";
  };
  os << "{\n  \"variant\": \"" << variant << "\",";
  // The single-dispatch keys, only where one dispatch is the whole kernel
  // (a reader that knows only them must not launch half of a split-KV
  // pair).
  if (!a.entry.empty()) {
    os << "\n  \"entry\": \"" << a.entry << "\",\n  \"workgroups\": ";
    dim3(a.grid);
    os << ",\n  \"workgroup_size\": ";
    dim3(a.block);
    os << ",";
  }
  os << "\n  \"push_constant_bytes\": 0,"
     << "\n  \"host_args\": " << a.hostArgs << ",";
  if (!a.entry.empty()) {
    os << "\n  \"bindings\": [";
    for (size_t i = 0; i < a.bindingArgs.size(); ++i)
      os << (i ? ", " : "") << "{\"set\": 0, \"binding\": " << i
         << ", \"arg\": " << a.bindingArgs[i] << "}";
    os << "],";
  }
  os << "\n  \"workspaces\": [";
  for (size_t i = 0; i < a.workspaces.size(); ++i) {
    const SPIRVWorkspace &w = a.workspaces[i];
    os << (i ? ", " : "") << "{\"shape\": [";
    for (size_t j = 0; j < w.shape.size(); ++j)
      os << (j ? ", " : "") << w.shape[j];
    os << "], \"element\": \"" << w.elementType << "\", \"bytes\": " << w.bytes
       << "}";
  }
  os << "],\n  \"dispatches\": [";
  for (size_t i = 0; i < a.dispatches.size(); ++i) {
    const SPIRVDispatch &d = a.dispatches[i];
    os << (i ? "," : "") << "\n    {\"entry\": \"" << d.entry
       << "\", \"workgroups\": ";
    dim3(d.grid);
    os << ", \"workgroup_size\": ";
    dim3(d.block);
    os << ",\n     \"bindings\": ";
    bindings(d.bindings);
    os << "}";
  }
  os << "],\n  \"needs_float16\": " << (a.f16 ? "true" : "false")
     << ",\n  \"needs_int16\": " << (a.int16 ? "true" : "false")
     << ",\n  \"needs_bfloat16\": " << (a.bf16 ? "true" : "false")
     << ",\n  \"needs_cooperative_matrix\": "
     << (a.coopMat ? "true" : "false")
     << ",\n  \"needs_subgroup_arithmetic\": "
     << (a.subgroupArithmetic ? "true" : "false")
     << ",\n  \"needs_subgroup_shuffle\": "
     << (a.subgroupShuffle ? "true" : "false")
     << ",\n  \"required_subgroup_size\": " << a.subgroupSize << "\n}\n";
  return os.str();
}
