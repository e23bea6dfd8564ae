// RUN: attn-opt %s -split-input-file -convert-attn-to-gpu="block-q=32" -verify-diagnostics | FileCheck %s
// RUN: attn-opt %s -split-input-file -convert-attn-to-gpu="block-q=32 spirv=true shared-memory-bytes=32768" -verify-diagnostics | FileCheck %s --check-prefix=SPIRV
// RUN: not attn-opt %s -split-input-file -convert-attn-to-gpu="block-q=32 spirv=true shared-memory-bytes=96" 2>&1 | FileCheck %s --check-prefix=SMALL
// RUN: attn-opt %s -split-input-file -convert-attn-to-gpu="block-q=32 kv-splits=2" -verify-diagnostics | FileCheck %s --check-prefix=SPLIT

// Causal f16, static shapes: a workgroup per (query block, head, batch), a
// thread per row, K/V tiles of 64 keys in workgroup memory.
// CHECK-LABEL: func.func @causal
// CHECK-SAME: (%[[Q:.+]]: memref<1x2x100x64xf16, {{.*}}>, %[[K:.+]]: memref<1x2x100x64xf16, {{.*}}>, %[[V:.+]]: memref<1x2x100x64xf16, {{.*}}>, %[[OUT:.+]]: memref<1x2x100x64xf16, {{.*}}>)
// CHECK-NOT: bufferization
// CHECK-NOT: attn.sdpa
// grid x = ceildiv(Sq = 100, 32) = 4, y = Hq, z = B; 32 threads
// CHECK: gpu.launch blocks(%[[BX:.+]], %[[BY:.+]], %[[BZ:.+]]) in (%{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) threads(%[[TX:.+]], %{{.+}}, %{{.+}}) in
// CHECK-SAME: workgroup(%[[KS:.+]] : memref<64x64xf16, #gpu.address_space<workgroup>>, %[[VS:.+]] : memref<64x64xf16, #gpu.address_space<workgroup>>)
// row i = block x * 32 + thread x
// CHECK: %[[ROW0:.+]] = arith.muli %[[BX]], %{{.+}} : index
// CHECK: %[[I:.+]] = arith.addi %[[ROW0]], %[[TX]] : index
// CHECK: %[[VALID:.+]] = arith.cmpi ult, %[[I]], %{{.+}} : index
// private q row, accumulator, scores
// CHECK: %[[QROW:.+]] = memref.alloca() : memref<64xf32>
// CHECK: %[[ACC:.+]] = memref.alloca() : memref<64xf32>
// CHECK: %[[S:.+]] = memref.alloca() : memref<64xf32>
// q * (scale log2 e) = q * 0.125 * 1.4427
// CHECK: scf.if %[[VALID]]
// CHECK: memref.load %[[Q]][%[[BZ]], %[[BY]], %[[I]], %{{.+}}]
// CHECK: arith.extf
// CHECK: arith.mulf %{{.+}}, %{{.+}} : f32
// causal: the key loop ends at the block's last visible key
// CHECK: arith.minui
// CHECK: arith.maxsi
// CHECK: arith.minsi
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[M:.+]] = %{{.+}}, %[[L:.+]] = %{{.+}}) -> (f32, f32)
// CHECK: gpu.barrier
// cooperative tile loads, striding by the 32 threads
// CHECK: scf.for %[[E:.+]] = %[[TX]] to %{{.+}} step %{{.+}} {
// CHECK: memref.load %[[K]]
// CHECK: memref.store %{{.+}}, %[[KS]]
// CHECK: memref.load %[[V]]
// CHECK: memref.store %{{.+}}, %[[VS]]
// CHECK: gpu.barrier
// CHECK: scf.if %[[VALID]] -> (f32, f32)
// S = q . K^T; -inf above the diagonal; rowmax
// CHECK: memref.load %[[KS]]
// CHECK: arith.cmpi sgt
// CHECK: arith.select %{{.+}}, %{{.+}}, %{{.+}} : f32
// CHECK: memref.store %{{.+}}, %[[S]]
// CHECK: arith.maximumf
// m' = max(m, rowmax); m_safe = m' == -inf ? 0 : m'; alpha = exp2(m - m_safe)
// CHECK: %[[MNEW:.+]] = arith.maximumf %[[M]], %{{.+}} : f32
// CHECK: %[[ISINF:.+]] = arith.cmpf oeq, %[[MNEW]], %{{.+}} : f32
// CHECK: %[[MSAFE:.+]] = arith.select %[[ISINF]], %{{.+}}, %[[MNEW]] : f32
// CHECK: %[[DM:.+]] = arith.subf %[[M]], %[[MSAFE]] : f32
// CHECK: %[[ALPHA:.+]] = math.exp2 %[[DM]] : f32
// P = exp2(S - m_safe); l' = alpha l + rowsum(P)
// CHECK: math.exp2
// CHECK: %[[AL:.+]] = arith.mulf %[[ALPHA]], %[[L]] : f32
// CHECK: arith.addf %[[AL]], %{{.+}} : f32
// acc' = alpha acc + P . V
// CHECK: memref.load %[[ACC]]
// CHECK: memref.load %[[VS]]
// CHECK: memref.store %{{.+}}, %[[ACC]]
// out = l == 0 ? 0 : acc / l, truncated to f16
// CHECK: arith.cmpf oeq
// CHECK: arith.divf
// CHECK: arith.truncf %{{.+}} : f32 to f16
// CHECK: memref.store %{{.+}}, %[[OUT]][%[[BZ]], %[[BY]], %[[I]], %{{.+}}]
// CHECK: gpu.terminator
func.func @causal(%q: memref<1x2x100x64xf16, strided<[?, ?, ?, 1], offset: ?>>,
                  %k: memref<1x2x100x64xf16, strided<[?, ?, ?, 1], offset: ?>>,
                  %v: memref<1x2x100x64xf16, strided<[?, ?, ?, 1], offset: ?>>,
                  %out: memref<1x2x100x64xf16, strided<[?, ?, ?, 1], offset: ?>>) {
  %qt = bufferization.to_tensor %q restrict : memref<1x2x100x64xf16, strided<[?, ?, ?, 1], offset: ?>> to tensor<1x2x100x64xf16>
  %kt = bufferization.to_tensor %k restrict : memref<1x2x100x64xf16, strided<[?, ?, ?, 1], offset: ?>> to tensor<1x2x100x64xf16>
  %vt = bufferization.to_tensor %v restrict : memref<1x2x100x64xf16, strided<[?, ?, ?, 1], offset: ?>> to tensor<1x2x100x64xf16>
  %o = attn.sdpa %qt, %kt, %vt causal scale(0.125)
      : tensor<1x2x100x64xf16>, tensor<1x2x100x64xf16>, tensor<1x2x100x64xf16> -> tensor<1x2x100x64xf16>
  bufferization.materialize_in_destination %o in restrict writable %out
      : (tensor<1x2x100x64xf16>, memref<1x2x100x64xf16, strided<[?, ?, ?, 1], offset: ?>>) -> ()
  return
}

