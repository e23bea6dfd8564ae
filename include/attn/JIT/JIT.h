//===- JIT.h - compile runtime kernel specs with MLIR, in process -*- C++ -*-===//
//
// The only layer that links both the runtime and MLIR. It turns an
// attn_spec into the kernel's source IR (an entry function over memrefs
// wrapping one attn.sdpa), runs the target's pipeline and hands the runtime
// an attn::Executable.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_JIT_JIT_H
#define ATTN_JIT_JIT_H

#include "attn/runtime/attn.h"
#include "mlir/Support/LLVM.h"

#include <functional>
#include <string>

namespace mlir {
class PassManager;
} // namespace mlir

namespace mlir::attn::jit {

/// Name of the entry function in every kernel's source.
inline constexpr const char *kEntryName = "attn_kernel";

/// The kernel's source IR for `spec` (validated and normalized by the
/// runtime): `func.func @attn_kernel` whose arguments are, in order, q, k,
/// v, [mask], out, [lse] as strided memrefs (last dimension contiguous,
/// every other stride and the offset dynamic), then [seed: i64] when the
/// spec has dropout. Static spec dimensions are static in the types.
std::string buildKernelSource(const attn_spec &spec);

/// The source IR of an attention layer (attn_mha_compile) for a
/// validated, normalized spec: `func.func @attn_kernel` over dense memrefs
/// x, [kv], the weights (w_q, w_k, w_v or w_qkv, then w_o), [the biases in
/// the same order], y, wrapping one attn.mha.
std::string buildMhaKernelSource(const attn_mha_spec &spec);

/// buildKernelSource with dense (identity-layout) memrefs: what the SPIR-V
/// kernels take (the Vulkan runtime stages every tensor packed, so the
/// kernel never needs strides).
std::string buildDenseKernelSource(const attn_spec &spec);

/// The chunk count a spec's kv_splits `requested` (> 1) gives for `seqKv`
/// keys in blocks of `blockKv`: `requested` when there are that many key
/// blocks, else fewer, so that no chunk is empty and split partials are
/// sized by what the keys can use. `powerOfTwo`: round a clamped count
/// down to a power of two (launch-time clamps, which compile a kernel per
/// distinct count, so at most 63 of them).
int64_t clampKvSplits(int64_t requested, int64_t seqKv, int64_t blockKv,
                      bool powerOfTwo);

/// What every JIT pipeline's pass manager gets before its passes (IR
/// printing, timing, crash reproducers): a tool that registered MLIR's
/// pass-manager command-line options sets applyPassManagerCLOptions here,
/// so `attn-translate --attn-to-ptx --mlir-print-ir-after-all` follows the
/// op through the whole pipeline. Unset (a library user, attn-run): the IR
/// after every pass on stderr when the environment variable
/// ATTN_PRINT_IR_AFTER_ALL is set and not "0" (`attn-run
/// --print-ir-after-all` sets it), else nothing.
using PassManagerConfigurator = std::function<LogicalResult(PassManager &)>;
void setPassManagerConfigurator(PassManagerConfigurator configure);
/// Applies the configurator set above, or the environment's IR printing.
LogicalResult configurePassManager(PassManager &pm);

} // namespace mlir::attn::jit

#endif
