// RUN: attn-opt %s --split-input-file --attn-spirv-16bit-storage --verify-diagnostics | FileCheck %s
// RUN: attn-opt %S/Inputs/16bit-storage.mlir --attn-to-spirv-pipeline="f16=0" | FileCheck %s --check-prefix=PIPE
// RUN: attn-opt %S/Inputs/16bit-storage.mlir --attn-to-spirv-pipeline="variant=coopmat-scalar f16=0" | FileCheck %s --check-prefix=PIPE
// RUN: sed s/f16/bf16/g %S/Inputs/16bit-storage.mlir | attn-opt --attn-to-spirv-pipeline="int16=0" | FileCheck %s --check-prefix=PIPEBF16

// attn-spirv-16bit-storage guarantees that a gpu.module holding f16 buffers
// whose #spirv.target_env lacks Float16, or i16 buffers (bf16 data) whose
// target lacks Int16, declares no 16-bit storage (so the SPIR-V conversion
// emulates them with 32-bit words instead of failing on every load), and
// changes nothing else.

// f16 kernel arguments, 16-bit storage and Int16 (int16=1) without
// Float16 (f16=0): the 16-bit storage capabilities go, Int16, the
// extensions, the limits and the NVVM target beside it stay.
// CHECK-LABEL: gpu.module @f16_no_float16
// CHECK-SAME: [#nvvm.target, #spirv.target_env<#spirv.vce<v1.3, [Shader, Int16], [SPV_KHR_storage_buffer_storage_class, SPV_KHR_16bit_storage]>, api=Vulkan, #spirv.resource_limits<subgroup_size = 8>>]
gpu.module @f16_no_float16 [#nvvm.target, #spirv.target_env<#spirv.vce<v1.3, [Shader, StorageBuffer16BitAccess, StorageUniform16, StoragePushConstant16, Int16], [SPV_KHR_storage_buffer_storage_class, SPV_KHR_16bit_storage]>, api=Vulkan, #spirv.resource_limits<subgroup_size = 8>>] {
  gpu.func @k(%a: memref<8xf16>) kernel {
    gpu.return
  }
}

// -----

// An f16 buffer made inside the kernel counts too.
// CHECK-LABEL: gpu.module @f16_alloc
// CHECK-SAME: [#spirv.target_env<#spirv.vce<v1.3, [Shader], []>, #spirv.resource_limits<>>]
gpu.module @f16_alloc [#spirv.target_env<#spirv.vce<v1.3, [Shader, StorageBuffer16BitAccess], []>, #spirv.resource_limits<>>] {
  gpu.func @k() kernel {
    %a = memref.alloca() : memref<4xf16>
    gpu.return
  }
}

// -----

// With Float16 the target has what 16-bit storage needs: unchanged.
// CHECK-LABEL: gpu.module @f16_with_float16
// CHECK-SAME: [#spirv.target_env<#spirv.vce<v1.3, [Shader, Float16, StorageBuffer16BitAccess], [SPV_KHR_16bit_storage]>, #spirv.resource_limits<>>]
gpu.module @f16_with_float16 [#spirv.target_env<#spirv.vce<v1.3, [Shader, Float16, StorageBuffer16BitAccess], [SPV_KHR_16bit_storage]>, #spirv.resource_limits<>>] {
  gpu.func @k(%a: memref<8xf16>) kernel {
    gpu.return
  }
}

// -----

// bf16 data as i16 buffers with Int16 (int16=1, f16=0): unchanged.
// CHECK-LABEL: gpu.module @i16_buffers
// CHECK-SAME: [#spirv.target_env<#spirv.vce<v1.3, [Shader, StorageBuffer16BitAccess, Int16], [SPV_KHR_16bit_storage]>, #spirv.resource_limits<>>]
gpu.module @i16_buffers [#spirv.target_env<#spirv.vce<v1.3, [Shader, StorageBuffer16BitAccess, Int16], [SPV_KHR_16bit_storage]>, #spirv.resource_limits<>>] {
  gpu.func @k(%a: memref<8xi16>) kernel {
    gpu.return
  }
}

