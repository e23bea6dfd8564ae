#!/usr/bin/env python3
"""attn.mha on the cpu target beside the same layer in NumPy (OpenBLAS).

Usage: bench/cpu_mha_numpy.py ATTN_RUN [--rounds N] [--bench N]
       [--shapes 'E:S:H[:Hkv],...'] [--out FILE.md]

Per shape (f32, B = 1, self-attention, biases, not causal): the layer as
`attn-run --mha --bench=N --json` (its median), and as NumPy float32:
x @ W.T + b for q, k and v (OpenBLAS sgemm on all cores), the heads split
by reshape, softmax(q k^T * scale) v per head (batched matmuls), and the
output projection; the median of N calls after one warm-up. The two are
timed alternately over --rounds rounds; the table has the medians and
numpy/attn (above 1: attn is faster).
"""
import argparse
import json
import statistics
import subprocess
import time

import numpy as np


def numpy_layer(x, wq, wk, wv, wo, bq, bk, bv, bo, hq, hkv):
    s, e = x.shape
    d = wq.shape[0] // hq
    q = (x @ wq.T + bq).reshape(s, hq, d).transpose(1, 0, 2)
    k = (x @ wk.T + bk).reshape(s, hkv, d).transpose(1, 0, 2)
    v = (x @ wv.T + bv).reshape(s, hkv, d).transpose(1, 0, 2)
    if hkv != hq:
        k = np.repeat(k, hq // hkv, axis=0)
        v = np.repeat(v, hq // hkv, axis=0)
    scores = q @ k.transpose(0, 2, 1) * np.float32(1.0 / np.sqrt(d))
    scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=-1, keepdims=True)
    o = (scores @ v).transpose(1, 0, 2).reshape(s, hq * d)
    return o @ wo.T + bo


def time_numpy(e, s, hq, hkv, bench):
    rng = np.random.default_rng(1)
    d = e // hq
    f = np.float32
    x = rng.standard_normal((s, e), dtype=f)
    lim = 1.0 / np.sqrt(e)
    def w(r, c):
        return rng.uniform(-lim, lim, (r, c)).astype(f)
    wq, wk, wv, wo = w(hq * d, e), w(hkv * d, e), w(hkv * d, e), w(e, hq * d)
    bq, bk, bv, bo = (rng.uniform(-lim, lim, n).astype(f)
                      for n in (hq * d, hkv * d, hkv * d, e))
    numpy_layer(x, wq, wk, wv, wo, bq, bk, bv, bo, hq, hkv)
    ms = []
    for _ in range(bench):
        t = time.perf_counter()
        numpy_layer(x, wq, wk, wv, wo, bq, bk, bv, bo, hq, hkv)
        ms.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ms)


def time_attn(attn_run, e, s, hq, hkv, bench):
    out = subprocess.run(
        [attn_run, "--mha", "--embed=%d" % e, "--seq-q=%d" % s,
         "--heads=%d" % hq, "--kv-heads=%d" % hkv, "--bias", "--dtype=f32",
         "--bench=%d" % bench, "--json", "--data-seed=1"],
        capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["median_ms"]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("attn_run")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--bench", type=int, default=5)
    ap.add_argument("--shapes", default="512:256:8,1024:512:8,1024:1024:16:4")
    ap.add_argument("--out")
    a = ap.parse_args()
    rows = []
    for shape in a.shapes.split(","):
        parts = [int(p) for p in shape.split(":")]
        e, s, hq = parts[:3]
        hkv = parts[3] if len(parts) > 3 else hq
        attn, npy = [], []
        for r in range(a.rounds):
            order = [0, 1] if r % 2 == 0 else [1, 0]
            for which in order:
                if which == 0:
                    attn.append(time_attn(a.attn_run, e, s, hq, hkv, a.bench))
                else:
                    npy.append(time_numpy(e, s, hq, hkv, a.bench))
        ma, mn = statistics.median(attn), statistics.median(npy)
        rows.append((e, s, hq, hkv, ma, mn, mn / ma))
        print("E%d S%d Hq%d Hkv%d  attn %.2f ms  numpy %.2f ms  numpy/attn "
              "%.3f" % rows[-1], flush=True)
    text = ("| E | S | Hq | Hkv | attn ms | numpy ms | numpy/attn |\n"
            "| --- | --- | --- | --- | --- | --- | --- |\n")
    for row in rows:
        text += "| %d | %d | %d | %d | %.2f | %.2f | %.3f |\n" % row
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
