//===- CudaKernel.h - CUDA kernel artifacts: metadata, launch geometry, params -*- C++ -*-===//
//
// A CUDA kernel artifact is a PTX or cubin file plus a metadata file beside
// it (JSON) saying how to launch it: 1 to 16 kernels, each with the
// condition under which it runs (LaunchCondition.h: the launch's query
// length and the split count the runtime chooses at each launch), its entry
// name, its grid as a function of the launch shape (and of the split
// count), its block, its dynamic shared memory and its parameter list in
// terms of the launch tensors and of device workspaces the runtime
// allocates; and the spec it was compiled for. A launch runs, in order, the
// kernels whose condition holds. attn-translate writes them (--attn-to-ptx/--attn-to-cubin), the JIT
// builds the same description in memory, and libattn_runtime.so runs them
// with no MLIR (docs/NVIDIA.md describes the format).
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_CUDAKERNEL_H
#define ATTN_RUNTIME_CUDAKERNEL_H

#include "attn/runtime/Backend.h"
#include "attn/runtime/LaunchCondition.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace attn {
namespace cuda {

enum class BinaryFormat { PTX, Cubin };

/// What one kernel parameter holds. Tensors are the launch tensors q, k, v,
/// mask, out, lse, or a workspace of the metadata (by name);
/// Data/Offset/Size/Stride follow MLIR's memref descriptor (allocated and
/// aligned pointer are both Data; Offset is always 0).
enum class ParamField { Data, Offset, Size, Stride, Seed };
enum class ParamType { Ptr, I64, I32 };

struct Param {
  std::string tensor; // empty for Seed
  ParamField field = ParamField::Data;
  int dim = 0; // Size and Stride only
  ParamType type = ParamType::Ptr;
};

/// One grid dimension: ceildiv(extent(of), ceildiv) * times, where `of` is
/// a launch extent or One, and the factor is `times`, or the launch's split
/// count when `timesSplits` is set. Hkv is k's head count and Group the
/// query heads per KV head (Hq / Hkv): a decode kernel that packs a GQA
/// group's query heads into one workgroup's rows runs over (ceildiv(Group,
/// rows), Hkv, B).
enum class Extent { One, B, Hq, Sq, Skv, Hkv, Group };
struct GridDim {
  Extent of = Extent::One;
  int64_t ceildiv = 1;
  int64_t times = 1;
  bool timesSplits = false;
};

/// One dimension of a workspace: a launch extent (B, Hq, Sq or Skv), the
/// launch's split count, or a positive constant.
struct WorkspaceDim {
  enum class Kind { Extent, Splits, Constant };
  Kind kind = Kind::Constant;
  Extent extent = Extent::One; // Kind::Extent: B, Hq, Sq or Skv
  int64_t value = 1;           // Kind::Constant: >= 1

