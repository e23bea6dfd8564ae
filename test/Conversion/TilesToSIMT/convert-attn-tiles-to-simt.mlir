// RUN: attn-opt %s -split-input-file --attn-tile-sdpa --attn-decompose-online-attention --convert-attn-tiles-to-simt --canonicalize --cse | FileCheck %s
// RUN: attn-opt %S/Inputs/subgroup.mlir --attn-tile-sdpa --attn-decompose-online-attention --convert-attn-tiles-to-simt=spirv=true --canonicalize --cse | FileCheck %s --check-prefix=SUBGROUP
// RUN: not attn-opt %S/Inputs/static-tiles.mlir --attn-tile-sdpa --attn-decompose-online-attention --convert-attn-tiles-to-simt 2>&1 | FileCheck %s --check-prefix=STATIC
// RUN: attn-opt %S/Inputs/coop-matrix.mlir --attn-configure-simt="coop-matrix=32 block-q=16 block-kv=16" --attn-tile-sdpa --attn-decompose-online-attention --convert-attn-tiles-to-simt=spirv=true --canonicalize --cse | FileCheck %s --check-prefix=COOP
// RUN: attn-opt %S/Inputs/coop-matrix.mlir --attn-configure-simt="coop-matrix=32 block-q=16 block-kv=16 scalar-products=true" --attn-tile-sdpa --attn-decompose-online-attention --convert-attn-tiles-to-simt=spirv=true --canonicalize --cse | FileCheck %s --check-prefix=COOPSCALAR
// RUN: sed -e 's/x16xf16>/x32xf16>/g' %S/Inputs/coop-matrix.mlir | attn-opt --attn-configure-simt="coop-matrix=64 lanes=2 block-q=32 block-kv=16 coop-registers=true" --attn-tile-sdpa --attn-decompose-online-attention --convert-attn-tiles-to-simt=spirv=true --canonicalize --cse | FileCheck %s --check-prefix=REGS
// RUN: attn-opt --attn-configure-simt="coop-matrix=64 lanes=2 block-q=32 block-kv=16 coop-registers=true" --attn-tile-sdpa --attn-decompose-online-attention --convert-attn-tiles-to-simt=spirv=true --canonicalize --cse %S/Inputs/coop-matrix.mlir | FileCheck %s --check-prefix=REGSMIX
// RUN: sed -e 's/x16xf16>/x32xf16>/g' %S/Inputs/coop-matrix.mlir | attn-opt --attn-configure-simt="coop-matrix=64 lanes=2 block-q=32 block-kv=16 coop-registers=true kv-splits=2" --attn-tile-sdpa --attn-decompose-online-attention --convert-attn-tiles-to-simt=spirv=true --canonicalize --cse | FileCheck %s --check-prefix=REGSSPLIT
// RUN: sed -e 's/x16xf16>/x32xf16>/g' %S/Inputs/coop-matrix.mlir | attn-opt --attn-configure-simt="coop-matrix=64 block-q=64 block-kv=16 coop-registers=true coop-strips=2" --attn-tile-sdpa --attn-decompose-online-attention --convert-attn-tiles-to-simt=spirv=true --canonicalize --cse | FileCheck %s --check-prefix=REGS2
// RUN: sed -e 's/xf16>/xbf16>/g' %S/Inputs/coop-matrix.mlir | not attn-opt --attn-configure-simt="coop-matrix=32 block-q=16" --attn-tile-sdpa --attn-decompose-online-attention --convert-attn-tiles-to-simt=spirv=true 2>&1 | FileCheck %s --check-prefix=COOPBF16
// RUN: attn-opt %S/Inputs/packed-decode.mlir --attn-configure-simt="coop-matrix=32 lanes=2 block-q=16 coop-registers=true pack-decode-heads=true kv-splits=2" --attn-tile-sdpa --attn-decompose-online-attention --convert-attn-tiles-to-simt=spirv=true --canonicalize --cse | FileCheck %s --check-prefix=PACKED
// RUN: attn-opt %S/Inputs/packed-decode.mlir --attn-configure-simt="pack-decode-heads=true" --attn-tile-sdpa --attn-decompose-online-attention --convert-attn-tiles-to-simt --canonicalize --cse | FileCheck %s --check-prefix=PACKEDSIMT
// RUN: not attn-opt %S/Inputs/pack-rows.mlir --attn-tile-sdpa --attn-decompose-online-attention --convert-attn-tiles-to-simt 2>&1 | FileCheck %s --check-prefix=PACKROWS
// RUN: attn-opt %S/Inputs/merge-unroll.mlir --attn-tile-sdpa --attn-decompose-online-attention --convert-attn-tiles-to-simt=spirv=true | FileCheck %s --check-prefix=UNROLL
// RUN: attn-opt %S/Inputs/merge-unroll.mlir --attn-tile-sdpa --attn-decompose-online-attention --convert-attn-tiles-to-simt | FileCheck %s --check-prefix=NOUNROLL

