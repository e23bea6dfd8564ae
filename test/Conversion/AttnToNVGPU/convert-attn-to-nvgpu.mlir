// One m16 row tile per warp here (row-tiles=1); the default's two tiles
// for 4-warp kernels at D, Dv <= 64 without a mask: the RT2 prefix.
// RUN: attn-opt %s -split-input-file -convert-attn-to-nvgpu=row-tiles=1 | FileCheck %s
// RUN: attn-opt %s -split-input-file -convert-attn-to-nvgpu="kv-splits=3 row-tiles=1" | FileCheck %s --check-prefix=SPLIT
// RUN: attn-opt %s -split-input-file -convert-attn-to-nvgpu | FileCheck %s --check-prefix=RT2
// RUN: attn-opt %s -split-input-file -convert-attn-to-nvgpu="block-kv=32 row-tiles=1" | FileCheck %s --check-prefix=BC32
// RUN: not attn-opt %s -split-input-file -convert-attn-to-nvgpu=row-tiles=3 2>&1 | FileCheck %s --check-prefix=BADRT
// RUN: not attn-opt %s -split-input-file -convert-attn-to-nvgpu=block-kv=48 2>&1 | FileCheck %s --check-prefix=BADRT

// BADRT: convert-attn-to-nvgpu: warps must be 0, 1, 2, 4 or 8, stages 0 or in [2, 4], kv-splits >= 1, row-tiles 0, 1 or 2 and block-kv 0, 16, 32 or 64

// block-kv=32: stages of 32 keys (2 x 32 x (32 + 32) x 2 = 8192 bytes; Q,
// 64 x 32, aliases stage 1 at 4096), blocks of 32: four 8-key S tiles
// times two 16-column steps of D = 32, eight MMAs before the softmax
// BC32-LABEL: func.func @causal
// BC32: gpu.launch {{.*}} dynamic_shared_memory_size %c8192_i32
// BC32: memref.view %{{.+}}[%c4096{{(_[0-9]+)?}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x32xf16, #gpu.address_space<workgroup>>
// BC32: arith.divui %{{.+}}, %c32
// BC32: scf.for
// BC32: memref.view {{.*}} to memref<32x32xf16, #gpu.address_space<workgroup>>
// BC32-COUNT-8: nvgpu.mma.sync
// BC32-NOT: nvgpu.mma.sync
// BC32: gpu.shuffle  xor

// By default (RT2) the causal D = 32 kernel below gives each warp two m16
// row tiles: 4 warps, 128 query rows; Q (128 x 32) in its own space after
// the ring (2 x 8192 bytes), 24576 bytes in all, and no register budget of
// its own (what one workgroup can have). In the key loop Q's fragments of
// each 16 of D are read from shared memory (one ldmatrix per row tile),
// then every K fragment feeds the MMAs of both tiles.
// RT2-LABEL: func.func @causal
// RT2: gpu.launch {{.*}} threads({{.*}}) in (%{{.+}} = %c128{{(_[0-9]+)?}}, {{.*}} dynamic_shared_memory_size %c24576_i32
// RT2-NOT: attn.nvvm_max_registers
// RT2: memref.get_global @__attn_tc_dynamic_smem
// RT2-NOT: attn.nvvm_max_registers
// RT2: %[[FLAT:.+]] = memref.view %{{.+}}[%c0{{(_[0-9]+)?}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<12288xf16, #gpu.address_space<workgroup>>
// RT2: memref.view %{{.+}}[%c16384{{(_[0-9]+)?}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<128x32xf16, #gpu.address_space<workgroup>>
// RT2: scf.for
// Q's element offset (16384 / 2) through an opaque move, so that LLVM
// does not hoist every fragment's address out of the loop
// RT2: %[[QOFF:.+]] = arith.index_cast %c8192{{(_[0-9]+)?}} : index to i64
// RT2: llvm.inline_asm has_side_effects "mov.b64 $0, $1;", "=l,l" %[[QOFF]] : (i64) -> i64
// RT2: %[[QA:.+]] = nvgpu.ldmatrix %[[FLAT]]
// RT2: %[[QB:.+]] = nvgpu.ldmatrix %[[FLAT]]
// RT2: nvgpu.ldmatrix
// RT2: nvgpu.mma.sync(%[[QA]], %{{.+}}, %{{.+}})
// RT2: nvgpu.mma.sync(%[[QA]], %{{.+}}, %{{.+}})
// RT2: nvgpu.mma.sync(%[[QB]], %{{.+}}, %{{.+}})
// RT2: nvgpu.mma.sync(%[[QB]], %{{.+}}, %{{.+}})

