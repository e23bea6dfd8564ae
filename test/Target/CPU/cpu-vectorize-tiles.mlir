// RUN: attn-opt %s --split-input-file -attn-cpu-vectorize-tiles | FileCheck %s
// RUN: attn-opt %s --split-input-file -attn-cpu-vectorize-tiles="lanes=8 rows=4 vectors=3" | FileCheck %s --check-prefix=AVX2
// RUN: not attn-opt %s --split-input-file -attn-cpu-vectorize-tiles="lanes=0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD

// attn-cpu-vectorize-tiles requires tensors; it guarantees the same values
// computed by vector code: a contraction as a packed f32 panel (K^T in
// lanes x lanes blocks transposed in registers, converted operands once)
// and rows x (vectors * lanes) register tiles whose accumulator stays in
// vector iter_args across the k loop and whose update is one vector.fma;
// the full tiles unmasked, the peeled edges masked (their accumulators in
// vector iter_args too, read and written under the mask outside the k
// loop); every other op with a
// bounded extent vectorized a row at a time; exp2 as a polynomial with
// exp2(-inf) = 0; an op without bounds left alone.
// BAD: attn-cpu-vectorize-tiles: lanes, rows, vectors and max-vector must be positive

// Q.K^T, f16, static: Q converted a row at a time, K packed transposed in
// 16 x 16 blocks, 8 x 32 register tiles, k innermost with an FMA per step.
// CHECK-LABEL: func.func @qk
// CHECK-NOT:   linalg.generic
// CHECK:       scf.for
// CHECK:         vector.transfer_write %{{.*}} : vector<64xf32>, tensor<1x64xf32>
// CHECK:       scf.for
// CHECK:         vector.transfer_read %arg0[{{.*}}]{{.*}} : tensor<64x64xf16>, vector<64xf16>
// CHECK:         arith.extf %{{.*}} : vector<64xf16> to vector<64xf32>
// CHECK:       %[[KT:.*]] = scf.for %[[I:.*]] = %c0 to %c64 step %c16
// CHECK:         scf.for %[[J:.*]] = %c0 to %c64 step %c16
// CHECK:           vector.transfer_read %arg1[%[[I]], %[[J]]]{{.*}} : tensor<64x64xf16>, vector<16x16xf16>
// CHECK:           arith.extf
// CHECK:           vector.transpose %{{.*}}, [1, 0] : vector<16x16xf32> to vector<16x16xf32>
// CHECK:           vector.transfer_write %{{.*}}[%[[J]], %[[I]]]
// CHECK:       scf.for %{{.*}} = %c0 to %c64 step %c8
// CHECK:         scf.for %{{.*}} = %c0 to %c64 step %c32
// CHECK:           %[[ACC:.*]] = vector.transfer_read {{.*}} : tensor<8x32xf32>, vector<8x32xf32>
// CHECK:           %[[K:.*]] = scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args(%[[A:.*]] = %[[ACC]]) -> (vector<8x32xf32>)
// CHECK-NOT:         vector.transfer_write
// CHECK:             %[[F:.*]] = vector.fma %{{.*}}, %{{.*}}, %[[A]] : vector<8x32xf32>
// CHECK:             scf.yield %[[F]]
// CHECK:           vector.transfer_write %[[K]]
// AVX2-LABEL: func.func @qk
// AVX2:         vector.transpose %{{.*}}, [1, 0] : vector<8x8xf32> to vector<8x8xf32>
// AVX2:         scf.for %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<4x24xf32>)
// AVX2:           vector.fma %{{.*}} : vector<4x24xf32>
#qk_q = affine_map<(m, n, k) -> (m, k)>
#qk_k = affine_map<(m, n, k) -> (n, k)>
#qk_s = affine_map<(m, n, k) -> (m, n)>
func.func @qk(%q: tensor<64x64xf16>, %k: tensor<64x64xf16>) -> tensor<64x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %s = linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_s],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<64x64xf16>, tensor<64x64xf16>) outs(%init : tensor<64x64xf32>) {
  ^bb0(%a: f16, %b: f16, %acc: f32):
    %a32 = arith.extf %a : f16 to f32
    %b32 = arith.extf %b : f16 to f32
    %p = arith.mulf %a32, %b32 fastmath<contract> : f32
    %r = arith.addf %acc, %p fastmath<reassoc,contract> : f32
    linalg.yield %r : f32
  } -> tensor<64x64xf32>
  return %s : tensor<64x64xf32>
}

// -----