// Packed decode (pack_heads, Inputs/packed-decode.mlir): the grid's heads
// are the 2 K/V heads (x 2 chunks), a tile's rows the 4 query heads of
// each; q is read through a view of 16-byte vectors indexed as
// [B, Hkv, group, D / 8] (staged into K's tile), out and lse are written
// through [B, Hkv, group, ...] views: for SPIR-V (logical addressing)
// memref reshapes, which fold-memref-alias-ops folds into the accesses,
// in the merge kernel; rows past the group's 4 are not valid. Dropout
// and a mask keep a workgroup per query head (16 = 8 heads x 2 chunks).
// PACKED-LABEL: func.func @decode(
// PACKED-SAME: "decode_kernels::decode_split_kv" = {block_kv = 16 : i64, block_q = 4 : i64, heads = "Hkv", kind = "attention", rows = "Group", splits
// PACKED-SAME: "decode_kernels::decode_split_kv_merge" = {block_q = 4 : i64, heads = "Hkv", kind = "merge", rows = "Group"
// PACKED: %[[QV:.*]] = builtin.unrealized_conversion_cast %arg0 : memref<2x8x1x32xf16> to memref<64xvector<4xi32>>
// PACKED: gpu.launch blocks({{.*}}) in ({{.*}} = %c1, {{.*}} = %c4, {{.*}} = %c2) threads({{.*}}) in ({{.*}} = %c32, {{.*}}) module(@decode_kernels) function(@decode_split_kv)
// PACKED: %[[K:.*]] = memref.alloc() : memref<16x5xvector<4xi32>, #spirv.storage_class<Workgroup>>
// batch b at 32 vectors, K/V head h at 16 (its group of 4 rows of 4)
// PACKED: %[[B0:.*]] = arith.muli %arg7, %c32 : index
// PACKED: %[[H0:.*]] = arith.muli %{{.*}}, %c16 : index
// PACKED: %[[BH:.*]] = arith.addi %[[B0]], %[[H0]] : index
// PACKED: %[[R:.*]] = arith.divui %arg8, %c4 : index
// PACKED: arith.cmpi ult, %[[R]], %c4 : index
// PACKED: memref.load %[[QV]]
// PACKED: memref.store %{{.*}}, %[[K]]
// PACKED: gpu.subgroup_mma_compute
// PACKED: gpu.launch blocks({{.*}}) in ({{.*}} = %c1, {{.*}} = %c2, {{.*}} = %c2) {{.*}} function(@decode_split_kv_merge)
// PACKED: %[[OE:.*]] = memref.expand_shape %arg3
// PACKED: %[[OV:.*]] = memref.collapse_shape %[[OE]] {{.*}} into memref<2x2x4x32xf16>
// PACKED: %[[LE:.*]] = memref.expand_shape %arg4 {{.*}} into memref<2x2x4x1xf32>
// PACKED: %[[LV:.*]] = memref.collapse_shape %[[LE]] {{.*}} into memref<2x2x4xf32>
// PACKED: memref.store %{{.*}}, %[[OV]][%arg7, %arg6,
// PACKED: memref.store %{{.*}}, %[[LV]][%arg7, %arg6,
// PACKED-NOT: reinterpret_cast
// PACKED-LABEL: func.func @decode_dropout(
// PACKED-SAME: heads = "Hq", kind = "attention", rows = "Sq"
// PACKED: gpu.launch blocks({{.*}}) in ({{.*}} = %c1, {{.*}} = %c16, {{.*}} = %c2)
// PACKED-LABEL: func.func @decode_masked(
// PACKED: gpu.launch blocks({{.*}}) in ({{.*}} = %c1, {{.*}} = %c16, {{.*}} = %c2)
// Without SPIR-V (the SIMT mapping for NVVM), the same views as strided
// reinterpret_casts, as the tensor-core kernels take them.
// PACKEDSIMT-LABEL: func.func @decode(
// PACKEDSIMT: gpu.launch blocks({{.*}}) in ({{.*}} = %c1, {{.*}} = %c2, {{.*}} = %c2)
// PACKEDSIMT: memref.reinterpret_cast %arg0 to offset: [0], sizes: [2, 2, 4, 32], strides: [256, 128, 32, 1]
// PACKEDSIMT: memref.reinterpret_cast %arg3 to offset: [0], sizes: [2, 2, 4, 32], strides: [256, 128, 32, 1]
// PACKEDSIMT: memref.reinterpret_cast %arg4 to offset: [0], sizes: [2, 2, 4], strides: [8, 4, 1]

// A thread per row (the generic CUDA kernel's mapping, loops not
// unrolled): f32, D = 16, Dv = 8, a bool mask broadcast over B and H, lse;
// tiles of 32 rows and 16 keys (40 rows: a tail tile of 8; 50 keys: a tail
// block of 2). Nothing of the math is written by the mapping: each step
// below is the tiled form's generic evaluated per element.
// CHECK-LABEL: func.func @masked
// grid (ceildiv(40, 32), Hq, B), 32 threads; K and V tiles in workgroup
// memory
// CHECK: gpu.launch blocks(%[[BX:.+]], %[[BY:.+]], %{{.+}}) in {{.*}} threads(%[[TX:.+]], %{{.+}}, %{{.+}}) in (%{{.+}} = %c32
// CHECK-SAME: module(@masked_kernels) function(@masked) workgroup(%[[KS:.+]] : memref<16x16xf32, #gpu.address_space<workgroup>>, %[[VS:.+]] : memref<16x8xf32, #gpu.address_space<workgroup>>)
// private: the block's scores (then its probabilities), acc (Dv = 8), q
// CHECK: %[[S:.+]] = memref.alloca() : memref<16xf32>
// CHECK: %[[ACC:.+]] = memref.alloca() : memref<8xf32>
// CHECK: %[[Q:.+]] = memref.alloca() : memref<16xf32>
// the tile's rows: min(32, 40 - 32 qb); thread r owns row r
// CHECK: %[[ROWS:.+]] = affine.min
// CHECK: %[[VALID:.+]] = arith.cmpi ult, %[[TX]], %[[ROWS]]
// CHECK: scf.if %[[VALID]]
// CHECK: memref.store %{{.+}}, %[[Q]]
// acc = 0
// CHECK: memref.store %cst{{.*}}, %[[ACC]]
// the key loop: m = -inf, l = 0
// CHECK: scf.for {{.*}} iter_args(%[[M:.+]] = %{{.+}}, %[[L:.+]] = %{{.+}}) -> (f32, f32)
// CHECK: gpu.barrier
// CHECK: memref.store %{{.+}}, %[[KS]]
// CHECK: memref.store %{{.+}}, %[[VS]]
// CHECK: gpu.barrier
// CHECK: scf.if %[[VALID]] -> (f32, f32)
// S = q . K^T (raw), 8 keys at a time in registers (q's element read
// once per 8 products), into the private array
// CHECK: scf.for
// CHECK: scf.for {{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK: memref.load %[[Q]]
// CHECK-COUNT-8: memref.load %[[KS]]
// CHECK: scf.yield
// CHECK-COUNT-8: memref.store %{{.+}}, %[[S]]
// masked: -inf where !mask; mb = rowmax S; S kept in place
// CHECK: %[[MB:.+]] = scf.for
// CHECK: memref.load %[[S]]
// CHECK: arith.select %{{.+}}, %{{.+}}, %cst{{.*}} : f32
// CHECK: arith.maximumf
// CHECK: memref.store %{{.+}}, %[[S]]
// grow = mb * scale log2 e > m: the rescale, acc' = alpha acc, l' = alpha l
// (in place)
// CHECK: %[[MBS:.+]] = arith.mulf %[[MB]], %{{.+}} : f32
// CHECK: %[[GROW:.+]] = arith.cmpf ogt, %[[MBS]], %[[M]] : f32
// CHECK: %[[R:.+]]:2 = scf.if %[[GROW]] -> (f32, f32)
// CHECK: math.exp2
// CHECK: memref.store %{{.+}}, %[[ACC]]
// CHECK: arith.mulf %[[L]],
// P = exp2(fma(S, scale log2 e, -m_safe)) over the kept scores, in place;
// l'' = l' + rowsum P
// CHECK: scf.for {{.*}} iter_args(%{{.+}} = %[[R]]#1) -> (f32)
// CHECK: memref.load %[[S]]
// CHECK: math.fma
// CHECK: math.exp2
// CHECK: memref.store %{{.+}}, %[[S]]
// acc'' = acc' + P . V, the value columns outside the key loop, 8 at a
// time in registers (Dv = 8: one pass), P read once per 8 products
// CHECK: memref.load %[[ACC]]
// CHECK: scf.for {{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK: memref.load %[[S]]
// CHECK-COUNT-8: memref.load %[[VS]]
// CHECK-NOT: memref.load %[[S]]
// CHECK: scf.yield
// CHECK-COUNT-8: memref.store %{{.+}}, %[[ACC]]
// finalize, for the tile's rows: out = acc * (l == 0 ? 0 : 1 / l), lse
// CHECK: scf.if %[[VALID]]
// CHECK: arith.divf
// CHECK: math.log2
// CHECK: memref.load %[[ACC]]
// CHECK: memref.store
// CHECK: memref.store
// CHECK: gpu.terminator
func.func @masked(%q: memref<1x2x40x16xf32>, %k: memref<1x2x50x16xf32>, %v: memref<1x2x50x8xf32>, %m: memref<1x1x40x50xi1>, %out: memref<1x2x40x8xf32>, %lse: memref<1x2x40xf32>) {
  %qt = bufferization.to_tensor %q restrict : memref<1x2x40x16xf32> to tensor<1x2x40x16xf32>
  %kt = bufferization.to_tensor %k restrict : memref<1x2x50x16xf32> to tensor<1x2x50x16xf32>
  %vt = bufferization.to_tensor %v restrict : memref<1x2x50x8xf32> to tensor<1x2x50x8xf32>
  %mt = bufferization.to_tensor %m restrict : memref<1x1x40x50xi1> to tensor<1x1x40x50xi1>
  %o, %l = attn.sdpa %qt, %kt, %vt mask(%mt : tensor<1x1x40x50xi1>) {tiling = #attn.tiling<block_q = 32, block_kv = 16, mapping = #attn.simt<rows = 32, lanes = 1>>}
      : tensor<1x2x40x16xf32>, tensor<1x2x50x16xf32>, tensor<1x2x50x8xf32> -> tensor<1x2x40x8xf32>, tensor<1x2x40xf32>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x2x40x8xf32>, memref<1x2x40x8xf32>) -> ()
  bufferization.materialize_in_destination %l in restrict writable %lse : (tensor<1x2x40xf32>, memref<1x2x40xf32>) -> ()
  return
}

