//===- AttnAttrs.td - attn attributes ---------------------------*- tablegen -*-===//
#ifndef ATTN_ATTRS_TD
#define ATTN_ATTRS_TD

include "attn/Dialect/Attn/IR/AttnDialect.td"
include "mlir/IR/AttrTypeBase.td"

def Attn_TilingAttr : AttrDef<Attn_Dialect, "Tiling"> {
  let mnemonic = "tiling";
  let summary = "The tiling decisions of the FlashAttention rewrite for one attn.sdpa";
  let description = [{
    What `attn-tile-sdpa` does with one op, and what the target lowerings
    after it read back: the attribute is either set on an `attn.sdpa` by a
    target's configuration pass (or by hand, or by a tuner), or chosen from
    the tiling pass's options; the tiling pass then records the decision it
    took on every `scf.forall` it creates (`attn.tiling`), so that a target
    pass and the JIT read launch geometry from the IR instead of deriving it
    again.

    - `block_q`: query rows per parallel tile (Br),
    - `block_kv`: keys per step of the sequential key loop (Bc),
    - `kv_splits`: chunks the key loop is split into and run in parallel
      (split-KV / flash-decoding); 1 disables it, 0 lets the tiling pass
      choose from static shapes.
    - `launch_splits`: with `kv_splits` > 1, the chunk count is not baked
      into the kernels: the tiles read it from `attn.kv_split_count`, which
      a GPU target turns into the extent of the partial workspaces, so that
      a runtime chooses it per launch (`kv_splits` is the count a host
      that does not choose uses).
    - `static_tiles`: every tile has the static shape [Br, ...] or [Bc,
      ...]; tails are padded *tiles* (never padded copies in memory) whose
      extra keys are masked by `kv_bound` and whose extra rows are never
      written. Targets with fixed fragment shapes (tensor cores,
      cooperative matrices) ask for it; the CPU takes tail tiles of
      dynamic size instead.
    - `pack_heads`: a tile's rows enumerate (query head of a GQA group,
      query position) pairs instead of positions of one head, so that a
      decode step (few query positions) fills the tile with the heads that
      share one K/V head, which is then read once per group.
    - `rescale_threshold`: the lazy rescale of the online softmax (log2
      units): the running max only moves when a row's block max exceeds it
      by more than this; 0 moves it every block (the textbook recurrence).
    - `p_type`: the element type the probabilities are rounded to before
      P . V (f16 / bf16 on tensor cores, whose products take 16-bit
      operands); absent: f32.
    - `heaviest_first`: on GPU targets, causal grids start their heaviest
      query blocks first, in groups of heads whose K and V fit this many
      bytes (meant to stay in L2); 0 keeps the row-major order.
    - `mapping`: the target's mapping of tiles onto hardware (e.g.
      `#attn.mma_sync<...>`), opaque to the tiling pass.

    Example: `{tiling = #attn.tiling<block_q = 64, block_kv = 32, kv_splits = 1>}`
  }];
  let parameters = (ins "int64_t":$block_q, "int64_t":$block_kv,
                        DefaultValuedParameter<"int64_t", "1">:$kv_splits,
                        DefaultValuedParameter<"bool", "false">:$launch_splits,
                        DefaultValuedParameter<"bool", "false">:$static_tiles,
                        DefaultValuedParameter<"bool", "false">:$pack_heads,
                        DefaultValuedParameter<"int64_t", "0">:$rescale_threshold,
                        OptionalParameter<"::mlir::Type">:$p_type,
                        DefaultValuedParameter<"int64_t", "0">:$heaviest_first,
                        OptionalParameter<"::mlir::Attribute">:$mapping);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let builders = [
    AttrBuilder<(ins "int64_t":$block_q, "int64_t":$block_kv,
                     CArg<"int64_t", "1">:$kv_splits), [{
      return $_get($_ctxt, block_q, block_kv, kv_splits, false, false, false,
                   0, Type(), 0, Attribute());
    }]>
  ];
}

def Attn_MmaSyncAttr : AttrDef<Attn_Dialect, "MmaSync"> {
  let mnemonic = "mma_sync";
  let summary = "How the NVIDIA tensor-core target maps a tile onto a workgroup";
  let description = [{
    The `mapping` of an `#attn.tiling` for `convert-attn-tiles-to-nvgpu`:
    `warps` warps of `row_tiles` m16 row tiles each (block_q = 16 x warps x
    row_tiles), a ring of `stages` K/V tiles in dynamic shared memory
    filled by cp.async, Q read from shared memory per key block
    (`q_from_smem`) or held in registers, `shared_bytes` of dynamic shared
    memory, `max_registers` per thread asked of ptxas (0: what one
    workgroup may have). Chosen by `attn-configure-nvgpu` from
    the H100 measurements behind docs/NVIDIA.md's tensor-core section
    (bench/results/HISTORY-nvidia.md has the numbers).

    Example: `#attn.mma_sync<warps = 4, row_tiles = 2, stages = 3,
    q_from_smem = true, shared_bytes = 81920>`
  }];
  let parameters = (ins "int64_t":$warps, "int64_t":$row_tiles,
                        "int64_t":$stages,
                        DefaultValuedParameter<"bool", "false">:$q_from_smem,
                        "int64_t":$shared_bytes,
                        DefaultValuedParameter<"int64_t", "0">:$max_registers);
  let hasCustomAssemblyFormat = 1;
}

