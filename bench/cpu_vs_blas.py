#!/usr/bin/env python3
"""attn's cpu kernels against attention written with NumPy + OpenBLAS.

Issue 19's yardstick. For each shape (f32, f16, bf16 inputs; D 64 and 128;
causal and not; S = Sq = Skv from 512 to 8192) one process times, on the
same inputs and alternating round by round:

  - attn: libattn.so's cpu kernel (the JIT, all cores through OpenMP),
    called through the C API with NumPy arrays (examples/attn_ctypes.py's
    declarations; no copies);
  - numpy: S = Q K^T as one batched matmul (OpenBLAS SGEMM, all cores),
    the causal mask, softmax in f32, P V as a second matmul; the whole S is
    materialized. f16 and bf16 inputs are converted to f32 first (outside
    the timed region), as attn computes in f32 from them;
  - sgemm: OpenBLAS SGEMM of 2048^3 f32, the machine's matrix throughput,
    timed in every round of every cell (alternated with the two above), so
    a cell's ratio to it does not drift with the machine's load.

Before every timed call the script sleeps 0.3 s: the runtime timed just
before may still spin its idle threads (libomp 200 ms, OpenBLAS ~70 ms) on
the two cores the next call needs; alternating without it slowed attn's
small causal cells ~1.4x.

FLOPs are 4 B H Sq Skv D (halved for causal), the count FlashAttention
papers use. Heads are scaled with 1/(S^2 D) so every run does similar work.
Decode (Sq = 1, Skv = 32768, 32 query heads over 8 kv heads, D = 128):
GB/s of K and V read, against a NumPy copy of a buffer of the same size
(read + write counted).

Writes bench/results/cpu-vs-blas-<date>/{table.md,results.csv,chart.svg}
and prints the table. The attn output is compared with NumPy's (a sanity
check that both compute attention; correctness is tested elsewhere).

usage: /usr/bin/python3 bench/cpu_vs_blas.py [--lib build/lib/libattn.so]
           [--rounds 3] [--sizes 512,1024,2048,4096,8192] [--dims 64,128]
           [--dtypes f32,f16,bf16] [--causal 0,1] [--bf16-fma 1] [--out DIR]

bf16 cells also time, alternated with the others, the kernel compiled with
ATTN_CPU_BF16_DOT=0: the f32 FMA micro-kernel in place of the AVX512-BF16
dot products the JIT picks on a host that has them (--bf16-fma 0: not).
"""
import argparse
import ctypes
import datetime
import os
import platform
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
import attn_ctypes as A  # noqa: E402

ATTN_TARGET_CPU = 0
DTYPES = {"f32": A.ATTN_DTYPE_F32, "f16": A.ATTN_DTYPE_F16,
          "bf16": A.ATTN_DTYPE_BF16}


def to_bf16_bits(x):
    """f32 array -> bf16 bit patterns (uint16), round to nearest even."""
    b = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    b = b + np.uint32(0x7FFF) + ((b >> np.uint32(16)) & np.uint32(1))
    return (b >> np.uint32(16)).astype(np.uint16)


def from_bf16_bits(u):
    return (u.astype(np.uint32) << np.uint32(16)).view(np.float32)


def inputs(rng, dtype, shape):
    """(array handed to attn, its f32 value for NumPy)."""
    x = rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)
    if dtype == "f32":
        return x, x
    if dtype == "f16":
        h = x.astype(np.float16)
        return h, h.astype(np.float32)
    u = to_bf16_bits(x)
    return u, from_bf16_bits(u)


