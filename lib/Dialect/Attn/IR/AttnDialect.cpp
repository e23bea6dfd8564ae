//===- AttnDialect.cpp - attn dialect and attribute registration ---------===//
#include "attn/Dialect/Attn/IR/AttnDialect.h"
#include "attn/Dialect/Attn/IR/AttnAttrs.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::attn;

#include "attn/Dialect/Attn/IR/AttnDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "attn/Dialect/Attn/IR/AttnAttrs.cpp.inc"

void AttnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "attn/Dialect/Attn/IR/AttnOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "attn/Dialect/Attn/IR/AttnAttrs.cpp.inc"
      >();
}

LogicalResult
TilingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                   int64_t blockQ, int64_t blockKv, int64_t kvSplits) {
  if (blockQ <= 0)
    return emitError() << "tiling block_q must be positive, got " << blockQ;
  if (blockKv <= 0)
    return emitError() << "tiling block_kv must be positive, got " << blockKv;
  if (kvSplits < 0)
    return emitError() << "tiling kv_splits must be >= 0 (0 = automatic), got "
                       << kvSplits;
  return success();
}