// -----

// Split-KV with the count chosen per launch: the partial kernel over (query
// block, head x chunk, batch), reading the count from the workspace's
// extent (the host's default, 2, once folded), writing its chunk's
// normalized output, and its max and sum into one [B, Hq, N, 2, Sq]
// workspace; the merge kernel (TileDistribution's,
// shared with the tensor cores) after it; the host allocates (each
// workspace named by its role) and frees the workspaces.
// CHECK-LABEL: func.func @split
// CHECK-SAME: attn.launches = {"split_kernels::split_split_kv" = {block_kv = 16 : i64, block_q = 32 : i64, heads = "Hq", kind = "attention", rows = "Sq", splits, when = "always"}, "split_kernels::split_split_kv_merge" = {block_q = 8 : i64, heads = "Hq", kind = "merge", rows = "Sq", when = "always"}}
// CHECK: %[[PO:.+]] = memref.alloc() {attn.workspace = "partial_out"} : memref<1x2x2x40x16xf32>
// CHECK: %[[PS:.+]] = memref.alloc() {attn.workspace = "partial_stats"} : memref<1x2x2x2x40xf32>
// CHECK: gpu.launch
// CHECK: arith.remui %{{.+}}, %c2
// CHECK: arith.divui %{{.+}}, %c2
// CHECK-DAG: memref.store %{{.+}}, %[[PO]]
// CHECK-DAG: memref.store %{{.+}}, %[[PS]][%{{.+}}, %{{.+}}, %{{.+}}, %c0, %{{.+}}]
// CHECK-DAG: memref.store %{{.+}}, %[[PS]][%{{.+}}, %{{.+}}, %{{.+}}, %c1, %{{.+}}]
// CHECK: gpu.launch
// CHECK: memref.load %[[PS]][%{{.+}}, %{{.+}}, %{{.+}}, %c0, %{{.+}}]
// CHECK: memref.load %[[PS]][%{{.+}}, %{{.+}}, %{{.+}}, %c1, %{{.+}}]
// CHECK: memref.load %[[PO]]
// CHECK: memref.dealloc %[[PO]]
// CHECK: memref.dealloc %[[PS]]
func.func @split(%q: memref<1x2x40x16xf32>, %k: memref<1x2x50x16xf32>, %v: memref<1x2x50x16xf32>, %out: memref<1x2x40x16xf32>) {
  %qt = bufferization.to_tensor %q restrict : memref<1x2x40x16xf32> to tensor<1x2x40x16xf32>
  %kt = bufferization.to_tensor %k restrict : memref<1x2x50x16xf32> to tensor<1x2x50x16xf32>
  %vt = bufferization.to_tensor %v restrict : memref<1x2x50x16xf32> to tensor<1x2x50x16xf32>
  %o = attn.sdpa %qt, %kt, %vt {tiling = #attn.tiling<block_q = 32, block_kv = 16, kv_splits = 2, launch_splits = true, mapping = #attn.simt<rows = 32, lanes = 1>>}
      : tensor<1x2x40x16xf32>, tensor<1x2x50x16xf32>, tensor<1x2x50x16xf32> -> tensor<1x2x40x16xf32>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x2x40x16xf32>, memref<1x2x40x16xf32>) -> ()
  return
}

