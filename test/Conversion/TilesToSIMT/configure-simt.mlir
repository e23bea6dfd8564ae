// RUN: attn-opt %s -split-input-file --attn-configure-simt | FileCheck %s
// RUN: attn-opt %s -split-input-file --attn-configure-simt="lanes=8 unroll=true block-q=16 shared-memory-bytes=16384 kv-splits=3" | FileCheck %s --check-prefix=SUBGROUP
// RUN: attn-opt %s -split-input-file --attn-configure-simt="kv-splits=2 launch-splits=true" | FileCheck %s --check-prefix=LAUNCH
// RUN: not attn-opt %s -split-input-file --attn-configure-simt="shared-memory-bytes=1000" 2>&1 | FileCheck %s --check-prefix=SMALL
// RUN: not attn-opt %s -split-input-file --attn-configure-simt="lanes=3" 2>&1 | FileCheck %s --check-prefix=LANES
// RUN: not attn-opt %S/Inputs/configure-simt-tensors.mlir --attn-configure-simt 2>&1 | FileCheck %s --check-prefix=TENSORS
// An op on a function's tensors is not a kernel (the pipelines would
// otherwise tile it and build nothing): an error saying what builds one.
// TENSORS: error: 'attn.sdpa' op attn-configure-simt: a GPU kernel is built from attn.sdpa in the runtime's destination-passing form
// TENSORS-SAME: attn-translate --attn-to-ptx / --attn-to-spirv builds the kernel for its spec
// RUN: attn-opt %S/Inputs/coop-matrix.mlir --attn-configure-simt="coop-matrix=32 block-q=16" | FileCheck %s --check-prefix=COOP
// RUN: attn-opt %S/Inputs/coop-matrix.mlir --attn-configure-simt="coop-matrix=64 block-q=32 shared-memory-bytes=16384 scalar-products=true" | FileCheck %s --check-prefix=COOPSMALL
// RUN: not attn-opt %s -split-input-file --attn-configure-simt="coop-matrix=32" 2>&1 | FileCheck %s --check-prefix=COOPROWS
// RUN: not attn-opt %s -split-input-file --attn-configure-simt="coop-matrix=32 block-q=16" 2>&1 | FileCheck %s --check-prefix=COOP16
// RUN: sed -e 's/xf16>/xf32>/g' %S/Inputs/coop-matrix.mlir | not attn-opt --attn-configure-simt="coop-matrix=32 block-q=16" 2>&1 | FileCheck %s --check-prefix=COOPF32
// RUN: not attn-opt %S/Inputs/coop-matrix.mlir --attn-configure-simt="coop-matrix=32 block-q=16 shared-memory-bytes=4096" 2>&1 | FileCheck %s --check-prefix=COOPBYTES
// RUN: not attn-opt %s --attn-configure-simt="coop-matrix=8" 2>&1 | FileCheck %s --check-prefix=LANES
// RUN: sed -e 's/x16xf16>/x32xf16>/g' %S/Inputs/coop-matrix.mlir | attn-opt --attn-configure-simt="coop-matrix=512 lanes=32 block-q=16 block-kv=32" | FileCheck %s --check-prefix=COOPLANES
// RUN: not attn-opt %S/Inputs/coop-matrix.mlir --attn-configure-simt="coop-matrix=512 lanes=32 block-q=16 block-kv=32" 2>&1 | FileCheck %s --check-prefix=COOPLANES16
// RUN: sed -e 's/x16xf16>/x32xf16>/g' %S/Inputs/coop-matrix.mlir | not attn-opt --attn-configure-simt="coop-matrix=256 lanes=32 block-q=16 block-kv=32" 2>&1 | FileCheck %s --check-prefix=COOPLANESROWS
// RUN: not attn-opt %s --attn-configure-simt="coop-matrix=96 lanes=64" 2>&1 | FileCheck %s --check-prefix=LANES
// RUN: attn-opt %S/Inputs/coop-matrix.mlir --attn-configure-simt="coop-matrix=64 lanes=2 block-q=32 coop-registers=true" | FileCheck %s --check-prefix=COOPREGS
// RUN: attn-opt %S/Inputs/coop-matrix.mlir --attn-configure-simt="coop-matrix=64 lanes=2 block-q=32 coop-registers=true shared-memory-bytes=12000" | FileCheck %s --check-prefix=COOPREGS12K
// RUN: attn-opt %S/Inputs/packed-decode.mlir --attn-configure-simt="coop-matrix=32 lanes=2 block-q=16 coop-registers=true pack-decode-heads=true" | FileCheck %s --check-prefix=COOPREGSDEC
// RUN: not attn-opt %S/Inputs/coop-matrix.mlir --attn-configure-simt="coop-matrix=64 lanes=2 block-q=16 coop-registers=true" 2>&1 | FileCheck %s --check-prefix=COOPREGSROWS
// RUN: not attn-opt %S/Inputs/coop-matrix.mlir --attn-configure-simt="coop-registers=true" 2>&1 | FileCheck %s --check-prefix=COOPREGSOPT
// RUN: not attn-opt %S/Inputs/coop-matrix.mlir --attn-configure-simt="coop-matrix=64 lanes=2 block-q=32 coop-registers=true scalar-products=true" 2>&1 | FileCheck %s --check-prefix=COOPREGSOPT
// RUN: sed -e 's/x16xf16>/x32xf16>/g' %S/Inputs/coop-matrix.mlir | attn-opt --attn-configure-simt="coop-matrix=64 block-q=64 coop-registers=true coop-strips=2" | FileCheck %s --check-prefix=COOPSTRIPS
// RUN: not attn-opt %S/Inputs/coop-matrix.mlir --attn-configure-simt="coop-matrix=64 block-q=64 coop-strips=2" 2>&1 | FileCheck %s --check-prefix=COOPSTRIPSOPT
// RUN: not attn-opt %S/Inputs/coop-matrix.mlir --attn-configure-simt="coop-matrix=64 lanes=2 block-q=32 coop-registers=true coop-strips=4" 2>&1 | FileCheck %s --check-prefix=COOPSTRIPSOPT
// RUN: attn-opt %S/Inputs/packed-decode.mlir --attn-configure-simt="coop-matrix=32 block-q=16 pack-decode-heads=true" | FileCheck %s --check-prefix=PACK
// RUN: attn-opt %S/Inputs/packed-decode.mlir --attn-configure-simt="coop-matrix=32 block-q=16" | FileCheck %s --check-prefix=NOPACK

