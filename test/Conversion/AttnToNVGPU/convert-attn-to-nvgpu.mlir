// RUN: attn-opt %s -split-input-file -convert-attn-to-nvgpu | FileCheck %s

// Causal f16, D = 32: 4 warps (128 threads) per 64 query rows; K/V tiles of
// 64 keys in 16-byte aligned workgroup globals.
// CHECK-DAG: memref.global "private" @[[VT:__attn_tc_v_tile_[0-9]+]] : memref<64x32xf16, #gpu.address_space<workgroup>> = uninitialized {alignment = 16 : i64}
// CHECK-DAG: memref.global "private" @[[KT:__attn_tc_k_tile_[0-9]+]] : memref<64x32xf16, #gpu.address_space<workgroup>> = uninitialized {alignment = 16 : i64}
// CHECK-LABEL: func.func @causal
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: memref<1x2x100x32xf16, {{.*}}>, %[[K:[a-z0-9]+]]: memref<1x2x100x32xf16, {{.*}}>, %[[V:[a-z0-9]+]]: memref<1x2x100x32xf16, {{.*}}>, %[[OUT:[a-z0-9]+]]: memref<1x2x100x32xf16, {{.*}}>)
// CHECK-NOT: attn.sdpa
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}}) threads({{.*}}) in (%{{.+}} = %[[C128:.+]], %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}})
// CHECK: %[[KS:.+]] = memref.get_global @[[KT]]
// CHECK: %[[VS:.+]] = memref.get_global @[[VT]]
// Q's A fragments (D / 16 = 2) loaded once, rows past Sq as 0
// CHECK: memref.load %[[Q]]
// CHECK: %[[QA0:.+]] = vector.from_elements {{.*}} : vector<4x2xf16>
// CHECK: %[[QA1:.+]] = vector.from_elements {{.*}} : vector<4x2xf16>
// the key loop carries Dv / 8 = 4 accumulator fragments, 2 row maxima and
// 2 partial row sums
// CHECK: scf.for {{.*}} -> (vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, f32, f32, f32, f32)
// CHECK: gpu.barrier
// CHECK: memref.store %{{.+}}, %[[KS]]
// CHECK: memref.store %{{.+}}, %[[VS]]
// CHECK: gpu.barrier
// S = Q . K^T: B fragments of K by ldmatrix, one mma.sync per 16 of D
// CHECK: %[[KB:.+]] = nvgpu.ldmatrix %[[KS]][{{.*}}] {numTiles = 2 : i32, transpose = false}
// CHECK: %[[S0:.+]] = nvgpu.mma.sync(%[[QA0]], %[[KB]], %{{.+}}) {mmaShape = [16, 8, 16]}
// CHECK: %[[KB1:.+]] = nvgpu.ldmatrix %[[KS]]
// CHECK: nvgpu.mma.sync(%[[QA1]], %[[KB1]], %[[S0]])
// keys past Skv or above the diagonal are -inf
// CHECK: arith.cmpi uge
// CHECK: arith.cmpi sgt
// CHECK: arith.ori
// row max over the quad: xor shuffles 1 and 2
// CHECK: gpu.shuffle  xor %{{.+}}, %{{.+}}, %{{.+}} : f32
// CHECK: gpu.shuffle  xor
// alpha = exp2(m - m_safe), P = exp2(S - m_safe)
// CHECK: math.exp2
// P reused in registers as the A operand, V by transposed ldmatrix
// CHECK: arith.truncf %{{.+}} : f32 to f16
// CHECK: %[[PA:.+]] = vector.from_elements {{.*}} : vector<4x2xf16>
// CHECK: %[[VB:.+]] = nvgpu.ldmatrix %[[VS]][{{.*}}] {numTiles = 2 : i32, transpose = true}
// CHECK: nvgpu.mma.sync(%[[PA]], %[[VB]], %{{.+}}) {mmaShape = [16, 8, 16]}
// CHECK: scf.yield
// the partial row sums are completed over the quad, then out = acc / l
// CHECK: gpu.shuffle  xor
// CHECK: arith.divf
// CHECK: memref.store %{{.+}}, %[[OUT]]
func.func @causal(%q: memref<1x2x100x32xf16, strided<[?, ?, ?, 1], offset: ?>>,
                  %k: memref<1x2x100x32xf16, strided<[?, ?, ?, 1], offset: ?>>,
                  %v: memref<1x2x100x32xf16, strided<[?, ?, ?, 1], offset: ?>>,
                  %out: memref<1x2x100x32xf16, strided<[?, ?, ?, 1], offset: ?>>) {
  %qt = bufferization.to_tensor %q restrict : memref<1x2x100x32xf16, strided<[?, ?, ?, 1], offset: ?>> to tensor<1x2x100x32xf16>
  %kt = bufferization.to_tensor %k restrict : memref<1x2x100x32xf16, strided<[?, ?, ?, 1], offset: ?>> to tensor<1x2x100x32xf16>
  %vt = bufferization.to_tensor %v restrict : memref<1x2x100x32xf16, strided<[?, ?, ?, 1], offset: ?>> to tensor<1x2x100x32xf16>
  %o = attn.sdpa %qt, %kt, %vt causal
      : tensor<1x2x100x32xf16>, tensor<1x2x100x32xf16>, tensor<1x2x100x32xf16> -> tensor<1x2x100x32xf16>
  bufferization.materialize_in_destination %o in restrict writable %out
      : (tensor<1x2x100x32xf16>, memref<1x2x100x32xf16, strided<[?, ?, ?, 1], offset: ?>>) -> ()
  return
}

