/* An external C program against an installed attn (test/Install): compiles
 * a small attention spec for the cpu target through libattn, runs it on
 * fixed inputs and checks the output against a float64 reference computed
 * here. Prints the versions; exits non-zero on any failure or mismatch. */
#include <attn/runtime/attn.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { B = 1, H = 2, SQ = 3, SKV = 5, D = 4 };

static int fail(const char *what, attn_status st) {
  fprintf(stderr, "FAIL: %s: %s: %s\n", what, attn_status_string(st),
          attn_last_error());
  return 1;
}

static attn_tensor tensor(float *data, int64_t s) {
  attn_tensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.shape[0] = B; t.shape[1] = H; t.shape[2] = s; t.shape[3] = D;
  t.strides[0] = H * s * D; t.strides[1] = s * D; t.strides[2] = D;
  t.strides[3] = 1;
  return t;
}

int main(void) {
  static float q[B * H * SQ * D], k[B * H * SKV * D], v[B * H * SKV * D],
      out[B * H * SQ * D];
  attn_context *ctx = NULL;
  attn_kernel *kernel = NULL;
  attn_spec spec;
  attn_launch_args args;
  attn_status st;
  unsigned seed = 12345u;
  double worst = 0;
  int i, b, h, r, c, d;

  printf("attn library %s, header %s (%d)\n", attn_version(),
         ATTN_VERSION_STRING, ATTN_VERSION);
  if (strcmp(attn_version(), ATTN_VERSION_STRING) != 0) {
    fprintf(stderr, "FAIL: library and header versions differ\n");
    return 1;
  }
  for (i = 0; i < B * H * SQ * D; ++i)
    q[i] = (float)((seed = seed * 1103515245u + 12345u) % 2001) / 1000.0f - 1.0f;
  for (i = 0; i < B * H * SKV * D; ++i) {
    k[i] = (float)((seed = seed * 1103515245u + 12345u) % 2001) / 1000.0f - 1.0f;
    v[i] = (float)((seed = seed * 1103515245u + 12345u) % 2001) / 1000.0f - 1.0f;
  }

  attn_spec_init(&spec);
  spec.dtype = ATTN_DTYPE_F32;
  spec.batch = B;
  spec.heads_q = spec.heads_kv = H;
  spec.seq_q = SQ;
  spec.seq_kv = SKV;
  spec.head_dim = D;
  spec.causal = 1;
  if ((st = attn_context_create(&ctx)) != ATTN_OK)
    return fail("attn_context_create", st);
  if ((st = attn_compile(ctx, &spec, ATTN_TARGET_CPU, &kernel)) != ATTN_OK)
    return fail("attn_compile", st);
  memset(&args, 0, sizeof args);
  args.q = tensor(q, SQ);
  args.k = tensor(k, SKV);
  args.v = tensor(v, SKV);
  args.out = tensor(out, SQ);
  if ((st = attn_launch(kernel, &args)) != ATTN_OK)
    return fail("attn_launch", st);

  /* softmax(q k^T / sqrt(D)) v, causal aligned bottom-right: query row r
   * sees keys c <= r + SKV - SQ. */
  for (b = 0; b < B; ++b)
    for (h = 0; h < H; ++h)
      for (r = 0; r < SQ; ++r) {
        const float *qr = q + ((b * H + h) * SQ + r) * D;
        double s[SKV], m = -INFINITY, sum = 0;
        int last = r + SKV - SQ;
        for (c = 0; c <= last; ++c) {
          const float *kc = k + ((b * H + h) * SKV + c) * D;
          s[c] = 0;
          for (d = 0; d < D; ++d)
            s[c] += (double)qr[d] * kc[d];
          s[c] /= sqrt((double)D);
          if (s[c] > m)
            m = s[c];
        }
        for (c = 0; c <= last; ++c)
          sum += (s[c] = exp(s[c] - m));
        for (d = 0; d < D; ++d) {
          double ref = 0, got, err;
          for (c = 0; c <= last; ++c)
            ref += s[c] / sum * v[((b * H + h) * SKV + c) * D + d];
          got = out[((b * H + h) * SQ + r) * D + d];
          err = fabs(got - ref);
          if (err > worst)
            worst = err;
          if (err > 1e-5 + 1e-5 * fabs(ref)) {
            fprintf(stderr, "FAIL: out[%d,%d,%d,%d] = %.9g, reference %.9g\n",
                    b, h, r, d, got, ref);
            return 1;
          }
        }
      }
  attn_context_destroy(ctx);
  printf("C: cpu kernel matches the float64 reference (max error %.3g)\n",
         worst);
  return 0;
}
