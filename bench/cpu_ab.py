#!/usr/bin/env python3
"""A/B of two attn builds on the CPU target, timed alternately per shape.

Usage: bench/cpu_ab.py OLD_BIN_DIR NEW_BIN_DIR [--rounds N] [--out FILE.md]
       [--shapes 'label=flags;label=flags']

Each shape runs `attn-run --bench` with the old and the new build in
alternation for --rounds rounds (the same random inputs: a fixed
--data-seed), and reports the median of each build's medians and new/old.
Correctness stays with the numeric test matrices; this only times.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

SHAPES = [
    # (label, attn-run flags)
    ("f32 H4 S1024 D64", "--heads=4 --seq-q=1024 --head-dim=64 --dtype=f32"),
    ("f16 H4 S1024 D128 causal", "--heads=4 --seq-q=1024 --head-dim=128 --dtype=f16 --causal"),
    ("bf16 H8 S512 D64 mask", "--heads=8 --seq-q=512 --head-dim=64 --dtype=bf16 --mask=bool"),
    ("f32 H4 S1024 D64 additive mask", "--heads=4 --seq-q=1024 --head-dim=64 --dtype=f32 --mask=additive"),
    ("bf16 decode Hq32 Hkv8 Skv8192 D128", "--heads=32 --kv-heads=8 --seq-q=1 --seq-kv=8192 --head-dim=128 --dtype=bf16"),
]


def run(bin_dir, flags, bench):
    cmd = [os.path.join(bin_dir, "attn-run")] + flags.split() + [
        "--bench=%d" % bench, "--json", "--data-seed=1"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["median_ms"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--bench", type=int, default=5)
    ap.add_argument("--out", default="")
    ap.add_argument("--shapes", default="",
                    help="'label=attn-run flags;label=flags;...' instead of the built-in set")
    a = ap.parse_args()
    shapes = [tuple(x.split("=", 1)) for x in a.shapes.split(";") if x] if a.shapes else SHAPES
    rows = []
    for label, flags in shapes:
        old, new = [], []
        for _ in range(a.rounds):
            old.append(run(a.old, flags, a.bench))
            new.append(run(a.new, flags, a.bench))
        mo, mn = statistics.median(old), statistics.median(new)
        rows.append((label, mo, mn, mo / mn))
        print("%-40s old %9.1f ms  new %9.1f ms  speedup %.3f" % rows[-1],
              flush=True)
    text = ["| shape | old ms | new ms | old/new |", "| --- | --- | --- | --- |"]
    text += ["| %s | %.1f | %.1f | %.3f |" % r for r in rows]
    head = "CPU A/B, %s, %s, %d cores, %d rounds alternating\n\n" % (
        time.strftime("%Y-%m-%d"), platform.processor() or platform.machine(),
        os.cpu_count(), a.rounds)
    if a.out:
        with open(a.out, "w") as f:
            f.write(head + "\n".join(text) + "\n")
    print(head + "\n".join(text))


if __name__ == "__main__":
    sys.exit(main())
