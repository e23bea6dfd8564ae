/*===- attn.h - the attn runtime: a plain C API ---------------------------===*
 *
 * Compile a kernel spec for a target (cached), launch it on caller memory.
 * No MLIR, CUDA or Vulkan header is needed to use or build against this.
 *
 * Every call returns an attn_status; on failure, attn_last_error() returns a
 * message for the calling thread and nothing was written to any output.
 *===----------------------------------------------------------------------===*/
#ifndef ATTN_RUNTIME_ATTN_H
#define ATTN_RUNTIME_ATTN_H

#include <stddef.h>
#include <stdint.h>

#include "attn/runtime/attn_version.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum attn_status {
  ATTN_OK = 0,
  ATTN_ERROR_INVALID_ARGUMENT = 1, /* bad spec, shape, dtype, stride, pointer */
  ATTN_ERROR_UNSUPPORTED = 2,      /* valid, but this target cannot do it    */
  ATTN_ERROR_COMPILE = 3,          /* the compiler failed (bug: report it)   */
  ATTN_ERROR_BACKEND = 4,          /* driver / execution failure             */
  ATTN_ERROR_UNAVAILABLE = 5,      /* target not present (no GPU, no JIT)    */
  ATTN_ERROR_OUT_OF_MEMORY = 6     /* a host or device allocation failed:
                                      the call had no effect; smaller
                                      shapes (or fewer kv_splits) may fit  */
} attn_status;

typedef enum attn_dtype {
  ATTN_DTYPE_F16 = 1,
  ATTN_DTYPE_BF16 = 2,
  ATTN_DTYPE_F32 = 3,
  ATTN_DTYPE_BOOL = 4 /* masks only: one byte per element, nonzero = attend */
} attn_dtype;

typedef enum attn_mask_kind {
  ATTN_MASK_NONE = 0,
  ATTN_MASK_BOOL = 1,    /* keep-mask: nonzero = attend                 */
  ATTN_MASK_ADDITIVE = 2 /* added to the scaled scores before softmax   */
} attn_mask_kind;

typedef enum attn_target {
  ATTN_TARGET_CPU = 0,
  ATTN_TARGET_CUDA = 1,
  ATTN_TARGET_VULKAN = 2
} attn_target;

typedef enum attn_variant {
  ATTN_VARIANT_DEFAULT = 0, /* the FlashAttention (tiled) path            */
  ATTN_VARIANT_MATH = 1     /* the untiled reference lowering (cpu only)  */
} attn_variant;

#define ATTN_DYNAMIC ((int64_t)-1)

/* What a kernel is compiled for. Call attn_spec_init() first, then set
 * fields. Dimensions set to ATTN_DYNAMIC are taken from the tensors at
 * launch; static ones must match at launch. Head dims are always static.
 *
 * Limits (docs/Runtime.md, "Limits"), checked by attn_compile for the
 * static dimensions and by attn_launch for the rest, with
 * ATTN_ERROR_INVALID_ARGUMENT naming the field:
 *  - every dimension is > 0 (a zero extent is refused, static or dynamic);
 *  - each tensor's bytes (q, k, v, out, mask, lse) and the f32 bytes of
 *    the B*Hq*Sq*Skv scores are at most 2^62;
 *  - block_q and block_kv are at most 2^31 - 1.
 * The vulkan target indexes with 32 bits: there every static dimension,
 * block size and kv_splits is at most 2^31 - 1, and each tensor must fit
 * the device's maxStorageBufferRange (ATTN_ERROR_UNSUPPORTED, at compile
 * time where the shapes are static). */
typedef struct attn_spec {
  attn_dtype dtype;        /* q, k, v, out                               */
  int64_t batch;           /* B, or ATTN_DYNAMIC (default)                */
  int64_t heads_q;         /* Hq, or ATTN_DYNAMIC (default)               */
  int64_t heads_kv;        /* Hkv, or ATTN_DYNAMIC (default)              */
  int64_t seq_q;           /* Sq, or ATTN_DYNAMIC (default)               */
  int64_t seq_kv;          /* Skv, or ATTN_DYNAMIC (default)              */
  int64_t head_dim;        /* D  (required, > 0)                          */
  int64_t value_dim;       /* Dv (0 = same as D)                          */
  int causal;              /* bottom-right aligned, see docs/Semantics.md */
  attn_mask_kind mask;
  attn_dtype mask_dtype;   /* BOOL for ATTN_MASK_BOOL; f16/bf16/f32 for additive */
  double scale;            /* 0 = 1/sqrt(D)                               */
  double dropout_p;        /* in [0, 1)                                   */
  int return_lse;          /* also write lse [B, Hq, Sq] f32              */
  attn_variant variant;
  int64_t block_q;         /* 0 = target default                          */
  int64_t block_kv;        /* 0 = target default                          */
  int64_t kv_splits;       /* 0 = automatic, 1 = off, N = up to N chunks:
                              never more than the launch's key blocks;
                              never fewer than keep each chunk within
                              2^16 keys (accurate f32 sums: KeyChunks.h) */
} attn_spec;

