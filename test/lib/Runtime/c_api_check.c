/*===- c_api_check.c - proves attn.h is valid C and usable from C ---------===*
 *
 * Compiled as C99 with -pedantic -Werror. Returns 0, or the line of the
 * first failed check.
 *===----------------------------------------------------------------------===*/
#include "attn/runtime/attn.h"

#include <string.h>

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond))                                                               \
      return __LINE__;                                                         \
  } while (0)

int attn_c_api_check(void);

int attn_c_api_check(void) {
  attn_spec spec;
  attn_context *ctx = NULL;
  attn_kernel *kernel = NULL;
  attn_launch_args args;

  attn_spec_init(&spec);
  CHECK(spec.dtype == ATTN_DTYPE_F32);
  CHECK(spec.batch == ATTN_DYNAMIC && spec.seq_kv == ATTN_DYNAMIC);
  CHECK(spec.mask == ATTN_MASK_NONE && spec.variant == ATTN_VARIANT_DEFAULT);

  CHECK(attn_context_create(&ctx) == ATTN_OK);
  CHECK(strcmp(attn_last_error(), "") == 0);

  /* Validation happens before the compiler lookup. */
  CHECK(attn_compile(ctx, &spec, ATTN_TARGET_CPU, &kernel) ==
        ATTN_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(attn_last_error(), "head_dim") != NULL);

  /* No compiler is registered for vulkan in this program. */
  spec.head_dim = 64;
  CHECK(attn_compile(ctx, &spec, ATTN_TARGET_VULKAN, &kernel) ==
        ATTN_ERROR_UNAVAILABLE);
  CHECK(kernel == NULL);
  CHECK(attn_target_available(ctx, ATTN_TARGET_VULKAN) ==
        ATTN_ERROR_UNAVAILABLE);
  CHECK(strstr(attn_last_error(), "vulkan") != NULL);
  CHECK(attn_context_cache_size(ctx) == 0);

  memset(&args, 0, sizeof args);
  CHECK(attn_launch(NULL, &args) == ATTN_ERROR_INVALID_ARGUMENT);

  CHECK(strcmp(attn_status_string(ATTN_ERROR_UNAVAILABLE), "unavailable") == 0);
  CHECK(strcmp(attn_target_name(ATTN_TARGET_CUDA), "cuda") == 0);
  CHECK(strcmp(attn_dtype_name(ATTN_DTYPE_BF16), "bf16") == 0);

  attn_context_destroy(ctx);
  attn_context_destroy(NULL);
  return 0;
}
