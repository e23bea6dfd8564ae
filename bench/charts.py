#!/usr/bin/python3
"""The charts of docs/NVIDIA.md, docs/Vulkan.md and docs/Performance.md.

    /usr/bin/python3 bench/charts.py          # writes docs/images/*.svg
    /usr/bin/python3 bench/charts.py --check  # fails if they differ

Each chart shows, per measured cell (shape, dtype, causal), attn's speed
divided by the best peer's speed measured in the same run (a line at 1.0:
above it attn is faster), from the committed results under bench/results.
The output is deterministic (no dates, no random ids), so a run on the
same files writes the same bytes; it prints the ranges the docs quote.

Files read (only these; a new run means editing the paths below):

- NVIDIA (docs/images/nvidia.svg):
  bench/results/decode-alternatives-2026-11-26/call1/results.json
    (the tensor-core kernels against PyTorch's flash backend, one call:
    prefill TFLOP/s, decode GB/s, decode by query length), and
  bench/results/simt-coopmat-2026-11-26/cuda-2/results.json
    (the generic kernel against flash, same machine and day).
- Vulkan (docs/images/vulkan.svg):
  bench/results/vulkan-h200-contiguous-matrix-2026-12-02/timings.csv
    (coopmat prefill and decode, kernels built ahead of time, GPU
    timestamps of launches back to back, beside attn's CUDA tensor-core
    kernel and flash in the same call), and
  bench/results/vulkan-h100-decode-split-2026-11-26/ab.csv
    (the portable kernels' decode with the key split sized to the SMs;
    that call timed no CUDA, so their peer is the CUDA/flash decode of
    the 2026-11-27 call, same shape).
- CPU (docs/images/cpu.svg):
  bench/results/cpu-vs-blas-2026-11-27/results.csv
    (attn against NumPy + OpenBLAS, alternated on the same inputs, each
    cell with its own SGEMM).

Twins (`*_x_base`: the previous compiler's kernels timed beside them)
are left out. Standard library and NumPy only (no matplotlib).
"""

import argparse
import csv
import json
import math
import os
import sys
import textwrap

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "bench", "results")
IMAGES = os.path.join(ROOT, "docs", "images")

NVIDIA_RUN = "decode-alternatives-2026-11-26/call1/results.json"
NVIDIA_GENERIC_RUN = "simt-coopmat-2026-11-26/cuda-2/results.json"
VULKAN_RUN = "vulkan-h200-contiguous-matrix-2026-12-02/timings.csv"
CPU_RUN = "cpu-vs-blas-2026-11-27/results.csv"

# One color per series kind, the same in every chart.
KIND_COLORS = {
    "main": "#1f77b4",    # attn's main kernel: CUDA tensor cores, Vulkan coopmat, cpu
    "other": "#ff7f0e",   # attn's other kernels: CUDA generic, Vulkan portable
    "parity": "#000000",  # the line at 1.0 (the best peer)
}
GRID = "#dddddd"
# Marker shapes tell the series of one kind apart.
MARKERS = ("circle", "square", "triangle", "diamond")


def read_json(rel):
    with open(os.path.join(RESULTS, rel)) as f:
        return json.load(f)


def read_csv(rel):
    with open(os.path.join(RESULTS, rel), newline="") as f:
        return list(csv.DictReader(f))


def short(n):
    """16384 -> 16k, 100000 -> 100k, 512 -> 512."""
    n = int(n)
    if n >= 1000 and n % 1024 == 0:
        return f"{n // 1024}k"
    if n >= 1000 and n % 1000 == 0:
        return f"{n // 1000}k"
    return str(n)


def dtype_name(d):
    return {"bfloat16": "bf16", "float16": "f16"}.get(d, d)


def peer_of(row, keys):
    """The best peer of a timing row: the largest of the given speeds."""
    vals = [row[k] for k in keys if row.get(k) not in (None, "", "-")]
    vals = [float(v) for v in vals if float(v) > 0]
    return max(vals) if vals else None


def cell_key(dtype, d, causal, size):
    """The order of cells in a group: dtype, head dim, causal, length."""
    return ({"f32": 0, "f16": 1, "bf16": 2}.get(dtype, 3), int(d), bool(causal),
            int(size))


