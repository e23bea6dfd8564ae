//===- CUDACompiler.cpp - the runtime's cuda target: spec -> PTX -> CUDA module -===//
#include "attn/JIT/CUDA.h"
#include "RuntimeLibraries.h"

#include "attn/Conversion/TilesToNVGPU/TilesToNVGPU.h"
#include "attn/Dialect/Attn/Transforms/Passes.h"
#include "attn/Conversion/TileDistribution.h"
#include "attn/InitAll.h"
#include "attn/JIT/JIT.h"
#include "attn/Pipelines/Pipelines.h"
#include "attn/runtime/Backend.h"
#include "attn/runtime/attn_jit.h"
#include "attn/runtime/KeyChunks.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <mutex>

using namespace mlir;
namespace cuda = ::attn::cuda;

std::string mlir::attn::jit::ptxFeaturesFor(const std::string &) {
  // PTX ISA 8.0 (CUDA 12.0) is the first with sm_90a and covers sm_80..sm_90.
  return "+ptx80";
}

bool mlir::attn::jit::tensorCoreEligible(const attn_spec &spec) {
  int64_t dv = spec.value_dim ? spec.value_dim : spec.head_dim;
  return (spec.dtype == ATTN_DTYPE_F16 || spec.dtype == ATTN_DTYPE_BF16) &&
         spec.head_dim % 16 == 0 && dv % 16 == 0 && spec.head_dim <= 256 &&
         dv <= 256 && spec.variant == ATTN_VARIANT_DEFAULT;
}

namespace {
/// The role of a split-KV workspace (kSplitWorkspaceNames) when `v` is one
/// (an allocation TileDistribution named), else empty.
StringRef workspaceRole(Value v) {
  auto alloc = v.getDefiningOp<memref::AllocOp>();
  if (!alloc || !alloc.getType().getElementType().isF32())
    return {};
  auto role = alloc->getAttrOfType<StringAttr>(mlir::attn::kWorkspaceAttrName);
  return role ? role.getValue() : StringRef();
}

/// The most key chunks a launch may use (the workspace grows with it; the
/// count rides on grid y with the heads, which CUDA bounds to 65535, and
/// computeGrid checks the product per launch): enough for 2^31 - 1 keys
/// in chunks of 2^16.
constexpr int64_t kMaxKvSplits = 65535;

/// The entry's arguments in KernelSource.cpp's order.
std::vector<std::string> entryArgNames(const attn_spec &spec) {
  std::vector<std::string> names = {"q", "k", "v"};
  if (spec.mask != ATTN_MASK_NONE)
    names.push_back("mask");
  names.push_back("out");
  if (spec.return_lse)
    names.push_back("lse");
  if (spec.dropout_p > 0.0)
    names.push_back("seed");
  return names;
}
} // namespace

