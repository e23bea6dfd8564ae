#!/usr/bin/env python3
"""The coopmat kernel's geometries on one device: check, then time each.

For each geometry (subgroups per workgroup, block_q, block_kv) and each
shape, `attn-run --target=vulkan --static-shapes` with
ATTN_VULKAN_VARIANT=coopmat and ATTN_VULKAN_COOP_SUBGROUPS: first --check
on a small case of the shape's kind (causal, GQA and a tail block included:
a wrong geometry must fail here, not be timed), then --bench=N --json on
the shape (device_ms: the median of N dispatches by GPU timestamps).
Writes sweep.csv and sweep.md under --out: TFLOP/s per geometry and shape,
the best geometry per shape, and what each geometry's kernel said it was
(its IR's first lines). Run it where attn-run finds a Vulkan device with
VK_KHR_cooperative_matrix (bench/vulkan/device_run.sh's SETUP_ONLY=1 sets
up the environment on the GPU machine: source $VK_ROOT/env.sh).
"""
import argparse
import json
import os
import subprocess
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--attn-run", required=True)
ap.add_argument("--old-attn-run", default="",
                help="another compiler's attn-run, timed as geometry 'old' "
                     "(its own default geometry)")
ap.add_argument("--old-lib", default="", help="the folder of its libattn.so")
ap.add_argument("--out", default="bench-out")
ap.add_argument("--geometries", default="1:16:0,4:32:0,16:16:0:32,32:32:16:32",
                help="subgroups:block_q:block_kv[:lanes],... (0 = the JIT's "
                     "choice; lanes: invocations per row of the softmax, 1 "
                     "or the subgroup size)")
ap.add_argument("--shapes", default="f16-d128,f16-d128-causal,bf16-d64")
ap.add_argument("--bench", type=int, default=5)
ap.add_argument("--budget-s", type=float, default=400.0)
args = ap.parse_args()
T0 = time.time()

SHAPES = {
    # name: (timed flags, FLOP count factor (causal: about half))
    "f16-d128": ("--dtype=f16 --batch=4 --heads=16 --seq-q=4096 --head-dim=128", 1.0),
    "f16-d128-causal": ("--dtype=f16 --batch=4 --heads=16 --seq-q=4096 --head-dim=128 --causal", 0.5),
    "bf16-d64": ("--dtype=bf16 --batch=4 --heads=32 --seq-q=4096 --head-dim=64", 1.0),
    "bf16-d128-s8k": ("--dtype=bf16 --batch=2 --heads=16 --seq-q=8192 --head-dim=128", 1.0),
}
CHECK = ("--batch=1 --heads=4 --kv-heads=2 --seq-q=333 --seq-kv=1000 --causal "
         "--lse")
os.makedirs(args.out, exist_ok=True)
LOG = open(os.path.join(args.out, "run.log"), "a")


def flag(flags, name):
    for f in flags.split():
        if f.startswith(f"--{name}="):
            return int(f.split("=")[1])
    return None


def run(env_extra, flags, bench, old=False):
    env = dict(os.environ, ATTN_VULKAN_VARIANT="coopmat", **env_extra)
    exe = args.attn_run
    if old:
        exe = args.old_attn_run
        env["LD_LIBRARY_PATH"] = args.old_lib + ":" + env.get("LD_LIBRARY_PATH", "")
    cmd = [exe, "--target=vulkan", "--static-shapes", "--dump-ir"]
    cmd += ([f"--bench={bench}", "--json"] if bench else ["--check"])
    cmd += flags.split()
    LOG.write(f"$ {' '.join(f'{k}={v}' for k, v in env_extra.items())} {' '.join(cmd)}\n")
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180)
    except subprocess.TimeoutExpired:
        return None, "timeout", ""
    kern = " | ".join(l[3:] for l in p.stdout.splitlines() if l.startswith("// vulkan"))
    if p.returncode != 0:
        msg = (p.stderr.strip() or p.stdout.strip())[-300:]
        LOG.write(f"  failed ({p.returncode}): {msg}\n")
        return None, msg, kern
    js = [l for l in p.stdout.splitlines() if l.startswith("{")]
    LOG.write(f"  {kern}\n  {js[-1] if js else p.stdout[-200:]}\n")
    return (json.loads(js[-1]) if js else {}), "ok", kern


rows = []
GEOS = args.geometries.split(",") + (["old"] if args.old_attn_run else [])
for geo in GEOS:
    old = geo == "old"
    parts = [1, 0, 0, 1] if old else [int(x) for x in geo.split(":")] + [1]
    sg, bq, bkv, lanes = parts[:4]
    env = {} if old else {"ATTN_VULKAN_COOP_SUBGROUPS": str(sg),
                          "ATTN_VULKAN_COOP_LANES": str(lanes)}
    tile = (f" --block-q={bq}" if bq else "") + (f" --block-kv={bkv}" if bkv else "")
    for shape in args.shapes.split(","):
        flags, factor = SHAPES[shape]
        row = dict(geometry=geo, shape=shape)
        if time.time() - T0 > args.budget_s:
            row["status"] = "skipped: budget"
            rows.append(row)
            continue
        dtype = flags.split()[0]
        d = flag(flags, "head-dim")
        _, status, kern = run(env, f"{dtype} --head-dim={d} {CHECK}{tile}", 0, old)
        if status != "ok":
            row.update(status="check: " + status, kernel=kern)
            rows.append(row)
            print(json.dumps(row), flush=True)
            continue
        r, status, kern = run(env, flags + tile, args.bench, old)
        if status != "ok" or not r or r.get("device_ms") is None:
            row.update(status="bench: " + status, kernel=kern)
        else:
            b, h, s = flag(flags, "batch"), flag(flags, "heads"), flag(flags, "seq-q")
            flops = 4.0 * b * h * s * s * d * factor
            row.update(status="ok", device_ms=r["device_ms"],
                       tflops=flops / (r["device_ms"] * 1e-3) / 1e12, kernel=kern)
        rows.append(row)
        print(json.dumps(row), flush=True)

cols = ["geometry", "shape", "status", "device_ms", "tflops", "kernel"]
with open(os.path.join(args.out, "sweep.csv"), "w") as f:
    f.write(",".join(cols) + "\n")
    for r in rows:
        f.write(",".join('"%s"' % str(r.get(c, "")).replace('"', "'") for c in cols) + "\n")
with open(os.path.join(args.out, "sweep.md"), "w") as f:
    f.write("# coopmat geometries (subgroups:block_q:block_kv[:lanes]), TFLOP/s by GPU timestamps\n\n")
    shapes = args.shapes.split(",")
    f.write("| geometry | " + " | ".join(shapes) + " |\n")
    f.write("| --- |" + " --- |" * len(shapes) + "\n")
    for geo in GEOS:
        cells = []
        for s in shapes:
            r = next((r for r in rows if r["geometry"] == geo and r["shape"] == s), {})
            cells.append(f"{r['tflops']:.1f}" if r.get("status") == "ok"
                         else r.get("status", "")[:60])
        f.write(f"| {geo} | " + " | ".join(cells) + " |\n")
print(open(os.path.join(args.out, "sweep.md")).read())
sys.exit(0 if all(r["status"] == "ok" for r in rows) else 1)
