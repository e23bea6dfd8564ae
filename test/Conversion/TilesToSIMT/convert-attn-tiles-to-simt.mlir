// RUN: attn-opt %s -split-input-file --attn-tile-sdpa --attn-decompose-online-attention --convert-attn-tiles-to-simt --canonicalize --cse | FileCheck %s
// RUN: attn-opt %S/Inputs/subgroup.mlir --attn-tile-sdpa --attn-decompose-online-attention --convert-attn-tiles-to-simt=spirv=true --canonicalize --cse | FileCheck %s --check-prefix=SUBGROUP
// RUN: not attn-opt %S/Inputs/static-tiles.mlir --attn-tile-sdpa --attn-decompose-online-attention --convert-attn-tiles-to-simt 2>&1 | FileCheck %s --check-prefix=STATIC

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
// S = q . K^T (raw), masked: -inf where !mask; mb = rowmax S; S kept
// CHECK: %[[MB:.+]] = scf.for
// CHECK: memref.load %[[KS]]
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
// acc'' = acc' + P . V, the value column outside the key loop
// CHECK: scf.for
// CHECK: memref.load %[[ACC]]
// CHECK: scf.for
// CHECK: memref.load %[[S]]
// CHECK: memref.load %[[VS]]
// CHECK: memref.store %{{.+}}, %[[ACC]]
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
// normalized output and lse (log2 units); the merge kernel
// (TileDistribution's, shared with the tensor cores) after it; the host
// allocates and frees the workspaces.
// CHECK-LABEL: func.func @split
// CHECK-SAME: attn.launches = {"split_kernels::split_split_kv" = {block_kv = 16 : i64, block_q = 32 : i64, heads = "Hq", kind = "attention", rows = "Sq", splits, when = "always"}, "split_kernels::split_split_kv_merge" = {block_q = 8 : i64, heads = "Hq", kind = "merge", rows = "Sq", when = "always"}}
// CHECK: %[[PO:.+]] = memref.alloc() : memref<1x2x2x40x16xf32>
// CHECK: %[[PL:.+]] = memref.alloc() : memref<1x2x2x40xf32>
// CHECK: gpu.launch
// CHECK: arith.remui %{{.+}}, %c2
// CHECK: arith.divui %{{.+}}, %c2
// CHECK: memref.store %{{.+}}, %[[PO]]
// CHECK: memref.store %{{.+}}, %[[PL]]
// CHECK: gpu.launch
// CHECK: memref.load %[[PL]]
// CHECK: memref.load %[[PO]]
// CHECK: memref.dealloc %[[PO]]
// CHECK: memref.dealloc %[[PL]]
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

// STATIC: error: 'scf.forall' op convert-attn-tiles-to-simt: the SIMT mapping takes dynamic tail tiles of unpacked rows (no static_tiles, no pack_heads)