attn_status mlir::attn::jit::compileCudaKernel(
    const attn_spec &spec, const CudaCompileOptions &options, std::string &ptx,
    cuda::KernelMetadata &metadata, std::string &source, std::string &error) {
  if (spec.variant == ATTN_VARIANT_MATH) {
    error = "cuda: the math (reference) variant is cpu only";
    return ATTN_ERROR_UNSUPPORTED;
  }
  if (options.blockQ < 1 || options.blockQ > 1024) {
    error = "cuda: block_q is " + std::to_string(options.blockQ) +
            "; the generic kernel runs a thread per query row, so it must be "
            "in [1, 1024]";
    return ATTN_ERROR_UNSUPPORTED;
  }

  source = buildKernelSource(spec);
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllToLLVMIRTranslations(registry);
  MLIRContext context(registry, MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  std::string diagnostics;
  llvm::raw_string_ostream diagOS(diagnostics);
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    diagOS << diag.getLocation() << ": " << diag << "\n";
    return success();
  });
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
  if (!module) {
    error = "cuda: the kernel source does not parse: " + diagnostics;
    return ATTN_ERROR_COMPILE;
  }
  if (failed(verify(*module))) {
    error = "cuda: the kernel does not verify: " + diagnostics;
    return ATTN_ERROR_INVALID_ARGUMENT;
  }
  if (findCudaToolkit().empty()) {
    error = "cuda: libdevice (nvvm/libdevice/libdevice.10.bc) not found: set "
            "CUDA_HOME to a CUDA toolkit";
    return ATTN_ERROR_UNAVAILABLE;
  }

  AttnToNVVMPipelineOptions pipeline;
  pipeline.chip = options.chip;
  pipeline.features = ptxFeaturesFor(options.chip);
  pipeline.format = "isa";
  pipeline.blockQ = options.blockQ;
  pipeline.blockKv = options.blockKv;
  bool tensorCores = options.tensorCores && tensorCoreEligible(spec);
  pipeline.tensorCores = tensorCores;
  pipeline.warps = options.warps;
  pipeline.rowTiles = options.rowTiles;
  pipeline.stages = options.stages;
  // Split-KV unless the spec turns it off (kv_splits 1): the kernels take
  // the chunk count at launch (the runtime's chooseKvSplits; 0 = automatic,
  // N = N), so the count in the host IR only needs to exceed 1.
  // A key length that may exceed one chunk (KeyChunks.h) needs split
  // support whatever kv_splits says: the runtime raises the count to
  // chunks of at most 2^16 keys.
  bool split = spec.kv_splits != 1 || spec.seq_kv == ATTN_DYNAMIC ||
               spec.seq_kv > ::attn::kMaxChunkKeys;
  pipeline.kvSplits = split ? std::max<int64_t>(2, spec.kv_splits) : 1;
  PassManager pm(&context);
  // --mlir-print-ir-after-all and friends where the tool registered them.
  if (failed(mlir::attn::jit::configurePassManager(pm))) {
    error = "cuda: bad pass-manager options: " + diagnostics;
    return ATTN_ERROR_INVALID_ARGUMENT;
  }
  buildAttnToNVVMPipeline(pm, pipeline);
  if (failed(pm.run(*module))) {
    error = "cuda: attn-to-nvvm-pipeline failed: " + diagnostics;
    return ATTN_ERROR_COMPILE;
  }

  // The PTX, and how to launch it: the host function's gpu.launch_funcs
  // name the kernels (the split-KV pair shares one module) and pass the
  // entry's memrefs and the workspaces.
  SmallVector<gpu::BinaryOp> binaries;
  SmallVector<gpu::LaunchFuncOp> launches;
  module->walk([&](gpu::BinaryOp op) { binaries.push_back(op); });
  module->walk([&](gpu::LaunchFuncOp op) { launches.push_back(op); });
  if (binaries.size() != 1 || launches.empty() ||
      launches.size() > cuda::kMaxKernels ||
      binaries[0].getObjects().size() != 1) {
    error = "cuda: expected one kernel binary and 1 to " +
            std::to_string(cuda::kMaxKernels) +
            " launches after the pipeline, got " +
            std::to_string(binaries.size()) + " and " +
            std::to_string(launches.size());
    return ATTN_ERROR_COMPILE;
  }
  auto object = cast<gpu::ObjectAttr>(binaries[0].getObjects()[0]);
  ptx = object.getObject().getValue().str();

  metadata = cuda::KernelMetadata();
  metadata.format = cuda::BinaryFormat::PTX;
  metadata.chip = options.chip;
  int64_t dv = spec.value_dim ? spec.value_dim : spec.head_dim;
  using E = cuda::Extent;
  auto infoOf = [](gpu::LaunchFuncOp l) {
    return l->getAttrOfType<DictionaryAttr>(kLaunchInfoAttrName);
  };
  // Every kernel describes its launch in the IR (attn.launch,
  // TileDistribution.h).
  if (!llvm::all_of(launches, infoOf)) {
    error = "cuda: a kernel launch without its attn.launch description";
    return ATTN_ERROR_COMPILE;
  }
  // cp.async moves 16-byte chunks of q, k and v rows.
  metadata.alignBytes = tensorCores ? kNVGPUGlobalAlignment : 0;
  // Each kernel's launch condition (the alternatives of a launch: split
  // count and Sq range, LaunchCondition.h).
  std::vector<::attn::LaunchCondition> conditions;
  for (gpu::LaunchFuncOp l : launches) {
    ::attn::LaunchCondition c;
    DictionaryAttr info = infoOf(l);
    auto when = dyn_cast_or_null<StringAttr>(info.get("when"));
    std::string why;
    if (when && !::attn::LaunchCondition::parse(when.str(), c, why)) {
      error = "cuda: kernel '" + l.getKernelName().str() + "': 'when' is " +
              why;
      return ATTN_ERROR_COMPILE;
    }
    conditions.push_back(c);
  }
  // The kv_splits description: the split kernel of the default alternative
  // (the one for unbounded Sq), else of any.
  int64_t splitRows = options.blockQ, splitBlockKv = 0;
  bool fromDefault = false;
  for (auto [l, c] : llvm::zip(launches, conditions)) {
    DictionaryAttr info = infoOf(l);
    bool isDefault = c.sqMax == ::attn::LaunchCondition::kUnbounded;
    if (info.get("splits") && (!fromDefault || isDefault)) {
      splitRows = cast<IntegerAttr>(info.get("block_q")).getInt();
      splitBlockKv = cast<IntegerAttr>(info.get("block_kv")).getInt();
      fromDefault = isDefault;
    }
  }
  if (split) {
    // The runtime picks the chunk count per launch: the
    // kernels read it from the workspaces' dimension 2.
    metadata.kvSplits = {splitRows, splitBlockKv, kMaxKvSplits};
  }
  // The split-KV workspaces, named by role (the allocation's
  // kWorkspaceAttrName) as the kernels use them: partial_out [B, Hq,
  // splits, Sq, Dv], partial_stats [B, Hq, splits, 2, Sq] (each chunk's
  // max and sum), and packed decode's partial_*_packed [B, Hkv, splits,
  // ..., Group, ...]; a launch allocates those its kernels read.
  auto workspaceFor = [&](bool packed, StringRef role) -> std::string {
    std::string name = role.str() + (packed ? "_packed" : "");
    for (const cuda::Workspace &w : metadata.workspaces)
      if (w.name == name)
        return name;
    using W = cuda::WorkspaceDim;
    W heads = W::of(packed ? E::Hkv : E::Hq),
      rows = W::of(packed ? E::Group : E::Sq);
    std::vector<W> shape = {W::of(E::B), heads, W::splits()};
    if (role == mlir::attn::kSplitWorkspaceNames[0]) {
      shape.push_back(rows);
      shape.push_back(W::constant(dv));
    } else {
      shape.push_back(W::constant(2));
      shape.push_back(rows);
    }
    metadata.workspaces.push_back({name, shape, 4});
    return name;
  };
  std::vector<std::string> names = entryArgNames(spec);
  for (auto [index, launch] : llvm::enumerate(launches)) {
    cuda::Kernel &kernel = metadata.kernels.emplace_back();
    kernel.entry = launch.getKernelName().str();
    DictionaryAttr info = infoOf(launch);
    // What the IR says (the block and shared memory from the launch).
    std::optional<int64_t> threads =
        getConstantIntValue(launch.getBlockSizeX());
    std::optional<int64_t> shared =
        launch.getDynamicSharedMemorySize()
            ? getConstantIntValue(launch.getDynamicSharedMemorySize())
            : std::optional<int64_t>(0);
    if (!threads || !shared || *threads < 1 || *threads > 1024) {
      error = "cuda: kernel '" + kernel.entry +
              "': the block size or dynamic shared memory is not a constant";
      return ATTN_ERROR_COMPILE;
    }
    auto str = [&](StringRef key) {
      auto a = dyn_cast_or_null<StringAttr>(info.get(key));
      return a ? a.getValue() : StringRef();
    };
    kernel.when = conditions[index];
    if (auto bkv = dyn_cast_or_null<IntegerAttr>(info.get("block_kv")))
      kernel.blockKv = bkv.getInt();
    bool packed = str("heads") == "Hkv";
    int64_t rows = cast<IntegerAttr>(info.get("block_q")).getInt();
    kernel.grid[0] = {str("rows") == "Group" ? E::Group : E::Sq, rows, 1};
    kernel.grid[1] = {str("heads") == "Hkv" ? E::Hkv : E::Hq, 1, 1};
    kernel.grid[1].timesSplits = info.get("splits") != nullptr;
    kernel.grid[2] = {E::B, 1, 1};
    kernel.block[0] = static_cast<unsigned>(*threads);
    kernel.sharedBytes = static_cast<unsigned>(*shared);
    for (Value operand : launch.getKernelOperands()) {
      // An entry's tensor, possibly through the memref.cast of an
      // alternative for a static Sq (the same descriptor fields).
      Value entryValue = operand;
      while (auto c = entryValue.getDefiningOp<memref::CastOp>())
        entryValue = c.getSource();
      auto arg = dyn_cast<BlockArgument>(entryValue);
      // The dropout seed: one 64-bit scalar parameter.
      if (arg && arg.getArgNumber() < names.size() &&
          names[arg.getArgNumber()] == "seed" &&
          operand.getType().isInteger(64)) {
        kernel.params.push_back(
            {"seed", cuda::ParamField::Seed, 0, cuda::ParamType::I64});
        continue;
      }
      auto memref = dyn_cast<MemRefType>(operand.getType());
      std::string name;
      if (arg && memref && arg.getArgNumber() < names.size()) {
        name = names[arg.getArgNumber()];
      } else if (StringRef role = split && memref ? workspaceRole(entryValue)
                                                  : StringRef();
                 !role.empty()) {
        // The split-KV workspaces the host allocates.
        name = workspaceFor(packed, role);
      } else {
        error = "cuda: a parameter of kernel '" + kernel.entry +
                "' is not one of the entry's tensors, a split-KV workspace "
                "or the dropout seed";
        return ATTN_ERROR_COMPILE;
      }
      // MLIR's memref descriptor, one scalar per kernel parameter.
      using P = cuda::ParamField;
      using T = cuda::ParamType;
      kernel.params.push_back({name, P::Data, 0, T::Ptr});
      kernel.params.push_back({name, P::Data, 0, T::Ptr});
      kernel.params.push_back({name, P::Offset, 0, T::I64});
      for (int64_t i = 0; i < memref.getRank(); ++i)
        kernel.params.push_back({name, P::Size, static_cast<int>(i), T::I64});
      for (int64_t i = 0; i < memref.getRank(); ++i)
        kernel.params.push_back({name, P::Stride, static_cast<int>(i), T::I64});
    }
  }
  // The workspaces in one order whatever the kernels' parameter order:
  // partial_out, partial_stats, then the packed ones.
  auto rank = [](const cuda::Workspace &w) {
    int role = 0;
    for (auto [i, n] : llvm::enumerate(mlir::attn::kSplitWorkspaceNames))
      if (StringRef(w.name).starts_with(n))
        role = static_cast<int>(i);
    return (w.name.find("_packed") != std::string::npos ? 2 : 0) + role;
  };
  std::stable_sort(metadata.workspaces.begin(), metadata.workspaces.end(),
                   [&](const cuda::Workspace &a, const cuda::Workspace &b) {
                     return rank(a) < rank(b);
                   });
  metadata.spec = spec;
  return ATTN_OK;
}

