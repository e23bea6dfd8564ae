// RUN: attn-opt %s --split-input-file -attn-cpu-vectorize-tiles="bf16-dot=true" | FileCheck %s
// RUN: attn-opt %s --split-input-file -attn-cpu-vectorize-tiles | FileCheck %s --check-prefix=FMA

// bf16-dot: Q·Kᵀ of bf16 tiles (K's rows a bounded dynamic extent, at
// most 64) as AVX512-BF16 dot products. K is packed into a 32 x 64 panel
// of bf16 pairs (16 x 16 blocks of pairs read whole, rows past the extent
// as zero in the last block only, transposed as i32 in registers), Q into
// 16 x 32 pairs; 8 x 32 register tiles accumulate one
// `x86vector.avx512.dot` per pair of k, and the live 16 x n part of the
// result is sliced out.
// CHECK-LABEL: func.func @qk_bf16
// CHECK:       %[[PANEL:.*]] = scf.for %{{.*}} = %c0 to %c64 step %c16
// CHECK:         %[[FULL:.*]] = arith.cmpi sle
// CHECK:         scf.for %{{.*}} = %c0 to %c32 step %c16
// CHECK:           scf.if %[[FULL]] -> (vector<16x32xbf16>)
// CHECK:             vector.transfer_read {{.*}} {in_bounds = [true, true]} : tensor<?x64xbf16>, vector<16x32xbf16>
// CHECK:           } else {
// CHECK:             vector.transfer_read {{.*}} {in_bounds = [false, true]} : tensor<?x64xbf16>, vector<16x32xbf16>
// CHECK:           vector.bitcast %{{.*}} : vector<16x32xbf16> to vector<16x16xi32>
// CHECK:           vector.transpose %{{.*}}, [1, 0] : vector<16x16xi32> to vector<16x16xi32>
// CHECK:           vector.transfer_write %{{.*}} : vector<16x16xi32>, tensor<32x64xi32>
// CHECK:       %[[PAIRS:.*]] = scf.for %{{.*}} = %c0 to %c16 step %c1
// CHECK:         vector.bitcast %{{.*}} : vector<64xbf16> to vector<32xi32>
// CHECK:       scf.for %{{.*}} = %c0 to %c16 step %c8
// CHECK:         scf.for %{{.*}} = %c0 to %c64 step %c32
// CHECK:           scf.for %{{.*}} = %c0 to %c32 step %c1 iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>
// CHECK:             vector.transfer_read %[[PANEL]]{{.*}} : tensor<32x64xi32>, vector<16xi32>
// CHECK:             vector.transfer_read %[[PAIRS]]{{.*}} : tensor<16x32xi32>, vector<16xi32>
// CHECK-COUNT-16:    x86vector.avx512.dot %{{.*}} : vector<32xbf16> -> vector<16xf32>
// CHECK:             scf.yield
// CHECK:       tensor.extract_slice %{{.*}}[0, 0] [16, %{{.*}}] [1, 1] : tensor<16x64xf32> to tensor<16x?xf32>
// CHECK-NOT:   linalg.generic
// FMA-LABEL: func.func @qk_bf16
// FMA-NOT:     x86vector
// FMA:         vector.fma
#cols = affine_map<()[s0] -> (64, s0)>
#qk_q = affine_map<(m, n, k) -> (m, k)>
#qk_k = affine_map<(m, n, k) -> (n, k)>
#qk_s = affine_map<(m, n, k) -> (m, n)>
func.func @qk_bf16(%q: tensor<16x64xbf16>, %kfull: tensor<?x64xbf16>, %n: index) -> tensor<16x?xf32> {
  %c = affine.min #cols()[%n]
  %k = tensor.extract_slice %kfull[0, 0] [%c, 64] [1, 1] : tensor<?x64xbf16> to tensor<?x64xbf16>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%c) : tensor<16x?xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<16x?xf32>) -> tensor<16x?xf32>
  %s = linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_s],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<16x64xbf16>, tensor<?x64xbf16>) outs(%init : tensor<16x?xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %p = arith.mulf %a32, %b32 fastmath<contract> : f32
    %r = arith.addf %acc, %p fastmath<reassoc,contract> : f32
    linalg.yield %r : f32
  } -> tensor<16x?xf32>
  return %s : tensor<16x?xf32>
}

// -----

// Not for the dot products: f16 operands, a k that is not a multiple of
// 32, P·V (its left operand f32, its right one [k, n]); these keep the FMA
// micro-kernel.
// CHECK-LABEL: func.func @not_dot
// CHECK-NOT:   x86vector
// CHECK:       return
#qk_q = affine_map<(m, n, k) -> (m, k)>
#qk_k = affine_map<(m, n, k) -> (n, k)>
#qk_s = affine_map<(m, n, k) -> (m, n)>
#pv_v = affine_map<(m, n, k) -> (k, n)>
func.func @not_dot(%qh: tensor<16x64xf16>, %kh: tensor<64x64xf16>, %q: tensor<16x48xbf16>, %k: tensor<64x48xbf16>,
                   %p: tensor<16x64xf32>, %v: tensor<64x64xbf16>) -> (tensor<16x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x64xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<16x64xf32>) -> tensor<16x64xf32>
  %s1 = linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_s],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%qh, %kh : tensor<16x64xf16>, tensor<64x64xf16>) outs(%init : tensor<16x64xf32>) {
  ^bb0(%a: f16, %b: f16, %acc: f32):
    %a32 = arith.extf %a : f16 to f32
    %b32 = arith.extf %b : f16 to f32
    %m = arith.mulf %a32, %b32 fastmath<contract> : f32
    %r = arith.addf %acc, %m fastmath<reassoc,contract> : f32
    linalg.yield %r : f32
  } -> tensor<16x64xf32>
  %s2 = linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_s],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<16x48xbf16>, tensor<64x48xbf16>) outs(%init : tensor<16x64xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %m = arith.mulf %a32, %b32 fastmath<contract> : f32
    %r = arith.addf %acc, %m fastmath<reassoc,contract> : f32
    linalg.yield %r : f32
  } -> tensor<16x64xf32>
  %o = linalg.generic {indexing_maps = [#qk_q, #pv_v, #qk_s],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<16x64xf32>, tensor<64x64xbf16>) outs(%init : tensor<16x64xf32>) {
  ^bb0(%a: f32, %b: bf16, %acc: f32):
    %b32 = arith.extf %b : bf16 to f32
    %m = arith.mulf %a, %b32 fastmath<contract> : f32
    %r = arith.addf %acc, %m fastmath<reassoc,contract> : f32
    linalg.yield %r : f32
  } -> tensor<16x64xf32>
  return %s1, %s2, %o : tensor<16x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>
}
