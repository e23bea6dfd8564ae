//===- CPUPipeline.cpp - attn.sdpa on tensors to LLVM for the host CPU ----===//
#include "attn/Pipelines/Pipelines.h"

#include "attn/Conversion/Passes.h"
#include "attn/Dialect/Attn/Transforms/Passes.h"
#include "attn/Target/CPU/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void mlir::attn::buildAttnToCPUPipeline(OpPassManager &pm,
                                        const AttnToCPUPipelineOptions &opts) {
  // A layer (attn.mha) becomes its projections around one attn.sdpa.
  pm.addPass(createAttnDecomposeMhaPass());
  // A layer's projections (function-level contractions after
  // attn-decompose-mha; nothing in an attention kernel) with the output's
  // rows innermost, for the loop vectorizer, and (parallel) their outer
  // loops as parallel tiles.
  CPUOrderContractionsPassOptions order;
  order.parallel = opts.parallel;
  pm.addNestedPass<func::FuncOp>(createCPUOrderContractionsPass(order));
  // L0 -> L2. Requires: verified attn.sdpa ops on tensors.
  // Guarantees: linalg/tensor/arith/math/scf on tensors, no attn op. The
  // tiled path holds no Sq x Skv value; the math path does (it is the
  // reference, selected explicitly).
  if (opts.math) {
    pm.addPass(createConvertAttnToLinalgPass());
  } else {
    AttnTileSdpaPassOptions tile;
    tile.blockQ = opts.blockQ;
    tile.blockKv = opts.blockKv;
    tile.kvSplits = opts.kvSplits;
    tile.parallelism = opts.parallelism;
    tile.maxDynamicKv = opts.maxDynamicKv;
    tile.packDecodeHeads = opts.packDecodeHeads;
    pm.addPass(createAttnTileSdpaPass(tile));
    pm.addPass(createAttnDecomposeOnlineAttentionPass());
  }
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // The tiles' linalg ops -> register-blocked vector code (still tensors);
  // the reference lowering stays plain loops.
  if (opts.vectorLanes > 0 && !opts.math) {
    CPUVectorizeTilesPassOptions vectorize;
    vectorize.lanes = opts.vectorLanes;
    vectorize.bf16Dot = opts.bf16Dot;
    pm.addNestedPass<func::FuncOp>(createCPUVectorizeTilesPass(vectorize));
    pm.addPass(createCSEPass());
  }

  // L2 -> buffers. tensor.empty destinations that end in the caller's
  // output (via materialize_in_destination / parallel_insert_slice) are
  // replaced by that output first, so tiles write straight into it.
  // Guarantees: memrefs only; every temporary allocated inside the tile
  // loops is freed in the same iteration.
  // CSE merged identical tensor.empty destinations: each use gets its own
  // again, so no temporary is copied (and allocated inside a guard) where
  // their lifetimes overlap.
  pm.addNestedPass<func::FuncOp>(createCPUDistinctDestinationsPass());
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  // The key loop's state (acc, max, sum) may be yielded in fresh buffers
  // when a step cannot update it in place; the deallocation pipeline below
  // frees the previous iteration's.
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.allowReturnAllocsFromLoops = true;
  // Functions that take and return tensors (attn-opt / attn-translate
  // input) get memref signatures; the JIT's entry already has them.
  bufferize.bufferizeFunctionBoundaries = true;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(createForallToParallelLoopPass());
  pm.addPass(createCanonicalizerPass());
  bufferization::BufferDeallocationPipelineOptions dealloc;
  bufferization::buildBufferDeallocationPipeline(pm, dealloc);
  pm.addPass(createCSEPass());
  pm.addPass(createCanonicalizerPass());

  // Buffers -> loops. The parallel tiles (the former scf.forall) become an
  // OpenMP work-sharing loop over all cores; everything inside a tile stays
  // sequential.
  pm.addPass(createConvertLinalgToLoopsPass());
  // The tiles' temporaries become views of slabs with a part per thread,
  // allocated before the parallel loop: nothing is allocated inside the OpenMP team (a
  // failed allocation there could not fail the launch), and no key block
  // pays a malloc. The JIT (checked-alloc) requires every one be moved.
  CPUHoistTileBuffersPassOptions slabs;
  slabs.openmp = opts.parallel;
  slabs.strict = opts.checkedAlloc;
  pm.addPass(createCPUHoistTileBuffersPass(slabs));
  if (opts.parallel) {
    pm.addPass(createConvertSCFToOpenMPPass());
    // Causal tiles differ in work: a thread takes the next when it is done.
    pm.addPass(createCPUScheduleTilesPass());
  }

  // Loops -> LLVM. finalize-memref-to-llvm runs before scf-to-cf because the
  // OpenMP conversion wraps each tile in a memref.alloca_scope, which must be
  // inlined before its body becomes a multi-block CFG.
  // n-D vector transfers -> 1-D ones (unrolled: no stack temporaries).
  VectorTransferToSCFOptions transfers;
  transfers.enableFullUnroll();
  pm.addPass(createConvertVectorToSCFPass(transfers));
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // Contractions (k = 1) as outer products: a broadcast and an FMA per
  // row; reductions may be reassociated (the tiled form's sums are).
  ConvertVectorToLLVMPassOptions vectorToLLVM;
  vectorToLLVM.reassociateFPReductions = true;
  vectorToLLVM.vectorContractLowering =
      vector::VectorContractLowering::OuterProduct;
  // The key panels' 16 x 16 blocks transpose as shuffles (other shapes
  // element by element).
  vectorToLLVM.vectorTransposeLowering =
      vector::VectorTransposeLowering::Shuffle16x16;
  // x86vector.avx512.dot (bf16-dot) -> llvm.x86.avx512bf16.dpbf16ps.
  vectorToLLVM.x86Vector = opts.bf16Dot;
  pm.addPass(createConvertVectorToLLVMPass(vectorToLLVM));
  FinalizeMemRefToLLVMConversionPassOptions toLLVM;
  toLLVM.useGenericFunctions = opts.checkedAlloc;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(toLLVM));
  pm.addPass(createSCFToControlFlowPass());
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

void mlir::attn::registerAttnPipelines() {
  PassPipelineRegistration<AttnToCPUPipelineOptions>(
      "attn-to-cpu-pipeline",
      "Lower attn.sdpa on tensors to the LLVM dialect for the host CPU: the "
      "FlashAttention rewrite (or, with math=1, the reference lowering), "
      "bufferization, loops with the parallel tiles on OpenMP, LLVM",
      buildAttnToCPUPipeline);
  registerAttnToNVVMPipeline();
  registerAttnSPIRVPipeline();
}
