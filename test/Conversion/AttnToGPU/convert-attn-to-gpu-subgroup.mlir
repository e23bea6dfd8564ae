// RUN: attn-opt %s -split-input-file -convert-attn-to-gpu="block-q=4 spirv=true subgroup-size=8" -verify-diagnostics | FileCheck %s
// RUN: attn-opt %s -split-input-file -convert-attn-to-gpu="block-q=4 spirv=true subgroup-size=8 kv-splits=2" -verify-diagnostics | FileCheck %s --check-prefix=SPLIT
// RUN: attn-opt %s -split-input-file -convert-attn-to-gpu="block-q=5 spirv=true subgroup-size=8" | FileCheck %s --check-prefix=UNEVEN
// RUN: not attn-opt %s -split-input-file -convert-attn-to-gpu="spirv=true subgroup-size=12" 2>&1 | FileCheck %s --check-prefix=NOTPOW2
// RUN: not attn-opt %s -split-input-file -convert-attn-to-gpu="subgroup-size=8" 2>&1 | FileCheck %s --check-prefix=NOSPIRV
// RUN: not attn-opt %s -split-input-file -convert-attn-to-gpu="block-q=256 spirv=true subgroup-size=8" 2>&1 | FileCheck %s --check-prefix=TOOMANY

// The subgroup kernel (the Vulkan portable variant on devices with subgroup
// arithmetic and shuffles): causal f16, D = 64, Dv = 20 (not a multiple of
// the 8 lanes), lse. A workgroup of 4 rows x 8 lanes = 32 invocations per
// (query block, head, batch); K and V tiles of 64 keys in Workgroup memory.
// CHECK-LABEL: func.func @subgroup
// CHECK-SAME: (%[[Q:.+]]: memref<1x2x100x64xf16>, %[[K:.+]]: memref<1x2x70x64xf16>, %[[V:.+]]: memref<1x2x70x20xf16>, %[[OUT:.+]]: memref<1x2x100x20xf16>, %[[LSE:.+]]: memref<1x2x100xf32>)
// grid x = ceildiv(100, 4); 32 invocations
// CHECK-DAG: %[[C32:.+]] = arith.constant 32 : index
// CHECK: gpu.launch blocks(%[[BX:.+]], %[[BY:.+]], %[[BZ:.+]]) in ({{.*}}) threads(%[[TX:.+]], %{{.+}}, %{{.+}}) in (%{{.+}} = %[[C32]],
// CHECK: %[[KS:.+]] = memref.alloc() : memref<64x64xf16, #spirv.storage_class<Workgroup>>
// CHECK: %[[VS:.+]] = memref.alloc() : memref<64x20xf16, #spirv.storage_class<Workgroup>>
// row i = block x * 4 + subgroup id; lane = the invocation's lane
// CHECK: %[[LANE:.+]] = gpu.lane_id upper_bound 8
// CHECK: %[[SG:.+]] = gpu.subgroup_id upper_bound 4 : index
// CHECK: %[[ROW0:.+]] = arith.muli %[[BX]], %{{.+}} : index
// CHECK: %[[I:.+]] = arith.addi %[[ROW0]], %[[SG]] : index
// CHECK: %[[VALID:.+]] = arith.cmpi ult, %[[I]], %{{.+}} : index
// per lane: the whole q row (64), its accumulator columns ceil(20 / 8) = 3,
// its scores of a block: 64 / 8 = 8 slots, plus one
// CHECK: %[[QROW:.+]] = memref.alloca() : memref<64xf32, #spirv.storage_class<Function>>
// CHECK: %[[ACC:.+]] = memref.alloca() : memref<3xf32, #spirv.storage_class<Function>>
// CHECK: %[[S:.+]] = memref.alloca() : memref<9xf32, #spirv.storage_class<Function>>
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[M:.+]] = %{{.+}}, %[[L:.+]] = %{{.+}}) -> (f32, f32)
// cooperative tile loads striding by all 32 invocations, between barriers
// CHECK: gpu.barrier
// CHECK: scf.for %{{.+}} = %[[TX]] to %{{.+}} step %[[C32B:.+]] {
// CHECK: memref.store %{{.+}}, %[[KS]]
// CHECK: scf.for %{{.+}} = %[[TX]] to %{{.+}} step %{{.+}} {
// CHECK: memref.store %{{.+}}, %[[VS]]
// CHECK: gpu.barrier
// the row's subgroup folds the block (the row is valid for all its lanes)
// CHECK: scf.if %[[VALID]] -> (f32, f32)
// slots = ceil(cols / 8); key c = slot * 8 + lane, scored only inside the
// block, -inf past it; the lane's max
// CHECK: %[[SLOTS:.+]] = arith.divui %{{.+}}, %{{.+}} : index
// CHECK: %[[MLANE:.+]] = scf.for %[[SLOT:.+]] = %{{.+}} to %[[SLOTS]] step %{{.+}} iter_args(%{{.+}} = %{{.+}}) -> (f32)
// CHECK: %[[C8K:.+]] = arith.muli %[[SLOT]], %{{.+}} : index
// CHECK: %[[KEY:.+]] = arith.addi %[[C8K]], %[[LANE]] : index
// CHECK: %[[IN:.+]] = arith.cmpi ult, %[[KEY]], %{{.+}} : index
// CHECK: scf.if %[[IN]] -> (f32)
// CHECK: memref.load %[[KS]][%[[KEY]], %{{.+}}]
// causal: -inf above the diagonal
// CHECK: arith.cmpi sgt
// CHECK: } else {
// CHECK: memref.store %{{.+}}, %[[S]][%[[SLOT]]]
// CHECK: arith.maximumf
// m' = max(m, subgroup max of the lanes' maxima)
// CHECK: %[[MBLK:.+]] = gpu.subgroup_reduce maximumf %[[MLANE]] : (f32) -> f32
// CHECK: %[[MNEW:.+]] = arith.maximumf %[[M]], %[[MBLK]] : f32
// CHECK: %[[ALPHA:.+]] = math.exp2
// P = exp2(S - m_safe); the lane's l' = alpha l + its sum of P
// CHECK: scf.for %{{.+}} = %{{.+}} to %[[SLOTS]]
// CHECK: math.exp2
// CHECK: %[[AL:.+]] = arith.mulf %[[ALPHA]], %[[L]] : f32
// acc' = alpha acc, then for each key its P from the owning lane (shuffle
// idx of slot s from lanes 0..7, width 8) times this lane's columns of V
// (lane, lane + 8, min(lane + 16, 19)); a key past the block (P = 0) reads
// the block's last V row instead of branching
// CHECK: %[[COL2:.+]] = arith.minui %{{.+}}, %{{.+}} : index
// CHECK: %[[LAST:.+]] = arith.subi %{{.+}}, %{{.+}} : index
// CHECK: scf.for %[[PS:.+]] = %{{.+}} to %[[SLOTS]]
// CHECK: %[[MINE:.+]] = memref.load %[[S]][%[[PS]]]
// CHECK: %[[P0:.+]], %{{.+}} = gpu.shuffle idx %[[MINE]], %{{.+}}, %{{.+}} : f32
// CHECK: %[[KEY0:.+]] = arith.minui %{{.+}}, %[[LAST]] : index
// CHECK-NOT: scf.if
// CHECK: %[[V0:.+]] = memref.load %[[VS]][%[[KEY0]], %{{.+}}]
// CHECK: %[[PV:.+]] = arith.mulf %[[P0]], %{{.+}} : f32
// CHECK: memref.store %{{.+}}, %[[ACC]]
// CHECK: memref.load %[[VS]][%[[KEY0]], %[[COL2]]]
// CHECK-COUNT-7: gpu.shuffle idx %[[MINE]]
// after the key loop: l = subgroup sum of the lanes' shares; out
// CHECK: scf.if %[[VALID]] {
// CHECK: %[[LROW:.+]] = gpu.subgroup_reduce add %{{.+}} : (f32) -> f32
// CHECK: arith.cmpf oeq, %[[LROW]]
// columns lane and lane + 8 always, lane + 16 only below Dv = 20
// CHECK: memref.store %{{.+}}, %[[OUT]][%[[BZ]], %[[BY]], %[[I]], %{{.+}}]
// CHECK: memref.store %{{.+}}, %[[OUT]][%[[BZ]], %[[BY]], %[[I]], %{{.+}}]
// CHECK: %[[C16:.+]] = arith.addi %{{.+}}, %[[LANE]] : index
// CHECK: %[[INSIDE:.+]] = arith.cmpi ult, %[[C16]], %{{.+}} : index
// CHECK: scf.if %[[INSIDE]] {
// CHECK: memref.store %{{.+}}, %[[OUT]][%[[BZ]], %[[BY]], %[[I]], %[[C16]]]
// lse by lane 0
// CHECK: %[[FIRST:.+]] = arith.cmpi eq, %[[LANE]], %{{.+}} : index
// CHECK: scf.if %[[FIRST]] {
// CHECK: math.log2
// CHECK: memref.store %{{.+}}, %[[LSE]][%[[BZ]], %[[BY]], %[[I]]]
// CHECK: gpu.terminator