def Attn_SimtAttr : AttrDef<Attn_Dialect, "Simt"> {
  let mnemonic = "simt";
  let summary = "How a SIMT target maps a tile onto a workgroup: a thread or a subgroup per row";
  let description = [{
    The `mapping` of an `#attn.tiling` for `convert-attn-tiles-to-simt`
    (the NVIDIA generic kernel and the Vulkan portable kernels): a
    workgroup of `rows` query rows of `lanes` invocations each. With
    `lanes` = 1 a thread owns a row and all of its columns; with `lanes` =
    N > 1 a subgroup of exactly N invocations owns a row, lane t holding
    columns t, t + N, ... of every tile (its keys of a key block, its
    output columns), row reductions being subgroup reductions and P
    reaching every lane by shuffles. `unroll` unrolls the loops over the
    head dimensions (D, Dv), so that the query row and the accumulator are
    indexed by constants (registers, not scratch), and fuses P . V into
    the loop over the block's keys; without it they are loops, and P . V
    runs with the value column outside the key loop. Chosen by
    `attn-configure-simt`.

    Example: `#attn.simt<rows = 16, lanes = 8, unroll = true>`
  }];
  let parameters = (ins "int64_t":$rows, "int64_t":$lanes,
                        DefaultValuedParameter<"bool", "false">:$unroll);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def Attn_CoopMatrixAttr : AttrDef<Attn_Dialect, "CoopMatrix"> {
  let mnemonic = "coop_matrix";
  let summary = "How the cooperative-matrix target maps a tile onto a workgroup";
  let description = [{
    The `mapping` of an `#attn.tiling` for `convert-attn-tiles-to-simt`
    (the Vulkan coopmat variant): a workgroup of `invocations` invocations,
    whole subgroups. The two products of a key block (Q.K^T and P.V) run
    over workgroup-memory tiles as 16x16x16 cooperative matrices (KHR,
    through gpu.subgroup_mma_*), their output matrices shared out among the
    workgroup's subgroups: Q, K and V staged (whole tiles as matrices, the
    tail tile element by element with rows past it zero), the scores S,
    the probabilities P (in `p_type`) and the accumulator in workgroup
    memory. The online softmax between them runs a row of the tile per
    `lanes` invocations, as the SIMT mapping does: an invocation per row
    (`lanes` = 1), or a subgroup per row (`lanes` = the subgroup size, row
    r on subgroup r, its lane t on columns t, t + lanes, ...; reductions
    over the subgroup); block_q x lanes <= invocations, the others idle.
    With `scalar`, the products are scalar loops over the same tiles (the
    invocations sharing each 16x16 tile's elements): the same kernel for
    devices without cooperative matrices, and its test on them.

    With `registers`, each subgroup owns one 16-row strip of the tile (a
    subgroup of 16 x `lanes` invocations; block_q x lanes = invocations):
    its Q matrices are loaded once before the key loops (Q's tile staged
    into K's) and its accumulator
    matrices are carried through them in cooperative-matrix registers; the
    rescale of the accumulator becomes a per-row factor that the strip's
    rows write into a [block_q, 16] f32 tile and that the subgroup
    multiplies into its accumulator matrices (elementwise) before P.V; the
    accumulator reaches workgroup memory (the scores' tile, as many
    columns at a time as it has) only after the last key loop, for the
    finalize. The row reductions
    are butterflies over the row's `lanes` lanes. Chosen by
    `attn-configure-simt{coop-matrix=N}` (`coop-registers`).

    With `strips` = m > 1 (registers only), each subgroup owns m adjacent
    16-row strips (a subgroup of 16 x `lanes` x m invocations, its rows
    16 m s .. 16 m s + 16 m - 1): it holds Q's and the accumulator's
    matrices of all m, and each K^T or V matrix it loads from workgroup
    memory enters m products (one per strip) instead of one.

    Example: `#attn.coop_matrix<invocations = 1024, lanes = 32>`,
    `#attn.coop_matrix<invocations = 64, lanes = 2, registers = true>`,
    `#attn.coop_matrix<invocations = 64, registers = true, strips = 2>`
  }];
  let parameters = (ins "int64_t":$invocations,
                        DefaultValuedParameter<"int64_t", "1">:$lanes,
                        DefaultValuedParameter<"bool", "false">:$scalar,
                        DefaultValuedParameter<"bool", "false">:$registers,
                        DefaultValuedParameter<"int64_t", "1">:$strips);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

#endif // ATTN_ATTRS_TD
