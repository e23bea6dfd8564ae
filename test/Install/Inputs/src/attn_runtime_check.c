/* An external C program against an installed libattn_runtime.so (no MLIR,
 * no compiler): it loads, reports its version, and says the cpu target
 * needs libattn.so. Exits non-zero otherwise. */
#include <attn/runtime/attn.h>

#include <stdio.h>
#include <string.h>

int main(void) {
  attn_context *ctx = NULL;
  attn_status st;
  printf("attn_runtime library %s, header %s\n", attn_version(),
         ATTN_VERSION_STRING);
  if (strcmp(attn_version(), ATTN_VERSION_STRING) != 0)
    return 1;
  if (attn_context_create(&ctx) != ATTN_OK)
    return 1;
  st = attn_target_available(ctx, ATTN_TARGET_CPU);
  printf("cpu: %s: %s\n", attn_status_string(st), attn_last_error());
  attn_context_destroy(ctx);
  return st == ATTN_ERROR_UNAVAILABLE ? 0 : 1;
}