// Split in 2: each chunk's lanes write the partial columns, lane 0 the
// partial lse.
// SPLIT-LABEL: func.func @subgroup
// SPLIT: %[[PO:.+]] = memref.alloc() : memref<1x2x2x100x20xf32>
// SPLIT: %[[PL:.+]] = memref.alloc() : memref<1x2x2x100xf32>
// SPLIT: gpu.launch
// SPLIT: gpu.lane_id upper_bound 8
// SPLIT: gpu.subgroup_reduce maximumf
// SPLIT: gpu.shuffle idx
// SPLIT: gpu.subgroup_reduce add
// SPLIT: } else {
// SPLIT: memref.store %{{.+}}, %[[PO]]
// SPLIT: arith.cmpi eq
// SPLIT: scf.if
// SPLIT: memref.store %{{.+}}, %[[PL]]
// SPLIT: gpu.launch
// SPLIT: memref.dealloc %[[PO]]

// 40 invocations do not divide the 64 x 64 K tile: every invocation runs
// ceil(4096 / 40) = 103 copy iterations and tests the tile's end inside
// (lavapipe mis-stored sub-word tiles when invocations left the loop at
// different iterations), the 64 x 20 V tile (1280 = 32 x 40) as before.
// UNEVEN-LABEL: func.func @subgroup
// UNEVEN: gpu.lane_id
// UNEVEN: gpu.barrier
// UNEVEN: %[[C103:.+]] = arith.constant 103 : index
// UNEVEN: scf.for %[[IT:.+]] = %{{.+}} to %[[C103]] step %{{.+}} {
// UNEVEN: %[[E0:.+]] = arith.muli %[[IT]], %{{.+}} : index
// UNEVEN: %[[E:.+]] = arith.addi %[[E0]], %{{.+}} : index
// UNEVEN: %[[C4096:.+]] = arith.constant 4096 : index
// UNEVEN: arith.cmpi ult, %[[E]], %[[C4096]] : index
// UNEVEN: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} {
// UNEVEN: gpu.barrier

