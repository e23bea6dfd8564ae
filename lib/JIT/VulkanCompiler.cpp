//===- VulkanCompiler.cpp - the runtime's vulkan target: SPIR-V + Vulkan --===//
//
// spec -> kernel source (dense layouts; dynamic sizes but for tiled) -> attn-to-spirv-
// pipeline (coopmat variant where the device has f16 16x16x16 cooperative
// matrices and the spec fits, else portable; ATTN_VULKAN_VARIANT forces
// one; split-KV (portable and coopmat) where asked for, where few workgroups
// face a long key sequence, or where the device's loop budget needs it) -> SPIR-V
// words + launch metadata (one or two dispatches, workspaces) -> the
// runtime's vulkan executable (runtime/src/vulkan/Kernel.cpp), which also
// runs kernels loaded ahead of time; a loaded artifact for the spec is
// taken before compiling.
//
//===----------------------------------------------------------------------===//
#include "attn/Conversion/TilesToSIMT/TilesToSIMT.h"
#include "attn/Dialect/Attn/Transforms/Passes.h"
#include "attn/Dialect/Attn/Transforms/Transforms.h"
#include "attn/InitAll.h"
#include "attn/JIT/JIT.h"
#include "attn/JIT/Vulkan.h"
#include "attn/Pipelines/Pipelines.h"
#include "attn/Target/SPIRV/SPIRVArtifact.h"
#include "attn/runtime/KeyChunks.h"
#include "attn/runtime/Backend.h"
#include "attn/runtime/Checked.h"
#include "attn/runtime/Vulkan.h"
#include "attn/runtime/VulkanKernel.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

using namespace mlir;

