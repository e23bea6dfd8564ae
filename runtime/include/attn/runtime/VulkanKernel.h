//===- VulkanKernel.h - a SPIR-V kernel and its launch metadata ----*- C++ -*-===//
//
// What the compiler hands the runtime for the vulkan target, with no MLIR in
// it: the SPIR-V words and how to launch them (dispatches in order, their
// workgroup grids as constants or size expressions of the launch's shapes,
// which tensor or workspace feeds each binding, the device features the
// module needs). The JIT (lib/JIT/VulkanCompiler.cpp) fills it from the
// lowered module; attn-translate --attn-to-spirv writes it as the .spv.json
// beside the .spv (format "attn-vulkan-kernel"), which attn_vulkan_load_artifact
// reads back. createExecutable is the one launch path for both.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_VULKANKERNEL_H
#define ATTN_RUNTIME_VULKANKERNEL_H

#include "attn/runtime/Backend.h"
#include "attn/runtime/Vulkan.h"
#include "attn/runtime/attn.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace attn::vulkan {

/// The metadata format's name and the version this runtime writes and reads.
constexpr const char *kMetadataFormat = "attn-vulkan-kernel";
constexpr int64_t kMetadataVersion = 1;

/// A size computed from the launch's shapes (dynamic sizes): Dim reads
/// dimension `b` of host argument `a`; binary kinds combine expressions `a`
/// and `b` (unsigned, as the host function's arith ops did).
struct SizeExpr {
  enum Kind { Const, Dim, Add, Sub, Mul, DivU, CeilDivU, RemU, MinU, MaxU };
  Kind kind = Const;
  int64_t value = 0; // Const
  uint32_t a = 0, b = 0;
};

/// A buffer the kernel's host side allocates: a device-local workspace
/// (split-KV's partials), or with `hostWritten` a buffer of i32 sizes filled
/// before the dispatches (element i is expression contents[i]).
struct WorkspaceDesc {
  std::vector<int64_t> shape; // -1 where dynamic (see shapeExprs)
  std::vector<int> shapeExprs; // per dimension, -1 where static; empty: static
  std::string elementType;     // "f32", "i32", ...
  uint32_t elementBytes = 0;
  uint64_t bytes = 0; // 0 where the shape is dynamic
  bool hostWritten = false;
  std::vector<int> contents;
};

/// One dispatch, in order; each sees the previous one's writes.
struct DispatchDesc {
  std::string entry; // OpEntryPoint name
  uint32_t grid[3] = {1, 1, 1};
  int gridExprs[3] = {-1, -1, -1}; // where a workgroup count is a size expr
  uint32_t block[3] = {1, 1, 1};
  /// Binding i of set 0: a host argument (q, k, v, [mask], out, [lse],
  /// [seed], in that order) or a workspace.
  std::vector<BufferRef> bindings;
  /// The workgroup memory the entry point declares, in bytes (0: none, or
  /// metadata that does not say).
  uint64_t workgroupBytes = 0;
};

struct KernelMetadata {
  std::string variant; // "portable", "tiled", "coopmat", "coopmat-scalar"
  std::vector<uint32_t> words; // the module (not in the JSON: the .spv)
  std::string binaryFile;      // the .spv, relative to the metadata's folder
  uint32_t hostArgs = 0;
  /// Each host argument's element type as the kernel reads it ("f32",
  /// "f16", "bf16", "i16": bf16 as 16-bit integers, ...); empty in metadata
  /// written before it was recorded. parseMetadata refuses a spec whose
  /// q, k, v or out it contradicts.
  std::vector<std::string> argTypes;
  std::vector<DispatchDesc> dispatches;
  std::vector<WorkspaceDesc> workspaces;
  std::vector<SizeExpr> exprs; // empty: every size static
  /// Sizes above this are refused at launch (the kernels clamp them); 0: none.
  int64_t maxDynamicExtent = 0;
  bool needsFloat16 = false, needsInt16 = false, needsBFloat16 = false;
  bool needsCooperativeMatrix = false;
  bool needsSubgroupArithmetic = false, needsSubgroupShuffle = false;
  uint32_t subgroupSize = 0; // the subgroup size the kernels need (0: any)
  /// The spec the kernel was built for (attn_vulkan_load_artifact needs it;
  /// an artifact of already-lowered IR has none).
  bool hasSpec = false;
  attn_spec spec{};
  /// What attn_kernel_get_info reports (0: not known).
  int64_t blockQ = 0, blockKv = 0, kvSplits = 0;

  bool dynamic() const { return !exprs.empty(); }
  /// Expression `id` for host arguments of sizes `argShape(arg, dim)`; false
  /// (with `error`) on a division by zero, a forward reference or a value
  /// outside [0, 2^32).
  bool evaluate(int id,
                const std::function<int64_t(unsigned, unsigned)> &argShape,
                int64_t &value, std::string &error) const;
};

/// The .spv.json text of `m` (format kMetadataFormat, version
/// kMetadataVersion).
std::string writeMetadata(const KernelMetadata &m);

/// Parses and checks metadata text: format, version, every key's type and
/// range, references between dispatches, workspaces and expressions, and
/// the spec (valid for the vulkan target, its host argument count equal to
/// the kernel's). On failure returns false with `error` naming the key.
bool parseMetadata(const std::string &text, KernelMetadata &m,
                   std::string &error);

/// Reads `metadataPath` and the .spv it names (relative to its folder):
/// parseMetadata, then the words (a SPIR-V module: magic number, whole
/// words, every dispatch's entry point present).
bool readArtifact(const std::string &metadataPath, KernelMetadata &m,
                  std::string &error);

/// The host arguments a spec's kernel takes: q, k, v, [mask], out, [lse],
/// [seed].
uint32_t hostArgsOf(const attn_spec &spec);

/// A Vulkan program for `m` on the process's device, wrapped as the
/// runtime's executable for `spec` (the normalized spec of the kernel):
/// launches validate the tensors, evaluate grids and sizes, and dispatch.
/// `info` is what attn_kernel_get_info reports (its kvSplits once a launch
/// ran). ATTN_ERROR_UNSUPPORTED when the device lacks what the module needs.
attn_status createExecutable(const KernelMetadata &m, const attn_spec &spec,
                             const KernelInfo &info,
                             std::unique_ptr<Executable> &executable,
                             std::string &error);

/// A layer's kernels (attn.mha through attn-to-spirv-pipeline: the
/// projections, the attention and the output projection as dispatches of
/// one module, the intermediates as workspaces) as the runtime's layer
/// executable for the normalized `spec`: a run binds the operands in
/// layerOperands order (host memory), dispatches in order, and copies y
/// back. ATTN_ERROR_INVALID_ARGUMENT when the kernels take other
/// arguments or dynamic sizes; ATTN_ERROR_UNSUPPORTED when the device
/// lacks what the module needs.
attn_status createLayerExecutable(const KernelMetadata &m,
                                  const attn_mha_spec &spec,
                                  std::unique_ptr<LayerExecutable> &executable,
                                  std::string &error);

/// Artifacts loaded with attn_vulkan_load_artifact: the one whose spec
/// equals `normalizedSpec`, or null. Compilers for the vulkan target consult
/// this first.
std::shared_ptr<const KernelMetadata>
findArtifact(const attn_spec &normalizedSpec);

} // namespace attn::vulkan

#endif // ATTN_RUNTIME_VULKANKERNEL_H