// -----

// Dynamic B/H/S, GQA, a broadcast bool mask, lse, f32 with D = Dv = 128:
// the tile shrinks to 32 keys so K and V fit 48 KB.
// CHECK-LABEL: func.func @gqa_mask_lse
// CHECK-SAME: (%[[Q:.+]]: memref<?x?x?x128xf32, {{.*}}>, %[[K:.+]]: memref<?x?x?x128xf32, {{.*}}>, %[[V:.+]]: memref<?x?x?x128xf32, {{.*}}>, %[[MASK:.+]]: memref<1x1x?x?xi1, {{.*}}>, %[[OUT:.+]]: memref<?x?x?x128xf32, {{.*}}>, %[[LSE:.+]]: memref<?x?x?xf32, {{.*}}>)
// grid from the tensors' dimensions
// CHECK-DAG: %[[SQ:.+]] = memref.dim %[[Q]], %c2
// CHECK-DAG: %[[HQ:.+]] = memref.dim %[[Q]], %c1
// CHECK-DAG: %[[B:.+]] = memref.dim %[[Q]], %c0
// CHECK: gpu.launch blocks(%[[BX:.+]], %[[BY:.+]], %[[BZ:.+]]) in (%{{.+}} = %{{.+}}, %{{.+}} = %[[HQ]], %{{.+}} = %[[B]])
// CHECK-SAME: workgroup(%[[KS:.+]] : memref<32x128xf32, #gpu.address_space<workgroup>>, %[[VS:.+]] : memref<32x128xf32, #gpu.address_space<workgroup>>)
// kv head = h / (Hq / Hkv)
// CHECK: %[[GROUP:.+]] = arith.divui %{{.+}}, %{{.+}} : index
// CHECK: %[[HK:.+]] = arith.divui %[[BY]], %[[GROUP]] : index
// CHECK: memref.load %[[K]][%[[BZ]], %[[HK]], %{{.+}}, %{{.+}}]
// CHECK: memref.load %[[V]][%[[BZ]], %[[HK]], %{{.+}}, %{{.+}}]
// the mask is read at [0, 0, i, j] (broadcast) and selects -inf
// CHECK: %[[MV:.+]] = memref.load %[[MASK]][%{{c0[_0-9]*}}, %{{c0[_0-9]*}}, %{{.+}}, %{{.+}}]
// CHECK: arith.select %[[MV]], %{{.+}}, %{{.+}} : f32
// CHECK-NOT: arith.truncf
// lse = l == 0 ? -inf : (m + log2 l) ln 2
// CHECK: math.log2
// CHECK: memref.store %{{.+}}, %[[LSE]][%[[BZ]], %[[BY]], %{{.+}}]
// Split-KV (kv-splits=2), dynamic shapes: workspaces [B, Hq, chunks, Sq
// (, Dv)], grid y = Hq x chunks; the chunk's blocks are the loop bounds;
// with one chunk out and lse are written as without splits, else the f32
// partials (acc / l, and m + log2 l or -inf); then the merge kernel, which
// also writes lse.
// SPLIT-LABEL: func.func @gqa_mask_lse
// SPLIT: %[[B:.+]] = memref.dim %arg0, %c0
// SPLIT: %[[H:.+]] = memref.dim %arg0, %c1
// SPLIT: %[[SQ:.+]] = memref.dim %arg0, %c2
// SPLIT: %[[PO:.+]] = memref.alloc(%[[B]], %[[H]], %c2{{.*}}, %[[SQ]]) : memref<?x?x?x?x128xf32>
// SPLIT: %[[PL:.+]] = memref.alloc(%[[B]], %[[H]], %c2{{.*}}, %[[SQ]]) : memref<?x?x?x?xf32>
// SPLIT: gpu.launch blocks(%{{[a-z0-9]+}}, %[[BY:[a-z0-9]+]], %[[BZ:[a-z0-9]+]]) {{.*}} module(@gqa_mask_lse_split_kv) function(@gqa_mask_lse_split_kv)
// SPLIT: %[[NS:.+]] = memref.dim %[[PL]]
// SPLIT: %[[S:.+]] = arith.remui %[[BY]], %[[NS]]
// SPLIT: %[[HH:.+]] = arith.divui %[[BY]], %[[NS]]
// SPLIT: %[[BEGIN:.+]] = arith.minui
// SPLIT: %[[END:.+]] = arith.minui
// SPLIT: scf.for %{{.+}} = %[[BEGIN]] to %[[END]]
// SPLIT: arith.cmpi eq, %[[NS]]
// SPLIT: memref.store %{{.+}}, %arg4[%[[BZ]], %[[HH]],
// SPLIT: memref.store %{{.+}}, %arg5[%[[BZ]], %[[HH]],
// SPLIT: } else {
// SPLIT: memref.store %{{.+}}, %[[PO]][%[[BZ]], %[[HH]], %[[S]],
// SPLIT: memref.store %{{.+}}, %[[PL]][%[[BZ]], %[[HH]], %[[S]],
// SPLIT: gpu.launch {{.*}} module(@gqa_mask_lse_split_kv) function(@gqa_mask_lse_split_kv_merge)
// SPLIT: math.exp2
// SPLIT: memref.store %{{.+}}, %arg4[
// SPLIT: math.log2
// SPLIT: memref.store %{{.+}}, %arg5[
// SPLIT: memref.dealloc %[[PO]]
// SPLIT: memref.dealloc %[[PL]]
func.func @gqa_mask_lse(%q: memref<?x?x?x128xf32, strided<[?, ?, ?, 1], offset: ?>>,
                        %k: memref<?x?x?x128xf32, strided<[?, ?, ?, 1], offset: ?>>,
                        %v: memref<?x?x?x128xf32, strided<[?, ?, ?, 1], offset: ?>>,
                        %mask: memref<1x1x?x?xi1, strided<[?, ?, ?, 1], offset: ?>>,
                        %out: memref<?x?x?x128xf32, strided<[?, ?, ?, 1], offset: ?>>,
                        %lse: memref<?x?x?xf32, strided<[?, ?, 1], offset: ?>>) {
  %qt = bufferization.to_tensor %q restrict : memref<?x?x?x128xf32, strided<[?, ?, ?, 1], offset: ?>> to tensor<?x?x?x128xf32>
  %kt = bufferization.to_tensor %k restrict : memref<?x?x?x128xf32, strided<[?, ?, ?, 1], offset: ?>> to tensor<?x?x?x128xf32>
  %vt = bufferization.to_tensor %v restrict : memref<?x?x?x128xf32, strided<[?, ?, ?, 1], offset: ?>> to tensor<?x?x?x128xf32>
  %mt = bufferization.to_tensor %mask restrict : memref<1x1x?x?xi1, strided<[?, ?, ?, 1], offset: ?>> to tensor<1x1x?x?xi1>
  %o, %l = attn.sdpa %qt, %kt, %vt mask(%mt : tensor<1x1x?x?xi1>)
      : tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32> -> tensor<?x?x?x128xf32>, tensor<?x?x?xf32>
  bufferization.materialize_in_destination %o in restrict writable %out
      : (tensor<?x?x?x128xf32>, memref<?x?x?x128xf32, strided<[?, ?, ?, 1], offset: ?>>) -> ()
  bufferization.materialize_in_destination %l in restrict writable %lse
      : (tensor<?x?x?xf32>, memref<?x?x?xf32, strided<[?, ?, 1], offset: ?>>) -> ()
  return
}

