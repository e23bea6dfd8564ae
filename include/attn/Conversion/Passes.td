//===- Passes.td - attn conversion passes -----------------------*- tablegen -*-===//
#ifndef ATTN_CONVERSION_PASSES_TD
#define ATTN_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertAttnToLinalgPass : Pass<"convert-attn-to-linalg"> {
  let summary = "Reference lowering of attn.sdpa to linalg on tensors (the math path)";
  let description = [{
    Rewrites every `attn.sdpa` into the plain, untiled computation on
    tensors, one `linalg.generic` per step of the math in
    docs/Semantics.md: `S = scale * Q.K^T` in f32 (inputs extended), the
    additive / keep-mask and causal bias (bottom-right aligned), the row max
    `m`, `P = exp(S - m_safe)` with `m_safe = m == -inf ? 0 : m`, the row sum
    `l`, `Pn = l == 0 ? 0 : P / l` with the Philox dropout decision of
    `buildDropoutKeep`, `O = Pn . V` with f32 accumulation, a final `truncf`
    to the element type and `lse = l == 0 ? -inf : m_safe + log(l)`.

    GQA is expressed in the indexing maps (`h floordiv (Hq/Hkv)`), or, when
    the group size is dynamic, by `tensor.extract` at the computed kv head:
    K and V are never copied. Mask dimensions of size 1 broadcast (static:
    constant 0 in the map; dynamic: a run-time select of the index).
    Multiply-adds carry `fastmath<contract>`, reduction adds `reassoc`;
    nothing else is fast-math, so the -inf handling survives.

    Requires: `attn.sdpa` ops that verify (any static or dynamic B, H, S).
    Guarantees: no `attn.sdpa` is left (other attn ops are untouched); the
    result is `linalg`, `tensor`, `arith` and `math` ops with the exact
    semantics of the op documentation, materializing `[B, Hq, Sq, Skv]` f32
    tensors. An op it cannot lower gets an error on the op and the pass
    fails. This is the correctness reference for every other path and is
    selected by `attn-to-cpu-pipeline{math=true}`.

    ```mlir
    // before
    %o = attn.sdpa %q, %k, %v : tensor<1x2x8x16xf32>, ... -> tensor<1x2x8x16xf32>
    // after: linalg.generic ops computing S, max, exp, sum, P/l, P.V
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

def AttnConfigureNVGPUPass : Pass<"attn-configure-nvgpu"> {
  let summary = "Choose the tensor-core tiling and mapping of each attn.sdpa";
  let description = [{
    The first step of the NVIDIA tensor-core target. For every `attn.sdpa`
    that the mma.sync kernel handles (f16 or bf16, D and Dv multiples of 16
    up to 256, in the JIT's destination-passing form with unit-stride rows)
    and that carries no `tiling` yet, sets `tiling` to the decision
    `attn-tile-sdpa` applies and `convert-attn-tiles-to-nvgpu` maps onto a
    workgroup: static tiles of `block_q = 16 x warps x row_tiles` rows and
    `block_kv` keys, the lazy rescale (threshold 8), P rounded to the
    element type, packed GQA heads for decode (a static Sq = 1 without a
    mask or dropout), causal grids heaviest first, and the
    `#attn.mma_sync<warps, row_tiles, stages, q_from_smem, shared_bytes,
    max_registers>` mapping. The choices come from one table of measured
    geometries (`resolveNVGPUGeometry`, docs/NVIDIA.md); options force them.

    Launch geometry follows the launch: an op whose query length Sq is
    dynamic is cloned (with `decode-alternatives`, the default) into
    alternatives that write the same destinations, each with an
    `attn.launch_when` bounding Sq (the grammar of
    `attn/runtime/LaunchCondition.h`): `"sq == 1"`, the op over
    `memref.cast` views of q, out, lse and a mask whose Sq is a static 1,
    configured as a static decode (packed GQA heads without a mask or
    dropout); `"sq >= 2 && sq <= 16"`, the geometry of a static Sq of 16
    (one or two warps of one row tile), when that differs from the
    default; and the default geometry for the rest (`"sq >= 17"`, or `"sq
    >= 2"`). A static Sq keeps one alternative.

    With `kv-splits` > 1 the chunk count is chosen per launch, so each of
    those is cloned again into two alternatives that write the same
    destinations: one with `kv_splits = 1` and `unsplit` in its
    `attn.launch_when` (what a launch with one chunk runs: `"unsplit"`, or
    e.g. `"sq == 1 && unsplit"`) and one with `kv_splits = N,
    launch_splits` and `split`; the runtime launches one of them per
    launch.

    Requires: nothing (ops it does not handle, and ops that already carry
    a `tiling`, are left as they are). Guarantees: every op it handles,
    and every clone, has a `tiling` attribute whose mapping is
    `#attn.mma_sync` and whose sizes fit the mapping (block_q = 16 warps
    row_tiles, shared_bytes = the K/V ring plus Q unless Q aliases the
    last stage); the conditions of the clones of one op partition the
    launches: for every Sq >= 1 and every split count, exactly one of them
    holds (an op left alone, or a single alternative, has none: always).
    Errors: options out of range, a chip before sm_80.

    ```mlir
    // D = 128, f16, sm_90a, no mask: 4 warps of two row tiles, 32-key
    // blocks, a 3-stage ring
    %o = attn.sdpa %q, %k, %v {tiling = #attn.tiling<block_q = 128,
        block_kv = 32, static_tiles = true, rescale_threshold = 8,
        p_type = f16, mapping = #attn.mma_sync<warps = 4, row_tiles = 2,
        stages = 3, q_from_smem = true, shared_bytes = 81920>>} : ...
    ```
  }];
  let options = [
    Option<"warps", "warps", "int64_t", /*default=*/"0",
           "Warps per workgroup (16 query rows per row tile each): 1, 2, 4 "
           "or 8; 0 = the table's choice">,
    Option<"stages", "stages", "int64_t", /*default=*/"0",
           "K/V tiles in flight in the cp.async ring, 2 to 4; 0 = the "
           "table's choice">,
    Option<"kvSplits", "kv-splits", "int64_t", /*default=*/"1",
           "1: one kernel; N > 1: split-KV kernels whose chunk count a "
           "runtime chooses per launch (N when none does)">,
    Option<"rowTiles", "row-tiles", "int64_t", /*default=*/"0",
           "m16 tiles of query rows per warp, 1 or 2; 0 = the table's "
           "choice">,
    Option<"blockKv", "block-kv", "int64_t", /*default=*/"0",
           "Keys per K/V tile: 16, 32 or 64; 0 = the table's choice">,
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90a\"",
           "Target GPU (sm_80, sm_90, sm_90a): some geometries depend on it">,
    Option<"decodeAlternatives", "decode-alternatives", "bool",
           /*default=*/"true",
           "A dynamic query length: alternatives for Sq = 1 and Sq <= 16 "
           "chosen at launch (false: one geometry for every Sq)">
  ];
  let dependentDialects = ["::mlir::attn::AttnDialect",
                           "::mlir::memref::MemRefDialect"];
}

