#!/usr/bin/env python3
"""Times the tiled (FlashAttention) CPU path against the untiled math path.

Runs attn-run --bench for S = 512..8192, D = 64 and 128 (B = 1, H = 1,
f32, non-causal) in one process tree, three ways: tiled on every core
(OpenMP), tiled on one core (OMP_NUM_THREADS=1), and the math path (which
has no parallel loop). Writes a CSV and a markdown table under
bench/results/ and prints the table.

usage: bench/cpu_tiled_vs_math.py [--build build] [--reps 1]
                                  [--sizes 512,1024,...] [--dims 64,128]
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--build", default="build")
ap.add_argument("--reps", type=int, default=1)
ap.add_argument("--sizes", default="512,1024,2048,4096,8192")
ap.add_argument("--dims", default="64,128")
ap.add_argument("--out", default="bench/results")
args = ap.parse_args()

run = os.path.join(args.build, "bin", "attn-run")
rows = []


def bench(s, d, variant, threads):
    env = dict(os.environ)
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    cmd = [run, f"--seq-q={s}", f"--head-dim={d}", f"--variant={variant}",
           f"--bench={args.reps}", "--json"]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True,
                         text=True).stdout
    r = json.loads(out)
    return r["median_ms"], r["tflops"] * 1000.0


for d in [int(x) for x in args.dims.split(",")]:
    for s in [int(x) for x in args.sizes.split(",")]:
        t_all, g_all = bench(s, d, "tiled", None)
        t_one, g_one = bench(s, d, "tiled", 1)
        t_math, g_math = bench(s, d, "math", None)
        rows.append((d, s, t_all, g_all, t_one, g_one, t_math, g_math))
        print(f"D={d} S={s}: tiled {t_all:.1f} ms, tiled/1 thread "
              f"{t_one:.1f} ms, math {t_math:.1f} ms", file=sys.stderr,
              flush=True)

date = datetime.date.today().isoformat()
cpu = "unknown CPU"
try:
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
except OSError:
    pass
cores = os.cpu_count()
os.makedirs(args.out, exist_ok=True)
stem = os.path.join(args.out, f"cpu-tiled-vs-math-{date}")
with open(stem + ".csv", "w") as f:
    f.write("head_dim,seq,tiled_ms,tiled_gflops,tiled_1t_ms,tiled_1t_gflops,"
            "math_ms,math_gflops\n")
    for r in rows:
        f.write(",".join(f"{x:.4g}" if isinstance(x, float) else str(x)
                         for x in r) + "\n")
lines = [
    f"CPU, f32, B = 1, H = 1, non-causal, median of {args.reps} run(s) after "
    f"2 warm-ups; {date}, {cpu}, {cores} cores, {platform.system()}.",
    "",
    "| D | S | tiled ms | tiled GFLOP/s | tiled 1 thread ms | tiled 1 thread GFLOP/s | math ms | math GFLOP/s | math / tiled |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
]
for d, s, ta, ga, to, go, tm, gm in rows:
    lines.append(f"| {d} | {s} | {ta:.1f} | {ga:.2f} | {to:.1f} | {go:.2f} | "
                 f"{tm:.1f} | {gm:.2f} | {tm / ta:.2f}x |")
table = "\n".join(lines) + "\n"
with open(stem + ".md", "w") as f:
    f.write(table)
print(table)