namespace {

namespace vk = ::attn::vulkan;

/// VK_MAKE_API_VERSION(0, 1, 3, 0) (libattn does not include vulkan.h).
constexpr uint32_t kVulkan13 = (1u << 22) | (3u << 12);

/// VkComponentTypeKHR values: FLOAT16 0, FLOAT32 1, BFLOAT16_KHR
/// (VK_KHR_shader_bfloat16) 1000141000.
constexpr uint32_t kComponentF16 = 0, kComponentF32 = 1,
                   kComponentBF16 = 1000141000;

/// A subgroup-scope `ab` x `ab` + f32 16x16x16 shape (VkScopeKHR 3 =
/// subgroup): what the coopmat kernel uses, ab f16 or bf16.
bool hasCoopMatShape(const vk::DeviceInfo &info, uint32_t ab) {
  if (!info.cooperativeMatrix)
    return false;
  for (const vk::CoopMatShape &s : info.coopMatShapes)
    if (s.m == 16 && s.n == 16 && s.k == 16 && s.aType == ab &&
        s.bType == ab && s.cType == kComponentF32 &&
        s.resultType == kComponentF32 && s.scope == 3 && !s.saturating)
      return true;
  return false;
}

/// Why the device cannot run the coopmat variant for `dtype`; empty when
/// it can.
std::string coopMatDeviceGap(const vk::DeviceInfo &info, attn_dtype dtype) {
  const bool bf16 = dtype == ATTN_DTYPE_BF16;
  if (!hasCoopMatShape(info, bf16 ? kComponentBF16 : kComponentF16))
    return "device '" + info.name + "' reports no subgroup-scope " +
           (bf16 ? "bf16 x bf16" : "f16 x f16") +
           " + f32 16x16x16 cooperative matrix shape "
           "(VK_KHR_cooperative_matrix" +
           (bf16 ? ", VK_KHR_shader_bfloat16)" : ")");
  if (!info.vulkanMemoryModel || info.apiVersion < kVulkan13)
    return "device '" + info.name + "' lacks the Vulkan memory model or "
           "Vulkan 1.3 (SPIR-V 1.6), which the coopmat kernel needs";
  if (!bf16 && (!info.shaderFloat16 || !info.storageBuffer16BitAccess))
    return "device '" + info.name + "' lacks shaderFloat16 / "
           "storageBuffer16BitAccess";
  if (bf16 && (!info.shaderBFloat16Type ||
               !info.shaderBFloat16CooperativeMatrix ||
               !info.storageBuffer16BitAccess))
    return "device '" + info.name + "' lacks shaderBFloat16Type / "
           "shaderBFloat16CooperativeMatrix (VK_KHR_shader_bfloat16) / "
           "storageBuffer16BitAccess";
  if (info.subgroupSize == 0)
    return "device '" + info.name + "' reports no subgroup size";
  return "";
}

/// The coopmat kernel's tiles for `spec`, or why it does not fit.
/// `invocations`: the workgroup's (coopmat: whole subgroups of the
/// device), 0 for coopmat-scalar, whose workgroup grows with block_q;
/// `lanes`: the invocations per row of its softmax (1 or a subgroup);
/// `defaultBlockQ`: block_q where the spec leaves it to the target.
std::string coopMatSpecGap(const attn_spec &spec, const vk::DeviceInfo &info,
                           int64_t invocations, int64_t lanes,
                           int64_t defaultBlockQ, bool registers,
                           int64_t &blockQ, int64_t &blockKv) {
  int64_t dv = spec.value_dim ? spec.value_dim : spec.head_dim;
  if (spec.dtype != ATTN_DTYPE_F16 && spec.dtype != ATTN_DTYPE_BF16)
    return "the coopmat kernel is f16 or bf16 only (x the same + f32)";
  if (spec.mask == ATTN_MASK_ADDITIVE && spec.mask_dtype != spec.dtype &&
      spec.mask_dtype != ATTN_DTYPE_F32)
    return "the coopmat kernel takes an additive mask of the data's type or "
           "f32";
  if (spec.head_dim % 16 || dv % 16)
    return "the coopmat kernel needs head_dim and value_dim multiples of 16";
  // Workgroup memory: S (f32), P (16-bit), the accumulator (f32), the Q, K
  // and V tiles (16-bit), all with padded rows.
  const int64_t d = spec.head_dim;
  auto bytesFor = [&](int64_t bq, int64_t bkv) {
    return mlir::attn::coopMatrixSharedBytes(bq, bkv, d, dv, registers);
  };
  const int64_t limit = info.maxComputeSharedMemorySize;
  blockQ = spec.block_q > 0 ? spec.block_q : defaultBlockQ;
  // Unless given, the largest key block that fits, as attn-configure-simt
  // chooses it (tails are padded: any length works).
  mlir::attn::ConfigureSIMTOptions simt;
  simt.blockQ = blockQ;
  simt.blockKv = spec.block_kv > 0 ? spec.block_kv : 0;
  simt.sharedMemoryBytes = limit;
  simt.coopMatrix = 1; // any N > 0: the cooperative-matrix tiles
  simt.coopRegisters = registers;
  blockKv = mlir::attn::simtBlockKv(simt, d, dv, /*elementBytes=*/2,
                                    spec.seq_q);
  if (blockQ <= 0 || blockQ % 16 || blockKv <= 0 || blockKv % 16)
    return "the coopmat kernel needs block_q and block_kv multiples of 16";
  // A row per `lanes` invocations for the softmax between the products.
  if (invocations > 0 && blockQ * lanes > invocations)
    return "the coopmat kernel's block_q (" + std::to_string(blockQ) +
           ") rows of " + std::to_string(lanes) +
           " invocations are more than the " + std::to_string(invocations) +
           " of its workgroup";
  if (lanes > 1 && (d % lanes || dv % lanes || blockKv % lanes))
    return "the coopmat kernel with a subgroup of " + std::to_string(lanes) +
           " per row needs head_dim, value_dim and block_kv multiples of it";
  if (registers && blockQ * lanes != invocations)
    return "the coopmat kernel with its accumulator in registers needs a "
           "16-row strip per subgroup (block_q " +
           std::to_string(blockQ) + " x " + std::to_string(lanes) +
           " lanes = the workgroup's " + std::to_string(invocations) +
           " invocations)";
  int64_t bytes = bytesFor(blockQ, blockKv);
  if (bytes > limit)
    return "the coopmat tiles need " + std::to_string(bytes) +
           " bytes of shared memory, more than the device's " +
           std::to_string(limit);
  return "";
}

/// An integer setting from the environment: Unset where `name` is unset
/// or empty (`value` left as it is); Set with `value` where it is a
/// decimal integer that `accept` takes; Bad otherwise, with `error` =
/// "NAME='TEXT' is WHAT".
enum class EnvInteger { Unset, Set, Bad };
EnvInteger integerFromEnv(const char *name, int64_t &value,
                          llvm::function_ref<bool(int64_t)> accept,
                          llvm::StringRef what, std::string &error) {
  const char *env = std::getenv(name);
  if (!env || !*env)
    return EnvInteger::Unset;
  char *end = nullptr;
  errno = 0;
  long long n = std::strtoll(env, &end, 10);
  if (*end || errno == ERANGE || !accept(n)) {
    error = std::string(name) + "='" + env + "' is " + what.str();
    return EnvInteger::Bad;
  }
  value = n;
  return EnvInteger::Set;
}

/// Why the device cannot run the portable variant's subgroup kernel; empty
/// when it can, with `size` the subgroup size to build it for: the
/// device's default, or ATTN_VULKAN_SUBGROUP_SIZE where subgroup size
/// control allows it.
std::string subgroupKernelGap(const vk::DeviceInfo &info, int64_t &size) {
  size = info.subgroupSize;
  if (!info.subgroupArithmetic || !info.subgroupShuffle)
    return "device '" + info.name + "' lacks subgroup " +
           std::string(!info.subgroupArithmetic ? "arithmetic" : "shuffle") +
           " operations in compute shaders";
  std::string bad;
  switch (integerFromEnv(
      "ATTN_VULKAN_SUBGROUP_SIZE", size, [](int64_t n) { return n >= 1; },
      "not a positive number", bad)) {
  case EnvInteger::Bad:
    return bad;
  case EnvInteger::Unset:
    break;
  case EnvInteger::Set: {
    const int64_t n = size;
    if (n != int64_t(info.subgroupSize) &&
        !(info.subgroupSizeControl && n >= int64_t(info.minSubgroupSize) &&
          n <= int64_t(info.maxSubgroupSize)))
      return "ATTN_VULKAN_SUBGROUP_SIZE=" + std::to_string(n) +
             ": device '" + info.name + "' has subgroups of " +
             std::to_string(info.subgroupSize) +
             (info.subgroupSizeControl
                  ? " (sizes " + std::to_string(info.minSubgroupSize) + ".." +
                        std::to_string(info.maxSubgroupSize) + ")"
                  : " and no subgroup size control");
    break;
  }
  }
  if (size < 1 || size > 128 || (size & (size - 1)))
    return "device '" + info.name + "' has subgroups of " +
           std::to_string(size) +
           " invocations; the subgroup kernel takes powers of two up to 128";
  return "";
}

/// Auto split-KV (kv_splits 0): fewer workgroups than the device runs at
/// once leave it idle, so long key sequences are split (chooseKvSplits with
/// that many workers in mind). Where the device reports its compute units
/// (DeviceInfo::computeUnits), that is kWorkgroupsPerUnit per unit: a
/// workgroup is one or a few subgroups, and a unit needs several in flight
/// to hide memory latency. Otherwise fewer than kFewWorkgroups, with
/// kAutoSplitParallelism workers in mind (lavapipe's CPU threads).
constexpr int64_t kWorkgroupsPerUnit = 8;
constexpr int64_t kFewWorkgroups = 16;
constexpr int64_t kAutoSplitParallelism = 32;
/// The most chunks auto split-KV tries against the loop budget.
constexpr int64_t kMaxAutoSplits = 64;
/// The largest dynamic size a kernel is built for on a device with a loop
/// budget (ATTN_VULKAN_MAX_DYNAMIC_EXTENT overrides it, and sets one on any
/// device): the budget is checked for it, and larger sizes are refused at
/// launch.
constexpr int64_t kDefaultMaxDynamicExtent = 16384;
/// ... and the smallest it is lowered to where the budget refuses that.
constexpr int64_t kMinDynamicExtent = 256;

/// The largest "can run up to N loop iterations" in attn-spirv-loop-budget's
/// diagnostics (0 when there is none).
uint64_t largestIterationCount(const std::string &diagnostics) {
  static const std::string key = "can run up to ";
  uint64_t best = 0;
  for (size_t pos = diagnostics.find(key); pos != std::string::npos;
       pos = diagnostics.find(key, pos + 1)) {
    const char *p = diagnostics.c_str() + pos + key.size();
    char *end = nullptr;
    unsigned long long v = std::strtoull(p, &end, 10);
    if (end != p)
      best = std::max<uint64_t>(best, v);
  }
  return best;
}

/// The split counts worth trying against the loop budget after `splits`
/// chunks failed: powers of two up to kMaxAutoSplits, each clamped to
/// `keyBlocks`, in increasing order without repeats, leaving out those that
/// the unsplit kernel's iteration `count` already rules out (with n chunks
/// an invocation needs at least count / n; count or budget 0: unknown).
std::vector<int64_t> splitCandidates(int64_t splits, int64_t keyBlocks,
                                     uint64_t count, uint64_t budget) {
  std::vector<int64_t> candidates;
  for (int64_t p = 2; p <= kMaxAutoSplits; p *= 2) {
    int64_t n = std::min(p, keyBlocks);
    if (n <= splits || (!candidates.empty() && n == candidates.back()))
      continue;
    if (budget && count && count / uint64_t(n) > budget)
      continue;
    candidates.push_back(n);
  }
  return candidates;
}

/// An on/off setting from the environment: `value` 0 or 1 where `name` is
/// set to "0" or "1", left as it is where unset or empty; false (with
/// `error`) for anything else.
bool switchFromEnv(const char *name, int &value, std::string &error) {
  const char *env = std::getenv(name);
  if (!env || !*env)
    return true;
  const std::string v(env);
  if (v != "0" && v != "1") {
    error = "vulkan: " + std::string(name) + "='" + v + "' is neither 0 nor 1";
    return false;
  }
  value = v == "1";
  return true;
}

} // namespace

