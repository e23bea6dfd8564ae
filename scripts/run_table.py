#!/usr/bin/env python3
"""Formats scripts/run.sh's per-target results as a markdown table. Input
lines on stdin: "target|json", or "target|skipped: why" (target absent),
"target|refused: why" (the backend does not support the op) or
"target|FAILED: why"."""
import json
import sys

print("| target | check | max_abs_err | rel_l2_err | median ms | GFLOP/s | compile ms |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for line in sys.stdin:
    target, _, rest = line.rstrip("\n").partition("|")
    if not rest.startswith("{"):
        print(f"| {target} | {rest} | | | | | |")
        continue
    r = json.loads(rest)
    check = "ok" if r["ok"] else "FAILED"
    print(f"| {target} | {check} | {r['max_abs_err']:.2e} | {r['rel_l2_err']:.2e}"
          f" | {r['median_ms']:.2f} | {r['tflops'] * 1000:.2f}"
          f" | {r['compile_ms']:.0f} |")
