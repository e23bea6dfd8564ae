/*===- attn_jit.h - C entry points that need the in-process compiler ------===*
 *
 * Available from libattn.so (the runtime plus the JIT), not from
 * libattn_runtime.so.
 *===----------------------------------------------------------------------===*/
#ifndef ATTN_RUNTIME_ATTN_JIT_H
#define ATTN_RUNTIME_ATTN_JIT_H

#include "attn/runtime/attn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reads MLIR text holding exactly one attn.sdpa and fills `spec` from it:
 * dtype, every dimension (dynamic ones become ATTN_DYNAMIC), causal, scale,
 * mask kind and type, dropout, lse, and the #attn.tiling attribute. The op
 * must verify. On error returns ATTN_ERROR_INVALID_ARGUMENT with the
 * parser's or verifier's diagnostics in attn_last_error(). */
attn_status attn_spec_from_mlir(const char *mlir_text, attn_spec *spec);

#ifdef __cplusplus
}
#endif

#endif