// The JIT's choices for a device, as documented in attn/JIT/Vulkan.h.
attn_status mlir::attn::jit::lowerVulkanKernel(
    const attn_spec &spec, const std::string *layerSource,
    const vk::DeviceInfo &info, const std::string &variant,
    vk::KernelMetadata &metadata, ::attn::KernelInfo &chosen,
    std::string &sourceOut, std::string &error) {
  // What the portable variant does not do yet; each is a clear refusal.
  auto unsupported = [&](const std::string &why) {
    error = "vulkan: " + why;
    return ATTN_ERROR_UNSUPPORTED;
  };
  // Dynamic sizes (ATTN_DYNAMIC): one module for every size, which
  // reads them from a buffer each launch fills (SPIRVDynamicShapes.cpp);
  // the portable variant only.
  bool dynamic = false;
  for (int64_t d : {spec.batch, spec.heads_q, spec.heads_kv, spec.seq_q,
                    spec.seq_kv})
    dynamic |= d == ATTN_DYNAMIC;
  if (spec.variant == ATTN_VARIANT_MATH)
    return unsupported("the math (reference) variant is cpu only");
  // Packed decode (attn-configure-simt{pack-decode-heads}): a GQA step of
  // one query row has the query heads of each K/V head as one tile's
  // rows, so the grid runs over the K/V heads and reads K and V once per
  // group; ATTN_VULKAN_PACK_HEADS=0 keeps a workgroup per query head (for
  // comparison). The tiled variant never packs.
  int packSetting = -1;
  if (!switchFromEnv("ATTN_VULKAN_PACK_HEADS", packSetting, error))
    return ATTN_ERROR_INVALID_ARGUMENT;
  const bool packHeads = packSetting != 0;
  const bool packs = packHeads && !dynamic &&
                     mlir::attn::simtPacksDecodeHeads(
                         spec.heads_q, spec.seq_q, spec.heads_kv,
                         spec.mask != ATTN_MASK_NONE, spec.dropout_p > 0.0);
  // The rows a tile takes and the grid's heads (packed: the group's
  // query heads and the K/V heads).
  const int64_t tileRows = packs ? spec.heads_q / spec.heads_kv : spec.seq_q;
  const int64_t gridHeads = packs ? spec.heads_kv : spec.heads_q;
  // Tensors the device cannot bind are refused now, not at the launch
  // (with dynamic sizes, what the static ones already make too large).
  if (attn_status s = vk::checkBufferRanges(info, spec, error))
    return s;
  if (spec.dropout_p > 0.0 && !info.shaderInt64)
    return unsupported("dropout needs 64-bit integers (the seed and the "
                       "Philox decision), and device '" + info.name +
                       "' lacks shaderInt64");
  // Masks need no conversion: an i1 buffer becomes one byte per element
  // (0 or 1, as the cpu path reads them) in 32-bit words, which is how
  // the runtime stages a bool mask; lse is one more storage buffer.
  bool f16 = spec.dtype == ATTN_DTYPE_F16 ||
             (spec.mask == ATTN_MASK_ADDITIVE &&
              spec.mask_dtype == ATTN_DTYPE_F16);
  if (f16 && !(info.shaderFloat16 && info.storageBuffer16BitAccess))
    return unsupported("device '" + info.name +
                       "' lacks shaderFloat16 / storageBuffer16BitAccess, "
                       "which f16 kernels need");

  // The variant: ATTN_VULKAN_VARIANT=portable|coopmat forces one; by
  // default (auto) coopmat where the device and the spec allow it.
  std::string forced = variant.empty() ? "auto" : variant;
  if (const char *env = std::getenv("ATTN_VULKAN_VARIANT");
      variant.empty() && env && *env)
    forced = env;
  // Where a forced variant came from, for the messages.
  const std::string forcedBy =
      variant.empty() ? "ATTN_VULKAN_VARIANT" : "--variant";
  // coopmat-scalar (the coopmat kernel with scalar products, for any
  // device) is never chosen automatically.
  // portable-subgroup / portable-rows force the portable variant's
  // subgroup or invocation-per-row kernel; portable and auto choose
  // between them by device features.
  if (forced != "auto" && forced != "portable" && forced != "tiled" &&
      forced != "coopmat" && forced != "coopmat-scalar" &&
      forced != "portable-subgroup" && forced != "portable-rows") {
    error = "vulkan: " + forcedBy + "='" + forced +
            "' is not one of auto, portable, portable-subgroup, "
            "portable-rows, tiled, coopmat, coopmat-scalar";
    return ATTN_ERROR_INVALID_ARGUMENT;
  }
  int64_t coopBlockQ = 0, coopBlockKv = 0;
  // coopmat's workgroup: this many of the device's subgroups.
  int64_t coopSubgroups = 1;
  if (integerFromEnv(
          "ATTN_VULKAN_COOP_SUBGROUPS", coopSubgroups,
          [](int64_t n) { return n >= 1 && n <= 32; },
          "not a count of subgroups from 1 to 32", error) == EnvInteger::Bad) {
    error = "vulkan: " + error;
    return ATTN_ERROR_INVALID_ARGUMENT;
  }
  // coopmat's Q and accumulator in cooperative-matrix registers, a
  // 16-row strip per subgroup (its rows on subgroupSize / 16 lanes
  // each): by default where the device's subgroups are 16 to 128 wide
  // and the tiles fit; ATTN_VULKAN_COOP_REGISTERS=0 keeps the
  // accumulator in workgroup memory (=1 asks for registers).
  const int64_t sgSize = info.subgroupSize;
  const bool registersPossible =
      sgSize >= 16 && sgSize <= 128 && sgSize % 16 == 0;
  int coopRegisters = -1; // -1: automatic
  if (!switchFromEnv("ATTN_VULKAN_COOP_REGISTERS", coopRegisters, error))
    return ATTN_ERROR_INVALID_ARGUMENT;
  // coopmat's softmax: a row per invocation (1) or per subgroup (or, with
  // registers, per subgroupSize / 16 lanes).
  int64_t coopLanes = 1;
  if (integerFromEnv(
          "ATTN_VULKAN_COOP_LANES", coopLanes,
          [&](int64_t n) {
            return n == 1 || n == sgSize ||
                   (coopRegisters == 1 && n * 16 == sgSize);
          },
          "neither 1 nor the device's subgroup size " +
              std::to_string(sgSize) +
              " (nor, with ATTN_VULKAN_COOP_REGISTERS=1, a 16th of it)",
          error) == EnvInteger::Bad) {
    error = "vulkan: " + error;
    return ATTN_ERROR_INVALID_ARGUMENT;
  }
  // Without the accumulator in registers (below), the coopmat kernel's
  // geometry where neither the spec (block_q) nor the environment chooses
  // it (measured on the H200's Vulkan driver,
  // bench/results/vulkan-coopmat-geometry-2026-11-27): a tile of 64 rows
  // on 4 subgroups, a row per invocation, where its workgroup memory fits
  // (D = Dv = 64: 16-key blocks); else 16 rows of a subgroup each, the
  // softmax on the subgroup's lanes, where D and Dv are multiples of the
  // subgroup size (D = 128); else 16 rows on one subgroup.
  int64_t coopBlockQ0 = 16;
  const bool coopGeometryGiven =
      spec.block_q > 0 || std::getenv("ATTN_VULKAN_COOP_SUBGROUPS") ||
      std::getenv("ATTN_VULKAN_COOP_LANES") ||
      std::getenv("ATTN_VULKAN_COOP_STRIPS");
  bool useRegisters = false;
  // With registers: 16-row strips per subgroup (ATTN_VULKAN_COOP_STRIPS,
  // 1, 2 or 4; a subgroup of sgSize invocations, sgSize / (16 x strips)
  // lanes per row).
  int64_t coopStrips = 1;
  if (integerFromEnv(
          "ATTN_VULKAN_COOP_STRIPS", coopStrips,
          [](int64_t n) { return n == 1 || n == 2 || n == 4; },
          "not 1, 2 or 4 (16-row strips per subgroup)",
          error) == EnvInteger::Bad) {
    error = "vulkan: " + error;
    return ATTN_ERROR_INVALID_ARGUMENT;
  }
  if (forced != "coopmat-scalar" && registersPossible &&
      sgSize % (16 * coopStrips) == 0 && coopRegisters != 0) {
    // With registers: 16 x strips x (subgroups) rows; by default the most
    // subgroups (4, 2, 1) whose tiles fit with 16-key blocks (the
    // largest block that fits is chosen after).
    const int64_t d = spec.head_dim,
                  dv = spec.value_dim ? spec.value_dim : spec.head_dim;
    const int64_t maxInv = info.maxComputeWorkGroupInvocations;
    const int64_t limit = info.maxComputeSharedMemorySize;
    int64_t subgroups = 0;
    const int64_t stripRows = 16 * coopStrips;
    if (spec.block_q > 0) {
      if (spec.block_q % stripRows == 0)
        subgroups = spec.block_q / stripRows;
    } else if (std::getenv("ATTN_VULKAN_COOP_SUBGROUPS")) {
      subgroups = coopSubgroups;
    } else {
      // Packed decode: the subgroups its rows fill (more would compute
      // rows that do not exist).
      const int64_t most =
          packs ? std::max<int64_t>(1, ::attn::ceilDiv(tileRows, stripRows))
                : 4;
      for (int64_t w : {4, 2, 1})
        if (w <= most && w * sgSize <= maxInv &&
            mlir::attn::coopMatrixSharedBytes(stripRows * w, 16, d, dv,
                                              true) <= limit) {
          subgroups = w;
          break;
        }
    }
    const int64_t lanes = sgSize / stripRows;
    if (subgroups > 0 && subgroups <= 32 && d % lanes == 0 &&
        dv % lanes == 0 &&
        (!std::getenv("ATTN_VULKAN_COOP_LANES") || coopLanes == lanes)) {
      useRegisters = true;
      coopSubgroups = subgroups;
      coopLanes = lanes;
      coopBlockQ0 = stripRows * subgroups;
    } else if (coopRegisters == 1 && forced == "coopmat") {
      return unsupported(
          "ATTN_VULKAN_COOP_REGISTERS=1: the accumulator in registers "
          "needs block_q = " +
          std::to_string(stripRows) +
          " x subgroups and head dims multiples of " +
          std::to_string(lanes));
    }
  } else if (coopRegisters == 1 && forced == "coopmat") {
    return unsupported("ATTN_VULKAN_COOP_REGISTERS=1 needs a device whose "
                       "subgroups are 16 to 128 invocations, a multiple "
                       "of 16 x ATTN_VULKAN_COOP_STRIPS");
  }
  if (!useRegisters)
    coopStrips = 1;
  if (!useRegisters && !coopGeometryGiven && forced != "coopmat-scalar") {
    const int64_t sg = info.subgroupSize, d = spec.head_dim,
                  dv = spec.value_dim ? spec.value_dim : spec.head_dim;
    const int64_t maxInv = info.maxComputeWorkGroupInvocations;
    if (sg > 0 && 64 % sg == 0 && 4 * sg <= maxInv && 4 * sg >= 64 &&
        mlir::attn::coopMatrixSharedBytes(64, 16, d, dv) <=
            int64_t(info.maxComputeSharedMemorySize)) {
      coopSubgroups = 4;
      coopBlockQ0 = 64;
    } else if (sg >= 16 && d % sg == 0 && dv % sg == 0 &&
               16 * sg <= maxInv) {
      coopSubgroups = 16;
      coopLanes = sg;
    }
  }
  std::string coopGap;
  bool simt = forced == "portable" || forced == "tiled" ||
              forced == "portable-subgroup" || forced == "portable-rows";
  if (!simt) {
    if (forced != "coopmat-scalar")
      coopGap = coopMatDeviceGap(info, spec.dtype);
    if (coopGap.empty() && (forced != "coopmat-scalar" || coopLanes > 1) &&
        coopSubgroups * int64_t(info.subgroupSize) >
            int64_t(info.maxComputeWorkGroupInvocations))
      coopGap = "the coopmat workgroup of " + std::to_string(coopSubgroups) +
                " subgroups is more than the device's " +
                std::to_string(info.maxComputeWorkGroupInvocations) +
                " invocations";
    if (coopGap.empty()) {
      coopGap = coopMatSpecGap(
          spec, info,
          forced == "coopmat-scalar" && coopLanes == 1
              ? 0
              : coopSubgroups * int64_t(info.subgroupSize),
          coopLanes, coopBlockQ0, useRegisters, coopBlockQ, coopBlockKv);
      // A default geometry that does not fit (a key block that is no
      // multiple of the lanes): the single-subgroup one.
      if (!coopGap.empty() && !coopGeometryGiven && coopRegisters != 1 &&
          (coopSubgroups != 1 || coopLanes != 1 || useRegisters)) {
        coopSubgroups = 1;
        coopLanes = 1;
        useRegisters = false;
        coopStrips = 1;
        coopGap = coopMatSpecGap(spec, info, int64_t(info.subgroupSize), 1,
                                 16, false, coopBlockQ, coopBlockKv);
      }
    }
    if (forced != "auto" && !coopGap.empty())
      return unsupported(forcedBy + "=" + forced + ": " + coopGap);
  }
  bool coopmat = !simt && coopGap.empty();
  std::string variantName = forced == "coopmat-scalar" || forced == "tiled"
                                ? forced
                                : coopmat ? "coopmat" : "portable";
  // The tiled variant bufferizes the whole function into private
  // memory; a layer's projections need device buffers between kernels.
  if (layerSource && variantName == "tiled")
    return unsupported(forcedBy + "=tiled compiles attention "
                       "kernels only; a layer (attn.mha) needs the "
                       "portable or a coopmat variant");
  // The tiled variant has no split-KV, and longer key runs than one
  // chunk would sum inaccurately in its f32 state (KeyChunks.h).
  if (variantName == "tiled" && spec.seq_kv > ::attn::kMaxChunkKeys)
    return unsupported("the tiled variant has no split-KV, and Skv = " +
                       std::to_string(spec.seq_kv) + " needs chunks of at "
                       "most " + std::to_string(::attn::kMaxChunkKeys) +
                       " keys for accurate f32 sums (use another variant)");
  // The portable variant's kernel: a subgroup per row where the device
  // has subgroup arithmetic and shuffles in compute, else an invocation
  // per row.
  int64_t subgroupSize = 0;
  std::string portableKernel;
  if (variantName == "portable") {
    int64_t size = 0;
    std::string gap = forced == "portable-rows"
                          ? forcedBy + "=portable-rows"
                          : subgroupKernelGap(info, size);
    // Asking for a subgroup size asks for the subgroup kernel too.
    const char *sizeEnv = std::getenv("ATTN_VULKAN_SUBGROUP_SIZE");
    const bool sizeAsked = sizeEnv && *sizeEnv && forced != "portable-rows";
    if ((forced == "portable-subgroup" || sizeAsked) && !gap.empty())
      return unsupported((forced == "portable-subgroup"
                              ? forcedBy + "=portable-subgroup: "
                              : "the subgroup kernel: ") +
                         gap);
    if (gap.empty()) {
      subgroupSize = size;
      portableKernel = "; kernel: a subgroup of " + std::to_string(size) +
                       " lanes per row (subgroup arithmetic and shuffle)";
    } else {
      portableKernel = "; kernel: an invocation per row (" + gap + ")";
    }
  }

  // The pipeline names upstream steps textually, so the pass registry
  // must know them (the tools register at startup; libattn does here).
  static std::once_flag registerOnce;
  std::call_once(registerOnce, [] { mlir::attn::registerAllPasses(); });

  const std::string kernelSource =
      layerSource ? *layerSource
                  : mlir::attn::jit::buildDenseKernelSource(spec);
  DialectRegistry registry;
  mlir::attn::registerAllDialects(registry);
  MLIRContext context(registry, MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  std::string diagnostics;
  llvm::raw_string_ostream diagOS(diagnostics);
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    diagOS << diag.getLocation() << ": " << diag << "\n";
    return success();
  });
  // Parsed and verified once; each lowering below runs on a clone.
  OwningOpRef<ModuleOp> source =
      parseSourceString<ModuleOp>(kernelSource, &context);
  if (!source) {
    error = "vulkan: the kernel source does not parse: " + diagnostics;
    return ATTN_ERROR_COMPILE;
  }
  if (failed(verify(*source))) {
    error = "vulkan: the kernel does not verify: " + diagnostics;
    return ATTN_ERROR_INVALID_ARGUMENT;
  }
  int64_t bc = 0; // the key block the kernel walks (not tiled)
  mlir::attn::AttnToSPIRVPipelineOptions options;
  options.variant = variantName;
  options.packDecodeHeads = packs;
  options.maxLoopIterations = info.maxLoopIterations;
  // ATTN_VULKAN_LAYER_TILES=0: a layer's projections an invocation per
  // output (the simple mapping, for comparison).
  if (const char *env = std::getenv("ATTN_VULKAN_LAYER_TILES"))
    options.layerTiles = std::string(env) != "0";
  if (coopmat) {
    options.blockQ = coopBlockQ;
    options.blockKv = coopBlockKv;
    options.sharedMemoryBytes = info.maxComputeSharedMemorySize;
    // coopmat's workgroup is one of the device's subgroups; the scalar
    // stand-in's is only a workgroup size (the pipeline's default).
    if (variantName == "coopmat" || coopLanes > 1) {
      options.subgroupSize = info.subgroupSize;
      options.subgroups = coopSubgroups;
      options.rowLanes = coopLanes;
      options.registers = useRegisters;
      options.strips = coopStrips;
    }
  } else if (variantName == "portable") {
    // An invocation per row: block_q rows per workgroup (64 by default,
    // within the device's workgroup size), K and V tiles sized to its
    // shared memory. Tails are masked in the kernel: any lengths work.
    // The subgroup kernel: block_q rows of subgroupSize invocations each
    // (by default defaultSubgroupRows, within the device's limits).
    const int64_t perRow = std::max<int64_t>(subgroupSize, 1);
    const int64_t maxInv = info.maxComputeWorkGroupInvocations;
    int64_t rows = spec.block_q > 0 ? spec.block_q : 64;
    if (subgroupSize > 0 && spec.block_q <= 0) {
      rows = std::min(mlir::attn::defaultSubgroupRows(subgroupSize),
                      std::max<int64_t>(1, maxInv / perRow));
      if (info.maxComputeWorkgroupSubgroups)
        rows = std::min<int64_t>(rows, info.maxComputeWorkgroupSubgroups);
    }
    if (rows * perRow > maxInv)
      return unsupported(
          "block_q " + std::to_string(rows) +
          (subgroupSize > 0
               ? " rows of " + std::to_string(subgroupSize) + " lanes are"
               : std::string(" is")) +
          " more invocations than the device's "
          "maxComputeWorkGroupInvocations (" +
          std::to_string(maxInv) + ")");
    if (subgroupSize > 0 && info.maxComputeWorkgroupSubgroups &&
        rows > int64_t(info.maxComputeWorkgroupSubgroups))
      return unsupported("block_q " + std::to_string(rows) +
                         " subgroups per workgroup are more than the "
                         "device's maxComputeWorkgroupSubgroups (" +
                         std::to_string(info.maxComputeWorkgroupSubgroups) +
                         ")");
    options.blockQ = rows;
    options.subgroupSize = subgroupSize;
    options.blockKv = spec.block_kv; // 0: the pass fits shared memory
    options.sharedMemoryBytes = info.maxComputeSharedMemorySize;
    int64_t eltBytes = ::attn::dtypeBytes(spec.dtype);
    mlir::attn::ConfigureSIMTOptions simt;
    simt.blockKv = options.blockKv;
    simt.sharedMemoryBytes = options.sharedMemoryBytes;
    bc = mlir::attn::simtBlockKv(simt, spec.head_dim, spec.value_dim,
                                    eltBytes);
    if (bc * (spec.head_dim + spec.value_dim) * eltBytes >
        int64_t(info.maxComputeSharedMemorySize))
      return unsupported(
          "K and V tiles of " + std::to_string(bc) + " keys (head_dim " +
          std::to_string(spec.head_dim) + ", value_dim " +
          std::to_string(spec.value_dim) + ") do not fit the device's " +
          std::to_string(info.maxComputeSharedMemorySize) +
          " bytes of shared memory; use a smaller block_kv");
  } else {
    if (dynamic)
      return unsupported(forcedBy + "=tiled needs static shapes "
                         "(batch, heads_q, heads_kv, seq_q and seq_kv set "
                         "in the spec; the portable variant takes dynamic "
                         "ones)");
    if (spec.dtype == ATTN_DTYPE_BF16)
      return unsupported(forcedBy + "=tiled is f16/f32 only (the "
                         "portable variant has bf16)");
    if (spec.dropout_p > 0.0)
      return unsupported(forcedBy + "=tiled has no dropout (the "
                         "portable variant has)");
    if (spec.kv_splits > 1)
      return unsupported(forcedBy + "=tiled has no split-KV "
                         "(kv_splits " +
                         std::to_string(spec.kv_splits) +
                         "; the portable variant has)");
    // tiled: tail tiles would have dynamic shapes, and a kernel has no
    // dynamic private memory, so blocks must divide the sequence
    // lengths. By default the largest divisor up to 16 is taken (1 for a
    // prime length: correct, but slow).
    auto largestDivisor = [](int64_t n, int64_t cap) {
      for (int64_t b = std::min(n, cap); b > 1; --b)
        if (n % b == 0)
          return b;
      return int64_t(1);
    };
    options.blockQ =
        spec.block_q > 0 ? spec.block_q : largestDivisor(spec.seq_q, 16);
    options.blockKv =
        spec.block_kv > 0 ? spec.block_kv : largestDivisor(spec.seq_kv, 16);
    if (spec.seq_q % options.blockQ || spec.seq_kv % options.blockKv)
      return unsupported(
          "block sizes must divide the sequence lengths (block_q " +
          std::to_string(options.blockQ) + " vs seq_q " +
          std::to_string(spec.seq_q) + ", block_kv " +
          std::to_string(options.blockKv) + " vs seq_kv " +
          std::to_string(spec.seq_kv) + "): tail tiles would need dynamic "
          "private memory");
  }
  // f32 kernels do not require 16-bit features even with this on.
  options.f16 = info.shaderFloat16 && info.storageBuffer16BitAccess;
  // bf16 buffers are i16 buffers in the kernel (SPIRVBf16Storage.cpp):
  // 16-bit loads and stores with shaderInt16, else 32-bit words holding
  // two elements, which rules out 16-bit storage for the whole module.
  options.int16 = info.shaderInt16 && info.storageBuffer16BitAccess;
  if (spec.dtype == ATTN_DTYPE_BF16 && !options.int16) {
    if (spec.mask == ATTN_MASK_ADDITIVE &&
        spec.mask_dtype == ATTN_DTYPE_F16)
      return unsupported("a bf16 kernel with an f16 mask needs shaderInt16 "
                         "and storageBuffer16BitAccess, which device '" +
                         info.name + "' lacks");
    options.f16 = false;
  }
  // ... and, with 16-bit storage, Float16 for the mask's loads
  // (attn-spirv-16bit-storage refuses the mix otherwise).
  if (spec.dtype == ATTN_DTYPE_BF16 && spec.mask == ATTN_MASK_ADDITIVE &&
      spec.mask_dtype == ATTN_DTYPE_F16 && !options.f16)
    return unsupported("a bf16 kernel with an f16 mask needs shaderFloat16 "
                       "as well, which device '" + info.name + "' lacks");

  // Split-KV (every variant but tiled): each workgroup walks one chunk of
  // the key blocks, a merge kernel combines the chunks. kv_splits N >= 1 is taken
  // as given (at most one chunk per key block); 0 (auto) splits when few
  // workgroups face a long key sequence, and when one invocation would
  // run past the device's loop budget (lavapipe), as little as fits.
  const bool splittable = variantName != "tiled";
  if (coopmat)
    bc = coopBlockKv;
  // With dynamic sizes the kernels clamp them to the largest size the
  // loop budget is checked for (devices with a budget), and the key
  // blocks are those of that size; the auto rule does not split (the
  // lengths are not known until launch), the budget may.
  int64_t maxExtent = 0;
  bool extentGiven = false;
  if (dynamic) {
    if (info.maxLoopIterations)
      maxExtent = kDefaultMaxDynamicExtent;
    switch (integerFromEnv(
        "ATTN_VULKAN_MAX_DYNAMIC_EXTENT", maxExtent,
        [](int64_t v) { return v >= 1 && v <= (int64_t(1) << 31) - 1; },
        "not a size in [1, 2^31)", error)) {
    case EnvInteger::Bad:
      error = "vulkan: " + error;
      return ATTN_ERROR_INVALID_ARGUMENT;
    case EnvInteger::Set:
      extentGiven = true;
      break;
    case EnvInteger::Unset:
      break;
    }
  }
  options.maxDynamicExtent = maxExtent;
  const int64_t seqKv = spec.seq_kv != ATTN_DYNAMIC ? spec.seq_kv
                        : maxExtent                ? maxExtent
                                                   : 0;
  int64_t keyBlocks =
      !splittable ? 1
      : seqKv     ? std::max<int64_t>(1, ::attn::ceilDiv(seqKv, bc))
                  : kMaxAutoSplits;
  int64_t splits = 1;
  std::string splitWhy;
  // Static sizes: validation bounded B*Hq*Sq (q's bytes), so this fits.
  int64_t workgroups = 0;
  if (splittable && !dynamic &&
      !::attn::checkedProduct({spec.batch, gridHeads,
                               ::attn::ceilDiv(tileRows, options.blockQ)},
                              workgroups))
    workgroups = INT64_MAX;
  // The workers the auto rule keeps busy: kWorkgroupsPerUnit per
  // compute unit where the device reports its units.
  const int64_t autoParallelism =
      info.computeUnits ? kWorkgroupsPerUnit * int64_t(info.computeUnits)
                        : kAutoSplitParallelism;
  if (!splittable) {
    splitWhy = "the " + variantName + " variant has no split-KV";
  } else if (spec.kv_splits >= 1) {
    splits = std::min<int64_t>(spec.kv_splits, keyBlocks);
    splitWhy = "kv_splits " + std::to_string(spec.kv_splits);
    if (splits != spec.kv_splits)
      splitWhy += ", clamped to the " + std::to_string(keyBlocks) +
                  " key blocks of " + std::to_string(bc);
  } else if (dynamic) {
    splitWhy = "auto: dynamic sizes";
  } else if (workgroups < (info.computeUnits ? autoParallelism
                                              : kFewWorkgroups)) {
    splits = std::min(mlir::attn::chooseKvSplits(
                          spec.batch, gridHeads, tileRows, spec.seq_kv,
                          options.blockQ, bc, autoParallelism),
                      keyBlocks);
    splitWhy = "auto: " + std::to_string(workgroups) + " workgroups (< " +
               (info.computeUnits
                    ? std::to_string(kWorkgroupsPerUnit) + " x " +
                          std::to_string(info.computeUnits) +
                          " compute units"
                    : std::to_string(kFewWorkgroups)) +
               ") over " + std::to_string(spec.seq_kv) + " keys";
    if (splits <= 1)
      splitWhy += ": too few key blocks of " + std::to_string(bc) +
                  " for two chunks of 4";
  } else {
    splitWhy = "auto: " + std::to_string(workgroups) + " workgroups";
  }
  // The key-chunk floor, which attn-tile-sdpa applies to a static length
  // (a dynamic one gets its count from the length at launch).
  if (splittable && spec.seq_kv != ATTN_DYNAMIC && bc > 0) {
    int64_t floor = ::attn::minKvSplits(spec.seq_kv, bc);
    if (floor > splits) {
      splits = floor;
      splitWhy += ", raised to chunks of at most " +
                  std::to_string(::attn::kMaxChunkKeys) + " keys";
    }
  }

  // Runs the pipeline on a fresh copy of the source with `n` splits. On
  // failure, `overBudget` says whether the loop budget was what failed.
  OwningOpRef<ModuleOp> module;
  bool overBudget = false;
  auto lower = [&](int64_t n) -> LogicalResult {
    diagnostics.clear();
    overBudget = false;
    module = source->clone();
    options.kvSplits = n;
    PassManager pm(&context);
    // --mlir-print-ir-after-all and friends where the tool registered
    // them.
    if (failed(mlir::attn::jit::configurePassManager(pm)))
      return failure();
    std::string buildError;
    if (failed(
            mlir::attn::buildAttnToSPIRVPipeline(pm, options, buildError))) {
      diagOS << buildError << "\n";
      return failure();
    }
    if (succeeded(pm.run(*module)))
      return success();
    overBudget =
        diagnostics.find("attn-spirv-loop-budget") != std::string::npos;
    return failure();
  };
  LogicalResult lowered = lower(splits);
  if (failed(lowered) && overBudget && splittable && spec.kv_splits == 0) {
    // Splitting the keys divides the per-invocation key loop: the
    // smallest power of two (up to 64, at most the key blocks) whose
    // kernels pass. Unsplit, one invocation needs `count`; with n chunks
    // it needs at least count / n, so smaller n cannot pass.
    const std::string unsplit = diagnostics;
    uint64_t count = largestIterationCount(unsplit);
    uint64_t budget = info.maxLoopIterations;
    std::vector<int64_t> candidates =
        splitCandidates(splits, keyBlocks, count, budget);
    const std::string first =
        splits == 1 ? std::string("unsplit")
                    : "with " + std::to_string(splits) + " chunks";
    for (int64_t n : candidates) {
      lowered = lower(n);
      if (succeeded(lowered)) {
        splitWhy = "auto: " + first + ", one invocation could run up to " +
                   std::to_string(count) + " loop iterations; device '" +
                   info.name + "' ends loops after " +
                   std::to_string(budget) + "; " + std::to_string(n) +
                   " is the smallest power of two (or key-block count) "
                   "that fits";
        splits = n;
        break;
      }
      if (!overBudget)
        break;
    }
    if (failed(lowered) && overBudget && !(dynamic && !extentGiven)) {
      error = "vulkan: device '" + info.name + "': " + unsplit +
              (candidates.empty()
                   ? "(the " + std::to_string(keyBlocks) +
                         " key block(s) cannot be split further"
                   : "(and with up to " + std::to_string(candidates.back()) +
                         " key chunks") +
              ": shorter sequences, or another device)";
      return ATTN_ERROR_UNSUPPORTED;
    }
  }
  // Dynamic sizes over the budget at the default largest size (and the
  // split count given or tried): the largest power of two down to
  // kMinDynamicExtent that fits; larger sizes are refused at launch.
  std::string extentWhy =
      extentGiven ? "ATTN_VULKAN_MAX_DYNAMIC_EXTENT"
                  : "device '" + info.name +
                        "' ends loops after a fixed count; the kernel's "
                        "loops are checked for sizes up to this";
  if (dynamic && !extentGiven && failed(lowered) && overBudget) {
    const bool autoSplits = splittable && spec.kv_splits == 0;
    while (failed(lowered) && overBudget && maxExtent > kMinDynamicExtent) {
      maxExtent /= 2;
      options.maxDynamicExtent = maxExtent;
      if (!autoSplits) {
        lowered = lower(splits);
        continue;
      }
      // Unsplit, else the smallest split count the unsplit count says
      // could fit.
      splits = 1;
      lowered = lower(1);
      if (succeeded(lowered) || !overBudget)
        break;
      std::vector<int64_t> candidates = splitCandidates(
          1, std::max<int64_t>(1, (maxExtent + bc - 1) / bc),
          largestIterationCount(diagnostics), info.maxLoopIterations);
      if (!candidates.empty()) {
        splits = candidates.front();
        lowered = lower(splits);
      }
      if (splits > 1 && succeeded(lowered))
        splitWhy = "auto: dynamic sizes up to " + std::to_string(maxExtent) +
                   ", the smallest power of two (or key-block count) "
                   "that fits device '" + info.name + "''s loop budget";
    }
    extentWhy += " (the largest power of two that fits the budget with " +
                 std::to_string(splits) + " key chunk(s))";
  }
  if (failed(lowered)) {
    // A kernel over the driver's loop budget is a limit of the device,
    // not a compiler failure.
    if (overBudget) {
      error = "vulkan: device '" + info.name + "': " + diagnostics +
              (splittable ? "(kv_splits 0 (auto) splits the keys until it "
                          "fits; or shorter sequences, or another device)"
                        : "(split the work: shorter sequences, the "
                          "portable variant, or another device)");
      return ATTN_ERROR_UNSUPPORTED;
    }
    error = "vulkan: the SPIR-V pipeline failed: " + diagnostics;
    return ATTN_ERROR_COMPILE;
  }

  sourceOut = "// vulkan variant: " + variantName +
                  (forced != "auto" ? " (" + forcedBy + ")"
                   : coopmat        ? " (auto)"
                                    : " (auto: " + coopGap + ")") +
                  portableKernel +
                  (variantName == "coopmat" ||
                           (variantName == "coopmat-scalar" && coopLanes > 1)
                       ? "\n// vulkan coopmat geometry: " +
                             std::to_string(coopSubgroups) +
                             " subgroup(s) per workgroup, block_q " +
                             std::to_string(coopBlockQ) + ", " +
                             (useRegisters
                                  ? std::to_string(coopStrips) +
                                        " 16-row strip(s) per subgroup, " +
                                        std::to_string(coopLanes) +
                                        " lanes per softmax row, Q and "
                                        "the accumulator in registers"
                              : coopLanes > 1
                                  ? "a subgroup of " +
                                        std::to_string(coopLanes) +
                                        " lanes per softmax row"
                                  : std::string("an invocation per softmax "
                                                "row")) +
                             (coopGeometryGiven
                                  ? " (block_q or ATTN_VULKAN_COOP_*)"
                                  : " (default)")
                       : std::string()) +
                  "\n// vulkan kv splits: " + std::to_string(splits) + " (" +
                  splitWhy + ")\n" +
                  (packs && variantName != "tiled"
                       ? "// vulkan packed decode: the " +
                             std::to_string(tileRows) +
                             " query heads of each K/V head as one tile's "
                             "rows, a workgroup per K/V head\n"
                       : std::string()) +
                  (!dynamic ? std::string()
                   : maxExtent
                       ? "// vulkan dynamic sizes: read at launch, each up "
                         "to " + std::to_string(maxExtent) + " (" +
                             extentWhy + ")\n"
                       : std::string("// vulkan dynamic sizes: read at "
                                     "launch\n")) +
                  kernelSource;

  mlir::attn::SPIRVKernelArtifact artifact;
  if (failed(mlir::attn::extractSPIRVKernel(*module, artifact, error))) {
    error = "vulkan: " + error + diagnostics;
    return ATTN_ERROR_COMPILE;
  }
  // The runtime's launch path, the same as for kernels loaded ahead of
  // time (runtime/src/vulkan/Kernel.cpp).
  mlir::attn::jit::toVulkanKernelMetadata(artifact, variantName, metadata);
  chosen.variant = variantName;
  chosen.device = info.name;
  chosen.blockQ = options.blockQ;
  chosen.blockKv = variantName == "tiled" || !bc ? options.blockKv : bc;
  chosen.kvSplits = splits;
  return ATTN_OK;
}