/* A tensor on the target's memory: data pointer, the logical shape and
 * strides in elements for each dimension. The last dimension must be
 * contiguous (stride 1). Rank-4 tensors are [B, H, S, D]; lse is rank 3
 * [B, Hq, Sq] with shape[3] and strides[3] ignored. A mask's B or H
 * dimension may be 1 (broadcast). BHSD and BSHD layouts are both expressed
 * by strides, without copies. */
typedef struct attn_tensor {
  void *data;
  int64_t shape[4];
  int64_t strides[4];
} attn_tensor;

typedef struct attn_launch_args {
  attn_tensor q, k, v;
  attn_tensor mask; /* when spec.mask != NONE                            */
  attn_tensor out;
  attn_tensor lse;  /* when spec.return_lse                              */
  uint64_t seed;    /* dropout seed                                      */
  void *stream;     /* CUstream for cuda; must be NULL for cpu           */
} attn_launch_args;

typedef struct attn_context attn_context;
typedef struct attn_kernel attn_kernel;

/* Fills a spec with defaults: f32, all dims dynamic, no mask, no lse. */
void attn_spec_init(attn_spec *spec);

/* One context holds the kernel cache and the backends' devices. */
attn_status attn_context_create(attn_context **ctx);
void attn_context_destroy(attn_context *ctx);

/* Whether a target can run here (the driver loads, a device exists, the
 * JIT is linked in). Returns ATTN_OK or ATTN_ERROR_UNAVAILABLE + message. */
attn_status attn_target_available(attn_context *ctx, attn_target target);

/* Compiles (or fetches from the cache) the kernel for spec on target. The
 * kernel is owned by the context; it stays valid until the context dies. */
attn_status attn_compile(attn_context *ctx, const attn_spec *spec,
                         attn_target target, attn_kernel **kernel);

/* Runs a kernel. Every tensor is checked against the spec first: shape,
 * strides, broadcast, alignment, null pointers; on error nothing runs. */
attn_status attn_launch(attn_kernel *kernel, const attn_launch_args *args);

/* The spec a kernel was compiled for, and the IR it was compiled from
 * (NULL for AOT-loaded kernels). */
const attn_spec *attn_kernel_spec(const attn_kernel *kernel);
const char *attn_kernel_source(const attn_kernel *kernel);

/* What the target chose for a kernel where its spec left it open. The
 * strings belong to the kernel and stay valid until the next
 * attn_kernel_get_info call on it (or the context's end). */
typedef struct attn_kernel_info {
  const char *variant;  /* the kernel: cpu "tiled" | "math"; cuda
                           "tensor-cores" | "generic"; vulkan "portable" |
                           "tiled" | "coopmat" | "coopmat-scalar"       */
  const char *device;   /* the device's name ("" when not known)        */
  int64_t block_q;      /* query rows per tile (0: not tiled/not known) */
  int64_t block_kv;     /* keys per block (0: not tiled/not known)      */
  int64_t kv_splits;    /* key chunks of the last attn_launch on this
                           kernel (1: no split; 0: no launch yet)       */
} attn_kernel_info;

attn_status attn_kernel_get_info(const attn_kernel *kernel,
                                 attn_kernel_info *info);

/* Number of cache entries (compiles that were not cache hits so far). */
size_t attn_context_cache_size(const attn_context *ctx);

