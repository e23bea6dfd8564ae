/*===- attn_cuda.h - running ahead-of-time compiled CUDA kernels ----------===*
 *
 * libattn_runtime.so can run kernels that attn-translate compiled earlier
 * (--attn-to-ptx / --attn-to-cubin), without MLIR. Load the artifact's
 * metadata file once; attn_compile(ctx, spec, ATTN_TARGET_CUDA, ...) then
 * returns that kernel for its spec (`spec` receives it).
 *===----------------------------------------------------------------------===*/
#ifndef ATTN_RUNTIME_ATTN_CUDA_H
#define ATTN_RUNTIME_ATTN_CUDA_H

#include "attn/runtime/attn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reads and validates `metadata_path` and the binary it names, and makes
 * the kernel available to attn_compile for the cuda target. The module is
 * loaded on the GPU at attn_compile time. `spec` may be NULL. */
attn_status attn_cuda_load_artifact(const char *metadata_path, attn_spec *spec);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ATTN_RUNTIME_ATTN_CUDA_H */