// -----

// Tensors in and out (not the JIT's form): there is no memory to launch on.
func.func @not_destination_passing(%q: tensor<1x1x8x8xf32>, %k: tensor<1x1x8x8xf32>,
                                   %v: tensor<1x1x8x8xf32>) -> tensor<1x1x8x8xf32> {
  // expected-error @+1 {{convert-attn-to-gpu expects destination-passing form}}
  %o = attn.sdpa %q, %k, %v
      : tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  return %o : tensor<1x1x8x8xf32>
}

// -----

// Dropout: l sums the probabilities before dropout; the scores array then
// holds keep ? P / (1 - 0.25) : 0 for P . V, the keep decision being the
// shared Philox-4x32-10 (10 rounds of two 32 x 32 -> 64 multiplies) keyed by
// the seed and counted by (key, row, head, batch).
// CHECK-LABEL: func.func @dropout
// CHECK-SAME: %[[SEED:[^:]+]]: i64)
// CHECK: gpu.launch
// alpha, then P
// CHECK: math.exp2
// CHECK: %[[P:.+]] = math.exp2
// CHECK: arith.trunci %[[SEED]] : i64 to i32
// CHECK-COUNT-20: arith.mului_extended
// CHECK: %[[KEEP:.+]] = arith.cmpi uge
// CHECK: %[[SCALED:.+]] = arith.mulf %[[P]], %{{.+}} : f32
// CHECK: %[[USED:.+]] = arith.select %[[KEEP]], %[[SCALED]], %{{.+}} : f32
// CHECK: memref.store %[[USED]]
// CHECK: arith.addf %{{.+}}, %[[P]] : f32
func.func @dropout(%q: memref<1x1x8x8xf32>, %k: memref<1x1x8x8xf32>,
                   %v: memref<1x1x8x8xf32>, %out: memref<1x1x8x8xf32>, %seed: i64) {
  %qt = bufferization.to_tensor %q restrict : memref<1x1x8x8xf32> to tensor<1x1x8x8xf32>
  %kt = bufferization.to_tensor %k restrict : memref<1x1x8x8xf32> to tensor<1x1x8x8xf32>
  %vt = bufferization.to_tensor %v restrict : memref<1x1x8x8xf32> to tensor<1x1x8x8xf32>
  %o = attn.sdpa %qt, %kt, %vt dropout(0.25, seed %seed)
      : tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  bufferization.materialize_in_destination %o in restrict writable %out
      : (tensor<1x1x8x8xf32>, memref<1x1x8x8xf32>) -> ()
  return
}

