#!/usr/bin/env bash
# lavapipe (the vulkan target) against the cpu path, same machine, one run:
# B = 1, H = 8, D = 64, f32, f16 and bf16, S = 256..2048, causal and not;
# vulkan rows for the portable kernel (what the JIT picks on lavapipe) and,
# for f16 and bf16, the coopmat kernel with scalar products
# (ATTN_VULKAN_VARIANT=coopmat-scalar: its structure without cooperative
# matrices, which lavapipe lacks). Each run checked against the float64
# reference, median of 5 runs after 2 warm-ups. Output: CSV on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
RUN=${ATTN_RUN:-build/bin/attn-run}
echo "target,variant,dtype,B,H,S,D,causal,median_ms,gflops,check"
row() { # target variant dtype S causal
  local flag=""; [ "$5" = 1 ] && flag="--causal"
  local env=()
  [ "$2" = coopmat-scalar ] && env=(ATTN_VULKAN_VARIANT=coopmat-scalar)
  env "${env[@]}" "$RUN" --target=$1 --static-shapes --dtype=$3 --batch=1 \
    --heads=8 --seq-q=$4 --head-dim=64 $flag --check --bench=5 --json \
    2>/dev/null | V=$2 python3 -c '
import json, os, sys
j = json.loads(sys.stdin.read())
print("%s,%s,%s,1,8,%d,64,%d,%.1f,%.3f,%s" % (j["target"], os.environ["V"],
      j["dtype"], j["seq_q"], j["causal"], j["median_ms"], j["tflops"] * 1000,
      "ok" if j["ok"] else "FAILED"))'
}
for dt in f32 f16 bf16; do for S in 256 512 1024 2048; do for causal in 0 1; do
  row cpu - $dt $S $causal
  row vulkan portable $dt $S $causal
  if [ "$dt" != f32 ]; then row vulkan coopmat-scalar $dt $S $causal; fi
done; done; done