/*===----------------------------------------------------------------------===*
 * The multi-head attention layer (attn.mha, docs/Semantics.md): the Q, K, V
 * projections of x (and, for cross-attention, of kv), attention as attn.sdpa
 * over the heads, and the output projection:
 *
 *   q = x Wq^T + bq,  k = c Wk^T + bk,  v = c Wv^T + bv   (c = kv or x)
 *   y = concat_h(sdpa(q_h, k_{h/g}, v_{h/g})) Wo^T + bo
 *
 * Weights are [out, in] as torch.nn.functional.linear takes them; head h
 * owns rows h*D .. h*D + D - 1 of Wq (Wk, Wv likewise per kv head). Every
 * tensor is dense row-major: x [B, S, E], kv [B, Skv, Ekv], Wq [Hq*D, E],
 * Wk [Hkv*D, Ekv], Wv [Hkv*Dv, Ekv], the fused Wqkv [Hq*D + Hkv*D + Hkv*Dv,
 * E] (torch's in_proj_weight: Wq, Wk, Wv stacked), Wo [E, Hq*Dv], biases
 * [out], y [B, S, E]. All dimensions are static (compiled in).
 *
 * Targets: cpu and cuda (the projections on cuBLASLt, loaded at run time;
 * ATTN_ERROR_UNAVAILABLE without it). vulkan refuses a layer with
 * ATTN_ERROR_UNSUPPORTED (docs/Runtime.md, "Layers").
 *===----------------------------------------------------------------------===*/

typedef struct attn_mha_spec {
  attn_dtype dtype;   /* every tensor (f16, bf16, f32)                   */
  int64_t batch;      /* B  (required, > 0)                              */
  int64_t seq;        /* S  (required, > 0)                              */
  int64_t embed;      /* E  (required, > 0)                              */
  int64_t heads_q;    /* Hq (required, > 0)                              */
  int64_t heads_kv;   /* Hkv (0 = heads_q; must divide heads_q)          */
  int64_t head_dim;   /* D  (0 = embed / heads_q, which must divide)     */
  int64_t value_dim;  /* Dv (0 = head_dim)                               */
  int cross;          /* keys and values from a separate input kv        */
  int64_t seq_kv;     /* Skv (0 = seq; only with cross)                  */
  int64_t kv_embed;   /* Ekv (0 = embed; only with cross)                */
  int fused_qkv;      /* one weight w_qkv instead of w_q, w_k, w_v
                         (self-attention only)                          */
  int bias;           /* biases on every projection (b_q, b_k, b_v or
                         b_qkv, and b_o)                                */
  int causal;         /* as attn_spec.causal, with Sq = S               */
  double scale;       /* 0 = 1/sqrt(D)                                  */
} attn_mha_spec;

/* Pointers to dense tensors of spec.dtype on the target's memory (host for
 * cpu, device for cuda), aligned to their element size. Pointers the spec
 * does not use must be NULL (a set one is refused: it is likely a mistake
 * in the spec). */
typedef struct attn_mha_args {
  const void *x;      /* [B, S, E]                                       */
  const void *kv;     /* [B, Skv, Ekv] (cross)                           */
  const void *w_q, *w_k, *w_v; /* separate projection weights            */
  const void *w_qkv;  /* fused projection weight (fused_qkv)             */
  const void *w_o;    /* [E, Hq*Dv]                                      */
  const void *b_q, *b_k, *b_v, *b_qkv, *b_o; /* biases (bias)            */
  void *y;            /* [B, S, E] output                                */
  void *stream;       /* CUstream for cuda (NULL: the legacy default
                         stream; the launch is asynchronous on it); must
                         be NULL for cpu                                 */
} attn_mha_args;

typedef struct attn_mha_kernel attn_mha_kernel;

/* Fills a layer spec with defaults: f32, every required field 0 (to be
 * set), no cross-attention, separate weights, no biases, not causal. */
void attn_mha_spec_init(attn_mha_spec *spec);

/* Validates the spec (every size overflow-checked against the limits of
 * attn_spec; docs/Runtime.md, "Layers") and compiles, or fetches from the
 * context's cache, the layer for `target`. */
attn_status attn_mha_compile(attn_context *ctx, const attn_mha_spec *spec,
                             attn_target target, attn_mha_kernel **kernel);

/* Runs a layer on caller memory; every pointer is checked first. */
attn_status attn_mha_launch(attn_mha_kernel *kernel,
                            const attn_mha_args *args);

/* The normalized spec a layer was compiled for, and its source IR. */
const attn_mha_spec *attn_mha_kernel_spec(const attn_mha_kernel *kernel);
const char *attn_mha_kernel_source(const attn_mha_kernel *kernel);

/* The message of the last failed call on this thread ("" if none). */
const char *attn_last_error(void);

/* The library's version, "MAJOR.MINOR.PATCH", which may differ from the
 * ATTN_VERSION_STRING of the header a program was compiled with. */
const char *attn_version(void);

const char *attn_status_string(attn_status status);
const char *attn_target_name(attn_target target);
const char *attn_dtype_name(attn_dtype dtype);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ATTN_RUNTIME_ATTN_H */