// -----

// spirv=true (the Vulkan portable variant): K and V tiles are allocations
// in the Workgroup storage class (no gpu address spaces in SPIR-V), private
// arrays in the Function storage class, and the loops over D = 4 and Dv = 2
// unrolled (constant indices), so the only loops left are the key blocks,
// the tile loads and the keys of a block. 32 KB of workgroup memory fit 64
// keys of D + Dv = 6 f32; 96 bytes do not fit the smallest tile (8 keys).
// SPIRV-LABEL: func.func @for_spirv
// SPIRV: gpu.launch
// SPIRV-NOT: workgroup(
// SPIRV: %[[KS:.+]] = memref.alloc() : memref<64x4xf32, #spirv.storage_class<Workgroup>>
// SPIRV: %[[VS:.+]] = memref.alloc() : memref<64x2xf32, #spirv.storage_class<Workgroup>>
// SPIRV: %[[QROW:.+]] = memref.alloca() : memref<4xf32, #spirv.storage_class<Function>>
// SPIRV: %[[ACC:.+]] = memref.alloca() : memref<2xf32, #spirv.storage_class<Function>>
// The scores of a key block: 64 + 1, so no per-key loop's trip count equals
// the array's length (Mesa's NIR fully unrolls such loops; one block of
// exactly 64 keys would make lavapipe compile for minutes).
// SPIRV: memref.alloca() : memref<65xf32, #spirv.storage_class<Function>>
// q row: four loads, no loop
// SPIRV-COUNT-4: memref.store %{{.+}}, %[[QROW]][%{{.+}}]
// SPIRV: scf.for
// SPIRV: gpu.barrier
// P . V key by key: per key the two accumulator elements, unrolled
// SPIRV: scf.for
// SPIRV: memref.load %[[VS]]
// SPIRV: memref.store %{{.+}}, %[[ACC]]
// SPIRV: memref.load %[[VS]]
// SPIRV: memref.store %{{.+}}, %[[ACC]]
// SPIRV: scf.yield
// SMALL: error: 'attn.sdpa' op convert-attn-to-gpu: K and V tiles of 8 keys (D = 4, Dv = 2) need 192 bytes of shared memory, more than 96; use a smaller block-kv
func.func @for_spirv(%q: memref<1x1x8x4xf32>, %k: memref<1x1x100x4xf32>,
                     %v: memref<1x1x100x2xf32>, %out: memref<1x1x8x2xf32>) {
  %qt = bufferization.to_tensor %q restrict : memref<1x1x8x4xf32> to tensor<1x1x8x4xf32>
  %kt = bufferization.to_tensor %k restrict : memref<1x1x100x4xf32> to tensor<1x1x100x4xf32>
  %vt = bufferization.to_tensor %v restrict : memref<1x1x100x2xf32> to tensor<1x1x100x2xf32>
  %o = attn.sdpa %qt, %kt, %vt : tensor<1x1x8x4xf32>, tensor<1x1x100x4xf32>, tensor<1x1x100x2xf32> -> tensor<1x1x8x2xf32>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x1x8x2xf32>, memref<1x1x8x2xf32>) -> ()
  return
}
