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
  Option<bool> checkedAlloc{
      *this, "checked-alloc",
      llvm::cl::desc("Heap buffers through _mlir_memref_to_llvm_alloc, "
                     "_aligned_alloc and _free, which the caller provides "
                     "(the JIT's turn a failed allocation into "
                     "ATTN_ERROR_OUT_OF_MEMORY) instead of malloc/free; "
                     "every temporary of the parallel tiles must move to a "
                     "slab allocated before the loop (else the compile "
                     "fails)"),
      llvm::cl::init(false)};
  Option<int64_t> vectorLanes{
      *this, "vector-lanes",
      llvm::cl::desc("f32 lanes of the host's vector registers for "
                     "attn-cpu-vectorize-tiles on the tiled path (16 "
                     "AVX-512, 8 AVX2, 4 SSE/NEON; the JIT reads the "
                     "host's); 0 leaves the tiles to LLVM's loop "
                     "vectorizer"),
      llvm::cl::init(16)};
  Option<bool> bf16Dot{
      *this, "bf16-dot",
      llvm::cl::desc("bf16 Q·Kᵀ tiles as AVX512-BF16 dot products "
                     "(attn-cpu-vectorize-tiles' bf16-dot; needs "
                     "vector-lanes=16 and a host with avx512bf16; the JIT "
                     "sets it from the host)"),
      llvm::cl::init(false)};
  Option<bool> packDecodeHeads{
      *this, "pack-decode-heads",
      llvm::cl::desc("Tile GQA decode steps (static query length 1, no "
                     "mask) with a group's query heads as a tile's rows, "
                     "so K and V are read once per group "
                     "(attn-tile-sdpa's pack-decode-heads)"),
      llvm::cl::init(true)};
  Option<int64_t> maxDynamicKv{
      *this, "max-dynamic-kv",
      llvm::cl::desc("The largest dynamic key length this kernel is launched "
                     "with (0 = unbounded; attn-tile-sdpa's option): the "
                     "split count is then static, the key-chunk floor of "
                     "that length at least (unsplit up to 2^16 keys), and "
                     "the caller sends longer launches to another kernel "
                     "(the JIT does)"),
      llvm::cl::init(0)};
};

/// attn.sdpa on tensors -> LLVM dialect, runnable by the ExecutionEngine.
void buildAttnToCPUPipeline(OpPassManager &pm,
                            const AttnToCPUPipelineOptions &options);

/// Shared memory the generic CUDA kernel's K and V tiles may use: the 48 KB
/// of static shared memory every CUDA device gives a block.
constexpr int64_t kGenericSharedMemoryBytes = 48 * 1024;

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

/// The CUDA toolkit folder ($CUDA_HOME, $CUDA_PATH, /usr/local/cuda) when it
/// holds libdevice, else "".
std::string findCudaToolkit();

