// RUN: attn-opt %s --split-input-file --verify-diagnostics --attn-spirv-coopmat-bf16 | FileCheck %s

// attn-spirv-coopmat-bf16 requires a module marked attn.coopmat_bf16 whose
// spirv.modules use f16 only for what was bf16, with f16 constants bf16
// holds exactly (an inexact one is refused); it guarantees that every f16 in
// them becomes bf16, that they require BFloat16TypeKHR,
// BFloat16CooperativeMatrixKHR and SPV_KHR_bfloat16 instead of Float16, that
// the mark is dropped, and that unmarked modules are untouched.

// A module marked attn.coopmat_bf16: every f16 in its spirv.modules, nested
// in pointers, arrays, structs and cooperative matrices too, becomes bf16;
// the module requires BFloat16TypeKHR, BFloat16CooperativeMatrixKHR and
// SPV_KHR_bfloat16 instead of Float16; the mark is dropped; f32 stays.
// CHECK-LABEL: {{^}}module {
// CHECK-NOT: attn.coopmat_bf16
// CHECK: spirv.module Logical Vulkan requires #spirv.vce<v1.6, [Shader, CooperativeMatrixKHR, VulkanMemoryModel, StorageBuffer16BitAccess, BFloat16TypeKHR, BFloat16CooperativeMatrixKHR], [SPV_KHR_cooperative_matrix, SPV_KHR_vulkan_memory_model, SPV_KHR_16bit_storage, SPV_KHR_bfloat16]>
// CHECK-SAME: spirv.target_env = #spirv.target_env<#spirv.vce<v1.6, [Shader, CooperativeMatrixKHR, VulkanMemoryModel, StorageBuffer16BitAccess, BFloat16TypeKHR, BFloat16CooperativeMatrixKHR], [SPV_KHR_cooperative_matrix, SPV_KHR_vulkan_memory_model, SPV_KHR_16bit_storage, SPV_KHR_bfloat16]>
// CHECK: spirv.GlobalVariable @buf bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.array<256 x bf16, stride=2> [0]), Block>, StorageBuffer>
// CHECK: spirv.GlobalVariable @acc bind(0, 1) : !spirv.ptr<!spirv.struct<(!spirv.array<256 x f32, stride=4> [0]), Block>, StorageBuffer>
// CHECK: spirv.func @k()
// CHECK: spirv.AccessChain {{.*}} -> !spirv.ptr<bf16, StorageBuffer>
// CHECK: spirv.KHR.CooperativeMatrixLoad {{.*}} : !spirv.ptr<bf16, StorageBuffer>, i32 -> !spirv.coopmatrix<16x16xbf16, Subgroup, MatrixA>
// CHECK: spirv.FConvert %{{.*}} : f32 to bf16
// CHECK-NOT: {{[^b]}}f16
module attributes {attn.coopmat_bf16} {
  spirv.module Logical Vulkan requires #spirv.vce<v1.6, [Shader, CooperativeMatrixKHR, VulkanMemoryModel, Float16, StorageBuffer16BitAccess], [SPV_KHR_cooperative_matrix, SPV_KHR_vulkan_memory_model, SPV_KHR_16bit_storage]> attributes {spirv.target_env = #spirv.target_env<#spirv.vce<v1.6, [Shader, CooperativeMatrixKHR, VulkanMemoryModel, Float16, StorageBuffer16BitAccess], [SPV_KHR_cooperative_matrix, SPV_KHR_vulkan_memory_model, SPV_KHR_16bit_storage]>, #spirv.resource_limits<>>} {
    spirv.GlobalVariable @buf bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.array<256 x f16, stride=2> [0]), Block>, StorageBuffer>
    spirv.GlobalVariable @acc bind(0, 1) : !spirv.ptr<!spirv.struct<(!spirv.array<256 x f32, stride=4> [0]), Block>, StorageBuffer>
    spirv.func @k() "None" {
      %c0 = spirv.Constant 0 : i32
      %c16 = spirv.Constant 16 : i32
      %one = spirv.Constant 1.0 : f32
      %addr = spirv.mlir.addressof @buf : !spirv.ptr<!spirv.struct<(!spirv.array<256 x f16, stride=2> [0]), Block>, StorageBuffer>
      %p = spirv.AccessChain %addr[%c0, %c0] : !spirv.ptr<!spirv.struct<(!spirv.array<256 x f16, stride=2> [0]), Block>, StorageBuffer>, i32, i32 -> !spirv.ptr<f16, StorageBuffer>
      %m = spirv.KHR.CooperativeMatrixLoad %p, %c16, <RowMajor> : !spirv.ptr<f16, StorageBuffer>, i32 -> !spirv.coopmatrix<16x16xf16, Subgroup, MatrixA>
      %h = spirv.FConvert %one : f32 to f16
      spirv.Store "StorageBuffer" %p, %h : f16
      spirv.Return
    }
  }
}

// -----

// Unmarked (an f16 kernel): untouched.
// CHECK-LABEL: {{^}}module {
// CHECK: spirv.module Logical GLSL450 requires #spirv.vce<v1.3, [Shader, Float16, StorageBuffer16BitAccess]
// CHECK: !spirv.ptr<f16, StorageBuffer>
module {
  spirv.module Logical GLSL450 requires #spirv.vce<v1.3, [Shader, Float16, StorageBuffer16BitAccess], [SPV_KHR_16bit_storage]> {
    spirv.GlobalVariable @buf bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.array<4 x f16, stride=2> [0]), Block>, StorageBuffer>
    spirv.func @k() "None" {
      %c0 = spirv.Constant 0 : i32
      %addr = spirv.mlir.addressof @buf : !spirv.ptr<!spirv.struct<(!spirv.array<4 x f16, stride=2> [0]), Block>, StorageBuffer>
      %p = spirv.AccessChain %addr[%c0, %c0] : !spirv.ptr<!spirv.struct<(!spirv.array<4 x f16, stride=2> [0]), Block>, StorageBuffer>, i32, i32 -> !spirv.ptr<f16, StorageBuffer>
      spirv.Return
    }
  }
}

// -----

// f16 constants keep their value in bf16 (0.5 is exact); one bf16 cannot
// hold (1 + 2^-10, exact in f16) is an error.
// CHECK-LABEL: {{^}}module {
// CHECK: spirv.Constant 5.000000e-01 : bf16
module attributes {attn.coopmat_bf16} {
  spirv.module Logical GLSL450 requires #spirv.vce<v1.3, [Shader, Float16], []> {
    spirv.func @k() -> f16 "None" {
      %h = spirv.Constant 0.5 : f16
      spirv.ReturnValue %h : f16
    }
  }
}

// -----

module attributes {attn.coopmat_bf16} {
  spirv.module Logical GLSL450 requires #spirv.vce<v1.3, [Shader, Float16], []> {
    spirv.func @k() -> f16 "None" {
      // expected-error@+1 {{the f16 constant 1.000977e+00 has no exact bf16 value}}
      %h = spirv.Constant 1.0009765625 : f16
      spirv.ReturnValue %h : f16
    }
  }
}
