#!/usr/bin/env python3
"""Times attn's cuda kernels over the performance model's validation matrix
(bench/model_sweep.py's cuda_cells) in one process, for the model's live
validation on the GPU machine: one kernel per spec (the Python package's
'dynamic' shape policy: B, H, S dynamic, as attn-run compiles them, so the
kernels and their launch-time split counts are those the model mirrors),
compiled once and launched for every shape of that spec, where attn-run
would compile afresh for each cell (about 10 s each there).

Per cell: 2 warm-up launches, then --bench timed ones, each after
  1. a 256 MiB write (K/V of the previous launch leave L2: the model reads
     every unique K/V byte from DRAM),
  2. torch.cuda._sleep, so that the host's launch path (Python, the
     runtime) is queued behind it and not inside the timed interval,
  3. CUDA events around attn.sdpa on the current stream (the kernel and,
     when split, the merge: what attn-run's device_ms times).
The median is measured_ms. The output is checked against torch's SDPA
in float64 on the first launch of each cell (max abs error, NaN fails).

    PYTHONPATH=python python3 bench/model/live_cuda.py --out DIR [--bench 10] [--quick]

Writes DIR/measured.csv (the cell's fields, measured_ms, max_err, gpu) and
prints a line per cell. bench/model_sweep.py --measured DIR/measured.csv
then adds the model's predictions (attn-run --model-only, here or anywhere).
"""
import argparse
import csv
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from model_sweep import cuda_cells  # noqa: E402

FIELDS = ["kind", "dtype", "B", "Hq", "Hkv", "Sq", "Skv", "D", "causal",
          "measured_ms", "min_ms", "max_err", "ok", "gpu", "first_call_s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--bench", type=int, default=10)
    ap.add_argument("--quick", action="store_true", help="every third cell")
    args = ap.parse_args()

    import torch
    import attn
    attn.set_shape_policy("dynamic")
    dev = torch.device("cuda")
    gpu = torch.cuda.get_device_name(dev)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    torch.manual_seed(0)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "measured.csv")
    t0 = time.time()
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        for c in cuda_cells(args.quick):
            dt = {"f16": torch.float16, "bf16": torch.bfloat16}[c["dtype"]]
            q = torch.randn(c["B"], c["Hq"], c["Sq"], c["D"], device=dev, dtype=dt)
            k = torch.randn(c["B"], c["Hkv"], c["Skv"], c["D"], device=dev, dtype=dt)
            v = torch.randn(c["B"], c["Hkv"], c["Skv"], c["D"], device=dev, dtype=dt)
            gqa = c["Hq"] != c["Hkv"]
            call = lambda: attn.sdpa(q, k, v, causal=c["causal"], enable_gqa=gqa)
            row = dict(c, gpu=gpu)
            try:
                t1 = time.time()
                out = call()
                torch.cuda.synchronize()
                row["first_call_s"] = "%.2f" % (time.time() - t1)
                # float64 reference on a slice of the batch and heads (the
                # largest cells would need tens of GiB in float64)
                hq = min(c["Hq"], 2 * (c["Hq"] // c["Hkv"]))
                hk = hq * c["Hkv"] // c["Hq"]
                ref = torch.nn.functional.scaled_dot_product_attention(
                    q[:1, :hq].double(), k[:1, :hk].double(), v[:1, :hk].double(),
                    is_causal=c["causal"] and c["Sq"] == c["Skv"], enable_gqa=gqa) \
                    if not (c["causal"] and c["Sq"] != c["Skv"]) else None
                if ref is not None:
                    err = (out[:1, :hq].double() - ref).abs().max().item()
                    row["max_err"] = "%.3g" % err
                    row["ok"] = err == err and err < 2e-2
                else:
                    row["ok"] = bool(torch.isfinite(out).all().item())
                del ref
                for _ in range(2):
                    call()
                times = []
                for _ in range(args.bench):
                    flush.fill_(1)
                    torch.cuda._sleep(2_000_000)
                    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    s.record()
                    call()
                    e.record()
                    e.synchronize()
                    times.append(s.elapsed_time(e))
                row["measured_ms"] = "%.6g" % statistics.median(times)
                row["min_ms"] = "%.6g" % min(times)
            except Exception as ex:  # one cell's failure is that row's, not the run's
                row["ok"] = False
                row["max_err"] = "error: %s" % str(ex)[:200]
            w.writerow(row)
            f.flush()
            print("  %s %s B%d Hq%d Hkv%d Sq%d Skv%d D%d%s: %s ms (err %s, %s)" % (
                c["kind"], c["dtype"], c["B"], c["Hq"], c["Hkv"], c["Sq"], c["Skv"], c["D"],
                " causal" if c["causal"] else "", row.get("measured_ms"), row.get("max_err"),
                "ok" if row.get("ok") else "FAIL"), flush=True)
            del q, k, v
    print("live_cuda: %s, %.0f s, %s" % (gpu, time.time() - t0, path))


if __name__ == "__main__":
    main()