// pack-decode-heads: a GQA decode step of static shapes gets pack_heads
// (a tile's rows the query heads of one K/V head); dropout and a mask do
// not; without the option nothing packs.
// PACK-LABEL: func.func @decode(
// PACK: attn.sdpa {{.*}} causal {tiling = #attn.tiling<block_q = 16, block_kv = 64, pack_heads = true, p_type = f16, mapping = #attn.coop_matrix<invocations = 32>>}
// PACK-LABEL: func.func @decode_dropout(
// PACK: attn.sdpa {{.*}} {tiling = #attn.tiling<block_q = 16, block_kv = 64, p_type = f16,
// PACK-LABEL: func.func @decode_masked(
// PACK: attn.sdpa {{.*}} {tiling = #attn.tiling<block_q = 16, block_kv = 64, p_type = f16,
// NOPACK-NOT: pack_heads

// coop-registers: Q and the accumulator in cooperative-matrix registers, a
// 16-row strip per subgroup of 32 (lanes = 2 per row): block-q x lanes is
// the workgroup. Its tiles have no accumulator or Q tile (Q staged into
// K's, a [block-q, 16] f32 tile of row factors), and its key block is 32
// where that fits (D = 32, Dv = 16: 13312 bytes), else 16 (within 12000
// bytes: 9472), and 16 for one query row (decode).
// COOPREGS: attn.sdpa {{.*}} {tiling = #attn.tiling<block_q = 32, block_kv = 32, p_type = f16, mapping = #attn.coop_matrix<invocations = 64, lanes = 2, registers = true>>}
// COOPREGS12K: attn.sdpa {{.*}} {tiling = #attn.tiling<block_q = 32, block_kv = 16, p_type = f16, mapping = #attn.coop_matrix<invocations = 64, lanes = 2, registers = true>>}
// COOPREGSDEC-LABEL: func.func @decode(
// COOPREGSDEC: attn.sdpa {{.*}} causal {tiling = #attn.tiling<block_q = 16, block_kv = 16, pack_heads = true, p_type = f16, mapping = #attn.coop_matrix<invocations = 32, lanes = 2, registers = true>>}
// COOPREGSROWS: error: 'attn.sdpa' op attn-configure-simt: coop-registers needs a 16-row strip per subgroup, block-q x lanes = the workgroup's 64 invocations, got block-q 16 and lanes 2
// COOPREGSOPT: error: attn-configure-simt: coop-registers needs coop-matrix > 0, cooperative-matrix products (not scalar-products) and lanes up to 8

