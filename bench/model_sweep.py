#!/usr/bin/python3
"""Validates the performance model (lib/Model, docs/PerformanceModel.md).

Three modes, each writing cells.csv, ranking.csv and README.md to --out:

  bench/model_sweep.py --target cpu          # here: attn-run --model --json
  bench/model_sweep.py --target cuda         # on the GPU machine (a carry
                                             # with attn-run, bench/README.md)
  bench/model_sweep.py --offline-h100        # committed H100 timings against
                                             # attn-run --model-only
  bench/model_sweep.py --offline-cpu         # the committed quiet-machine cpu
                                             # run (cpu-vectorize-tiles-2026-11-27)
  bench/model_sweep.py --measured F.csv      # bench/model/live_cuda.py's timings
                                             # (the GPU machine, one process)
                                             # against attn-run --model-only

Per cell: the measured time (device time where the target has one, else the
host median), the prediction, its error (predicted / measured - 1) and the
bottleneck the model names; the summary gives the median and worst |error|
per kind (prefill, decode). Ranking groups run the same problem with several
geometries (block sizes, split counts) and report whether the model orders
them as the measurement does (pairwise concordance, the same best pick, and
the measured loss of the model's pick against the best: its regret).
"""
import argparse
import csv
import datetime
import itertools
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def attn_run_path(args):
    if args.attn_run:
        return args.attn_run
    for p in (os.path.join(ROOT, "build", "bin", "attn-run"),):
        if os.path.exists(p):
            return p
    sys.exit("model_sweep: no attn-run (build it, or pass --attn-run)")


def run_attn(args, flags, timeout=600):
    cmd = [attn_run_path(args)] + flags + ["--json"]
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    try:
        js = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise RuntimeError("attn-run failed (%d): %s %s" %
                           (r.returncode, " ".join(cmd), r.stderr.strip()[-500:]))
    js["_wall_s"] = time.time() - t0
    js["_cmd"] = " ".join(cmd[1:])
    return js


def shape_flags(c):
    f = ["--batch=%d" % c["B"], "--heads=%d" % c["Hq"], "--kv-heads=%d" % c["Hkv"],
         "--seq-q=%d" % c["Sq"], "--seq-kv=%d" % c["Skv"], "--head-dim=%d" % c["D"],
         "--dtype=%s" % c["dtype"]]
    if c.get("causal"):
        f.append("--causal")
    for k in ("block_q", "block_kv", "kv_splits"):
        if c.get(k):
            f.append("--%s=%d" % (k.replace("_", "-"), c[k]))
    return f


# -- The matrices. The cpu ones are small (2 shared cores: a few minutes);
# -- the cuda ones are the benchmark matrices of issue 21.

def cpu_cells(quick):
    cells = []
    sizes = [512, 1024, 2048] if quick else [512, 1024, 2048, 4096]
    for s, d, causal in itertools.product(sizes, [64, 128, 256], [False, True]):
        # about the same work per cell: 2 heads at 512, 1 above
        cells.append(dict(kind="prefill", dtype="f32", B=1, Hq=2 if s <= 512 else 1,
                          Hkv=2 if s <= 512 else 1, Sq=s, Skv=s, D=d, causal=causal))
    for sq, skv in itertools.product([1, 4, 16], [4096, 16384, 65536]):
        cells.append(dict(kind="decode", dtype="f32", B=1, Hq=8, Hkv=2, Sq=sq,
                          Skv=skv, D=128, causal=False))
    return cells


