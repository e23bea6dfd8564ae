/*===- vulkan-aot-test.c - vulkan AOT kernels and device buffers, C API only -===*
 *
 * Linked against libattn_runtime.so alone (no MLIR, no JIT, no C++ on the
 * test's side; attn-vulkan-aot-jit-test is the same against libattn.so): loads an attn-translate --attn-to-spirv artifact, runs its
 * kernel on random inputs and checks the output (and lse) against a float64
 * reference computed here. Modes (argv[1]):
 *
 *   load META            load only; print the spec or the error
 *   host META            one launch on host memory
 *   device META N        the host launch, then N launches on device buffers
 *                        (inputs uploaded once) and N asynchronous ones,
 *                        each equal to the host launch's output bit for bit;
 *                        then launches alternating between those buffers
 *                        and a second problem's (the runtime reuses a
 *                        launch's Vulkan objects: each must bind its own
 *                        buffers), and a launch on host memory whose
 *                        context is destroyed before its event is waited on
 *   errors META          device-buffer and event misuse: each refused with
 *                        ATTN_ERROR_INVALID_ARGUMENT and a message
 *   bench META N MS R    the GPU machine's timing of an artifact (no MLIR
 *                        there): inputs uploaded once to device buffers,
 *                        one launch into a poisoned output checked on R
 *                        rows (the first, the last, R - 2 at random)
 *                        against float64, then N launches each waited on
 *                        (device_ms from GPU timestamps, median_ms end to
 *                        end), MS milliseconds of untimed launches back to
 *                        back (the GPU's clocks up; min(N, 32) in flight),
 *                        and N launches back
 *                        to back (device_b2b_ms, b2b_ms, and submit_ms:
 *                        the host's time per launch_async call among
 *                        them); one JSON line with attn-run --bench
 *                        --json's keys for these
 *
 * Static shapes only (the spec's); no mask or dropout. f32, f16 or bf16
 * (bf16: bench only).
 *===----------------------------------------------------------------------===*/
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "attn/runtime/attn.h"
#include "attn/runtime/attn_vulkan.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int failures = 0;

