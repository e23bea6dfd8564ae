//===- NVVMPipeline.cpp - attn.sdpa to PTX for NVIDIA GPUs ------------------===//
#include "attn/Pipelines/Pipelines.h"

#include "attn/Conversion/Passes.h"
#include "attn/Conversion/TilesToNVGPU/TilesToNVGPU.h"
#include "attn/Dialect/Attn/Transforms/Passes.h"
#include "attn/Target/NVVM/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Support/FileSystem.h"

#include <cstdlib>

using namespace mlir;

attn::ConfigureNVGPUOptions
mlir::attn::tensorCoreOptions(const AttnToNVVMPipelineOptions &opts) {
  ConfigureNVGPUOptions tc;
  tc.warps = opts.warps;
  tc.stages = opts.stages;
  tc.rowTiles = opts.rowTiles;
  tc.blockKv = tensorCoreBlockKv(opts.blockKv);
  tc.chip = opts.chip;
  tc.kvSplits = opts.kvSplits;
  return tc;
}

void mlir::attn::buildAttnToNVVMPipeline(OpPassManager &pm,
                                         const AttnToNVVMPipelineOptions &opts) {
  // attn.sdpa in destination-passing form -> one gpu.launch per op over the
  // caller's memrefs (or a split-KV pair). With tensor-cores, the ops the
  // mma.sync kernel supports get their tiling and mapping
  // (attn-configure-nvgpu).
  if (opts.tensorCores) {
    AttnConfigureNVGPUPassOptions configure;
    ConfigureNVGPUOptions tc = tensorCoreOptions(opts);
    configure.warps = tc.warps;
    configure.stages = tc.stages;
    configure.kvSplits = tc.kvSplits;
    configure.rowTiles = tc.rowTiles;
    configure.blockKv = tc.blockKv;
    configure.chip = tc.chip;
    pm.addPass(createAttnConfigureNVGPUPass(configure));
  }
  // The rest get the generic kernel's: a thread per query row, K/V tiles
  // in 48 KB of static shared memory, split-KV counts chosen per launch.
  AttnConfigureSIMTPassOptions simt;
  simt.blockQ = opts.blockQ;
  simt.blockKv = opts.blockKv;
  simt.sharedMemoryBytes = kGenericSharedMemoryBytes;
  simt.kvSplits = opts.kvSplits;
  simt.launchSplits = true;
  pm.addPass(createAttnConfigureSIMTPass(simt));
  // The shared tiled form (L1: tiles and key loops; L2: the online softmax
  // as linalg on tensors), then its mapping onto the hardware: mma.sync
  // fragments, cp.async staging and the grid for the tensor-core tiles, a
  // thread per row for the others. Requires: the configured ops.
  // Guarantees: gpu.launch ops over the caller's memrefs.
  pm.addPass(createAttnTileSdpaPass());
  pm.addPass(createAttnDecomposeOnlineAttentionPass());
  pm.addPass(createConvertAttnTilesToNVGPUPass());
  pm.addPass(createConvertAttnTilesToSIMTPass());

  // The launch body becomes a gpu.func kernel in a gpu.module; its
  // parameters are exactly the memrefs it reads. (Canonicalizing first
  // would hoist the body's constants out of the launch, making them kernel
  // parameters.)
  pm.addPass(createGpuKernelOutliningPass());
  // Each kernel's launch description (attn.launch) onto its launches.
  pm.addPass(createAttnLaunchInfoPass());
  // The mma.sync kernels get the registers they need (no ptxas occupancy
  // cap, which spills the 256-thread D = 64 kernels).
  pm.addPass(createNVVMMaxRegistersPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  // The target: chip and PTX version (MLIR 22 defaults to PTX 6.0, which
  // cannot target sm_90a, hence +ptx80), and libdevice for the math calls
  // (exp2, log2 become __nv_exp2f, __nv_log2f).
  GpuNVVMAttachTargetOptions target;
  target.chip = opts.chip;
  target.features = opts.features;
  target.optLevel = 3;
  std::string toolkit = findCudaToolkit();
  if (!toolkit.empty())
    target.linkLibs.push_back(toolkit + "/nvvm/libdevice/libdevice.10.bc");
  pm.addPass(createGpuNVVMAttachTarget(target));

  // The device code to NVVM/LLVM. The host function keeps its
  // gpu.launch_func: the runtime launches the kernel from the artifact's
  // metadata, so the host side is never lowered.
  OpPassManager &dev = pm.nest<gpu::GPUModuleOp>();
  // nvgpu (mma.sync, ldmatrix, cp.async: the tensor-core kernel's ops) to
  // NVVM first; the generic kernel has none.
  dev.addPass(createConvertNVGPUToNVVMPass());
  dev.addPass(createSCFToControlFlowPass());
  dev.addPass(memref::createExpandStridedMetadataPass());
  dev.addPass(createLowerAffinePass());
  dev.addPass(createConvertGpuOpsToNVVMOps());
  dev.addPass(createCanonicalizerPass());
  dev.addPass(createCSEPass());
  dev.addPass(createReconcileUnrealizedCastsPass());

  // NVVM -> PTX (isa), or cubin/fatbin through ptxas from the toolkit.
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = opts.format;
  binary.toolkitPath = toolkit;
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

std::string mlir::attn::findCudaToolkit() {
  for (const char *var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *dir = std::getenv(var))
      if (*dir && llvm::sys::fs::exists(std::string(dir) +
                                        "/nvvm/libdevice/libdevice.10.bc"))
        return dir;
  if (llvm::sys::fs::exists("/usr/local/cuda/nvvm/libdevice/libdevice.10.bc"))
    return "/usr/local/cuda";
  return "";
}

void mlir::attn::registerAttnToNVVMPipeline() {
  PassPipelineRegistration<AttnToNVVMPipelineOptions>(
      "attn-to-nvvm-pipeline",
      "Lower attn.sdpa in destination-passing form (memrefs in and out, as "
      "the JIT generates) to a gpu.binary holding PTX for an NVIDIA GPU: "
      "every op through attn-tile-sdpa and the online-softmax rewrite, then "
      "the generic kernel's mapping (a thread per query row, K/V tiles in "
      "shared memory), or with tensor-cores=1 the mma.sync kernel's where "
      "it applies",
      buildAttnToNVVMPipeline);
}