// coop-strips=2: two 16-row strips per subgroup of 32 (one lane per row),
// two subgroups for 64 rows.
// COOPSTRIPS: attn.sdpa {{.*}} {tiling = #attn.tiling<block_q = 64, block_kv = 32, p_type = f16, mapping = #attn.coop_matrix<invocations = 64, registers = true, strips = 2>>}
// COOPSTRIPSOPT: error: attn-configure-simt: coop-strips 2 or 4 needs coop-registers and a workgroup of whole subgroups of 16 x lanes x coop-strips invocations (at most 128)

// A subgroup of 32 lanes per softmax row: 16 rows in a workgroup of 512;
// D, Dv and the key block multiples of the lanes (Dv = 16 is not), the
// rows' lanes within the workgroup.
// COOPLANES: mapping = #attn.coop_matrix<invocations = 512, lanes = 32>
// COOPLANES16: error: 'attn.sdpa' op attn-configure-simt: the cooperative-matrix mapping with a row per 32 lanes needs D, Dv and block-kv multiples of them, got D = 32, Dv = 16, block-kv = 32
// COOPLANESROWS: error: 'attn.sdpa' op attn-configure-simt: block-q 16 rows of 32 invocations are more than the workgroup's 256

// Defaults (the generic CUDA kernel's): 64 rows of one thread each, the
// largest key block of 64, 32, 16, 8 whose K and V tiles fit 48 KB (64 at
// D = Dv = 64, f16: 16 KB), dynamic tiles, the textbook rescale, P in f32.
// CHECK-LABEL: func.func @jit_form
// CHECK: attn.sdpa {{.*}} {tiling = #attn.tiling<block_q = 64, block_kv = 64, mapping = #attn.simt<rows = 64, lanes = 1>>}
// 16 rows of 8 lanes, 64-key tiles still fit 16 KB, 3 chunks baked in.
// SUBGROUP-LABEL: func.func @jit_form
// SUBGROUP: attn.sdpa {{.*}} {tiling = #attn.tiling<block_q = 16, block_kv = 64, kv_splits = 3, mapping = #attn.simt<rows = 16, lanes = 8, unroll = true>>}
// A count chosen per launch: an unsplit and a split alternative, each
// materialized into the same destination.
// LAUNCH-LABEL: func.func @jit_form
// LAUNCH: %[[U:.+]] = attn.sdpa {{.*}} {attn.launch_when = "unsplit", tiling = #attn.tiling<block_q = 64, block_kv = 64, mapping = #attn.simt<rows = 64, lanes = 1>>}
// LAUNCH: %[[S:.+]] = attn.sdpa {{.*}} {attn.launch_when = "split", tiling = #attn.tiling<block_q = 64, block_kv = 64, kv_splits = 2, launch_splits = true, mapping = #attn.simt<rows = 64, lanes = 1>>}
// LAUNCH: bufferization.materialize_in_destination %[[U]] in restrict writable %[[OUT:[a-z0-9]+]]
// LAUNCH: bufferization.materialize_in_destination %[[S]] in restrict writable %[[OUT]]
// SMALL: error: 'attn.sdpa' op attn-configure-simt: K and V tiles of 8 keys (D = 64, Dv = 64) need 2048 bytes of shared memory, more than 1000; use a smaller block-kv
// LANES: error: attn-configure-simt: lanes must be a power of two up to 128
// coop-matrix=N: the cooperative-matrix mapping, a workgroup of one
// N-invocation subgroup; P in the data's type (the matrix operand); the
// largest key block of 64, 32, 16 whose tiles (Q, K, V, S, P and the
// accumulator, padded rows; coopMatrixSharedBytes) fit: 64 at D = 32,
// Dv = 16 in 48 KB; 32 in 16 KB with 32-row tiles.
// COOP: attn.sdpa {{.*}} {tiling = #attn.tiling<block_q = 16, block_kv = 64, p_type = f16, mapping = #attn.coop_matrix<invocations = 32>>}
// COOPSMALL: attn.sdpa {{.*}} {tiling = #attn.tiling<block_q = 32, block_kv = 32, p_type = f16, mapping = #attn.coop_matrix<invocations = 64, scalar = true>>}
// COOPROWS: error: 'attn.sdpa' op attn-configure-simt: block-q 64 rows of 1 invocations are more than the workgroup's 32
// COOP16: error: 'attn.sdpa' op attn-configure-simt: the cooperative-matrix mapping needs D, Dv, block-q and block-kv multiples of 16, got D = 64, Dv = 64, block-q = 8, block-kv = 16
// COOPF32: error: 'attn.sdpa' op attn-configure-simt: the cooperative-matrix mapping takes f16 or bf16, got 'f32'
// COOPBYTES: error: 'attn.sdpa' op attn-configure-simt: the cooperative-matrix tiles (block-q 16, block-kv 16, D = 32, Dv = 16) need {{[0-9]+}} bytes of shared memory, more than 4096
func.func @jit_form(%q: memref<1x2x100x64xf16>, %k: memref<1x2x100x64xf16>,
                    %v: memref<1x2x100x64xf16>, %out: memref<1x2x100x64xf16>) {
  %qt = bufferization.to_tensor %q restrict : memref<1x2x100x64xf16> to tensor<1x2x100x64xf16>
  %kt = bufferization.to_tensor %k restrict : memref<1x2x100x64xf16> to tensor<1x2x100x64xf16>
  %vt = bufferization.to_tensor %v restrict : memref<1x2x100x64xf16> to tensor<1x2x100x64xf16>
  %o = attn.sdpa %qt, %kt, %vt causal
      : tensor<1x2x100x64xf16>, tensor<1x2x100x64xf16>, tensor<1x2x100x64xf16> -> tensor<1x2x100x64xf16>
  bufferization.materialize_in_destination %o in restrict writable %out
      : (tensor<1x2x100x64xf16>, memref<1x2x100x64xf16>) -> ()
  return
}

