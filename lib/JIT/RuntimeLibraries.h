//===- RuntimeLibraries.h - finding the JIT's helpers at run time -*- C++ -*-===//
//
// What JIT-compiled code and the compilers need outside libattn: LLVM's
// OpenMP runtime and MLIR's C runner utilities (loaded into every cpu
// kernel's ExecutionEngine) and ptxas (for attn-translate's cubins). Found
// when needed, never baked in at build time, so an installed or relocated
// libattn finds them where it lives (docs/Install.md):
//
//   1. the environment variable (ATTN_LIBOMP, ATTN_MLIR_RUNNER_UTILS,
//      ATTN_PTXAS): the file to use; set but wrong is an error;
//   2. libraries: beside the code that holds the JIT (libattn.so's
//      directory, or ../lib of a tool that links it statically), then the
//      directory of the libMLIR.so this process loaded, then the LLVM
//      library directory attn was built against; ptxas: PATH, the CUDA
//      toolkit (CUDA_HOME, CUDA_PATH, /usr/local/cuda);
//   3. libraries: the dynamic loader's own search (LD_LIBRARY_PATH,
//      ld.so.cache) by soname.
//
// Not found, the error names the variable to set and where it looked.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_LIB_JIT_RUNTIMELIBRARIES_H
#define ATTN_LIB_JIT_RUNTIMELIBRARIES_H

#include <string>
#include <vector>

namespace mlir::attn::jit {

/// The shared libraries every cpu kernel's ExecutionEngine loads (libomp,
/// libmlir_c_runner_utils), as paths, libomp first. False with `error` set if one is
/// missing.
bool findCPURuntimeLibraries(std::vector<std::string> &paths,
                             std::string &error);

/// The ptxas to run. False with `error` set if there is none.
bool findPtxas(std::string &path, std::string &error);

} // namespace mlir::attn::jit

#endif
