//===- Passes.td - attn passes of the SPIR-V target --------*- tablegen -*-===//
//
// The steps of attn-to-spirv-pipeline that upstream MLIR does not provide,
// in the order the pipeline runs them.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TARGET_SPIRV_PASSES_TD
#define ATTN_TARGET_SPIRV_PASSES_TD

include "mlir/Pass/PassBase.td"

def SPIRVBufferizePass : Pass<"attn-spirv-bufferize", "::mlir::ModuleOp"> {
  let summary = "Bufferize for SPIR-V kernels: loop-carried tensors in place, "
                "temporaries in Function-storage memory";
  let description = [{
    GPU kernels for Vulkan have no heap: every temporary of a tile must be a
    fixed-size private (Function storage class) variable, and a loop must not
    yield a fresh buffer per iteration. This step of
    `attn-to-spirv-pipeline{variant=tiled}` (after `eliminate-empty-tensors`)
    makes every tensor an `scf.for` carries end the iteration in the buffer
    it started in (a `linalg.copy` into the iter_arg before the yield), runs
    One-Shot Bufferize with function boundaries and new buffers in the
    SPIR-V Function storage class, erases the copies of a buffer onto
    itself, hoists the private buffers out of the sequential loops of a
    tile, and wraps a function whose only tile was folded away into a
    one-iteration `scf.parallel`.

    Requires: functions on tensors that One-Shot Bufferize accepts without
    allocations returned from loops; every temporary of static shape (else
    an error names it); no copy of an argument buffer (a kernel cannot
    allocate device memory: an error names it); memref arguments of
    identity layout and no static extent or static element count above
    2^31 - 1 (`checkSPIRVBufferArguments`, shared with
    `convert-attn-tiles-to-simt{spirv}`: else an error says which).
    Guarantees: memrefs only; function arguments are identity-layout memrefs
    in the default memory space (storage buffers); every other buffer is a
    static `memref.alloc` in `#spirv.storage_class<Function>`, placed before
    the outermost `scf.for` of its tile (inside `scf.forall`,
    `scf.parallel` or the function); a loop-carried buffer is the same
    buffer in every iteration; no `linalg.copy` of a buffer onto itself;
    a function of one block without a parallel loop has its body (but the
    return) in a one-iteration `scf.parallel`, so it still becomes a
    kernel. Nothing may canonicalize between this pass and the GPU mapping
    (it would fold the one-iteration loop).

    ```mlir
    // before: acc' = acc * acc, a fresh tensor per iteration
    %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%acc = %init) -> tensor<4xf32> {
      %n = linalg.generic ... ins(%acc : tensor<4xf32>) outs(%e : tensor<4xf32>) ...
      scf.yield %n : tensor<4xf32>
    }
    // after (inside a one-iteration scf.parallel)
    %tmp = memref.alloc() : memref<4xf32, #spirv.storage_class<Function>>
    %r = scf.for ... iter_args(%acc = %init) -> (memref<4xf32, #spirv.storage_class<Function>>) {
      linalg.generic ... ins(%acc : ...) outs(%tmp : ...)
      linalg.copy ins(%tmp : ...) outs(%acc : ...)
      scf.yield %acc : ...
    }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::bufferization::BufferizationDialect",
                           "::mlir::spirv::SPIRVDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::memref::MemRefDialect"];
}

def SPIRVLayerBuffersPass
    : Pass<"attn-spirv-layer-buffers", "::mlir::ModuleOp"> {
  let summary = "Bufferize a layer's tensor work around its attention into "
                "device buffers, the attention left in destination-passing "
                "form";
  let description = [{
    A Vulkan kernel source is a host function that only launches kernels
    and allocates device buffers. A layer (`attn.mha` after
    `attn-decompose-mha`) has function-level tensor work around its
    `attn.sdpa`: the projections (linalg contractions and their elementwise
    epilogues) and the views of the weights (head splits, the rows of a
    fused QKV weight). This step of `attn-to-spirv-pipeline` (portable,
    coopmat and coopmat-scalar variants) bufferizes all of it but the attn
    dialect's ops, after empty-tensor elimination (so that the last
    epilogue writes the result argument in place): every intermediate
    tensor becomes a `memref.alloc` in the default memory space (a device
    buffer the host allocates: a workspace of the artifact), views of
    arguments become memref views, and each attention result that buffer
    code reads is materialized into a buffer of its own (restrict,
    writable), read from there. Copies of a buffer onto itself are erased.

    Requires: functions whose arguments are memrefs (the JIT's kernel
    source), static shapes around the attention, no `attn.mha` (an error
    names `attn-decompose-mha`, the pipeline's first step). Functions with
    no tensor work besides attention ops, `bufferization.to_tensor` and
    `bufferization.materialize_in_destination` (the plain attention kernel
    source) are left as they are. With `refuse` (the tiled variant), a
    function with such work is an error naming the variants that lower
    layers, and nothing changes.
    Guarantees: besides the attention ops and the to_tensor /
    materialize_in_destination of their operands and results, no op has a
    tensor result (else an error names it); every attention op is in the
    runtime's destination-passing form (operands `bufferization.to_tensor`
    of memrefs, results materialized into memrefs); the other work is
    linalg ops on memrefs at function level.

    ```mlir
    // before (after attn-decompose-mha)
    %q = linalg.generic ... ins(%x_t, %wq3 : ...) outs(%fill : tensor<1x2x8x16xf32>)
    %o = attn.sdpa %q, %k, %v : ...
    %y = linalg.generic ... ins(%o, %wo3 : ...) outs(...)
    bufferization.materialize_in_destination %y in restrict writable %arg9
    // after
    %qb = memref.alloc() : memref<1x2x8x16xf32>
    linalg.generic ... ins(%arg0, %expand : ...) outs(%qb : ...)
    %q = bufferization.to_tensor %qb : ...
    %o = attn.sdpa %q, %k, %v : ...
    %ob = memref.alloc() : memref<1x2x8x16xf32>
    bufferization.materialize_in_destination %o in restrict writable %ob
    linalg.generic ... ins(%ob, %expand_o : ...) outs(%arg9 : ...)
    ```
  }];
  let options = [
    Option<"refuse", "refuse", "bool", /*default=*/"false",
           "Refuse a layer with an error naming the variants that lower "
           "it instead of bufferizing it (the tiled variant's step, which "
           "maps whole functions into private memory)">
  ];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::memref::MemRefDialect"];
}

def SPIRVMapLinalgPass : Pass<"attn-spirv-map-linalg", "::mlir::ModuleOp"> {
  let summary = "Turn function-level linalg ops on buffers into gpu.launch "
                "kernels: contractions as workgroup tiles, the rest an "
                "invocation per output element";
  let description = [{
    The kernels of a layer's projections on Vulkan (after
    `attn-spirv-layer-buffers`). Each `linalg.generic` (named ops are
    generalized first) directly in a function body becomes one
    `gpu.launch` in the function's `<fn>_kernels` module, entry point
    `<fn>_linalg<i>`, with a constant grid and a one-dimensional workgroup.
    Two pairs are folded first:
    - a fill (an op with no reduction that yields its scalar input) of the
      buffer a contraction accumulates into, right before it: the
      contraction starts from the scalar, the fill goes;
    - an elementwise op right after a contraction that reads its output
      (an allocation nothing else uses) through an identity map: its body
      runs on the reduced values in the contraction's kernel and stores to
      its own outputs; the allocation goes.

    With `tile` (the default), a contraction of two buffers through
    projected permutations whose loops split into M (read by input 0
    only), N (by input 1 only), K (reductions read by both) and batch
    dimensions, with M x N at least 16 x 16, gets a workgroup of 256
    invocations per 64 x 64 outputs (4 x 4 per invocation, rows and
    columns 16 apart) where M and N are both at least 64 and the body
    reads no `linalg.index`, else per 16 x 16 (one each); batch on grid z,
    N tiles on x, M tiles on y. K runs in steps of 16, each step staging
    both inputs' slices in workgroup memory (`#spirv.storage_class<
    Workgroup>`, rows padded by one element) between two barriers, with
    neighbouring invocations loading neighbouring k; indices past M, N or
    K are clamped for the loads and their values unused (the last step's
    inner loop stops at K); each output's store is guarded. Every other op
    (or all, without `tile`) gets an invocation per point of its parallel
    iteration space (the innermost parallel dimension fastest, 128
    invocations a workgroup, the workgroups over x and y) running a
    sequential `scf.for` nest over its reductions. Both evaluate the op's
    own body (`cloneGenericBody`). Views of buffers are recreated inside
    the launch, so the kernel's operands are the root buffers (arguments
    or allocations) the artifact binds.

    Requires: linalg ops on memrefs of static extent at function level;
    contractions whose outputs are indexed by their parallel dimensions
    only. Guarantees: no linalg op is left directly in a function body;
    each became one `gpu.launch` or was folded into one; a launch writes
    exactly the elements the op did, with the op's body applied in the
    op's reduction order per output. An op of more than 65535 x 65535 x
    128 points (or tiles beyond 65535 per grid axis) is refused with an
    error (tiled ops fall back to the other mapping first).

    ```mlir
    // before
    linalg.fill ins(%c0 : f32) outs(%acc : memref<1x2x8x16xf32>)
    linalg.generic {... ["parallel" x 4, "reduction"]} ins(%x, %w) outs(%acc)
    linalg.generic {... ["parallel" x 4]} ins(%acc, %bias) outs(%q)
    // after: one kernel; each invocation sums its output from 0.0 over
    // staged slices of %x and %w, then stores q = bias + sum
    gpu.launch blocks(...) in (%gx = %c2, ...) threads(...) in (%bx = %c256, ...) {
      %xs = memref.alloc() : memref<16x17xf32, #spirv.storage_class<Workgroup>>
      ... scf.for (K steps) { stage; gpu.barrier; scf.for { ... }; gpu.barrier }
      scf.if %exists { memref.store ..., %q[...] }
      gpu.terminator
    }
    ```
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::affine::AffineDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::spirv::SPIRVDialect"];
  let options = [
    Option<"tile", "tile", "bool", /*default=*/"true",
           "Contractions of two buffers (projected-permutation maps, at "
           "least one 16 x 16 tile of M x N): a 16 x 16 output tile per "
           "workgroup of 256 invocations, the reduction in steps of 16 "
           "with both inputs' slices staged in workgroup memory; off: an "
           "invocation per output element for every op">
  ];
}

def SPIRVBf16StoragePass : Pass<"attn-spirv-bf16-storage", "::mlir::ModuleOp"> {
  let summary = "Retype every bf16 memref as an i16 memref with the same bits";
  let description = [{
    Vulkan 1.1 has no bf16 type, and MLIR 22's SPIR-V type conversion of
    bf16 memrefs is wrong (it declares the buffer as 32-bit words but
    indexes it per 16-bit element). This step of `attn-to-spirv-pipeline`
    (portable and coopmat-scalar variants), run on the host function while
    its kernels are still `gpu.launch` regions, keeps every bf16 buffer's
    bits and changes only the type it is seen through. The bf16 values left
    are only converted to or from f32; `arith-expand{include-bf16}` later
    turns those into integer ops.

    Requires: bf16 buffer elements read or written only by `memref.load`
    and `memref.store`; other ops may only pass the buffers on (views,
    casts, `memref.dim`, `memref.alloc`/`dealloc`, `gpu.launch_func`,
    calls, returns). Any other op using a bf16 memref is an error naming
    it, and then nothing is changed.
    Guarantees: no memref of bf16 is left (`func.func` signatures, block
    arguments and op results): each is the memref of i16 with the
    same shape, layout and memory space; a load of one yields i16 followed
    by `arith.bitcast` to bf16, a store stores `arith.bitcast` of the bf16
    value to i16. Buffers keep their size and bytes, so the host stages
    bf16 tensors unchanged.

    ```mlir
    // before
    %x = memref.load %in[%i] : memref<8xbf16>
    memref.store %x, %out[%i] : memref<8xbf16>
    // after
    %b = memref.load %in[%i] : memref<8xi16>
    %x = arith.bitcast %b : i16 to bf16
    %y = arith.bitcast %x : bf16 to i16
    memref.store %y, %out[%i] : memref<8xi16>
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def SPIRVEntryPointABIPass
    : Pass<"attn-spirv-entry-point-abi", "::mlir::ModuleOp"> {
  let summary = "Set spirv.entry_point_abi on GPU kernels from their "
                "known_block_size";
  let description = [{
    `convert-gpu-to-spirv` needs `spirv.entry_point_abi` on every kernel;
    the workgroup size comes from the launch the kernel was outlined from
    (`known_block_size`), so this step of `attn-to-spirv-pipeline`, after
    `gpu-kernel-outlining`, copies it.

    Requires: every `gpu.func` kernel without `spirv.entry_point_abi` has
    `known_block_size` (else an error on the kernel).
    Guarantees: every kernel has `spirv.entry_point_abi` whose
    `workgroup_size` is its `known_block_size`; one that already had the
    attribute keeps it; functions that are not kernels are unchanged.

    ```mlir
    // before
    gpu.func @kernel() kernel attributes {known_block_size = array<i32: 4, 2, 1>}
    // after
    gpu.func @kernel() kernel attributes {known_block_size = array<i32: 4, 2, 1>,
        spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [4, 2, 1]>}
    ```
  }];
  let dependentDialects = ["::mlir::spirv::SPIRVDialect"];
}

def SPIRVDynamicShapesPass
    : Pass<"attn-spirv-dynamic-shapes", "::mlir::ModuleOp"> {
  let summary = "Kernels with dynamically sized memref arguments read their "
                "sizes from a buffer the host fills";
  let description = [{
    A Vulkan storage buffer has no sizes, and `convert-gpu-to-spirv`
    linearizes a memref index only with static strides: a kernel argument
    such as `memref<2x8x?x64xf16>` does not lower. This step of
    `attn-to-spirv-pipeline`, after outlining, rewrites every kernel with
    dynamically sized memref arguments so that one SPIR-V module serves
    every size.

    Requires: outlined `gpu.func` kernels launched by `gpu.launch_func`;
    every dynamically sized memref argument of a kernel is dense with an
    identity layout and used only by `memref.load`, `memref.store` (as the
    buffer) and `memref.dim` with a constant, in-range dimension (anything
    else is an error naming it).
    Guarantees: each such argument is a 1-D `memref<?xT>` indexed linearly,
    row-major over its sizes; the kernel takes one more argument,
    `memref<Nxi32>`, whose slot i holds the i-th dynamic size of its
    arguments in argument order, read once at the kernel's entry (clamped to
    `max-extent` with `arith.minui` when it is > 0); `memref.dim` of such an
    argument is replaced by its size. Every launch of a rewritten kernel
    collapses those operands (`memref.collapse_shape`) and passes a fresh
    size buffer filled from `memref.dim` in the host function and freed
    after the launch. With `max-extent` > 0 and a kernel rewritten, the
    module carries `attn.spirv_max_dynamic_extent` (i64), which the launch
    metadata reports so that the runtime refuses larger sizes. Kernels with
    static shapes and their launches are unchanged.

    ```mlir
    // before
    gpu.func @k(%a: memref<?x8xf16>) kernel {
      %x = memref.load %a[%i, %j] : memref<?x8xf16>
    // after: a[i, j] -> a[i * 8 + j]; slot 0 of %sizes is dim 0 of %a
    gpu.func @k(%a: memref<?xf16>, %sizes: memref<1xi32>) kernel {
      %x = memref.load %a[%lin] : memref<?xf16>
    ```
  }];
  let options = [
    Option<"maxExtent", "max-extent", "int64_t", /*default=*/"0",
           "Clamp every size a kernel reads to this (0: no clamp); the "
           "runtime refuses larger sizes">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

def SPIRVLoopBudgetPass : Pass<"attn-spirv-loop-budget", "::mlir::ModuleOp"> {
  let summary = "Fail when an invocation of a kernel can run more loop "
                "iterations than the device allows";
  let description = [{
    Some Vulkan drivers end a shader's loops silently after a fixed number
    of iterations per invocation: llvmpipe (lavapipe) decrements one counter
    per iteration of any loop and breaks every loop once 65535 are used up,
    so a kernel that needs more returns wrong results without an error.
    This check of `attn-to-spirv-pipeline` bounds, per outlined kernel, the
    total number of `scf.for` iterations one invocation can run: trip counts
    from integer range analysis of the bounds, refined where a select
    compares a value with a constant (each operand is evaluated where the
    condition holds or fails: lower-affine's ceildiv and floordiv of a
    non-negative size stay non-negative); a loop over one chunk of a range,
    `[begin, min(begin + chunk, end))`, counts its chunk; loops over
    consecutive ranges, `[a, b)` then `[b, c)` (a causal tile's unmasked
    and diagonal key blocks), count at most `c - a` together; nested counts
    multiplied, plus the one exiting pass per loop execution that llvmpipe
    also counts; loops under `scf.if` count as if the branch were taken.
    The bound is conservative: a kernel under it is safe.

    Requires: outlined `gpu.func` kernels (other functions are not looked
    at); with `max-iterations` = 0 the pass does nothing.
    Guarantees: with `max-iterations` = N > 0, success only if every
    kernel's bound is at most N; otherwise an error on the kernel saying the
    bound, or, when a loop has no bound (a bound computed from data, any
    other loop op), an error with a note on that loop. The IR is never
    changed.

    ```mlir
    // 11 + 10 * 21 = 221 iterations: passes with max-iterations=221,
    // fails with max-iterations=220
    gpu.func @k() kernel {
      scf.for %i = %c0 to %c10 step %c1 {
        scf.for %j = %c0 to %c20 step %c1 { ... }
      }
      gpu.return
    }
    ```
  }];
  let options = [
    Option<"maxIterations", "max-iterations", "uint64_t", /*default=*/"0",
           "Loop iterations allowed per invocation (0 = no limit)">
  ];
}

def SPIRV16BitStoragePass
    : Pass<"attn-spirv-16bit-storage", "::mlir::ModuleOp"> {
  let summary = "Emulate 16-bit buffers with 32-bit words where the target cannot compute on them";
  let description = [{
    `convert-gpu-to-spirv` keeps a 16-bit buffer (f16, or bf16's i16 from
    `attn-spirv-bf16-storage`) as 16-bit storage whenever the target
    declares `StorageBuffer16BitAccess`, and then needs `Float16` (f16) or
    `Int16` (i16) for every value it loads. 16-bit storage comes with
    either option (`f16=1` or `int16=1`), so f16 data with `f16=0
    int16=1`, or bf16 data with `f16=1 int16=0`, could not lower a load at
    all. Such buffers can only be emulated with 32-bit words, which the
    conversion does when the target has no 16-bit storage: this step of
    `attn-to-spirv-pipeline`, right after `spirv-attach-target`, drops the
    16-bit storage capabilities from such a target.

    Requires: nothing (a `gpu.module` without a `#spirv.target_env`
    target is left alone).
    Guarantees: every `#spirv.target_env` target of a `gpu.module` that
    holds f16 memrefs (and no i16 ones) while lacking `Float16`, or i16
    memrefs (and no f16 ones) while lacking `Int16`, lists none of
    `StorageBuffer16BitAccess`, `StorageUniform16`,
    `StoragePushConstant16`; every other target is unchanged, as is the
    rest of each target. A module with both kinds (bf16 data with an f16
    mask) on a target with 16-bit storage but without both `Float16` and
    `Int16` is refused with that reason (emulating one kind while the
    other is 16-bit storage does not lower: it failed to legalize every
    load before); with both capabilities, or without 16-bit storage (both
    emulated), it is unchanged.

    ```mlir
    // before
    gpu.module @k [#spirv.target_env<#spirv.vce<v1.3, [Shader, StorageBuffer16BitAccess, Int16], [SPV_KHR_16bit_storage]>, #spirv.resource_limits<>>] {
      gpu.func @f(%a: memref<8xf16>) kernel { gpu.return }
    }
    // after
    gpu.module @k [#spirv.target_env<#spirv.vce<v1.3, [Shader, Int16], [SPV_KHR_16bit_storage]>, #spirv.resource_limits<>>] { ... }
    ```
  }];
  let dependentDialects = ["::mlir::spirv::SPIRVDialect"];
}

def SPIRVSubgroupSizePass
    : Pass<"attn-spirv-subgroup-size", "::mlir::ModuleOp"> {
  let summary = "Record the subgroup size the kernels need";
  let description = [{
    A kernel written for subgroups of N invocations (the portable variant's
    subgroup kernel, the coopmat kernel) needs N recorded in two places:
    the SPIR-V target's resource limits (`convert-gpu-to-spirv` lowers
    `gpu.shuffle` only when its width equals the target's subgroup size),
    and the launch metadata, so that the runtime creates the pipeline with
    that subgroup size. This step of `attn-to-spirv-pipeline`, right after
    `spirv-attach-target`, sets both.

    Requires: `size` in [1, 128] (else an error on the module); every
    `gpu.module` has a `#spirv.target_env` among its targets (else an error
    on it: run `spirv-attach-target` first).
    Guarantees: `subgroup_size` = `size` in the resource limits of every
    `#spirv.target_env` target of every `gpu.module`, the rest of each
    target unchanged; when there is a `gpu.module`, the module carries
    `attn.spirv_subgroup_size = size : i32`, which `extractSPIRVKernel`
    reads. A module without `gpu.module` is unchanged.

    ```mlir
    // attn-spirv-subgroup-size{size=8}, before
    gpu.module @k [#spirv.target_env<#spirv.vce<v1.3, [Shader], []>, #spirv.resource_limits<>>]
    // after
    module attributes {attn.spirv_subgroup_size = 8 : i32} {
      gpu.module @k [#spirv.target_env<#spirv.vce<v1.3, [Shader], []>,
                                       #spirv.resource_limits<subgroup_size = 8>>]
    ```
  }];
  let options = [
    Option<"size", "size", "int64_t", /*default=*/"0",
           "Invocations per subgroup (> 0)">
  ];
  let dependentDialects = ["::mlir::spirv::SPIRVDialect"];
}

def SPIRVCoopMatBf16Pass : Pass<"attn-spirv-coopmat-bf16", "::mlir::ModuleOp"> {
  let summary = "Retype a bf16 coopmat kernel, generated in f16, as bf16";
  let description = [{
    `gpu.mma_matrix` has no bf16 element type in MLIR 22, so the coopmat
    kernel of a bf16 attention is generated in f16 (the buffers hold the
    same 16-bit words) and `attn-spirv-bf16-as-f16` marks the module
    `attn.coopmat_bf16`. This step of
    `attn-to-spirv-pipeline{variant=coopmat}`, after `convert-gpu-to-spirv`,
    turns every f16 in the marked module's `spirv.module`s into bf16, which
    SPV_KHR_bfloat16 expresses.

    Requires: a module marked `attn.coopmat_bf16` whose `spirv.module`s use
    f16 only for what was bf16 (`attn-spirv-bf16-as-f16` refuses an f16
    mask on bf16 data); every f16 constant in them exactly representable in bf16
    (else an error on the op and the pass fails).
    Guarantees: in a marked module, no f16 is left in its `spirv.module`s:
    every type (through pointers, arrays, runtime arrays, structs, vectors,
    cooperative matrices, function types) and every f16 constant is bf16;
    their VCE triple (and target environment, where they carry one) require
    `BFloat16TypeKHR`, `BFloat16CooperativeMatrixKHR` and
    `SPV_KHR_bfloat16` and no longer `Float16`; the mark is removed. An
    unmarked module is unchanged.

    ```mlir
    // before
    module attributes {attn.coopmat_bf16} {
      spirv.module ... requires #spirv.vce<v1.6, [Shader, CooperativeMatrixKHR, Float16, ...], [...]> {
        %m = spirv.KHR.CooperativeMatrixLoad %p, ... -> !spirv.coopmatrix<16x16xf16, Subgroup, MatrixA>
    // after
    module {
      spirv.module ... requires #spirv.vce<v1.6, [Shader, CooperativeMatrixKHR, ..., BFloat16TypeKHR,
                                              BFloat16CooperativeMatrixKHR], [..., SPV_KHR_bfloat16]> {
        %m = spirv.KHR.CooperativeMatrixLoad %p, ... -> !spirv.coopmatrix<16x16xbf16, Subgroup, MatrixA>
    ```
  }];
}

def SPIRVBuiltinCapabilitiesPass
    : Pass<"attn-spirv-builtin-capabilities", "::mlir::ModuleOp"> {
  let summary = "Declare the capabilities the subgroup built-ins a "
                "spirv.module reads need";
  let description = [{
    `spirv-update-vce` deduces a module's capabilities from its ops and
    types, not from the built-in variables it reads: a kernel that reads
    `SubgroupId` or `NumSubgroups` (the coopmat kernel shares its matrices
    out among the subgroups of its workgroup) but has no GroupNonUniform op
    would not declare `GroupNonUniform`, which SPIR-V requires of those
    built-ins. This step of `attn-to-spirv-pipeline` adds it.

    Requires: where a `spirv.module` declares a `SubgroupId`,
    `NumSubgroups`, `SubgroupSize` or `SubgroupLocalInvocationId` built-in
    variable, its target environment allows `GroupNonUniform` (else an
    error on the variable).
    Guarantees: every such module's VCE triple requires `GroupNonUniform`;
    its version, extensions and other capabilities, and every other module,
    unchanged.

    ```mlir
    // before
    spirv.module Logical GLSL450 requires #spirv.vce<v1.6, [Shader], []> {
      spirv.GlobalVariable @id built_in("SubgroupId") : !spirv.ptr<i32, Input>
    // after
    spirv.module Logical GLSL450 requires #spirv.vce<v1.6, [Shader, GroupNonUniform], []> {
    ```
  }];
  let dependentDialects = ["::mlir::spirv::SPIRVDialect"];
}

def SPIRVVulkanMemoryModelPass
    : Pass<"attn-spirv-vulkan-memory-model", "::mlir::ModuleOp"> {
  let summary = "Give spirv.modules that use CooperativeMatrixKHR the Vulkan "
                "memory model";
  let description = [{
    VK_KHR_cooperative_matrix requires a module using `CooperativeMatrixKHR`
    to declare the Vulkan memory model (SPV_KHR_vulkan_memory_model), but
    `convert-gpu-to-spirv` always emits `Logical GLSL450`. This last step of
    `attn-to-spirv-pipeline{variant=coopmat}` switches such modules over.
    Under that model workgroup-memory accesses are private unless marked,
    and barriers make writes available and visible only when asked.

    Requires: every `spirv.module` whose VCE triple has
    `CooperativeMatrixKHR` has a target environment that allows
    `VulkanMemoryModel` (else an error on the module).
    Guarantees: every such module has the `Vulkan` memory model, requires
    the `VulkanMemoryModel` capability and the SPV_KHR_vulkan_memory_model
    extension; every `spirv.Load`, `spirv.Store` and cooperative-matrix load
    and store through a Workgroup pointer has `NonPrivatePointer`, and every
    `spirv.ControlBarrier` has `MakeAvailable|MakeVisible` semantics;
    accesses in other storage classes are unchanged. Modules without
    cooperative matrices are unchanged.

    ```mlir
    // before
    spirv.module Logical GLSL450 requires #spirv.vce<v1.6, [Shader, CooperativeMatrixKHR], [SPV_KHR_cooperative_matrix]> {
      %x = spirv.Load "Workgroup" %p : f32
      spirv.ControlBarrier <Workgroup>, <Workgroup>, <AcquireRelease|WorkgroupMemory>
    // after
    spirv.module Logical Vulkan requires #spirv.vce<v1.6, [Shader, CooperativeMatrixKHR, VulkanMemoryModel],
                                                     [SPV_KHR_cooperative_matrix, SPV_KHR_vulkan_memory_model]> {
      %x = spirv.Load "Workgroup" %p ["NonPrivatePointer"] : f32
      spirv.ControlBarrier <Workgroup>, <Workgroup>, <AcquireRelease|WorkgroupMemory|MakeAvailable|MakeVisible>
    ```
  }];
  let dependentDialects = ["::mlir::spirv::SPIRVDialect"];
}

def SPIRVSinkLaunchIndexPass : Pass<"attn-spirv-sink-launch-index"> {
  let summary = "Recompute every index value a gpu.launch reads from outside "
                "inside it (SPIR-V kernels take buffers only)";
  let description = [{
    A SPIR-V kernel of this project takes storage buffers only: sizes reach
    it through the size buffer `attn-spirv-dynamic-shapes` makes of the
    `memref.dim`s of host arguments, never as scalar kernel arguments (the
    artifact refuses those). Upstream's `gpu-launch-sink-index-computations`
    sinks `arith.constant`, `memref.dim`, `arith.select` and `arith.cmpi`
    only, so a size derived from dynamic sizes with integer arithmetic (the
    split-KV chunk count of a dynamic key length, `max(N, ceildiv(Skv,
    2^16))`, which canonicalization substitutes for the kernels'
    `memref.dim` of the workspace) would become a scalar argument; and
    upstream keeps even a `memref.dim` outside when the memref it reads is
    not used in the body yet (the merge kernel does not read K, whose
    length gives the count). This pass, run where the upstream one was
    (before outlining), runs upstream's sinking and then recomputes the
    rest.

    Requires: `gpu.launch` ops (before `gpu-kernel-outlining`).
    Guarantees: every integer or index value a launch body uses from
    outside that is the result of a constant, `memref.dim`, or
    side-effect-free integer arithmetic (add, sub, mul, div, ceildiv,
    floordiv, rem, min, max, select, cmpi, index casts) over such values,
    memrefs and block arguments is recomputed inside the body,
    transitively; a memref it reads becomes a kernel operand (a buffer).
    Other values are left as they are.

    ```mlir
    // before
    %n = arith.maxui %c1, %d : index      // %d = ceildivui(dim(%k, 2), 65536)
    gpu.launch ... { ... memref.load %ws[%i, %n] ... }
    // after: %n (and %d, the dim) recomputed in the body
    ```
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

def SPIRVZeroTripLoopsPass : Pass<"attn-spirv-zero-trip-loops", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Guard every loop with results that may run zero times, "
                "which convert-scf-to-spirv gets wrong";
  let description = [{
    MLIR 22's `convert-scf-to-spirv` gives an `scf.for`'s results through
    Function variables that only the loop body writes (the value each
    iteration yields): a loop that runs no iteration leaves its results
    undefined instead of its initial values. The tiled form has such loops
    wherever a tile visits no key block of a range (the diagonal blocks of
    a causal tile whose first row already sees every key, an empty
    split-KV chunk, the rows that see no key), and the kernels then read
    garbage for them (drivers differ: lavapipe gave an lse of -inf, the
    H100's driver NaN or a finite value). This step of
    `attn-to-spirv-pipeline`, just before the conversion, wraps each
    `scf.for` that has results and whose trip count is not known to be
    positive in `scf.if (lb < ub) { the loop } else { its initial values }`.

    Requires: kernels in a `gpu.module`, before `convert-gpu-to-spirv`.
    Guarantees: every `scf.for` with results runs at least one iteration
    whenever it runs; the values are those of the original loop for every
    trip count. Loops without results, and loops whose bounds are
    constants with lb < ub, are left alone.

    ```mlir
    // before
    %r = scf.for %i = %lo to %hi step %c1 iter_args(%a = %init) -> (f32) { ... }
    // after
    %c = arith.cmpi slt, %lo, %hi : index
    %r = scf.if %c -> (f32) {
      %l = scf.for %i = %lo to %hi step %c1 iter_args(%a = %init) -> (f32) { ... }
      scf.yield %l : f32
    } else {
      scf.yield %init : f32
    }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def SPIRVBf16AsF16Pass : Pass<"attn-spirv-bf16-as-f16", "::mlir::ModuleOp"> {
  let summary = "Retype a bf16 attention as f16 for cooperative matrices, "
                "to be retyped back after the SPIR-V conversion";
  let description = [{
    gpu.mma_matrix has no bf16 element type in MLIR 22, so the coopmat
    variant of a bf16 attention is lowered as f16 over the same 16-bit
    words: this first step of `attn-to-spirv-pipeline{variant=coopmat}`
    replaces every bf16 in the module (function arguments, tensors, the
    attention's types) with f16 and marks the module `attn.coopmat_bf16`;
    after `convert-gpu-to-spirv`, `attn-spirv-coopmat-bf16` turns every f16
    of the marked module back into bf16 (SPV_KHR_bfloat16). Every f16
    operation of such a kernel was a bf16 one (loads and stores of the
    16-bit words, their conversions to and from f32, the matrix products),
    so the round trip is exact.

    Requires: a module without f16 values or types beside the bf16 ones (an
    f16 additive mask on bf16 data would become indistinguishable from it:
    an error names it). Guarantees: no bf16 is left; the module carries
    `attn.coopmat_bf16` if and only if something was retyped.

    ```mlir
    // before
    func.func @k(%q: memref<1x2x64x64xbf16>, ...)
    // after
    module attributes {attn.coopmat_bf16} {
      func.func @k(%q: memref<1x2x64x64xf16>, ...)
    ```
  }];
}

#endif // ATTN_TARGET_SPIRV_PASSES_TD
