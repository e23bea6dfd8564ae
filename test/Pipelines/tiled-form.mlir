// One pipeline shape for every target: attn.sdpa -> attn-tile-sdpa -> the
// online-softmax rewrite (attn-decompose-online-attention) -> the target's
// mapping of the tiles -> LLVM / NVVM / SPIR-V. Each pipeline's pass list
// names the two shared passes before its target passes, and the IR between
// the rewrite and the target passes is the same target-neutral form on
// every target: the grid as an scf.forall over (batch, head, query block),
// the key loop (split at the causal diagonal) carrying the accumulator and
// the row max and sum as tensors, every step of the math a linalg.generic
// on tiles (the same ones, written once in lib/Dialect/Attn/Transforms),
// no nvgpu, gpu, SPIR-V or LLVM op; what differs is only the
// #attn.tiling the target's configure pass chose (sizes, P's element
// type, the rescale policy, the mapping the target pass reads).
//
// RUN: attn-opt %s --pass-pipeline="builtin.module(attn-to-cpu-pipeline)" --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=PIPE-CPU
// RUN: attn-opt %s --pass-pipeline="builtin.module(attn-to-nvvm-pipeline{tensor-cores=true})" --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=PIPE-TC
// RUN: attn-opt %s --pass-pipeline="builtin.module(attn-to-nvvm-pipeline)" --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=PIPE-SIMT
// RUN: attn-opt %s --pass-pipeline="builtin.module(attn-to-spirv-pipeline{variant=portable})" --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=PIPE-PORTABLE
// RUN: attn-opt %s --pass-pipeline="builtin.module(attn-to-spirv-pipeline{variant=coopmat})" --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=PIPE-COOP
//
// RUN: attn-opt %s --pass-pipeline="builtin.module(attn-to-cpu-pipeline)" --mlir-print-ir-after=attn-decompose-online-attention -o /dev/null 2>&1 | FileCheck %s --check-prefixes=L2,L2-CPU --implicit-check-not='{{nvgpu|gpu\.|spirv|llvm\.}}'
// RUN: attn-opt %s --pass-pipeline="builtin.module(attn-to-nvvm-pipeline{tensor-cores=true})" --mlir-print-ir-after=attn-decompose-online-attention -o /dev/null 2>&1 | FileCheck %s --check-prefixes=L2,L2-TC --implicit-check-not='{{nvgpu|gpu\.|spirv|llvm\.}}'
// RUN: attn-opt %s --pass-pipeline="builtin.module(attn-to-nvvm-pipeline)" --mlir-print-ir-after=attn-decompose-online-attention -o /dev/null 2>&1 | FileCheck %s --check-prefixes=L2,L2-SIMT --implicit-check-not='{{nvgpu|gpu\.|spirv|llvm\.}}'
// RUN: attn-opt %s --pass-pipeline="builtin.module(attn-to-spirv-pipeline{variant=portable})" --mlir-print-ir-after=attn-decompose-online-attention -o /dev/null 2>&1 | FileCheck %s --check-prefixes=L2,L2-PORTABLE --implicit-check-not='{{nvgpu|gpu\.|spirv|llvm\.}}'
// RUN: attn-opt %s --pass-pipeline="builtin.module(attn-to-spirv-pipeline{variant=coopmat})" --mlir-print-ir-after=attn-decompose-online-attention -o /dev/null 2>&1 | FileCheck %s --check-prefixes=L2,L2-COOP --implicit-check-not='{{nvgpu|gpu\.|spirv|llvm\.}}'

// The pass lists: the configure step (a target profile recorded as
// #attn.tiling), the two shared passes, then the target's own.
// PIPE-CPU: attn-tile-sdpa
// PIPE-CPU-NEXT: attn-decompose-online-attention
// PIPE-CPU: convert-linalg-to-loops
// PIPE-TC: attn-configure-nvgpu
// PIPE-TC: attn-tile-sdpa
// PIPE-TC-NEXT: attn-decompose-online-attention
// PIPE-TC-NEXT: convert-attn-tiles-to-nvgpu
// PIPE-SIMT: attn-configure-simt
// PIPE-SIMT: attn-tile-sdpa
// PIPE-SIMT-NEXT: attn-decompose-online-attention
// PIPE-SIMT: convert-attn-tiles-to-simt{spirv=false}
// PIPE-PORTABLE: attn-configure-simt{{.*}}coop-matrix=0
// PIPE-PORTABLE: attn-tile-sdpa
// PIPE-PORTABLE-NEXT: attn-decompose-online-attention
// PIPE-PORTABLE-NEXT: convert-attn-tiles-to-simt{spirv=true}
// PIPE-COOP: attn-configure-simt{{.*}}coop-matrix=32
// PIPE-COOP: attn-tile-sdpa
// PIPE-COOP-NEXT: attn-decompose-online-attention
// PIPE-COOP-NEXT: convert-attn-tiles-to-simt{spirv=true}