// -----

// What the tensor-core kernel does not support yet is left alone, for
// convert-attn-to-gpu: f32, a mask, D not a multiple of 16.
// CHECK-LABEL: func.func @unsupported
// CHECK-NOT: gpu.launch
// CHECK-COUNT-3: attn.sdpa
func.func @unsupported(%q: memref<1x1x8x16xf32>, %k: memref<1x1x8x16xf32>,
                       %v: memref<1x1x8x16xf32>, %out: memref<1x1x8x16xf32>,
                       %qh: memref<1x1x8x16xf16>, %m: memref<1x1x8x8xi1>,
                       %outh: memref<1x1x8x16xf16>, %q8: memref<1x1x8x8xf16>,
                       %out8: memref<1x1x8x8xf16>) {
  %qt = bufferization.to_tensor %q restrict : memref<1x1x8x16xf32> to tensor<1x1x8x16xf32>
  %kt = bufferization.to_tensor %k restrict : memref<1x1x8x16xf32> to tensor<1x1x8x16xf32>
  %vt = bufferization.to_tensor %v restrict : memref<1x1x8x16xf32> to tensor<1x1x8x16xf32>
  %o = attn.sdpa %qt, %kt, %vt
      : tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32> -> tensor<1x1x8x16xf32>
  bufferization.materialize_in_destination %o in restrict writable %out
      : (tensor<1x1x8x16xf32>, memref<1x1x8x16xf32>) -> ()
  %qht = bufferization.to_tensor %qh restrict : memref<1x1x8x16xf16> to tensor<1x1x8x16xf16>
  %mt = bufferization.to_tensor %m restrict : memref<1x1x8x8xi1> to tensor<1x1x8x8xi1>
  %oh = attn.sdpa %qht, %qht, %qht mask(%mt : tensor<1x1x8x8xi1>)
      : tensor<1x1x8x16xf16>, tensor<1x1x8x16xf16>, tensor<1x1x8x16xf16> -> tensor<1x1x8x16xf16>
  bufferization.materialize_in_destination %oh in restrict writable %outh
      : (tensor<1x1x8x16xf16>, memref<1x1x8x16xf16>) -> ()
  %q8t = bufferization.to_tensor %q8 restrict : memref<1x1x8x8xf16> to tensor<1x1x8x8xf16>
  %o8 = attn.sdpa %q8t, %q8t, %q8t
      : tensor<1x1x8x8xf16>, tensor<1x1x8x8xf16>, tensor<1x1x8x8xf16> -> tensor<1x1x8x8xf16>
  bufferization.materialize_in_destination %o8 in restrict writable %out8
      : (tensor<1x1x8x8xf16>, memref<1x1x8x8xf16>) -> ()
  return
}
