//===- attn-translate.cpp - IR at any level to an artifact ----------------===//
//
// attn-translate takes IR from attn.sdpa down and writes an artifact: LLVM
// IR for the host CPU (--attn-to-llvmir, running attn-to-cpu-pipeline first
// when the input is not yet in the LLVM dialect), PTX or a cubin for NVIDIA
// GPUs (--attn-to-ptx / --attn-to-cubin, the JIT's kernel: tensor cores
// where the spec allows them) and SPIR-V for Vulkan (--attn-to-spirv,
// running attn-to-spirv-pipeline first). The GPU artifacts' launch metadata
// goes to <output>.json or --metadata. Diagnostics do not print the module.
// Every upstream translation stays available.
//
//===----------------------------------------------------------------------===//
#include "attn/InitAll.h"
#include "attn/JIT/CUDA.h"
#include "attn/JIT/JIT.h"
#include "attn/JIT/Vulkan.h"
#include "attn/runtime/CudaKernel.h"
#include "attn/runtime/attn_jit.h"
#include "attn/Pipelines/Pipelines.h"
#include "attn/Target/SPIRV/SPIRVArtifact.h"

#include "attn/Dialect/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllTranslations.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "mlir/Tools/mlir-translate/Translation.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace {
llvm::cl::opt<bool> clMath("math",
                           llvm::cl::desc("--attn-to-llvmir: use the untiled "
                                          "reference lowering"),
                           llvm::cl::init(false));
llvm::cl::opt<int64_t> clBlockQ("block-q",
                                llvm::cl::desc("--attn-to-llvmir: query tile"),
                                llvm::cl::init(64));
llvm::cl::opt<int64_t> clBlockKv(
    "block-kv",
    llvm::cl::desc("--attn-to-llvmir: key block; --attn-to-ptx: keys per "
                   "shared-memory tile (the tensor-core kernel takes 16, 32 "
                   "or 64, else its default)"),
    llvm::cl::init(64));
llvm::cl::opt<std::string>
    clVariant("variant",
              llvm::cl::desc("--attn-to-spirv: portable, tiled, coopmat or "
                             "coopmat-scalar (attn-to-spirv-pipeline)"),
              llvm::cl::init("portable"));
llvm::cl::opt<int64_t> clSubgroupSize(
    "subgroup-size",
    llvm::cl::desc("--attn-to-spirv: the target device's subgroup size. "
                   "portable: 0 (default) = an invocation per query row, "
                   "runnable on any Vulkan 1.1 device; N > 0 = the subgroup "
                   "kernel, for devices whose subgroups have N invocations "
                   "(metadata: required_subgroup_size). coopmat: one "
                   "subgroup per workgroup (0 = 32)"),
    llvm::cl::init(0));

llvm::cl::opt<std::string>
    clChip("chip",
           llvm::cl::desc("--attn-to-ptx/--attn-to-cubin: target GPU "
                          "(sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a)"),
           llvm::cl::init("sm_90a"));
llvm::cl::opt<bool> clTensorCores(
    "tensor-cores",
    llvm::cl::desc("--attn-to-ptx/--attn-to-cubin: the mma.sync kernel "
                   "where it applies (f16 or bf16, D, Dv multiples of 16 up "
                   "to 256, unit-stride rows), as the JIT does; other specs "
                   "get the generic kernel. --tensor-cores=false: the "
                   "generic kernel for every spec"),
    llvm::cl::init(true));
llvm::cl::opt<int64_t> clWarps(
    "warps",
    llvm::cl::desc("--tensor-cores: warps per workgroup, 4 or 8 (0: 4 for "
                   "causal attention or D, Dv <= 64, else 8)"),
    llvm::cl::init(0));
llvm::cl::opt<int64_t> clRowTiles(
    "row-tiles",
    llvm::cl::desc("--tensor-cores: m16 tiles of query rows per warp, 1 or 2 "
                   "(0: 1)"),
    llvm::cl::init(0));
llvm::cl::opt<int64_t> clStages(
    "stages",
    llvm::cl::desc("--tensor-cores: depth of the cp.async K/V ring (2-4; 0: "
                   "3 for the non-causal two-tile kernels at D, Dv in "
                   "(64, 128], else 2)"),
    llvm::cl::init(0));
llvm::cl::opt<int64_t> clKvSplits(
    "kv-splits",
    llvm::cl::desc("--attn-to-ptx/--attn-to-cubin: the spec's kv_splits (0: "
                   "split-KV with the chunk count chosen at each launch, 1: "
                   "off, N: N chunks); default: the op's tiling attribute, "
                   "else 0. --attn-to-spirv (not tiled): N >= 1 chunks, "
                   "fixed in the module (default 1; no 0: choosing needs a "
                   "device)"),
    llvm::cl::init(0));
