//===- SPIRVBufferLimits.h - what buffers a SPIR-V kernel takes -*- C++ -*-===//
//
// The one check, shared by both SPIR-V kernel mappings (the SIMT mapping,
// convert-attn-tiles-to-simt{spirv}, and the tiled variant's
// attn-spirv-bufferize), of the function arguments a SPIR-V kernel can
// take, refused up front with a diagnostic instead of failing later in
// MLIR's SPIR-V conversion ("failed to legalize operation 'gpu.func'" or
// 'arith.constant'), or worse, compiling with wrapping 32-bit offsets:
//   - dense (identity-layout) memrefs only: the conversion cannot lower
//     strided ones (the runtime always passes dense ones);
//   - every static extent, and a static shape's element count, at most
//     2^31 - 1: SPIR-V kernels index buffers with 32 bits (dynamic extents
//     are bounded at launch by the runtime).
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_SPIRVBUFFERLIMITS_H
#define ATTN_CONVERSION_SPIRVBUFFERLIMITS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"

#include <cstdint>
#include <limits>

namespace mlir::attn {

inline LogicalResult checkSPIRVBufferArguments(func::FuncOp fn,
                                               StringRef pass) {
  const int64_t limit = std::numeric_limits<int32_t>::max();
  for (auto [i, t] : llvm::enumerate(fn.getArgumentTypes())) {
    if (auto m = dyn_cast<MemRefType>(t); m && !m.getLayout().isIdentity())
      return fn.emitError()
             << pass << ": argument " << i << " (" << t
             << ") has a strided layout; SPIR-V kernels take dense "
                "(identity-layout) buffers";
    auto ty = dyn_cast<ShapedType>(t);
    if (!ty)
      continue;
    int64_t n = 1;
    bool over = false;
    for (int64_t d : ty.getShape())
      over = over || (!ShapedType::isDynamic(d) && d > limit) ||
             (ty.hasStaticShape() &&
              (__builtin_mul_overflow(n, d, &n) || n > limit));
    if (over)
      return fn.emitError()
             << pass << ": argument " << i << " (" << ty
             << ") has more than 2^31 - 1 elements; SPIR-V kernels index "
                "buffers with 32 bits";
  }
  return success();
}

} // namespace mlir::attn

#endif
