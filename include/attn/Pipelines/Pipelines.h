//===- Pipelines.h - attn pass pipelines ----------------------*- C++ -*-===//
#ifndef ATTN_PIPELINES_PIPELINES_H
#define ATTN_PIPELINES_PIPELINES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <functional>
#include <string>

namespace mlir::attn {

struct ConfigureNVGPUOptions; // attn/Conversion/TilesToNVGPU/TilesToNVGPU.h

/// Options of attn-to-cpu-pipeline.
struct AttnToCPUPipelineOptions
    : public PassPipelineOptions<AttnToCPUPipelineOptions> {
  Option<bool> math{*this, "math",
                    llvm::cl::desc("Use the untiled reference lowering "
                                   "(convert-attn-to-linalg) instead of the "
                                   "FlashAttention rewrite"),
                    llvm::cl::init(false)};
  Option<int64_t> blockQ{*this, "block-q", llvm::cl::desc("Query tile rows"),
                         llvm::cl::init(64)};
  Option<int64_t> blockKv{*this, "block-kv", llvm::cl::desc("Key block size"),
                          llvm::cl::init(64)};
  Option<int64_t> kvSplits{*this, "kv-splits",
                           llvm::cl::desc("Split-KV chunks (1 off, 0 auto)"),
                           llvm::cl::init(0)};
  Option<int64_t> parallelism{
      *this, "parallelism",
      llvm::cl::desc("Worker threads assumed by split-KV (0 = host cores)"),
      llvm::cl::init(0)};
  Option<bool> parallel{*this, "parallel",
                        llvm::cl::desc("Run the parallel tiles on all cores "
                                       "through OpenMP"),
                        llvm::cl::init(true)};
};

/// attn.sdpa on tensors -> LLVM dialect, runnable by the ExecutionEngine.
void buildAttnToCPUPipeline(OpPassManager &pm,
                            const AttnToCPUPipelineOptions &options);

/// Options of attn-to-nvvm-pipeline.
struct AttnToNVVMPipelineOptions
    : public PassPipelineOptions<AttnToNVVMPipelineOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("Target GPU (sm_80, sm_90, sm_90a)"),
                           llvm::cl::init("sm_90a")};
  Option<std::string> features{*this, "features",
                               llvm::cl::desc("PTX features (PTX version)"),
                               llvm::cl::init("+ptx80")};
  Option<std::string> format{
      *this, "format",
      llvm::cl::desc("gpu-module-to-binary format: isa (PTX), bin (cubin, "
                     "needs ptxas), fatbin"),
      llvm::cl::init("isa")};
  Option<int64_t> blockQ{*this, "block-q",
                         llvm::cl::desc("Query rows (threads) per workgroup"),
                         llvm::cl::init(64)};
  Option<int64_t> blockKv{
      *this, "block-kv",
      llvm::cl::desc("Keys per shared-memory tile (0 = fit 48 KB); the "
                     "tensor-core kernel takes 16, 32 or 64 and otherwise "
                     "its own default"),
      llvm::cl::init(0)};
  Option<bool> tensorCores{
      *this, "tensor-cores",
      llvm::cl::desc("Use the mma.sync kernel (attn-configure-nvgpu, the "
                     "tiled form, convert-attn-tiles-to-nvgpu) where it "
                     "applies"),
      llvm::cl::init(false)};
  Option<int64_t> warps{
      *this, "warps",
      llvm::cl::desc("Tensor-core kernel: warps per workgroup (16 query rows "
                     "each), 4 or 8; 0 = 4 when causal or D, Dv <= 64, else 8"),
      llvm::cl::init(0)};
  Option<int64_t> stages{
      *this, "stages",
      llvm::cl::desc("Tensor-core kernel: K/V tiles in flight in the "
                     "cp.async ring (2 to 4; 0 = 3 for the non-causal "
                     "two-tile kernels at D, Dv in (64, 128], else 2)"),
      llvm::cl::init(0)};
  Option<int64_t> rowTiles{
      *this, "row-tiles",
      llvm::cl::desc("Tensor-core kernel: m16 tiles of query rows per warp, "
                     "1 or 2 (0 = 1)"),
      llvm::cl::init(0)};
  Option<int64_t> kvSplits{
      *this, "kv-splits",
      llvm::cl::desc("1: one kernel per op; N > 1: split-KV (a partial "
                     "kernel over head x key chunk and a merge kernel, in "
                     "one gpu.module; the host code launches N chunks, the "
                     "kernels take any count from the workspace)"),
      llvm::cl::init(1)};
};

/// attn.sdpa in destination-passing form -> gpu.binary with PTX (NVVM).
void buildAttnToNVVMPipeline(OpPassManager &pm,
                             const AttnToNVVMPipelineOptions &options);

/// The options its attn-configure-nvgpu step runs with.
ConfigureNVGPUOptions
tensorCoreOptions(const AttnToNVVMPipelineOptions &options);

