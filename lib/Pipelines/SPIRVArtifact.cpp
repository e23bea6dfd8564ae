//===- SPIRVArtifact.cpp - SPIR-V words + launch metadata from lowered IR -===//
//
// After attn-to-spirv-pipeline a module holds one host function that
// launches one kernel and the kernel's spirv.module. What a Vulkan runtime
// needs to run it is read off that IR: the serialized spirv.module, its
// entry point, the workgroup grid (constants, since shapes are static) and
// which host argument feeds which storage-buffer binding (outlining orders
// kernel operands by first use, not by argument position).
//
//===----------------------------------------------------------------------===//
#include "attn/Pipelines/Pipelines.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Target/SPIRV/Serialization.h"

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
  bool other = false;
  host.walk([&](Operation *op) {
    if (auto l = dyn_cast<gpu::LaunchFuncOp>(op))
      launches.push_back(l);
    else if (!isa<func::FuncOp, func::ReturnOp, arith::ConstantOp>(op))
      other = true;
  });
  if (launches.size() != 1 || other)
    return fail(error, "the host function must be exactly one gpu.launch_func "
                       "(plus constants); anything else would have to run on "
                       "the host");
  gpu::LaunchFuncOp launch = launches.front();
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
    out.grid[i] = *g;
    out.block[i] = *b;
  }
  out.bindingArgs.clear();
  for (Value operand : launch.getKernelOperands()) {
    auto arg = dyn_cast<BlockArgument>(operand);
    if (!arg || arg.getOwner()->getParentOp() != host)
      return fail(error, "a kernel operand is not a host function argument "
                         "(scalars must be sunk into the kernel)");
    out.bindingArgs.push_back(arg.getArgNumber());
  }
  out.hostArgs = host.getNumArguments();
  out.entry = launch.getKernelName().str();

  spirv::ModuleOp spv = spvs.front();
  out.f16 = false;
  out.coopMat = false;
  if (auto vce = spv.getVceTriple())
    for (spirv::Capability c : vce->getCapabilities()) {
      if (c == spirv::Capability::Float16 ||
          c == spirv::Capability::StorageBuffer16BitAccess)
        out.f16 = true;
      if (c == spirv::Capability::CooperativeMatrixKHR)
        out.coopMat = true;
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
  os << "{\n  \"variant\": \"" << variant << "\",\n  \"entry\": \"" << a.entry
     << "\",\n  \"workgroups\": [" << a.grid[0] << ", " << a.grid[1] << ", "
     << a.grid[2] << "],\n  \"workgroup_size\": [" << a.block[0] << ", "
     << a.block[1] << ", " << a.block[2] << "],\n  \"push_constant_bytes\": 0,"
     << "\n  \"host_args\": " << a.hostArgs << ",\n  \"bindings\": [";
  for (size_t i = 0; i < a.bindingArgs.size(); ++i)
    os << (i ? ", " : "") << "{\"set\": 0, \"binding\": " << i
       << ", \"arg\": " << a.bindingArgs[i] << "}";
  os << "],\n  \"needs_float16\": " << (a.f16 ? "true" : "false")
     << ",\n  \"needs_cooperative_matrix\": "
     << (a.coopMat ? "true" : "false") << "\n}\n";
  return os.str();
}