// P.V with a bounded dynamic extent (at most 64 rows), V bf16: V converted
// once into a static panel (rows beyond the extent read as zero), the m
// loop peeled: full 8-row tiles unmasked, the last < 8 rows masked in the
// full tile's vector shape (8 x 32, not the bound 7 x 32), with the masked
// accumulator read before the k loop, carried as a vector and written
// after it (a decode step's 1-7 rows run in this tile).
// CHECK-LABEL: func.func @pv
// CHECK:       %[[M:.*]] = affine.min
// CHECK:       vector.transfer_read %{{.*}} {in_bounds = [true]} : tensor<?x64xbf16>, vector<64xbf16>
// CHECK:       %[[SPLIT:.*]] = affine.apply
// CHECK:       scf.for %{{.*}} = %c0 to %[[SPLIT]] step %c8
// CHECK:         scf.for %{{.*}} = %c0 to %c64 step %c32
// CHECK:           scf.for %{{.*}} = %c0 to %[[M]] step %c1 iter_args(%{{.*}}) -> (vector<8x32xf32>)
// CHECK:             vector.fma
// CHECK:       scf.for %{{.*}} = %[[SPLIT]] to %[[M]] step %c8
// CHECK:         %[[EM:.*]] = vector.create_mask %{{.*}}, %c32 : vector<8x32xi1>
// CHECK:           %[[EACC:.*]] = vector.transfer_read {{.*}}, %[[EM]] {{.*}} : tensor<?x32xf32>, vector<8x32xf32>
// CHECK:           %[[EK:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %[[EACC]]) -> (vector<8x32xf32>)
// CHECK-NOT:         vector.transfer_write
// CHECK:             scf.yield
// CHECK:           vector.transfer_write %[[EK]], {{.*}}, %[[EM]] {{.*}} : vector<8x32xf32>, tensor<?x32xf32>
#pv_p = affine_map<(m, k, n) -> (m, k)>
#pv_v = affine_map<(m, k, n) -> (k, n)>
#pv_o = affine_map<(m, k, n) -> (m, n)>
#rows = affine_map<()[s0] -> (64, s0)>
func.func @pv(%p: tensor<?x?xf32>, %v: tensor<?x64xbf16>, %o: tensor<?x64xf32>, %n: index) -> tensor<?x64xf32> {
  %m = affine.min #rows()[%n]
  %p1 = tensor.extract_slice %p[0, 0] [%m, %m] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
  %v1 = tensor.extract_slice %v[0, 0] [%m, 64] [1, 1] : tensor<?x64xbf16> to tensor<?x64xbf16>
  %o1 = tensor.extract_slice %o[0, 0] [%m, 64] [1, 1] : tensor<?x64xf32> to tensor<?x64xf32>
  %r = linalg.generic {indexing_maps = [#pv_p, #pv_v, #pv_o],
                       iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%p1, %v1 : tensor<?x?xf32>, tensor<?x64xbf16>) outs(%o1 : tensor<?x64xf32>) {
  ^bb0(%a: f32, %b: bf16, %acc: f32):
    %b32 = arith.extf %b : bf16 to f32
    %x = arith.mulf %a, %b32 fastmath<contract> : f32
    %y = arith.addf %acc, %x fastmath<reassoc,contract> : f32
    linalg.yield %y : f32
  } -> tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}

// -----

// Rows: the exponentials (a polynomial, -inf selected to 0) and the row sum
// as 1-D vectors of the bounded extent (64), masked to the live columns.
// The sum's masked-off lanes are -0 before an unmasked reduction, which the
// cpu pipeline's convert-vector-to-llvm reassociates (its masked add is
// llvm.vp.reduce.fadd without reassociation: an ordered sum, key by key
// onto the running sum).
// CHECK-LABEL: func.func @rows
// CHECK-DAG:   %[[NEGINF:.*]] = arith.constant dense<0xFF800000> : vector<64xf32>
// CHECK-DAG:   %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<64xf32>
// CHECK-DAG:   %[[NEGZERO:.*]] = arith.constant dense<-0.000000e+00> : vector<64xf32>
// CHECK-NOT:   math.exp
// CHECK:       affine.min
// CHECK:       scf.for
// CHECK:         %[[MASK:.*]] = vector.create_mask %{{.*}} : vector<64xi1>
// CHECK:         %[[X:.*]] = vector.transfer_read %{{.*}}, %[[MASK]]
// CHECK:         %[[D:.*]] = arith.subf %[[X]]
// CHECK:         math.floor
// CHECK:         %[[INF:.*]] = arith.cmpf oeq, %[[D]], %[[NEGINF]] : vector<64xf32>
// CHECK:         %[[E:.*]] = arith.select %[[INF]], %[[ZERO]], %{{.*}} : vector<64xi1>, vector<64xf32>
// CHECK:         vector.transfer_write %[[E]], %{{.*}}[%c0], %[[MASK]] {{.*}} : vector<64xf32>, tensor<?xf32>
// CHECK:       scf.for
// CHECK:         %[[SMASK:.*]] = vector.create_mask %{{.*}} : vector<64xi1>
// CHECK:         %[[P:.*]] = vector.transfer_read %{{.*}}, %[[SMASK]]
// CHECK:         %[[PL:.*]] = arith.select %[[SMASK]], %[[P]], %[[NEGZERO]] : vector<64xi1>, vector<64xf32>
// CHECK:         vector.reduction <add>, %[[PL]], %{{.*}} : vector<64xf32> into f32
// CHECK-NOT:   vector.mask
// CHECK-NOT:   linalg.generic
#cols = affine_map<()[s0] -> (64, s0)>
#id2 = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
func.func @rows(%s: tensor<64x?xf32>, %max: tensor<64xf32>, %n: index) -> (tensor<64x?xf32>, tensor<64xf32>) {
  %c = affine.min #cols()[%n]
  %s1 = tensor.extract_slice %s[0, 0] [64, %c] [1, 1] : tensor<64x?xf32> to tensor<64x?xf32>
  %e = tensor.empty(%c) : tensor<64x?xf32>
  %p = linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%s1, %max : tensor<64x?xf32>, tensor<64xf32>) outs(%e : tensor<64x?xf32>) {
  ^bb0(%x: f32, %m: f32, %out: f32):
    %d = arith.subf %x, %m : f32
    %y = math.exp2 %d fastmath<afn> : f32
    linalg.yield %y : f32
  } -> tensor<64x?xf32>
  %zero = arith.constant 0.0 : f32
  %z = tensor.empty() : tensor<64xf32>
  %init = linalg.fill ins(%zero : f32) outs(%z : tensor<64xf32>) -> tensor<64xf32>
  %sum = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%p : tensor<64x?xf32>) outs(%init : tensor<64xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.addf %acc, %x fastmath<reassoc,contract> : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  return %p, %sum : tensor<64x?xf32>, tensor<64xf32>
}

