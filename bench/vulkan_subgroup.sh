#!/usr/bin/env bash
# The portable Vulkan variant's two kernels on lavapipe against the cpu
# path, same machine, one run: the subgroup kernel (a subgroup of 8 lanes
# per query row, what the JIT picks on lavapipe: ATTN_VULKAN_VARIANT=
# portable-subgroup), the invocation-per-row kernel (what devices without
# subgroup arithmetic/shuffle get: portable-rows) and the cpu path.
# Prefill-like shapes (B = 1, H = 8, Sq = Skv = S, D = 64, f32 and f16,
# causal and not) and decode-like ones (Sq = 1, H = 8 over 1 or 8 KV
# heads, long Skv, split-KV auto). Each run checked against the float64
# reference, median of 5 runs after 2 warm-ups. Output: CSV on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
RUN=${ATTN_RUN:-build/bin/attn-run}
echo "target,kernel,dtype,B,Hq,Hkv,Sq,Skv,D,causal,median_ms,gflops,check"
row() { # target kernel dtype Sq Skv Hkv causal
  local flag=""; [ "$7" = 1 ] && flag="--causal"
  local env=()
  [ "$2" != - ] && env=(ATTN_VULKAN_VARIANT=$2)
  env "${env[@]}" "$RUN" --target=$1 --static-shapes --dtype=$3 --batch=1 \
    --heads=8 --kv-heads=$6 --seq-q=$4 --seq-kv=$5 --head-dim=64 $flag \
    --check --bench=5 --json 2>/dev/null | K=$2 HKV=$6 python3 -c '
import json, os, sys
j = json.loads(sys.stdin.read())
print("%s,%s,%s,1,8,%s,%d,%d,64,%d,%.1f,%.3f,%s" % (j["target"], os.environ["K"],
      j["dtype"], os.environ["HKV"], j["seq_q"], j["seq_kv"], j["causal"],
      j["median_ms"], j["tflops"] * 1000, "ok" if j["ok"] else "FAILED"))'
}
shape() { # dtype Sq Skv Hkv causal
  row cpu - "$@"
  row vulkan portable-subgroup "$@"
  row vulkan portable-rows "$@"
}
for dt in f32 f16; do for S in 256 512 1024; do for causal in 0 1; do
  shape $dt $S $S 8 $causal
done; done; done
for dt in f32 f16; do
  shape $dt 1 4096 8 0
  shape $dt 1 32768 1 0
done
