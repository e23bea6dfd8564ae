#!/usr/bin/env bash
# lavapipe (the vulkan target's portable kernel) against the cpu path, same
# machine, one run: B = 1, H = 8, D = 64, f32 and f16, S = 256..2048,
# causal and not, each checked against the float64 reference, median of 5
# runs after 2 warm-ups. Output: CSV on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
RUN=${ATTN_RUN:-build/bin/attn-run}
echo "target,dtype,B,H,S,D,causal,median_ms,gflops,check"
for dt in f32 f16; do for S in 256 512 1024 2048; do for causal in 0 1; do
  for t in cpu vulkan; do
    flag=""; [ "$causal" = 1 ] && flag="--causal"
    "$RUN" --target=$t --static-shapes --dtype=$dt --batch=1 --heads=8 \
      --seq-q=$S --head-dim=64 $flag --check --bench=5 --json 2>/dev/null |
      python3 -c '
import json, sys
j = json.loads(sys.stdin.read())
print("%s,%s,1,8,%d,64,%d,%.1f,%.3f,%s" % (j["target"], j["dtype"], j["seq_q"],
      j["causal"], j["median_ms"], j["tflops"] * 1000, "ok" if j["ok"] else "FAILED"))'
  done
done; done; done