// Causal f16, D = 32: 4 warps (128 threads) per 64 query rows (causal);
// a ring of 2 K/V stages of 64 keys in dynamic shared memory (2 x 64 x
// (32 + 32) x 2 bytes = 16384), Q aliasing stage 1.
// CHECK: memref.global "public" @__attn_tc_dynamic_smem : memref<0xi8, #gpu.address_space<workgroup>> {alignment = 16 : i64}
// CHECK-LABEL: func.func @causal
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: memref<1x2x100x32xf16, {{.*}}>, %[[K:[a-z0-9]+]]: memref<1x2x100x32xf16, {{.*}}>, %[[V:[a-z0-9]+]]: memref<1x2x100x32xf16, {{.*}}>, %[[OUT:[a-z0-9]+]]: memref<1x2x100x32xf16, {{.*}}>)
// CHECK-NOT: attn.sdpa
// CHECK: gpu.launch blocks(%[[BX:[a-z0-9_]+]], %[[BY:[a-z0-9_]+]], %[[BZ:[a-z0-9_]+]]) in (%[[GX:[a-z0-9_]+]] = %{{.+}}, %[[GY:[a-z0-9_]+]] = %{{.+}}, %[[GZ:[a-z0-9_]+]] = %{{.+}}) threads({{.*}}) in (%{{.+}} = %c128, %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) dynamic_shared_memory_size %c16384_i32
// D <= 64 with 4 warps: a budget of 168 registers (three workgroups per
// SM) for attn-nvvm-max-registers
// CHECK: %[[G:.+]] = memref.get_global @__attn_tc_dynamic_smem : memref<0xi8, #gpu.address_space<workgroup>> {attn.nvvm_max_registers = 168 : i32}
// CHECK: %[[SMEM:.+]] = memref.cast %[[G]] : memref<0xi8, #gpu.address_space<workgroup>> to memref<?xi8, #gpu.address_space<workgroup>>
// ldmatrix reads the whole buffer as one f16 array (elements)
// CHECK: %[[FLAT:.+]] = memref.view %[[SMEM]][%c0{{(_[0-9]+)?}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<8192xf16, #gpu.address_space<workgroup>>
// causal, heaviest first, in 32-bit arithmetic. From 16 query blocks up,
// the linear workgroup id (x fastest, the order workgroups start in) maps
// to (query block, y, z): heads are taken in groups whose K and V fit 16
// MiB (131072 keys of (32 + 32) x 2 bytes, x the GQA ratio, / Skv = 100;
// here both heads in one group); within a group, rank r = id / heads takes
// query block gx - 1 - r of head id % heads, so every head's last (longest)
// query block starts before any head's next one. Fewer query blocks: block
// x takes query block gx - 1 - x.
// CHECK: %[[GX32:.+]] = arith.index_cast %[[GX]] : index to i32
// CHECK: %[[LAST:.+]] = arith.subi %[[GX32]], %c1_i32 : i32
// CHECK: %[[MANY:.+]] = arith.cmpi uge, %[[GX32]], %c16_i32 : i32
// CHECK: %[[CO:.+]]:3 = scf.if %[[MANY]] -> (index, index, index) {
// CHECK: %[[GY32:.+]] = arith.index_cast %[[GY]] : index to i32
// CHECK: %[[GZ32:.+]] = arith.index_cast %[[GZ]] : index to i32
// CHECK: %[[BZ32:.+]] = arith.index_cast %[[BZ]] : index to i32
// CHECK: %[[ZY:.+]] = arith.muli %[[GY32]], %[[BZ32]] : i32
// CHECK: %[[BY32:.+]] = arith.index_cast %[[BY]] : index to i32
// CHECK: %[[YZ:.+]] = arith.addi %[[BY32]], %[[ZY]] : i32
// CHECK: %[[XYZ:.+]] = arith.muli %[[GX32]], %[[YZ]] : i32
// CHECK: %[[BX32:.+]] = arith.index_cast %[[BX]] : index to i32
// CHECK: %[[LIN:.+]] = arith.addi %[[BX32]], %[[XYZ]] : i32
// CHECK: %[[PAIRS:.+]] = arith.muli %[[GY32]], %[[GZ32]] : i32
// CHECK: %[[SKV:.+]] = arith.minui %c100{{(_[0-9]+)?}}, %c2147483647 : index
// CHECK: %[[SKV32:.+]] = arith.index_cast %[[SKV]] : index to i32
// CHECK: %[[RATIO:.+]] = arith.minui %{{.+}}, %c4096_i32 : i32
// CHECK: %[[SKV1:.+]] = arith.maxui %[[SKV32]], %c1_i32 : i32
// CHECK: %[[RATIO1:.+]] = arith.maxui %[[RATIO]], %c1_i32 : i32
// CHECK: %[[KEYS:.+]] = arith.muli %c131072_i32, %[[RATIO1]] : i32
// CHECK: %[[GRP0:.+]] = arith.divui %[[KEYS]], %[[SKV1]] : i32
// CHECK: %[[GRP1:.+]] = arith.maxui %[[GRP0]], %c1_i32 : i32
// CHECK: %[[GRP:.+]] = arith.minui %[[GRP1]], %[[PAIRS]] : i32
// CHECK: %[[SPAN:.+]] = arith.muli %[[GRP]], %[[GX32]] : i32
// CHECK: %[[CHUNK:.+]] = arith.divui %[[LIN]], %[[SPAN]] : i32
// CHECK: %[[FIRST:.+]] = arith.muli %[[CHUNK]], %[[GRP]] : i32
// CHECK: %[[LEFT:.+]] = arith.subi %[[PAIRS]], %[[FIRST]] : i32
// CHECK: %[[INGRP:.+]] = arith.minui %[[GRP]], %[[LEFT]] : i32
// CHECK: %[[BEFORE:.+]] = arith.muli %[[CHUNK]], %[[SPAN]] : i32
// CHECK: %[[R:.+]] = arith.subi %[[LIN]], %[[BEFORE]] : i32
// CHECK: %[[RANK:.+]] = arith.divui %[[R]], %[[INGRP]] : i32
// CHECK: %[[RPOS:.+]] = arith.remui %[[R]], %[[INGRP]] : i32
// CHECK: %[[PAIR:.+]] = arith.addi %[[FIRST]], %[[RPOS]] : i32
// CHECK: %[[QB32:.+]] = arith.subi %[[LAST]], %[[RANK]] : i32
// CHECK: %[[QBM:.+]] = arith.index_castui %[[QB32]] : i32 to index
// CHECK: %[[H32:.+]] = arith.remui %[[PAIR]], %[[GY32]] : i32
// CHECK: %[[HM:.+]] = arith.index_castui %[[H32]] : i32 to index
// CHECK: %[[B32:.+]] = arith.divui %[[PAIR]], %[[GY32]] : i32
// CHECK: %[[BM:.+]] = arith.index_castui %[[B32]] : i32 to index
// CHECK: scf.yield %[[QBM]], %[[HM]], %[[BM]] : index, index, index
// CHECK: } else {
// CHECK: %[[BXF:.+]] = arith.index_cast %[[BX]] : index to i32
// CHECK: %[[QBF32:.+]] = arith.subi %[[LAST]], %[[BXF]] : i32
// CHECK: %[[QBF:.+]] = arith.index_castui %[[QBF32]] : i32 to index
// CHECK: scf.yield %[[QBF]], %[[BY]], %[[BZ]] : index, index, index
// CHECK: }
// Q (64 x 32) by cp.async into stage 1's space: 16-byte chunks, chunk c of
// row r at c ^ swizzle(r), rows past Sq zero-filled (source elements 0)
// CHECK: %[[QT:.+]] = memref.view %[[SMEM]][%c8192{{(_[0-9]+)?}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x32xf16, #gpu.address_space<workgroup>>
// CHECK: %[[QOK:.+]] = arith.cmpi ult
// CHECK: %[[QN:.+]] = arith.select %[[QOK]], %c8{{(_[0-9]+)?}}, %c0{{(_[0-9]+)?}}
// CHECK: %[[QSW:.+]] = arith.xori
// CHECK: %[[QCOL:.+]] = arith.muli %[[QSW]], %c8{{(_[0-9]+)?}}
// CHECK: nvgpu.device_async_copy %[[Q]][{{.*}}], %[[QT]][%{{.+}}, %[[QCOL]]], 8, %[[QN]] {bypassL1}
// CHECK: nvgpu.device_async_copy %[[Q]]
// CHECK: nvvm.cp.async.commit.group
// prologue: block 0 into stage 0 (K at byte 0, V at 64 x 32 x 2 = 4096)
// CHECK: scf.if
// CHECK: memref.view %[[SMEM]]
// CHECK: nvgpu.device_async_copy %[[K]]
// CHECK: memref.view %[[SMEM]]
// CHECK: nvgpu.device_async_copy %[[V]]
// CHECK: }
// CHECK: nvvm.cp.async.commit.group
// wait for Q's group (one newer group pending), then ldmatrix x4 A fragments
// at Q's element offset 8192 / 2 plus the lane's address; the second 16
// columns by XOR (chunk 2 ^ the lane's swizzled chunk: 16 elements)
// CHECK: nvvm.cp.async.wait.group 1
// CHECK: gpu.barrier
// CHECK: %[[QA0AT:.+]] = arith.addi %c4096{{(_[0-9]+)?}}, %{{.+}} : index
// CHECK: %[[QA0:.+]] = nvgpu.ldmatrix %[[FLAT]][%[[QA0AT]]] {numTiles = 4 : i32, transpose = false} : memref<8192xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
// CHECK: %[[QA1AT:.+]] = arith.xori %{{.+}}, %c16{{(_[0-9]+)?}} : index
// CHECK: %[[QA1:.+]] = nvgpu.ldmatrix %[[FLAT]][%[[QA1AT]]]
// The key blocks every row sees whole (keys below min(Skv, first row +
// Skv - Sq + 1)) run in a first loop without the tail and causal mask, the
// rest (the diagonal, the tail) in a second. The key loop carries Dv / 8 =
// 4 accumulator fragments, 2 row maxima and 2 partial row sums.
// CHECK: %[[LIM:.+]] = arith.minsi %c100{{(_[0-9]+)?}}, %{{.+}} : index
// CHECK: %[[WHOLE:.+]] = arith.divui %[[LIM]], %c64
// CHECK: %[[NW:.+]] = arith.minui %{{.+}}, %{{.+}} : index
// CHECK: scf.for %[[J:[a-z0-9]+]] = %c0{{(_[0-9]+)?}} to %[[NW]] {{.*}} -> (vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, f32, f32, f32, f32)
// block j landed, every warp is done with block j - 1: then block j + 1 is
// issued into stage (j + 1) % 2
// CHECK-NEXT: nvvm.cp.async.wait.group 0
// CHECK-NEXT: gpu.barrier
// CHECK: %[[NEXT:.+]] = arith.addi %[[J]], %c1{{(_[0-9]+)?}}
// CHECK: %[[MORE:.+]] = arith.cmpi ult, %[[NEXT]]
// CHECK: scf.if %[[MORE]] {
// CHECK: arith.remui %[[NEXT]], %c2{{(_[0-9]+)?}}
// CHECK: nvgpu.device_async_copy %[[K]]
// CHECK: nvgpu.device_async_copy %[[V]]
// CHECK: }
// CHECK: nvvm.cp.async.commit.group
// block j from stage j % 2: K at element 4096 stage, V 64 x 32 further
// CHECK: %[[STAGE:.+]] = arith.remui %[[J]], %c2{{(_[0-9]+)?}}
// CHECK: %[[KOFF:.+]] = arith.muli %[[STAGE]], %c4096{{(_[0-9]+)?}}
// CHECK: %[[VOFF:.+]] = arith.addi %[[KOFF]], %c2048{{(_[0-9]+)?}}
// S = Q . K^T: one ldmatrix x4 gives two 8-key tiles' B fragments; the
// lane's address: its key row times 32 plus its chunk ^ swizzle(row), 8
// elements each; the next 16 columns by XOR with 16
// CHECK: %[[KSW:.+]] = arith.xori
// CHECK: %[[KCOL:.+]] = arith.muli %[[KSW]], %c8{{(_[0-9]+)?}}
// CHECK: %[[KLANE:.+]] = arith.addi %{{.+}}, %[[KCOL]]
// CHECK: %[[KAT:.+]] = arith.addi %[[KOFF]], %[[KLANE]]
// CHECK: %[[KB:.+]] = nvgpu.ldmatrix %[[FLAT]][%[[KAT]]] {numTiles = 4 : i32, transpose = false}
// CHECK: %[[S0:.+]] = nvgpu.mma.sync(%[[QA0]], %{{.+}}, %{{.+}}) {mmaShape = [16, 8, 16]}
// CHECK: %[[S1:.+]] = nvgpu.mma.sync(%[[QA0]], %{{.+}}, %{{.+}}) {mmaShape = [16, 8, 16]}
// CHECK: %[[KAT1:.+]] = arith.xori %{{.+}}, %c16{{(_[0-9]+)?}}
// CHECK: nvgpu.ldmatrix %[[FLAT]][%[[KAT1]]]
// CHECK: nvgpu.mma.sync(%[[QA1]], %{{.+}}, %[[S0]])
// CHECK: nvgpu.mma.sync(%[[QA1]], %{{.+}}, %[[S1]])
// whole blocks: no key comparison; the scores stay unscaled (the row max
// over the quad by xor shuffles 1 and 2, then times scale log2 e). The
// running max moves (and acc and l are rescaled by alpha = exp2(m -
// m_safe)) only when some row of the warp sees a block max above m + 8:
// vote.any, one branch for the warp. Then P = exp2(fma(S, scale log2 e,
// -m_safe)). exp2 is ex2.approx.ftz (one MUFU.EX2).
// CHECK-NOT: arith.cmpi
// CHECK: gpu.shuffle  xor %{{.+}}, %{{.+}}, %{{.+}} : f32
// CHECK: gpu.shuffle  xor
// CHECK-NOT: arith.cmpi {{u|s}}
// CHECK: %[[M8:.+]] = arith.addf %{{.+}}, %cst{{(_[0-9]+)?}} : f32
// CHECK: arith.cmpf ogt, %{{.+}}, %[[M8]] : f32
// CHECK: %[[ANY:.+]] = nvvm.vote.sync  any %{{.+}}, %{{.+}} -> i1
// CHECK: scf.if %[[ANY]] -> (f32, f32, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, f32, f32)
// CHECK: arith.maximumf
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK: arith.mulf
// CHECK: } else {
// CHECK-NEXT: scf.yield
// CHECK: %[[NEGM:.+]] = arith.negf
// CHECK: %[[E:.+]] = math.fma %{{.+}}, %{{.+}}, %[[NEGM]] : f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%[[E]]) : (f32) -> f32
// P reused in registers as the A operand, V by transposed ldmatrix x4
// CHECK: arith.truncf %{{.+}} : f32 to f16
// CHECK: %[[PA:.+]] = vector.from_elements {{.*}} : vector<4x2xf16>
// CHECK: %[[VAT:.+]] = arith.addi %[[VOFF]], %{{.+}}
// CHECK: %[[VB:.+]] = nvgpu.ldmatrix %[[FLAT]][%[[VAT]]] {numTiles = 4 : i32, transpose = true}
// CHECK: nvgpu.mma.sync(%[[PA]], %{{.+}}, %{{.+}}) {mmaShape = [16, 8, 16]}
// CHECK: scf.yield
// edge blocks, from where the whole ones end: keys past Skv or above the
// diagonal are -inf
// CHECK: scf.for %{{.+}} = %[[NW]] to
// CHECK: nvgpu.mma.sync
// CHECK: arith.cmpi uge
// CHECK: arith.cmpi sgt
// CHECK: arith.ori
// CHECK: gpu.shuffle  xor
// CHECK: math.fma
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK: nvgpu.mma.sync
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