/// Registers attn-to-nvvm-pipeline (the target's passes:
/// registerAttnTargetNVVMPasses, attn/Target/NVVM; the tiled form's
/// conversions: registerAttnConversionPasses, attn/Conversion).
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
                     "coopmat: 0 = the largest of 64, 32, 16 whose tiles "
                     "fit it; tiled: 0 = 16)"),
      llvm::cl::init(0)};
  Option<int64_t> sharedMemoryBytes{
      *this, "shared-memory-bytes",
      llvm::cl::desc("portable, coopmat: workgroup memory the tiles may "
                     "use (the device's maxComputeSharedMemorySize)"),
      llvm::cl::init(32 * 1024)};
  Option<uint64_t> maxLoopIterations{
      *this, "max-loop-iterations",
      llvm::cl::desc("Fail when one invocation can run more loop iterations "
                     "than this (attn-spirv-loop-budget; lavapipe: 65535; "
                     "0 = no limit)"),
      llvm::cl::init(0)};
  Option<int64_t> maxDynamicExtent{
      *this, "max-dynamic-extent",
      llvm::cl::desc("Dynamic sizes (all but tiled): kernels clamp every size "
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
                     "subgroup of the device (0 = 32); coopmat-scalar: "
                     "invocations per workgroup (0 = the larger of 32 and "
                     "block-q)"),
      llvm::cl::init(0)};
  Option<int64_t> subgroups{
      *this, "subgroups",
      llvm::cl::desc("coopmat: subgroups per workgroup (the workgroup is "
                     "subgroups x subgroup-size invocations; the products' "
                     "16x16 matrices and the staging are shared out among "
                     "them, the K and V tiles shared by all; block-q at "
                     "most the workgroup's invocations)"),
      llvm::cl::init(1)};
  Option<int64_t> rowLanes{
      *this, "row-lanes",
      llvm::cl::desc("coopmat: invocations per query row in the softmax "
                     "between the products: 1 (an invocation per row) or "
                     "subgroup-size (a subgroup per row, subgroup "
                     "reductions; D, Dv and block-kv multiples of it); "
                     "block-q x row-lanes at most the workgroup's "
                     "invocations"),
      llvm::cl::init(1)};
  Option<bool> packDecodeHeads{
      *this, "pack-decode-heads",
      llvm::cl::desc("portable and coopmat variants: a GQA decode step of "
                     "static shapes (Sq = 1, no mask, no dropout) tiled "
                     "with pack_heads, a tile's rows the query heads of "
                     "one K/V head (attn-configure-simt)"),
      llvm::cl::init(true)};
  Option<bool> registers{
      *this, "registers",
      llvm::cl::desc("coopmat: Q and the accumulator in cooperative-matrix "
                     "registers, each subgroup a 16-row strip of the tile "
                     "(block-q = 16 x subgroups, row-lanes = subgroup-size "
                     "/ 16: the strip's rows on the subgroup's lanes, "
                     "butterfly reductions); the tiles' workgroup memory "
                     "without an accumulator tile"),
      llvm::cl::init(false)};
  Option<int64_t> strips{
      *this, "strips",
      llvm::cl::desc("coopmat with registers: 16-row strips per subgroup "
                     "(1, 2 or 4; block-q = 16 x strips x subgroups, "
                     "row-lanes = subgroup-size / (16 x strips)): each K^T "
                     "or V matrix a subgroup loads enters one product per "
                     "strip"),
      llvm::cl::init(1)};
  Option<bool> f16{
      *this, "f16",
      llvm::cl::desc("Target devices with 16-bit storage and Float16 (the "
                     "module requires them only where f16 is used; off: f16 "
                     "buffers are emulated with 32-bit words)"),
      llvm::cl::init(true)};
  Option<bool> layerTiles{
      *this, "layer-tiles",
      llvm::cl::desc("A layer's contractions (attn.mha's projections): 16 x "
                     "16 output tiles per workgroup, the inputs staged in "
                     "workgroup memory (off: an invocation per output "
                     "element, reading its inputs directly)"),
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
                     "over the key chunks (grid y = head x chunk) writing "
                     "f32 workspaces the "
                     "host function allocates, then a merge kernel (both in "
                     "one spirv.module). tiled: 1 only"),
      llvm::cl::init(1)};
};

/// attn.sdpa on tensors (dynamic sizes: all but variant=tiled) -> a host
/// function with one gpu.launch_func of a spirv.module, or with
/// kv-splits > 1 two launches of one spirv.module around two workspace
/// allocations (see docs/Vulkan.md).
/// Fails with `error` set for options it cannot build.
LogicalResult buildAttnToSPIRVPipeline(OpPassManager &pm,
                                       const AttnToSPIRVPipelineOptions &options,
                                       std::string &error);

/// Query rows per workgroup of the portable variant's subgroup kernel when
/// block-q is 0: max(1, min(16, 256 / subgroupSize)).
int64_t defaultSubgroupRows(int64_t subgroupSize);

/// Registers attn-to-spirv-pipeline (the target's passes:
/// registerAttnTargetSPIRVPasses, attn/Target/SPIRV).
void registerAttnSPIRVPipeline();

/// Registers every attn pipeline with the global pass registry.
void registerAttnPipelines();

} // namespace mlir::attn

#endif