// The tiled form after the rewrite (f16, a bool mask per batch and head,
// causal, lse; 32 query rows, 64 keys, D = 16):
// L2: IR Dump After AttnDecomposeOnlineAttentionPass (attn-decompose-online-attention)
// L2-LABEL: func.func @attn_kernel
// L2: bufferization.to_tensor
// The grid: (batch, head, query block); 2 tiles of 16 rows for coopmat, 1
// of 32 rows (Sq) elsewhere.
// L2-CPU: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (1, 2, 1)
// L2-TC: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (1, 2, 1)
// L2-SIMT: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (1, 2, 1)
// L2-PORTABLE: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (1, 2, 1)
// L2-COOP: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (1, 2, 2)
// The key blocks wholly below the diagonal: acc, m, l carried.
// L2: scf.for {{.*}} iter_args({{.*}}) -> (tensor<[[BR:[0-9]+]]x16xf32>, tensor<[[BR]]xf32>, tensor<[[BR]]xf32>)
// S = Q K^T in f32 from the f16 tiles
// L2: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.+}}, %{{.+}} : tensor<[[BR]]x16xf16>, tensor<64x16xf16>) outs(%{{.+}} : tensor<[[BR]]x64xf32>)
// L2: arith.extf
// L2: arith.mulf
// L2: arith.addf
// the mask: -inf where it is false
// L2: arith.select %{{.+}}, %{{.+}}, %{{.+}} : f32
// the block's row max, scaled by scale (the state is in natural units)
// L2: arith.maximumf
// L2: arith.constant 2.500000e-01 : f32
// whether any row's max grew: the rescale branch
// L2: attn.row_local_guard
// L2: scf.if
// L2: math.exp2
// P = exp2(fma(S, scale log2 e, -m log2 e)), its row sum, P . V
// L2: arith.constant 0.360673755 : f32
// L2: math.fma
// L2: math.exp2
// L2-TC: arith.truncf {{.*}} : f32 to f16
// L2-COOP: arith.truncf {{.*}} : f32 to f16
// L2: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%{{.+}}, %{{.+}} : tensor<[[BR]]x64x{{f32|f16}}>, tensor<64x16xf16>) outs(%{{.+}} : tensor<[[BR]]x16xf32>)
// L2: scf.yield
// The diagonal key blocks: the same steps with the causal mask.
// L2: scf.for
// L2: arith.cmpi sgt
// L2: math.exp2
// The finalize: out = acc / l, lse = m + log2(l) ln 2.
// L2: arith.truncf {{.*}} : f32 to f16
// L2: math.log2
// What each target chose, the only difference:
// L2-CPU: attn.tiling = #attn.tiling<block_q = 32, block_kv = 64>
// L2-TC: attn.tiling = #attn.tiling<block_q = 32, block_kv = 64, static_tiles = true, rescale_threshold = 8, p_type = f16, {{.*}}mapping = #attn.mma_sync<
// L2-SIMT: attn.tiling = #attn.tiling<block_q = 32, block_kv = 64, mapping = #attn.simt<rows = 64, lanes = 1>>
// L2-PORTABLE: attn.tiling = #attn.tiling<block_q = 32, block_kv = 64, mapping = #attn.simt<rows = 64, lanes = 1, unroll = true>>
// L2-COOP: attn.tiling = #attn.tiling<block_q = 16, block_kv = 64, p_type = f16, mapping = #attn.coop_matrix<invocations = 32>>

func.func @attn_kernel(%q: memref<1x2x32x16xf16>, %k: memref<1x2x64x16xf16>, %v: memref<1x2x64x16xf16>, %mask: memref<1x2x32x64xi1>, %out: memref<1x2x32x16xf16>, %lse: memref<1x2x32xf32>) {
  %q_t = bufferization.to_tensor %q restrict : memref<1x2x32x16xf16> to tensor<1x2x32x16xf16>
  %k_t = bufferization.to_tensor %k restrict : memref<1x2x64x16xf16> to tensor<1x2x64x16xf16>
  %v_t = bufferization.to_tensor %v restrict : memref<1x2x64x16xf16> to tensor<1x2x64x16xf16>
  %m_t = bufferization.to_tensor %mask restrict : memref<1x2x32x64xi1> to tensor<1x2x32x64xi1>
  %o, %l = attn.sdpa %q_t, %k_t, %v_t mask(%m_t : tensor<1x2x32x64xi1>) causal : tensor<1x2x32x16xf16>, tensor<1x2x64x16xf16>, tensor<1x2x64x16xf16> -> tensor<1x2x32x16xf16>, tensor<1x2x32xf32>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<1x2x32x16xf16>, memref<1x2x32x16xf16>) -> ()
  bufferization.materialize_in_destination %l in restrict writable %lse : (tensor<1x2x32xf32>, memref<1x2x32xf32>) -> ()
  return
}