/// Its step that sets nvvm.maxnreg on the mma.sync kernels after outlining
/// (attn-nvvm-max-registers).
std::unique_ptr<Pass> createNVVMMaxRegistersPass();
void registerNVVMMaxRegistersPass();

/// The CUDA toolkit folder ($CUDA_HOME, $CUDA_PATH, /usr/local/cuda) when it
/// holds libdevice, else "".
std::string findCudaToolkit();

/// Registers attn-to-nvvm-pipeline and convert-attn-to-gpu.
void registerAttnToNVVMPipeline();
/// Options of attn-to-spirv-pipeline.
struct AttnToSPIRVPipelineOptions
    : public PassPipelineOptions<AttnToSPIRVPipelineOptions> {
  Option<std::string> variant{
      *this, "variant",
      llvm::cl::desc("portable (Vulkan 1.1, no cooperative matrices: a "
                     "workgroup per query block, an invocation per row, K "
                     "and V tiles in workgroup memory) or tiled (the "
                     "FlashAttention rewrite's tiles, one invocation per "
                     "tile) or coopmat (VK_KHR_cooperative_matrix, SPIR-V "
                     "1.6: f16 16x16x16 with f32 accumulators) or "
                     "coopmat-scalar (the coopmat kernel with scalar "
                     "products, SPIR-V 1.3)"),
      llvm::cl::init("portable")};
  Option<int64_t> blockQ{
      *this, "block-q",
      llvm::cl::desc("Query rows per workgroup (portable: 0 = 64 rows of "
                     "an invocation each, or with subgroup-size N, 0 = "
                     "max(1, min(16, 256 / N)) rows of N invocations each) "
                     "or per tile (tiled, coopmat: 0 = 16)"),
      llvm::cl::init(0)};
  Option<int64_t> blockKv{
      *this, "block-kv",
      llvm::cl::desc("Key block size (portable: 0 = the largest of 64, 32, "
                     "16, 8 whose K and V tiles fit shared-memory-bytes; "
                     "tiled, coopmat: 0 = 16)"),
      llvm::cl::init(0)};
  Option<int64_t> sharedMemoryBytes{
      *this, "shared-memory-bytes",
      llvm::cl::desc("portable: workgroup memory the K and V tiles may use "
                     "(the device's maxComputeSharedMemorySize)"),
      llvm::cl::init(32 * 1024)};
  Option<uint64_t> maxLoopIterations{
      *this, "max-loop-iterations",
      llvm::cl::desc("Fail when one invocation can run more loop iterations "
                     "than this (attn-spirv-loop-budget; lavapipe: 65535; "
                     "0 = no limit)"),
      llvm::cl::init(0)};
  Option<int64_t> maxDynamicExtent{
      *this, "max-dynamic-extent",
      llvm::cl::desc("Dynamic sizes (portable): kernels clamp every size "
                     "they read to this, so the loop budget can bound their "
                     "loops; the runtime refuses larger sizes (0 = no "
                     "clamp)"),
      llvm::cl::init(0)};
  Option<int64_t> subgroupSize{
      *this, "subgroup-size",
      llvm::cl::desc("portable: 0 = an invocation per query row (any "
                     "Vulkan 1.1 device); N > 0 = the subgroup kernel, a "
                     "subgroup of N lanes per row (subgroup arithmetic and "
                     "shuffle; the device's subgroups must have N "
                     "invocations). coopmat: invocations per workgroup, one "
                     "subgroup of the device (0 = 32)"),
      llvm::cl::init(0)};
  Option<bool> f16{
      *this, "f16",
      llvm::cl::desc("Target devices with 16-bit storage and Float16 (the "
                     "module requires them only where f16 is used; off: f16 "
                     "buffers are emulated with 32-bit words)"),
      llvm::cl::init(true)};
  Option<bool> int16{
      *this, "int16",
      llvm::cl::desc("portable: target devices with Int16 and 16-bit storage "
                     "(bf16 buffers, seen as i16, are loaded and stored as "
                     "16-bit integers; the module requires them only where "
                     "used; off: bf16 buffers are emulated with 32-bit words, "
                     "and f16 must be off too)"),
      llvm::cl::init(true)};
  Option<int64_t> kvSplits{
      *this, "kv-splits",
      llvm::cl::desc("1 = one kernel; N > 1 = split-KV: a partial kernel "
                     "over the key chunks (portable: grid y = head x chunk; "
                     "coopmat: grid z = chunk) writing f32 workspaces the "
                     "host function allocates, then a merge kernel (both in "
                     "one spirv.module). tiled: 1 only"),
      llvm::cl::init(1)};
};

/// attn.sdpa on tensors (dynamic sizes: portable only) -> a host function with one
/// gpu.launch_func of a spirv.module, or with kv-splits > 1 two launches of
/// one spirv.module around two workspace allocations (see docs/Vulkan.md).
/// Fails with `error` set for options it cannot build.
LogicalResult buildAttnToSPIRVPipeline(OpPassManager &pm,
                                       const AttnToSPIRVPipelineOptions &options,
                                       std::string &error);

