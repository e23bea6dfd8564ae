#!/usr/bin/env python3
"""Compile time and launch time of the Python package's shape policies
(attn.set_shape_policy) on the cpu: 'dynamic' (B/H/S dynamic: one kernel
per spec), 'static' (one kernel per shape) and 'auto' (the default: the
first shape static, one dynamic kernel for the others). The numbers behind
docs/Python.md's "Kernels and the cache".

    PYTHONPATH=python /usr/bin/python3 bench/python/static_vs_dynamic.py \
        [--shapes 1x8x128x64,1x8x1024x64] [--dtype float32] [--rounds 5]

Each policy runs in its own process (fresh cache), shapes in order; each
process prints per shape: the first call (compile + launch) and the median
of the following launches.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time


def child(policy, shapes, dtype, rounds, causal):
    import numpy as np
    import attn
    attn.set_shape_policy(policy)
    rng = np.random.default_rng(0)
    for s in shapes:
        b, h, n, d = s
        q, k, v = (rng.random((b, h, n, d)).astype(dtype) for _ in range(3))
        t = time.perf_counter()
        attn.sdpa(q, k, v, causal=causal)
        first = time.perf_counter() - t
        ts = []
        for _ in range(rounds):
            t = time.perf_counter()
            attn.sdpa(q, k, v, causal=causal)
            ts.append(time.perf_counter() - t)
        print("%-8s %-16s first call %7.3f s, then %8.3f ms (median of %d); "
              "kernels %d" % (policy, "x".join(map(str, s)), first,
                              1e3 * statistics.median(ts), rounds,
                              attn.cache_info()["kernels"]), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", default="1x8x128x64,1x8x1024x64,1x8x2048x64")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--causal", type=int, default=1)
    ap.add_argument("--child", default=None)
    args = ap.parse_args()
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",")]
    if args.child:
        child(args.child, shapes, args.dtype, args.rounds, bool(args.causal))
        return 0
    for policy in ("dynamic", "static", "auto"):
        r = subprocess.run([sys.executable, os.path.abspath(__file__),
                            "--child", policy, "--shapes", args.shapes,
                            "--dtype", args.dtype, "--rounds",
                            str(args.rounds), "--causal", str(args.causal)])
        if r.returncode:
            return r.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
