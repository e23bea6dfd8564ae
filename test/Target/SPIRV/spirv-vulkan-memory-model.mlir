// RUN: attn-opt %s --split-input-file --verify-diagnostics --attn-spirv-vulkan-memory-model | FileCheck %s

// attn-spirv-vulkan-memory-model requires a target environment that allows
// VulkanMemoryModel for every spirv.module using CooperativeMatrixKHR
// (refused otherwise); it guarantees that such modules use the Vulkan memory
// model with its capability and extension, NonPrivatePointer on every
// Workgroup access and MakeAvailable|MakeVisible on every barrier, and that
// modules without cooperative matrices are untouched.

// A module with cooperative matrices: Vulkan memory model, its capability
// and extension; workgroup accesses non-private, barriers making writes
// available and visible; storage-buffer accesses untouched.
// CHECK-LABEL: spirv.module @coop Logical Vulkan
// CHECK-SAME: #spirv.vce<v1.6, [Shader, CooperativeMatrixKHR, VulkanMemoryModel], [SPV_KHR_cooperative_matrix, SPV_KHR_vulkan_memory_model]>
// CHECK: spirv.Load "Workgroup" %{{.*}} ["NonPrivatePointer"] : f32
// CHECK: spirv.Store "Workgroup" %{{.*}}, %{{.*}} ["NonPrivatePointer"] : f32
// CHECK: spirv.Load "StorageBuffer" %{{.*}} : f32
// CHECK: spirv.KHR.CooperativeMatrixLoad %{{.*}}, %{{.*}}, <RowMajor>, <NonPrivatePointer>
// CHECK: spirv.KHR.CooperativeMatrixStore %{{.*}}, %{{.*}}, %{{.*}}, <RowMajor>, <NonPrivatePointer>
// CHECK: spirv.ControlBarrier <Workgroup>, <Workgroup>, <AcquireRelease|WorkgroupMemory|MakeAvailable|MakeVisible>
module attributes {spirv.target_env = #spirv.target_env<#spirv.vce<v1.6, [Shader, CooperativeMatrixKHR, VulkanMemoryModel], [SPV_KHR_cooperative_matrix, SPV_KHR_vulkan_memory_model]>, #spirv.resource_limits<>>} {
spirv.module @coop Logical GLSL450 requires #spirv.vce<v1.6, [Shader, CooperativeMatrixKHR], [SPV_KHR_cooperative_matrix]> {
  spirv.GlobalVariable @wg : !spirv.ptr<!spirv.array<256 x f32>, Workgroup>
  spirv.GlobalVariable @sb bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.array<256 x f32, stride=4> [0])>, StorageBuffer>
  spirv.func @f() "None" {
    %c0 = spirv.Constant 0 : i32
    %c16 = spirv.Constant 16 : i32
    %wg = spirv.mlir.addressof @wg : !spirv.ptr<!spirv.array<256 x f32>, Workgroup>
    %p = spirv.AccessChain %wg[%c0] : !spirv.ptr<!spirv.array<256 x f32>, Workgroup>, i32 -> !spirv.ptr<f32, Workgroup>
    %x = spirv.Load "Workgroup" %p : f32
    spirv.Store "Workgroup" %p, %x : f32
    %sb = spirv.mlir.addressof @sb : !spirv.ptr<!spirv.struct<(!spirv.array<256 x f32, stride=4> [0])>, StorageBuffer>
    %q = spirv.AccessChain %sb[%c0, %c0] : !spirv.ptr<!spirv.struct<(!spirv.array<256 x f32, stride=4> [0])>, StorageBuffer>, i32, i32 -> !spirv.ptr<f32, StorageBuffer>
    %y = spirv.Load "StorageBuffer" %q : f32
    %m = spirv.KHR.CooperativeMatrixLoad %p, %c16, <RowMajor> : !spirv.ptr<f32, Workgroup>, i32 -> !spirv.coopmatrix<16x16xf32, Subgroup, MatrixAcc>
    spirv.KHR.CooperativeMatrixStore %p, %m, %c16, <RowMajor> : !spirv.ptr<f32, Workgroup>, !spirv.coopmatrix<16x16xf32, Subgroup, MatrixAcc>, i32
    spirv.ControlBarrier <Workgroup>, <Workgroup>, <AcquireRelease|WorkgroupMemory>
    spirv.Return
  }
}
}

// -----

// Without cooperative matrices nothing changes.
// CHECK-LABEL: spirv.module @plain Logical GLSL450
// CHECK: spirv.Load "Workgroup" %{{.*}} : f32
// CHECK: spirv.ControlBarrier <Workgroup>, <Workgroup>, <AcquireRelease|WorkgroupMemory>
spirv.module @plain Logical GLSL450 requires #spirv.vce<v1.3, [Shader], []> {
  spirv.GlobalVariable @wg : !spirv.ptr<!spirv.array<4 x f32>, Workgroup>
  spirv.func @f() "None" {
    %c0 = spirv.Constant 0 : i32
    %wg = spirv.mlir.addressof @wg : !spirv.ptr<!spirv.array<4 x f32>, Workgroup>
    %p = spirv.AccessChain %wg[%c0] : !spirv.ptr<!spirv.array<4 x f32>, Workgroup>, i32 -> !spirv.ptr<f32, Workgroup>
    %x = spirv.Load "Workgroup" %p : f32
    spirv.ControlBarrier <Workgroup>, <Workgroup>, <AcquireRelease|WorkgroupMemory>
    spirv.Return
  }
}

// -----

// expected-error@+1 {{the module uses CooperativeMatrixKHR but its target environment does not allow VulkanMemoryModel}}
spirv.module @no_vmm Logical GLSL450 requires #spirv.vce<v1.6, [Shader, CooperativeMatrixKHR], [SPV_KHR_cooperative_matrix]> {
}
