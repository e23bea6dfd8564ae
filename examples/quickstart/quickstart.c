/* attn from C: causal attention on the cpu target, [B, H, S, D] f32. */
#include <attn/runtime/attn.h>
#include <stdio.h>

enum { B = 1, H = 4, S = 256, D = 64, N = B * H * S * D };
static float q[N], k[N], v[N], out[N];

static attn_tensor tensor(float *data) {
  attn_tensor t = {data, {B, H, S, D}, {H * S * D, S * D, D, 1}};
  return t;
}

int main(void) {
  for (int i = 0; i < N; ++i)
    q[i] = (i % 7) * 0.25f, k[i] = (i % 5) * 0.25f, v[i] = (float)(i % 3);
  attn_spec spec;
  attn_spec_init(&spec); /* f32; B, H, S dynamic: taken from the tensors */
  spec.head_dim = D;
  spec.causal = 1;
  attn_context *ctx;
  attn_kernel *kernel;
  attn_launch_args args = {0};
  args.q = tensor(q), args.k = tensor(k), args.v = tensor(v);
  args.out = tensor(out);
  if (attn_context_create(&ctx) != ATTN_OK ||
      attn_compile(ctx, &spec, ATTN_TARGET_CPU, &kernel) != ATTN_OK ||
      attn_launch(kernel, &args) != ATTN_OK) {
    fprintf(stderr, "attn: %s\n", attn_last_error());
    return 1;
  }
  /* Causal: query 0 sees key 0 only, so its output row is v's row 0. */
  printf("attn %s: out[0][0][0][:3] = %g %g %g\n", attn_version(), out[0],
         out[1], out[2]);
  attn_context_destroy(ctx);
  return out[0] == v[0] && out[1] == v[1] && out[2] == v[2] ? 0 : 1;
}