def tensor(a):
    strides = [s // a.itemsize for s in a.strides]
    return A.AttnTensor(a.ctypes.data, (ctypes.c_int64 * 4)(*a.shape),
                        (ctypes.c_int64 * 4)(*strides))


class Attn:
    def __init__(self, path):
        self.lib = A.load(path)
        self.ctx = ctypes.c_void_p()
        A.check(self.lib, self.lib.attn_context_create(ctypes.byref(self.ctx)),
                "attn_context_create")

    def compile(self, dtype, b, hq, hkv, sq, skv, d, causal):
        spec = A.AttnSpec()
        self.lib.attn_spec_init(ctypes.byref(spec))
        spec.dtype = DTYPES[dtype]
        spec.batch, spec.heads_q, spec.heads_kv = b, hq, hkv
        spec.seq_q, spec.seq_kv, spec.head_dim, spec.value_dim = sq, skv, d, d
        spec.causal = int(causal)
        kernel = ctypes.c_void_p()
        A.check(self.lib, self.lib.attn_compile(
            self.ctx, ctypes.byref(spec), ATTN_TARGET_CPU,
            ctypes.byref(kernel)), "attn_compile")
        return kernel

    def launch(self, kernel, q, k, v, out):
        args = A.AttnLaunchArgs()
        args.q, args.k, args.v, args.out = (tensor(q), tensor(k), tensor(v),
                                           tensor(out))
        A.check(self.lib, self.lib.attn_launch(kernel, ctypes.byref(args)),
                "attn_launch")


def causal_bias(sq, skv):
    """0 where key j is visible to query i (j <= i + Skv - Sq), else -inf:
    built once per shape, as attn compiles causality into its kernel."""
    row = np.arange(sq)[:, None] + (skv - sq)
    return np.where(np.arange(skv)[None, :] > row, -np.inf,
                    0.0).astype(np.float32)


def numpy_attention(q, k, v, bias, scale):
    """q [B,H,Sq,D], k/v [B,Hkv,Skv,D] f32 -> out f32 (S materialized);
    bias: None or causal_bias."""
    group = q.shape[1] // k.shape[1]
    if group > 1:
        k = np.repeat(k, group, axis=1)
        v = np.repeat(v, group, axis=1)
    s = np.matmul(q, np.swapaxes(k, -1, -2))
    s *= np.float32(scale)
    if bias is not None:
        s += bias
    s -= s.max(axis=-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=-1, keepdims=True)
    return np.matmul(s, v)


def timed(fn):
    # The runtime timed before may still spin its idle threads (libomp's
    # KMP_BLOCKTIME, 200 ms; OpenBLAS's thread timeout, ~2^28 cycles) on the
    # cores this call needs: let them go to sleep first.
    time.sleep(0.3)
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", default="build/lib/libattn.so")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sizes", default="512,1024,2048,4096,8192")
    ap.add_argument("--dims", default="64,128")
    ap.add_argument("--dtypes", default="f32,f16,bf16")
    ap.add_argument("--causal", default="0,1")
    ap.add_argument("--decode", type=int, default=1)
    ap.add_argument("--out", default=None)
    ap.add_argument("--bf16-fma", type=int, default=1,
                    help="for bf16 cells also time the kernel compiled "
                         "with ATTN_CPU_BF16_DOT=0 (f32 FMAs instead of "
                         "AVX512-BF16 dot products), alternated with the "
                         "others")
    args = ap.parse_args()

    blas = numpy_blas()
    if "openblas" not in blas.lower():
        print(f"cpu_vs_blas: NumPy's BLAS is {blas}, not OpenBLAS: the "
              "comparison needs libopenblas0-pthread (scripts/setup.sh "
              "installs it)", file=sys.stderr)
        sys.exit(2)
    attn = Attn(args.lib)
    rng = np.random.default_rng(20261126)
    date = datetime.date.today().isoformat()
    out_dir = args.out or os.path.join("bench", "results",
                                       f"cpu-vs-blas-{date}")
    os.makedirs(out_dir, exist_ok=True)

    # The machine's matrix throughput, in the same run.
    a = rng.standard_normal((2048, 2048), dtype=np.float32)
    np.matmul(a, a)
    sgemm = [2 * 2048 ** 3 / timed(lambda: np.matmul(a, a)) / 1e9
             for _ in range(max(3, args.rounds))]
    sgemm_gflops = statistics.median(sgemm)
    print(f"OpenBLAS SGEMM 2048^3: {sgemm_gflops:.1f} GFLOP/s",
          file=sys.stderr, flush=True)

    rows = []
    for dtype in args.dtypes.split(","):
        for d in [int(x) for x in args.dims.split(",")]:
            for causal in [int(x) for x in args.causal.split(",")]:
                for s in [int(x) for x in args.sizes.split(",")]:
                    h = max(1, (16 * 2048 * 2048 * 64) // (s * s * d))
                    q, qf = inputs(rng, dtype, (1, h, s, d))
                    k, kf = inputs(rng, dtype, (1, h, s, d))
                    v, vf = inputs(rng, dtype, (1, h, s, d))
                    out = np.empty((1, h, s, d), dtype=q.dtype)
                    kernel = attn.compile(dtype, 1, h, h, s, s, d, causal)
                    fma = None
                    if dtype == "bf16" and args.bf16_fma:
                        os.environ["ATTN_CPU_BF16_DOT"] = "0"
                        fma = attn.compile(dtype, 1, h, h, s, s, d, causal)
                        del os.environ["ATTN_CPU_BF16_DOT"]
                        attn.launch(fma, q, k, v, out)  # warm-up
                    scale = 1.0 / np.sqrt(d)
                    bias = causal_bias(s, s) if causal else None
                    attn.launch(kernel, q, k, v, out)  # warm-up
                    ref = numpy_attention(qf, kf, vf, bias, scale)
                    got = (from_bf16_bits(out) if dtype == "bf16"
                           else out.astype(np.float32))
                    err = float(np.linalg.norm(got - ref) /
                                np.linalg.norm(ref))
                    ta, tn, tf, tg = [], [], [], []
                    for _ in range(args.rounds):
                        tg.append(timed(lambda: np.matmul(a, a)))
                        ta.append(timed(lambda: attn.launch(kernel, q, k, v,
                                                            out)))
                        tn.append(timed(lambda: numpy_attention(
                            qf, kf, vf, bias, scale)))
                        if fma:
                            tf.append(timed(lambda: attn.launch(fma, q, k, v,
                                                                out)))
                    flops = 4.0 * h * s * s * d * (0.5 if causal else 1.0)
                    ga = flops / statistics.median(ta) / 1e9
                    gn = flops / statistics.median(tn) / 1e9
                    gf = flops / statistics.median(tf) / 1e9 if tf else 0.0
                    gs = 2 * 2048 ** 3 / statistics.median(tg) / 1e9
                    rows.append(dict(dtype=dtype, d=d, causal=causal, s=s,
                                     heads=h, attn_ms=1e3 * statistics.median(ta),
                                     numpy_ms=1e3 * statistics.median(tn),
                                     attn_gflops=ga, numpy_gflops=gn,
                                     rel_err=err, attn_fma_gflops=gf,
                                     sgemm_gflops=gs))
                    print(f"{dtype} D={d} causal={causal} S={s} H={h}: attn "
                          f"{ga:.1f} GFLOP/s, numpy {gn:.1f}, ratio "
                          f"{ga / gn:.2f}, vs sgemm {ga / gs:.1%}, "
                          f"rel err {err:.1e}", file=sys.stderr, flush=True)

    decode = None
    if args.decode:
        hq, hkv, skv, d = 32, 8, 32768, 128
        for dtype in ("f32", "bf16"):
            q, _ = inputs(rng, dtype, (1, hq, 1, d))
            k, _ = inputs(rng, dtype, (1, hkv, skv, d))
            v, _ = inputs(rng, dtype, (1, hkv, skv, d))
            out = np.empty((1, hq, 1, d), dtype=q.dtype)
            kernel = attn.compile(dtype, 1, hq, hkv, 1, skv, d, 0)
            attn.launch(kernel, q, k, v, out)
            kv_bytes = k.nbytes + v.nbytes
            src = np.ones(kv_bytes // 4, dtype=np.float32)
            dst = np.empty_like(src)
            np.copyto(dst, src)
            ta, tc = [], []
            for _ in range(max(5, args.rounds)):
                ta.append(timed(lambda: attn.launch(kernel, q, k, v, out)))
                tc.append(timed(lambda: np.copyto(dst, src)))
            attn_gbps = kv_bytes / statistics.median(ta) / 1e9
            copy_gbps = 2 * kv_bytes / statistics.median(tc) / 1e9
            decode = decode or []
            decode.append(dict(dtype=dtype, kv_mb=kv_bytes / 1e6,
                               attn_ms=1e3 * statistics.median(ta),
                               attn_gbps=attn_gbps, copy_gbps=copy_gbps))
            print(f"decode {dtype}: K/V {kv_bytes / 1e6:.0f} MB, attn "
                  f"{attn_gbps:.2f} GB/s, copy {copy_gbps:.2f} GB/s",
                  file=sys.stderr, flush=True)

    # The SGEMM of the table's head and chart: the median of the per-cell
    # ones (each cell's ratio uses its own, timed in its rounds).
    if rows:
        sgemm_gflops = statistics.median(r["sgemm_gflops"] for r in rows)
    write(out_dir, date, args, sgemm_gflops, rows, decode)


def numpy_blas():
    """The BLAS library NumPy's matmul runs on, as the process mapped it
    (Debian's NumPy links libblas.so.3, an alternative that OpenBLAS or the
    reference BLAS provides)."""
    np.matmul(np.ones((2, 2)), np.ones((2, 2)))
    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if "blas" in line.lower()}
    except OSError:
        return "unknown"
    real = sorted({os.path.realpath(p) for p in libs if p.startswith("/")})
    return ", ".join(real) or "unknown"


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def write(out_dir, date, args, sgemm, rows, decode):
    head = (f"CPU attention vs NumPy + OpenBLAS, {date}, {cpu_name()}, "
            f"{os.cpu_count()} cores, {args.rounds} rounds alternating, "
            f"median; OpenBLAS SGEMM 2048^3 {sgemm:.1f} GFLOP/s (median "
            f"over the cells; each cell's ratio is to the SGEMM timed in its "
            f"own rounds, alternated with attn and NumPy) in the same "
            f"run (NumPy's BLAS: {numpy_blas()}). B = 1, "
            f"H = 16 x (2048 / S)^2 x 64 / D, Sq = Skv = S.")
    lines = [head, "",
             "| dtype | D | causal | S | H | attn GFLOP/s | numpy GFLOP/s "
             "| attn / numpy | attn / SGEMM | SGEMM GFLOP/s | attn ms "
             "| numpy ms "
             "| bf16 without dot products: GFLOP/s |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- "
             "| --- | --- | --- |"]
    for r in rows:
        fma = (f"{r['attn_fma_gflops']:.1f}" if r.get('attn_fma_gflops')
               else "-")
        lines.append(
            f"| {r['dtype']} | {r['d']} | {r['causal']} | {r['s']} | "
            f"{r['heads']} | {r['attn_gflops']:.1f} | {r['numpy_gflops']:.1f} "
            f"| {r['attn_gflops'] / r['numpy_gflops']:.2f} | "
            f"{r['attn_gflops'] / r['sgemm_gflops']:.1%} | "
            f"{r['sgemm_gflops']:.1f} | {r['attn_ms']:.1f} | "
            f"{r['numpy_ms']:.1f} | {fma} |")
    if decode:
        lines += ["", "Decode: Sq = 1, Skv = 32768, Hq = 32, Hkv = 8, "
                  "D = 128; GB/s of K and V read; copy: np.copyto of a "
                  "buffer of the same size, read + write.", "",
                  "| dtype | K+V MB | attn ms | attn GB/s | copy GB/s "
                  "| attn / copy |", "| --- | --- | --- | --- | --- | --- |"]
        for r in decode:
            lines.append(f"| {r['dtype']} | {r['kv_mb']:.0f} | "
                         f"{r['attn_ms']:.2f} | {r['attn_gbps']:.2f} | "
                         f"{r['copy_gbps']:.2f} | "
                         f"{r['attn_gbps'] / r['copy_gbps']:.2f} |")
    table = "\n".join(lines) + "\n"
    with open(os.path.join(out_dir, "table.md"), "w") as f:
        f.write(table)
    with open(os.path.join(out_dir, "results.csv"), "w") as f:
        keys = list(rows[0].keys()) if rows else []
        f.write(",".join(keys) + "\n")
        for r in rows:
            f.write(",".join(str(r[k]) for k in keys) + "\n")
    with open(os.path.join(out_dir, "chart.svg"), "w") as f:
        f.write(chart(rows, sgemm))
    print(table)


def chart(rows, sgemm):
    """GFLOP/s vs S (log2 axis): one line per implementation and shape
    family (attn solid, numpy dashed), SGEMM as a horizontal line."""
    w, h, ml, mr, mt, mb = 760, 420, 60, 200, 20, 40
    sizes = sorted({r["s"] for r in rows})
    if not sizes:
        return "<svg xmlns='http://www.w3.org/2000/svg'/>"
    ymax = max([sgemm] + [r["attn_gflops"] for r in rows] +
               [r["numpy_gflops"] for r in rows]) * 1.1

    def x(s):
        if len(sizes) == 1:
            return ml
        i = np.log2(s) - np.log2(sizes[0])
        return ml + i / (np.log2(sizes[-1]) - np.log2(sizes[0])) * (w - ml - mr)

    def y(g):
        return mt + (1 - g / ymax) * (h - mt - mb)

    colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
              "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
              "#393b79", "#637939"]
    out = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{w}' "
           f"height='{h}' font-family='sans-serif' font-size='11'>",
           f"<rect width='{w}' height='{h}' fill='white'/>"]
    for t in range(6):
        g = ymax * t / 5
        out.append(f"<line x1='{ml}' x2='{w - mr}' y1='{y(g):.1f}' "
                   f"y2='{y(g):.1f}' stroke='#ddd'/>")
        out.append(f"<text x='{ml - 6}' y='{y(g) + 4:.1f}' "
                   f"text-anchor='end'>{g:.0f}</text>")
    for s in sizes:
        out.append(f"<text x='{x(s):.1f}' y='{h - mb + 16}' "
                   f"text-anchor='middle'>{s}</text>")
    out.append(f"<text x='{(ml + w - mr) / 2}' y='{h - 6}' "
               f"text-anchor='middle'>S = Sq = Skv</text>")
    out.append(f"<text x='14' y='{mt + 10}'>GFLOP/s</text>")
    out.append(f"<line x1='{ml}' x2='{w - mr}' y1='{y(sgemm):.1f}' "
               f"y2='{y(sgemm):.1f}' stroke='black' stroke-dasharray='2,3'/>")
    legend = [("SGEMM 2048^3", "black", "2,3")]
    families = sorted({(r["dtype"], r["d"], r["causal"]) for r in rows})
    for i, fam in enumerate(families):
        c = colors[i % len(colors)]
        pts = sorted((r["s"], r["attn_gflops"], r["numpy_gflops"])
                     for r in rows if (r["dtype"], r["d"], r["causal"]) == fam)
        for j, dash in ((1, ""), (2, "6,4")):
            path = " ".join(f"{x(p[0]):.1f},{y(p[j]):.1f}" for p in pts)
            out.append(f"<polyline points='{path}' fill='none' stroke='{c}' "
                       f"stroke-width='1.5' stroke-dasharray='{dash}'/>")
        name = f"{fam[0]} D{fam[1]}{' causal' if fam[2] else ''}"
        legend.append((f"attn {name}", c, ""))
        legend.append((f"numpy {name}", c, "6,4"))
    for i, (name, c, dash) in enumerate(legend):
        ly = mt + 12 * i
        out.append(f"<line x1='{w - mr + 10}' x2='{w - mr + 34}' y1='{ly}' "
                   f"y2='{ly}' stroke='{c}' stroke-dasharray='{dash}'/>")
        out.append(f"<text x='{w - mr + 38}' y='{ly + 4}'>{name}</text>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main()