class Series:
    def __init__(self, name, kind, marker):
        self.name, self.kind, self.marker = name, kind, marker
        self.points = []  # (group, sort key, label, ratio)

    def add(self, group, label, ratio, key=()):
        self.points.append((group, key, label, float(ratio)))


def stats(values):
    v = np.array(values, dtype=float)
    d = 2 if v.min() >= 0.1 else 4
    return (f"{v.min():.{d}f}-{v.max():.{d}f}, median {np.median(v):.{d}f} "
            f"({len(v)} cells)")


# --------------------------------------------------------------- NVIDIA

def nvidia():
    run = read_json(NVIDIA_RUN)
    gen = read_json(NVIDIA_GENERIC_RUN)
    tc = Series("tensor-core kernel", "main", "circle")
    drop = Series("tensor-core kernel, dropout p 0.1 (flash with dropout)", "main", "triangle")
    dec = Series("decode kernel, static Sq 1 (GB/s)", "main", "square")
    sq = Series("dynamic-Sq spec, Sq 1-16, bf16, B 2, Skv 100k (GB/s)", "main", "diamond")
    simt = Series("generic kernel (a thread per row), 2026-11-26 cuda-2", "other", "circle")
    peers = ("flash_tflops", "cudnn_tflops", "efficient_tflops")
    summary = {}
    for t in run["timings"]:
        k = t["kernel"]
        if k.endswith("_x_base") or int(t["S"]) < 4096:
            continue
        r = t["attn_tflops"] / peer_of(t, peers)
        label = (f"{dtype_name(t['dtype'])} D{t['D']}"
                 f"{' c' if t['causal'] else ''} {short(t['S'])}")
        key = cell_key(dtype_name(t["dtype"]), t["D"], t["causal"], t["S"])
        if t.get("dropout"):
            drop.add("prefill", label + " drop", r, (1,) + key)
        else:
            tc.add("prefill", label, r, (0,) + key)
            key = "prefill D256" if t["D"] == 256 else "prefill D64/128"
            summary.setdefault(key, []).append(r)
    for t in run["decode"]:
        k = t["kernel"]
        if not k.startswith("tc_decode_") or k.endswith("_x_base"):
            continue
        dt = "bf16" if "bf16" in k else "f16"
        r = t["attn_gbps"] / t["flash_gbps"]
        dec.add("decode", f"{dt} B{t['B']} {short(t['Skv'])}", r,
                (0,) + cell_key(dt, t["B"], False, t["Skv"]))
        summary.setdefault("decode Sq 1 static", []).append(r)
    flash = {(s["Sq"], s["dtype"]): s["gbps"] for s in run["sq_decode"]
             if s["impl"] == "flash"}
    for s in run["sq_decode"]:
        if s["impl"] != "tc_bf16_d128":
            continue
        r = s["gbps"] / flash[(s["Sq"], s["dtype"])]
        sq.add("decode", f"dyn Sq{s['Sq']}", r, (1, int(s["Sq"])))
        summary.setdefault("decode dynamic-Sq spec", []).append(r)
    for t in gen["timings"]:
        if t["kernel"].endswith("_x_base") or int(t["S"]) < 4096:
            continue
        r = t["attn_tflops"] / peer_of(t, peers)
        label = (f"{dtype_name(t['dtype'])} D{t['D']}"
                 f"{' c' if t['causal'] else ''}"
                 f"{' drop' if t.get('dropout') else ''} {short(t['S'])}")
        simt.add("generic", label, r,
                 (bool(t.get("dropout")),) + cell_key(dtype_name(t["dtype"]), t["D"],
                                                       t["causal"], t["S"]))
        summary.setdefault("generic kernel prefill", []).append(r)
    meta = run["meta"]
    title = (f"NVIDIA: attn / best peer, {meta['device']}, {meta['date']}, "
             f"PyTorch {meta['torch']}")
    sub = ("peer: PyTorch's flash backend timed alternately in the same call "
           "(cuDNN not timed); prefill TFLOP/s at 16k tokens, decode GB/s of K/V "
           "(Hq 32, Hkv 8, D 128), one call at a time")
    src = f"bench/results/{NVIDIA_RUN}, bench/results/{NVIDIA_GENERIC_RUN}"
    xcap = ("cell (dtype, head dim D, c = causal, sequence length; decode: "
            "dtype, batch, key length, or the query length)")
    return [tc, drop, dec, sq, simt], title, sub, src, xcap, summary


