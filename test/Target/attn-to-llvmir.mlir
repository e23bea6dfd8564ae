// attn-translate --attn-to-llvmir: IR at any level to LLVM IR for the host.
// RUN: attn-translate --attn-to-llvmir %s | FileCheck %s
// RUN: attn-translate --attn-to-llvmir --math %s | FileCheck %s --check-prefix=MATH
// Already-lowered input is translated as it is.
// RUN: attn-opt --attn-to-cpu-pipeline %s | attn-translate --attn-to-llvmir | FileCheck %s
// RUN: not attn-translate --attn-to-llvmir %S/Inputs/invalid.mlir 2>&1 | FileCheck %s --check-prefix=BAD

// CHECK-LABEL: define {{.*}} @attention(
// CHECK: call void {{.*}}@__kmpc_fork_call
// The softmax's exp2 is a polynomial on vectors of the tile's extent.
// CHECK: call <{{[0-9]+}} x float> @llvm.floor.v{{[0-9]+}}f32

// MATH-LABEL: define {{.*}} @attention(
// MATH-NOT: __kmpc_fork_call
// MATH: call float @llvm.exp.f32

// BAD: error: 'attn.sdpa' op key element type 'f32' must match query element type 'f16'

func.func @attention(%q: tensor<1x2x33x32xf16>, %k: tensor<1x1x40x32xf16>,
                     %v: tensor<1x1x40x32xf16>) -> tensor<1x2x33x32xf16> {
  %o = attn.sdpa %q, %k, %v
      : tensor<1x2x33x32xf16>, tensor<1x1x40x32xf16>, tensor<1x1x40x32xf16>
      -> tensor<1x2x33x32xf16>
  return %o : tensor<1x2x33x32xf16>
}