/// Query rows per workgroup of the portable variant's subgroup kernel when
/// block-q is 0: max(1, min(16, 256 / subgroupSize)).
int64_t defaultSubgroupRows(int64_t subgroupSize);

/// The bufferization step of attn-to-spirv-pipeline (attn-spirv-bufferize).
std::unique_ptr<Pass> createSPIRVBufferizePass();
void registerSPIRVBufferizePass();
/// Its step that sets each kernel's spirv.entry_point_abi
/// (attn-spirv-entry-point-abi).
std::unique_ptr<Pass> createSPIRVEntryPointABIPass();
void registerSPIRVEntryPointABIPass();

/// Every bf16 memref becomes an i16 memref with the same bits; loads and
/// stores of them bitcast (SPIRVBf16Storage.cpp). For SPIR-V targets
/// without a bf16 type; runs before outlining.
std::unique_ptr<Pass> createSPIRVBf16StoragePass();
void registerSPIRVBf16StoragePass();

/// Its first step for variant=coopmat: the kernel source's attn.sdpa as one
/// gpu.launch on cooperative matrices (attn-spirv-coopmat-kernel); with
/// kvSplits > 1 a partial launch, workspaces and the split-KV merge.
std::unique_ptr<Pass> createSPIRVCoopMatKernelPass(int64_t blockQ,
                                                   int64_t blockKv,
                                                   int64_t subgroupSize,
                                                   bool scalarMatrices,
                                                   int64_t kvSplits = 1);
void registerSPIRVCoopMatKernelPass();

/// The module attribute by which attn-spirv-coopmat-kernel marks a bf16
/// kernel written in f16, for attn-spirv-coopmat-bf16.
constexpr const char kCoopMatBf16Attr[] = "attn.coopmat_bf16";
/// After convert-gpu-to-spirv (variant=coopmat): a marked module's
/// spirv.modules retyped f16 -> bf16 (SPIRVCoopMatBf16.cpp).
std::unique_ptr<Pass> createSPIRVCoopMatBf16Pass();
void registerSPIRVCoopMatBf16Pass();
/// After outlining: kernels with dynamically sized memref arguments take
/// them as 1-D buffers indexed linearly, plus a memref<Nxi32> of their
/// dynamic sizes that each launch fills (attn-spirv-dynamic-shapes);
/// maxExtent > 0 clamps the sizes kernels read to it (for the loop budget).
std::unique_ptr<Pass> createSPIRVDynamicShapesPass(int64_t maxExtent);
void registerSPIRVDynamicShapesPass();
/// Its check that no invocation runs more loop iterations than the device
/// allows (attn-spirv-loop-budget; 0 = no limit).
std::unique_ptr<Pass> createSPIRVLoopBudgetPass(uint64_t maxIterations);
void registerSPIRVLoopBudgetPass();
/// The module attribute (i32) by which attn-spirv-subgroup-size records
/// the subgroup size the kernels need, for extractSPIRVKernel.
constexpr const char kSPIRVSubgroupSizeAttr[] = "attn.spirv_subgroup_size";
/// After spirv-attach-target: the SPIR-V targets' subgroup size set to
/// `size` (gpu.shuffle lowers only at that width) and the module marked
/// with kSPIRVSubgroupSizeAttr (attn-spirv-subgroup-size).
std::unique_ptr<Pass> createSPIRVSubgroupSizePass(int64_t size);
void registerSPIRVSubgroupSizePass();
/// Its last step for variant=coopmat: the Vulkan memory model on modules
/// with cooperative matrices (attn-spirv-vulkan-memory-model).
std::unique_ptr<Pass> createSPIRVVulkanMemoryModelPass();
void registerSPIRVVulkanMemoryModelPass();

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
  /// Expression `id` for host arguments of sizes `argShape(arg, dim)`;
  /// false (with `error`) on a division by zero or a value outside
  /// [0, 2^32).
  bool evaluate(int id,
                const std::function<int64_t(unsigned, unsigned)> &argShape,
                int64_t &value, std::string &error) const;
};

/// The module attribute (i64) by which attn-spirv-dynamic-shapes records its
/// max-extent, for extractSPIRVKernel.
constexpr const char kSPIRVMaxDynamicExtentAttr[] =
    "attn.spirv_max_dynamic_extent";

/// Reads the artifact off a module after attn-to-spirv-pipeline; fails with
/// `error` set when the module is not of that form.
LogicalResult extractSPIRVKernel(ModuleOp module, SPIRVKernelArtifact &out,
                                 std::string &error);

/// The launch metadata attn-translate writes beside a .spv (JSON).
std::string spirvKernelMetadataJSON(const SPIRVKernelArtifact &artifact,
                                    const std::string &variant);

/// Registers attn-to-spirv-pipeline and its steps.
void registerAttnSPIRVPipeline();

/// Registers every attn pipeline with the global pass registry.
void registerAttnPipelines();

} // namespace mlir::attn

#endif