bool mlir::attn::jit::assembleCubin(const std::string &ptx,
                                    const std::string &chip, std::string &cubin,
                                    std::string &log, std::string &error) {
  // ATTN_PTXAS, else PATH, else the CUDA toolkit (RuntimeLibraries.h).
  std::string ptxas;
  if (!findPtxas(ptxas, error))
    return false;
  SmallString<128> in, out, report;
  int fd;
  if (llvm::sys::fs::createTemporaryFile("attn", "ptx", fd, in) ||
      llvm::sys::fs::createTemporaryFile("attn", "cubin", out) ||
      llvm::sys::fs::createTemporaryFile("attn", "log", report)) {
    error = "cannot create temporary files for ptxas";
    return false;
  }
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << ptx;
  }
  std::string arch = "-arch=" + chip;
  SmallVector<StringRef> argv = {ptxas, "-v", arch, in, "-o", out};
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(report),
                                          StringRef(report)};
  std::string execError;
  int rc = llvm::sys::ExecuteAndWait(ptxas, argv, std::nullopt, redirects, 0, 0,
                                     &execError);
  if (auto buf = llvm::MemoryBuffer::getFile(report))
    log = (*buf)->getBuffer().str();
  bool ok = rc == 0;
  if (ok) {
    if (auto buf = llvm::MemoryBuffer::getFile(out, /*IsText=*/false))
      cubin = (*buf)->getBuffer().str();
    else
      ok = false;
  }
  if (!ok)
    error = "ptxas failed (" + (execError.empty() ? "exit " + std::to_string(rc)
                                                  : execError) +
            "):\n" + log;
  llvm::sys::fs::remove(in);
  llvm::sys::fs::remove(out);
  llvm::sys::fs::remove(report);
  return ok;
}

