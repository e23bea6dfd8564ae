//===- SPIRVArtifact.cpp - SPIR-V words + launch metadata from lowered IR -===//
//
// After attn-to-spirv-pipeline a module holds one host function and one
// spirv.module. The host function launches one kernel, or (split-KV) two
// kernels of that module around its workspace allocations. What a Vulkan
// runtime needs to run it is read off that IR: the serialized spirv.module,
// the dispatches in order (entry point, workgroup grid, constants since
// shapes are static, and which host argument or workspace feeds which
// storage-buffer binding: outlining orders kernel operands by first use, not
// by argument position) and each workspace's shape and byte size.
//
//===----------------------------------------------------------------------===//
#include "attn/Target/SPIRV/SPIRVArtifact.h"
#include "attn/Target/SPIRV/Transforms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Target/SPIRV/Serialization.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <functional>

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

/// The bytes a Workgroup variable of type `t` takes: arrays (no stride
/// decoration in that class) as their elements packed, vectors and
/// scalars by their bit width; nullopt for anything else.
static std::optional<int64_t> workgroupTypeBytes(Type t) {
  if (auto array = dyn_cast<spirv::ArrayType>(t)) {
    std::optional<int64_t> e = workgroupTypeBytes(array.getElementType());
    if (!e)
      return std::nullopt;
    return *e * int64_t(array.getNumElements());
  }
  if (auto vec = dyn_cast<VectorType>(t)) {
    std::optional<int64_t> e = workgroupTypeBytes(vec.getElementType());
    if (!e)
      return std::nullopt;
    return *e * vec.getNumElements();
  }
  if (t.isIntOrFloat())
    return (int64_t(t.getIntOrFloatBitWidth()) + 7) / 8;
  if (auto st = dyn_cast<spirv::StructType>(t)) {
    int64_t total = 0;
    for (Type m : st.getElementTypes()) {
      std::optional<int64_t> e = workgroupTypeBytes(m);
      if (!e)
        return std::nullopt;
      total += *e;
    }
    return total;
  }
  return std::nullopt;
}

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
  out.exprs.clear();
  out.maxDynamicExtent = 0;
  if (auto n = module->getAttrOfType<IntegerAttr>(kSPIRVMaxDynamicExtentAttr))
    out.maxDynamicExtent = n.getInt();

  // A kernel operand's host buffer: seen through memref.collapse_shape (a
  // dense buffer is the same buffer whatever its rank) and through a view
  // of another element type (a builtin.unrealized_conversion_cast between
  // memrefs: the same buffer, which the kernel reads e.g. as 16-byte
  // vectors).
  auto retyped = [](Operation *op) {
    auto c = dyn_cast_or_null<UnrealizedConversionCastOp>(op);
    return c && c.getNumOperands() == 1 && c.getNumResults() == 1 &&
                   isa<MemRefType>(c.getOperand(0).getType()) &&
                   isa<MemRefType>(c.getResult(0).getType())
               ? c
               : UnrealizedConversionCastOp();
  };
  auto root = [&](Value v) {
    while (true) {
      if (auto c = v.getDefiningOp<memref::CollapseShapeOp>())
        v = c.getSrc();
      else if (auto c = retyped(v.getDefiningOp()))
        v = c.getOperand(0);
      else
        return v;
    }
  };

  // Sizes the host computes (dynamic shapes), as expressions over its
  // arguments' sizes; constants fold.
  llvm::DenseMap<Value, int> exprOf;
  auto node = [&](SPIRVExpr e) {
    out.exprs.push_back(e);
    return static_cast<int>(out.exprs.size() - 1);
  };
  std::function<FailureOr<int>(Value)> expr = [&](Value v) -> FailureOr<int> {
    if (auto it = exprOf.find(v); it != exprOf.end())
      return it->second;
    FailureOr<int> id = failure();
    Operation *def = v.getDefiningOp();
    auto binary = [&](SPIRVExpr::Kind k) -> FailureOr<int> {
      FailureOr<int> a = expr(def->getOperand(0));
      if (failed(a))
        return failure();
      FailureOr<int> b = expr(def->getOperand(1));
      if (failed(b))
        return failure();
      SPIRVExpr e;
      e.kind = k;
      e.a = *a;
      e.b = *b;
      return node(e);
    };
    if (!def) {
      id = failure();
    } else if (auto c = dyn_cast<arith::ConstantOp>(def)) {
      if (auto i = dyn_cast<IntegerAttr>(c.getValue())) {
        SPIRVExpr e;
        e.value = i.getValue().getSExtValue();
        id = node(e);
      }
    } else if (auto dim = dyn_cast<memref::DimOp>(def)) {
      std::optional<int64_t> d = dim.getConstantIndex();
      Value src = root(dim.getSource());
      auto t = dyn_cast<MemRefType>(dim.getSource().getType());
      if (d && t && src == dim.getSource()) {
        if (!t.isDynamicDim(*d)) {
          SPIRVExpr e;
          e.value = t.getDimSize(*d);
          id = node(e);
        } else if (auto arg = dyn_cast<BlockArgument>(src);
                   arg && arg.getOwner()->getParentOp() == host) {
          SPIRVExpr e;
          e.kind = SPIRVExpr::Dim;
          e.a = arg.getArgNumber();
          e.b = static_cast<unsigned>(*d);
          id = node(e);
        } else if (auto alloc = src.getDefiningOp<memref::AllocOp>()) {
          id = expr(alloc.getDynamicSizes()[t.getDynamicDimIndex(*d)]);
        }
      }
    } else if (isa<arith::IndexCastUIOp, arith::IndexCastOp>(def)) {
      id = expr(def->getOperand(0));
    } else if (isa<arith::AddIOp>(def)) {
      id = binary(SPIRVExpr::Add);
    } else if (isa<arith::SubIOp>(def)) {
      id = binary(SPIRVExpr::Sub);
    } else if (isa<arith::MulIOp>(def)) {
      id = binary(SPIRVExpr::Mul);
    } else if (isa<arith::DivUIOp>(def)) {
      id = binary(SPIRVExpr::DivU);
    } else if (isa<arith::CeilDivUIOp>(def)) {
      id = binary(SPIRVExpr::CeilDivU);
    } else if (isa<arith::RemUIOp>(def)) {
      id = binary(SPIRVExpr::RemU);
    } else if (isa<arith::MinUIOp>(def)) {
      id = binary(SPIRVExpr::MinU);
    } else if (isa<arith::MaxUIOp>(def)) {
      id = binary(SPIRVExpr::MaxU);
    }
    if (succeeded(id))
      exprOf[v] = *id;
    return id;
  };

  SmallVector<gpu::LaunchFuncOp> launches;
  SmallVector<memref::AllocOp> allocs;
  SmallVector<memref::StoreOp> stores;
  bool other = false;
  host.walk([&](Operation *op) {
    if (auto l = dyn_cast<gpu::LaunchFuncOp>(op))
      launches.push_back(l);
    else if (auto a = dyn_cast<memref::AllocOp>(op))
      allocs.push_back(a);
    else if (auto st = dyn_cast<memref::StoreOp>(op))
      stores.push_back(st);
    else if (!retyped(op) &&
             !isa<func::FuncOp, func::ReturnOp, arith::ConstantOp,
                  memref::DeallocOp, memref::DimOp, memref::CollapseShapeOp,
                  arith::IndexCastUIOp, arith::IndexCastOp, arith::AddIOp,
                  arith::SubIOp, arith::MulIOp, arith::DivUIOp,
                  arith::CeilDivUIOp, arith::RemUIOp, arith::MinUIOp,
                  arith::MaxUIOp>(op))
      other = true;
  });
  if (launches.empty() || other)
    return fail(error, "the host function must be gpu.launch_func ops (plus "
                       "constants, workspace allocations, views of its "
                       "buffers and size arithmetic); anything else would "
                       "have to run on the host");

  // Workspaces: allocations that only kernels use (and free), or size
  // buffers the host fills with memref.store before the kernels read them.
  out.workspaces.clear();
  llvm::DenseMap<Value, unsigned> workspaceOf;
  for (memref::AllocOp alloc : allocs) {
    MemRefType t = alloc.getType();
    if (!t.getLayout().isIdentity() || !alloc.getSymbolOperands().empty())
      return fail(error, "a host allocation does not have a dense shape");
    Type elt = t.getElementType();
    if (!elt.isIntOrFloat() || elt.getIntOrFloatBitWidth() % 8)
      return fail(error, "a host allocation's element type has no byte size");
    SPIRVWorkspace ws;
    for (Operation *user : alloc->getUsers()) {
      if (isa<memref::StoreOp>(user)) {
        ws.hostWritten = true;
        continue;
      }
      // (Reshaped, or viewed with another element type, for launches.)
      if (isa<memref::CollapseShapeOp>(user) || retyped(user))
        if (llvm::all_of(user->getUsers(),
                         [](Operation *u) { return isa<gpu::LaunchFuncOp>(u); }))
          continue;
      if (!isa<gpu::LaunchFuncOp, memref::DeallocOp, memref::DimOp>(user))
        return fail(error, "a host allocation is used by something other "
                           "than a kernel launch (the host never reads a "
                           "workspace)");
    }
    ws.shape.assign(t.getShape().begin(), t.getShape().end());
    for (int64_t &d : ws.shape)
      if (ShapedType::isDynamic(d))
        d = -1;
    std::string name;
    llvm::raw_string_ostream os(name);
    elt.print(os);
    ws.elementType = name;
    ws.elementBytes = elt.getIntOrFloatBitWidth() / 8;
    if (t.hasStaticShape()) {
      ws.bytes = static_cast<uint64_t>(t.getNumElements()) * ws.elementBytes;
    } else {
      for (unsigned d = 0; d < t.getRank(); ++d) {
        if (!t.isDynamicDim(d)) {
          ws.shapeExprs.push_back(-1); // shape[d] holds it
          continue;
        }
        FailureOr<int> id =
            expr(alloc.getDynamicSizes()[t.getDynamicDimIndex(d)]);
        if (failed(id))
          return fail(error, "a workspace's size is not computed from the "
                             "host arguments' sizes");
        ws.shapeExprs.push_back(*id);
      }
    }
    if (ws.hostWritten) {
      if (!t.hasStaticShape() || t.getRank() != 1 || !elt.isInteger(32))
        return fail(error, "a buffer the host writes must be a static "
                           "memref<Nxi32> of sizes");
      ws.contents.assign(t.getDimSize(0), -1);
    }
    workspaceOf[alloc.getResult()] = out.workspaces.size();
    out.workspaces.push_back(std::move(ws));
  }
  for (memref::StoreOp st : stores) {
    auto it = workspaceOf.find(st.getMemRef());
    std::optional<int64_t> index;
    if (st.getIndices().size() == 1)
      if (auto c = st.getIndices()[0].getDefiningOp<arith::ConstantIndexOp>())
        index = c.value();
    if (it == workspaceOf.end() || !index)
      return fail(error, "the host stores only sizes, at constant indices, "
                         "into buffers it allocates");
    SPIRVWorkspace &ws = out.workspaces[it->second];
    FailureOr<int> id = expr(st.getValue());
    if (failed(id) || *index < 0 || *index >= int64_t(ws.contents.size()))
      return fail(error, "a value the host stores is not a size computed "
                         "from its arguments' sizes");
    ws.contents[*index] = *id;
  }
  for (const SPIRVWorkspace &ws : out.workspaces)
    if (ws.hostWritten && llvm::is_contained(ws.contents, -1))
      return fail(error, "a size buffer has an element the host never "
                         "writes");

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
      if (!b)
        return fail(error, "the launch's workgroup size must be a constant");
      dispatch.block[i] = *b;
      if (g) {
        dispatch.grid[i] = *g;
        continue;
      }
      FailureOr<int> id = expr(gridV[i]);
      if (failed(id))
        return fail(error, "the launch's grid must be constants or computed "
                           "from the host arguments' sizes");
      dispatch.gridExprs[i] = *id;
      dispatch.grid[i] = 0;
    }
    if (launch.getAsyncToken() || !launch.getAsyncDependencies().empty())
      return fail(error, "asynchronous launches are not supported (the "
                         "dispatches run in program order)");
    for (Value operand : launch.getKernelOperands()) {
      SPIRVBufferRef ref;
      operand = root(operand);
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
  if (out.dispatches.size() == 1 && out.workspaces.empty() &&
      !out.dynamic()) {
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
  // Each entry point's workgroup memory: the Workgroup variables its
  // function takes the address of (kernels are single functions here).
  for (SPIRVDispatch &d : out.dispatches) {
    auto fn = spv.lookupSymbol<spirv::FuncOp>(d.entry);
    if (!fn)
      return fail(error, "the entry point '" + d.entry +
                             "' is not a function of the spirv.module");
    llvm::SmallPtrSet<Operation *, 8> seen;
    d.workgroupBytes = 0;
    WalkResult walk = fn.walk([&](spirv::AddressOfOp addr) {
      auto var = spv.lookupSymbol<spirv::GlobalVariableOp>(addr.getVariable());
      if (!var || !seen.insert(var).second)
        return WalkResult::advance();
      auto ptr = cast<spirv::PointerType>(var.getType());
      if (ptr.getStorageClass() != spirv::StorageClass::Workgroup)
        return WalkResult::advance();
      std::optional<int64_t> bytes = workgroupTypeBytes(ptr.getPointeeType());
      if (!bytes)
        return WalkResult::interrupt();
      d.workgroupBytes += static_cast<uint64_t>(*bytes);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return fail(error, "the entry point '" + d.entry +
                             "' uses workgroup memory of a type whose size "
                             "is not known");
  }
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
  // The host arguments' element types (a coopmat bf16 kernel's retyped f16
  // buffers are its bf16 data: nothing else in it is f16; dropout's seed
  // is a scalar).
  out.argTypes.clear();
  for (Type t : host.getArgumentTypes()) {
    // (a scalar argument, dropout's seed: its own type)
    auto m = dyn_cast<MemRefType>(t);
    Type elt = m ? m.getElementType() : t;
    std::string name;
    llvm::raw_string_ostream os(name);
    if (out.bf16 && elt.isF16())
      os << "bf16";
    else
      elt.print(os);
    out.argTypes.push_back(os.str());
  }
  SmallVector<uint32_t> words;
  spirv::SerializationOptions options;
  if (failed(spirv::serialize(spv, words, options)))
    return fail(error, "serializing the spirv.module failed");
  out.words.assign(words.begin(), words.end());
  return success();
}
