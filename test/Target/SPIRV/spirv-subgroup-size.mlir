// RUN: attn-opt %s --split-input-file --verify-diagnostics --attn-spirv-subgroup-size=size=8 | FileCheck %s
// RUN: not attn-opt %s --split-input-file --attn-spirv-subgroup-size=size=0 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not attn-opt %s --split-input-file --attn-spirv-subgroup-size=size=256 2>&1 | FileCheck %s --check-prefix=RANGE256

// attn-spirv-subgroup-size requires `size` in [1, 128] and a
// #spirv.target_env among the targets of every gpu.module (what
// spirv-attach-target adds); it guarantees that every such target's
// resource limits say subgroup_size = size (gpu.shuffle lowers only at that
// width), the rest of the target as it was, and that a module with
// gpu.modules carries attn.spirv_subgroup_size = size (the launch
// metadata's required subgroup size).
// RANGE: error: attn-spirv-subgroup-size: size is 0; it must be in [1, 128]
// RANGE256: error: attn-spirv-subgroup-size: size is 256; it must be in [1, 128]

// Both SPIR-V targets get 8, whatever they said (the default 32, or 64);
// their other limits, the version, capabilities, extensions and client API
// stay; the NVVM target beside one is untouched; the module is marked.
// CHECK-LABEL: module attributes {attn.spirv_subgroup_size = 8 : i32, gpu.container_module}
// CHECK: gpu.module @a [#spirv.target_env<#spirv.vce<v1.3, [Shader, GroupNonUniformShuffle], [SPV_KHR_storage_buffer_storage_class]>, api=Vulkan, #spirv.resource_limits<max_compute_workgroup_invocations = 256, subgroup_size = 8>>]
// CHECK: gpu.module @b [#nvvm.target, #spirv.target_env<#spirv.vce<v1.6, [Shader], []>, #spirv.resource_limits<subgroup_size = 8, min_subgroup_size = 4>>]
module attributes {gpu.container_module} {
  gpu.module @a [#spirv.target_env<#spirv.vce<v1.3, [Shader, GroupNonUniformShuffle], [SPV_KHR_storage_buffer_storage_class]>, api=Vulkan, #spirv.resource_limits<max_compute_workgroup_invocations = 256>>] {
  }
  gpu.module @b [#nvvm.target, #spirv.target_env<#spirv.vce<v1.6, [Shader], []>, #spirv.resource_limits<subgroup_size = 64, min_subgroup_size = 4>>] {
  }
}

// -----

// No gpu.module: nothing to record, the module is not marked.
// CHECK-LABEL: func.func @host
// CHECK-NOT: attn.spirv_subgroup_size
module {
  func.func @host() {
    return
  }
}

// -----

// A gpu.module without a SPIR-V target (spirv-attach-target has not run).
module attributes {gpu.container_module} {
  // expected-error @+1 {{attn-spirv-subgroup-size: the gpu.module has no #spirv.target_env target (run spirv-attach-target first)}}
  gpu.module @c [#nvvm.target] {
  }
}