llvm::cl::opt<std::string> clVulkanDevice(
    "vulkan-device",
    llvm::cl::desc("--attn-to-spirv: build the kernel the JIT would build "
                   "on the device this description names (vk-info's "
                   "output, format attn-vulkan-device): its variant (or "
                   "--variant's), geometry, packing and key split "
                   "(--kv-splits: 0 = sized to its compute units, the "
                   "default), the ATTN_VULKAN_* settings as the JIT reads "
                   "them; the input must be an attn.sdpa on tensors"),
    llvm::cl::value_desc("file"), llvm::cl::init(""));
llvm::cl::opt<std::string> clMetadata(
    "metadata",
    llvm::cl::desc("--attn-to-ptx/--attn-to-cubin/--attn-to-spirv: where to "
                   "write the launch metadata (default: the output path with "
                   ".json appended, e.g. -o k.ptx: k.ptx.json, so a .ptx, a "
                   ".cubin and a .spv of one name do not share it)"),
    llvm::cl::value_desc("file"), llvm::cl::init(""));
// The flags' names before there was one for every target (deprecated).
llvm::cl::alias clAttnMetadata("attn-metadata",
                               llvm::cl::desc("Deprecated: --metadata"),
                               llvm::cl::aliasopt(clMetadata),
                               llvm::cl::Hidden);
llvm::cl::alias clSpirvMetadata("spirv-metadata",
                                llvm::cl::desc("Deprecated: --metadata"),
                                llvm::cl::aliasopt(clMetadata),
                                llvm::cl::Hidden);

/// The -o of mlirTranslateMain (a function-local option there, found by
/// name once the command line is parsed).
std::string outputPath() {
  auto &options = llvm::cl::getRegisteredOptions();
  auto it = options.find("o");
  if (it == options.end())
    return "-";
  return static_cast<llvm::cl::opt<std::string> *>(it->second)->getValue();
}

/// The metadata path: --metadata, else -o's path with ".json" appended
/// (empty for stdout). `binaryName` receives -o's file name.
std::string metadataPath(std::string &binaryName) {
  std::string output = outputPath();
  binaryName = output;
  size_t slash = output.rfind('/');
  if (slash != std::string::npos)
    binaryName = output.substr(slash + 1);
  if (!clMetadata.empty())
    return clMetadata;
  if (output == "-")
    return "";
  return output + ".json";
}

/// The chips attn's PTX (ISA 8.0) targets; empty when `chip` is one, else
/// why not.
std::string checkChip(const std::string &chip) {
  static const char *const known[] = {"sm_80", "sm_86", "sm_87",
                                      "sm_89", "sm_90", "sm_90a"};
  std::string names;
  for (const char *k : known) {
    if (chip == k)
      return "";
    names += std::string(names.empty() ? "" : ", ") + k;
  }
  return "--chip=" + chip + " is not a GPU attn-translate targets (expected " +
         "one of " + names + "; newer GPUs run sm_90 PTX)";
}

/// Diagnostics name the op's location but do not print the op: the
/// module holds the whole program (thousands of lines once lowered).
/// --mlir-print-op-on-diagnostic given explicitly still prints it, here
/// and in the JIT's own contexts (which read the option when created).
void quietDiagnostics(MLIRContext *context) {
  auto &options = llvm::cl::getRegisteredOptions();
  auto it = options.find("mlir-print-op-on-diagnostic");
  if (it != options.end() && it->second->getNumOccurrences())
    return;
  if (it != options.end())
    static_cast<llvm::cl::opt<bool> *>(it->second)->setValue(false);
  context->printOpOnDiagnostic(false);
}