// A subgroup of 4 lanes per row, loops unrolled (the Vulkan portable
// variant's subgroup kernel): lane t computes the scores of keys t, t + 4,
// ... of a block and owns output columns t, t + 4; causal.
// SUBGROUP-LABEL: func.func @subgroup
// 4 rows of 4 lanes; workgroup memory and private arrays in SPIR-V storage
// classes
// SUBGROUP: gpu.launch {{.*}} threads({{.*}}) in (%{{.+}} = %c16
// SUBGROUP-DAG: memref.alloca() : memref<5xf32, #spirv.storage_class<Function>>
// SUBGROUP-DAG: memref.alloca() : memref<2xf32, #spirv.storage_class<Function>>
// SUBGROUP-DAG: memref.alloca() : memref<16xf32, #spirv.storage_class<Function>>
// SUBGROUP-DAG: memref.alloc() : memref<16x16xf32, #spirv.storage_class<Workgroup>>
// SUBGROUP-DAG: memref.alloc() : memref<16x8xf32, #spirv.storage_class<Workgroup>>
// SUBGROUP: %[[LANE:.+]] = gpu.lane_id upper_bound 4
// SUBGROUP: %[[ROW:.+]] = gpu.subgroup_id upper_bound 4
// the unmasked key blocks, then the diagonal ones
// SUBGROUP: scf.for
// the lane's keys: slot s is key 4 s + lane, evaluated only inside the block
// SUBGROUP: %[[KEY:.+]] = arith.addi %{{.+}}, %[[LANE]] : index
// SUBGROUP: %[[IN:.+]] = arith.cmpi ult, %[[KEY]], %{{.+}} : index
// SUBGROUP: scf.if %[[IN]] -> (f32)
// the block's row max over the subgroup
// SUBGROUP: gpu.subgroup_reduce maximumf
// P . V in the same loop as P: each key's probability from its lane
// SUBGROUP: math.exp2
// SUBGROUP-COUNT-4: gpu.shuffle idx
// the diagonal blocks: -inf where key > row + diag
// SUBGROUP: scf.for
// SUBGROUP: arith.cmpi sgt
// SUBGROUP: gpu.subgroup_reduce maximumf
// the row sum is per lane until the finalize sums it over the subgroup
// SUBGROUP: gpu.subgroup_reduce add
// SUBGROUP: math.log2
// the lse by lane 0
// SUBGROUP: arith.cmpi eq, %[[LANE]], %c0

// STATIC: error: 'scf.forall' op convert-attn-tiles-to-simt: the SIMT mapping takes dynamic tail tiles (no static_tiles)
// PACKROWS: error: 'scf.forall' op expected each result of a tiled attention to be materialized into a memref (the JIT's destination-passing form; with pack_heads, through the packed view of a single query row)

// The cooperative-matrix mode (#attn.coop_matrix, the Vulkan coopmat
// variant; Inputs/coop-matrix.mlir): f16, GQA, D = 32, Dv = 16, causal, an
// f32 additive mask, lse, tail tiles of 8 rows and 2 keys. A workgroup of
// one 32-invocation subgroup per 16-row tile; Q, K and V tiles, S (f32), P
// (f16) and the accumulator (f32) in workgroup memory with padded rows;
// the two products are whole-workgroup 16x16x16 matrix products, the
// softmax between them a row per invocation, from the same generics as
// every other mapping.
// COOP-LABEL: func.func @coop
// COOP: gpu.launch blocks({{.*}}) in (%{{.+}} = %c3, %{{.+}} = %c4, %{{.+}} = %c1) threads(%[[TX:[a-z0-9]+]], {{.*}}) in (%{{.+}} = %c32,
// COOP-DAG: %[[K:.+]] = memref.alloc() : memref<16x40xf16, #spirv.storage_class<Workgroup>>
// COOP-DAG: %[[V:.+]] = memref.alloc() : memref<16x24xf16, #spirv.storage_class<Workgroup>>
// COOP-DAG: %[[Q:.+]] = memref.alloc() : memref<16x40xf16, #spirv.storage_class<Workgroup>>
// COOP-DAG: %[[S:.+]] = memref.alloc() : memref<16x20xf32, #spirv.storage_class<Workgroup>>
// COOP-DAG: %[[P:.+]] = memref.alloc() : memref<16x24xf16, #spirv.storage_class<Workgroup>>
// COOP-DAG: %[[ACC:.+]] = memref.alloc() : memref<16x20xf32, #spirv.storage_class<Workgroup>>
// rows past the tile's (min(16, 40 - 16 qb)) do no softmax
// COOP: %[[ROWS:.+]] = affine.min
// COOP: %[[VALID:.+]] = arith.cmpi ult, %[[TX]], %[[ROWS]]
// Q staged by the whole workgroup without a branch: the row clamped to 0
// past the tile's, the value zero there
// COOP: scf.for %{{.+}} = %[[TX]] to %c512 step %c32
// COOP: %[[QR:.+]] = arith.divui
// COOP: %[[QIN:.+]] = arith.cmpi ult, %[[QR]], %[[ROWS]]
// COOP: arith.select %[[QIN]], %[[QR]], %c0 : index
// COOP: %[[QX:.+]] = memref.load
// COOP: %[[QZ:.+]] = arith.select %[[QIN]], %[[QX]], %cst{{.*}} : f16
// COOP: memref.store %[[QZ]], %[[Q]]
// COOP: gpu.barrier
// acc = 0, a row per invocation
// COOP: memref.store %cst{{.*}}, %[[ACC]][%[[TX]],
// the unmasked key blocks: K and V staged (keys past the tail zero; no
// barrier before: the previous block's P.V ended with one)
// COOP: scf.for {{.*}} iter_args(%[[M:.+]] = %cst{{.*}}, %[[L:.+]] = %cst{{.*}}) -> (f32, f32)
// COOP-NOT: gpu.barrier
// COOP: arith.select %{{.+}}, %{{.+}}, %cst{{.*}} : f16
// COOP: memref.store %{{.+}}, %[[K]]
// COOP: arith.select %{{.+}}, %{{.+}}, %cst{{.*}} : f16
// COOP: memref.store %{{.+}}, %[[V]]
// COOP: gpu.barrier
// S = Q K^T: K^T a transposed load of K's tile
// COOP: gpu.subgroup_mma_constant_matrix
// COOP: gpu.subgroup_mma_load_matrix %[[Q]]{{.*}} {leadDimension = 40 : index}
// COOP: gpu.subgroup_mma_load_matrix %[[K]]{{.*}} {leadDimension = 40 : index, transpose}
// COOP: gpu.subgroup_mma_compute
// COOP: gpu.subgroup_mma_store_matrix %{{.+}}, %[[S]]{{.*}} {leadDimension = 20 : index}
// COOP: gpu.barrier
// the softmax of the invocation's row: its keys' scores (mask added),
// the rescale of its accumulator row, P as f16 (zero past the block)
// COOP: scf.if %[[VALID]] -> (f32, f32)
// COOP: memref.load %[[S]][%[[TX]],
// COOP: arith.maximumf
// COOP: scf.if
// COOP: memref.store %{{.+}}, %[[ACC]][%[[TX]],
// COOP: math.exp2
// COOP: arith.truncf {{.*}} : f32 to f16
// COOP: memref.store %{{.+}}, %[[P]][%[[TX]],
// COOP: memref.store %cst{{.*}}, %[[P]][%[[TX]],
// COOP: } else {
// COOP: gpu.barrier
// acc += P V
// COOP: gpu.subgroup_mma_load_matrix %[[ACC]]
// COOP: gpu.subgroup_mma_load_matrix %[[P]]
// COOP: gpu.subgroup_mma_load_matrix %[[V]]
// COOP: gpu.subgroup_mma_compute
// COOP: gpu.subgroup_mma_store_matrix %{{.+}}, %[[ACC]]
// COOP: gpu.barrier
// the diagonal key blocks: -inf where key > row + 10
// COOP: scf.for
// COOP: gpu.subgroup_mma_compute
// COOP: arith.cmpi sgt
// COOP: gpu.subgroup_mma_compute
// the finalize: 1 / l, the lse, the row written
// COOP: scf.if %[[VALID]] {
// COOP: math.log2
// COOP: memref.load %[[ACC]][%[[TX]],
// COOP: arith.truncf
// COOP: memref.store {{.*}} : memref<1x4x40x16xf16>
// COOP: memref.store {{.*}} : memref<1x4x40xf32>

