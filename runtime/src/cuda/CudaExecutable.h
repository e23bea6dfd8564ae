//===- CudaExecutable.h - CUDA executables on a given driver table -*- C++ -*-===//
//
// createExecutable (attn/runtime/CudaKernel.h) runs on the process's
// libcuda.so.1. The variant here takes the driver table explicitly, so the
// cuda-runtime tests can run the executable's launch path (workspace pool,
// launches, error handling) against a fake driver on machines without a GPU.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_SRC_CUDA_CUDAEXECUTABLE_H
#define ATTN_RUNTIME_SRC_CUDA_CUDAEXECUTABLE_H

#include "CudaDriver.h"

#include "attn/runtime/CudaKernel.h"

#include <memory>
#include <string>

namespace attn {
namespace cuda {

/// createExecutable with `driver` instead of getDriver()'s; `driver` must
/// outlive the executable.
attn_status createExecutableWithDriver(const Driver &driver,
                                       const KernelMetadata &metadata,
                                       const std::string &binary,
                                       std::unique_ptr<Executable> &executable,
                                       std::string &error);

} // namespace cuda
} // namespace attn

#endif // ATTN_RUNTIME_SRC_CUDA_CUDAEXECUTABLE_H