// Split-KV (kv-splits=3): f32 workspaces for the chunks' partial outputs
// and lse ([B, Hq, chunks, Sq(, Dv)], the chunk count dynamic), grid y =
// Hq x chunks, both kernels outlined into one module.
// SPLIT-LABEL: func.func @causal
// SPLIT: %[[C3:.+]] = arith.constant 3 : index
// SPLIT: %[[PO:.+]] = memref.alloc(%[[C3]]) : memref<1x2x?x100x32xf32>
// SPLIT: %[[PL:.+]] = memref.alloc(%[[C3]]) : memref<1x2x?x100xf32>
// SPLIT: %[[N:.+]] = memref.dim %[[PL]], %{{.+}} : memref<1x2x?x100xf32>
// SPLIT: %[[GY:.+]] = arith.muli %{{.+}}, %[[N]] : index
// SPLIT: gpu.launch blocks(%{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}}) in (%{{.+}} = %{{.+}}, %{{.+}} = %[[GY]], {{.*}} module(@causal_split_kv) function(@causal_split_kv)
// the kernel reads the chunk count from the workspace: y = h x chunks + s
// (causal: y as the heaviest-first order maps the linear id)
// SPLIT: %[[NS:.+]] = memref.dim %[[PL]]
// SPLIT: %[[CO:.+]]:3 = scf.if
// SPLIT: %[[S:.+]] = arith.remui %[[CO]]#1, %[[NS]]
// SPLIT: %[[H:.+]] = arith.divui %[[CO]]#1, %[[NS]]
// chunk s of the visible key blocks: begin = min(s ceil(n / chunks), n),
// end = min(begin + ceil(n / chunks), n); the loop runs end - begin blocks
// SPLIT: %[[CH:.+]] = arith.divui %{{.+}}, %[[NS]]
// SPLIT: %[[SB:.+]] = arith.muli %[[S]], %[[CH]]
// SPLIT: %[[BEGIN:.+]] = arith.minui %[[SB]]
// SPLIT: %[[BE:.+]] = arith.addi %[[BEGIN]], %[[CH]]
// SPLIT: %[[END:.+]] = arith.minui %[[BE]]
// SPLIT: %[[CNT:.+]] = arith.subi %[[END]], %[[BEGIN]]
// SPLIT: scf.for %{{.+}} = %{{.+}} to %[[CNT]]
// causal: the epilogue computes the coordinates again from the linear id
// passed through an opaque move, instead of holding them across the loops
// SPLIT: llvm.inline_asm has_side_effects "mov.b64 $0, $1;", "=l,l"
// SPLIT: %[[S2:.+]] = arith.remui %{{.+}}, %[[NS]]
// SPLIT: %[[H2:.+]] = arith.divui %{{.+}}, %[[NS]]
// one chunk: out directly; else acc / l (f32) and m + log2 l per chunk
// SPLIT: %[[ONE:.+]] = arith.cmpi eq, %[[NS]], %{{.+}} : index
// SPLIT: scf.if %[[ONE]] {
// SPLIT: memref.store %{{.+}}, %arg3[
// SPLIT: } else {
// SPLIT: memref.store %{{.+}}, %[[PO]][%{{.+}}, %[[H2]], %[[S2]], %{{.+}}, %{{.+}}] : memref<1x2x?x100x32xf32>
// SPLIT: math.log2
// SPLIT: memref.store %{{.+}}, %[[PL]][%{{.+}}, %[[H2]], %[[S2]], %{{.+}}] : memref<1x2x?x100xf32>
// the merge: 128 threads over (row, column) pairs, 4 rows of 32 per
// workgroup; M = max_s lse_s, w_s = exp2(lse_s - M),
// out = sum w_s O_s / sum w_s
// SPLIT: gpu.launch {{.*}} threads({{.*}}) in (%{{.+}} = %c128{{.*}}) module(@causal_split_kv) function(@causal_split_kv_merge)
// SPLIT: %[[MN:.+]] = memref.dim %[[PL]]
// SPLIT: scf.for %{{.+}} = %arg{{[0-9]+}} to %c128{{.*}} step %c128
// SPLIT: scf.for %{{.+}} = %{{.+}} to %[[MN]]
// SPLIT: arith.maximumf
// SPLIT: scf.for %{{.+}} = %{{.+}} to %[[MN]]
// SPLIT: math.exp2
// SPLIT: memref.load %[[PO]]
// SPLIT: arith.divf
// SPLIT: arith.truncf %{{.+}} : f32 to f16
// SPLIT: memref.store %{{.+}}, %arg3
// SPLIT: memref.dealloc %[[PO]]
// SPLIT: memref.dealloc %[[PL]]