  static WorkspaceDim of(Extent e) { return {Kind::Extent, e, 1}; }
  static WorkspaceDim splits() { return {Kind::Splits, Extent::One, 1}; }
  static WorkspaceDim constant(int64_t n) {
    return {Kind::Constant, Extent::One, n};
  }
};

/// A device scratch buffer the runtime allocates for a split launch (see
/// KernelMetadata::workspaces): row-major and contiguous, so size(i) is
/// shape[i] and stride(i) the product of the later sizes, in elements.
struct Workspace {
  std::string name; // [A-Za-z0-9_]+, not a launch tensor's name
  std::vector<WorkspaceDim> shape; // 1..6 dimensions
  unsigned elementBytes = 4;       // 1, 2, 4 or 8
};

/// One kernel launch of an artifact.
struct Kernel {
  std::string entry;
  GridDim grid[3];
  unsigned block[3] = {1, 1, 1};
  unsigned sharedBytes = 0; // dynamic shared memory per block
  std::vector<Param> params;
  /// When it runs: always, or (alternatives of one launch) only for a range
  /// of query lengths and/or only when the launch's split count is > 1
  /// (the split-KV partial and merge kernels) or is 1 (the kernel that
  /// writes the result itself).
  LaunchCondition when;
  /// Keys per block this kernel walks (attention kernels; 0: unknown, then
  /// KvSplits::blockKv), which chooseKvSplits counts for the alternative
  /// this kernel starts.
  int64_t blockKv = 0;
  bool runs(int64_t sq, int64_t splits) const { return when.holds(sq, splits); }
};

/// Split-KV geometry: the first kernel's workgroups have blockQ rows and
/// walk keys in blocks of blockKv; the split count chosen at launch is at
/// most `max`. max == 0: the kernels take no split count (it is always 1).
/// chooseKvSplits counts the first kernel's grid itself (packed decode's
/// rows are heads, not query positions), so blockQ describes the kernel
/// for readers and is checked (>= 1) when parsed.
struct KvSplits {
  int64_t blockQ = 0;
  int64_t blockKv = 0;
  int64_t max = 0;
};

struct KernelMetadata {
  BinaryFormat format = BinaryFormat::PTX;
  std::string binaryFile; // relative to the metadata file's folder
  std::string chip;       // sm_80, sm_90a, ...
  /// q, k and v: data pointers and B/H/S strides must be multiples of this
  /// many bytes (the tensor-core kernel's 16-byte cp.async copies); 0 = no
  /// requirement. Checked by packParams at every launch.
  unsigned alignBytes = 0;
  KvSplits kvSplits;
  /// Allocated (all in one stream-ordered allocation) only for launches
  /// whose split count is > 1; with one split their pointers are 0.
  std::vector<Workspace> workspaces;
  /// 1..16 kernels; a launch runs, in order on the caller's stream, those
  /// whose `when` holds for its Sq and split count. The kernels whose
  /// conditions have the same Sq range form one alternative; parseMetadata
  /// guarantees that the alternatives' Sq ranges are disjoint and cover
  /// every Sq the spec admits, and that in each alternative some kernel
  /// runs at every split count.
  std::vector<Kernel> kernels;
  attn_spec spec{};
};

/// The most kernels an artifact holds (three alternatives of a partial,
/// merge and unsplit kernel take 9).
constexpr size_t kMaxKernels = 16;

/// The metadata as JSON text, version 3 (what parseMetadata reads back).
std::string writeMetadata(const KernelMetadata &metadata);

/// Parses and validates metadata, version 1 (one kernel, read as a single
/// always-launched kernel with no workspace and no split count), 2 (1 to 4
/// kernels whose `when` is always, split or unsplit) or 3 (1 to 16 kernels
/// whose `when` may also bound Sq): every key present with the right type,
/// names known, every parameter naming a launch tensor of the spec or a
/// workspace, blocks within 1024 threads, the spec a valid one (normalized
/// on return), and the conditions a partition: the alternatives' Sq ranges
/// neither overlap nor leave a gap over the Sq the spec admits, and in each
/// alternative some kernel runs at split count 1 and (with `kv_splits`)
/// above 1. On failure returns false with `error` set, naming the key or
/// the kernels at fault.
bool parseMetadata(const std::string &text, KernelMetadata &metadata,
                   std::string &error);

/// The launch conditions of `metadata`'s kernels make a partition (what
/// parseMetadata checks of them, and createExecutable of metadata built in
/// memory, as the JIT's is): no split condition without kv_splits; the
/// alternatives' Sq ranges (kernels with equal ranges form one) disjoint
/// and covering every Sq the spec admits; in each alternative some kernel
/// runs at split count 1 and, with kv_splits, above 1. False with `error`
/// naming the kernels at fault.
bool checkLaunchConditions(const KernelMetadata &metadata, std::string &error);

/// The index of the first kernel of the alternative a launch with query
/// length `sq` runs (the first kernel whose Sq range holds `sq`), or -1.
int firstKernelFor(const KernelMetadata &metadata, int64_t sq);

/// The most chunks the automatic rule picks for occupancy (a launch may
/// have more for accuracy: the floor below).
constexpr int64_t kMaxAutoSplits = 64;

/// The split count for a launch: 1 without split support (kvSplits.max ==
/// 0) or with at most one key block; else spec.kv_splits when the spec
/// fixes it (>= 1), or, when automatic (0), enough splits to fill about two
/// waves of `smCount` multiprocessors with at least 4 key blocks per split,
/// at most kMaxAutoSplits (1 when the query tiles alone fill the GPU; the
/// tiles are the workgroups of the unsplit grid of the first kernel of the
/// alternative the launch's Sq selects); raised to the accuracy floor
/// ::attn::minKvSplits (KeyChunks.h: chunks of at most 2^16 keys) and
/// clamped to [1, min(max, key blocks)]. Key blocks are counted in that
/// kernel's blockKv (kvSplits.blockKv when it has none). 0 when the floor
/// exceeds what the kernels take (no split support, or max): the launch is
/// refused, since its f32 sums would not be accurate.
int64_t chooseKvSplits(const KernelMetadata &metadata, const KernelArgs &args,
                       int smCount);

/// The grid of `kernel` for a launch with `splits` splits; false with
/// `error` when a dimension is 0 or exceeds what CUDA allows.
bool computeGrid(const Kernel &kernel, const KernelArgs &args, int64_t splits,
                 unsigned grid[3], std::string &error);

/// A workspace's extents for one launch ("splits" replaced by the launch's
/// count), its size in bytes, and its byte offset in the launch's single
/// workspace allocation (256-byte aligned).
struct WorkspaceLayout {
  std::vector<int64_t> shape;
  uint64_t bytes = 0;
  uint64_t offset = 0;
};

/// Lays out the workspaces of `metadata` for a launch with `splits`
/// splits: one WorkspaceLayout per workspace, in order, and the bytes the
/// single allocation holding them all needs. With `used` (one flag per
/// workspace), only the flagged ones: the others get no bytes and no
/// place (the alternatives of one artifact may read workspaces of
/// different shapes, and a launch runs only one). False with `error` when
/// an extent is not positive or a workspace (or all of them) would exceed
/// 2^40 bytes.
bool layoutWorkspaces(const KernelMetadata &metadata, const KernelArgs &args,
                      int64_t splits, std::vector<WorkspaceLayout> &layouts,
                      uint64_t &totalBytes, std::string &error,
                      const std::vector<bool> *used = nullptr);

/// The kernel parameters as cuLaunchKernel takes them: each value stored
/// at its natural alignment in `storage`, `offsets` pointing into it.
struct PackedParams {
  std::vector<uint64_t> storage; // 8-byte aligned backing store
  std::vector<size_t> offsets;   // byte offset of each parameter
  /// The void *kernelParams[] array, valid while this object lives
  /// unmodified.
  std::vector<void *> pointers();
  /// Stores `value` as parameter `param` (already laid out) of `type`: its
  /// low 32 bits for I32, 8 bytes otherwise.
  void set(size_t param, ParamType type, uint64_t value);
};

/// Packs the parameters of `kernel`, one of `metadata`'s kernels, for a
/// launch with `splits` splits. `workspacePointers` holds one device
/// address per workspace of `metadata` (0 where none is allocated); a
/// workspace's sizes and strides come from its shape for this launch. Also
/// checks q, k and v against metadata.alignBytes. False with `error` when
/// the launch lacks a tensor a parameter reads or a value does not fit.
bool packParams(const KernelMetadata &metadata, const Kernel &kernel,
                const KernelArgs &args, int64_t splits,
                const std::vector<uint64_t> &workspacePointers,
                PackedParams &packed, std::string &error);

/// Reads an artifact: the metadata at `metadataPath` and the binary it
/// names (a PTX binary must define every kernel's entry). On failure
/// returns false with `error` set.
bool readArtifact(const std::string &metadataPath, KernelMetadata &metadata,
                  std::string &binary, std::string &error);

/// Loads the binary into the current device's primary context (device 0
/// when no context is current), finds every kernel's entry, raises its
/// dynamic shared memory limit when it needs more than 48 KB, and reads the
/// device's multiprocessor count (for chooseKvSplits). Returns
/// ATTN_ERROR_UNAVAILABLE without a driver or device, ATTN_ERROR_BACKEND
/// when the driver rejects the module.
attn_status createExecutable(const KernelMetadata &metadata,
                             const std::string &binary,
                             std::unique_ptr<Executable> &executable,
                             std::string &error);

/// ATTN_OK when the CUDA driver loads, initializes and has a device;
/// otherwise ATTN_ERROR_UNAVAILABLE with the reason.
attn_status driverAvailable(std::string &error);

/// The chip of the device kernels are created for (the current context's,
/// else device 0), as "sm_XY"; ATTN_ERROR_UNAVAILABLE without a driver.
attn_status currentDeviceChip(std::string &chip, std::string &error);

/// AOT artifacts loaded with attn_cuda_load_artifact: the one whose spec
/// equals `normalizedSpec`, or null. Compilers for the cuda target consult
/// this first.
std::shared_ptr<const KernelMetadata> findArtifact(const attn_spec &normalizedSpec,
                                                   std::string *binary);

/// The attention of a layer (normalized spec), the attn.sdpa
/// attn-decompose-mha forms: dtype, B, Hq, Hkv, Sq = S, Skv, D, Dv, causal
/// and scale static, nothing else set (to be normalized by the runtime's
/// spec validation). The cuda JIT checks it against the decomposition's
/// attn.sdpa at every layer compile.
attn_spec layerAttentionSpec(const attn_mha_spec &layer);

/// Compiles an attention layer (attn.mha, normalized spec) for cuda as a
/// launch sequence (runtime/src/cuda/CudaLayer.h): the attention kernel of
/// its attn.sdpa through `attentionCompiler` (the JIT, or loaded
/// artifacts), the projections as cuBLASLt GEMMs. ATTN_ERROR_UNAVAILABLE
/// without a driver or cuBLASLt. The layer's source is the attention
/// kernel's, after comments naming the GEMMs.
attn_status compileLayer(const attn_mha_spec &spec, Compiler &attentionCompiler,
                         LayerCompileResult &result, std::string &error);

} // namespace cuda
} // namespace attn

#endif // ATTN_RUNTIME_CUDAKERNEL_H
