// RUN: attn-opt %s --split-input-file --verify-diagnostics --attn-spirv-builtin-capabilities | FileCheck %s

// attn-spirv-builtin-capabilities requires that a module declaring a
// subgroup built-in (SubgroupId, NumSubgroups, SubgroupSize,
// SubgroupLocalInvocationId) has a target environment allowing
// GroupNonUniform (refused otherwise); it guarantees that such a module
// requires GroupNonUniform, the rest of its VCE triple unchanged, and that
// other modules are untouched.

// SubgroupId and NumSubgroups: GroupNonUniform added once, the other
// capabilities and the extensions kept.
// CHECK-LABEL: spirv.module @ids Logical GLSL450
// CHECK-SAME: #spirv.vce<v1.6, [Shader, CooperativeMatrixKHR, GroupNonUniform], [SPV_KHR_cooperative_matrix]>
module attributes {spirv.target_env = #spirv.target_env<#spirv.vce<v1.6, [Shader, GroupNonUniform, CooperativeMatrixKHR], [SPV_KHR_cooperative_matrix]>, #spirv.resource_limits<>>} {
spirv.module @ids Logical GLSL450 requires #spirv.vce<v1.6, [Shader, CooperativeMatrixKHR], [SPV_KHR_cooperative_matrix]> {
  spirv.GlobalVariable @sg built_in("SubgroupId") : !spirv.ptr<i32, Input>
  spirv.GlobalVariable @nsg built_in("NumSubgroups") : !spirv.ptr<i32, Input>
}
}

// -----

// Already declared: unchanged.
// CHECK-LABEL: spirv.module @declared Logical GLSL450
// CHECK-SAME: #spirv.vce<v1.3, [GroupNonUniform, Shader], []>
module attributes {spirv.target_env = #spirv.target_env<#spirv.vce<v1.3, [Shader, GroupNonUniform], []>, #spirv.resource_limits<>>} {
spirv.module @declared Logical GLSL450 requires #spirv.vce<v1.3, [GroupNonUniform, Shader], []> {
  spirv.GlobalVariable @sz built_in("SubgroupSize") : !spirv.ptr<i32, Input>
}
}

// -----

// Other built-ins need nothing more.
// CHECK-LABEL: spirv.module @local Logical GLSL450
// CHECK-SAME: #spirv.vce<v1.0, [Shader], []>
module attributes {spirv.target_env = #spirv.target_env<#spirv.vce<v1.0, [Shader], []>, #spirv.resource_limits<>>} {
spirv.module @local Logical GLSL450 requires #spirv.vce<v1.0, [Shader], []> {
  spirv.GlobalVariable @lid built_in("LocalInvocationId") : !spirv.ptr<vector<3xi32>, Input>
}
}

// -----

// A target that does not allow GroupNonUniform: refused.
module attributes {spirv.target_env = #spirv.target_env<#spirv.vce<v1.3, [Shader], []>, #spirv.resource_limits<>>} {
spirv.module @refused Logical GLSL450 requires #spirv.vce<v1.3, [Shader], []> {
  // expected-error @+1 {{the built-in SubgroupId needs the GroupNonUniform capability, which the module's target environment does not allow}}
  spirv.GlobalVariable @sg built_in("SubgroupId") : !spirv.ptr<i32, Input>
}
}