// -----

// bf16, D = 128, not causal (8 warps, 128 rows), a bool keep-mask
// broadcast over B (static 1) and H (dynamic: tested at run time), and lse.
// Ring: 2 x 64 x 256 x 2 = 65536 bytes, Q (128 x 128) in stage 1.
// CHECK-LABEL: func.func @bf16_mask
// CHECK-SAME: %[[M:[a-z0-9]+]]: memref<1x?x64x80xi1>
// CHECK: gpu.launch {{.*}} threads({{.*}}) in (%{{.+}} = %c256, {{.*}} dynamic_shared_memory_size %c65536_i32
// (8 warps at D = 128: no register budget of its own)
// CHECK: memref.get_global @__attn_tc_dynamic_smem : memref<0xi8, #gpu.address_space<workgroup>>{{$}}
// the mask's H index: 0 when its extent is 1
// CHECK: %[[HM:.+]] = memref.dim %[[M]], %c1
// CHECK: %[[ONE:.+]] = arith.cmpi eq, %[[HM]]
// CHECK: %[[MH:.+]] = arith.select %[[ONE]]
// CHECK: nvgpu.ldmatrix {{.*}} -> vector<4x2xbf16>
// CHECK: scf.for
// bf16 products through nvvm.mma.sync (each pair of bf16 an i32)
// CHECK: vector.bitcast %{{.+}} : vector<2xbf16> to vector<1xi32>
// CHECK: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// mask[0, h', min(row, Sq - 1), min(key, Skv - 1)]: false -> -inf
// CHECK: %[[KEY:.+]] = arith.minui
// CHECK: %[[KEEP:.+]] = memref.load %[[M]][%c0{{(_[0-9]+)?}}, %[[MH]], %{{.+}}, %[[KEY]]]
// CHECK: arith.select %[[KEEP]], %{{.+}}, %cst
// CHECK: arith.truncf %{{.+}} : f32 to bf16
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true} {{.*}} -> vector<4x2xbf16>
// CHECK: nvvm.mma.sync
// CHECK: scf.yield
// CHECK: memref.store %{{.+}}, %{{.+}} : memref<1x2x64x128xbf16>
// CHECK: math.log2
func.func @bf16_mask(%q: memref<1x2x64x128xbf16>, %k: memref<1x2x80x128xbf16>,
                     %v: memref<1x2x80x128xbf16>, %m: memref<1x?x64x80xi1>,
                     %out: memref<1x2x64x128xbf16>, %lse: memref<1x2x64xf32>) {
  %qt = bufferization.to_tensor %q restrict : memref<1x2x64x128xbf16> to tensor<1x2x64x128xbf16>
  %kt = bufferization.to_tensor %k restrict : memref<1x2x80x128xbf16> to tensor<1x2x80x128xbf16>
  %vt = bufferization.to_tensor %v restrict : memref<1x2x80x128xbf16> to tensor<1x2x80x128xbf16>
  %mt = bufferization.to_tensor %m restrict : memref<1x?x64x80xi1> to tensor<1x?x64x80xi1>
  %o, %l = attn.sdpa %qt, %kt, %vt mask(%mt : tensor<1x?x64x80xi1>)
      : tensor<1x2x64x128xbf16>, tensor<1x2x80x128xbf16>, tensor<1x2x80x128xbf16> -> tensor<1x2x64x128xbf16>, tensor<1x2x64xf32>
  bufferization.materialize_in_destination %o in restrict writable %out
      : (tensor<1x2x64x128xbf16>, memref<1x2x64x128xbf16>) -> ()
  bufferization.materialize_in_destination %l in restrict writable %lse
      : (tensor<1x2x64xf32>, memref<1x2x64xf32>) -> ()
  return
}