// -----

// A row max over masked columns: the masked-off lanes are -inf before an
// unmasked reduction (convert-vector-to-llvm's masked maximumf would fill
// them with -1.4e-45, the max of a row of negative scores).
// CHECK-LABEL: func.func @row_max
// CHECK-DAG:   %[[NEGINF:.*]] = arith.constant dense<0xFF800000> : vector<64xf32>
// CHECK:       scf.for
// CHECK:         %[[MASK:.*]] = vector.create_mask %{{.*}} : vector<64xi1>
// CHECK:         %[[X:.*]] = vector.transfer_read %{{.*}}, %[[MASK]]
// CHECK:         %[[L:.*]] = arith.select %[[MASK]], %[[X]], %[[NEGINF]] : vector<64xi1>, vector<64xf32>
// CHECK:         vector.reduction <maximumf>, %[[L]], %{{.*}} : vector<64xf32> into f32
// CHECK-NOT:   vector.mask
// CHECK:       return
#cols = affine_map<()[s0] -> (64, s0)>
#id2 = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
func.func @row_max(%s: tensor<64x?xf32>, %n: index) -> tensor<64xf32> {
  %c = affine.min #cols()[%n]
  %s1 = tensor.extract_slice %s[0, 0] [64, %c] [1, 1] : tensor<64x?xf32> to tensor<64x?xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %z = tensor.empty() : tensor<64xf32>
  %init = linalg.fill ins(%ninf : f32) outs(%z : tensor<64xf32>) -> tensor<64xf32>
  %max = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%s1 : tensor<64x?xf32>) outs(%init : tensor<64xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.maximumf %acc, %x : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  return %max : tensor<64xf32>
}

// -----

// No constant bound on the extent: the op stays, its exp2 a scalar
// polynomial with the same -inf guard.
// CHECK-LABEL: func.func @unbounded
// CHECK:       linalg.generic
// CHECK:         math.floor %{{.*}} : f32
// CHECK:         arith.cmpf oeq, %{{.*}}, %{{.*}} : f32
// CHECK:         arith.select
// CHECK-NOT:   vector.
#id1 = affine_map<(i) -> (i)>
func.func @unbounded(%a: tensor<?xf32>) -> tensor<?xf32> {
  %r = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%a : tensor<?xf32>) outs(%a : tensor<?xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.exp2 %x : f32
    linalg.yield %y : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}