def cpu_rank_groups():
    """Candidates per problem; `rule` marks what the cpu target picks by its
    fixed rules (64 x 64 tiles; mlir::attn::chooseKvSplits)."""
    g = []
    base = dict(kind="prefill", dtype="f32", B=1, Hq=1, Hkv=1, Sq=2048, Skv=2048,
                D=128, causal=False)
    g.append(("cpu prefill S=2048 D=128: block_q x block_kv",
              [dict(base, block_q=bq, block_kv=bk, rule=(bq, bk) == (64, 64)) for bq, bk in
               [(16, 64), (32, 32), (64, 64), (128, 64), (64, 128), (128, 128)]]))
    dec = dict(kind="decode", dtype="f32", B=1, Hq=1, Hkv=1, Sq=1, Skv=65536,
               D=128, causal=False)
    # one tile on two cores: the rule splits in 2
    g.append(("cpu decode B=1 H=1 Skv=64k: kv_splits",
              [dict(dec, kv_splits=n, rule=n == 2) for n in (1, 2, 4, 8)]))
    few = dict(kind="prefill", dtype="f32", B=1, Hq=3, Hkv=3, Sq=64, Skv=8192,
               D=128, causal=False)
    # three tiles on two cores: the rule does not split
    g.append(("cpu Sq=64 H=3 Skv=8k (3 tiles, 2 cores): kv_splits",
              [dict(few, kv_splits=n, rule=n == 1) for n in (1, 2, 4)]))
    # five tiles on two cores (three rounds of whole tiles, or five of
    # halves): the rule does not split
    g.append(("cpu Sq=64 H=5 Skv=8k (5 tiles, 2 cores): kv_splits",
              [dict(few, Hq=5, Hkv=5, kv_splits=n, rule=n == 1) for n in (1, 2, 4)]))
    # GQA decode, a group's 4 heads packed: 8 tiles on two cores
    gqa = dict(kind="decode", dtype="f32", B=1, Hq=32, Hkv=8, Sq=1, Skv=32768,
               D=128, causal=False)
    g.append(("cpu decode GQA 32:8 Skv=32k (8 packed tiles): kv_splits",
              [dict(gqa, kv_splits=n, rule=n == 1) for n in (1, 2, 4)]))
    return g