// -----

// An additive f32 mask is added after scaling, times log2 e (the scores are
// in the exp2 domain); warps=4 by hand for D = 64 would halve the rows.
// CHECK-LABEL: func.func @additive
// CHECK: scf.for
// CHECK: %[[X:.+]] = memref.load %{{.+}}[{{.*}}] : memref<2x1x16x16xf32>
// CHECK: %[[X2:.+]] = arith.mulf %[[X]], %cst
// CHECK: arith.addf %{{.+}}, %[[X2]]
// so the scores are scaled before the mask, and P = exp2(S - m_safe)
// without the FMA of the unmasked kernels
// CHECK: %[[E:.+]] = arith.subf
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%[[E]])
// CHECK-NOT: math.fma
func.func @additive(%q: memref<2x1x16x64xf16>, %m: memref<2x1x16x16xf32>,
                    %out: memref<2x1x16x64xf16>) {
  %qt = bufferization.to_tensor %q restrict : memref<2x1x16x64xf16> to tensor<2x1x16x64xf16>
  %mt = bufferization.to_tensor %m restrict : memref<2x1x16x16xf32> to tensor<2x1x16x16xf32>
  %o = attn.sdpa %qt, %qt, %qt mask(%mt : tensor<2x1x16x16xf32>)
      : tensor<2x1x16x64xf16>, tensor<2x1x16x64xf16>, tensor<2x1x16x64xf16> -> tensor<2x1x16x64xf16>
  bufferization.materialize_in_destination %o in restrict writable %out
      : (tensor<2x1x16x64xf16>, memref<2x1x16x64xf16>) -> ()
  return
}