# --------------------------------------------------------------- Vulkan

def vulkan():
    rows = read_csv(VULKAN_RUN)
    cm = Series("coopmat, accumulator in registers (back to back)", "main", "circle")
    cms = Series("coopmat, accumulator in workgroup memory (back to back)", "other", "diamond")
    cmd = Series("coopmat decode, packed GQA heads, split over the SMs", "main", "square")
    summary = {}
    cuda_decode = {}
    for t in rows:
        if t["status"] != "ok":
            continue
        if t["kind"] == "prefill":
            # the kernel's speed: its launches back to back (GPU timestamps)
            speed = float(t.get("b2b_tflops") or t["device_tflops"])
            r = speed / peer_of(t, ("cuda_tflops", "flash_tflops"))
            label = (f"{t['dtype']} D{t['D']}"
                     f"{' c' if t['causal'] == 'True' else ''} {short(t['Skv'])}")
            series = cm if t["variant"] == "coopmat" else cms
            series.add("prefill", label, r,
                       cell_key(t["dtype"], t["D"], t["causal"] == "True", t["Skv"]))
            summary.setdefault(f"{t['variant']} prefill", []).append(r)
        elif t["kind"] == "decode" and t["variant"] == "coopmat":
            skv = int(t["Skv"])
            cuda_decode[skv] = peer_of(t, ("cuda_gbps", "flash_gbps"))
            r = float(t.get("b2b_gbps") or t["device_gbps"]) / cuda_decode[skv]
            cmd.add("decode", f"coopmat f16 {short(skv)}", r)
            summary.setdefault("decode coopmat", []).append(r)
    title = ("Vulkan: attn / best peer, NVIDIA H200, 2026-11-28, "
             "NVIDIA's Vulkan driver 1.4.312")
    sub = ("peers: attn's CUDA tensor-core kernel and PyTorch's flash, same call; "
           "speed from GPU timestamps of launches back to back after 1 s of "
           "warm-up launches (decode: packed GQA heads)")
    src = f"bench/results/{VULKAN_RUN}"
    xcap = ("cell (dtype, head dim D, c = causal, sequence length; decode: "
            "variant, dtype, key length)")
    return [cm, cms, cmd], title, sub, src, xcap, summary


# --------------------------------------------------------------- CPU

def cpu():
    rows = read_csv(CPU_RUN)
    s = Series("cpu kernels (vector micro-kernels; bf16: AVX512-BF16 dot "
               "products)", "main", "circle")
    summary = {}
    order = {"f32": 0, "f16": 1, "bf16": 2}
    rows.sort(key=lambda t: (order[t["dtype"]], int(t["d"]), int(t["causal"]), int(t["s"])))
    for t in rows:
        r = float(t["attn_gflops"]) / float(t["numpy_gflops"])
        label = f"{t['dtype']} D{t['d']}{' c' if t['causal'] == '1' else ''} {short(t['s'])}"
        s.add(t["dtype"], label, r,
              cell_key(t["dtype"], t["d"], t["causal"] == "1", t["s"]))
        summary.setdefault("prefill", []).append(r)
    sgemm = float(np.median([float(t["sgemm_gflops"]) for t in rows]))
    title = ("CPU: attn / NumPy + OpenBLAS, 2-core AMD EPYC VM (AVX-512), "
             "2026-11-27")
    sub = ("peer: NumPy + OpenBLAS attention (materializes S), alternated on the "
           f"same inputs; prefill GFLOP/s (OpenBLAS SGEMM 2048^3 timed in every "
           f"cell of the same run: median {sgemm:.1f} GFLOP/s)")
    src = f"bench/results/{CPU_RUN}"
    xcap = "cell (dtype, head dim D, c = causal, sequence length S = Sq = Skv)"
    return [s], title, sub, src, xcap, summary


# --------------------------------------------------------------- drawing