namespace {

class VulkanCompiler final : public ::attn::Compiler {
public:
  std::string configuration() const override {
    std::string config;
    for (const char *name :
         {"ATTN_VULKAN_VARIANT", "ATTN_VULKAN_SUBGROUP_SIZE",
          "ATTN_VULKAN_MAX_DYNAMIC_EXTENT", "ATTN_VULKAN_COMPUTE_UNITS",
          "ATTN_VULKAN_LAYER_TILES"})
      if (const char *v = std::getenv(name))
        config += (config.empty() ? "" : " ") + std::string(name) + "=" + v;
    return config;
  }
  attn_status available(std::string &error) override {
    vk::DeviceInfo info;
    return vk::deviceInfo(info, error);
  }

  attn_status compile(const attn_spec &spec, ::attn::CompileResult &result,
                      std::string &error) override {
    vk::DeviceInfo info;
    if (attn_status s = vk::deviceInfo(info, error))
      return s;
    // A kernel loaded ahead of time for this spec (attn_vulkan_load_artifact)
    // is taken as it is.
    if (auto artifact = vk::findArtifact(spec)) {
      ::attn::KernelInfo loaded;
      loaded.variant = artifact->variant;
      loaded.device = info.name;
      loaded.blockQ = artifact->blockQ;
      loaded.blockKv = artifact->blockKv;
      loaded.kvSplits = artifact->kvSplits;
      result.source = "// vulkan: loaded ahead of time (attn_vulkan_load_artifact)\n";
      return vk::createExecutable(*artifact, spec, loaded, result.executable,
                                  error);
    }
    vk::KernelMetadata metadata;
    ::attn::KernelInfo chosen;
    if (attn_status s = mlir::attn::jit::lowerVulkanKernel(spec, /*layerSource=*/nullptr, info, "",
                                    metadata, chosen, result.source, error))
      return s;
    return vk::createExecutable(metadata, spec, chosen, result.executable,
                                error);
  }

