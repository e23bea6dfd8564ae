//===- Passes.td - attn passes of the cpu target -----------*- tablegen -*-===//
#ifndef ATTN_TARGET_CPU_PASSES_TD
#define ATTN_TARGET_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def CPUDistinctDestinationsPass
    : Pass<"attn-cpu-distinct-destinations", "::mlir::func::FuncOp"> {
  let summary = "Give every op that writes into a fresh tensor (tensor.empty, "
                "or a linalg.fill of one) its own copy of it before "
                "bufferization";
  let description = [{
    The step of `attn-to-cpu-pipeline` right before bufferization (after
    the last CSE). CSE merges identical `tensor.empty` ops and identical
    fills of them, so the running max of the online softmax, a key block's
    own row max (both filled with -inf), the running sum, the rescale
    factors and other row temporaries of a tile can all name one tensor as
    the destination they write into. One-shot bufferization then keeps one
    writer in place and copies the rest into fresh allocations where their
    lifetimes overlap; where such a copy is made inside an `scf.if` (the
    rescale guard of a key loop that folded away: one key block of a
    static shape, or a full block and its remainder) and yielded out of it,
    its buffer is freed outside the block that allocates it, which
    `attn-cpu-hoist-tile-buffers` refuses.

    Contract: for a `tensor.empty`, or a `linalg.fill` whose destination
    is a `tensor.empty`, that a destination-passing op in a branch of an
    `scf.if` beside it writes into (its `outs`: the rescale guard updating
    the state in place while the other branch yields the original, which
    must share its buffer), each destination-passing op in its own block
    that also
    writes into it gets a clone made at the definition (so the clone
    dominates what the original did; a fill with its own clone of the
    empty tensor). The original stays with the branches' writers and with
    reads of the value. Values do not change (an empty tensor's contents
    are undefined; a cloned fill writes the same constant). Elsewhere (the
    key loop's state is carried by the loop, not written in place from a
    branch) the IR is left as it is.
  }];
}

