//===- SpecFromMLIR.cpp - attn_spec_from_mlir: a runtime spec from IR -----===//
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/InitAll.h"
#include "attn/runtime/Backend.h"
#include "attn/runtime/attn_jit.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace {
int64_t dimOf(ShapedType t, unsigned i) {
  return t.isDynamicDim(i) ? ATTN_DYNAMIC : t.getDimSize(i);
}

std::optional<attn_dtype> dtypeOf(Type t) {
  if (t.isF16())
    return ATTN_DTYPE_F16;
  if (t.isBF16())
    return ATTN_DTYPE_BF16;
  if (t.isF32())
    return ATTN_DTYPE_F32;
  if (t.isInteger(1) || t.isInteger(8))
    return ATTN_DTYPE_BOOL;
  return std::nullopt;
}

attn_status fail(const std::string &message) {
  ::attn::setLastError("attn_spec_from_mlir: " + message);
  return ATTN_ERROR_INVALID_ARGUMENT;
}
} // namespace

extern "C" attn_status attn_spec_from_mlir(const char *text, attn_spec *spec) {
  if (!text || !spec)
    return fail("text and spec must not be NULL");
  DialectRegistry registry;
  mlir::attn::registerAllDialects(registry);
  MLIRContext context(registry, MLIRContext::Threading::DISABLED);
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    os << d.getLocation() << ": " << d << "\n";
    return success();
  });
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
  if (!module)
    return fail("the IR is invalid:\n" + diagnostics);
  if (failed(verify(*module)))
    return fail("the IR is invalid:\n" + diagnostics);
  SmallVector<mlir::attn::SdpaOp> ops;
  module->walk([&](mlir::attn::SdpaOp op) { ops.push_back(op); });
  if (ops.size() != 1)
    return fail("expected exactly one attn.sdpa, found " +
                std::to_string(ops.size()));
  mlir::attn::SdpaOp op = ops.front();

  attn_spec s;
  attn_spec_init(&s);
  auto q = op.getQueryType(), k = op.getKeyType(), v = op.getValueType();
  s.dtype = *dtypeOf(q.getElementType()); // the verifier restricts it
  s.batch = dimOf(q, 0);
  s.heads_q = dimOf(q, 1);
  s.seq_q = dimOf(q, 2);
  s.head_dim = q.getDimSize(3);
  s.heads_kv = dimOf(k, 1);
  s.seq_kv = dimOf(k, 2);
  s.value_dim = v.getDimSize(3);
  s.causal = op.getCausal() ? 1 : 0;
  if (auto scale = op.getScale())
    s.scale = scale->convertToDouble();
  s.dropout_p = op.getEffectiveDropout();
  s.return_lse = op.getLse() ? 1 : 0;
  if (Value mask = op.getMask()) {
    Type mElt = cast<ShapedType>(mask.getType()).getElementType();
    std::optional<attn_dtype> mt = dtypeOf(mElt);
    if (!mt)
      return fail("additive masks must be f16, bf16 or f32 here");
    s.mask = *mt == ATTN_DTYPE_BOOL ? ATTN_MASK_BOOL : ATTN_MASK_ADDITIVE;
    s.mask_dtype = *mt;
  }
  if (auto tiling = op.getTiling()) {
    s.block_q = tiling->getBlockQ();
    s.block_kv = tiling->getBlockKv();
    s.kv_splits = tiling->getKvSplits();
  }
  *spec = s;
  ::attn::setLastError("");
  return ATTN_OK;
}