/// attn IR holding one attn.sdpa -> PTX or a cubin, plus its metadata file.
LogicalResult attnToCuda(Operation *op, llvm::raw_ostream &os, bool cubin) {
  quietDiagnostics(op->getContext());
  if (std::string why = checkChip(clChip); !why.empty())
    return emitError(op->getLoc()) << why;
  std::string text;
  llvm::raw_string_ostream textOS(text);
  op->print(textOS);
  attn_spec spec;
  if (attn_spec_from_mlir(text.c_str(), &spec) != ATTN_OK)
    return emitError(op->getLoc()) << attn_last_error();
  std::string binaryName, mdPath = metadataPath(binaryName);
  if (mdPath.empty())
    return emitError(op->getLoc(),
                     "--attn-to-ptx/--attn-to-cubin write the launch "
                     "metadata beside the output: give -o FILE or "
                     "--metadata=FILE");
  if (spec.value_dim == 0)
    spec.value_dim = spec.head_dim;
  if (clKvSplits.getNumOccurrences()) {
    if (clKvSplits < 0)
      return emitError(op->getLoc(), "--kv-splits must be >= 0");
    spec.kv_splits = clKvSplits;
  }

  mlir::attn::jit::CudaCompileOptions options;
  options.chip = clChip;
  options.blockQ = spec.block_q > 0 ? spec.block_q : clBlockQ.getValue();
  options.blockKv = spec.block_kv > 0 ? spec.block_kv
                    : clBlockKv.getNumOccurrences() ? clBlockKv.getValue()
                                                    : 0;
  options.tensorCores = clTensorCores;
  options.warps = clWarps;
  options.rowTiles = clRowTiles;
  options.stages = clStages;
  ::attn::cuda::KernelMetadata metadata;
  std::string ptx, source, error;
  if (mlir::attn::jit::compileCudaKernel(spec, options, ptx, metadata, source,
                                   error) != ATTN_OK)
    return emitError(op->getLoc()) << error;
  metadata.binaryFile = binaryName;
  std::string binary = ptx;
  if (cubin) {
    std::string log;
    if (!mlir::attn::jit::assembleCubin(ptx, options.chip, binary, log, error))
      return emitError(op->getLoc()) << error;
    metadata.format = ::attn::cuda::BinaryFormat::Cubin;
  }
  std::error_code ec;
  llvm::raw_fd_ostream md(mdPath, ec);
  if (ec)
    return emitError(op->getLoc())
           << "cannot write '" << mdPath << "': " << ec.message();
  md << ::attn::cuda::writeMetadata(metadata);
  os << binary;
  return success();
}

/// True when the module still holds ops outside the LLVM dialect (other
/// than the module itself), i.e. the CPU pipeline has to run first.
bool needsLowering(ModuleOp module) {
  bool needs = false;
  module.walk([&](Operation *op) {
    if (op != module.getOperation() && !isa<LLVM::LLVMDialect>(op->getDialect()))
      needs = true;
  });
  return needs;
}

LogicalResult attnToLLVMIR(Operation *op, llvm::raw_ostream &os) {
  quietDiagnostics(op->getContext());
  auto module = dyn_cast<ModuleOp>(op);
  if (!module)
    return emitError(op->getLoc(), "attn-to-llvmir expects a builtin.module");
  if (needsLowering(module)) {
    PassManager pm(module.getContext());
    if (failed(applyPassManagerCLOptions(pm)))
      return failure();
    mlir::attn::AttnToCPUPipelineOptions options;
    options.math = clMath;
    options.blockQ = clBlockQ;
    options.blockKv = clBlockKv;
    mlir::attn::buildAttnToCPUPipeline(pm, options);
    if (failed(pm.run(module)))
      return emitError(module.getLoc(), "attn-to-cpu-pipeline failed");
  }
  llvm::LLVMContext llvmContext;
  auto llvmModule = translateModuleToLLVMIR(module, llvmContext);
  if (!llvmModule)
    return emitError(module.getLoc(), "translation to LLVM IR failed");
  llvmModule->print(os, nullptr);
  return success();
}
/// The launch metadata of --attn-to-spirv beside the .spv (k.spv.json),
/// or at --metadata; nowhere when the .spv goes to stdout.
LogicalResult writeVulkanMetadata(ModuleOp module,
                                  ::attn::vulkan::KernelMetadata &metadata) {
  std::string binaryName, mdPath = metadataPath(binaryName);
  if (mdPath.empty())
    return success();
  std::error_code ec;
  llvm::raw_fd_ostream meta(mdPath, ec);
  if (ec)
    return emitError(module.getLoc(),
                     "cannot write " + mdPath + ": " + ec.message());
  metadata.binaryFile = binaryName;
  meta << ::attn::vulkan::writeMetadata(metadata);
  return success();
}

