#!/usr/bin/env python3
"""attn.mha on the vulkan target beside the cuda target, on one GPU.

Run by bench/vulkan/device_mha.sh on the GPU machine (the environment set
up there); also runs anywhere attn-run and a Vulkan device are (lavapipe
with small --timings).

1. Checks: `attn-run --mha --target=vulkan --check` (float64 layer
   reference, fresh random inputs, poisoned output) on each of --variants
   (ATTN_VULKAN_VARIANT; "auto" is the device's default) over the check
   configurations: GQA, biases, causal, fused QKV, cross-attention, f16,
   bf16 and f32.
2. Timings: for each --timings cell (dtype:E:S, heads E/128, causal off,
   no biases), the vulkan layer (its default variant; "vulkan" with the
   projections' 16 x 16 workgroup tiles, "vulkan-simple" with
   ATTN_VULKAN_LAYER_TILES=0, an invocation per output) and the cuda layer
   (attn's kernel, cuBLASLt projections) alternately over --rounds rounds,
   each `attn-run --bench=N --json`; device_ms is the layers' device time
   (vulkan: GPU timestamps around the dispatches, no staging; cuda: CUDA
   events around the launch sequence). The ratio vulkan/cuda is the
   median over the rounds.

Writes mha-checks.csv, mha-timings.csv and mha.md under --out. Exit
status 1 when a check failed or refused (a refusal names why), else 0.
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import time

CHECKS = [
    # (label, flags)
    ("self f32", "--embed=64 --heads=4 --seq-q=20"),
    ("gqa bias causal f16 B2", "--embed=256 --heads=4 --kv-heads=2 --batch=2 "
     "--seq-q=130 --bias --causal --dtype=f16"),
    ("fused-qkv bias bf16", "--embed=256 --heads=2 --fused-qkv --bias "
     "--dtype=bf16 --seq-q=96"),
    ("cross gqa causal f16", "--embed=128 --kv-embed=192 --seq-q=40 "
     "--seq-kv=300 --heads=2 --kv-heads=1 --causal --bias --dtype=f16"),
    ("E1024 S512 f16", "--embed=1024 --heads=8 --seq-q=512 --dtype=f16 --bias"),
    ("E1024 S512 bf16 causal", "--embed=1024 --heads=8 --seq-q=512 "
     "--dtype=bf16 --causal"),
]


def run(cmd, env=None, timeout=600):
    t = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env,
                       timeout=timeout)
    return p, time.time() - t


def last_json(text):
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--attn-run", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--variants", default="auto,portable")
    ap.add_argument("--timings", default="f16:1024:512,f16:2048:2048,"
                    "f16:4096:2048,bf16:4096:8192")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--bench", type=int, default=5)
    ap.add_argument("--no-cuda", action="store_true")
    ap.add_argument("--budget-s", type=float, default=480)
    a = ap.parse_args()
    t0 = time.time()
    os.makedirs(a.out, exist_ok=True)
    failed = []

    checks = []
    for variant in a.variants.split(","):
        env = dict(os.environ)
        if variant != "auto":
            env["ATTN_VULKAN_VARIANT"] = variant
        else:
            env.pop("ATTN_VULKAN_VARIANT", None)
        for label, flags in CHECKS:
            cmd = [a.attn_run, "--mha", "--target=vulkan", "--check",
                   "--json", "--dump-ir"] + flags.split()
            # --dump-ir prints the variant line; the JSON follows.
            p, secs = run(cmd, env)
            js = last_json(p.stdout)
            chosen = ""
            for line in p.stdout.splitlines():
                if line.startswith("// vulkan variant:"):
                    chosen = line[len("// vulkan variant:"):].strip()
                    break
            ok = p.returncode == 0 and js is not None and js.get("ok") is True
            row = {
                "variant": variant, "case": label, "flags": flags,
                "ok": ok, "chosen": chosen.split(";")[0],
                "rel_l2_err": js.get("rel_l2_err") if js else "",
                "rel_l2_tol": js.get("rel_l2_tol") if js else "",
                "seconds": round(secs, 2),
                "error": "" if ok else (p.stderr.strip().splitlines() or
                                        ["exit %d" % p.returncode])[-1][:300],
            }
            checks.append(row)
            print("check %-14s %-26s %s %s" % (variant, label,
                                              "ok" if ok else "FAILED",
                                              row["error"]), flush=True)
            if not ok:
                failed.append("%s %s" % (variant, label))
    with open(os.path.join(a.out, "mha-checks.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(checks[0].keys()))
        w.writeheader()
        w.writerows(checks)

    timings = []
    targets = ["vulkan", "vulkan-simple"] + ([] if a.no_cuda else ["cuda"])
    for cell in a.timings.split(","):
        if time.time() - t0 > a.budget_s:
            print("budget: skipping", cell, flush=True)
            continue
        dtype, e, s = cell.split(":")
        flags = ["--mha", "--embed=" + e, "--heads=%d" % (int(e) // 128),
                 "--seq-q=" + s, "--dtype=" + dtype, "--bench=%d" % a.bench,
                 "--json"]
        per = {t: [] for t in targets}
        host = {t: [] for t in targets}
        errors = {}
        for r in range(a.rounds):
            order = targets if r % 2 == 0 else list(reversed(targets))
            for t in order:
                env = dict(os.environ)
                env.pop("ATTN_VULKAN_VARIANT", None)
                if t == "vulkan-simple":
                    env["ATTN_VULKAN_LAYER_TILES"] = "0"
                p, _ = run([a.attn_run, "--target=" + t.split("-")[0]] +
                           flags, env)
                js = last_json(p.stdout)
                if p.returncode != 0 or not js:
                    errors[t] = (p.stderr.strip().splitlines() or
                                 ["exit %d" % p.returncode])[-1][:300]
                    continue
                if js.get("device_ms") is not None:
                    per[t].append(js["device_ms"])
                host[t].append(js["median_ms"])
        row = {"dtype": dtype, "embed": e, "seq": s, "heads": int(e) // 128}
        for t in targets:
            row[t + "_device_ms"] = (round(statistics.median(per[t]), 4)
                                     if per[t] else "")
            row[t + "_host_ms"] = (round(statistics.median(host[t]), 4)
                                   if host[t] else "")
            row[t + "_error"] = errors.get(t, "")
        row["vulkan_over_cuda"] = ""
        if "cuda" in targets and per["vulkan"] and per["cuda"]:
            row["vulkan_over_cuda"] = round(
                statistics.median(per["vulkan"]) /
                statistics.median(per["cuda"]), 3)
        row["simple_over_tiled"] = ""
        if per["vulkan"] and per["vulkan-simple"]:
            row["simple_over_tiled"] = round(
                statistics.median(per["vulkan-simple"]) /
                statistics.median(per["vulkan"]), 3)
        timings.append(row)
        print("time", row, flush=True)
    if timings:
        with open(os.path.join(a.out, "mha-timings.csv"), "w",
                  newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(timings[0].keys()))
            w.writeheader()
            w.writerows(timings)

    with open(os.path.join(a.out, "mha.md"), "w") as f:
        f.write("# attn.mha on vulkan\n\n## Checks (float64 reference)\n\n"
                "| variant | case | chosen | ok | rel_l2_err | tol |\n"
                "|---|---|---|---|---|---|\n")
        for c in checks:
            f.write("| %s | %s | %s | %s | %s | %s |\n" % (
                c["variant"], c["case"], c["chosen"],
                "ok" if c["ok"] else "FAILED: " + c["error"],
                c["rel_l2_err"], c["rel_l2_tol"]))
        if timings:
            f.write("\n## Device time, ms (median over %d rounds of the "
                    "median of %d runs)\n\n| dtype | E | S | heads | vulkan "
                    "| vulkan-simple | cuda | vulkan/cuda | simple/tiled |\n"
                    "|---|---|---|---|---|---|---|---|---|\n"
                    % (a.rounds, a.bench))
            for t in timings:
                f.write("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n" % (
                    t["dtype"], t["embed"], t["seq"], t["heads"],
                    t["vulkan_device_ms"] or t["vulkan_error"],
                    t["vulkan-simple_device_ms"] or t["vulkan-simple_error"],
                    t.get("cuda_device_ms", "") or t.get("cuda_error", ""),
                    t["vulkan_over_cuda"], t["simple_over_tiled"]))
    if failed:
        print("FAILED:", ", ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
