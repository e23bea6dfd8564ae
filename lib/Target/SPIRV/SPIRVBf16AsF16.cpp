//===- SPIRVBf16AsF16.cpp - a bf16 attention retyped as f16 ---------------===//
//
// attn-spirv-bf16-as-f16: gpu.mma_matrix has no bf16 in MLIR 22, so the
// coopmat variant lowers a bf16 attention as f16 over the same 16-bit
// words, and attn-spirv-coopmat-bf16 (SPIRVCoopMatBf16.cpp) retypes the
// SPIR-V back. This pass is the first half: every bf16 in the module
// becomes f16, and the module is marked for the second.
//
//===----------------------------------------------------------------------===//
#include "attn/Target/SPIRV/Passes.h"

#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::attn {
#define GEN_PASS_DEF_SPIRVBF16ASF16PASS
#include "attn/Target/SPIRV/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {
/// Whether `t` is or holds `Elt`.
template <typename Elt> bool holds(Type t) {
  bool found = false;
  t.walk([&](Type inner) { found |= isa<Elt>(inner); });
  return found;
}

struct SPIRVBf16AsF16Pass
    : mlir::attn::impl::SPIRVBf16AsF16PassBase<SPIRVBf16AsF16Pass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool bf16 = false;
    Operation *f16 = nullptr;
    module.walk([&](Operation *op) {
      auto check = [&](Type t) {
        bf16 |= holds<BFloat16Type>(t);
        if (!f16 && holds<Float16Type>(t))
          f16 = op;
      };
      for (Type t : op->getResultTypes())
        check(t);
      for (Region &r : op->getRegions())
        for (Block &blk : r)
          for (BlockArgument a : blk.getArguments())
            check(a.getType());
    });
    if (!bf16)
      return;
    if (f16) {
      f16->emitError("attn-spirv-bf16-as-f16: f16 beside bf16 data would be "
                     "indistinguishable from it once the bf16 is retyped as "
                     "f16 (an f16 mask on bf16 data: give the mask the "
                     "data's type or f32)");
      return signalPassFailure();
    }
    AttrTypeReplacer replacer;
    Type f16Type = Float16Type::get(&getContext());
    replacer.addReplacement([&](BFloat16Type) { return f16Type; });
    replacer.recursivelyReplaceElementsIn(module, /*replaceAttrs=*/true,
                                          /*replaceLocs=*/false,
                                          /*replaceTypes=*/true);
    module->setAttr(mlir::attn::kCoopMatBf16Attr, UnitAttr::get(&getContext()));
  }
};
} // namespace