// NOTPOW2: subgroup-size is 12; it must be 0 (a thread per row) or a power of two up to 128
// NOSPIRV: subgroup-size=8 needs spirv=true
// TOOMANY: block-q 256 x subgroup-size 8 is more than 1024 invocations per workgroup
func.func @subgroup(%q: memref<1x2x100x64xf16>, %k: memref<1x2x70x64xf16>, %v: memref<1x2x70x20xf16>,
                    %out: memref<1x2x100x20xf16>, %lse: memref<1x2x100xf32>) {
  %qt = bufferization.to_tensor %q restrict : memref<1x2x100x64xf16> to tensor<1x2x100x64xf16>
  %kt = bufferization.to_tensor %k restrict : memref<1x2x70x64xf16> to tensor<1x2x70x64xf16>
  %vt = bufferization.to_tensor %v restrict : memref<1x2x70x20xf16> to tensor<1x2x70x20xf16>
  %o, %l = attn.sdpa %qt, %kt, %vt causal scale(0.125)
      : tensor<1x2x100x64xf16>, tensor<1x2x70x64xf16>, tensor<1x2x70x20xf16> -> tensor<1x2x100x20xf16>, tensor<1x2x100xf32>
  bufferization.materialize_in_destination %o in restrict writable %out
      : (tensor<1x2x100x20xf16>, memref<1x2x100x20xf16>) -> ()
  bufferization.materialize_in_destination %l in restrict writable %lse
      : (tensor<1x2x100xf32>, memref<1x2x100xf32>) -> ()
  return
}