// -----

// i16 buffers without Int16 (bf16 data, f16=1 int16=0): the 16-bit
// storage goes (Float16 stays: the module may compute in f16).
// CHECK-LABEL: gpu.module @i16_no_int16
// CHECK-SAME: [#spirv.target_env<#spirv.vce<v1.3, [Shader, Float16], [SPV_KHR_16bit_storage]>, #spirv.resource_limits<>>]
gpu.module @i16_no_int16 [#spirv.target_env<#spirv.vce<v1.3, [Shader, Float16, StorageBuffer16BitAccess], [SPV_KHR_16bit_storage]>, #spirv.resource_limits<>>] {
  gpu.func @k(%a: memref<8xi16>) kernel {
    gpu.return
  }
}

// -----

// Both kinds (bf16 data as i16 with an f16 mask) without Int16: refused
// with the reason (emulating only one kind does not lower; before, every
// load failed to legalize).
// CHECK-NOT: gpu.module @both_kinds [
// expected-error @+1 {{bf16 data (16-bit integer buffers) with an f16 mask needs both Float16 and Int16 on a target with 16-bit storage, and this one lacks Int16: give the mask as bf16 or f32, or the data as f16}}
gpu.module @both_kinds [#spirv.target_env<#spirv.vce<v1.3, [Shader, Float16, StorageBuffer16BitAccess], [SPV_KHR_16bit_storage]>, #spirv.resource_limits<>>] {
  gpu.func @k(%a: memref<8xi16>, %m: memref<8xf16>) kernel {
    gpu.return
  }
}

// -----

// Both kinds with Float16 and Int16: unchanged; without 16-bit storage
// (both emulated in 32-bit words): unchanged.
// CHECK-LABEL: gpu.module @both_kinds_ok
// CHECK-SAME: [#spirv.target_env<#spirv.vce<v1.3, [Shader, Float16, Int16, StorageBuffer16BitAccess], [SPV_KHR_16bit_storage]>, #spirv.resource_limits<>>]
gpu.module @both_kinds_ok [#spirv.target_env<#spirv.vce<v1.3, [Shader, Float16, Int16, StorageBuffer16BitAccess], [SPV_KHR_16bit_storage]>, #spirv.resource_limits<>>] {
  gpu.func @k(%a: memref<8xi16>, %m: memref<8xf16>) kernel {
    gpu.return
  }
}
// CHECK-LABEL: gpu.module @both_kinds_words
// CHECK-SAME: [#spirv.target_env<#spirv.vce<v1.3, [Shader], []>, #spirv.resource_limits<>>]
gpu.module @both_kinds_words [#spirv.target_env<#spirv.vce<v1.3, [Shader], []>, #spirv.resource_limits<>>] {
  gpu.func @k(%a: memref<8xi16>, %m: memref<8xf16>) kernel {
    gpu.return
  }
}

// -----

// No SPIR-V target: left alone.
// CHECK-LABEL: gpu.module @no_target
// CHECK-NOT: spirv.target_env
gpu.module @no_target {
  gpu.func @k(%a: memref<8xf16>) kernel {
    gpu.return
  }
}

// The pipeline with f16=0 and its default int16=1 on f16 data (which
// failed to legalize every f16 load before this step): f16 as 32-bit
// words, a module that requires neither Float16 nor 16-bit storage.
// PIPE: spirv.module @{{.+}} requires #spirv.vce<v1.0, [Shader{{(, Matrix)?}}], [SPV_KHR_storage_buffer_storage_class]>
// PIPE-NOT: f16
// PIPE: spirv.EntryPoint
// bf16 data with int16=0 (and f16=1): the i16 buffers as 32-bit words.
// PIPEBF16: spirv.module @{{.+}} requires #spirv.vce<v1.0, [Shader{{(, Matrix)?}}], [SPV_KHR_storage_buffer_storage_class]>
// PIPEBF16-NOT: i16
// PIPEBF16: spirv.EntryPoint