def CPUHoistTileBuffersPass
    : Pass<"attn-cpu-hoist-tile-buffers", "::mlir::ModuleOp"> {
  let summary = "Give the parallel tiles' temporaries per-thread slabs "
                "allocated before the tile loop";
  let description = [{
    After bufferization every tile of the cpu kernel's parallel loop
    allocates its temporaries (the score block, the running max and sum,
    the accumulator copy, ...) on the heap, most of them once per key
    block, and frees them in the same iteration. Inside the OpenMP team a
    failed `malloc` cannot return to the launch (a thread cannot leave the
    team), and a malloc/free pair per key block costs time. This step of
    `attn-to-cpu-pipeline` runs on buffers, before `convert-scf-to-openmp`,
    and moves each of those temporaries into a slab with a part per thread,
    allocated before the loop and freed after it, where a failed allocation
    is an ordinary error of the launch.

    A `memref.alloc` is moved when its nearest enclosing `scf.parallel` is
    an outermost one, its type has the identity layout and the default
    memory space, its alignment (if any) is at most 128, it has exactly one `memref.dealloc` and that dealloc is
    in the alloc's block, no terminator, call, return or op with regions
    (a loop's `iter_args`) receives it or a view of it, and every dynamic size has an upper bound before the loop:
    the smallest of those the value bounds analysis expresses in values
    defined above the loop (for an `affine.min`, one per expression; the
    last, partial query block `min(block_q, Sq - i * block_q)` of tile `i`
    gives `block_q` and `Sq`; `scf.parallel` induction variables are given
    `lb <= iv < ub` for this), the extent of a buffer from above the loop
    that the size also sizes a `memref.subview` of (a view is in bounds:
    the key block that slices K is at most Skv), and a constant bound.

    Requires: memrefs (after bufferization and the deallocation pipeline).
    Allocs inside an `scf.parallel` nested in another are left alone
    (with `strict`, an error).
    Guarantees: for each movable alloc of an outermost `scf.parallel`, one
    `memref<?xi8>` slab of `threads x per_thread` bytes (128-byte aligned)
    is allocated right before the loop and freed right after it;
    `threads` is `omp_get_max_threads()` (at least 1) with `openmp` and 1
    without; `per_thread` is the alloc's bounded size in bytes rounded up
    to 128 (no two threads share a cache line; the alloc's alignment, at
    most 128, holds). Distinct allocs get distinct slabs, so they stay
    distinct allocations for alias analysis. Each moved alloc becomes a
    `memref.view` of its thread's part (`omp_get_thread_num()` with
    `openmp`, 0 without) with the alloc's own sizes and type; its dealloc is
    removed. A size product that overflows 64 bits asks for 2^63 - 1 bytes,
    so the allocation fails instead of wrapping. With `strict`, an alloc
    inside an `scf.parallel` that cannot be moved is an error naming it (the
    JIT builds with `strict`: its kernels allocate nothing inside the
    OpenMP team); without, it is left where it is. Without `openmp` the
    slab is only correct when the loop then runs sequentially.

    ```mlir
    // before
    scf.parallel (%i) = (%c0) to (%n) step (%c1) {
      %t = memref.alloc() {alignment = 64 : i64} : memref<64x64xf32>
      ...
      memref.dealloc %t : memref<64x64xf32>
    }
    // after (openmp)
    %threads = ... omp_get_max_threads(), at least 1
    %bytes = ... %threads x 16384, checked
    %slab = memref.alloc(%bytes) {alignment = 128 : i64} : memref<?xi8>
    scf.parallel (%i) = (%c0) to (%n) step (%c1) {
      %tid = ... omp_get_thread_num()
      %shift = arith.muli %tid, %c16384 : index
      %t = memref.view %slab[%shift][] : memref<?xi8> to memref<64x64xf32>
      ...
    }
    memref.dealloc %slab : memref<?xi8>
    ```
  }];
  let options = [
    Option<"openmp", "openmp", "bool", /*default=*/"true",
           "Index the slab by the OpenMP thread number (the loop becomes an "
           "OpenMP work-sharing loop); false: one part, for a loop that "
           "runs sequentially">,
    Option<"strict", "strict", "bool", /*default=*/"false",
           "Fail on an allocation inside a parallel loop that cannot be "
           "moved">
  ];
  let dependentDialects = [
    "::mlir::affine::AffineDialect", "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def CPUScheduleTilesPass
    : Pass<"attn-cpu-schedule-tiles", "::mlir::ModuleOp"> {
  let summary = "Hand out the parallel tiles to the OpenMP threads one at a "
                "time (dynamic schedule)";
  let description = [{
    After `convert-scf-to-openmp`, every `omp.wsloop` without a schedule
    (the parallel tiles, the split-KV merge) gets `schedule(dynamic)`
    with the default chunk of one iteration: a thread takes the next tile
    when it is done with its own. The tiles of a causal op differ in work
    (a query block visits only the key blocks up to its diagonal), and
    the static schedule's contiguous chunks gave the last thread the
    heaviest half: on 2 cores a causal S = 8192 kernel ran 1.31x faster
    than on one, a non-causal one 1.87x. A tile is tens of microseconds
    or more of work, so taking one costs nothing measurable. A loop that
    already has a schedule keeps it.

    Requires: the OpenMP dialect's `omp.wsloop`. Guarantees: the same
    loops, with a schedule; tiles that index per-thread slabs by
    `omp_get_thread_num` (attn-cpu-hoist-tile-buffers) stay correct under
    any schedule.
  }];
  let dependentDialects = ["::mlir::omp::OpenMPDialect"];
}

def CPUOrderContractionsPass
    : Pass<"attn-cpu-order-contractions", "::mlir::func::FuncOp"> {
  let summary = "Reorder function-level contractions so that the output's "
                "contiguous dimension is the innermost loop";
  let description = [{
    The first step of `attn-to-cpu-pipeline`, for a layer's projections
    (`attn.mha` after `attn-decompose-mha`), which become plain loops in
    their own loop order (the attention's tiles are
    `attn-cpu-vectorize-tiles`' and are not touched: only `linalg.generic`
    ops directly in the function body are). The decomposition puts each
    contraction's reduction innermost: a dot product per output element,
    an FMA chain the loop vectorizer may not reassociate. For each
    contraction on tensors (a reduction loop, one output, projected
    permutation maps, no `linalg.index`) whose output's last dimension is
    not its last loop, this makes that dimension the last loop (the other
    loops keep their order) and gives every input that it reads along that
    dimension, but not as its last one, a `linalg.transpose` that moves it
    last (a weight `W [H, D, E]` read along D becomes `[H, E, D]`, once
    per launch: O(E·H·D) against the contraction's O(B·S·E·H·D)). The
    innermost loop then streams a row of the output and of that input
    with the other input's element loop-invariant, which LLVM vectorizes.

    Requires: functions on tensors. Guarantees: the same values (each
    output element's reduction runs in the same order over the same
    products); every function-level contraction it matched has the
    output's contiguous dimension as its innermost loop and reads each
    input along it contiguously.

    ```mlir
    // before: loops (b, h, s, d, e), e innermost
    linalg.generic {indexing_maps = [(b,h,s,d,e) -> (b,s,e), (b,h,s,d,e) -> (h,d,e),
                                     (b,h,s,d,e) -> (b,h,s,d)], ...} ins(%x, %w) outs(%acc)
    // after: loops (b, h, s, e, d), d innermost over W transposed
    %wt = linalg.transpose ins(%w : tensor<2x16x32xf32>) outs(%e : tensor<2x32x16xf32>) permutation = [0, 2, 1]
    linalg.generic {indexing_maps = [(b,h,s,e,d) -> (b,s,e), (b,h,s,e,d) -> (h,e,d),
                                     (b,h,s,e,d) -> (b,h,s,d)], ...} ins(%x, %wt) outs(%acc)
    ```
  }];
  let options = [
    Option<"parallel", "parallel", "bool", /*default=*/"true",
           "Also tile each reordered contraction's outer parallel loops "
           "onto an scf.forall (an iteration per index, the last outer "
           "parallel loop in blocks of 16), which the pipeline runs on "
           "OpenMP as it does the attention's tiles">
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def CPUVectorizeTilesPass
    : Pass<"attn-cpu-vectorize-tiles", "::mlir::func::FuncOp"> {
  let summary = "Turn the tiled form's linalg ops into register-blocked "
                "vector code for the host's vector width";
  let description = [{
    The step of `attn-to-cpu-pipeline` that makes the tiles of the
    FlashAttention rewrite run at vector speed. It runs on tensors, after
    `attn-decompose-online-attention`, and rewrites every linalg op whose
    loop extents have constant upper bounds (a tile's extents are at most
    the block sizes, however dynamic the shapes):

    * A `tensor.empty` with bounded dynamic sizes, of at most
      `16 x max-vector` elements, becomes a static one of the bounds and a
      slice of its live part, so the tiles' temporaries have static
      strides (a larger one keeps dynamic sizes, so its buffer is what the
      launch needs, not the bound).
    * A contraction (two parallel loops m, n and one reduction k, as
      `Q·Kᵀ` and `P·V` are) becomes a register-blocked micro-kernel. Its
      right operand is packed into a static f32 `k x n` panel (`Kᵀ`: the
      key block transposed in `lanes x lanes` blocks in registers; `V`:
      converted a row at a time when f16 or bf16); its left operand is
      packed the same way when it needs converting or is invariant in the
      enclosing loop (`Q`, once per query tile). Each element is converted
      once per tile (bf16 through its bits: a 16-bit shift, exact). The
      contraction is then tiled `rows x (vectors * lanes) x 1` with k
      innermost, its m and n loops peeled: per k a full tile does `rows`
      broadcasts, `vectors` loads and `rows x vectors` FMAs into
      accumulators that stay in vector `iter_args` for the whole k loop;
      the edge tiles are vectorized with masks in the full tile's vector
      shape, and once their masks sit on the transfers their accumulators
      are hoisted the same way (read under the mask before the k loop,
      carried as a vector, written under it after). A panel block larger than
      `max-vector` elements leaves its contraction unpacked.
    * With `bf16-dot` (lanes 16), a bf16 `Q·Kᵀ` contraction (A [m, k],
      B [n, k], k a multiple of 32, accumulated from zero) becomes
      AVX512-BF16 dot products instead: B packed once per tile into a
      `k/2 x n` panel of 32-bit bf16 pairs (16 x 16 blocks of pairs
      transposed as i32), A into `m x k/2` pairs, and `r x vectors*16`
      register tiles over the bounds of m and n (r the largest divisor of
      m's bound up to `rows`) that add one `x86vector.avx512.dot` (acc +=
      a0 b0 + a1 b1 per lane) per pair of k; the live part of the result
      is sliced out. `vdpbf16ps` treats subnormals as zero
      (docs/Semantics.md). P·V (P is f32) keeps the FMA micro-kernel.
    * Any other op (fills, the row max and sum, the rescales, the
      exponentials) is vectorized with vector sizes equal to its bounds,
      masked where an extent is dynamic; a two-dimensional one whose first
      loop is parallel a row at a time, on 1-D vectors.
    * `exp2` becomes `exp(x ln 2)` and that MLIR's polynomial
      approximation, with `exp2(-inf) = 0` kept exact by a select (the
      approximation clamps its input); scalar ones too, so every exp2 of
      the kernel is the same function.

    An op whose extents have no constant bound, or that the vectorizer
    refuses, is left as it is (linalg-to-loops lowers it later). A masked
    floating-point reduction (a tail or dynamic tile's row max and row
    sum) becomes an unmasked one over its vector with the masked-off lanes
    set to the kind's identity (-inf for max, +inf for min, -0 for add):
    MLIR 22's LLVM lowering of the masked form fills a max's
    with -1.4e-45, which would be the max of a row of negative scores and
    underflow every exp2 of a row near -FLT_MAX, and makes a sum ordered
    (llvm.vp.reduce.fadd without reassociation: a block's keys added one
    at a time onto the running sum, 4.5e-4 off for 2^16 nearly equal
    weights). Every op
    keeps its element types and its order of accumulation over k; the
    products are fused into FMAs (the bodies allow contraction), the
    exponentials are approximations (the CPU test matrices check every
    kernel against the float64 reference).

    Requires: tensors (before bufferization), `func.func`.
    Guarantees: the values of the input up to the FMA contraction and the
    exp2 approximation; vector ops on tensors (`vector.transfer_read` and
    `transfer_write` with masks, `vector.fma`, `vector.reduction`,
    `vector.transpose`), which bufferize and lower through
    `convert-vector-to-scf` and `convert-vector-to-llvm`.
  }];
  let options = [
    Option<"lanes", "lanes", "int64_t", /*default=*/"16",
           "f32 elements in one vector register (16 for AVX-512, 8 for "
           "AVX2, 4 for SSE or NEON)">,
    Option<"rows", "rows", "int64_t", /*default=*/"8",
           "Rows of a contraction's register tile (left-operand "
           "broadcasts per k)">,
    Option<"vectors", "vectors", "int64_t", /*default=*/"2",
           "Vector registers per row of a contraction's register tile "
           "(its columns are vectors x lanes)">,
    Option<"maxVector", "max-vector", "int64_t", /*default=*/"4096",
           "The most elements of one vector the pass creates; an op "
           "with a larger bounded extent is left alone">,
    Option<"bf16Dot", "bf16-dot", "bool", /*default=*/"false",
           "Contract bf16 Q·Kᵀ tiles with AVX512-BF16 dot products "
           "(x86vector.avx512.dot; lanes = 16 only): for a host with "
           "avx512bf16">
  ];
  let dependentDialects = [
    "::mlir::affine::AffineDialect", "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect",
    "::mlir::vector::VectorDialect", "::mlir::x86vector::X86VectorDialect"
  ];
}

#endif // ATTN_TARGET_CPU_PASSES_TD