// scalar-products=true: the same kernel with each product's body evaluated
// in scalar loops over the same tiles (an invocation per element of S).
// COOPSCALAR-LABEL: func.func @coop
// COOPSCALAR-NOT: gpu.subgroup_mma
// COOPSCALAR: scf.for %{{.+}} = %{{.+}} to %c256 step %c32
// COOPSCALAR: scf.for {{.*}} to %c32 step %c1 iter_args(%{{.+}} = %cst{{.*}}) -> (f32)
// COOPSCALAR: arith.extf {{.*}} : f16 to f32
// COOPSCALAR: arith.mulf
// COOPSCALAR: memref.store {{.*}} : memref<16x20xf32, #spirv.storage_class<Workgroup>>
// COOPSCALAR-NOT: gpu.subgroup_mma

// bf16 on gpu.mma_matrix (which has no bf16): refused, with the way out.
// COOPBF16: error: 'linalg.generic' op convert-attn-tiles-to-simt: gpu.mma_matrix operands are f16 here, got 'bf16' (a bf16 kernel is retyped as f16 first: attn-spirv-bf16-as-f16; or use scalar products)

// #attn.coop_matrix registers (D = Dv = 32, 32 rows on two subgroups of
// 32, two lanes per row, 16-key blocks): Q's two A matrices loaded once
// before the key loops, the accumulator's two matrices carried through
// them as loop values, no accumulator tile (it reaches S's tile, 16 + 4
// wide, 16 columns at a time for the finalize), no Q tile (Q is staged
// into K's, which has 32 rows for it), the rows' rescale factors in a
// 32 x 16 tile that each
// subgroup multiplies into its matrices before P.V, the row reductions
// over the row's two lanes by an xor shuffle, and each key block's K and
// V matrices loaded into registers during the block before.
// REGS-LABEL: func.func @coop
// Q, K and V through views of 16-byte vectors (the same buffers bound
// again), staged into workgroup tiles of such vectors (4 per 32-element
// row, one padding)
// REGS: %[[QV:.+]] = builtin.unrealized_conversion_cast %arg0 : memref<1x4x40x32xf16> to memref<640xvector<4xi32>>
// REGS: %[[KV:.+]] = builtin.unrealized_conversion_cast %arg1 : memref<1x2x50x32xf16> to memref<400xvector<4xi32>>
// REGS: %[[VV:.+]] = builtin.unrealized_conversion_cast %arg2 : memref<1x2x50x32xf16> to memref<400xvector<4xi32>>
// REGS: gpu.launch blocks({{.*}}) in (%{{.+}} = %c2, %{{.+}} = %c4, %{{.+}} = %c1) threads({{.*}}) in (%{{.+}} = %c64,
// REGS-DAG: %[[K:.+]] = memref.alloc() : memref<32x5xvector<4xi32>, #spirv.storage_class<Workgroup>>
// REGS-DAG: %[[V:.+]] = memref.alloc() : memref<16x5xvector<4xi32>, #spirv.storage_class<Workgroup>>
// REGS-DAG: %[[P:.+]] = memref.alloc() : memref<32x24xf16, #spirv.storage_class<Workgroup>>
// REGS-DAG: %[[S:.+]] = memref.alloc() : memref<32x20xf32, #spirv.storage_class<Workgroup>>
// REGS-DAG: %[[F:.+]] = memref.alloc() : memref<32x16xf32, #spirv.storage_class<Workgroup>>
// REGS-NOT: memref.alloc()
// subgroup s: rows 16 s + lane / 2
// REGS: %[[SG:.+]] = gpu.subgroup_id upper_bound 2
// REGS: gpu.lane_id upper_bound 32
// REGS: %[[STRIP:.+]] = arith.muli %[[SG]], %c16
// Q's tile into K's, its A matrices (columns in vectors) out of it, and a
// barrier before K's first block overwrites it
// REGS: memref.load %[[QV]]
// REGS: memref.store %{{.+}}, %[[K]]
// REGS: gpu.barrier
// REGS-NEXT: %[[Q0:.+]] = gpu.subgroup_mma_load_matrix %[[K]][%[[STRIP]], %c0] {leadDimension = 5 : index} {{.*}} -> !gpu.mma_matrix<16x16xf16, "AOp">
// REGS-NEXT: %[[Q1:.+]] = gpu.subgroup_mma_load_matrix %[[K]][%[[STRIP]], %c2] {leadDimension = 5 : index} {{.*}} -> !gpu.mma_matrix<16x16xf16, "AOp">
// REGS-NEXT: gpu.barrier
// REGS: %[[ZERO:.+]] = gpu.subgroup_mma_constant_matrix
// the first block's vectors of the invocation (16 rows x 4 vectors of K
// and of V over 64 invocations: one each) loaded before the loop, rows
// past the keys zero (the load from the block's first row)
// REGS: %[[PRE:.+]]:2 = scf.if %{{.+}} -> (vector<4xi32>, vector<4xi32>)
// REGS: %[[IN:.+]] = arith.cmpi ult
// REGS: arith.select %[[IN]], %{{.+}}, %c0 : index
// REGS: memref.load %[[KV]]
// REGS: arith.select %[[IN]], %{{.+}}, %cst{{.*}} : vector<4xi32>
// REGS: memref.load %[[VV]]
// REGS: } else {
// REGS: scf.yield %cst{{.*}}, %cst{{.*}} : vector<4xi32>, vector<4xi32>
// REGS: %[[LOOP:.+]]:6 = scf.for {{.*}} iter_args(%{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}, %[[A0:.+]] = %[[ZERO]], %[[A1:.+]] = %[[ZERO]], %[[KM:.+]] = %[[PRE]]#0, %[[VM:.+]] = %[[PRE]]#1) -> (f32, f32, !gpu.mma_matrix<16x16xf32, "COp">, !gpu.mma_matrix<16x16xf32, "COp">, vector<4xi32>, vector<4xi32>)
// every block (the tail's rows already zero) stored as it was loaded
// REGS: memref.store %[[KM]], %[[K]]
// REGS: memref.store %[[VM]], %[[V]]
// REGS: gpu.barrier
// the next block's vectors loaded during this one
// REGS: %[[NEXT:.+]]:2 = scf.if %{{.+}} -> (vector<4xi32>, vector<4xi32>)
// REGS: memref.load %[[KV]]
// the products load the tiles' matrices in vector units (16 columns: 2)
// REGS: gpu.subgroup_mma_load_matrix %[[K]][%c0, %c0] {leadDimension = 5 : index, transpose}
// REGS: gpu.subgroup_mma_compute %[[Q0]]
// REGS: gpu.subgroup_mma_compute %[[Q1]]
// REGS: gpu.subgroup_mma_store_matrix %{{.+}}, %[[S]][%[[STRIP]], %c0] {leadDimension = 20 : index}
// The strip's S, P and factors are its subgroup's own: barriers of
// subgroup scope between the product and the rows, and the rows and P.V.
// REGS-NEXT: spirv.ControlBarrier <Subgroup>, <Subgroup>, <AcquireRelease|WorkgroupMemory>
// The lane's scores of its row read into a private array once, every
// load before the row's first store, the lane's columns contiguous (lane
// t: columns 8 t .. 8 t + 7 of the 16-key block); the loops over the
// block's columns unrolled, so that they read the array at constant
// indices (registers).
// REGS-NEXT: %[[C0:.+]] = arith.muli %{{.+}}, %c8 : index
// REGS-NEXT: %[[S0:.+]] = memref.load %[[S]][%{{.+}}, %[[C0]]] : memref<32x20xf32, #spirv.storage_class<Workgroup>>
// REGS-NEXT: memref.store %[[S0]], %[[ROW:.+]][%c0] : memref<8xf32, #spirv.storage_class<Function>>
// REGS-NEXT: %[[C1:.+]] = arith.addi %[[C0]], %c1 : index
// REGS-NEXT: memref.load %[[S]][%{{.+}}, %[[C1]]]
// REGS-NEXT: memref.store %{{.+}}, %[[ROW]][%c1]
// REGS-COUNT-6: memref.store %{{.+}}, %[[ROW]][%c{{[2-7]}}] : memref<8xf32, #spirv.storage_class<Function>>
// REGS-NOT: scf.for
// REGS-NOT: memref.store %{{.+}}, %[[P]]
// REGS: memref.load %[[ROW]][%c7]
// REGS-NOT: scf.for
// REGS: gpu.shuffle  xor %{{.+}}, %c1_i32, %c32_i32 : f32
// REGS: arith.maximumf
// REGS-NOT: scf.for
// REGS: memref.store %{{.+}}, %[[P]][%{{.+}}, %[[C0]]]
// REGS-NOT: scf.for
// REGS: memref.store %{{.+}}, %[[P]][%{{.+}}, %[[C1]]]
// The factors stored and multiplied in only where a row of the strip
// rescales (a factor other than 1).
// REGS: %[[DIFF:.+]] = arith.cmpf une, %[[FAC:.+]], %cst{{.*}} : f32
// REGS: %[[DIFF32:.+]] = arith.extui %[[DIFF]] : i1 to i32
// REGS: %[[X16:.+]], %{{.+}} = gpu.shuffle  xor %[[DIFF32]], %c16_i32, %c32_i32 : i32
// REGS: %[[O16:.+]] = arith.ori %[[DIFF32]], %[[X16]] : i32
// REGS: gpu.shuffle  xor %[[O16]], %c8_i32, %c32_i32 : i32
// REGS: gpu.shuffle  xor %{{.+}}, %c1_i32, %c32_i32 : i32
// REGS: %[[ANY:.+]] = arith.ori
// REGS: %[[RESCALE:.+]] = arith.cmpi ne, %[[ANY]], %c0_i32 : i32
// REGS: scf.if %[[RESCALE]] {
// REGS: memref.store %[[FAC]], %[[F]]
// REGS: spirv.ControlBarrier <Subgroup>, <Subgroup>, <AcquireRelease|WorkgroupMemory>
// REGS-NEXT: %[[RS:.+]]:2 = scf.if %[[RESCALE]] -> (!gpu.mma_matrix<16x16xf32, "COp">, !gpu.mma_matrix<16x16xf32, "COp">) {
// REGS-NEXT: %[[FM:.+]] = gpu.subgroup_mma_load_matrix %[[F]][%[[STRIP]], %c0] {leadDimension = 16 : index} {{.*}} -> !gpu.mma_matrix<16x16xf32, "COp">
// REGS-NEXT: %[[M0:.+]] = gpu.subgroup_mma_elementwise  mulf %[[A0]], %[[FM]]
// REGS-NEXT: %[[M1:.+]] = gpu.subgroup_mma_elementwise  mulf %[[A1]], %[[FM]]
// REGS-NEXT: scf.yield %[[M0]], %[[M1]]
// REGS-NEXT: } else {
// REGS-NEXT: scf.yield %[[A0]], %[[A1]]
// REGS: %[[PA:.+]] = gpu.subgroup_mma_load_matrix %[[P]][%[[STRIP]], %c0] {{.*}} -> !gpu.mma_matrix<16x16xf16, "AOp">
// REGS: gpu.subgroup_mma_load_matrix %[[V]][%c0, %c0] {leadDimension = 5 : index}
// REGS: %[[N0:.+]] = gpu.subgroup_mma_compute %[[PA]], %{{.+}}, %[[RS]]#0
// REGS: gpu.subgroup_mma_load_matrix %[[V]][%c0, %c2] {leadDimension = 5 : index}
// REGS: %[[N1:.+]] = gpu.subgroup_mma_compute %[[PA]], %{{.+}}, %[[RS]]#1
// REGS: gpu.barrier
// REGS: scf.yield %{{.+}}, %{{.+}}, %[[N0]], %[[N1]], %[[NEXT]]#0, %[[NEXT]]#1
// the diagonal blocks carry the first loop's matrices on
// REGS: %[[DIAG:.+]]:6 = scf.for {{.*}} iter_args({{.*}} = %[[LOOP]]#2, {{.*}} = %[[LOOP]]#3, {{.*}})
// after the key loops: the matrices into S's tile for the finalize, one
// 16-column window at a time (the lse stored with the first), the
// subgroup's lanes done with one before the next overwrites it
// REGS: gpu.subgroup_mma_store_matrix %[[DIAG]]#2, %[[S]][%[[STRIP]], %c0] {leadDimension = 20 : index}
// REGS-NEXT: spirv.ControlBarrier <Subgroup>, <Subgroup>, <AcquireRelease|WorkgroupMemory>
// REGS-NEXT: scf.if
// REGS: gpu.shuffle  xor %[[DIAG]]#1
// REGS: math.log2
// REGS: scf.for %{{.+}} = %c0 to %c8 step %c1 {
// REGS: memref.load %[[S]]
// REGS: arith.truncf
// REGS: memref.store {{.*}} : memref<1x4x40x32xf16>
// REGS: memref.store {{.*}} : memref<1x4x40xf32>
// REGS: spirv.ControlBarrier <Subgroup>, <Subgroup>, <AcquireRelease|WorkgroupMemory>
// REGS-NEXT: gpu.subgroup_mma_store_matrix %[[DIAG]]#3, %[[S]][%[[STRIP]], %c0] {leadDimension = 20 : index}
// REGS-NEXT: spirv.ControlBarrier <Subgroup>, <Subgroup>, <AcquireRelease|WorkgroupMemory>
// REGS-NEXT: scf.if
// REGS: scf.for %[[SLOT:.+]] = %c8 to %c16 step %c1 {
// REGS: %[[COL:.+]] = arith.addi %{{.+}}, %{{.+}} : index
// REGS: %[[IN:.+]] = arith.subi %[[COL]], %c16 : index
// REGS: memref.load %[[S]][%{{.+}}, %[[IN]]]
// REGS: arith.truncf
// REGS: memref.store %{{.+}}, %arg4[%c0, %{{.+}}, %{{.+}}, %[[COL]]] : memref<1x4x40x32xf16>
// REGS-NOT: memref<1x4x40xf32>
// REGS: gpu.terminator