// -----

// A tiling another target chose (a mapping) is left alone; one without a
// mapping keeps its sizes and gets the SIMT mapping.
// CHECK-LABEL: func.func @given
// CHECK: attn.sdpa {{.*}} {tiling = #attn.tiling<block_q = 64, block_kv = 32, static_tiles = true, mapping = #attn.mma_sync<warps = 4, row_tiles = 1, stages = 2, shared_bytes = 16384>>}
// CHECK: attn.sdpa {{.*}} {tiling = #attn.tiling<block_q = 8, block_kv = 16, mapping = #attn.simt<rows = 8, lanes = 1>>}
func.func @given(%q: memref<1x2x100x64xf16>, %k: memref<1x2x100x64xf16>,
                 %v: memref<1x2x100x64xf16>, %out: memref<1x2x100x64xf16>,
                 %out2: memref<1x2x100x64xf16>) {
  %qt = bufferization.to_tensor %q restrict : memref<1x2x100x64xf16> to tensor<1x2x100x64xf16>
  %kt = bufferization.to_tensor %k restrict : memref<1x2x100x64xf16> to tensor<1x2x100x64xf16>
  %vt = bufferization.to_tensor %v restrict : memref<1x2x100x64xf16> to tensor<1x2x100x64xf16>
  %o = attn.sdpa %qt, %kt, %vt {tiling = #attn.tiling<block_q = 64, block_kv = 32, static_tiles = true, mapping = #attn.mma_sync<warps = 4, row_tiles = 1, stages = 2, shared_bytes = 16384>>}
      : tensor<1x2x100x64xf16>, tensor<1x2x100x64xf16>, tensor<1x2x100x64xf16> -> tensor<1x2x100x64xf16>
  bufferization.materialize_in_destination %o in restrict writable %out
      : (tensor<1x2x100x64xf16>, memref<1x2x100x64xf16>) -> ()
  %o2 = attn.sdpa %qt, %kt, %vt {tiling = #attn.tiling<block_q = 8, block_kv = 16>}
      : tensor<1x2x100x64xf16>, tensor<1x2x100x64xf16>, tensor<1x2x100x64xf16> -> tensor<1x2x100x64xf16>
  bufferization.materialize_in_destination %o2 in restrict writable %out2
      : (tensor<1x2x100x64xf16>, memref<1x2x100x64xf16>) -> ()
  return
}