def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def marker(shape, x, y, color, r=4.0):
    if shape == "circle":
        return (f"<circle cx='{x:.1f}' cy='{y:.1f}' r='{r:.1f}' fill='{color}'/>")
    if shape == "square":
        return (f"<rect x='{x - r:.1f}' y='{y - r:.1f}' width='{2 * r:.1f}' "
                f"height='{2 * r:.1f}' fill='{color}'/>")
    if shape == "triangle":
        return (f"<polygon points='{x:.1f},{y - r - 1:.1f} {x - r - 0.5:.1f},"
                f"{y + r - 0.5:.1f} {x + r + 0.5:.1f},{y + r - 0.5:.1f}' "
                f"fill='{color}'/>")
    if shape == "diamond":
        return (f"<polygon points='{x:.1f},{y - r - 1:.1f} {x + r + 1:.1f},{y:.1f} "
                f"{x:.1f},{y + r + 1:.1f} {x - r - 1:.1f},{y:.1f}' fill='{color}'/>")
    raise ValueError(shape)


def log_ticks(lo, hi):
    ticks = []
    for e in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1):
        for m in (1, 2, 5):
            v = m * 10.0 ** e
            if lo <= v * (1 + 1e-9) and v <= hi * (1 + 1e-9):
                ticks.append(v)
    return ticks


def fmt_tick(v):
    if v == 0 or v >= 1:
        return f"{v:g}"
    return f"{v:.{max(0, -math.floor(math.log10(v)))}f}"


def nice_bounds(lo, hi):
    """Log-axis bounds on the 1-2-5 sequence around [lo, hi]."""
    steps = [m * 10.0 ** e for e in range(-6, 7) for m in (1, 2, 5)]
    return (max(v for v in steps if v <= lo * (1 + 1e-9)),
            min(v for v in steps if v >= hi * (1 - 1e-9)))


