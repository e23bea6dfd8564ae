// attn-to-cpu-pipeline: attn.sdpa on tensors all the way to the LLVM dialect.
// RUN: attn-opt %s --attn-to-cpu-pipeline | FileCheck %s --check-prefix=TILED
// RUN: attn-opt %s --attn-to-cpu-pipeline="parallel=0" | FileCheck %s --check-prefix=SERIAL
// RUN: attn-opt %s --attn-to-cpu-pipeline="math=1" | FileCheck %s --check-prefix=MATH
// RUN: attn-opt %s --attn-to-cpu-pipeline="math=1 checked-alloc=1" | FileCheck %s --check-prefix=CHECKED
// RUN: attn-opt %s --attn-to-cpu-pipeline="block-q=16 block-kv=32" --mlir-print-ir-after=attn-tile-sdpa 2>&1 >/dev/null | FileCheck %s --check-prefix=TILES

// Nothing above the LLVM dialect survives (the OpenMP ops are LLVM-compatible).
// TILED-NOT: attn.
// TILED-NOT: linalg.
// TILED-NOT: memref.
// TILED-NOT: scf.
// TILED-LABEL: llvm.func @attention
// The parallel tiles (B x Hq x q-blocks) run on an OpenMP work-sharing loop.
// TILED: omp.parallel
// TILED: omp.wsloop
// The tiles are vector code (attn-cpu-vectorize-tiles): the products as
// FMAs on 32-lane register tiles, the softmax's exp2 a polynomial on
// 64-lane rows; a temporary freed per tile.
// TILED: llvm.intr.fmuladd({{.*}}) : (vector<32xf32>, vector<32xf32>, vector<32xf32>)
// TILED: llvm.intr.floor({{.*}}) : (vector<64xf32>)
// TILED: llvm.call @free

// SERIAL-LABEL: llvm.func @attention
// SERIAL-NOT: omp.
// SERIAL: llvm.intr.floor({{.*}}) : (vector<64xf32>)

// The reference path computes exp (not exp2) and has no parallel tiles.
// checked-alloc (what the JIT uses): heap buffers through the functions
// the caller provides (lib/JIT/CPUAllocator.cpp), no malloc or free; a
// failed one becomes ATTN_ERROR_OUT_OF_MEMORY there.
// CHECKED-NOT: @malloc
// CHECKED-DAG: llvm.func @_mlir_memref_to_llvm_alloc(i64) -> !llvm.ptr
// CHECKED-DAG: llvm.func @_mlir_memref_to_llvm_free(!llvm.ptr)
// CHECKED: llvm.call @_mlir_memref_to_llvm_alloc
// CHECKED: llvm.call @_mlir_memref_to_llvm_free
// CHECKED-NOT: @malloc

// MATH-LABEL: llvm.func @attention
// MATH-NOT: omp.parallel
// MATH: llvm.intr.exp

// The pass options reach the tiling: 16-row query tiles, 32-key blocks.
// ceil(100 / 16) = 7 query tiles per (b, h).
// TILES: scf.forall ({{.*}}) in (2, 4, 7)
// TILES: tensor.extract_slice {{.*}} [1, 1, %{{.+}}, 64] [1, 1, 1, 1] : tensor<2x4x100x64xf32> to tensor<?x64xf32>
// TILES: attn.online_attention

func.func @attention(%q: tensor<2x4x100x64xf32>, %k: tensor<2x2x77x64xf32>,
                     %v: tensor<2x2x77x64xf32>) -> tensor<2x4x100x64xf32> {
  %o = attn.sdpa %q, %k, %v causal
      : tensor<2x4x100x64xf32>, tensor<2x2x77x64xf32>, tensor<2x2x77x64xf32>
      -> tensor<2x4x100x64xf32>
  return %o : tensor<2x4x100x64xf32>
}