/// --vulkan-device: the JIT's kernel for `spec` on the described device.
LogicalResult vulkanKernelForDevice(ModuleOp module, attn_spec spec,
                                    bool haveSpec, llvm::raw_ostream &os) {
  if (!haveSpec)
    return emitError(module.getLoc(),
                     "--vulkan-device builds the kernel the runtime would "
                     "build for an attn.sdpa on tensors (its spec); this "
                     "input has none (IR already lowered, or on buffers)");
  if (clSubgroupSize.getNumOccurrences())
    return emitError(module.getLoc(),
                     "--subgroup-size: with --vulkan-device the kernel takes "
                     "the device's subgroup size");
  auto file = llvm::MemoryBuffer::getFile(clVulkanDevice);
  if (!file)
    return emitError(module.getLoc(), "cannot read " + clVulkanDevice + ": " +
                                          file.getError().message());
  ::attn::vulkan::DeviceInfo info;
  std::string error;
  if (!::attn::vulkan::parseDeviceDescription((*file)->getBuffer().str(), info,
                                              error))
    return emitError(module.getLoc(), clVulkanDevice + ": " + error);
  // The spec as the runtime would be asked for it: the choices left to the
  // compiler unless given here.
  spec.block_q = clBlockQ.getNumOccurrences() ? clBlockQ : 0;
  spec.block_kv = clBlockKv.getNumOccurrences() ? clBlockKv : 0;
  spec.kv_splits = clKvSplits.getNumOccurrences() ? clKvSplits : 0;
  if (spec.block_q < 0 || spec.block_kv < 0 || spec.kv_splits < 0)
    return emitError(module.getLoc(),
                     "--vulkan-device: --block-q, --block-kv and --kv-splits "
                     "must be >= 0 (0: the compiler's choice)");
  ::attn::vulkan::KernelMetadata metadata;
  ::attn::KernelInfo chosen;
  std::string source;
  if (mlir::attn::jit::lowerVulkanKernel(
          spec, /*layerSource=*/nullptr, info,
          clVariant.getNumOccurrences() ? clVariant : std::string(), metadata,
          chosen, source, error) != ATTN_OK)
    return emitError(module.getLoc(), error);
  metadata.blockQ = chosen.blockQ;
  metadata.blockKv = chosen.blockKv;
  metadata.kvSplits = chosen.kvSplits;
  metadata.spec = spec;
  metadata.hasSpec = true;
  // What attn_vulkan_load_artifact checks (the spec valid for vulkan, its
  // arguments the module's), before anything is written.
  ::attn::vulkan::KernelMetadata probe = metadata, loaded;
  probe.binaryFile = "k.spv"; // (named when written)
  if (!::attn::vulkan::parseMetadata(::attn::vulkan::writeMetadata(probe),
                                     loaded, error))
    return emitError(module.getLoc(),
                     "--vulkan-device: the artifact would not load: " + error);
  os.write(reinterpret_cast<const char *>(metadata.words.data()),
           metadata.words.size() * sizeof(uint32_t));
  return writeVulkanMetadata(module, metadata);
}