// V of 16 columns: 2 vectors a row, 32 a block, fewer than the 64
// invocations: staged as 16x16 matrices (whole blocks) or element by
// element (the tail), while K (32 columns) goes through its vector view;
// with the two staged differently nothing is prefetched.
// A chunk of a split key sequence multiplies its factors in every block,
// without asking its rows first.
// REGSSPLIT-LABEL: func.func @coop
// REGSSPLIT: gpu.launch {{.*}} function(@coop_split_kv)
// REGSSPLIT-NOT: arith.cmpf une
// REGSSPLIT: memref.store %{{.+}}, %[[F:.+]][%{{.+}}, %{{.+}}] : memref<32x16xf32, #spirv.storage_class<Workgroup>>
// REGSSPLIT: spirv.ControlBarrier <Subgroup>, <Subgroup>, <AcquireRelease|WorkgroupMemory>
// REGSSPLIT-NEXT: %[[FM:.+]] = gpu.subgroup_mma_load_matrix %[[F]]
// REGSSPLIT-NEXT: gpu.subgroup_mma_elementwise  mulf %{{.+}}, %[[FM]]
// REGSSPLIT-NOT: arith.cmpf une
// REGSSPLIT: gpu.launch {{.*}} function(@coop_split_kv_merge)

// Two 16-row strips per subgroup (strips = 2): two subgroups of 32
// invocations, one per row, own rows 32 s .. 32 s + 31; each holds Q's and
// the accumulator's matrices of both strips, and each K^T matrix (Q . K^T)
// and V matrix (P . V) it loads enters one product per strip. The row
// factors, S's stores and the finalize's windows are per strip; a row has
// one lane, so only the vote shuffles (over the subgroup's 32).
// REGS2-LABEL: func.func @coop
// REGS2: threads({{.*}}) in (%{{.+}} = %c64,
// REGS2-DAG: %[[K:.+]] = memref.alloc() : memref<64x5xvector<4xi32>, #spirv.storage_class<Workgroup>>
// REGS2-DAG: %[[V:.+]] = memref.alloc() : memref<16x5xvector<4xi32>, #spirv.storage_class<Workgroup>>
// REGS2-DAG: %[[P:.+]] = memref.alloc() : memref<64x24xf16, #spirv.storage_class<Workgroup>>
// REGS2-DAG: %[[S:.+]] = memref.alloc() : memref<64x20xf32, #spirv.storage_class<Workgroup>>
// REGS2-DAG: %[[F:.+]] = memref.alloc() : memref<64x16xf32, #spirv.storage_class<Workgroup>>
// REGS2: %[[SG:.+]] = gpu.subgroup_id upper_bound 2
// REGS2: gpu.lane_id upper_bound 32
// REGS2: %[[S0:.+]] = arith.muli %[[SG]], %c32
// REGS2: %[[Q00:.+]] = gpu.subgroup_mma_load_matrix %[[K]][%[[S0]], %c0] {leadDimension = 5 : index} {{.*}} -> !gpu.mma_matrix<16x16xf16, "AOp">
// REGS2-NEXT: %[[Q01:.+]] = gpu.subgroup_mma_load_matrix %[[K]][%[[S0]], %c2]
// REGS2-NEXT: %[[S1:.+]] = arith.addi %[[S0]], %c16
// REGS2-NEXT: %[[Q10:.+]] = gpu.subgroup_mma_load_matrix %[[K]][%[[S1]], %c0]
// REGS2-NEXT: %[[Q11:.+]] = gpu.subgroup_mma_load_matrix %[[K]][%[[S1]], %c2]
// REGS2: %[[OUT:.+]]:8 = scf.for
// REGS2: %[[KT0:.+]] = gpu.subgroup_mma_load_matrix %[[K]][%c0, %c0] {leadDimension = 5 : index, transpose}
// REGS2-NEXT: %[[A0:.+]] = gpu.subgroup_mma_compute %[[Q00]], %[[KT0]], %[[ZERO:.+]] :
// REGS2-NEXT: %[[A1:.+]] = gpu.subgroup_mma_compute %[[Q10]], %[[KT0]], %[[ZERO]] :
// REGS2-NEXT: %[[KT1:.+]] = gpu.subgroup_mma_load_matrix %[[K]][%c0, %c2] {leadDimension = 5 : index, transpose}
// REGS2-NEXT: %[[B0:.+]] = gpu.subgroup_mma_compute %[[Q01]], %[[KT1]], %[[A0]] :
// REGS2-NEXT: %[[B1:.+]] = gpu.subgroup_mma_compute %[[Q11]], %[[KT1]], %[[A1]] :
// REGS2-NEXT: gpu.subgroup_mma_store_matrix %[[B0]], %[[S]][%[[S0]], %c0] {leadDimension = 20 : index}
// REGS2-NEXT: gpu.subgroup_mma_store_matrix %[[B1]], %[[S]][%[[S1]], %c0] {leadDimension = 20 : index}
// REGS2-NOT: gpu.shuffle
// REGS2: arith.cmpf une
// REGS2: gpu.shuffle xor %{{.+}}, %c16_i32, %c32_i32
// REGS2: gpu.subgroup_mma_load_matrix %[[F]][%[[S0]], %c0]
// REGS2: gpu.subgroup_mma_load_matrix %[[F]][%[[S1]], %c0]
// REGS2: %[[P0:.+]] = gpu.subgroup_mma_load_matrix %[[P]][%[[S0]], %c0] {leadDimension = 24 : index}
// REGS2-NEXT: %[[P1:.+]] = gpu.subgroup_mma_load_matrix %[[P]][%[[S1]], %c0] {leadDimension = 24 : index}
// REGS2-NEXT: %[[V0:.+]] = gpu.subgroup_mma_load_matrix %[[V]][%c0, %c0] {leadDimension = 5 : index}
// REGS2-NEXT: %[[C00:.+]] = gpu.subgroup_mma_compute %[[P0]], %[[V0]], %[[ACC:.+]]#0 :
// REGS2-NEXT: %[[C10:.+]] = gpu.subgroup_mma_compute %[[P1]], %[[V0]], %[[ACC]]#2 :
// REGS2-NEXT: %[[V1:.+]] = gpu.subgroup_mma_load_matrix %[[V]][%c0, %c2] {leadDimension = 5 : index}
// REGS2-NEXT: %[[C01:.+]] = gpu.subgroup_mma_compute %[[P0]], %[[V1]], %[[ACC]]#1 :
// REGS2-NEXT: %[[C11:.+]] = gpu.subgroup_mma_compute %[[P1]], %[[V1]], %[[ACC]]#3 :
// REGS2: scf.yield %{{.+}}, %{{.+}}, %[[C00]], %[[C01]], %[[C10]], %[[C11]],
// REGS2: gpu.subgroup_mma_store_matrix %[[OUT]]#2, %[[S]][%[[S0]], %c0]
// REGS2-NEXT: gpu.subgroup_mma_store_matrix %[[OUT]]#4, %[[S]][%[[S1]], %c0]
// REGS2: gpu.subgroup_mma_store_matrix %[[OUT]]#3, %[[S]][%[[S0]], %c0]
// REGS2-NEXT: gpu.subgroup_mma_store_matrix %[[OUT]]#5, %[[S]][%[[S1]], %c0]