// -----

// What the tensor-core kernel does not support is left alone, for
// convert-attn-to-gpu: f32, D not a multiple of 16.
// CHECK-LABEL: func.func @unsupported
// CHECK-NOT: gpu.launch
// CHECK-COUNT-2: attn.sdpa
func.func @unsupported(%q: memref<1x1x8x16xf32>, %k: memref<1x1x8x16xf32>,
                       %v: memref<1x1x8x16xf32>, %out: memref<1x1x8x16xf32>,
                       %q8: memref<1x1x8x8xf16>, %out8: memref<1x1x8x8xf16>) {
  %qt = bufferization.to_tensor %q restrict : memref<1x1x8x16xf32> to tensor<1x1x8x16xf32>
  %kt = bufferization.to_tensor %k restrict : memref<1x1x8x16xf32> to tensor<1x1x8x16xf32>
  %vt = bufferization.to_tensor %v restrict : memref<1x1x8x16xf32> to tensor<1x1x8x16xf32>
  %o = attn.sdpa %qt, %kt, %vt
      : tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32> -> tensor<1x1x8x16xf32>
  bufferization.materialize_in_destination %o in restrict writable %out
      : (tensor<1x1x8x16xf32>, memref<1x1x8x16xf32>) -> ()
  %q8t = bufferization.to_tensor %q8 restrict : memref<1x1x8x8xf16> to tensor<1x1x8x8xf16>
  %o8 = attn.sdpa %q8t, %q8t, %q8t
      : tensor<1x1x8x8xf16>, tensor<1x1x8x8xf16>, tensor<1x1x8x8xf16> -> tensor<1x1x8x8xf16>
  bufferization.materialize_in_destination %o8 in restrict writable %out8
      : (tensor<1x1x8x8xf16>, memref<1x1x8x8xf16>) -> ()
  return
}

