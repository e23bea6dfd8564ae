//===- CudaKernel.h - CUDA kernel artifacts: metadata, launch geometry, params -*- C++ -*-===//
//
// A CUDA kernel artifact is a PTX or cubin file plus a metadata file beside
// it (JSON) saying how to launch it: the entry name, the grid as a function
// of the launch shape, the block, the dynamic shared memory, the kernel's
// parameter list in terms of the launch tensors, and the spec it was
// compiled for. attn-translate writes them (--attn-to-ptx/--attn-to-cubin),
// the JIT builds the same description in memory, and libattn_runtime.so
// runs them with no MLIR (docs/NVIDIA.md describes the format).
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_CUDAKERNEL_H
#define ATTN_RUNTIME_CUDAKERNEL_H

#include "attn/runtime/Backend.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace attn {
namespace cuda {

enum class BinaryFormat { PTX, Cubin };

/// What one kernel parameter holds. Tensors are named q, k, v, mask, out,
/// lse; Data/Offset/Size/Stride follow MLIR's memref descriptor
/// (allocated and aligned pointer are both Data; Offset is always 0).
enum class ParamField { Data, Offset, Size, Stride, Seed };
enum class ParamType { Ptr, I64, I32 };

struct Param {
  std::string tensor; // empty for Seed
  ParamField field = ParamField::Data;
  int dim = 0; // Size and Stride only
  ParamType type = ParamType::Ptr;
};

/// One grid dimension: ceildiv(extent(of), ceildiv) * times, where `of` is
/// a launch extent or One.
enum class Extent { One, B, Hq, Sq, Skv };
struct GridDim {
  Extent of = Extent::One;
  int64_t ceildiv = 1;
  int64_t times = 1;
};

struct KernelMetadata {
  std::string entry;
  BinaryFormat format = BinaryFormat::PTX;
  std::string binaryFile; // relative to the metadata file's folder
  std::string chip;       // sm_80, sm_90a, ...
  GridDim grid[3];
  unsigned block[3] = {1, 1, 1};
  unsigned sharedBytes = 0; // dynamic shared memory per block
  /// q, k and v: data pointers and B/H/S strides must be multiples of this
  /// many bytes (the tensor-core kernel's 16-byte cp.async copies); 0 = no
  /// requirement. Checked by packParams at every launch.
  unsigned alignBytes = 0;
  std::vector<Param> params;
  attn_spec spec{};
};

/// The metadata as JSON text (what parseMetadata reads back).
std::string writeMetadata(const KernelMetadata &metadata);

/// Parses and validates metadata: every key present with the right type,
/// names known, the block within 1024 threads, the spec a valid one
/// (normalized on return). On failure returns false with `error` set.
bool parseMetadata(const std::string &text, KernelMetadata &metadata,
                   std::string &error);

/// The grid for a launch; false with `error` when a dimension is 0 or
/// exceeds what CUDA allows.
bool computeGrid(const KernelMetadata &metadata, const KernelArgs &args,
                 unsigned grid[3], std::string &error);

/// The kernel parameters as cuLaunchKernel takes them: each value stored
/// at its natural alignment in `storage`, `offsets` pointing into it.
struct PackedParams {
  std::vector<uint64_t> storage; // 8-byte aligned backing store
  std::vector<size_t> offsets;   // byte offset of each parameter
  /// The void *kernelParams[] array, valid while this object lives
  /// unmodified.
  std::vector<void *> pointers();
};
bool packParams(const KernelMetadata &metadata, const KernelArgs &args,
                PackedParams &packed, std::string &error);

/// Reads an artifact: the metadata at `metadataPath` and the binary it
/// names. On failure returns false with `error` set.
bool readArtifact(const std::string &metadataPath, KernelMetadata &metadata,
                  std::string &binary, std::string &error);

/// Loads the binary into the current device's primary context (device 0
/// when no context is current), finds the entry and raises its dynamic
/// shared memory limit when it needs more than 48 KB. Returns
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

} // namespace cuda
} // namespace attn

#endif // ATTN_RUNTIME_CUDAKERNEL_H