  /// A layer (attn.mha): its source decomposed (attn-decompose-mha) and
  /// lowered by the same pipeline and the same choices as an attention
  /// kernel for the attention inside it; the projections become kernels
  /// of the same module (attn-spirv-layer-buffers, attn-spirv-map-linalg).
  attn_status compileMha(const attn_mha_spec &spec,
                         ::attn::LayerCompileResult &result,
                         std::string &error) override {
    vk::DeviceInfo info;
    if (attn_status s = vk::deviceInfo(info, error))
      return s;
    const std::string layerSource = mlir::attn::jit::buildMhaKernelSource(spec);
    vk::KernelMetadata metadata;
    ::attn::KernelInfo chosen;
    attn_status s = mlir::attn::jit::lowerVulkanKernel(::attn::layerAttentionSpec(spec),
                                &layerSource, info, "", metadata, chosen,
                                result.source, error);
    if (s == ATTN_OK)
      s = vk::createLayerExecutable(metadata, spec, result.executable, error);
    // attn_mha_compile names the target itself.
    const std::string prefix = "vulkan: ";
    if (s != ATTN_OK && error.compare(0, prefix.size(), prefix) == 0)
      error.erase(0, prefix.size());
    return s;
  }

};

// Loading libattn registers the vulkan compiler with the runtime; whether a
// device exists is asked only when the target is used.
const bool registered = [] {
  ::attn::registerCompiler(ATTN_TARGET_VULKAN,
                           std::make_shared<VulkanCompiler>());
  return true;
}();

} // namespace