// -----

// Decode geometry: a static query length of 1 takes one warp (16 rows) at
// D = 64, two at D = 128; dynamic or longer query lengths keep 4 or 8.
// CHECK-LABEL: func.func @decode
// CHECK: gpu.launch {{.*}} threads({{.*}}) in (%{{.+}} = %c32{{(_[0-9]+)?}},
// CHECK: gpu.launch {{.*}} threads({{.*}}) in (%{{.+}} = %c64{{(_[0-9]+)?}},
func.func @decode(%q: memref<4x8x1x64xf16>, %k: memref<4x8x999x64xf16>,
                  %out: memref<4x8x1x64xf16>, %q2: memref<4x8x1x128xf16>,
                  %k2: memref<4x8x999x128xf16>, %out2: memref<4x8x1x128xf16>) {
  %qt = bufferization.to_tensor %q restrict : memref<4x8x1x64xf16> to tensor<4x8x1x64xf16>
  %kt = bufferization.to_tensor %k restrict : memref<4x8x999x64xf16> to tensor<4x8x999x64xf16>
  %o = attn.sdpa %qt, %kt, %kt
      : tensor<4x8x1x64xf16>, tensor<4x8x999x64xf16>, tensor<4x8x999x64xf16> -> tensor<4x8x1x64xf16>
  bufferization.materialize_in_destination %o in restrict writable %out
      : (tensor<4x8x1x64xf16>, memref<4x8x1x64xf16>) -> ()
  %q2t = bufferization.to_tensor %q2 restrict : memref<4x8x1x128xf16> to tensor<4x8x1x128xf16>
  %k2t = bufferization.to_tensor %k2 restrict : memref<4x8x999x128xf16> to tensor<4x8x999x128xf16>
  %o2 = attn.sdpa %q2t, %k2t, %k2t
      : tensor<4x8x1x128xf16>, tensor<4x8x999x128xf16>, tensor<4x8x999x128xf16> -> tensor<4x8x1x128xf16>
  bufferization.materialize_in_destination %o2 in restrict writable %out2
      : (tensor<4x8x1x128xf16>, memref<4x8x1x128xf16>) -> ()
  return
}

// -----