// REGSMIX-LABEL: func.func @coop
// REGSMIX: %[[QV:.+]] = builtin.unrealized_conversion_cast %arg0 : memref<1x4x40x32xf16> to memref<640xvector<4xi32>>
// REGSMIX: %[[KV:.+]] = builtin.unrealized_conversion_cast %arg1 : memref<1x2x50x32xf16> to memref<400xvector<4xi32>>
// REGSMIX-NOT: unrealized_conversion_cast
// REGSMIX: gpu.launch
// REGSMIX-DAG: %[[K:.+]] = memref.alloc() : memref<32x5xvector<4xi32>, #spirv.storage_class<Workgroup>>
// REGSMIX-DAG: %[[V:.+]] = memref.alloc() : memref<16x24xf16, #spirv.storage_class<Workgroup>>
// REGSMIX: scf.for {{.*}} -> (f32, f32, !gpu.mma_matrix<16x16xf32, "COp">) {
// REGSMIX: memref.load %[[KV]]
// REGSMIX: memref.store %{{.+}}, %[[K]]
// REGSMIX: gpu.subgroup_mma_load_matrix %arg2
// REGSMIX: gpu.subgroup_mma_store_matrix %{{.+}}, %[[V]]
// REGSMIX: } else {
// REGSMIX: memref.store %{{.+}}, %[[V]]