def cuda_cells(quick):
    cells = []
    sizes = [512, 1024, 2048, 4096, 8192, 16384]
    for s, d, causal, dt in itertools.product(sizes, [64, 128, 256], [False, True],
                                              ["f16", "bf16"]):
        h = {64: 32, 128: 16, 256: 8}[d]
        cells.append(dict(kind="prefill", dtype=dt, B=max(1, 16384 // s), Hq=h, Hkv=h,
                          Sq=s, Skv=s, D=d, causal=causal))
    for sq, skv, b in itertools.product([1, 2, 4, 8, 16], [4096, 32768, 131072], [1, 8]):
        cells.append(dict(kind="decode", dtype="bf16", B=b, Hq=32, Hkv=8, Sq=sq,
                          Skv=skv, D=128, causal=False))
    if quick:
        cells = cells[::3]
    return cells


def cuda_rank_groups():
    dec = dict(kind="decode", dtype="bf16", B=1, Hq=32, Hkv=8, Sq=1, Skv=131072,
               D=128, causal=False)
    # the runtime's rule (cuda::chooseKvSplits) picks 33 here: floor(264 / 8 packed tiles)
    g = [("cuda decode B=1 Skv=128k: kv_splits",
          [dict(dec, kv_splits=n) for n in (2, 4, 8, 16, 33, 64)])]
    g[0][1][4]["rule"] = True
    g.append(("cuda decode B=8 Skv=32k Sq=4: kv_splits",
              [dict(dec, B=8, Skv=32768, Sq=4, kv_splits=n, rule=n == 1)
               for n in (1, 2, 4, 8)]))  # 256 tiles fill the GPU: no split
    # Where the rule's count is not written here: the automatic member
    # (no kv_splits; labelled with the count the runtime ran) is the rule.
    auto = lambda c, ns: [dict(c, rule=True)] + [dict(c, kv_splits=n) for n in ns]
    g.append(("cuda decode B=1 Skv=32k: kv_splits",
              auto(dict(dec, Skv=32768), (2, 4, 8, 16, 32, 64))))
    g.append(("cuda decode B=4 Skv=16k: kv_splits",
              auto(dict(dec, B=4, Skv=16384), (1, 2, 4, 8, 16))))
    g.append(("cuda prefill B=1 H=8 Sq=256 Skv=32k D=128: kv_splits",
              auto(dict(kind="prefill", dtype="bf16", B=1, Hq=8, Hkv=8, Sq=256,
                        Skv=32768, D=128, causal=False), (1, 2, 4, 8, 16))))
    return g


# The cpu table's FMA rate (lib/Model/PerfModel.cpp, makeCpu): a probe
# measuring less means other processes hold the cores.
CPU_TABLE_FMA = 195.0
PROBE = None


def probe_fma():
    """The FMA rate the cores give now (bench/model/cpu_peaks.c fma), or None."""
    global PROBE
    if PROBE is None:
        PROBE = ""
        exe = "/tmp/model_sweep_cpu_peaks.%d" % os.getpid()
        src = os.path.join(ROOT, "bench", "model", "cpu_peaks.c")
        if subprocess.run(["cc", "-O2", "-mavx512f", "-mfma", "-fopenmp", src, "-o", exe],
                          capture_output=True).returncode == 0:
            PROBE = exe
    if not PROBE:
        return None
    r = subprocess.run([PROBE, "fma"], capture_output=True, text=True)
    try:
        return json.loads(r.stdout)["fma_f32_gflops"]
    except ValueError:
        return None


def measure(args, c):
    flags = shape_flags(c) + ["--target=%s" % args.target, "--model",
                              "--bench=%d" % args.bench]
    before = probe_fma() if args.target == "cpu" else None
    js = run_attn(args, flags)
    after = probe_fma() if args.target == "cpu" else None
    m = js.get("model") or {}
    meas = js.get("device_ms")
    if meas is None:
        meas = js.get("median_ms")
    share = None
    if before and after:
        # the share of the cores this run got, from probes around it
        share = min(1.0, (before + after) / 2 / CPU_TABLE_FMA)
    return dict(c, measured_ms=meas, predicted_ms=m.get("ms"),
                core_share=share,
                predicted_share_ms=m.get("ms") / share if share and m.get("ms") else None,
                model_kv_splits=m.get("best_kv_splits"),
                bottleneck=m.get("bottleneck"), model_ok=m.get("ok"),
                model_message=m.get("message", ""),
                kernel_kv_splits=js.get("kv_splits"),
                block_q_used=js.get("block_q"), block_kv_used=js.get("block_kv"),
                terms=json.dumps(m.get("terms_ms", {})), wall_s=round(js["_wall_s"], 2),
                load=open("/proc/loadavg").read().split()[0]
                if os.path.exists("/proc/loadavg") else "")


def predict_only(args, c, target="cuda", device="h100", geometry=None):
    flags = shape_flags(c) + ["--target=%s" % target, "--model-only",
                              "--model-device=%s" % device]
    if geometry:
        flags.append("--model-geometry=" + geometry)
    js = run_attn(args, flags)
    return js["model"]


# -- Offline: committed H100 timings (one call at a time, CUDA events).

H100_RUN = "bench/results/decode-alternatives-2026-11-26"


def prediction_fields(m):
    """A cell's columns from attn-run's `model` object (--model-only)."""
    return dict(predicted_ms=m.get("ms"), bottleneck=m.get("bottleneck"),
                model_ok=m.get("ok"), model_message=m.get("message", ""),
                terms=json.dumps(m.get("terms_ms", {})))


def offline_cells(args):
    cells = []
    base = os.path.join(ROOT, H100_RUN)
    for r in csv.DictReader(open(os.path.join(base, "call1", "ab.csv"))):
        if r["kind"] != "prefill" or r["error"]:
            continue
        dt = {"bfloat16": "bf16", "float16": "f16"}[r["dtype"]]
        s = int(r["S"])
        c = dict(kind="prefill-dropout" if float(r["dropout"]) > 0 else "prefill",
                 dtype=dt, B=int(r["B"]), Hq=int(r["H"]), Hkv=int(r["H"]), Sq=s, Skv=s,
                 D=int(r["D"]), causal=r["causal"] == "True", dropout=float(r["dropout"]),
                 source="call1/ab.csv " + r["kernel"], measured_ms=float(r["new_ms"]))
        cells.append(c)
    for r in csv.DictReader(open(os.path.join(base, "call1", "decode.csv"))):
        if "_x_" in r["kernel"]:
            continue
        dt = "bf16" if "bf16" in r["kernel"] else "f16"
        cells.append(dict(kind="decode", dtype=dt, B=int(r["B"]), Hq=int(r["Hq"]),
                          Hkv=int(r["Hkv"]), Sq=1, Skv=int(r["Skv"]), D=int(r["D"]),
                          causal=False, source="call1/decode.csv " + r["kernel"],
                          measured_ms=float(r["attn_ms"])))
    for call in ("call1", "call2"):
        for r in csv.DictReader(open(os.path.join(base, call, "sqdecode.csv"))):
            if "_x_" in r["impl"] or r["impl"] == "flash" or r["error"]:
                continue
            cells.append(dict(kind="decode", dtype=r["dtype"], B=int(r["B"]),
                              Hq=int(r["Hq"]), Hkv=int(r["Hkv"]), Sq=int(r["Sq"]),
                              Skv=int(r["Skv"]), D=int(r["D"]),
                              causal=r.get("causal", "False") == "True",
                              source="%s/sqdecode.csv %s" % (call, r["impl"]),
                              measured_ms=float(r["ms"])))
    for c in cells:
        flags_c = dict(c)
        m = predict_only(args, flags_c) if not c.get("dropout") else \
            predict_dropout(args, flags_c)
        c.update(prediction_fields(m))
    return cells


CPU_RUN = "bench/results/cpu-vectorize-tiles-2026-11-27"


def offline_cpu_cells(args):
    """bench/cpu_vs_blas.py's attn rows (libattn's cpu kernels through the C
    API, B = 1, Hq = Hkv = heads, the best of its rounds) on a quiet VM."""
    cells = []
    for r in csv.DictReader(open(os.path.join(ROOT, CPU_RUN, "results.csv"))):
        s, h = int(r["s"]), int(r["heads"])
        c = dict(kind="prefill", dtype=r["dtype"], B=1, Hq=h, Hkv=h, Sq=s, Skv=s,
                 D=int(r["d"]), causal=r["causal"] == "1",
                 source=CPU_RUN + "/results.csv", measured_ms=float(r["attn_ms"]))
        m = predict_only(args, c, target="cpu", device="cpu")
        c.update(prediction_fields(m))
        cells.append(c)
    return cells


def measured_cells(args):
    """bench/model/live_cuda.py's measured.csv: the cuda matrix timed on the
    GPU machine in one process; predicted here for the table of its GPU."""
    cells = []
    for r in csv.DictReader(open(args.measured)):
        if not r["measured_ms"] or r["ok"] != "True":
            print("model_sweep: skipping %s (%s)" % (r, r.get("max_err")), file=sys.stderr)
            continue
        c = dict(kind=r["kind"], dtype=r["dtype"], causal=r["causal"] == "True",
                 measured_ms=float(r["measured_ms"]), source=r["gpu"])
        for k in ("B", "Hq", "Hkv", "Sq", "Skv", "D"):
            c[k] = int(r[k])
        device = "h200" if "H200" in r["gpu"] else "h100"
        m = predict_only(args, c, device=device)
        c.update(prediction_fields(m),
                 model_kv_splits=m.get("best_kv_splits"),
                 kernel_kv_splits=(m.get("geometry") or {}).get("kv_splits"))
        cells.append(c)
    return cells


def rerank_groups(args):
    """A committed ranking.csv of --target cuda (measured candidates)
    predicted again with this model: each member with the split count it
    ran (an automatic member: the count the runtime chose then), the rule
    flag from cuda_rank_groups' definitions of the same name."""
    defs = dict(cuda_rank_groups())
    groups = {}
    for r in csv.DictReader(open(args.rerank)):
        ran = int(r["kv_splits"] or r["kernel_kv_splits"])
        c = dict(kind=r["kind"], dtype=r["dtype"], causal=r["causal"] == "True",
                 measured_ms=float(r["measured_ms"]), kv_splits=ran)
        for k in ("B", "Hq", "Hkv", "Sq", "Skv", "D"):
            c[k] = int(r[k])
        rule = [d for d in defs.get(r["group"], []) if d.get("rule")]
        c["rule"] = bool(rule) and (rule[0].get("kv_splits") == ran
                                    if rule[0].get("kv_splits") else not r["kv_splits"])
        m = predict_only(args, c)
        c.update(predicted_ms=m.get("ms"), bottleneck=m.get("bottleneck"),
                 kernel_kv_splits=ran, terms=json.dumps(m.get("terms_ms", {})))
        groups.setdefault(r["group"], []).append(c)
    return list(groups.items())


def predict_dropout(args, c):
    flags = shape_flags(c) + ["--target=cuda", "--model-only", "--model-device=h100",
                              "--dropout=%g" % c["dropout"]]
    return run_attn(args, flags)["model"]


# The D = 128 f16 non-causal geometry sweeps of cuda-h100-2026-11-22i
# (README table: speed as a ratio to flash in the same run, so within a
# sweep and S the time is proportional to 1 / ratio). 16k tokens, H = 16.
H100_SWEEPS = [
    ("22i sweep 1", [("warps=8,row_tiles=1,block_kv=64", (0.852, 0.894, 0.961)),
                     ("warps=4,row_tiles=2,block_kv=32", (0.853, 0.903, 0.950)),
                     ("warps=4,row_tiles=2,block_kv=16", (0.776, 0.818, 0.853)),
                     ("warps=8,row_tiles=1,block_kv=32", (0.818, 0.838, 0.902))]),
    ("22i sweep 2", [("warps=8,row_tiles=1,block_kv=64,stages=2", (0.837, 0.910, 0.878)),
                     ("warps=4,row_tiles=1,block_kv=64,stages=2", (0.945, 0.887, 0.876)),
                     ("warps=4,row_tiles=1,block_kv=64,stages=3", (0.788, 0.824, 0.809)),
                     ("warps=8,row_tiles=1,block_kv=64,stages=3", (0.773, 0.787, 0.803))]),
    ("22i sweep 4", [("warps=8,row_tiles=1,block_kv=64", (0.834, 0.909, 0.942)),
                     ("warps=4,row_tiles=2,block_kv=32", (0.895, 0.953, 0.983)),
                     ("warps=4,row_tiles=2,block_kv=64", (0.906, 0.918, 0.999)),
                     ("warps=8,row_tiles=2,block_kv=64", (0.856, 0.925, 0.965))]),
]


def offline_rank_groups(args):
    groups = []
    for name, rows in H100_SWEEPS:
        for si, s in enumerate((4096, 8192, 16384)):
            c = dict(kind="prefill", dtype="f16", B=16384 // s, Hq=16, Hkv=16, Sq=s,
                     Skv=s, D=128, causal=False)
            members = []
            for geo, ratios in rows:
                m = predict_only(args, c, geometry=geo + ",stages=2"
                                 if "stages" not in geo else geo)
                # the first row of each sweep is the compiler's default then
                members.append(dict(c, geometry=geo, measured_ms=1.0 / ratios[si],
                                    rule=not members,
                                    predicted_ms=m.get("ms"),
                                    bottleneck=m.get("bottleneck")))
            groups.append(("%s S=%d (1/ratio to flash)" % (name, s), members))
    return groups


# -- Summaries.

def errors(cells):
    return [c["predicted_ms"] / c["measured_ms"] - 1 for c in cells
            if c.get("predicted_ms") and c.get("measured_ms")]


def summarize(cells):
    lines = ["| kind | cells | median abs error | worst abs error | mean signed |",
             "| --- | --- | --- | --- | --- |"]
    kinds = sorted(set(c["kind"] for c in cells)) + ["all"]
    out = {}
    for k in kinds:
        e = errors([c for c in cells if k == "all" or c["kind"] == k])
        if not e:
            continue
        a = [abs(x) for x in e]
        out[k] = (len(e), statistics.median(a), max(a), statistics.mean(e))
        lines.append("| %s | %d | %.1f%% | %.1f%% | %+.1f%% |" %
                     (k, len(e), 100 * out[k][1], 100 * out[k][2], 100 * out[k][3]))
    return lines, out


def rank(groups):
    lines = ["| group | candidates | concordant pairs | model's pick | rule's pick | measured best "
             "| model's regret | rule's regret |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    total = agree = top = 0
    regrets = []
    for name, members in groups:
        ms = [m for m in members if m.get("predicted_ms") and m.get("measured_ms")]
        if len(ms) < 2:
            continue
        pairs = conc = 0
        for a, b in itertools.combinations(ms, 2):
            pairs += 1
            if (a["predicted_ms"] - b["predicted_ms"]) * (a["measured_ms"] - b["measured_ms"]) > 0:
                conc += 1
        label = lambda m: m.get("geometry") or ",".join(
            "%s=%s" % (k, m[k]) for k in ("block_q", "block_kv", "kv_splits") if m.get(k)) or (
            "auto (kv_splits=%s)" % m.get("kernel_kv_splits"))
        pick = min(ms, key=lambda m: m["predicted_ms"])
        best = min(ms, key=lambda m: m["measured_ms"])
        rule = [m for m in ms if m.get("rule")]
        regret = pick["measured_ms"] / best["measured_ms"] - 1
        regrets.append(regret)
        total += pairs
        agree += conc
        top += pick is best
        lines.append("| %s | %d | %d/%d | %s | %s | %s | %.1f%% | %s |" % (
            name, len(ms), conc, pairs, label(pick), label(rule[0]) if rule else "-",
            label(best), 100 * regret,
            "%.1f%%" % (100 * (rule[0]["measured_ms"] / best["measured_ms"] - 1))
            if rule else "-"))
    if regrets:
        lines.append("")
        lines.append("Overall: %d/%d pairs ordered as measured (%.0f%%), the best pick in "
                     "%d of %d groups, median regret %.1f%%." %
                     (agree, total, 100.0 * agree / max(1, total), top, len(regrets),
                      100 * statistics.median(regrets)))
    return lines


def write(out, cells, groups, header):
    os.makedirs(out, exist_ok=True)
    keys = ["kind", "dtype", "B", "Hq", "Hkv", "Sq", "Skv", "D", "causal", "block_q",
            "block_kv", "kv_splits", "geometry", "measured_ms", "predicted_ms", "error",
            "bottleneck", "model_ok", "model_message", "kernel_kv_splits", "source",
            "terms", "wall_s", "load", "model_kv_splits", "core_share",
            "predicted_share_ms", "rule", "sweep_ms"]
    with open(os.path.join(out, "cells.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
        w.writeheader()
        for c in cells:
            if c.get("predicted_ms") and c.get("measured_ms"):
                c["error"] = "%.4f" % (c["predicted_ms"] / c["measured_ms"] - 1)
            w.writerow(c)
    with open(os.path.join(out, "ranking.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["group"] + keys, extrasaction="ignore")
        w.writeheader()
        for name, members in groups:
            for m in members:
                w.writerow(dict(m, group=name))
    lines, summary = summarize(cells)
    text = header + ["", "## Prediction error (predicted / measured - 1)", ""] + lines
    scaled = [dict(c, predicted_ms=c["predicted_share_ms"]) for c in cells
              if c.get("predicted_share_ms")]
    if scaled:
        text += ["", "The same with the prediction divided by the share of the cores the "
                 "run got (`core_share`: the FMA rate of `cpu_peaks fma` around each cell "
                 "over the table's 195 GFLOP/s):", ""] + summarize(scaled)[0]
    text += ["", "## Ranking of candidate geometries", ""] + rank(groups)
    bn = {}
    for c in cells:
        bn[c.get("bottleneck")] = bn.get(c.get("bottleneck"), 0) + 1
    text += ["", "Bottlenecks named: " + ", ".join("%s %d" % kv for kv in sorted(
        bn.items(), key=lambda kv: -kv[1]))]
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("\n".join(text) + "\n")
    print("\n".join(text))
    return summary


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--offline-h100", action="store_true",
                    help="committed H100 timings against attn-run --model-only")
    ap.add_argument("--offline-cpu", action="store_true",
                    help="the committed quiet-machine cpu run against attn-run --model-only")
    ap.add_argument("--measured", help="bench/model/live_cuda.py's measured.csv "
                    "against attn-run --model-only")
    ap.add_argument("--rerank", help="a committed cuda ranking.csv, predicted again")
    ap.add_argument("--attn-run", help="attn-run to use (default build/bin/attn-run)")
    ap.add_argument("--bench", type=int, default=3, help="timed runs per cell")
    ap.add_argument("--sweeps", type=int, default=1,
                    help="measure the cells this many times over, each keeping "
                         "its fastest sweep (live modes)")
    ap.add_argument("--full", action="store_true", help="the larger matrix")
    ap.add_argument("--rounds", type=int, default=2,
                    help="alternated rounds per ranking group (the fastest counts)")
    ap.add_argument("--no-rank", action="store_true")
    ap.add_argument("--rank-only", action="store_true",
                    help="only the ranking groups (no validation cells)")
    ap.add_argument("--groups", default="",
                    help="only the ranking groups whose name contains this")
    ap.add_argument("--out", help="results folder (default bench/results/model-...)")
    args = ap.parse_args()
    date = datetime.date.today().isoformat()
    header = ["# Performance model against measurement (bench/model_sweep.py)", ""]
    if args.measured:
        out = args.out or os.path.dirname(os.path.abspath(args.measured))
        cells = measured_cells(args)
        groups = rerank_groups(args) if args.rerank else []
        header += ["Measured: `%s` (bench/model/live_cuda.py on %s: one process, one "
                   "dynamic-shape kernel per spec, L2 flushed before each launch, CUDA "
                   "events, median). Predicted: `attn-run --model-only --target=cuda` "
                   "with the table of that GPU." % (
                       os.path.relpath(args.measured, ROOT),
                       ", ".join(sorted(set(c["source"] for c in cells))))]
        if args.rerank:
            header += ["", "Ranking: `%s` (measured then, each candidate with the split "
                       "count it ran), predicted again with this model." %
                       os.path.relpath(args.rerank, ROOT)]
    elif args.offline_cpu:
        out = args.out or os.path.join(ROOT, "bench", "results", "model-cpu-offline-" + date)
        cells = offline_cpu_cells(args)
        groups = []
        header += ["Measured: `%s/results.csv` (attn_ms: libattn's cpu kernels, the 2-core "
                   "VM with nothing else of ours running, 2026-11-27). Predicted: "
                   "`attn-run --model-only --target=cpu`." % CPU_RUN]
    elif args.offline_h100:
        out = args.out or os.path.join(ROOT, "bench", "results", "model-h100-offline-" + date)
        cells = offline_cells(args)
        groups = [] if args.no_rank else offline_rank_groups(args)
        header += ["Measured: `%s` (NVIDIA H100 80GB HBM3, one call at a time, CUDA "
                   "events; prefill `call1/ab.csv` new_ms, decode `call1/decode.csv` "
                   "attn_ms, `call1,call2/sqdecode.csv` ms). Ranking: the D = 128 "
                   "geometry sweeps of `cuda-h100-2026-11-22i` (README table). "
                   "Predicted: `attn-run --model-only --target=cuda "
                   "--model-device=h100`." % H100_RUN]
    else:
        out = args.out or os.path.join(ROOT, "bench", "results",
                                       "model-%s-%s" % (args.target, date))
        quick = not args.full
        cells_in = [] if args.rank_only else (
            cpu_cells(quick) if args.target == "cpu" else cuda_cells(quick))
        groups_in = [] if args.no_rank else (
            cpu_rank_groups() if args.target == "cpu" else cuda_rank_groups())
        t0 = time.time()
        # --sweeps N: the whole list N times over (so a slow spell of the
        # shared machine hits different cells each time), each cell keeping
        # its fastest sweep: other tenants only ever add time.
        best = {}
        for sweep in range(max(1, args.sweeps)):
            for i, c in enumerate(cells_in):
                try:
                    m = measure(args, c)
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    print("model_sweep: %s" % e, file=sys.stderr)
                    continue
                prev = best.get(i)
                runs = (prev["sweep_ms"] + ";" if prev else "") + "%g" % m["measured_ms"]
                if prev is None or m["measured_ms"] < prev["measured_ms"]:
                    best[i] = m
                best[i]["sweep_ms"] = runs
                print("  %s: measured %s ms, predicted %s ms (%s)" % (
                    shape_flags(c), m.get("measured_ms"), m.get("predicted_ms"),
                    m.get("bottleneck")), file=sys.stderr)
        cells = [best[i] for i in sorted(best)]
        groups_in = [(n, m) for n, m in groups_in if args.groups in n]
        groups = []
        for name, members in groups_in:
            # candidates alternated over rounds, each keeping its fastest
            # round: drift of a shared machine enters them alike
            best = {}
            for r in range(args.rounds):
                for i, c in enumerate(members):
                    try:
                        m = measure(args, c)
                    except (RuntimeError, subprocess.TimeoutExpired) as e:
                        print("model_sweep: %s" % e, file=sys.stderr)
                        continue
                    print("  rank %s | %s: measured %s ms, predicted %s ms, ran "
                          "kv_splits %s" % (name, shape_flags(c), m.get("measured_ms"),
                                            m.get("predicted_ms"),
                                            m.get("kernel_kv_splits")),
                          file=sys.stderr, flush=True)
                    if i not in best or m["measured_ms"] < best[i]["measured_ms"]:
                        best[i] = m
            groups.append((name, [best[i] for i in sorted(best)]))
        load = open("/proc/loadavg").read().split()[:3] if os.path.exists("/proc/loadavg") else []
        header += ["Target %s, %d cells + %d ranking groups, --bench=%d, %d sweep(s) "
                   "(each cell its fastest; sweep_ms lists them), %.0f s; "
                   "load average at the end %s (%s)." % (
                       args.target, len(cells), len(groups), args.bench,
                       max(1, args.sweeps), time.time() - t0,
                       " ".join(load), os.uname().nodename)]
        if args.target == "cpu":
            header += ["", "The cpu timings are host medians of attn_launch on a 2-core VM "
                       "shared with other engineers' builds: noisy (a cell can move by "
                       "tens of percent between runs); the model's cpu table was measured "
                       "on the same shared machine (bench/model/cpu_peaks.c)."]
    write(out, cells, groups, header)


if __name__ == "__main__":
    main()
