//===- InitAll.h - one registration point for every attn tool -*- C++ -*-===//
#ifndef ATTN_INITALL_H
#define ATTN_INITALL_H

namespace mlir {
class DialectRegistry;
namespace attn {
/// The attn dialect plus every upstream dialect and extension the pipelines
/// use.
void registerAllDialects(DialectRegistry &registry);
/// attn passes, conversions and pipelines, plus the upstream passes.
void registerAllPasses();
} // namespace attn
} // namespace mlir

#endif
