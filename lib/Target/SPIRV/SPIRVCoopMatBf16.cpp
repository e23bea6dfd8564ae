//===- SPIRVCoopMatBf16.cpp - a bf16 coopmat kernel, retyped from f16 -----===//
//
// gpu.mma_matrix has no bf16 element type in MLIR 22, so the coopmat kernel
// of a bf16 attention is generated in f16 (attn-spirv-bf16-as-f16,
// SPIRVBf16AsF16.cpp: the buffers hold the same 16-bit words, the host
// function's bf16 arguments become f16 ones) and the module is marked
// `attn.coopmat_bf16`. This step
// of attn-to-spirv-pipeline{variant=coopmat}, after convert-gpu-to-spirv,
// turns every f16 in the marked module's spirv.modules into bf16 (storage
// buffers, workgroup P, cooperative matrices, conversions), which
// SPV_KHR_bfloat16 expresses: OpTypeFloat 16 with the BFloat16KHR
// encoding, `BFloat16TypeKHR` and `BFloat16CooperativeMatrixKHR`. Nothing
// else in such a kernel is f16 (the coopmat pass refuses an f16 mask on
// bf16 data), so the retyping is exact; f16 constants (the zero that pads
// the tiles) become the same bf16 value, and one bf16 cannot hold exactly
// is an error. Unmarked modules are left alone.
//
//===----------------------------------------------------------------------===//
#include "attn/Target/SPIRV/Passes.h"

#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::attn {
#define GEN_PASS_DEF_SPIRVCOOPMATBF16PASS
#include "attn/Target/SPIRV/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

/// `t` with every f16 in it (through SPIR-V's composite types, which do
/// not expose their element types to AttrTypeReplacer) as bf16.
Type toBf16(Type t) {
  MLIRContext *ctx = t.getContext();
  if (isa<Float16Type>(t))
    return BFloat16Type::get(ctx);
  if (auto v = dyn_cast<VectorType>(t))
    return VectorType::get(v.getShape(), toBf16(v.getElementType()));
  if (auto p = dyn_cast<spirv::PointerType>(t))
    return spirv::PointerType::get(toBf16(p.getPointeeType()),
                                   p.getStorageClass());
  if (auto a = dyn_cast<spirv::ArrayType>(t))
    return spirv::ArrayType::get(toBf16(a.getElementType()),
                                 a.getNumElements(), a.getArrayStride());
  if (auto a = dyn_cast<spirv::RuntimeArrayType>(t))
    return spirv::RuntimeArrayType::get(toBf16(a.getElementType()),
                                        a.getArrayStride());
  if (auto m = dyn_cast<spirv::CooperativeMatrixType>(t))
    return spirv::CooperativeMatrixType::get(toBf16(m.getElementType()),
                                             m.getRows(), m.getColumns(),
                                             m.getScope(), m.getUse());
  if (auto s = dyn_cast<spirv::StructType>(t); s && !s.isIdentified()) {
    SmallVector<Type> members;
    SmallVector<spirv::StructType::OffsetInfo> offsets;
    for (unsigned i = 0; i < s.getNumElements(); ++i) {
      members.push_back(toBf16(s.getElementType(i)));
      if (s.hasOffset())
        offsets.push_back(s.getMemberOffset(i));
    }
    SmallVector<spirv::StructType::MemberDecorationInfo> memberDecorations;
    s.getMemberDecorations(memberDecorations);
    SmallVector<spirv::StructType::StructDecorationInfo> structDecorations;
    s.getStructDecorations(structDecorations);
    return spirv::StructType::get(members, offsets, memberDecorations,
                                  structDecorations);
  }
  if (auto f = dyn_cast<FunctionType>(t)) {
    SmallVector<Type> ins, outs;
    for (Type i : f.getInputs())
      ins.push_back(toBf16(i));
    for (Type o : f.getResults())
      outs.push_back(toBf16(o));
    return FunctionType::get(ctx, ins, outs);
  }
  return t;
}
} // namespace

LogicalResult mlir::attn::retypeCoopMatBf16(ModuleOp module) {
  if (!module->hasAttr(kCoopMatBf16Attr))
    return success();
  // f16 constants (e.g. the zero that pads tiles) become the same value
  // in bf16; one bf16 cannot hold exactly is an error.
  bool failed = false;
  Type bf16 = BFloat16Type::get(module.getContext());
  module.walk([&](spirv::ModuleOp spv) {
    spv.walk([&](Operation *op) {
      for (NamedAttribute a : op->getAttrs()) {
        auto f = dyn_cast<FloatAttr>(a.getValue());
        if (!f || !f.getType().isF16())
          continue;
        APFloat value = f.getValue();
        bool lost = false;
        value.convert(APFloat::BFloat(), APFloat::rmNearestTiesToEven, &lost);
        if (lost) {
          op->emitError("attn-spirv-coopmat-bf16: the f16 constant ")
              << f.getValueAsDouble() << " has no exact bf16 value";
          failed = true;
          continue;
        }
        op->setAttr(a.getName(), FloatAttr::get(bf16, value));
      }
    });
  });
  if (failed)
    return failure();
  AttrTypeReplacer replacer;
  replacer.addReplacement([](Type t) -> std::optional<Type> {
    Type r = toBf16(t);
    return r == t ? std::optional<Type>() : std::optional<Type>(r);
  });
  MLIRContext *ctx = module.getContext();
  module.walk([&](spirv::ModuleOp spv) {
    replacer.recursivelyReplaceElementsIn(spv, /*replaceAttrs=*/true,
                                          /*replaceLocs=*/false,
                                          /*replaceTypes=*/true);
    // What the module requires now: no Float16 (nothing f16 is left),
    // BFloat16TypeKHR and, for bf16 cooperative matrices,
    // BFloat16CooperativeMatrixKHR (spirv-update-vce in MLIR 22 does not
    // derive the latter), and SPV_KHR_bfloat16; the target env allows
    // them too.
    auto widen = [&](spirv::VerCapExtAttr vce) {
      SmallVector<spirv::Capability> caps;
      for (spirv::Capability c : vce.getCapabilities())
        if (c != spirv::Capability::Float16)
          caps.push_back(c);
      caps.push_back(spirv::Capability::BFloat16TypeKHR);
      caps.push_back(spirv::Capability::BFloat16CooperativeMatrixKHR);
      SmallVector<spirv::Extension> exts(vce.getExtensions());
      exts.push_back(spirv::Extension::SPV_KHR_bfloat16);
      return spirv::VerCapExtAttr::get(vce.getVersion(), caps, exts, ctx);
    };
    if (std::optional<spirv::VerCapExtAttr> vce = spv.getVceTriple())
      spv.setVceTripleAttr(widen(*vce));
    if (auto env = spv->getAttrOfType<spirv::TargetEnvAttr>(
            spirv::getTargetEnvAttrName()))
      spv->setAttr(spirv::getTargetEnvAttrName(),
                   spirv::TargetEnvAttr::get(
                       widen(env.getTripleAttr()), env.getResourceLimits(),
                       env.getClientAPI(), env.getVendorID(),
                       env.getDeviceType(), env.getDeviceID()));
  });
  module->removeAttr(kCoopMatBf16Attr);
  return success();
}

namespace {
struct SPIRVCoopMatBf16Pass
    : mlir::attn::impl::SPIRVCoopMatBf16PassBase<SPIRVCoopMatBf16Pass> {
  void runOnOperation() override {
    if (failed(mlir::attn::retypeCoopMatBf16(getOperation())))
      signalPassFailure();
  }
};
} // namespace