#define CHECK_OK(call)                                                         \
  do {                                                                         \
    attn_status s_ = (call);                                                   \
    if (s_ != ATTN_OK) {                                                       \
      fprintf(stderr, "FAIL %s:%d: %s: %s: %s\n", __FILE__, __LINE__, #call,   \
              attn_status_string(s_), attn_last_error());                      \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

/* A call that must be refused with `want`; prints the message. */
static void expect(attn_status got, attn_status want, const char *what) {
  if (got != want) {
    fprintf(stderr, "FAIL %s: got %s, expected %s (%s)\n", what,
            attn_status_string(got), attn_status_string(want),
            attn_last_error());
    ++failures;
    return;
  }
  printf("refused %s: %s\n", what, attn_last_error());
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static double uniform(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static uint16_t toHalf(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  int32_t e = (int32_t)((x >> 23) & 0xff) - 127 + 15;
  uint32_t m = x & 0x7fffffu;
  if (e <= 0)
    return (uint16_t)sign; /* the inputs here are never that small */
  if (e >= 31)
    return (uint16_t)(sign | 0x7c00u);
  uint32_t h = sign | ((uint32_t)e << 10) | (m >> 13);
  if ((m & 0x1fffu) > 0x1000u || ((m & 0x1fffu) == 0x1000u && (h & 1u)))
    ++h; /* round to nearest even */
  return (uint16_t)h;
}
static double fromHalf(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0 ? ldexp(m, -24) : ldexp(m + 1024, e - 25);
  return (h & 0x8000u) ? -v : v;
}

static uint16_t toBf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  x += 0x7fffu + ((x >> 16) & 1u); /* round to nearest even (finite) */
  return (uint16_t)(x >> 16);
}
static double fromBf16(uint16_t h) {
  uint32_t x = (uint32_t)h << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

typedef struct {
  attn_spec spec;
  int64_t b, hq, hkv, sq, skv, d, dv;
  size_t es;
  void *q, *k, *v, *out, *lse;
  size_t qBytes, kBytes, vBytes, outBytes, lseBytes;
} Problem;

/* Every 16-bit value of the problem's dtype as a double: the check reads
 * each K and V element once per row checked (a decode's 268M of them
 * times the rows), where a conversion per read took most of a run. */
static double *widened;

static double elem(const Problem *p, const void *base, size_t i) {
  if (p->es == 4)
    return ((const float *)base)[i];
  return widened[((const uint16_t *)base)[i]];
}

/* Random inputs in [-1, 1), in chunks of FILL_CHUNK elements, each from
 * its own xorshift seeded by (the fill's seed, the chunk's index), so the
 * values do not depend on how many threads fill them: one thread took
 * about 10 s of the GPU machine's time per kernel at 128k keys. */
#define FILL_CHUNK ((size_t)1 << 20)
typedef struct {
  const Problem *p;
  void *base;
  size_t n;
  uint64_t seed;
  size_t first, step; /* chunks first, first + step, ... */
} FillJob;

static uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

static void *fillChunks(void *arg) {
  const FillJob *j = (const FillJob *)arg;
  const int bf16 = j->p->spec.dtype == ATTN_DTYPE_BF16;
  for (size_t c = j->first; c * FILL_CHUNK < j->n; c += j->step) {
    uint64_t x = splitmix64(j->seed ^ splitmix64(c)) | 1u;
    size_t end = (c + 1) * FILL_CHUNK < j->n ? (c + 1) * FILL_CHUNK : j->n;
    for (size_t i = c * FILL_CHUNK; i < end; ++i) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      float f = (float)((double)(x >> 11) / 9007199254740992.0 * 2.0 - 1.0);
      if (j->p->es == 2)
        ((uint16_t *)j->base)[i] = bf16 ? toBf16(f) : toHalf(f);
      else
        ((float *)j->base)[i] = f;
    }
  }
  return NULL;
}

static void fill(const Problem *p, void *base, size_t n) {
  enum { MAX_THREADS = 64 };
  uniform();
  const uint64_t seed = rng;
  const size_t chunks = (n + FILL_CHUNK - 1) / FILL_CHUNK;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  size_t threads = cpus < 1 ? 1 : (size_t)cpus;
  if (threads > MAX_THREADS)
    threads = MAX_THREADS;
  if (threads > chunks)
    threads = chunks ? chunks : 1;
  FillJob jobs[MAX_THREADS];
  pthread_t ids[MAX_THREADS];
  int started[MAX_THREADS];
  for (size_t t = 0; t < threads; ++t) {
    FillJob j = {p, base, n, seed, t, threads};
    jobs[t] = j;
    /* (thread 0 is this one; a thread that cannot start runs here) */
    started[t] = t > 0 && pthread_create(&ids[t], NULL, fillChunks,
                                         &jobs[t]) == 0;
  }
  fillChunks(&jobs[0]);
  for (size_t t = 1; t < threads; ++t) {
    if (started[t])
      pthread_join(ids[t], NULL);
    else
      fillChunks(&jobs[t]);
  }
}

static void setup(Problem *p, const attn_spec *spec, int bf16) {
  memset(p, 0, sizeof(*p));
  p->spec = *spec;
  if (spec->batch < 1 || spec->heads_q < 1 || spec->heads_kv < 1 ||
      spec->seq_q < 1 || spec->seq_kv < 1 || spec->mask != ATTN_MASK_NONE ||
      spec->dropout_p != 0.0 ||
      (spec->dtype != ATTN_DTYPE_F32 && spec->dtype != ATTN_DTYPE_F16 &&
       !(bf16 && spec->dtype == ATTN_DTYPE_BF16))) {
    fprintf(stderr, "FAIL: this test takes static f32/f16%s specs without "
                    "mask or dropout\n", bf16 ? "/bf16" : "");
    exit(1);
  }
  p->b = spec->batch;
  p->hq = spec->heads_q;
  p->hkv = spec->heads_kv;
  p->sq = spec->seq_q;
  p->skv = spec->seq_kv;
  p->d = spec->head_dim;
  p->dv = spec->value_dim ? spec->value_dim : spec->head_dim;
  p->es = spec->dtype == ATTN_DTYPE_F32 ? 4 : 2;
  p->qBytes = (size_t)(p->b * p->hq * p->sq * p->d) * p->es;
  p->kBytes = (size_t)(p->b * p->hkv * p->skv * p->d) * p->es;
  p->vBytes = (size_t)(p->b * p->hkv * p->skv * p->dv) * p->es;
  p->outBytes = (size_t)(p->b * p->hq * p->sq * p->dv) * p->es;
  p->lseBytes = spec->return_lse ? (size_t)(p->b * p->hq * p->sq) * 4 : 0;
  p->q = malloc(p->qBytes);
  p->k = malloc(p->kBytes);
  p->v = malloc(p->vBytes);
  p->out = malloc(p->outBytes);
  p->lse = p->lseBytes ? malloc(p->lseBytes) : NULL;
  if (!p->q || !p->k || !p->v || !p->out || (p->lseBytes && !p->lse)) {
    fprintf(stderr, "FAIL: out of host memory for the inputs\n");
    exit(1);
  }
  fill(p, p->q, p->qBytes / p->es);
  fill(p, p->k, p->kBytes / p->es);
  fill(p, p->v, p->vBytes / p->es);
  if (p->es == 2) {
    if (!widened && !(widened = malloc(sizeof(double) * 65536))) {
      fprintf(stderr, "FAIL: out of host memory for the check's table\n");
      exit(1);
    }
    for (uint32_t h = 0; h < 65536; ++h)
      widened[h] = spec->dtype == ATTN_DTYPE_BF16 ? fromBf16((uint16_t)h)
                                                  : fromHalf((uint16_t)h);
  }
}

static attn_tensor dense(void *data, int64_t a, int64_t b, int64_t c,
                         int64_t d) {
  attn_tensor t;
  t.data = data;
  t.shape[0] = a;
  t.shape[1] = b;
  t.shape[2] = c;
  t.shape[3] = d;
  t.strides[3] = 1;
  t.strides[2] = d;
  t.strides[1] = c * d;
  t.strides[0] = b * c * d;
  return t;
}

/* Launch arguments over the given base pointers (host or device). */
static attn_launch_args argsOf(const Problem *p, void *q, void *k, void *v,
                               void *out, void *lse) {
  attn_launch_args a;
  memset(&a, 0, sizeof(a));
  a.q = dense(q, p->b, p->hq, p->sq, p->d);
  a.k = dense(k, p->b, p->hkv, p->skv, p->d);
  a.v = dense(v, p->b, p->hkv, p->skv, p->dv);
  a.out = dense(out, p->b, p->hq, p->sq, p->dv);
  if (p->spec.return_lse) {
    a.lse = dense(lse, p->b, p->hq, p->sq, 1);
    a.lse.strides[2] = 1;
    a.lse.strides[1] = p->sq;
    a.lse.strides[0] = p->hq * p->sq;
  }
  return a;
}

/* The float64 reference for row i of head h of batch b; returns the worst
 * error over tolerance there (> 1 fails). `s` has room for Skv scores. */
static double compareRow(const Problem *p, const void *out, const float *lse,
                         int64_t b, int64_t h, int64_t i, double *s) {
  const double scale =
      p->spec.scale != 0.0 ? p->spec.scale : 1.0 / sqrt((double)p->d);
  /* Per dtype, absolute and relative alike: f32 2e-4, f16 2e-2, bf16
   * 4e-2 (8 bits of mantissa: P and the output each rounded to 2^-9). */
  const double tol = p->es == 4 ? 2e-4
                     : p->spec.dtype == ATTN_DTYPE_BF16 ? 4e-2 : 2e-2;
  const double atol = tol, rtol = tol;
  double worst = 0.0;
  int64_t hk = h / (p->hq / p->hkv);
  double mx = -INFINITY;
  for (int64_t j = 0; j < p->skv; ++j) {
    /* causal: bottom-right aligned */
    if (p->spec.causal && j > i + (p->skv - p->sq)) {
      s[j] = -INFINITY;
      continue;
    }
    double acc = 0.0;
    for (int64_t e = 0; e < p->d; ++e)
      acc += elem(p, p->q, (size_t)(((b * p->hq + h) * p->sq + i) * p->d + e)) *
             elem(p, p->k, (size_t)(((b * p->hkv + hk) * p->skv + j) * p->d + e));
    s[j] = acc * scale;
    if (s[j] > mx)
      mx = s[j];
  }
  double sum = 0.0;
  for (int64_t j = 0; j < p->skv; ++j)
    sum += s[j] == -INFINITY ? 0.0 : exp(s[j] - mx);
  for (int64_t e = 0; e < p->dv; ++e) {
    double acc = 0.0;
    for (int64_t j = 0; j < p->skv; ++j)
      if (s[j] != -INFINITY)
        acc += exp(s[j] - mx) / sum *
               elem(p, p->v, (size_t)(((b * p->hkv + hk) * p->skv + j) * p->dv + e));
    double got = elem(p, out, (size_t)(((b * p->hq + h) * p->sq + i) * p->dv + e));
    double err = fabs(got - acc) / (atol + rtol * fabs(acc));
    if (!(err <= worst))
      worst = isnan(err) ? INFINITY : err;
  }
  if (lse) {
    double want = mx + log(sum);
    double got = lse[(b * p->hq + h) * p->sq + i];
    double err = fabs(got - want) / (1e-3 + 1e-3 * fabs(want));
    if (!(err <= worst))
      worst = isnan(err) ? INFINITY : err;
  }
  return worst;
}

/* Every row against the float64 reference; the worst error over tolerance. */
static double compare(const Problem *p, const void *out, const float *lse) {
  double worst = 0.0;
  double *s = malloc(sizeof(double) * (size_t)p->skv);
  for (int64_t b = 0; b < p->b; ++b)
    for (int64_t h = 0; h < p->hq; ++h)
      for (int64_t i = 0; i < p->sq; ++i) {
        double err = compareRow(p, out, lse, b, h, i, s);
        if (!(err <= worst))
          worst = err;
      }
  free(s);
  return worst;
}

static void report(const char *what, double worst) {
  printf("%s: worst error / tolerance %.3f: %s\n", what, worst,
         worst <= 1.0 ? "ok" : "FAIL");
  if (!(worst <= 1.0))
    ++failures;
}

typedef struct {
  attn_vulkan_buffer *q, *k, *v, *out, *lse;
} DeviceProblem;

static void upload(attn_context *ctx, const Problem *p, DeviceProblem *d) {
  CHECK_OK(attn_vulkan_buffer_create(ctx, p->qBytes, &d->q));
  CHECK_OK(attn_vulkan_buffer_create(ctx, p->kBytes, &d->k));
  CHECK_OK(attn_vulkan_buffer_create(ctx, p->vBytes, &d->v));
  CHECK_OK(attn_vulkan_buffer_create(ctx, p->outBytes, &d->out));
  d->lse = NULL;
  if (p->lseBytes)
    CHECK_OK(attn_vulkan_buffer_create(ctx, p->lseBytes, &d->lse));
  CHECK_OK(attn_vulkan_buffer_upload(d->q, 0, p->q, p->qBytes));
  CHECK_OK(attn_vulkan_buffer_upload(d->k, 0, p->k, p->kBytes));
  CHECK_OK(attn_vulkan_buffer_upload(d->v, 0, p->v, p->vBytes));
}

static attn_launch_args deviceArgs(const Problem *p, DeviceProblem *d) {
  return argsOf(p, attn_vulkan_buffer_pointer(d->q),
                attn_vulkan_buffer_pointer(d->k),
                attn_vulkan_buffer_pointer(d->v),
                attn_vulkan_buffer_pointer(d->out),
                d->lse ? attn_vulkan_buffer_pointer(d->lse) : NULL);
}

static void release(DeviceProblem *d) {
  CHECK_OK(attn_vulkan_buffer_destroy(d->q));
  CHECK_OK(attn_vulkan_buffer_destroy(d->k));
  CHECK_OK(attn_vulkan_buffer_destroy(d->v));
  CHECK_OK(attn_vulkan_buffer_destroy(d->out));
  CHECK_OK(attn_vulkan_buffer_destroy(d->lse));
}

/* One launch on host memory into p's poisoned out (and lse), checked
 * against float64 and reported as `what`: the output the device launches
 * are compared with. */
static void hostLaunch(attn_kernel *kernel, Problem *p, const char *what) {
  memset(p->out, 0xff, p->outBytes);
  if (p->lse)
    memset(p->lse, 0xff, p->lseBytes);
  attn_launch_args host = argsOf(p, p->q, p->k, p->v, p->out, p->lse);
  CHECK_OK(attn_launch(kernel, &host));
  report(what, compare(p, p->out, p->lse));
}

/* Downloads the device output and compares it with the host launch's. */
static void sameAsHost(const Problem *p, DeviceProblem *d, const char *what) {
  void *out = malloc(p->outBytes);
  memset(out, 0xff, p->outBytes); /* poisoned */
  CHECK_OK(attn_vulkan_buffer_download(d->out, 0, out, p->outBytes));
  int same = memcmp(out, p->out, p->outBytes) == 0;
  if (p->lseBytes) {
    void *lse = malloc(p->lseBytes);
    memset(lse, 0xff, p->lseBytes);
    CHECK_OK(attn_vulkan_buffer_download(d->lse, 0, lse, p->lseBytes));
    same = same && memcmp(lse, p->lse, p->lseBytes) == 0;
    free(lse);
  }
  printf("%s: %s the host-memory launch\n", what,
         same ? "equal to" : "FAIL: differs from");
  if (!same)
    ++failures;
  free(out);
}

static double nowMs(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int byValue(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The median of n values (sorted in place). */
static double median(double *v, long n) {
  qsort(v, (size_t)n, sizeof(double), byValue);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* A launch on device buffers, waited on: its GPU time (NAN where the
 * device has no timestamps) and, in *e2e, the submit to the wait's
 * return. */
static double timedLaunch(attn_kernel *kernel, const attn_launch_args *a,
                          double *e2e) {
  attn_vulkan_event *event = NULL;
  double start = nowMs();
  CHECK_OK(attn_vulkan_launch_async(kernel, a, &event));
  CHECK_OK(attn_vulkan_event_wait(event));
  *e2e = nowMs() - start;
  double ms = NAN;
  if (attn_vulkan_event_kernel_ms(event, &ms) != ATTN_OK)
    ms = NAN;
  attn_vulkan_event_destroy(event);
  return ms;
}

static long parsed(const char *text, long lo, long hi, const char *what) {
  char *end = NULL;
  long v = strtol(text, &end, 10);
  if (!*text || *end || v < lo || v > hi) {
    fprintf(stderr, "bench: %s '%s' is not an integer in [%ld, %ld]\n", what,
            text, lo, hi);
    exit(2);
  }
  return v;
}

/* bench META N WARMUP_MS ROWS (see the header). */
static int bench(attn_context *ctx, attn_kernel *kernel, const attn_spec *spec,
                 const char *meta, int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: bench META N WARMUP_MS ROWS\n");
    return 2;
  }
  const long n = parsed(argv[0], 1, 100000, "N");
  const long warmupMs = parsed(argv[1], 0, 600000, "WARMUP_MS");
  const long rows = parsed(argv[2], 0, 4096, "ROWS");
  Problem p;
  setup(&p, spec, 1);
  DeviceProblem d;
  upload(ctx, &p, &d);
  attn_launch_args dev = deviceArgs(&p, &d);

  /* One launch into a poisoned output, checked on sampled rows. */
  memset(p.out, 0xff, p.outBytes);
  CHECK_OK(attn_vulkan_buffer_upload(d.out, 0, p.out, p.outBytes));
  if (d.lse) {
    memset(p.lse, 0xff, p.lseBytes);
    CHECK_OK(attn_vulkan_buffer_upload(d.lse, 0, p.lse, p.lseBytes));
  }
  CHECK_OK(attn_launch(kernel, &dev));
  CHECK_OK(attn_vulkan_buffer_download(d.out, 0, p.out, p.outBytes));
  if (d.lse)
    CHECK_OK(attn_vulkan_buffer_download(d.lse, 0, p.lse, p.lseBytes));
  const int64_t total = p.b * p.hq * p.sq;
  double worst = 0.0, *scratch = malloc(sizeof(double) * (size_t)p.skv);
  long checked = 0;
  for (long r = 0; r < rows && r < total; ++r, ++checked) {
    int64_t flat = r == 0   ? 0
                   : r == 1 ? total - 1
                            : (int64_t)((uniform() * 0.5 + 0.5) * (double)total);
    if (flat >= total)
      flat = total - 1;
    double err = compareRow(&p, p.out, p.lse, flat / (p.hq * p.sq),
                            flat / p.sq % p.hq, flat % p.sq, scratch);
    if (!(err <= worst))
      worst = isnan(err) ? INFINITY : err;
  }
  free(scratch);
  if (!(worst <= 1.0))
    ++failures;

  /* N launches, each waited on. */
  double *gpu = malloc(sizeof(double) * (size_t)n),
         *e2e = malloc(sizeof(double) * (size_t)n);
  int timestamps = 1;
  for (long i = 0; i < n; ++i) {
    gpu[i] = timedLaunch(kernel, &dev, &e2e[i]);
    timestamps &= !isnan(gpu[i]);
  }
  /* The GPU's clocks up: WARMUP_MS of launches back to back, untimed, at
   * most min(N, 32) in flight (so that the runtime's per-launch Vulkan
   * objects for the N in flight below exist: it keeps up to 32 a kernel
   * for reuse, and creating one costs more host time than a decode
   * step's kernel), and at least that many launches. */
  enum { kRing = 32 };
  attn_vulkan_event *ring[kRing] = {NULL};
  const long depth = n < kRing ? n : kRing;
  double warmStart = nowMs();
  for (long i = 0; i < depth || nowMs() - warmStart < (double)warmupMs; ++i) {
    if (ring[i % depth]) {
      CHECK_OK(attn_vulkan_event_wait(ring[i % depth]));
      attn_vulkan_event_destroy(ring[i % depth]);
    }
    CHECK_OK(attn_vulkan_launch_async(kernel, &dev, &ring[i % depth]));
  }
  for (long i = 0; i < depth; ++i)
    if (ring[i]) {
      CHECK_OK(attn_vulkan_event_wait(ring[i]));
      attn_vulkan_event_destroy(ring[i]);
    }
  /* N launches back to back: all submitted, then waited on. */
  attn_vulkan_event **events = calloc((size_t)n, sizeof(*events));
  double *b2b = malloc(sizeof(double) * (size_t)n);
  double start = nowMs();
  for (long i = 0; i < n; ++i)
    CHECK_OK(attn_vulkan_launch_async(kernel, &dev, &events[i]));
  /* The host's time per launch_async call (recording and submitting). */
  const double submitMs = (nowMs() - start) / (double)n;
  for (long i = 0; i < n; ++i) {
    CHECK_OK(attn_vulkan_event_wait(events[i]));
    if (attn_vulkan_event_kernel_ms(events[i], &b2b[i]) != ATTN_OK)
      b2b[i] = NAN;
  }
  double wall = nowMs() - start;
  for (long i = 0; i < n; ++i)
    attn_vulkan_event_destroy(events[i]);
  free(events);

  attn_kernel_info after; /* kv_splits: the last launch's */
  CHECK_OK(attn_kernel_get_info(kernel, &after));
  double deviceMin = NAN;
  if (timestamps) {
    deviceMin = gpu[0];
    for (long i = 1; i < n; ++i)
      deviceMin = gpu[i] < deviceMin ? gpu[i] : deviceMin;
  }
  const double deviceMs = timestamps ? median(gpu, n) : NAN;
  const double deviceB2b = timestamps ? median(b2b, n) : NAN;
  const double e2eMs = median(e2e, n);
  /* JSON numbers: null where not measured. */
  char num[7][32];
  const double vals[7] = {deviceMs, deviceMin, e2eMs, deviceB2b, wall / n,
                          worst, submitMs};
  for (int i = 0; i < 7; ++i) {
    if (isfinite(vals[i]))
      snprintf(num[i], sizeof(num[i]), "%.6g", vals[i]);
    else
      snprintf(num[i], sizeof(num[i]), "null");
  }
  printf("{\"artifact\": \"%s\", \"variant\": \"%s\", \"block_q\": %lld, "
         "\"block_kv\": %lld, \"kv_splits\": %lld, \"dtype\": \"%s\", "
         "\"batch\": %lld, \"heads_q\": %lld, \"heads_kv\": %lld, "
         "\"seq_q\": %lld, \"seq_kv\": %lld, \"head_dim\": %lld, "
         "\"value_dim\": %lld, \"causal\": %s, \"memory\": \"device\", "
         "\"runs\": %ld, \"rows_checked\": %ld, \"check_worst\": %s, "
         "\"ok\": %s, \"device_ms\": %s, \"device_min_ms\": %s, "
         "\"median_ms\": %s, \"device_b2b_ms\": %s, \"b2b_ms\": %s, "
         "\"submit_ms\": %s, \"warmup_ms\": %ld}\n",
         meta, after.variant, (long long)after.block_q,
         (long long)after.block_kv, (long long)after.kv_splits,
         attn_dtype_name(spec->dtype), (long long)p.b, (long long)p.hq,
         (long long)p.hkv, (long long)p.sq, (long long)p.skv,
         (long long)p.d, (long long)p.dv, spec->causal ? "true" : "false", n,
         checked, num[5], worst <= 1.0 ? "true" : "false", num[0], num[1],
         num[2], num[3], num[4], num[6], warmupMs);
  free(gpu);
  free(e2e);
  free(b2b);
  release(&d);
  return failures ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s load|host|device|errors META [N] | bench META "
                    "N WARMUP_MS ROWS\n", argv[0]);
    return 2;
  }
  const char *mode = argv[1], *meta = argv[2];
  attn_spec spec;
  attn_status s = attn_vulkan_load_artifact(meta, &spec);
  if (strcmp(mode, "load") == 0) {
    if (s != ATTN_OK) {
      printf("load: %s: %s\n", attn_status_string(s), attn_last_error());
      return 1;
    }
    printf("load: ok: %s B %lld Hq %lld Hkv %lld Sq %lld Skv %lld D %lld "
           "causal %d lse %d kv_splits %lld\n",
           attn_dtype_name(spec.dtype), (long long)spec.batch,
           (long long)spec.heads_q, (long long)spec.heads_kv,
           (long long)spec.seq_q, (long long)spec.seq_kv,
           (long long)spec.head_dim, spec.causal, spec.return_lse,
           (long long)spec.kv_splits);
    return 0;
  }
  CHECK_OK(s);
  attn_context *ctx = NULL;
  CHECK_OK(attn_context_create(&ctx));
  attn_kernel *kernel = NULL;
  CHECK_OK(attn_compile(ctx, &spec, ATTN_TARGET_VULKAN, &kernel));
  attn_kernel_info info;
  CHECK_OK(attn_kernel_get_info(kernel, &info));
  /* libattn_runtime.so: no source; libattn.so: the JIT took the loaded
   * artifact and says so in the source's first line. */
  const char *source = attn_kernel_source(kernel);
  int firstLine = source ? (int)strcspn(source, "\n") : 0;
  printf("kernel: variant %s, source %.*s\n", info.variant,
         source ? firstLine : 10, source ? source : "none (AOT)");

  if (strcmp(mode, "bench") == 0) {
    int rc = bench(ctx, kernel, &spec, meta, argc - 3, argv + 3);
    attn_context_destroy(ctx);
    return rc;
  }

  Problem p;
  setup(&p, &spec, 0);
  hostLaunch(kernel, &p, "host");

  if (strcmp(mode, "device") == 0) {
    long n = argc > 3 ? strtol(argv[3], NULL, 10) : 3;
    if (n < 1 || n > 1000)
      n = 3;
    DeviceProblem d;
    upload(ctx, &p, &d);
    attn_launch_args dev = deviceArgs(&p, &d);
    for (long i = 0; i < n; ++i)
      CHECK_OK(attn_launch(kernel, &dev));
    sameAsHost(&p, &d, "device, repeated launches");
    /* Asynchronous: N in flight, then the waits; each reports its time. */
    attn_vulkan_event **events = calloc((size_t)n, sizeof(*events));
    for (long i = 0; i < n; ++i)
      CHECK_OK(attn_vulkan_launch_async(kernel, &dev, &events[i]));
    for (long i = 0; i < n; ++i) {
      CHECK_OK(attn_vulkan_event_wait(events[i]));
      int complete = 0;
      CHECK_OK(attn_vulkan_event_query(events[i], &complete));
      if (!complete) {
        printf("FAIL: an event waited on is not complete\n");
        ++failures;
      }
      double ms = -1.0;
      attn_status t = attn_vulkan_event_kernel_ms(events[i], &ms);
      if (t != ATTN_OK && t != ATTN_ERROR_UNSUPPORTED) {
        printf("FAIL: kernel_ms: %s\n", attn_last_error());
        ++failures;
      } else if (t == ATTN_OK && !(ms >= 0.0)) {
        printf("FAIL: kernel_ms %f\n", ms);
        ++failures;
      }
      attn_vulkan_event_destroy(events[i]);
    }
    free(events);
    sameAsHost(&p, &d, "device, asynchronous launches");
    /* A download right after an asynchronous launch, without its wait,
     * sees the launch's output (queue order). */
    void *zeros = calloc(1, p.outBytes);
    CHECK_OK(attn_vulkan_buffer_upload(d.out, 0, zeros, p.outBytes));
    attn_vulkan_event *last = NULL;
    CHECK_OK(attn_vulkan_launch_async(kernel, &dev, &last));
    sameAsHost(&p, &d, "device, download before the wait");
    attn_vulkan_event_destroy(last);

    /* A second problem (fresh inputs) on buffers of its own; launches
     * alternate between the two, each into a poisoned output, one at a
     * time (each reuses the Vulkan objects the one before it gave back)
     * and then 2N in flight: each output is its own problem's. */
    Problem p2;
    setup(&p2, &spec, 0);
    hostLaunch(kernel, &p2, "host, a second problem");
    DeviceProblem d2;
    upload(ctx, &p2, &d2);
    attn_launch_args dev2 = deviceArgs(&p2, &d2);
    void *poison = malloc(p.outBytes > p.lseBytes ? p.outBytes : p.lseBytes);
    memset(poison, 0xff, p.outBytes > p.lseBytes ? p.outBytes : p.lseBytes);
    for (int round = 0; round < 2; ++round) {
      for (int which = 0; which < 2; ++which) {
        DeviceProblem *dd = which ? &d2 : &d;
        CHECK_OK(attn_vulkan_buffer_upload(dd->out, 0, poison, p.outBytes));
        if (dd->lse)
          CHECK_OK(attn_vulkan_buffer_upload(dd->lse, 0, poison, p.lseBytes));
      }
      if (round == 0) {
        for (long i = 0; i < 2; ++i) {
          CHECK_OK(attn_launch(kernel, &dev));
          CHECK_OK(attn_launch(kernel, &dev2));
        }
      } else {
        attn_vulkan_event **ev = calloc((size_t)(2 * n), sizeof(*ev));
        for (long i = 0; i < 2 * n; ++i)
          CHECK_OK(attn_vulkan_launch_async(kernel, i % 2 ? &dev2 : &dev,
                                            &ev[i]));
        for (long i = 0; i < 2 * n; ++i) {
          CHECK_OK(attn_vulkan_event_wait(ev[i]));
          attn_vulkan_event_destroy(ev[i]);
        }
        free(ev);
      }
      sameAsHost(&p, &d, round ? "device, alternating buffers in flight"
                               : "device, alternating buffers one at a time");
      sameAsHost(&p2, &d2, round ? "device, alternating buffers in flight "
                                   "(the second problem)"
                                 : "device, alternating buffers one at a time "
                                   "(the second problem)");
    }
    free(poison);

    /* A context (and with it its kernel) destroyed while a launch on host
     * memory is in flight: the launch still completes, and its event
     * waits and writes the output as usual. */
    attn_context *doomed = NULL;
    CHECK_OK(attn_context_create(&doomed));
    attn_kernel *orphanKernel = NULL;
    CHECK_OK(attn_compile(doomed, &spec, ATTN_TARGET_VULKAN, &orphanKernel));
    void *orphanOut = malloc(p.outBytes);
    float *orphanLse = p.lseBytes ? malloc(p.lseBytes) : NULL;
    memset(orphanOut, 0xff, p.outBytes);
    if (orphanLse)
      memset(orphanLse, 0xff, p.lseBytes);
    attn_launch_args orphanArgs =
        argsOf(&p, p.q, p.k, p.v, orphanOut, orphanLse);
    attn_vulkan_event *orphan = NULL;
    CHECK_OK(attn_vulkan_launch_async(orphanKernel, &orphanArgs, &orphan));
    attn_context_destroy(doomed);
    CHECK_OK(attn_vulkan_event_wait(orphan));
    attn_vulkan_event_destroy(orphan);
    int same = memcmp(orphanOut, p.out, p.outBytes) == 0 &&
               (!orphanLse || memcmp(orphanLse, p.lse, p.lseBytes) == 0);
    printf("host, context destroyed before the wait: %s the first launch\n",
           same ? "equal to" : "FAIL: differs from");
    if (!same)
      ++failures;
    free(orphanOut);
    free(orphanLse);
    free(zeros);
    release(&d2);
    release(&d);
  } else if (strcmp(mode, "errors") == 0) {
    DeviceProblem d;
    upload(ctx, &p, &d);
    attn_launch_args dev = deviceArgs(&p, &d);
    attn_launch_args bad;

    /* A buffer too small for its tensor. */
    attn_vulkan_buffer *small = NULL;
    CHECK_OK(attn_vulkan_buffer_create(ctx, p.outBytes / 2, &small));
    bad = dev;
    bad.out.data = attn_vulkan_buffer_pointer(small);
    expect(attn_launch(kernel, &bad), ATTN_ERROR_INVALID_ARGUMENT,
           "out in a buffer half its size");
    /* ... or the tensor at an offset that runs past the end. */
    uint64_t align = 0;
    CHECK_OK(attn_vulkan_buffer_alignment(&align));
    bad = dev;
    bad.out.data = (char *)attn_vulkan_buffer_pointer(d.out) + align;
    expect(attn_launch(kernel, &bad), ATTN_ERROR_INVALID_ARGUMENT,
           "out at an offset past which it does not fit");
    /* Host and device memory mixed. */
    bad = dev;
    bad.q.data = p.q;
    expect(attn_launch(kernel, &bad), ATTN_ERROR_INVALID_ARGUMENT,
           "q in host memory, the rest in device buffers");
    /* A buffer of another context. */
    attn_context *other = NULL;
    CHECK_OK(attn_context_create(&other));
    attn_vulkan_buffer *foreign = NULL;
    CHECK_OK(attn_vulkan_buffer_create(other, p.qBytes, &foreign));
    bad = dev;
    bad.q.data = attn_vulkan_buffer_pointer(foreign);
    expect(attn_launch(kernel, &bad), ATTN_ERROR_INVALID_ARGUMENT,
           "q in a buffer of another context");
    /* Use after destroy: the launch, the copies, the handle's queries. */
    attn_vulkan_buffer *gone = NULL;
    CHECK_OK(attn_vulkan_buffer_create(ctx, p.qBytes, &gone));
    void *goneAddress = attn_vulkan_buffer_pointer(gone);
    CHECK_OK(attn_vulkan_buffer_destroy(gone));
    bad = dev;
    bad.q.data = goneAddress;
    expect(attn_launch(kernel, &bad), ATTN_ERROR_INVALID_ARGUMENT,
           "q in a destroyed buffer");
    expect(attn_vulkan_buffer_upload(gone, 0, p.q, 4),
           ATTN_ERROR_INVALID_ARGUMENT, "upload to a destroyed buffer");
    expect(attn_vulkan_buffer_destroy(gone), ATTN_ERROR_INVALID_ARGUMENT,
           "destroying a buffer twice");
    if (attn_vulkan_buffer_size(gone) != 0 ||
        attn_vulkan_buffer_pointer(gone) != NULL) {
      printf("FAIL: a destroyed buffer still has a size or pointer\n");
      ++failures;
    }
    /* Copies outside the buffer, including sizes that would wrap. */
    expect(attn_vulkan_buffer_upload(d.q, p.qBytes - 2, p.q, 4),
           ATTN_ERROR_INVALID_ARGUMENT, "upload past the end");
    expect(attn_vulkan_buffer_download(d.q, 8, p.q, UINT64_MAX - 4),
           ATTN_ERROR_INVALID_ARGUMENT, "download of 2^64 - 5 bytes");
    attn_vulkan_buffer *huge = NULL;
    expect(attn_vulkan_buffer_create(ctx, UINT64_MAX, &huge),
           ATTN_ERROR_INVALID_ARGUMENT, "a buffer of 2^64 - 1 bytes");
    expect(attn_vulkan_buffer_create(ctx, 0, &huge),
           ATTN_ERROR_INVALID_ARGUMENT, "a buffer of 0 bytes");
    /* A strided (BSHD) tensor in a device buffer. */
    if (p.hq > 1 && p.sq > 1) {
      bad = dev;
      bad.q.strides[1] = p.d;
      bad.q.strides[2] = p.hq * p.d;
      expect(attn_launch(kernel, &bad), ATTN_ERROR_INVALID_ARGUMENT,
             "a BSHD q in a device buffer");
    }
    /* An offset that is not a multiple of the alignment. */
    if (align > p.es) {
      attn_vulkan_buffer *roomy = NULL;
      CHECK_OK(attn_vulkan_buffer_create(ctx, p.qBytes + align, &roomy));
      bad = dev;
      bad.q.data = (char *)attn_vulkan_buffer_pointer(roomy) + p.es;
      expect(attn_launch(kernel, &bad), ATTN_ERROR_INVALID_ARGUMENT,
             "q at a misaligned offset");
      CHECK_OK(attn_vulkan_buffer_destroy(roomy));
    }
    /* Events: NULLs, and the time before a wait. */
    attn_vulkan_event *event = NULL;
    expect(attn_vulkan_launch_async(kernel, &dev, NULL),
           ATTN_ERROR_INVALID_ARGUMENT, "launch_async without an event");
    CHECK_OK(attn_vulkan_launch_async(kernel, &dev, &event));
    double ms = 0;
    expect(attn_vulkan_event_kernel_ms(event, &ms),
           ATTN_ERROR_INVALID_ARGUMENT, "kernel_ms before the wait");
    /* Destroying a buffer an unwaited launch uses: the launch completes. */
    CHECK_OK(attn_vulkan_buffer_destroy(d.v));
    CHECK_OK(attn_vulkan_event_wait(event));
    attn_vulkan_event_destroy(event);
    expect(attn_vulkan_event_wait(NULL), ATTN_ERROR_INVALID_ARGUMENT,
           "waiting on NULL");
    /* Nothing ran on a refused launch: out still holds the good result. */
    sameAsHost(&p, &d, "device output after the refused launches");
    d.v = NULL;
    CHECK_OK(attn_vulkan_buffer_destroy(small));
    CHECK_OK(attn_vulkan_buffer_destroy(foreign));
    attn_context_destroy(other);
    release(&d);
  }
  attn_context_destroy(ctx);
  printf("%s\n", failures ? "FAILED" : "PASSED");
  return failures ? 1 : 0;
}
