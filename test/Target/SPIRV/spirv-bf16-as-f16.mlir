// RUN: attn-opt %s --split-input-file --verify-diagnostics --attn-spirv-bf16-as-f16 | FileCheck %s

// attn-spirv-bf16-as-f16 requires a module without f16 beside its bf16
// (an error names the first f16 value otherwise); it guarantees that no
// bf16 is left (arguments, tensors, the attention's types, memrefs, f32
// untouched) and that the module is marked attn.coopmat_bf16 exactly when
// something was retyped.

// A bf16 attention with an f32 additive mask and lse: every bf16 becomes
// f16, f32 stays, the module is marked.
// CHECK-LABEL: module attributes {attn.coopmat_bf16}
// CHECK: func.func @bf16(%{{.*}}: memref<1x2x32x16xf16>, %{{.*}}: memref<1x2x64x16xf16>, %{{.*}}: memref<1x2x64x16xf16>, %{{.*}}: memref<1x2x32x64xf32>, %{{.*}}: memref<1x2x32x16xf16>, %{{.*}}: memref<1x2x32xf32>)
// CHECK: attn.sdpa {{.*}} : tensor<1x2x32x16xf16>, tensor<1x2x64x16xf16>, tensor<1x2x64x16xf16> -> tensor<1x2x32x16xf16>, tensor<1x2x32xf32>
// CHECK-NOT: bf16
func.func @bf16(%q: memref<1x2x32x16xbf16>, %k: memref<1x2x64x16xbf16>, %v: memref<1x2x64x16xbf16>, %mask: memref<1x2x32x64xf32>, %out: memref<1x2x32x16xbf16>, %lse: memref<1x2x32xf32>) {
  %q_t = bufferization.to_tensor %q restrict : memref<1x2x32x16xbf16> to tensor<1x2x32x16xbf16>
  %k_t = bufferization.to_tensor %k restrict : memref<1x2x64x16xbf16> to tensor<1x2x64x16xbf16>
  %v_t = bufferization.to_tensor %v restrict : memref<1x2x64x16xbf16> to tensor<1x2x64x16xbf16>
  %m_t = bufferization.to_tensor %mask restrict : memref<1x2x32x64xf32> to tensor<1x2x32x64xf32>
  %o, %l = attn.sdpa %q_t, %k_t, %v_t mask(%m_t : tensor<1x2x32x64xf32>) causal : tensor<1x2x32x16xbf16>, tensor<1x2x64x16xbf16>, tensor<1x2x64x16xbf16> -> tensor<1x2x32x16xbf16>, tensor<1x2x32xf32>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x2x32x16xbf16>, memref<1x2x32x16xbf16>) -> ()
  bufferization.materialize_in_destination %l in restrict writable %lse : (tensor<1x2x32xf32>, memref<1x2x32xf32>) -> ()
  return
}

// -----

// No bf16: untouched, not marked.
// CHECK-LABEL: {{^}}module {
// CHECK: func.func @f16(%{{.*}}: memref<1x1x16x16xf16>, %{{.*}}: memref<1x1x16x16xf16>, %{{.*}}: memref<1x1x16x16xf16>, %{{.*}}: memref<1x1x16x16xf16>)
func.func @f16(%q: memref<1x1x16x16xf16>, %k: memref<1x1x16x16xf16>, %v: memref<1x1x16x16xf16>, %out: memref<1x1x16x16xf16>) {
  %q_t = bufferization.to_tensor %q restrict : memref<1x1x16x16xf16> to tensor<1x1x16x16xf16>
  %k_t = bufferization.to_tensor %k restrict : memref<1x1x16x16xf16> to tensor<1x1x16x16xf16>
  %v_t = bufferization.to_tensor %v restrict : memref<1x1x16x16xf16> to tensor<1x1x16x16xf16>
  %o = attn.sdpa %q_t, %k_t, %v_t : tensor<1x1x16x16xf16>, tensor<1x1x16x16xf16>, tensor<1x1x16x16xf16> -> tensor<1x1x16x16xf16>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x1x16x16xf16>, memref<1x1x16x16xf16>) -> ()
  return
}

// -----

// An f16 additive mask on bf16 data would be indistinguishable from it.
func.func @mixed(%q: memref<1x1x16x16xbf16>, %k: memref<1x1x16x16xbf16>, %v: memref<1x1x16x16xbf16>, %mask: memref<1x1x16x16xf16>, %out: memref<1x1x16x16xbf16>) {
  %q_t = bufferization.to_tensor %q restrict : memref<1x1x16x16xbf16> to tensor<1x1x16x16xbf16>
  %k_t = bufferization.to_tensor %k restrict : memref<1x1x16x16xbf16> to tensor<1x1x16x16xbf16>
  %v_t = bufferization.to_tensor %v restrict : memref<1x1x16x16xbf16> to tensor<1x1x16x16xbf16>
  // expected-error @+1 {{attn-spirv-bf16-as-f16: f16 beside bf16 data would be indistinguishable from it}}
  %m_t = bufferization.to_tensor %mask restrict : memref<1x1x16x16xf16> to tensor<1x1x16x16xf16>
  %o = attn.sdpa %q_t, %k_t, %v_t mask(%m_t : tensor<1x1x16x16xf16>) : tensor<1x1x16x16xbf16>, tensor<1x1x16x16xbf16>, tensor<1x1x16x16xbf16> -> tensor<1x1x16x16xbf16>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x1x16x16xbf16>, memref<1x1x16x16xbf16>) -> ()
  return
}
