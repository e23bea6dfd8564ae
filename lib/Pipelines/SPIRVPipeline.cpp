//===- SPIRVPipeline.cpp - attn.sdpa on tensors to SPIR-V for Vulkan ------===//
#include "attn/Pipelines/Pipelines.h"

#include "attn/Conversion/Passes.h"
#include "attn/Dialect/Attn/Transforms/Passes.h"
#include "attn/Target/SPIRV/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>

using namespace mlir;

int64_t mlir::attn::defaultSubgroupRows(int64_t subgroupSize) {
  // 16 rows share each staged K/V tile, within 256 invocations (lavapipe
  // allows 32 subgroups of 8 per workgroup; GPUs of 32 or 64 lanes get 8
  // or 4 rows).
  return std::max<int64_t>(1, std::min<int64_t>(16, 256 / subgroupSize));
}

LogicalResult
mlir::attn::buildAttnToSPIRVPipeline(OpPassManager &pm,
                                     const AttnToSPIRVPipelineOptions &opts,
                                     std::string &error) {
  // The SPIR-V steps shared by both variants, after outlining: subviews
  // folded into loads/stores, index math to arith, memory spaces to
  // storage classes, then GPU/SCF/arith/math/memref to SPIR-V. With
  // `subgroupSize` > 0 the kernels were written for subgroups of that size:
  // the target says so (gpu.shuffle lowers only at the target's width) and
  // the module records it for the launch metadata.
  auto addToSPIRV = [&](const std::string &caps, const std::string &exts,
                        const std::string &version,
                        int64_t subgroupSize = 0) -> LogicalResult {
    // {}: the struct gives device_id no default (the option's is 0).
    GpuSPIRVAttachTargetOptions target{};
    target.spirvVersion = version;
    for (StringRef cap : llvm::split(caps, ','))
      target.spirvCapabilities.push_back(cap.str());
    for (StringRef ext : llvm::split(exts, ','))
      target.spirvExtensions.push_back(ext.str());
    target.clientApi = "Vulkan";
    pm.addPass(createGpuSPIRVAttachTarget(target));
    // 16-bit buffers the target cannot compute on (f16 without Float16,
    // i16 without Int16): 32-bit words.
    pm.addPass(createSPIRV16BitStoragePass());
    if (subgroupSize > 0)
      pm.addPass(createSPIRVSubgroupSizePass({/*size=*/subgroupSize}));
    pm.nest<func::FuncOp>().addPass(createLowerAffinePass());
    OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
    kernels.addPass(memref::createFoldMemRefAliasOpsPass());
    math::MathExpandOpsPassOptions expandMath;
    expandMath.opMnemonics = {"exp2"};
    kernels.addPass(math::createMathExpandOpsPass(expandMath));
    arith::ArithExpandOpsPassOptions expandArith;
    expandArith.includeBf16 = true;
    kernels.addPass(arith::createArithExpandOpsPass(expandArith));
    kernels.addPass(createConvertMathToSPIRVPass());
    kernels.addPass(createLowerAffinePass());
    kernels.addPass(createCanonicalizerPass());
    // After every canonicalization (which would fold the guard of a loop
    // it can prove non-empty back in): loops with results that may run no
    // iteration, which convert-scf-to-spirv gets wrong.
    kernels.addPass(createSPIRVZeroTripLoopsPass());
    // Its client API defaults to Vulkan's storage-class mapping.
    pm.addPass(createMapMemRefStorageClassPass());
    pm.addPass(createConvertGPUToSPIRVPass());
    OpPassManager &spirvModules = pm.nest<spirv::ModuleOp>();
    spirvModules.addPass(spirv::createSPIRVLowerABIAttributesPass());
    spirvModules.addPass(spirv::createSPIRVUpdateVCEPass());
    spirvModules.addPass(createCanonicalizerPass());
    return success();
  };

  // Vulkan 1.1 (SPIR-V 1.3) with `caps`; 16-bit storage and arithmetic
  // only with f16 (the module requires them only where it uses f16).
  // Int16 (with 16-bit storage) only where allowed: bf16 buffers are i16
  // buffers by then (SPIRVBf16Storage.cpp); without it they are emulated
  // with 32-bit words, which needs 16-bit storage off as well.
  auto addVulkan11 = [&](std::string caps, bool int16,
                         int64_t subgroupSize = 0) {
    std::string exts = "SPV_KHR_storage_buffer_storage_class";
    if (opts.f16)
      caps += ",Float16";
    if (opts.f16 || int16) {
      caps += ",StorageBuffer16BitAccess";
      exts += ",SPV_KHR_16bit_storage";
    }
    if (int16)
      caps += ",Int16";
    return addToSPIRV(caps, exts, "v1.3", subgroupSize);
  };
  const int64_t tileQ = opts.blockQ > 0 ? int64_t(opts.blockQ) : 16;
  const int64_t tileKv = opts.blockKv > 0 ? int64_t(opts.blockKv) : 16;
  // After outlining: each kernel's workgroup size, then the driver's loop
  // budget (if it has one) checked on the kernels' loops.
  auto addKernelChecks = [&]() -> LogicalResult {
    // Index values sunk into the launch first: outlined as kernel
    // arguments, loop bounds would be unknown to the kernel (and to the
    // budget), and SPIR-V kernels take buffers only.
    pm.nest<func::FuncOp>().addPass(createSPIRVSinkLaunchIndexPass());
    pm.addPass(createGpuKernelOutliningPass());
    pm.addPass(createSPIRVEntryPointABIPass());
    // Dynamic sizes from a buffer the host fills (static kernels as they
    // are), clamped where the budget needs a bound.
    pm.addPass(
        createSPIRVDynamicShapesPass({/*maxExtent=*/opts.maxDynamicExtent}));
    // Index arithmetic as arith ops, which the budget's range analysis
    // reads (affine.min/max/apply it does not).
    pm.nest<gpu::GPUModuleOp>().addPass(createLowerAffinePass());
    pm.addPass(
        createSPIRVLoopBudgetPass({/*maxIterations=*/opts.maxLoopIterations}));
    return success();
  };

  if (opts.kvSplits < 1) {
    error = "attn-to-spirv-pipeline: kv-splits is " +
            std::to_string(int64_t(opts.kvSplits)) + "; it must be >= 1";
    return failure();
  }
  if (opts.subgroupSize > 0 && opts.variant == "tiled") {
    error = "attn-to-spirv-pipeline: subgroup-size=" +
            std::to_string(int64_t(opts.subgroupSize)) +
            " needs variant=portable, coopmat or coopmat-scalar: the tiled "
            "variant uses no subgroups";
    return failure();
  }
  if (opts.kvSplits > 1 && opts.variant == "tiled") {
    error = "attn-to-spirv-pipeline: kv-splits=" +
            std::to_string(int64_t(opts.kvSplits)) +
            " needs variant=portable, coopmat or coopmat-scalar: the tiled "
            "variant has no split-KV (use kv-splits=1)";
    return failure();
  }

  if (opts.subgroupSize < 0 || opts.subgroupSize > 128 ||
      (opts.subgroupSize & (opts.subgroupSize - 1))) {
    error = "attn-to-spirv-pipeline: subgroup-size is " +
            std::to_string(int64_t(opts.subgroupSize)) +
            "; it must be 0 or a power of two up to 128";
    return failure();
  }
  // coopmat's workgroup is one subgroup, 32 invocations unless given;
  // coopmat-scalar's is a workgroup of at least one invocation per row.
  // A layer's work around its attention (attn.mha after
  // attn-decompose-mha; nothing in a plain attention kernel): its tensors
  // in device buffers the host function allocates, the attention left in
  // destination-passing form, each projection a kernel of its own.
  auto addLayerKernels = [&]() {
    pm.addPass(createAttnDecomposeMhaPass());
    pm.addPass(createSPIRVLayerBuffersPass());
    pm.addPass(createSPIRVMapLinalgPass({/*tile=*/opts.layerTiles}));
  };

  const int64_t coopSubgroup =
      opts.subgroupSize > 0           ? int64_t(opts.subgroupSize)
      : opts.variant == "coopmat-scalar" ? std::max<int64_t>(32, tileQ)
                                         : 32;

  if (opts.variant == "portable") {
    // The SIMT mapping of the tiled form, as the cuda target's generic
    // kernel but for SPIR-V: a workgroup per (query block, head, batch),
    // an invocation per row, K and V tiles in workgroup memory, the
    // head-dimension loops unrolled. With kv-splits = N > 1: the partial
    // forall over (head, chunk) writes f32 workspaces the host function
    // allocates (B x Hq x N x Sq [x Dv], sized at launch where dynamic),
    // the merge forall is a second kernel in the same gpu.module; the loop
    // budget below is checked on each. With subgroup-size N: a subgroup
    // of N lanes per row (block-q rows, N x block-q invocations), subgroup
    // reductions and shuffles (GroupNonUniform, -Arithmetic, -Shuffle; the
    // target's subgroup size is N, and the module says so for the
    // runtime).
    const int64_t sg = opts.subgroupSize;
    addLayerKernels();
    AttnConfigureSIMTPassOptions simt;
    simt.blockQ = opts.blockQ > 0 ? int64_t(opts.blockQ)
                  : sg > 0        ? defaultSubgroupRows(sg)
                                  : 64;
    simt.blockKv = opts.blockKv;
    simt.sharedMemoryBytes = opts.sharedMemoryBytes;
    simt.lanes = std::max<int64_t>(sg, 1);
    simt.unroll = true;
    simt.kvSplits = opts.kvSplits;
    simt.packDecodeHeads = opts.packDecodeHeads;
    pm.addPass(createAttnConfigureSIMTPass(simt));
    // A dynamic key length bounded to one chunk (the loop-budget clamp)
    // needs no split for accuracy; an unbounded one splits by its length.
    AttnTileSdpaPassOptions tile;
    tile.maxDynamicKv = opts.maxDynamicExtent;
    pm.addPass(createAttnTileSdpaPass(tile));
    pm.addPass(createAttnDecomposeOnlineAttentionPass());
    pm.addPass(createConvertAttnTilesToSIMTPass({/*spirv=*/true}));
    pm.addPass(createCanonicalizerPass());
    // bf16 buffers as 16-bit integers (no bf16 type in Vulkan 1.1); the
    // conversions to and from f32 become integer ops in addToSPIRV.
    pm.addPass(createSPIRVBf16StoragePass());
    if (failed(addKernelChecks()))
      return failure();
    // Int64 is allowed (spirv-update-vce requires it only where used):
    // dropout's seed and its Philox decision need 64-bit integers, which
    // the conversion would otherwise narrow to 32 bits.
    return addVulkan11(sg > 0 ? "Shader,Int64,GroupNonUniform,"
                                "GroupNonUniformArithmetic,"
                                "GroupNonUniformShuffle"
                              : "Shader,Int64",
                       opts.int16, sg);
  }
  if (opts.variant == "coopmat" || opts.variant == "coopmat-scalar") {
    // The cooperative-matrix mapping of the tiled form: a workgroup of one
    // subgroup (coopSubgroup invocations), Q, K and V staged in workgroup
    // memory, Q.K^T and P.V as 16x16x16 KHR cooperative matrices over
    // workgroup-memory tiles (coopmat-scalar: scalar loops over the same
    // tiles, for any Vulkan 1.1 device), the online softmax a row per
    // invocation between them. kv-splits = N > 1: the partial kernel over
    // (query block, head x chunk, batch), workspaces the host function
    // allocates, and the merge kernel, in one module.
    const bool scalar = opts.variant == "coopmat-scalar";
    addLayerKernels();
    // A bf16 attention on cooperative matrices is lowered as f16 and
    // retyped after the SPIR-V conversion (gpu.mma_matrix has no bf16).
    if (!scalar)
      pm.addPass(createSPIRVBf16AsF16Pass());
    AttnConfigureSIMTPassOptions simt;
    simt.blockQ = tileQ;
    simt.blockKv = opts.blockKv;
    simt.sharedMemoryBytes = opts.sharedMemoryBytes;
    simt.kvSplits = opts.kvSplits;
    // coopmat-scalar with a subgroup per row (row-lanes = subgroup-size):
    // a workgroup of subgroups as coopmat's, so that lavapipe runs the
    // mapping's subgroup rows too.
    const bool subgroupRows = opts.rowLanes > 1;
    if (opts.subgroups < 1 || opts.subgroups > 32 ||
        ((!scalar || subgroupRows) && coopSubgroup * opts.subgroups > 1024)) {
      error = "attn-to-spirv-pipeline: subgroups is " +
              std::to_string(int64_t(opts.subgroups)) +
              "; it must be 1 to 32, with at most 1024 invocations per "
              "workgroup";
      return failure();
    }
    const int64_t strips = opts.strips;
    if (strips != 1 && (!opts.registers || (strips != 2 && strips != 4))) {
      error = "attn-to-spirv-pipeline: strips is " + std::to_string(strips) +
              "; it must be 1, or 2 or 4 with registers";
      return failure();
    }
    if (opts.registers &&
        (scalar || coopSubgroup % (16 * strips) ||
         opts.rowLanes * 16 * strips != coopSubgroup ||
         tileQ != 16 * strips * opts.subgroups)) {
      error = "attn-to-spirv-pipeline: registers needs variant=coopmat, "
              "16-row strips per subgroup (block-q = 16 x strips x "
              "subgroups, currently " +
              std::to_string(tileQ) + ", " + std::to_string(strips) +
              " and " + std::to_string(int64_t(opts.subgroups)) +
              ") and row-lanes = subgroup-size / (16 x strips) (currently " +
              std::to_string(int64_t(opts.rowLanes)) + " and " +
              std::to_string(coopSubgroup) + ")";
      return failure();
    }
    if (!opts.registers && opts.rowLanes != 1 &&
        (opts.rowLanes != coopSubgroup ||
         (scalar && opts.subgroupSize <= 0))) {
      error = "attn-to-spirv-pipeline: row-lanes is " +
              std::to_string(int64_t(opts.rowLanes)) +
              "; it must be 1, or the subgroup size (subgroup-size, 32 by "
              "default for coopmat; given for coopmat-scalar)";
      return failure();
    }
    // coopmat-scalar without subgroup rows has no subgroups: its workgroup
    // is only a size.
    simt.coopMatrix = scalar && !subgroupRows ? coopSubgroup
                                              : coopSubgroup * opts.subgroups;
    simt.lanes = opts.rowLanes;
    simt.scalarProducts = scalar;
    simt.coopRegisters = opts.registers;
    simt.coopStrips = opts.registers ? strips : 1;
    simt.packDecodeHeads = opts.packDecodeHeads;
    pm.addPass(createAttnConfigureSIMTPass(simt));
    // A dynamic key length bounded to one chunk (the loop-budget clamp)
    // needs no split for accuracy; an unbounded one splits by its length.
    AttnTileSdpaPassOptions tile;
    tile.maxDynamicKv = opts.maxDynamicExtent;
    pm.addPass(createAttnTileSdpaPass(tile));
    pm.addPass(createAttnDecomposeOnlineAttentionPass());
    pm.addPass(createConvertAttnTilesToSIMTPass({/*spirv=*/true}));
    pm.addPass(createCanonicalizerPass());
    if (scalar) {
      // bf16 buffers (and P's tile) as 16-bit integers, as portable's.
      pm.addPass(createSPIRVBf16StoragePass());
      if (failed(addKernelChecks()))
        return failure();
      // No subgroup operations (its "subgroup" is only a workgroup size)
      // unless a subgroup per row reduces over subgroups.
      if (subgroupRows)
        return addVulkan11("Shader,Int64,GroupNonUniform,"
                           "GroupNonUniformArithmetic,GroupNonUniformShuffle",
                           opts.int16, coopSubgroup);
      return addVulkan11("Shader,Int64", opts.int16);
    }
    if (failed(addKernelChecks()))
      return failure();
    // SPIR-V 1.6 (Vulkan 1.3, which KHR cooperative matrix ops need) and
    // the Vulkan memory model the extension requires; Int64 only where
    // dropout uses it.
    if (failed(addToSPIRV(
            "Shader,Int64,GroupNonUniform,GroupNonUniformArithmetic,"
            "GroupNonUniformShuffle,CooperativeMatrixKHR,VulkanMemoryModel,"
            "Float16,StorageBuffer16BitAccess",
            "SPV_KHR_storage_buffer_storage_class,SPV_KHR_16bit_storage,"
            "SPV_KHR_cooperative_matrix,SPV_KHR_vulkan_memory_model",
            "v1.6", coopSubgroup)))
      return failure();
    // bf16: the f16 kernel retyped, with the capabilities it now needs.
    pm.addPass(createSPIRVCoopMatBf16Pass());
    pm.addPass(createSPIRVBuiltinCapabilitiesPass());
    pm.addPass(createSPIRVVulkanMemoryModelPass());
    return success();
  }
  if (opts.variant != "tiled") {
    error = "attn-to-spirv-pipeline: unknown variant '" + opts.variant +
            "' (portable, tiled, coopmat or coopmat-scalar)";
    return failure();
  }
  // A layer is refused with a clear error: this variant bufferizes the
  // whole function into private memory, and a layer's projections need
  // device buffers between kernels.
  pm.addPass(createAttnDecomposeMhaPass());
  pm.addPass(createSPIRVLayerBuffersPass({/*refuse=*/true}));
  // L0 -> L2: the same FlashAttention rewrite as every target. Split-KV is
  // off: its merge would be a second kernel.
  AttnTileSdpaPassOptions tile;
  tile.blockQ = tileQ;
  tile.blockKv = tileKv;
  tile.kvSplits = 1;
  // ... so a key length beyond one chunk of 2^16 keys is refused (the
  // other variants split it for accurate f32 sums).
  tile.accuracySplits = false;
  pm.addPass(createAttnTileSdpaPass(tile));
  pm.addPass(createAttnDecomposeOnlineAttentionPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  // L2 -> buffers. Tile outputs go straight into the caller's buffers;
  // every temporary becomes a fixed-size private buffer, once per tile.
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  // No canonicalization from here to the GPU mapping: it would fold the
  // one-iteration loop a single-tile kernel is wrapped in.
  pm.addPass(createSPIRVBufferizePass());

  // Buffers -> one workgroup per parallel tile (B, Hq, q-block); one
  // invocation runs the tile's key loop and arithmetic sequentially. The
  // private buffers become Function-storage variables.
  OpPassManager &tiles = pm.nest<func::FuncOp>();
  tiles.addPass(createConvertLinalgToLoopsPass());
  bufferization::PromoteBuffersToStackPassOptions promote;
  promote.maxAllocSizeInBytes = 1048576;
  promote.maxRankOfAllocatedMemRef = 4;
  tiles.addPass(bufferization::createPromoteBuffersToStackPass(promote));
  tiles.addPass(createForallToParallelLoopPass());
  tiles.addPass(createGpuMapParallelLoopsPass());
  tiles.addPass(createConvertParallelLoopToGpuPass());
  tiles.addPass(createCanonicalizerPass());
  tiles.addPass(createSPIRVSinkLaunchIndexPass());
  if (failed(addKernelChecks()))
    return failure();
  // Int64 as the other variants allow it: dropout's seed is an i64 kernel
  // argument (without it the kernel's signature does not convert).
  return addVulkan11("Shader,Int64", /*int16=*/false);
}

void mlir::attn::registerAttnSPIRVPipeline() {
  registerPassPipeline(
      "attn-to-spirv-pipeline",
      "Lower attn.sdpa on tensors to a host function that "
      "launches a spirv.module. variant=portable: a workgroup per query "
      "block, an invocation per row (subgroup-size=N: a subgroup of N per "
      "row, subgroup reductions and shuffles), K/V tiles in workgroup "
      "memory, GPU to SPIR-V 1.3 (kv-splits=N: split-KV, a partial and a "
      "merge kernel; dynamic sizes read at launch from a buffer the host "
      "fills); variant=tiled (static shapes only): the FlashAttention "
      "rewrite, "
      "bufferization with private temporaries, one invocation per tile; "
      "variant=coopmat: the same tiled form on one subgroup per "
      "workgroup, its products as f16 16x16x16 cooperative matrices "
      "(SPIR-V 1.6, Vulkan memory model; coopmat-scalar: scalar products, "
      "Vulkan 1.1), split-KV and dynamic sizes as portable's. A layer "
      "(attn.mha, decomposed by the pipeline's first step) lowers through "
      "the portable and coopmat variants: its projections become kernels of "
      "the same module (attn-spirv-layer-buffers, attn-spirv-map-linalg), "
      "its intermediates device buffers the host function allocates; the "
      "tiled variant refuses it",
      [](OpPassManager &pm, StringRef optionsText,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        AttnToSPIRVPipelineOptions opts;
        if (failed(opts.parseFromString(optionsText)))
          return failure();
        std::string error;
        if (failed(buildAttnToSPIRVPipeline(pm, opts, error)))
          return errorHandler(error);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> optionsHandler) {
        AttnToSPIRVPipelineOptions opts;
        optionsHandler(opts);
      });
}
