#!/usr/bin/env python3
"""A/B of two compilers' Vulkan kernels on one device (bench/vulkan/device_ab.sh).

Each cell (a variant, forced with ATTN_VULKAN_VARIANT, and a shape) is
timed with the new and the old attn-run alternately, --rounds rounds, the
order swapped each round; a timing is `attn-run --static-shapes --bench=N
--json`'s device_b2b_ms (the median of N launches back to back by GPU
timestamps, after warm-ups; device_ms, the single launches, where the
attn-run has no back-to-back pass; a run that fails or is refused counts
as a failure of that compiler). A cell's new/old is the median over the
rounds of old_ms / new_ms (above 1: the new compiler is faster). The old attn-run loads its
own libattn.so (--old-lib first on LD_LIBRARY_PATH); everything else
(the loader, libMLIR) is shared. With --old-env KEY=VALUE (repeatable)
or --old-flags the "old" runs get that environment or those attn-run
flags too, and --old defaults to --new: an A/B of one compiler's choices
(e.g. ATTN_VULKAN_PACK_HEADS=0, --warmup-ms=0). Writes
ab.csv and ab.md under --out and appends what it ran to run.log.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--new", required=True, help="this compiler's attn-run")
ap.add_argument("--old", default="", help="the other compiler's attn-run "
                "(default: --new)")
ap.add_argument("--old-lib", default="", help="the folder of its libattn.so")
ap.add_argument("--old-env", action="append", default=[],
                help="KEY=VALUE set for the old runs only (repeatable)")
ap.add_argument("--old-flags", default="",
                help="attn-run flags added to the old runs only")
ap.add_argument("--flags", default="",
                help="attn-run flags added to every run")
ap.add_argument("--out", default="bench-out")
ap.add_argument("--variants", default="coopmat,portable,portable-rows")
ap.add_argument("--cells", default="",
                help="comma-separated substrings of cell names (default all)")
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--bench", type=int, default=5)
ap.add_argument("--budget-s", type=float, default=420.0)
args = ap.parse_args()
if not args.old:
    args.old = args.new
if args.old != args.new and not args.old_lib:
    ap.error("--old-lib is needed for another compiler's attn-run")
OLD_ENV = dict(kv.split("=", 1) for kv in args.old_env)
T0 = time.time()

# name, attn-run flags: prefill at 16k tokens (hidden 2048), decode.
SHAPES = [
    ("prefill f16 D128 S4096", "--dtype=f16 --batch=4 --heads=16 --seq-q=4096 --head-dim=128"),
    ("prefill f16 D128 S4096 causal", "--dtype=f16 --batch=4 --heads=16 --seq-q=4096 --head-dim=128 --causal"),
    ("prefill bf16 D64 S4096", "--dtype=bf16 --batch=4 --heads=32 --seq-q=4096 --head-dim=64"),
    ("prefill f16 D128 S8192", "--dtype=f16 --batch=2 --heads=16 --seq-q=8192 --head-dim=128"),
    ("prefill f16 D64 S8192 causal", "--dtype=f16 --batch=2 --heads=32 --seq-q=8192 --head-dim=64 --causal"),
    ("decode f16 D128 Skv32k", "--dtype=f16 --batch=1 --heads=32 --kv-heads=8 --seq-q=1 --seq-kv=32768 --head-dim=128"),
    ("decode f16 D128 Skv128k", "--dtype=f16 --batch=1 --heads=32 --kv-heads=8 --seq-q=1 --seq-kv=131072 --head-dim=128"),
]
CELLS = [(v, name, flags) for v in args.variants.split(",") if v
         for name, flags in SHAPES]
if args.cells:
    CELLS = [c for c in CELLS
             if any(w in f"{c[0]} {c[1]}" for w in args.cells.split(","))]
os.makedirs(args.out, exist_ok=True)
LOG = open(os.path.join(args.out, "run.log"), "a")


def run(which, variant, flags):
    env = dict(os.environ)
    env["ATTN_VULKAN_VARIANT"] = variant
    exe = args.new
    if which == "old":
        exe = args.old
        if args.old_lib:
            env["LD_LIBRARY_PATH"] = args.old_lib + ":" + env.get("LD_LIBRARY_PATH", "")
        env.update(OLD_ENV)
    cmd = [exe, "--target=vulkan", "--static-shapes", "--dump-ir", "--json",
           f"--bench={args.bench}"] + flags.split() + args.flags.split()
    if which == "old":
        cmd += args.old_flags.split()
    LOG.write(f"$ [{which}] ATTN_VULKAN_VARIANT={variant} {' '.join(cmd)}\n")
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=150)
    except subprocess.TimeoutExpired:
        LOG.write("  timeout\n")
        return None, "timeout"
    js = [l for l in p.stdout.splitlines() if l.startswith("{")]
    kern = " | ".join(l[3:] for l in p.stdout.splitlines() if l.startswith("// vulkan"))
    if p.returncode != 0 or not js:
        msg = (p.stderr.strip() or p.stdout.strip())[-300:]
        LOG.write(f"  failed: {msg}\n")
        return None, msg
    r = json.loads(js[-1])
    LOG.write(f"  {kern}\n  {js[-1]}\n")
    return r.get("device_b2b_ms") or r.get("device_ms"), kern


rows = []
for variant, name, flags in CELLS:
    if time.time() - T0 > args.budget_s:
        rows.append(dict(variant=variant, cell=name, status="skipped: budget"))
        continue
    ms = {"new": [], "old": []}
    kern = {}
    err = ""
    for r in range(args.rounds):
        order = ("new", "old") if r % 2 == 0 else ("old", "new")
        for which in order:
            t, k = run(which, variant, flags)
            if t is None:
                err = f"{which}: {k}"
                break
            ms[which].append(t)
            kern[which] = k
        if err:
            break
    row = dict(variant=variant, cell=name)
    if err:
        row["status"] = "FAIL " + err
    else:
        ratios = [o / n for o, n in zip(ms["old"], ms["new"])]
        row.update(status="ok", new_ms=statistics.median(ms["new"]),
                   old_ms=statistics.median(ms["old"]),
                   new_over_old=statistics.median(ratios),
                   lo=min(ratios), hi=max(ratios),
                   new_kernel=kern.get("new", ""), old_kernel=kern.get("old", ""))
    rows.append(row)
    print(json.dumps(row), flush=True)

cols = ["variant", "cell", "status", "old_ms", "new_ms", "new_over_old", "lo",
        "hi", "new_kernel", "old_kernel"]
with open(os.path.join(args.out, "ab.csv"), "w") as f:
    f.write(",".join(cols) + "\n")
    for r in rows:
        f.write(",".join('"%s"' % str(r.get(c, "")).replace('"', "'") for c in cols) + "\n")
with open(os.path.join(args.out, "ab.md"), "w") as f:
    f.write("# Vulkan A/B: this compiler (new) against "
            + (f"itself with {' '.join(args.old_env + [args.old_flags]).strip()} (old)"
               if (OLD_ENV or args.old_flags) and args.old == args.new
               else "the other (old)") + ", same device, same call\n\n")
    f.write("| variant | cell | old ms | new ms | new/old | range | new kernel |\n")
    f.write("| --- | --- | --- | --- | --- | --- | --- |\n")
    for r in rows:
        if r["status"] != "ok":
            f.write(f"| {r['variant']} | {r['cell']} | {r['status']} | | | | |\n")
            continue
        f.write(f"| {r['variant']} | {r['cell']} | {r['old_ms']:.2f} | {r['new_ms']:.2f} | "
                f"{r['new_over_old']:.3f} | {r['lo']:.3f}-{r['hi']:.3f} | {r['new_kernel']} |\n")
    for v in dict.fromkeys(r["variant"] for r in rows):
        ok = [r["new_over_old"] for r in rows if r["variant"] == v and r["status"] == "ok"]
        if ok:
            f.write(f"\n{v}: {len(ok)} cells, new/old median {statistics.median(ok):.3f}, "
                    f"lowest {min(ok):.3f}\n")
print(open(os.path.join(args.out, "ab.md")).read())
sys.exit(0 if all(r["status"] == "ok" for r in rows) else 1)