// The split-KV merge's loops over chunks (8 here, the count read from the
// workspace; two exp2 per chunk): for SPIR-V unrolled by 4, an epilogue
// loop taking the rest
// (NVIDIA's Vulkan compiler does not unroll them itself, and one memory
// round trip per chunk was most of a decode step's fixed time); for NVVM
// the plain loops (ptxas unrolls them).
// UNROLL: gpu.launch {{.*}} function(@split8_split_kv_merge)
// UNROLL: scf.for {{.*}} -> (f32) {
// UNROLL-COUNT-4: arith.maximumf
// UNROLL: scf.yield
// UNROLL: scf.for {{.*}} step %c1{{.*}} -> (f32) {
// UNROLL: arith.maximumf
// UNROLL: scf.yield
// UNROLL: scf.for {{.*}} -> (f32, f32, f32, f32) {
// UNROLL-COUNT-8: math.exp2
// UNROLL-NOT: math.exp2
// UNROLL: scf.yield
// UNROLL: scf.for {{.*}} step %c1{{.*}} -> (f32, f32, f32, f32) {
// UNROLL-COUNT-2: math.exp2
// UNROLL-NOT: math.exp2
// UNROLL: scf.yield
// UNROLL-NOT: scf.for
// UNROLL: gpu.terminator
// NOUNROLL: gpu.launch {{.*}} function(@split8_split_kv_merge)
// NOUNROLL: scf.for {{.*}} step %c1{{.*}} -> (f32) {
// NOUNROLL: arith.maximumf
// NOUNROLL-NOT: arith.maximumf
// NOUNROLL: scf.yield
// NOUNROLL: scf.for {{.*}} step %c1{{.*}} -> (f32, f32, f32, f32) {
// NOUNROLL-COUNT-2: math.exp2
// NOUNROLL-NOT: math.exp2
// NOUNROLL: scf.yield
// NOUNROLL-NOT: scf.for
// NOUNROLL: gpu.terminator
