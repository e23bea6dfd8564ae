/* cpu_peaks.c - the cpu device table's measured numbers (docs/PerformanceModel.md):
 * peak f32 FMA rate (AVX-512, independent accumulator chains, all threads),
 * a STREAM-like copy and triad bandwidth, and the rate of a vector exp
 * (a degree-6 polynomial with a 2^n scale, the shape of what LLVM emits for
 * math.exp2 on the cpu path). Prints one JSON object.
 * Build: cc -O2 -mavx512f -mfma -fopenmp cpu_peaks.c -o cpu_peaks
 * Run: cpu_peaks (everything) or cpu_peaks fma (the FMA rate alone). */
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

static double fmaPeak(long iters) {
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    double t0 = now();
#pragma omp parallel
    {
      const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
      /* named accumulators, so that they live in registers (an array was
         kept in memory, a store and a load per FMA) */
      __m512 a0 = _mm512_set1_ps(0), a1 = _mm512_set1_ps(1), a2 = _mm512_set1_ps(2),
             a3 = _mm512_set1_ps(3), a4 = _mm512_set1_ps(4), a5 = _mm512_set1_ps(5),
             a6 = _mm512_set1_ps(6), a7 = _mm512_set1_ps(7), a8 = _mm512_set1_ps(8),
             a9 = _mm512_set1_ps(9), a10 = _mm512_set1_ps(10), a11 = _mm512_set1_ps(11);
      for (long n = 0; n < iters; ++n) {
#define F(r) r = _mm512_fmadd_ps(r, x, y)
        F(a0); F(a1); F(a2); F(a3); F(a4); F(a5); F(a6); F(a7); F(a8); F(a9); F(a10); F(a11);
#undef F
      }
      __m512 s4 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                                _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
      s4 = _mm512_add_ps(s4, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
      if (_mm512_reduce_add_ps(s4) == 12345.f) printf("#");
    }
    double dt = now() - t0;
    double flops = 2.0 * 16 * 12 * iters * omp_get_max_threads();
    if (flops / dt > best) best = flops / dt;
  }
  return best;
}

static double expRate(long n) {
  /* exp2 of a vector: split x = k + f, p(f) degree 6 Horner, scale by 2^k */
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    double t0 = now();
#pragma omp parallel
    {
      __m512 e0 = _mm512_set1_ps(0), e1 = _mm512_set1_ps(-0.5f), e2 = _mm512_set1_ps(-1),
             e3 = _mm512_set1_ps(-1.5f), e4 = _mm512_set1_ps(-2), e5 = _mm512_set1_ps(-2.5f),
             e6 = _mm512_set1_ps(-3), e7 = _mm512_set1_ps(-3.5f);
      const __m512 c1 = _mm512_set1_ps(0.6931472f), c2 = _mm512_set1_ps(0.2402265f),
                   c3 = _mm512_set1_ps(0.0555041f), c4 = _mm512_set1_ps(0.0096181f),
                   c5 = _mm512_set1_ps(0.0013333f), c6 = _mm512_set1_ps(0.0001540f),
                   one = _mm512_set1_ps(1.f), dec = _mm512_set1_ps(-1e-6f);
#define EXP2(r)                                                                  \
  do {                                                                           \
    __m512 x = _mm512_add_ps(r, dec);                                            \
    __m512 k = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); \
    __m512 f = _mm512_sub_ps(x, k);                                              \
    __m512 p = _mm512_fmadd_ps(c6, f, c5);                                       \
    p = _mm512_fmadd_ps(p, f, c4); p = _mm512_fmadd_ps(p, f, c3);                 \
    p = _mm512_fmadd_ps(p, f, c2); p = _mm512_fmadd_ps(p, f, c1);                 \
    p = _mm512_fmadd_ps(p, f, one);                                              \
    r = _mm512_sub_ps(_mm512_min_ps(_mm512_scalef_ps(p, k), one), one);          \
  } while (0)
      for (long it = 0; it < n; ++it) { EXP2(e0); EXP2(e1); EXP2(e2); EXP2(e3);
        EXP2(e4); EXP2(e5); EXP2(e6); EXP2(e7); }
#undef EXP2
      __m512 s4 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(e0, e1), _mm512_add_ps(e2, e3)),
                                _mm512_add_ps(_mm512_add_ps(e4, e5), _mm512_add_ps(e6, e7)));
      if (_mm512_reduce_add_ps(s4) == 12345.f) printf("#");
    }
    double dt = now() - t0;
    double e = 16.0 * 8 * n * omp_get_max_threads();
    if (e / dt > best) best = e / dt;
  }
  return best;
}

int main(int argc, char **argv) {
  /* "cpu_peaks fma": the FMA rate alone, in about 0.1 s: how much of the
     cores a run gets now (bench/model_sweep.py's contention probe). */
  if (argc > 1 && strcmp(argv[1], "fma") == 0) {
    printf("{\"fma_f32_gflops\": %.1f}\n", fmaPeak(2000000L) / 1e9);
    return 0;
  }
  long n = 1L << 25; /* 32 Mi floats = 128 MiB per array, far above the L3 */
  float *a = aligned_alloc(64, n * 4), *b = aligned_alloc(64, n * 4), *c = aligned_alloc(64, n * 4);
#pragma omp parallel for
  for (long i = 0; i < n; ++i) { a[i] = 1; b[i] = 2; c[i] = 0; }
  double copy = 0, triad = 0;
  for (int rep = 0; rep < 5; ++rep) {
    double t0 = now();
#pragma omp parallel for
    for (long i = 0; i < n; ++i) c[i] = a[i];
    double dt = now() - t0;
    if (2.0 * n * 4 / dt > copy) copy = 2.0 * n * 4 / dt;
    t0 = now();
#pragma omp parallel for
    for (long i = 0; i < n; ++i) a[i] = b[i] + 0.5f * c[i];
    dt = now() - t0;
    if (3.0 * n * 4 / dt > triad) triad = 3.0 * n * 4 / dt;
  }
  double fma = fmaPeak(20000000L);
  double ex = expRate(4000000L);
  printf("{\"threads\": %d, \"fma_f32_gflops\": %.1f, \"exp_gexp_per_s\": %.2f, "
         "\"copy_gbps\": %.2f, \"triad_gbps\": %.2f}\n",
         omp_get_max_threads(), fma / 1e9, ex / 1e9, copy / 1e9, triad / 1e9);
  return c[7] == 42.f;
}