LogicalResult attnToSPIRV(Operation *op, llvm::raw_ostream &os) {
  quietDiagnostics(op->getContext());
  auto module = dyn_cast<ModuleOp>(op);
  if (!module)
    return emitError(op->getLoc(), "attn-to-spirv expects a builtin.module");
  bool lowered = !module.getOps<spirv::ModuleOp>().empty();
  // An attn.sdpa on a function's tensors (not yet in the destination-passing
  // form the pipeline takes, e.g. examples/sdpa.mlir): the kernel the
  // runtime would build for its spec, with dense memrefs (dynamic sizes:
  // the portable variant reads them at launch, see the metadata's exprs).
  OwningOpRef<ModuleOp> fromSpec;
  bool tensorLevel = false;
  module.walk([&](mlir::attn::SdpaOp sdpa) {
    if (!sdpa.getQuery().getDefiningOp<bufferization::ToTensorOp>())
      tensorLevel = true;
  });
  // The spec goes into the metadata (the runtime loads the kernel under
  // it); already-lowered IR has none.
  attn_spec spec;
  bool haveSpec = false;
  if (!lowered && tensorLevel) {
    std::string text;
    llvm::raw_string_ostream textOS(text);
    module->print(textOS);
    if (attn_spec_from_mlir(text.c_str(), &spec) != ATTN_OK)
      return emitError(module.getLoc()) << attn_last_error();
    if (spec.value_dim == 0)
      spec.value_dim = spec.head_dim;
    haveSpec = true;
    fromSpec = parseSourceString<ModuleOp>(
        mlir::attn::jit::buildDenseKernelSource(spec), module.getContext());
    if (!fromSpec)
      return emitError(module.getLoc(), "--attn-to-spirv: the kernel built for the "
                              "spec does not parse");
    module = *fromSpec;
  }
  if (!clVulkanDevice.empty())
    return vulkanKernelForDevice(module, spec, haveSpec, os);
  if (!lowered) {
    PassManager pm(module.getContext());
    if (failed(applyPassManagerCLOptions(pm)))
      return failure();
    mlir::attn::AttnToSPIRVPipelineOptions options;
    options.variant = clVariant;
    // Unset: the variant's own defaults (attn-to-spirv-pipeline).
    options.blockQ = clBlockQ.getNumOccurrences() ? clBlockQ : 0;
    options.blockKv = clBlockKv.getNumOccurrences() ? clBlockKv : 0;
    options.subgroupSize = clSubgroupSize;
    if (clKvSplits.getNumOccurrences()) {
      if (clKvSplits < 1)
        return emitError(
            module.getLoc(),
            "--attn-to-spirv: --kv-splits must be >= 1 (the chunk count is "
            "fixed in the module; 0, chosen per device, is the runtime's)");
      options.kvSplits = clKvSplits;
    }
    std::string error;
    if (failed(mlir::attn::buildAttnToSPIRVPipeline(pm, options, error)))
      return emitError(module.getLoc(), error);
    if (failed(pm.run(module)))
      return emitError(module.getLoc(), "attn-to-spirv-pipeline failed");
  }
  mlir::attn::SPIRVKernelArtifact artifact;
  std::string error;
  if (failed(mlir::attn::extractSPIRVKernel(module, artifact, error)))
    return emitError(module.getLoc(), error);
  os.write(reinterpret_cast<const char *>(artifact.words.data()),
           artifact.words.size() * sizeof(uint32_t));

  ::attn::vulkan::KernelMetadata metadata;
  mlir::attn::jit::toVulkanKernelMetadata(artifact, clVariant, metadata);
  metadata.blockQ = clBlockQ.getNumOccurrences() ? clBlockQ : 0;
  metadata.blockKv = clBlockKv.getNumOccurrences() ? clBlockKv : 0;
  metadata.kvSplits = clKvSplits.getNumOccurrences() ? clKvSplits : 1;
  if (haveSpec) {
    // The kernel's choices are the spec's: attn_compile with the spec
    // attn_vulkan_load_artifact returns gets this kernel.
    spec.block_q = metadata.blockQ;
    spec.block_kv = metadata.blockKv;
    spec.kv_splits = metadata.kvSplits;
    metadata.spec = spec;
    metadata.hasSpec = true;
  }
  return writeVulkanMetadata(module, metadata);
}
} // namespace

int main(int argc, char **argv) {
  mlir::attn::registerAllPasses();
  registerPassManagerCLOptions();
  // The JIT's pipelines (--attn-to-ptx, --attn-to-cubin) honour
  // --mlir-print-ir-after-all and the other pass-manager options too.
  mlir::attn::jit::setPassManagerConfigurator(
      [](PassManager &pm) { return applyPassManagerCLOptions(pm); });
  registerAllTranslations();
  TranslateFromMLIRRegistration reg(
      "attn-to-llvmir",
      "attn IR at any level -> LLVM IR for the host CPU (runs "
      "attn-to-cpu-pipeline when needed)",
      attnToLLVMIR, [](DialectRegistry &registry) {
        mlir::attn::registerAllDialects(registry);
        registerAllToLLVMIRTranslations(registry);
      });
  auto cudaDialects = [](DialectRegistry &registry) {
    mlir::attn::registerAllDialects(registry);
  };
  TranslateFromMLIRRegistration ptx(
      "attn-to-ptx",
      "attn IR with one attn.sdpa -> PTX for an NVIDIA GPU (--chip), plus the "
      "launch metadata (-o FILE: FILE.json, or --metadata)",
      [](Operation *op, llvm::raw_ostream &os) {
        return attnToCuda(op, os, /*cubin=*/false);
      },
      cudaDialects);
  TranslateFromMLIRRegistration cubin(
      "attn-to-cubin",
      "attn IR with one attn.sdpa -> a cubin (PTX assembled by ptxas), plus "
      "the launch metadata (-o FILE: FILE.json, or --metadata)",
      [](Operation *op, llvm::raw_ostream &os) {
        return attnToCuda(op, os, /*cubin=*/true);
      },
      cudaDialects);
  TranslateFromMLIRRegistration spirvReg(
      "attn-to-spirv",
      "attn IR at any level -> a SPIR-V binary for Vulkan (runs "
      "attn-to-spirv-pipeline when needed), plus its launch metadata "
      "(-o FILE: FILE.json, or --metadata)",
      attnToSPIRV,
      [](DialectRegistry &registry) { mlir::attn::registerAllDialects(registry); });
  return failed(mlirTranslateMain(argc, argv, "attn translation driver\n"));
}