namespace {
class CUDACompiler final : public ::attn::Compiler {
public:
  std::string configuration() const override {
    const char *tc = std::getenv("ATTN_CUDA_TENSOR_CORES");
    return tc ? std::string("ATTN_CUDA_TENSOR_CORES=") + tc : std::string();
  }
  attn_status available(std::string &error) override {
    return cuda::driverAvailable(error);
  }

  attn_status compile(const attn_spec &spec, ::attn::CompileResult &result,
                      std::string &error) override {
    // An AOT artifact loaded for this spec wins over compiling.
    std::string binary;
    if (auto artifact = cuda::findArtifact(spec, &binary))
      return cuda::createExecutable(*artifact, binary, result.executable,
                                    error);
    if (attn_status s = cuda::driverAvailable(error))
      return s;
    mlir::attn::jit::CudaCompileOptions options;
    if (attn_status s = cuda::currentDeviceChip(options.chip, error))
      return s;
    // Newer GPUs than the PTX ISA attn targets run sm_90 PTX through the
    // driver's JIT (PTX is forward compatible).
    if (std::atoi(options.chip.c_str() + 3) > 90)
      options.chip = "sm_90";
    options.blockQ = spec.block_q > 0 ? spec.block_q : 64;
    options.blockKv = spec.block_kv;
    // The tensor-core kernel's first version matched the float64
    // reference and PyTorch's flash backend on an H200
    // (bench/results/cuda-h200-2026-11-21) and was 8-10x faster than the
    // generic one, so the JIT uses it where it applies;
    // ATTN_CUDA_TENSOR_CORES=0 selects the generic kernel (also the way out
    // for q/k/v rows that are not 16-byte aligned, which the tensor-core
    // kernel's launch rejects).
    options.tensorCores = true;
    if (const char *tc = std::getenv("ATTN_CUDA_TENSOR_CORES"))
      options.tensorCores = std::string(tc) != "0";
    cuda::KernelMetadata metadata;
    std::string ptx;
    if (attn_status s = mlir::attn::jit::compileCudaKernel(
            spec, options, ptx, metadata, result.source, error))
      return s;
    return cuda::createExecutable(metadata, ptx, result.executable, error);
  }
  /// attn-decompose-mha's decomposition as a launch sequence: this
  /// compiler's kernel for the attention, cuBLASLt for the projections
  /// (runtime/src/cuda/CudaLayer.h). The layer's IR is decomposed here
  /// first: its attn.sdpa must be the attention the runtime's plan runs
  /// (cuda::layerAttentionSpec), and the decomposed IR heads the layer's
  /// source.
  attn_status compileMha(const attn_mha_spec &spec,
                         ::attn::LayerCompileResult &result,
                         std::string &error) override {
    std::string decomposed;
    if (attn_status s = decomposeLayer(spec, decomposed, error))
      return s;
    attn_spec fromIr;
    if (attn_spec_from_mlir(decomposed.c_str(), &fromIr) != ATTN_OK) {
      error = std::string("cuda: the decomposed layer: ") + attn_last_error();
      return ATTN_ERROR_COMPILE;
    }
    std::string differs =
        attentionDifference(fromIr, cuda::layerAttentionSpec(spec));
    if (!differs.empty()) {
      error = "cuda: internal error: the layer's plan runs another attention "
              "than attn-decompose-mha's attn.sdpa (" +
              differs + ")";
      return ATTN_ERROR_COMPILE;
    }
    if (attn_status s = cuda::compileLayer(spec, *this, result, error))
      return s;
    result.source = "// attn.mha after attn-decompose-mha (the linalg "
                    "projections run as the cuBLASLt GEMMs below):\n" +
                    decomposed + "\n" + result.source;
    return ATTN_OK;
  }

private:
  /// The layer's entry function (buildMhaKernelSource) after
  /// attn-decompose-mha, printed; --mlir-print-ir-after-all shows the pass.
  static attn_status decomposeLayer(const attn_mha_spec &spec,
                                    std::string &out, std::string &error) {
    DialectRegistry registry;
    mlir::attn::registerAllDialects(registry);
    MLIRContext context(registry, MLIRContext::Threading::DISABLED);
    std::string diagnostics;
    llvm::raw_string_ostream os(diagnostics);
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
      os << d.getLocation() << ": " << d << "\n";
      return success();
    });
    OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(
        mlir::attn::jit::buildMhaKernelSource(spec), &context);
    if (!module) {
      error = "cuda: the layer source is invalid: " + diagnostics;
      return ATTN_ERROR_INVALID_ARGUMENT;
    }
    PassManager pm(&context);
    if (failed(mlir::attn::jit::configurePassManager(pm))) {
      error = "cuda: bad pass-manager options: " + diagnostics;
      return ATTN_ERROR_INVALID_ARGUMENT;
    }
    pm.addPass(mlir::attn::createAttnDecomposeMhaPass());
    if (failed(pm.run(*module))) {
      error = "cuda: attn-decompose-mha failed: " + diagnostics;
      return ATTN_ERROR_COMPILE;
    }
    llvm::raw_string_ostream printed(out);
    module->print(printed);
    return ATTN_OK;
  }

  /// "" when `a` (from the IR) and `b` (the plan's, not normalized) are the
  /// same attention; else the first field that differs.
  static std::string attentionDifference(const attn_spec &a,
                                         const attn_spec &b) {
    auto dv = [](const attn_spec &s) {
      return s.value_dim ? s.value_dim : s.head_dim;
    };
    auto scale = [](const attn_spec &s) {
      return s.scale > 0 ? s.scale : 1.0 / std::sqrt(double(s.head_dim));
    };
    const std::pair<const char *, bool> checks[] = {
        {"dtype", a.dtype == b.dtype},
        {"batch", a.batch == b.batch},
        {"heads_q", a.heads_q == b.heads_q},
        {"heads_kv", a.heads_kv == b.heads_kv},
        {"seq_q", a.seq_q == b.seq_q},
        {"seq_kv", a.seq_kv == b.seq_kv},
        {"head_dim", a.head_dim == b.head_dim},
        {"value_dim", dv(a) == dv(b)},
        {"causal", a.causal == b.causal},
        {"mask", a.mask == b.mask},
        {"dropout_p", a.dropout_p == b.dropout_p},
        {"return_lse", a.return_lse == b.return_lse},
        {"scale", std::abs(scale(a) - scale(b)) <= 1e-12 * scale(b)},
    };
    for (const auto &[name, same] : checks)
      if (!same)
        return name;
    return {};
  }
};

// Loading libattn registers the cuda compiler with the runtime.
const bool registered = [] {
  ::attn::registerCompiler(ATTN_TARGET_CUDA, std::make_shared<CUDACompiler>());
  return true;
}();
} // namespace
