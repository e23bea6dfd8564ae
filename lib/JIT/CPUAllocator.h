//===- CPUAllocator.h - checked heap buffers for the cpu kernels -*- C++ -*-===//
//
// The cpu kernels are built with attn-to-cpu-pipeline{checked-alloc}: their
// heap buffers (the math variant's score matrix, split-KV partials, the slabs
// of the tiles' temporaries) come from _mlir_memref_to_llvm_alloc /
// _aligned_alloc and go back through _mlir_memref_to_llvm_free, which the
// JIT binds to the functions here. A launch runs under runChecked: an
// allocation that fails unwinds to it by longjmp, the launch's live buffers
// are freed, and the call returns ATTN_ERROR_OUT_OF_MEMORY before the
// kernel has written an output. That needs the allocation to be outside
// the OpenMP team (a thread cannot leave it): attn-cpu-hoist-tile-buffers,
// strict in the JIT, moves every temporary of the parallel tiles into
// a slab allocated before the loop. Should a kernel still allocate inside a
// parallel region and fail, it aborts with a message instead of writing
// through a null pointer.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_LIB_JIT_CPUALLOCATOR_H
#define ATTN_LIB_JIT_CPUALLOCATOR_H

#include "attn/runtime/attn.h"

#include "llvm/ExecutionEngine/Orc/Core.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"

#include <string>

namespace mlir::attn::jit {

/// The three allocation entry points, for ExecutionEngine::registerSymbols.
llvm::orc::SymbolMap checkedAllocSymbols(llvm::orc::MangleAndInterner interner);

/// Runs a packed kernel entry with the checked allocator armed on this
/// thread. ATTN_OK, or ATTN_ERROR_OUT_OF_MEMORY with `error` saying how
/// many bytes could not be allocated.
attn_status runChecked(void (*fn)(void **), void **args, std::string &error);

} // namespace mlir::attn::jit

#endif