// Decode with GQA (Hq = 8 over Hkv = 2), causal, lse: the 4 query heads of
// a KV head are one workgroup's rows (grid (ceil(4 / 16), Hkv, B)), through
// [B, Hkv, 4, ...] views of q, out and lse (strides sH * 4 for the KV head,
// sH for a row), and causal drops out (the one query row sees every key).
// With a mask the heads are not packed.
// CHECK-LABEL: func.func @decode_gqa
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: memref<2x8x1x64xf16>, %{{.+}}: memref<2x2x999x64xf16>, %[[O:[a-z0-9]+]]: memref<2x8x1x64xf16>, %[[L:[a-z0-9]+]]: memref<2x8x1xf32>
// CHECK: gpu.launch blocks({{.*}}) in (%{{.+}} = %{{.+}}, %{{.+}} = %c2{{(_[0-9]+)?}}, %{{.+}} = %c2{{(_[0-9]+)?}}) threads({{.*}}) in (%{{.+}} = %c32{{(_[0-9]+)?}},
// CHECK: %{{.+}}, %{{.+}}, %{{.+}}:4, %[[QS:.+]]:4 = memref.extract_strided_metadata %[[Q]]
// CHECK: %[[QST:.+]] = arith.muli %[[QS]]#1, %[[G:.+]] : index
// CHECK: memref.reinterpret_cast %[[Q]] to offset: [0], sizes: [2, %{{.+}}, %[[G]], 64], strides: [512, %[[QST]], %[[QS]]#1, 1] : memref<2x8x1x64xf16> to memref<2x?x?x64xf16, strided<[512, ?, ?, 1]>>
// CHECK: memref.reinterpret_cast %[[O]]
// CHECK: memref.reinterpret_cast %[[L]] to offset: [0], sizes: [2, %{{.+}}, %{{.+}}], strides: [8, %{{.+}}, %{{.+}}] : memref<2x8x1xf32> to memref<2x?x?xf32, strided<[8, ?, ?]>>
// CHECK-NOT: arith.cmpi sgt
// CHECK: math.log2
// CHECK-LABEL: func.func @decode_gqa_mask
// CHECK-NOT: memref.reinterpret_cast
// CHECK: return
// Split, the workspaces [B, Hq, n, 1(, Dv)] are seen the same way:
// [B, Hkv, n, 4(, Dv)], the KV head at stride sH * 4, a row at sH; grid y
// is Hkv x n.
// SPLIT-LABEL: func.func @decode_gqa
// SPLIT: %[[PO:.+]] = memref.alloc(%{{.+}}) : memref<2x8x?x1x64xf32>
// SPLIT: gpu.launch blocks({{.*}}) in (%{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}, %{{.+}} = %c2{{(_[0-9]+)?}})
// SPLIT: %{{.+}}, %{{.+}}, %[[PS:.+]]:5, %[[PT:.+]]:5 = memref.extract_strided_metadata %[[PO]]
// SPLIT: memref.reinterpret_cast %[[PO]] to offset: [0], sizes: [2, %{{.+}}, %[[PS]]#2, %{{.+}}, 64], strides: [%[[PT]]#0, %{{.+}}, 64, %[[PT]]#1, 1] : memref<2x8x?x1x64xf32> to memref<2x?x?x?x64xf32, strided<[?, ?, 64, ?, 1]>>
func.func @decode_gqa(%q: memref<2x8x1x64xf16>, %k: memref<2x2x999x64xf16>,
                      %out: memref<2x8x1x64xf16>, %lse: memref<2x8x1xf32>) {
  %qt = bufferization.to_tensor %q restrict : memref<2x8x1x64xf16> to tensor<2x8x1x64xf16>
  %kt = bufferization.to_tensor %k restrict : memref<2x2x999x64xf16> to tensor<2x2x999x64xf16>
  %o, %l = attn.sdpa %qt, %kt, %kt causal
      : tensor<2x8x1x64xf16>, tensor<2x2x999x64xf16>, tensor<2x2x999x64xf16> -> tensor<2x8x1x64xf16>, tensor<2x8x1xf32>
  bufferization.materialize_in_destination %o in restrict writable %out
      : (tensor<2x8x1x64xf16>, memref<2x8x1x64xf16>) -> ()
  bufferization.materialize_in_destination %l in restrict writable %lse
      : (tensor<2x8x1xf32>, memref<2x8x1xf32>) -> ()
  return
}
func.func @decode_gqa_mask(%q: memref<2x8x1x64xf16>, %k: memref<2x2x999x64xf16>,
                           %m: memref<1x1x1x999xi1>, %out: memref<2x8x1x64xf16>) {
  %qt = bufferization.to_tensor %q restrict : memref<2x8x1x64xf16> to tensor<2x8x1x64xf16>
  %kt = bufferization.to_tensor %k restrict : memref<2x2x999x64xf16> to tensor<2x2x999x64xf16>
  %mt = bufferization.to_tensor %m restrict : memref<1x1x1x999xi1> to tensor<1x1x1x999xi1>
  %o = attn.sdpa %qt, %kt, %kt mask(%mt : tensor<1x1x1x999xi1>)
      : tensor<2x8x1x64xf16>, tensor<2x2x999x64xf16>, tensor<2x2x999x64xf16> -> tensor<2x8x1x64xf16>
  bufferization.materialize_in_destination %o in restrict writable %out
      : (tensor<2x8x1x64xf16>, memref<2x8x1x64xf16>) -> ()
  return
}

// -----

// Dropout (p = 0.25, seed an i64 argument): one row tile and no register
// budget or packing (it counts as masked). Each P element goes through the
// shared Philox decision keyed by the seed's two halves: kept P / (1 - p)
// = P * 4/3 into P . V, dropped 0, while l sums P before dropout.
// CHECK-LABEL: func.func @dropout
// CHECK-SAME: %[[SEED:[a-z0-9]+]]: i64
// CHECK: gpu.launch {{.*}} threads({{.*}}) in (%{{.+}} = %c128{{(_[0-9]+)?}}, {{.*}} dynamic_shared_memory_size %c32768_i32
// CHECK: scf.for
// CHECK: %[[E:.+]] = math.fma
// CHECK-NEXT: %[[P:.+]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%[[E]]) : (f32) -> f32
// CHECK: arith.trunci %[[SEED]] : i64 to i32
// CHECK: arith.mului_extended
// CHECK: %[[KEEP:.+]] = arith.cmpi uge
// CHECK: %[[SCALED:.+]] = arith.mulf %[[P]], %{{.+}} : f32
// CHECK: arith.select %[[KEEP]], %[[SCALED]], %{{.+}} : f32
// CHECK: arith.addf %{{.+}}, %[[P]] : f32
// CHECK: nvgpu.mma.sync
func.func @dropout(%q: memref<1x2x100x64xf16>, %k: memref<1x2x100x64xf16>,
                   %v: memref<1x2x100x64xf16>, %seed: i64,
                   %out: memref<1x2x100x64xf16>) {
  %qt = bufferization.to_tensor %q restrict : memref<1x2x100x64xf16> to tensor<1x2x100x64xf16>
  %kt = bufferization.to_tensor %k restrict : memref<1x2x100x64xf16> to tensor<1x2x100x64xf16>
  %vt = bufferization.to_tensor %v restrict : memref<1x2x100x64xf16> to tensor<1x2x100x64xf16>
  %o = attn.sdpa %qt, %kt, %vt dropout(0.25, seed %seed)
      : tensor<1x2x100x64xf16>, tensor<1x2x100x64xf16>, tensor<1x2x100x64xf16> -> tensor<1x2x100x64xf16>
  bufferization.materialize_in_destination %o in restrict writable %out
      : (tensor<1x2x100x64xf16>, memref<1x2x100x64xf16>) -> ()
  return
}