def chart(series, title, sub, src, xcap, log):
    groups = []  # in order of first appearance
    for s in series:
        for g, _, _, _ in s.points:
            if g not in groups:
                groups.append(g)
    cells = {}  # (group, key, label) -> [(series, ratio)]
    for s in series:
        for g, key, label, r in s.points:
            cells.setdefault((groups.index(g), key, label), []).append((s, r))
    cells = [(groups[gi], label, pts)
             for (gi, key, label), pts in sorted(cells.items(), key=lambda kv: kv[0])]
    ratios = [r for s in series for _, _, _, r in s.points]
    ml, mr = 64, 20
    plot_h = 300
    label_h = int(max(len(label) for _, label, _ in cells) * 5.0 * 0.94) + 30
    legend_h = 16 * len(series) + 34
    gap = 14
    w = max(ml + 13 * (len(cells) + 1) + gap * (len(groups) - 1) + mr, 840)
    plot_w = w - ml - mr
    step = (plot_w - gap * (len(groups) - 1)) / (len(cells) + 1)
    chars = int((w - ml - 10) / 5.3)  # about 5.3 px per character at 10 px
    head = textwrap.wrap(sub, chars) + textwrap.wrap("data: " + src, chars)
    mt = 30 + 13 * len(head) + 8
    h = mt + plot_h + label_h + legend_h
    if log:
        lo, hi = nice_bounds(min(ratios + [1.0]) * 0.7, max(ratios + [1.0]) * 1.1)

        def y(v):
            f = (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
            return mt + (1 - f) * plot_h
        ticks = log_ticks(lo, hi)
    else:
        hi = math.ceil(max(ratios + [1.0]) * 1.1)
        lo = 0.0

        def y(v):
            return mt + (1 - (v - lo) / (hi - lo)) * plot_h
        ticks = list(range(0, int(hi) + 1))
    out = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{h}' "
           f"viewBox='0 0 {w} {h}' font-family='sans-serif' font-size='11'>",
           f"<rect width='{w}' height='{h}' fill='white'/>",
           f"<text x='{ml}' y='18' font-size='13' font-weight='bold'>{esc(title)}</text>",
           ]
    for i, line in enumerate(head):
        color = "#555" if i >= len(head) - len(textwrap.wrap("data: " + src, chars)) else "#000"
        out.append(f"<text x='{ml}' y='{34 + 13 * i}' font-size='10' fill='{color}'>"
                   f"{esc(line)}</text>")
    for v in ticks:
        out.append(f"<line x1='{ml}' x2='{ml + plot_w}' y1='{y(v):.1f}' y2='{y(v):.1f}' "
                   f"stroke='{GRID}'/>")
        out.append(f"<text x='{ml - 6}' y='{y(v) + 4:.1f}' text-anchor='end'>"
                   f"{fmt_tick(v)}</text>")
    out.append(f"<text transform='translate(14,{mt + plot_h / 2:.0f}) rotate(-90)' "
               f"text-anchor='middle'>attn / best peer"
               f"{' (log scale)' if log else ''}</text>")
    out.append(f"<rect x='{ml}' y='{mt}' width='{plot_w}' height='{plot_h}' "
               f"fill='none' stroke='#999'/>")
    # the cells
    x = ml + step
    prev = None
    group_span = {}
    for g, label, pts in cells:
        if prev is not None and g != prev:
            x += gap
            out.append(f"<line x1='{x - step / 2 - gap / 2:.1f}' "
                       f"x2='{x - step / 2 - gap / 2:.1f}' y1='{mt}' "
                       f"y2='{mt + plot_h}' stroke='#999' stroke-dasharray='3,3'/>")
        prev = g
        lo_x, hi_x = group_span.get(g, (x, x))
        group_span[g] = (min(lo_x, x), max(hi_x, x))
        for s, r in pts:
            out.append(marker(s.marker, x, y(r), KIND_COLORS[s.kind]))
        out.append(f"<text transform='translate({x + 3:.1f},{mt + plot_h + 6}) "
                   f"rotate(-70)' text-anchor='end' font-size='9'>{esc(label)}</text>")
        x += step
    for g in groups:
        a, b = group_span[g]
        out.append(f"<text x='{(a + b) / 2:.1f}' y='{mt + 14}' text-anchor='middle' "
                   f"font-weight='bold' fill='#555'>{esc(g)}</text>")
    # the line at 1.0, over the grid
    out.append(f"<line x1='{ml}' x2='{ml + plot_w}' y1='{y(1.0):.1f}' y2='{y(1.0):.1f}' "
               f"stroke='{KIND_COLORS['parity']}' stroke-width='1.5' "
               f"stroke-dasharray='6,3'/>")
    out.append(f"<text x='{ml + plot_w / 2:.0f}' y='{mt + plot_h + label_h - 4}' "
               f"text-anchor='middle'>{esc(xcap)}</text>")
    # legend
    ly = mt + plot_h + label_h + 14
    for s in series:
        out.append(marker(s.marker, ml + 10, ly - 4, KIND_COLORS[s.kind]))
        kind = "attn, main kernel" if s.kind == "main" else "attn, other kernel"
        out.append(f"<text x='{ml + 22}' y='{ly}'>{esc(s.name)} ({kind})</text>")
        ly += 16
    out.append(f"<line x1='{ml + 2}' x2='{ml + 18}' y1='{ly - 4}' y2='{ly - 4}' "
               f"stroke='{KIND_COLORS['parity']}' stroke-width='1.5' "
               f"stroke-dasharray='6,3'/>")
    out.append(f"<text x='{ml + 22}' y='{ly}'>the best peer (ratio 1.0)</text>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="compare with docs/images instead of writing")
    args = ap.parse_args()
    os.makedirs(IMAGES, exist_ok=True)
    bad = 0
    for name, make, log in (("nvidia", nvidia, True), ("vulkan", vulkan, True),
                            ("cpu", cpu, False)):
        series, title, sub, src, xcap, summary = make()
        svg = chart(series, title, sub, src, xcap, log)
        path = os.path.join(IMAGES, f"{name}.svg")
        if args.check:
            with open(path) as f:
                same = f.read() == svg
            print(f"{path}: {'same' if same else 'DIFFERS'}")
            bad += not same
        else:
            with open(path, "w") as f:
                f.write(svg)
            print(f"wrote {os.path.relpath(path, ROOT)}")
        for k in sorted(summary):
            print(f"  {name} {k}: {stats(summary[k])}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