def ConvertAttnTilesToNVGPUPass : Pass<"convert-attn-tiles-to-nvgpu", "::mlir::ModuleOp"> {
  let summary = "Map the tiled attention form onto tensor cores (mma.sync, cp.async, ldmatrix)";
  let description = [{
    Lowers each tiled attention whose `attn.tiling` has an `#attn.mma_sync`
    mapping (the output of `attn-configure-nvgpu`, `attn-tile-sdpa` and
    `attn-decompose-online-attention`, in the JIT's destination-passing
    form) to a `gpu.launch`: a workgroup per query tile (grid x = query
    blocks, in heaviest-first order for causal grids of 16 blocks or more;
    y = heads, times the split-KV chunks; z = batch), `warps` warps of
    `row_tiles` m16 row tiles. It writes no attention math of its own: it
    distributes the tiled form's ops onto the threads.

    - Layouts: the [Br, Bc] and [Br, Dv] tiles live in mma.sync m16n8 C
      fragments (thread 4g + t of a warp holds rows g and g + 8 of each of
      its m16 row tiles, columns 2t and 2t + 1 of each 8-column tile); a
      row vector holds a thread's rows, reduced over the quad by xor
      shuffles, except sums that only ever add (the running sum), which
      stay per thread until a non-linear use. Elementwise generics are
      evaluated per element from their bodies, with `linalg.index` bound to
      the element's row and column; row reductions combine a thread's
      elements then the quad; the rescale guard (`attn.row_local_guard`) is
      a warp vote.
    - Contractions: Q.K^T and P.V are mma.sync m16n8k16 with f32
      accumulators; P's C fragments are reused as A fragments.
    - Staging: Q and a ring of `stages` K/V tiles in dynamic shared memory,
      filled by cp.async (rows past the end zero-filled) and read by
      ldmatrix through an XOR swizzle; the key loops become one software
      pipeline over the tile's key blocks.
    - Split-KV: the chunk count is the partial workspaces' extent, which
      the host code allocates; the merge forall becomes a second kernel.

    Requires: the tiled form of such an op: foralls carrying `attn.tiling`
    with static tiles and the mapping, key loops whose K and V tiles are
    slices of the function's tensors at block x block_kv, operands from
    `bufferization.to_tensor` of memrefs with unit-stride rows, results
    materialized into memrefs. Guarantees: no such forall is left; the
    function launches one kernel (or a partial and a merge kernel) over the
    caller's memrefs (and host-allocated workspaces), whose only other
    parameter is the dropout seed; rows of q, k and v must be 16-byte
    aligned (the runtime checks it at launch).
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::nvgpu::NVGPUDialect",
                           "::mlir::NVVM::NVVMDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

def AttnConfigureSIMTPass : Pass<"attn-configure-simt"> {
  let summary = "Choose the SIMT tiling and mapping of each attn.sdpa (a thread or a subgroup per row)";
  let description = [{
    The first step of the SIMT targets: the NVIDIA generic kernel (what
    the tensor cores do not take: f32, head dims that are not multiples of
    16, tensor cores off) and the Vulkan portable variant. For every
    `attn.sdpa` in the JIT's destination-passing form whose `tiling` has no
    mapping yet, sets `tiling` to what `attn-tile-sdpa` applies and
    `convert-attn-tiles-to-simt` maps onto a workgroup: `block-q` query
    rows per tile (one per thread, or per subgroup of `lanes`
    invocations), `block-kv` keys per K/V tile in workgroup memory (0: the
    largest of 64, 32, 16, 8 whose K and V tiles fit
    `shared-memory-bytes`), dynamic tail tiles (no padding), the textbook
    rescale (no lazy threshold) and P in f32, with the mapping
    `#attn.simt<rows, lanes, unroll>`. An op that already has a tiling
    without a mapping keeps its sizes.

    With `coop-matrix` = N > 0, the mapping is
    `#attn.coop_matrix<N, lanes>` instead (the Vulkan coopmat variant: a
    workgroup of N invocations in whole subgroups, the products on
    cooperative matrices over workgroup-memory tiles shared out among the
    subgroups, the softmax a row per `lanes` invocations, P in the element
    type; f16 or bf16; block-q, block-kv, D and Dv multiples of 16 and, with
    lanes > 1, of lanes; block-q x lanes at most N; block-kv 0: the largest
    of 64, 32, 16 whose tiles fit, `coopMatrixSharedBytes`). With
    `coop-registers`, `#attn.coop_matrix<N, lanes, registers = true>`: Q
    and the accumulator in cooperative-matrix registers, a 16-row strip per
    subgroup of 16 x lanes invocations (block-q x lanes = N; lanes up to
    8), the tiles sized without an accumulator tile; with `coop-strips` =
    m > 1, m strips per subgroup of 16 x lanes x m invocations (each K^T
    or V matrix loaded from workgroup memory entering m products).

    With `pack-decode-heads`, a GQA decode step (static [B, Hq, 1, D]
    query, static K/V heads Hkv < Hq, no mask, no dropout) gets
    `pack_heads`: a tile's rows are the Hq / Hkv query heads that share one
    K/V head (the grid's heads are the K/V heads), so K and V are read
    once per group instead of once per query head, and the rows fill the
    tile (a 16-row strip of cooperative matrices, or a workgroup's rows)
    instead of one row of it.

    With `kv-splits` N > 1: split-KV with N chunks; with `launch-splits`
    the count is chosen per launch instead, so the op is cloned into an
    unsplit alternative (`attn.launch_when = "unsplit"`) and a split one
    (`"split"`, `launch_splits`), as `attn-configure-nvgpu` does.

    Requires: every `attn.sdpa` without a mapping in the destination-passing
    form (a GPU kernel has buffers, not tensors); ops whose tiling already
    has a mapping are left alone. Guarantees: every op it
    takes has a tiling with an `#attn.simt` mapping whose K and V tiles fit
    `shared-memory-bytes`, or (`coop-matrix`) an `#attn.coop_matrix`
    mapping with block-q x lanes at most its invocations, D, Dv and the
    blocks multiples of 16 (and of lanes), P in the data's type, and tiles
    that fit.
    Errors: an op on a function's tensors (pointing at `attn-translate` and
    `attn-run --dump-ir`, which build the kernel for its spec), options out
    of range, tiles that cannot fit, or (coop-matrix)
    data that is not f16 or bf16 and sizes not multiples of 16 (reported
    on the op).

    ```mlir
    // f32, D = 64, 64 rows per workgroup, 48 KB: 64-key tiles
    %o = attn.sdpa %q, %k, %v {tiling = #attn.tiling<block_q = 64,
        block_kv = 64, mapping = #attn.simt<rows = 64, lanes = 1>>} : ...
    ```
  }];
  let options = [
    Option<"blockQ", "block-q", "int64_t", /*default=*/"64",
           "Query rows per workgroup (a thread or a subgroup each)">,
    Option<"blockKv", "block-kv", "int64_t", /*default=*/"0",
           "Keys per K/V tile (0 = the largest of 64, 32, 16, 8 that fits "
           "shared-memory-bytes)">,
    Option<"sharedMemoryBytes", "shared-memory-bytes", "int64_t",
           /*default=*/"49152", "Workgroup memory the K and V tiles may use">,
    Option<"lanes", "lanes", "int64_t", /*default=*/"1",
           "Invocations per row: 1, or a power of two up to 128 (the "
           "subgroup size the kernel is built for)">,
    Option<"unroll", "unroll", "bool", /*default=*/"false",
           "Unroll the loops over the head dimensions">,
    Option<"kvSplits", "kv-splits", "int64_t", /*default=*/"1",
           "1: one kernel; N > 1: split-KV with N chunks">,
    Option<"launchSplits", "launch-splits", "bool", /*default=*/"false",
           "With kv-splits > 1: the chunk count is chosen per launch "
           "(unsplit and split alternatives)">,
    Option<"coopMatrix", "coop-matrix", "int64_t", /*default=*/"0",
           "N > 0: the cooperative-matrix mapping, a workgroup of N "
           "invocations in whole subgroups, a row per `lanes` of them "
           "(f16/bf16, block-q, block-kv, D and Dv multiples of 16 and of "
           "lanes, block-q x lanes <= N); 0: the SIMT mapping">,
    Option<"scalarProducts", "scalar-products", "bool", /*default=*/"false",
           "With coop-matrix: the products as scalar loops over the same "
           "tiles (devices without cooperative matrices)">,
    Option<"coopRegisters", "coop-registers", "bool", /*default=*/"false",
           "With coop-matrix: Q and the accumulator in cooperative-matrix "
           "registers, a 16-row strip per subgroup of 16 x lanes "
           "invocations (block-q x lanes = coop-matrix)">,
    Option<"coopStrips", "coop-strips", "int64_t", /*default=*/"1",
           "With coop-registers: 16-row strips per subgroup (1, 2 or 4; a "
           "subgroup of 16 x lanes x coop-strips invocations)">,
    Option<"packDecodeHeads", "pack-decode-heads", "bool",
           /*default=*/"false",
           "A GQA decode step of static shapes (Sq = 1, no mask, no "
           "dropout) tiled with pack_heads: a tile's rows are the query "
           "heads of one K/V head">
  ];
  let dependentDialects = ["::mlir::attn::AttnDialect"];
}

def ConvertAttnTilesToSIMTPass : Pass<"convert-attn-tiles-to-simt", "::mlir::ModuleOp"> {
  let summary = "Map the tiled attention form onto SIMT invocations: a thread or a subgroup per row";
  let description = [{
    Lowers each tiled attention whose `attn.tiling` has an `#attn.simt` or
    `#attn.coop_matrix` mapping (the output of `attn-configure-simt`,
    `attn-tile-sdpa` and
    `attn-decompose-online-attention`, in the JIT's destination-passing
    form) to a `gpu.launch`: a workgroup per query tile (grid x = query
    blocks, y = heads, times the split-KV chunks, z = batch) of `rows`
    rows of `lanes` invocations. It writes no attention math of its own:
    every value of the tiled form is computed by the op that defines it,
    evaluated per element from its body.

    - Layouts: row `r` of every tile belongs to thread `r` (lanes = 1) or
      to subgroup `r`, whose lane `t` holds columns `t, t + lanes, ...`.
      A row vector is a scalar of its row's invocations; a sum over
      columns stays per lane until a non-linear use (the running sum),
      other row reductions are subgroup reductions. The rescale guard
      (`attn.row_local_guard`) is evaluated on the invocation's own row.
    - Fusion: the elementwise ops over a key block and the reductions and
      products that consume them run in one loop over the block's keys,
      each element computed once; a value that a later loop reads again
      (the scores, between the row max and the exponentials) is kept in a
      private array. P . V runs in that loop with the value columns
      unrolled (`unroll`), or after it with the value columns outside the
      key loop, up to 8 at a time in registers. Without `unroll` and with
      one lane per row, Q.K^T fills a private array first, up to 8 keys at
      a time in registers (private arrays live in local memory: Q's row
      and P are then read once per 8 products).
    - Staging: K and V tiles in workgroup memory, copied by the whole
      workgroup between barriers; Q's row in a private array.
    - Split-KV: the partial forall becomes the kernel over (head, chunk),
      the merge forall a second kernel (a thread per output element).

    With `spirv`, workgroup memory and private arrays use SPIR-V storage
    classes (Workgroup, Function), and the staging copies run the same
    number of iterations in every invocation (lavapipe). SPIR-V indexes
    with 32 bits: with `spirv`, a function argument with a static extent or
    a static shape of more than 2^31 - 1 elements, or a memref of a
    non-identity layout, is an error that says so
    (`checkSPIRVBufferArguments`).

    `#attn.coop_matrix<invocations, scalar>` (SPIR-V only): a workgroup of
    one subgroup per query tile of block_q rows (at most `invocations`).
    Q, K and V tiles, S (f32), P (the data's type) and the accumulator
    (f32) live in workgroup memory with padded rows; tails are zero-filled
    when staged (loads without a branch, the row clamped) and P is zero
    past the block's keys. Q.K^T and P.V are whole-workgroup products of
    16x16x16 `gpu.subgroup_mma_*` matrices (f16 operands: a bf16 kernel is
    retyped first by `attn-spirv-bf16-as-f16`), or with `scalar` loops of
    the product's body over the same tiles; between them the other ops
    run a row per invocation, as with `#attn.simt` (one lane), in regions
    guarded by the row's validity, with barriers before and after each
    product. With `registers = true`, subgroup s owns rows 16 s .. 16 s +
    15: its Q matrices are loaded once (Q's tile staged into K's, which
    has max(block_q, block_kv) rows, and a barrier before K's first block
    overwrites it; a Q that is also K or V has its own tile), its
    accumulator matrices are loop
    values of the key loops (a rescale of the accumulator becomes a row
    factor multiplied into them from a [block_q, 16] tile before P.V,
    where the key sequence is not split only in the blocks where a row
    of the strip has a factor other than 1, an xor-shuffle vote over the
    subgroup; any other update of it is an error), the barriers between
    Q.K^T, the rows and P.V are `spirv.ControlBarrier`s of subgroup scope
    (the strip's S, P and factors are its own), the row's lane t takes
    the block's contiguous columns t c .. t c + c - 1 (c = ceil(block_kv
    / lanes)), reads its scores from S's tile into a private array once
    per block, before any store, and the loops over the block's columns
    are unrolled (the array read at constant indices), the rows'
    reductions are xor-shuffle butterflies over their lanes, and the
    accumulator is
    stored into S's tile only for the finalize, as many columns at a time
    as that tile has (each window finalized and stored by the strip's
    rows between two subgroup barriers; the row vectors with the first).
    Q (in K's form), K and V, where their memrefs are static with the
    identity layout and 16-bit elements (a packed decode Q: its
    [B, Hkv, group, D] view's) and a
    block's rows are whole 16-byte vectors that the workgroup's
    invocations share out evenly, are staged through a view of the same
    buffer as `memref<N x vector<4xi32>>` (a
    `builtin.unrealized_conversion_cast` on the host side, which the
    launch passes as the kernel's argument; the kernel's buffer is then
    the caller's, read as vectors): each invocation loads 16-byte
    vectors (rows past the
    block's keys zero, the row clamped) and stores them into a workgroup
    tile of such vectors, from which the products load their matrices
    (the leading dimension in vectors); the next block's vectors are
    loaded during the current one where an invocation carries at most
    16. Other K and V tiles are staged as 16x16 matrices (whole blocks;
    the tail element by element), one block ahead where every subgroup
    has as many.

    With `pack_heads` (a GQA decode step of one query row), the grid's
    heads are the K/V heads and a tile's rows the query heads of one
    group: q, out and lse are read and written through a [B, Hkv, group,
    ...] view of the caller's [B, Hq, 1, ...] memrefs, with `spirv` a
    `memref.expand_shape` + `memref.collapse_shape` (which
    `fold-memref-alias-ops` folds into the accesses; SPIR-V's logical
    addressing has no pointer casts), else the strided
    `memref.reinterpret_cast` the tensor-core kernels use; the split-KV
    merge kernel writes through the same view.

    Requires: the tiled form of such an op with dynamic tiles (no
    `static_tiles`; `pack_heads` only over a single query row): foralls
    carrying `attn.tiling`, key
    loops whose K and V tiles are slices of the function's tensors,
    operands from `bufferization.to_tensor` of memrefs, results
    materialized into memrefs. Guarantees: no such forall is left; the
    function launches one kernel (or a partial and a merge kernel) over
    the caller's memrefs (and host-allocated workspaces), whose only other
    parameter is the dropout seed; every launch is described by
    `attn.launches` (LaunchInfo). Errors: an op of the tiled form it does
    not know, reported on the op.
  }];
  let options = [
    Option<"spirv", "spirv", "bool", /*default=*/"false",
           "SPIR-V storage classes for workgroup memory and private "
           "arrays; uniform staging loops">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::spirv::SPIRVDialect"];
}

def AttnLaunchInfoPass : Pass<"attn-launch-info", "::mlir::ModuleOp"> {
  let summary = "Move each kernel's launch description onto its launches";
  let description = [{
    After `gpu-kernel-outlining`. The GPU targets describe how a runtime
    launches each kernel they build (its grid in terms of the problem's
    extents, when it runs among alternatives; TileDistribution.h lists the
    keys) in an `attn.launches` dictionary on the function holding the
    `gpu.launch`, keyed by the kernel's symbol `"module::function"`
    (outlining keeps no attribute of `gpu.launch`, and an attribute of the
    function survives every cleanup pass). This pass moves each entry onto
    the `gpu.launch_func` ops of that kernel as `attn.launch`, where the JIT
    and `attn-translate` read the launch metadata.

    Requires: outlined kernels. Guarantees: no function carries
    `attn.launches`; every `gpu.launch_func` of a described kernel carries
    its `attn.launch`. Errors: a description whose kernel has no
    `gpu.launch_func` in that function.

    ```mlir
    // before
    func.func @f(...) attributes {attn.launches = {"f_kernels::f_split_kv_merge" = {kind = "merge", ...}}} {
      gpu.launch_func @f_kernels::@f_split_kv_merge ...
    // after
    func.func @f(...) {
      gpu.launch_func @f_kernels::@f_split_kv_merge ... {attn.launch = {kind = "merge", ...}}
    ```
  }];
}

#endif // ATTN_CONVERSION_PASSES_TD
