// convert-attn-tiles-to-nvgpu: the tiled form (attn-tile-sdpa and
// attn-decompose-online-attention of an sdpa whose tiling has an
// #attn.mma_sync mapping, as attn-configure-nvgpu sets it) distributed
// onto mma.sync fragments. The tiling is given here, not chosen, so the
// checks follow the mapping.
// RUN: attn-opt %s -split-input-file -attn-tile-sdpa=max-dynamic-kv=65536 -attn-decompose-online-attention -convert-attn-tiles-to-nvgpu -cse | FileCheck %s

// Causal f16, D = 32, 4 warps of one m16 row tile (64 query rows), a ring
// of 2 K/V stages of 64 keys (2 x 64 x (32 + 32) x 2 = 16384 bytes), Q
// (64 x 32) aliasing stage 1, heaviest first, 168 registers asked of ptxas.
// CHECK-LABEL: func.func @causal
// The launch description (attn-launch-info moves it onto the launch_func)
// CHECK-SAME: attributes {attn.launches = {"causal_kernels::causal" = {block_kv = 64 : i64, block_q = 64 : i64, heads = "Hq", kind = "attention", rows = "Sq", when = "always"}}}
// grid (query blocks, heads, batch), 128 threads
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c2, {{.*}} = %c2, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c128, {{.*}}) dynamic_shared_memory_size %c16384_i32 module(@causal_kernels) function(@causal)
// CHECK: memref.get_global @__attn_tc_dynamic_smem {{.*}} {attn.nvvm_max_registers = 168 : i32}
// ldmatrix reads the whole buffer as one f16 array
// CHECK: %[[FLAT:.+]] = memref.view {{.*}} to memref<8192xf16, #gpu.address_space<workgroup>>
// heaviest first from 16 query blocks up (32-bit arithmetic on the ids)
// CHECK: arith.cmpi uge, %{{.*}}, %c16_i32 : i32
// Q by cp.async into stage 1's space (byte 8192): 16-byte chunks, rows
// past Sq zero-filled (a source size of 0 elements), then block 0
// CHECK: memref.view %{{.*}}[%c8192][] : {{.*}} to memref<64x32xf16, #gpu.address_space<workgroup>>
// CHECK-COUNT-2: nvgpu.device_async_copy %arg0[{{.*}}], %{{.*}}[{{.*}}], 8, %{{.*}} {bypassL1}
// CHECK: nvvm.cp.async.commit.group
// CHECK-COUNT-2: nvgpu.device_async_copy %arg1
// CHECK-COUNT-2: nvgpu.device_async_copy %arg2
// CHECK: nvvm.cp.async.commit.group
// Q's group landed (block 0's may be pending): Q's A fragments, 16
// columns each, the second by XOR of the swizzled chunk
// CHECK: nvvm.cp.async.wait.group 1
// CHECK-NEXT: gpu.barrier
// CHECK: %[[QADDR:.+]] = arith.addi %c4096, %{{.*}} : index
// CHECK-NEXT: nvgpu.ldmatrix %[[FLAT]][%[[QADDR]]] {numTiles = 4 : i32, transpose = false}
// CHECK-NEXT: %[[QADDR2:.+]] = arith.xori %[[QADDR]], %c16 : index
// CHECK-NEXT: nvgpu.ldmatrix %[[FLAT]][%[[QADDR2]]] {numTiles = 4 : i32, transpose = false}
// The blocks every row sees whole run in a first loop, carrying Dv / 8 = 4
// accumulator fragments, the 2 row maxima and the 2 partial row sums;
// each waits for its block, then issues the next one
// CHECK: %[[WHOLE:.+]]:8 = scf.for %{{.*}} = %c0 to %[[NWHOLE:[^ ]+]] step %c1 iter_args({{.*}}) -> (vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, f32, f32, f32, f32)
// CHECK-NEXT: nvvm.cp.async.wait.group 0
// CHECK-NEXT: gpu.barrier
// CHECK: scf.if
// CHECK-COUNT-4: nvgpu.device_async_copy
// CHECK: nvvm.cp.async.commit.group
// S = Q K^T: 8 key tiles of 8 x 2 steps of k16
// CHECK-COUNT-16: nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
// the raw scores' row max, over the quad by xor shuffles 1 and 2, then
// scaled (scale = 1 / sqrt(32) = 0.1767...: the max in natural units)
// CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32, %c32_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c2_i32
// CHECK: %[[SCALE:.+]] = arith.constant 0.176776692 : f32
// CHECK-NEXT: arith.mulf %{{.*}}, %[[SCALE]] : f32
// the lazy rescale: only when a row of the warp sees a block max above
// its running max + 8 ln 2 (P up to 2^8), by one vote for the warp
// CHECK: arith.constant 5.54517746 : f32
// CHECK: arith.cmpf ogt
// CHECK: nvvm.vote.sync  any %c-1_i32, %{{.*}} -> i1
// CHECK: scf.if %{{.*}} -> (f32, f32, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, f32, f32)
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK: } else {
// P = exp2(fma(S, scale log2 e, -m log2 e)), one MUFU.EX2 each, rounded
// to f16 for the second product; the row sums add the f32 values
// CHECK: %[[L2E:.+]] = arith.constant 1.44269502 : f32
// CHECK-NEXT: arith.mulf %{{.*}}, %[[L2E]] : f32
// CHECK-NEXT: arith.negf
// CHECK: %[[C:.+]] = arith.constant 0.255034864 : f32
// CHECK-NEXT: math.fma %{{.*}}, %[[C]], %{{.*}} : f32
// CHECK-NEXT: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK-NEXT: arith.truncf %{{.*}} : f32 to f16
// P's C fragments as A fragments, V by transposed ldmatrix
// CHECK: vector.from_elements {{.*}} : vector<4x2xf16>
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK-COUNT-16: nvgpu.mma.sync
// The edge blocks (the diagonal, the tail) from where the whole ones end:
// keys past Skv or above the diagonal are -inf
// CHECK: scf.for %{{.*}} = %[[NWHOLE]] to %{{.*}} step %c1 iter_args(%{{.*}} = %[[WHOLE]]#0
// CHECK: arith.cmpi uge, %{{.*}}, %c100 : index
// CHECK: arith.cmpi sgt
// CHECK: arith.ori
// CHECK: arith.select %{{.*}}, %cst, %{{.*}} : f32
// The row sums over the quad, 1 / l (0 for a row that saw no key), and
// the rows below Sq stored, from coordinates computed again (heaviest
// first) rather than held across the loops
// CHECK: gpu.shuffle  xor
// CHECK: arith.divf %{{.*}}, %{{.*}} : f32
// CHECK: llvm.inline_asm has_side_effects "mov.b64 $0, $1;"
// CHECK: arith.cmpi ult
// CHECK: scf.if
// CHECK: memref.store %{{.*}}, %arg3[
// CHECK: gpu.terminator
func.func @causal(%q: memref<1x2x100x32xf16, strided<[?, ?, ?, 1], offset: ?>>,
                  %k: memref<1x2x100x32xf16, strided<[?, ?, ?, 1], offset: ?>>,
                  %v: memref<1x2x100x32xf16, strided<[?, ?, ?, 1], offset: ?>>,
                  %out: memref<1x2x100x32xf16, strided<[?, ?, ?, 1], offset: ?>>) {
  %qt = bufferization.to_tensor %q restrict : memref<1x2x100x32xf16, strided<[?, ?, ?, 1], offset: ?>> to tensor<1x2x100x32xf16>
  %kt = bufferization.to_tensor %k restrict : memref<1x2x100x32xf16, strided<[?, ?, ?, 1], offset: ?>> to tensor<1x2x100x32xf16>
  %vt = bufferization.to_tensor %v restrict : memref<1x2x100x32xf16, strided<[?, ?, ?, 1], offset: ?>> to tensor<1x2x100x32xf16>
  %o = attn.sdpa %qt, %kt, %vt causal {tiling = #attn.tiling<block_q = 64, block_kv = 64, static_tiles = true, rescale_threshold = 8, p_type = f16, heaviest_first = 16777216, mapping = #attn.mma_sync<warps = 4, row_tiles = 1, stages = 2, shared_bytes = 16384, max_registers = 168>>}
      : tensor<1x2x100x32xf16>, tensor<1x2x100x32xf16>, tensor<1x2x100x32xf16> -> tensor<1x2x100x32xf16>
  bufferization.materialize_in_destination %o in restrict writable %out
      : (tensor<1x2x100x32xf16>, memref<1x2x100x32xf16, strided<[?, ?, ?, 1], offset: ?>>) -> ()
  return
}

// -----

// Split-KV with the chunk count chosen per launch (here the host's: 3, at
// most the 2 key blocks): f32 workspaces [B, Hq, chunks, Sq(, Dv)] from
// the host, grid y = Hq x chunks, then the merge kernel, both in one
// module; the workspaces die after it.
// CHECK-LABEL: func.func @split
// CHECK-SAME: attributes {attn.launches = {"split_kernels::split_split_kv" = {block_kv = 64 : i64, block_q = 64 : i64, heads = "Hq", kind = "attention", rows = "Sq", splits, when = "always"}, "split_kernels::split_split_kv_merge" = {block_q = 4 : i64, heads = "Hq", kind = "merge", rows = "Sq", when = "always"}}}
// (the host's count makes them static, cast to the kernels' dynamic
// count), each allocation named by its role for the runtime.
// CHECK: %[[PO0:.+]] = memref.alloc() {attn.workspace = "partial_out"} : memref<1x2x2x100x32xf32>
// CHECK: %[[PO:.+]] = memref.cast %[[PO0]] : memref<1x2x2x100x32xf32> to memref<1x2x?x100x32xf32>
// CHECK: %[[PS0:.+]] = memref.alloc() {attn.workspace = "partial_stats"} : memref<1x2x2x2x100xf32>
// CHECK: %[[PS:.+]] = memref.cast %[[PS0]] : memref<1x2x2x2x100xf32> to memref<1x2x?x2x100xf32>
// CHECK: %[[GY:.+]] = arith.muli %c2, %c2 : index
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c2, {{.*}} = %[[GY]], {{.*}} = %c1) {{.*}} module(@split_kernels) function(@split_split_kv)
// the kernel's chunk count is the workspace's extent; chunk s of the
// visible blocks: [min(s ceil(n / N), n), min(that + ceil(n / N), n))
// CHECK: %[[NS:.+]] = memref.dim %[[PS]], %c2 : memref<1x2x?x2x100xf32>
// CHECK: arith.remui %{{.*}}, %[[NS]] : index
// CHECK: arith.divui %{{.*}}, %[[NS]] : index
// each chunk writes its rows' m and l (index 0 and 1 of the stats), and
// acc / l (f32); no lse
// CHECK-NOT: math.log2
// CHECK: memref.store %{{.*}}, %[[PS]][%{{.*}}, %{{.*}}, %{{.*}}, %c0, %{{.*}}]
// CHECK: memref.store %{{.*}}, %[[PS]][%{{.*}}, %{{.*}}, %{{.*}}, %c1, %{{.*}}]
// CHECK: memref.store %{{.*}}, %[[PO]][
// CHECK: gpu.terminator
// the merge: a thread per (row, column), 4 rows of Dv = 32 per
// workgroup; M = max_s m_s, w_s = l_s exp2((m_s - M) log2 e), out = sum
// w_s O_s / sum w_s, lse = M + log2(sum w_s) ln 2 by the row's first
// thread; the two sums in one pass over the chunks, each compensated
// (sum and compensation carried)
// CHECK: gpu.launch {{.*}} module(@split_kernels) function(@split_split_kv_merge)
// CHECK: scf.for {{.*}} -> (f32)
// CHECK: memref.load %[[PS]][%{{.*}}, %{{.*}}, %{{.*}}, %c0, %{{.*}}]
// CHECK: arith.maximumf
// CHECK: scf.for {{.*}} -> (f32, f32, f32, f32)
// CHECK: memref.load %[[PS]][%{{.*}}, %{{.*}}, %{{.*}}, %c0, %{{.*}}]
// CHECK: memref.load %[[PS]][%{{.*}}, %{{.*}}, %{{.*}}, %c1, %{{.*}}]
// CHECK: arith.subf
// CHECK: arith.constant 1.44269502 : f32
// CHECK: math.exp2
// CHECK: memref.load %[[PO]]
// CHECK: scf.yield
// CHECK-NOT: scf.for
// CHECK: arith.divf
// CHECK: arith.constant 0.693147182 : f32
// CHECK: memref.store %{{.*}}, %arg1[
// CHECK: memref.store %{{.*}}, %arg2[
// CHECK: memref.dealloc %[[PO]]
// CHECK: memref.dealloc %[[PS]]
func.func @split(%q: memref<1x2x100x32xf16>, %out: memref<1x2x100x32xf16>, %lse: memref<1x2x100xf32>) {
  %qt = bufferization.to_tensor %q restrict : memref<1x2x100x32xf16> to tensor<1x2x100x32xf16>
  %o, %l = attn.sdpa %qt, %qt, %qt causal {tiling = #attn.tiling<block_q = 64, block_kv = 64, kv_splits = 3, launch_splits = true, static_tiles = true, rescale_threshold = 8, p_type = f16, mapping = #attn.mma_sync<warps = 4, row_tiles = 1, stages = 2, shared_bytes = 16384>>}
      : tensor<1x2x100x32xf16>, tensor<1x2x100x32xf16>, tensor<1x2x100x32xf16> -> tensor<1x2x100x32xf16>, tensor<1x2x100xf32>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x2x100x32xf16>, memref<1x2x100x32xf16>) -> ()
  bufferization.materialize_in_destination %l in restrict writable %lse : (tensor<1x2x100xf32>, memref<1x2x100xf32>) -> ()
  return
}

// -----

// Decode: a static Sq = 1 with the 4 query heads of each K/V head packed as
// the rows of one tile (GQA 8 / 2), two warps; q and out seen as [B, Hkv,
// group, D] views of the caller's buffers; grid y over the K/V heads.
// CHECK-LABEL: func.func @decode
// CHECK-SAME: attributes {attn.launches = {"decode_kernels::decode" = {block_kv = 64 : i64, block_q = 32 : i64, heads = "Hkv", kind = "attention", rows = "Group", when = "always"}}}
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c1, {{.*}} = %c2, {{.*}} = %c4) threads({{.*}}) in ({{.*}} = %c64,
// CHECK: memref.reinterpret_cast %arg0
// CHECK: memref.reinterpret_cast %arg2
// bf16 products through nvvm.mma.sync (two bf16 per i32 register): S
// over 8 key tiles x 8 steps of k16 (D = 128)
// CHECK-COUNT-64: nvvm.mma.sync A[{{.*}}]  B[{{.*}}]  C[{{.*}}]  {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}
func.func @decode(%q: memref<4x8x1x128xbf16>, %k: memref<4x2x?x128xbf16>, %out: memref<4x8x1x128xbf16>) {
  %qt = bufferization.to_tensor %q restrict : memref<4x8x1x128xbf16> to tensor<4x8x1x128xbf16>
  %kt = bufferization.to_tensor %k restrict : memref<4x2x?x128xbf16> to tensor<4x2x?x128xbf16>
  %o = attn.sdpa %qt, %kt, %kt {tiling = #attn.tiling<block_q = 32, block_kv = 64, static_tiles = true, pack_heads = true, rescale_threshold = 8, p_type = bf16, mapping = #attn.mma_sync<warps = 2, row_tiles = 1, stages = 2, shared_bytes = 65536>>}
      : tensor<4x8x1x128xbf16>, tensor<4x2x?x128xbf16>, tensor<4x2x?x128xbf16> -> tensor<4x8x1x128xbf16>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<4x8x1x128xbf16>, memref<4x8x1x128xbf16>) -> ()
  return
}

// -----

// Two m16 row tiles per warp (128 rows of D = 64, 4 warps), Q from shared
// memory in its own space, and lse. Every block but the last is whole: its
// copies skip the row checks, and their first key goes through an opaque
// move (otherwise LLVM turns each thread's copy addresses into pointers
// carried by the loop, registers a 255-register kernel does not have).
// CHECK-LABEL: func.func @two_tiles
// CHECK: gpu.launch {{.*}} threads({{.*}}) in ({{.*}} = %c128, {{.*}} dynamic_shared_memory_size %c49152_i32
// CHECK-NOT: attn.nvvm_max_registers
// CHECK: %[[J0:.+]] = arith.muli %{{.*}}, %c64 : index
// CHECK-NEXT: %[[END:.+]] = arith.addi %[[J0]], %c64 : index
// CHECK-NEXT: %[[WHOLE:.+]] = arith.cmpi ule, %[[END]], %[[SKV:.+]] : index
// CHECK-NEXT: scf.if %[[WHOLE]] {
// CHECK-NEXT: %[[J0I:.+]] = arith.index_cast %[[J0]] : index to i64
// CHECK-NEXT: llvm.inline_asm has_side_effects "mov.b64 $0, $1;", "=l,l" %[[J0I]] : (i64) -> i64
// whole-block copies: no source size (no row check)
// CHECK: nvgpu.device_async_copy %arg1[{{.*}}], %{{.*}}[{{.*}}], 8 {bypassL1}
// CHECK: } else {
// CHECK: nvgpu.device_async_copy %arg1[{{.*}}], %{{.*}}[{{.*}}], 8, %{{.*}} {bypassL1}
// the loops carry 2 x 8 accumulator fragments, 4 maxima, 4 partial sums
// CHECK: scf.for {{.*}} -> (vector<2x2xf32>, {{.*}}, f32, f32, f32, f32, f32, f32, f32, f32)
// Q's fragments are read from shared memory in the loop, one ldmatrix per
// row tile and 16 columns, each K fragment feeding both tiles' MMAs
// CHECK: nvgpu.ldmatrix {{.*}} : memref<24576xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
// CHECK: scf.for
// lse = (m + log2 l) ln 2 (-inf for a row without keys), stored by the
// quad's first thread for rows below Sq, before the output tile
// CHECK: math.log2
// CHECK: arith.constant 0.693147182 : f32
// CHECK: memref.store %{{.*}}, %arg3[%{{.*}}, %{{.*}}, %{{.*}}] : memref<1x2x?xf32>
// CHECK: memref.store %{{.*}}, %arg2[
func.func @two_tiles(%q: memref<1x2x?x64xf16>, %k: memref<1x2x?x64xf16>, %out: memref<1x2x?x64xf16>, %lse: memref<1x2x?xf32>) {
  %qt = bufferization.to_tensor %q restrict : memref<1x2x?x64xf16> to tensor<1x2x?x64xf16>
  %kt = bufferization.to_tensor %k restrict : memref<1x2x?x64xf16> to tensor<1x2x?x64xf16>
  %o, %l = attn.sdpa %qt, %kt, %kt {tiling = #attn.tiling<block_q = 128, block_kv = 64, static_tiles = true, rescale_threshold = 8, p_type = f16, mapping = #attn.mma_sync<warps = 4, row_tiles = 2, stages = 2, q_from_smem = true, shared_bytes = 49152>>}
      : tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16> -> tensor<1x2x?x64xf16>, tensor<1x2x?xf32>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x2x?x64xf16>, memref<1x2x?x64xf16>) -> ()
  bufferization.materialize_in_destination %l in restrict writable %lse : (tensor<1x2x?xf32>, memref<1x2x?xf32>) -> ()
  return
}
